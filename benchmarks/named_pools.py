"""The named pools of the validity benchmark (``--pool``: subsets of a dataset's candidates, each of one modality), the
datasets a pool runs on, and what ``select()`` tells the metrics about a pool's candidates (:func:`pool_roles`)."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

from benchmarks.sets.registry import DATASETS as ALL_DATASETS

log = logging.getLogger("validity_pools")  # datasets_for_pool logs as part of a validity_pools run

DATASETS = ("polarity", "analogy", "empath", "vader", "emoji", "digits", "mnist-5k",
            "trec", "sms-spam", "amazon-reviews")
"""The datasets a run covers when none are named (``validity_pools.py`` and ``validity_default.py``)."""
POOLS = {
    "all": None,
    # the pool of issue 9's held-out trials, as a new user would build it: the two real models, MiniLM with CLS
    # pooling, the static copy distilled from MiniLM, and the two baselines (text datasets only)
    "issue": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "m2v-MiniLM-256", "tfidf-svd",
              "random-projection"),
    # issue 23's width-bias and truncation question: the issue pool plus wide-but-weak candidates (mpnet's layer 1 at
    # 768 dims, a 1024-dim random projection, the 384-dim static copy without PCA) and MiniLM fed 8 tokens
    "width": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "m2v-MiniLM-256", "tfidf-svd",
              "random-projection", "all-mpnet-base-v2-layer1", "random-projection-1024", "m2v-MiniLM-raw",
              "all-MiniLM-L6-v2-len8"),
    # an image pool of 8: three EfficientNet-Lite sizes, Lite0 at 128 px, with max pooling and untrained, two baselines
    "photo8": ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2", "efficientnet-lite0-128px",
               "efficientnet-lite0-maxpool", "efficientnet-lite0-untrained", "pixel-pca", "random-projection"),
    # pools as users build them (issue 41): unbalanced families, two-model pools, larger-but-worse models
    # the pool of 8: both models, MiniLM with CLS pooling and cut to 8 tokens, a static copy of each
    "issue8": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
               "m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    # MiniLM with four options or copies beside mpnet with none
    "minilm-heavy": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "all-MiniLM-L6-v2-len8",
                     "all-MiniLM-L6-v2-layer3", "m2v-MiniLM-256", "tfidf-svd", "random-projection"),
    # mpnet with four options or copies beside MiniLM with none
    "mpnet-heavy": ("all-mpnet-base-v2", "all-mpnet-base-v2-first128", "all-mpnet-base-v2-int8",
                    "all-mpnet-base-v2-len8", "m2v-mpnet-256", "all-MiniLM-L6-v2", "tfidf-svd", "random-projection"),
    # two models and the baselines
    "two-models": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "tfidf-svd", "random-projection"),
    # two small static models and the baselines
    "two-static": ("m2v-MiniLM-256", "m2v-mpnet-256", "tfidf-svd", "random-projection"),
    # the larger model run in a worse way (its first layer; fed 8 tokens), beside the smaller model as shipped
    "larger-worse": ("all-mpnet-base-v2-layer1", "all-MiniLM-L6-v2", "m2v-MiniLM-256", "tfidf-svd",
                     "random-projection"),
    "larger-short": ("all-mpnet-base-v2-len8", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-cls", "tfidf-svd",
                     "random-projection"),
    # pools of three to five text model families (each family: a model with its options and copies), as users build
    # them once they try more than two models: MiniLM and mpnet beside multilingual-e5-small, the Universal Sentence
    # Encoder (multilingual 3) and GloVe 6B 50d (candidates.E5, USE, GLOVE)
    "three-families": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "multilingual-e5-small", "tfidf-svd",
                       "random-projection"),
    "four-families": ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "multilingual-e5-small", "use-multilingual-3",
                      "tfidf-svd", "random-projection"),
    # e5 with two copies (its first 128 dimensions, int8) beside MiniLM and USE with one member each
    "families-unbalanced": ("multilingual-e5-small", "multilingual-e5-small-first128", "multilingual-e5-small-int8",
                            "all-MiniLM-L6-v2", "use-multilingual-3", "tfidf-svd", "random-projection"),
    # the largest model run in a worse way (mpnet's first layer) beside three smaller models as shipped
    "families-larger-worse": ("all-mpnet-base-v2-layer1", "all-MiniLM-L6-v2", "use-multilingual-3", "glove-6B-50d",
                              "tfidf-svd", "random-projection"),
    # image: two sizes and the baselines; Lite0 with four options beside Lite1 and Lite2; an early stage of the
    # largest network beside the smallest as shipped
    "photo-two": ("efficientnet-lite0", "efficientnet-lite2", "pixel-pca", "random-projection"),
    "photo-heavy": ("efficientnet-lite0", "efficientnet-lite0-stage5", "efficientnet-lite0-maxpool",
                    "efficientnet-lite0-128px", "efficientnet-lite0-int8", "efficientnet-lite1", "efficientnet-lite2",
                    "pixel-pca", "random-projection"),
    "photo-larger-worse": ("efficientnet-lite0-stage3", "efficientnet-lite1", "efficientnet-lite0-untrained",
                           "pixel-pca", "random-projection"),
}
"""Named candidate subsets (``--pool``); ``all`` is every candidate of the dataset's pool."""
POOL_MODALITY = {"issue": "text", "width": "text", "photo8": "image", "issue8": "text", "minilm-heavy": "text",
                 "mpnet-heavy": "text", "two-models": "text", "two-static": "text", "larger-worse": "text",
                 "larger-short": "text", "three-families": "text", "four-families": "text",
                 "families-unbalanced": "text", "families-larger-worse": "text", "photo-two": "image", "photo-heavy": "image", "photo-larger-worse": "image"}
"""The modality of each named pool's candidates: ``--pool`` runs such a pool on datasets of that modality only
(others are skipped, said on stderr); without ``--datasets`` it runs on every dataset of ``sets.registry.DATASETS``
of that modality."""


def datasets_for_pool(pool: str, names: Sequence[str] | None) -> list[str]:
    """The datasets a ``--pool`` run covers: ``names`` (default :data:`DATASETS`, or for a pool of one modality every
    dataset of that modality in ``sets.registry.DATASETS``) less those of another modality than the pool's (logged).
    Unknown names are kept (``load_pool`` then says how to build them)."""
    modality = POOL_MODALITY.get(pool)
    if names is None:
        return [d for d, ds in ALL_DATASETS.items() if ds.modality == modality] if modality else list(DATASETS)
    keep = []
    for d in names:
        ds = ALL_DATASETS.get(d)
        if modality and ds is not None and ds.modality != modality:
            log.warning("%s (%s) skipped: pool %r has %s candidates", d, ds.modality, pool, modality)
            continue
        keep.append(d)
    return keep


def pool_roles(entries: Sequence[Mapping[str, Any]], names: Sequence[str]) -> tuple[frozenset[str], dict[str, str]]:
    """What ``select()`` tells the metrics about a pool (``MetricContext.references`` and ``.families``), from the
    pool's ``candidates.json`` entries: the built-in baselines, and each candidate's family, the root of its ``parent``
    chain (a variant by pooling, layer, resolution or max_length, and a truncated, quantised or distilled copy belong
    to the model they come from, as :func:`embedselect.pipeline.families.pool_relations` groups them)."""
    parent = {e["name"]: e.get("parent") for e in entries}
    refs = frozenset(e["name"] for e in entries if e.get("kind") == "baseline" and e["name"] in names)

    def root(c: str) -> str:
        while parent.get(c) and parent[c] in names:
            c = parent[c]
        return c

    return refs, {c: root(c) for c in names}
