"""The vocabulary every layer shares, in one place: modalities, model backends, built-in baselines.

A low module with no imports of its own, so that candidate parsing, the hub, the cache's hub models table and the
backends agree on the same names without importing each other (candidates never import a backend).
"""

from __future__ import annotations

TEXT = "text"
IMAGE = "image"
MODALITIES: tuple[str, ...] = (TEXT, IMAGE)

BACKENDS: tuple[str, ...] = ("sentence-transformers", "timm", "transformers")
"""Model backends that load a model folder (hub or local)."""

BASELINES: dict[str, tuple[str, ...]] = {
    "tfidf-svd": (TEXT,),
    "random-projection": (TEXT, IMAGE),
    "pixel-pca": (IMAGE,),
}
"""Built-in, download-free baselines -> the modalities each can embed."""

BASELINE_PREFIX = "baseline:"
"""A built-in baseline's model id is this prefix and its name (``baseline:tfidf-svd``)."""


def is_baseline_id(model_id: str | None) -> bool:
    """Whether ``model_id`` (a resolved candidate's model id) names a built-in baseline: the one rule for telling
    baselines from models (cache keys, the loader, the metrics' reference points)."""
    return str(model_id or "").startswith(BASELINE_PREFIX)


BROUGHT_KINDS: tuple[str, ...] = ("vectors", "api", "embedder")
"""Candidate kinds whose vectors the user brings rather than a model embedselect loads: precomputed vectors, a hosted
embedding API, an embedder object."""


def kind_of_model_id(model_id: str | None) -> str | None:
    """The candidate kind (``Candidate.kind``) of a resolved candidate's model id, as ``resolve_candidate`` forms it:
    ``baseline:NAME`` baseline, ``local:DIR`` local, ``openai:HOST/MODEL`` api, ``vectors:NAME`` / ``embedder:NAME``
    vectors / embedder, any other hub; None without a model id (a candidate that failed before it was resolved)."""
    if not model_id:
        return None
    head = str(model_id).split(":", 1)[0] if ":" in str(model_id) else ""
    return {"baseline": "baseline", "local": "local", "openai": "api", "vectors": "vectors",
            "embedder": "embedder"}.get(head, "hub")


REDUCTION_OPTIONS = frozenset({"truncate_dim", "precision"})
"""Candidate options computed by the run from the model's own vectors (:mod:`embedselect.models.backends.reduce`):
not passed to a backend, not in the stored vectors' key (the model's vectors serve every variant), in the candidate's
``run_key``; a candidate differing from another of the same model only in these is its variant (a declared copy)."""

FITTED_BASELINES: tuple[str, ...] = ("tfidf-svd", "pixel-pca")
"""Baselines that learn from the data they embed (their fit can be saved and restored)."""

BASELINE_VERSION = 2
"""Bumped whenever a baseline's output changes for the same inputs and settings (part of the revision). 2: a
baseline's own options (``?seed=7``) are in its cache key (with 1, ``?seed=7`` and ``?seed=8`` shared one run)."""

PAIR_KEY_PREFIX = "is:"
"""Prefix of an information-sufficiency pair's key in the store's pair cache (one directed pair source → target);
the sufficiency metric writes these keys, the store counts them."""
