"""Embedding backends behind one small protocol (:class:`~embedselect.models.backends.base.Embedder`).

Backends: ``sentence-transformers`` (text, CLIP-style images), ``timm`` (images), ``transformers``
(``AutoModel``, text and images, explicit pooling) and the download-free baselines ``tfidf-svd``,
``random-projection`` and ``pixel-pca``. Use :func:`load_embedder` on a resolved candidate.

Importing this package is cheap: torch and the model libraries load only with a backend.
"""

from __future__ import annotations

import importlib
from typing import Any

from embedselect.models.backends.base import Embedder

_LAZY = {
    "load_embedder": "embedselect.models.backends.loader",
    "check_local_files": "embedselect.models.backends.loader",
    "resolve_device": "embedselect.models.backends.device",
    "progress_enabled": "embedselect._util.progress",
    "SentenceTransformerEmbedder": "embedselect.models.backends.sentence_transformers",
    "TimmEmbedder": "embedselect.models.backends.timm",
    "TransformersEmbedder": "embedselect.models.backends.transformers",
    "TfidfSvdEmbedder": "embedselect.models.backends.baselines",
    "RandomProjectionEmbedder": "embedselect.models.backends.baselines",
    "PixelPCAEmbedder": "embedselect.models.backends.baselines",
}

__all__ = ["Embedder", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embedselect.models.backends' has no attribute {name!r}")
