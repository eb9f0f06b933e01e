"""Embedding backends behind one small protocol (:class:`~embedselect.embed.base.Embedder`).

Backends: ``sentence-transformers`` (text, CLIP-style images), ``timm`` (images), ``transformers``
(``AutoModel``, text and images, explicit pooling) and the download-free baselines ``tfidf-svd``,
``random-projection`` and ``pixel-pca``. Use :func:`load_embedder` on a resolved candidate.

Importing this package is cheap: torch and the model libraries load only with a backend.
"""

from __future__ import annotations

import importlib
from typing import Any

from embedselect.embed.base import Embedder

_LAZY = {
    "load_embedder": "embedselect.embed.loader",
    "check_local_files": "embedselect.embed.loader",
    "resolve_device": "embedselect.embed.device",
    "progress_enabled": "embedselect.embed.device",
    "SentenceTransformerEmbedder": "embedselect.embed.sentence_transformers",
    "TimmEmbedder": "embedselect.embed.timm",
    "TransformersEmbedder": "embedselect.embed.transformers",
    "TfidfSvdEmbedder": "embedselect.embed.baselines",
    "RandomProjectionEmbedder": "embedselect.embed.baselines",
    "PixelPCAEmbedder": "embedselect.embed.baselines",
}

__all__ = ["Embedder", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embedselect.embed' has no attribute {name!r}")
