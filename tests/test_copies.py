"""Derived copies (quantised / truncated) are found label-free and never ranked above their parent."""

from __future__ import annotations


import numpy as np
import pytest

from embedselect.ranking.combine import copies_below_parents
from embedselect.errors import MetricError
from embedselect.metrics.copies import derived_copies, pool_copies, truncated_inputs
from embedselect.ranking.ties import tie_groups


def _teacher(n: int = 600, d: int = 64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.tanh(rng.normal(size=(n, 16)) @ rng.normal(size=(16, d)) / 4) + 0.1 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _int8(x: np.ndarray) -> np.ndarray:
    lo, hi = x.min(axis=0), x.max(axis=0)
    return np.round((x - lo) / (hi - lo) * 255 - 128).astype(np.float32)


def test_quantised_and_truncated_copies_are_found_with_their_direction():
    t = _teacher()
    trunc = t[:, :16] / np.linalg.norm(t[:, :16], axis=1, keepdims=True)
    pool = {"teacher": t, "int8": _int8(t), "binary": np.where(t > 0, 1.0, -1.0).astype(np.float32),
            "first16": trunc, "other": _teacher(seed=1)}
    found = {(d.copy, d.parent): d for d in derived_copies(pool)}
    for copy in ("int8", "binary", "first16"):
        assert (copy, "teacher") in found, sorted(found)
        assert ("teacher", copy) not in found  # the direction: the copy has fewer values or fewer dimensions
    assert found[("first16", "teacher")].relation == "truncated"
    assert found[("binary", "teacher")].relation == "quantized"
    assert found[("int8", "teacher")].median_abs_spearman > 0.99
    assert ("binary", "int8") in found  # two bits per coordinate are a function of 256 levels too
    assert not [p for p in found if "other" in p]  # an independent model shares no coordinates


def test_rotations_pca_and_a_plain_duplicate_are_not_copies():
    t = _teacher()
    rot = np.linalg.qr(np.random.default_rng(2).normal(size=(64, 64)))[0]
    xc = t - t.mean(axis=0)
    pca = xc @ np.linalg.svd(xc, full_matrices=False)[2][:32].T  # a static-model-like PCA basis, not aligned
    pool = {"teacher": t, "rotated": (t @ rot).astype(np.float32), "pca32": pca.astype(np.float32),
            "same": t.copy()}
    assert derived_copies(pool) == []  # equal width and resolution: neither is the copy of the other


def test_bad_input_is_a_typed_error():
    with pytest.raises(MetricError, match="NaN"):
        derived_copies({"a": np.full((10, 4), np.nan), "b": np.ones((10, 4))})
    assert derived_copies({"only": _teacher()}) == []


def test_copies_rank_right_below_their_parents_who_keep_their_score():
    scores = {"full": 0.5, "first128": 0.9, "first64": 0.95, "binary": 0.4, "other": 0.7}
    pairs = [("first128", "full"), ("first64", "first128"), ("first64", "full"), ("binary", "full")]
    out, moved = copies_below_parents(scores, pairs)
    assert out["full"] > out["first128"] > out["first64"] and out["full"] > out["binary"]
    # the parent keeps its score: adding copies to the pool must not lift it above "other" (issue 41)
    assert out["full"] == 0.5 and out["other"] == 0.7 and out["binary"] == 0.4
    assert out["first64"] > out["binary"]  # right below the parent: 0.5 less a few ulps
    assert {("first128", "full"), ("first64", "first128")} <= set(moved) and ("binary", "full") not in moved
    assert max(out, key=out.get) == "other"
    assert all(len(g) == 1 for g in tie_groups(out))  # a copy right below its parent is not tied with it
    # a copy already below its parent, or a candidate without a score, is left alone
    out2, moved2 = copies_below_parents({"full": 0.9, "first64": 0.1}, [("first64", "full"), ("x", "full")])
    assert out2 == {"full": 0.9, "first64": 0.1} and moved2 == []


# --- variants are not copies (issue 23: pooling, max_length, max pooling with ReLU zeros) ---------------------------
def _relu_feature_maps(n: int = 400, positions: int = 49, channels: int = 96, seed: int = 0) -> np.ndarray:
    """(n, positions, channels) maps of a tiny ReLU6 conv layer: most channels are exactly 0 on most positions (and
    on every position of most images, as in EfficientNet's last stage), a few saturate at 6."""
    rng = np.random.default_rng(seed)
    image = rng.normal(size=(n, 1, 24))  # what an image is about
    patches = image + 0.7 * rng.normal(size=(n, positions, 24))  # what each position sees
    pre = patches @ rng.normal(size=(24, channels)) - 9.0  # a negative bias: ReLU keeps only strong responses
    return np.clip(pre, 0.0, 6.0)


def _token_states(n: int = 400, tokens: int = 24, d: int = 48, seed: int = 0) -> np.ndarray:
    """(n, tokens, d) states of a tiny encoder over texts in groups of about 3 that share a topic and their first 8
    tokens (as real sentences share openings): the CLS token and the first 8 tokens then repeat within a group."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n // 3, size=n)
    states = rng.normal(size=(n // 3, d))[group][:, None, :] + 0.5 * rng.normal(size=(n, 1, d)) \
        + 0.5 * rng.normal(size=(n, tokens, d))
    first = np.unique(group, return_index=True)[1][np.searchsorted(np.unique(group), group)]
    states[:, :8] = states[first, :8]  # the group's first member's opening
    return states.astype(np.float32)


def test_pooling_truncation_and_max_pooling_variants_are_not_copies():
    maps = _relu_feature_maps()
    avg, mx = maps.mean(axis=1), maps.max(axis=1)
    assert (avg == 0).mean() > 0.5  # most coordinates are exact zeros, shared by both poolings
    states = _token_states()
    mean, cls, first8 = states.mean(axis=1), states[:, 0], states[:, :8].mean(axis=1)
    pool = {"avg": avg, "max": mx, "mean": mean, "cls": cls, "max_length=8": first8}
    assert derived_copies(pool) == []
    # the specs say so even where the vectors would not: max_length, pooling, resolution and layer make variants
    same = ("local:/m", "sha", {})
    origins = {"avg": same, "max": ("local:/m", "sha", {"pooling": "max"}), "mean": same,
               "max_length=8": ("local:/m", "sha", {"max_length": 8}), "cls": ("local:/m", "sha", {"pooling": "cls"})}
    near = {"mean": mean, "max_length=8": np.round(mean, 1)}  # a variant whose vectors happen to be a rounding
    assert [(d.copy, d.parent) for d in derived_copies(near)] == [("max_length=8", "mean")]
    assert derived_copies(near, origins=origins) == []


def test_real_quantised_copies_are_still_found_and_never_ranked_above_their_parent():
    maps = _relu_feature_maps()
    avg = maps.mean(axis=1).astype(np.float32)
    states = _token_states()
    mean = states.mean(axis=1)
    unit = mean / np.linalg.norm(mean, axis=1, keepdims=True)
    pool = {"avg": avg, "avg-fp16": avg.astype(np.float16).astype(np.float32), "avg-int8": _int8(avg),
            "mean": unit, "mean-fp16": unit.astype(np.float16).astype(np.float32), "mean-int8": _int8(unit),
            "mean-binary": np.sign(unit).astype(np.float32)}
    found = {(d.copy, d.parent): d for d in derived_copies(pool)}
    for copy, parent in (("avg-fp16", "avg"), ("avg-int8", "avg"), ("mean-fp16", "mean"), ("mean-int8", "mean"),
                         ("mean-binary", "mean")):
        assert (copy, parent) in found and found[(copy, parent)].relation == "quantized", (copy, sorted(found))
        assert (parent, copy) not in found and found[(copy, parent)].monotone_fit > 0.97
    assert not [p for p in found if {"avg", "mean"} & {p[0].split("-")[0], p[1].split("-")[0]} == {"avg", "mean"}]
    # declared by the specs: the same model at a lower precision is the copy, whichever has fewer distinct values
    origins = {"mean": ("m", "r", {}), "mean-fp16": ("m", "r", {"dtype": "float16"})}
    both = {"mean": unit, "mean-fp16": pool["mean-fp16"]}
    assert [(d.copy, d.parent) for d in derived_copies(both, origins=origins)] == [("mean-fp16", "mean")]
    scores = {"mean": 0.2, "mean-fp16": 0.9, "mean-int8": 0.8, "avg": 0.5, "avg-int8": 0.95}
    out, _ = copies_below_parents(scores, [(d.copy, d.parent) for d in found.values()])
    assert out["mean"] > max(out["mean-fp16"], out["mean-int8"]) and out["avg"] > out["avg-int8"]


def test_select_reads_the_specs_a_lower_precision_run_is_a_copy_another_pooling_a_variant(tmp_path):
    from embedselect import select
    from testkit import tinymodels as tm

    vit = str(tm.make_tiny_timm(tmp_path / "vit"))
    imgs = tm.make_tiny_images(tmp_path / "imgs", n=40)[0].parent
    r = select(imgs, [f"vit={vit}", f"vit-bf16={vit}?dtype=bfloat16", f"vit-max={vit}?pooling=max",
                      f"vit-px48={vit}?resolution=48", "pixel-pca", "random-projection"],
               cache_dir=tmp_path / "c", metrics=["rankme"])
    pairs = {(p["copy"], p["parent"]): p["relation"] for p in r.details["copies"]["pairs"]}
    assert pairs == {("vit-bf16", "vit"): "quantized"}, pairs
    ranked = [c.name for c in r.candidates]
    assert ranked.index("vit") < ranked.index("vit-bf16")


# --- a shorter input of the same model is a declared copy (issue 23 item 3) --------------------------------------
def test_a_shorter_max_length_of_the_same_model_is_a_declared_copy_of_every_longer_one():
    own = ("local:/m", "sha", {})
    origins = {"full": own, "len64": ("local:/m", "sha", {"max_length": 64}),
               "len8": ("local:/m", "sha", {"max_length": 8}),
               "cls-len8": ("local:/m", "sha", {"pooling": "cls", "max_length": 8}),  # another pooling as well
               "other-len8": ("local:/o", "sha", {"max_length": 8}),  # another model
               "old-len8": ("local:/m", "old", {"max_length": 8})}  # another revision
    found = truncated_inputs(origins)
    assert [(d.copy, d.parent) for d in found] == [("len64", "full"), ("len8", "full"), ("len8", "len64")]
    assert all(d.relation == "truncated-input" and d.declared for d in found)
    # equal lengths are the same run, neither is the copy; a longer max_length is never the copy
    assert truncated_inputs({"a": ("m", "r", {"max_length": 8}), "b": ("m", "r", {"max_length": 8})}) == []
    # pool_copies adds them to what the vectors show, once, and only for embedded candidates
    states = _token_states()
    vectors = {"full": states.mean(axis=1), "len8": states[:, :8].mean(axis=1)}
    pairs = pool_copies(vectors, origins=origins)
    assert [(d.copy, d.parent, d.relation) for d in pairs] == [("len8", "full", "truncated-input")]


def test_select_ranks_the_model_at_8_tokens_below_the_model_and_says_why(tmp_path):
    from embedselect import select
    from testkit import tinymodels as tm
    from embedselect.data import sample_path

    a = str(tm.make_tiny_transformers_text(tmp_path / "tiny-a", seed=0))
    b = str(tm.make_tiny_transformers_text(tmp_path / "tiny-b", seed=1))
    cands = [f"a={a}?backend=transformers&pooling=mean", f"a-len4={a}?backend=transformers&pooling=mean&max_length=4",
             f"a-cls={a}?backend=transformers&pooling=cls", f"b={b}?backend=transformers&pooling=mean",
             "tfidf-svd", "random-projection"]
    # modularity alone: the 4-token run's graph is the more modular one (0.52 against 0.35 for "a")
    r = select(sample_path("texts"), cands, column="text", max_items=80, metrics=["modularity"],
               cache_dir=tmp_path / "cache")
    pairs = {(p["copy"], p["parent"]): (p["relation"], p["declared"]) for p in r.details["copies"]["pairs"]}
    assert pairs == {("a-len4", "a"): ("truncated-input", True)}, pairs  # another pooling is not a copy
    ranked = [c.name for c in r.candidates]
    assert ranked.index("a") < ranked.index("a-len4")
    assert r["a-len4"].scores["modularity"] > r["a"].scores["modularity"]  # what the rule overrides
    assert r.details["copies"]["moved_below_parent"] == [["a-len4", "a"]]
    assert r["a"].combined_score > r["a-len4"].combined_score
    assert any(w.startswith("a-len4 is a truncated-input copy of a (the same model with its input cut to fewer "
                            "tokens)") for w in r.warnings), r.warnings
