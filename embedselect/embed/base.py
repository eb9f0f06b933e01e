"""The one small protocol every embedding backend implements."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """A loaded model that turns reference items into vectors.

    Attributes:
        backend: backend name ("sentence-transformers", "timm", "transformers", "tfidf-svd",
            "random-projection", "pixel-pca").
        modality: "text" or "image" — the kind of items :meth:`embed` accepts.
        device: torch device string the model runs on ("cpu", "cuda", "cuda:1").
    """

    backend: str
    modality: str
    device: str

    def settings(self) -> dict[str, Any]:
        """JSON-serialisable settings that change the output (pooling, normalisation, max length,
        image size, seed, dimension...). They are part of the cache key."""
        ...

    def embed(
        self, items: Sequence[str] | Sequence[Path], *, batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        """Embed ``items`` (texts, or image file paths) in order.

        Returns:
            float32 array of shape (len(items), dim), row i for item i. Not normalised unless the
            model itself normalises.
        """
        ...
