"""Built-in baselines are reference points: scored by every metric, never consulted as evidence about the data by the
metrics that judge a candidate by the rest of the pool (issue 23; docs/archive/benchmarks-diary.md §4f)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embedselect.errors import ConfigError
from embedselect.metrics.comparators import agreement
from embedselect.metrics.task_prior import score as taskprior
from embedselect.metrics.base import MetricContext, evidence


def _pool(n: int = 240) -> dict[str, np.ndarray]:
    """Three near-copies of one model that sees a 4-cluster structure S1, and two independent "baselines" that see
    another 4-cluster structure S2 strongly and S1 weakly: the shape of the photo pools, where pixel PCA and a random
    projection (both linear in the pixels) see pixel geometry and a little of what the CNNs see."""
    rng = np.random.default_rng(0)
    s1, s2 = rng.integers(0, 4, n), rng.integers(0, 4, n)
    c1, c2 = rng.standard_normal((4, 32)) * 3, rng.standard_normal((4, 32)) * 3
    a = (c1[s1] @ rng.standard_normal((32, 64)) + 4 * rng.standard_normal((n, 64))).astype(np.float32)
    out = {"A": a}
    for name, seed in (("B", 9), ("C", 8)):
        out[name] = a + 0.05 * np.random.default_rng(seed).standard_normal(a.shape).astype(np.float32)
    for name, seed in (("R1", 11), ("R2", 12)):
        r = np.random.default_rng(seed)
        out[name] = ((c2[s2] + 0.3 * c1[s1]) @ r.standard_normal((32, 256)) + 2 * r.standard_normal((n, 256))).astype(np.float32)
    return out


def _ctx(embs, references=frozenset(), **options) -> MetricContext:
    return MetricContext(embeddings=embs, run_keys={k: k for k in embs}, seed=0, options=options, references=references)


def test_evidence_leaves_out_the_references_unless_fewer_than_two_are_left():
    keys = ["A", "B", "R1", "R2"]
    assert evidence(keys, frozenset({"R1", "R2"})) == [0, 1]
    assert evidence(keys, frozenset()) == [0, 1, 2, 3]
    assert evidence(keys, frozenset({"B", "R1", "R2"})) == [0, 1, 2, 3]  # one model left: consult them all


def test_the_task_prior_is_built_from_the_models_and_the_baselines_are_scored_under_it():
    embs = _pool()
    refs = frozenset({"R1", "R2"})
    old = taskprior.compute(_ctx(embs, refs, prior_from="all"))
    new = taskprior.compute(_ctx(embs, refs))
    models, baselines = ("A", "B", "C"), ("R1", "R2")
    # counted in the prior, the two baselines (not near-copies of each other) outweigh the model's family and rank
    # themselves first
    assert min(old.scores[b] for b in baselines) > max(old.scores[m] for m in models) + 0.05
    assert old.details["prior_members"] == list(embs)
    # as reference points they are scored, not consulted: the models' tasks, on which they are not above the models
    assert new.details["prior_members"] == list(models)
    assert all(new.details["prior_weights"][b] == 0.0 for b in baselines)
    assert set(new.scores) == set(embs) and all(np.isfinite(v) for v in new.scores.values())
    assert max(new.scores[b] for b in baselines) <= min(new.scores[m] for m in models) + 0.005
    # the closed-form alignment follows the same prior
    old_a, new_a = old.columns["task_prior_alignment"], new.columns["task_prior_alignment"]
    assert new_a["A"] - new_a["R1"] > old_a["A"] - old_a["R1"]


@pytest.mark.parametrize("prior", ["consensus", "loo"])
def test_consensus_and_leave_one_out_priors_also_consult_only_the_models(prior):
    embs = _pool()
    res = taskprior.compute(_ctx(embs, frozenset({"R1", "R2"}), prior=prior))
    assert res.details["prior_members"] == ["A", "B", "C"]
    assert max(res.scores[b] for b in ("R1", "R2")) <= min(res.scores[m] for m in ("A", "B", "C")) + 0.005


def test_nn_agreement_compares_with_the_models_only():
    embs = _pool()
    refs = frozenset({"R1", "R2"})
    res = agreement.compute(_ctx(embs, refs))
    g = res.details["agreement"]
    assert res.details["compared_with"] == ["A", "B", "C"]
    for key in embs:
        others = [m for m in ("A", "B", "C") if m != key]
        assert res.scores[key] == pytest.approx(np.mean([g[key][m] for m in others]))
    old = agreement.compute(_ctx(embs, refs, compare_with="all"))
    assert old.details["compared_with"] == list(embs)
    assert old.scores["R1"] == pytest.approx(np.mean([g["R1"][m] for m in embs if m != "R1"]))


def test_bad_options_name_the_choices():
    embs = _pool()
    with pytest.raises(ConfigError, match="prior_from"):
        taskprior.compute(_ctx(embs, prior_from="baselines"))
    with pytest.raises(ConfigError, match="compare_with"):
        agreement.compute(_ctx(embs, compare_with="nobody"))


def test_select_marks_the_builtin_baselines_as_reference_points(tmp_path, cache_dir):
    import embedselect
    from testkit.tinymodels import make_tiny_sentence_transformer

    models = [str(make_tiny_sentence_transformer(tmp_path / f"st{seed}", seed=seed)) for seed in (0, 1)]
    texts = [f"{w} {i % 7} and {w[::-1]} number {i}" for i, w in enumerate(["alpha", "beta", "gamma", "delta"] * 15)]
    names = [f"m0={models[0]}", f"m1={models[1]}", "tfidf-svd", "random-projection"]
    ranking = embedselect.select(texts, names, metrics=["task_prior", "nn_agreement"], cache_dir=cache_dir)
    assert ranking.details["task_prior"]["prior_members"] == ["m0", "m1"]
    assert ranking.details["nn_agreement"]["compared_with"] == ["m0", "m1"]
    assert {c.name for c in ranking.candidates if c.ok} == {"m0", "m1", "tfidf-svd", "random-projection"}
    assert all(c.scores["task_prior"] == c.scores["task_prior"] for c in ranking.candidates)  # every one scored
    # the same runs with other reference points are another metric result, not a cache hit of this one
    again = embedselect.select(texts, names[:3] + ["random-projection?seed=5"], metrics=["task_prior"],
                               cache_dir=cache_dir)
    assert again.details["task_prior"]["prior_members"] == ["m0", "m1"]


def test_sufficiency_takes_the_median_over_the_models_as_targets():
    from embedselect.metrics.sufficiency import score as sufficiency

    embs = _pool(200)
    fast = {"max_steps": 60, "eval_every": 20, "patience": 2, "hidden": 16, "n_components": 2}
    refs = frozenset({"R1", "R2"})
    res = sufficiency.compute(_ctx(embs, refs, **fast))
    mat = res.details["matrix"]
    assert res.details["targets"] == ["A", "B", "C"]
    for key in embs:
        assert res.scores[key] == pytest.approx(float(np.median([mat[key][t] for t in ("A", "B", "C") if t != key])))
    old = sufficiency.compute(_ctx(embs, refs, targets="all", **fast))
    assert old.details["targets"] == list(embs)
    every = old.details["matrix"]  # targets="all" estimates every pair (the default only those its scores read)
    assert old.scores["R1"] == pytest.approx(float(np.median([every["R1"][t] for t in embs if t != "R1"])))
    assert math.isnan(mat["R1"]["R2"]) and math.isfinite(every["R1"]["R2"])
    with pytest.raises(ConfigError, match="targets"):
        sufficiency.compute(_ctx(embs, refs, targets="some", **fast))


def test_a_baseline_as_close_to_every_model_as_the_models_are_to_each_other_is_named_with_a_warning():
    """The digits situation (docs/archive/benchmarks-diary.md §4h): three models that each see the data's structure through their
    own heavy noise agree little with each other, while the clean baseline agrees with each of them more."""
    rng = np.random.default_rng(3)
    n = 240
    centres = rng.standard_normal((6, 16)) * 3
    clean = centres[rng.integers(0, 6, n)] + 0.5 * rng.standard_normal((n, 16))
    embs = {f"M{i}": (clean @ rng.standard_normal((16, 48)) + 6 * rng.standard_normal((n, 48))).astype(np.float32)
            for i in range(3)}
    embs["pixels"] = clean.astype(np.float32)
    res = agreement.compute(_ctx(embs, frozenset({"pixels"})))
    assert list(res.details["central_references"]) == ["pixels"] and res.details["central_references"]["pixels"] >= 1
    assert "pixels" in res.details["warnings"][0] and "embedselect validate" in res.details["warnings"][0]
    # the photo pools' shape: the baselines see another structure, so they are less central than the models
    calm = agreement.compute(_ctx(_pool(), frozenset({"R1", "R2"})))
    assert "central_references" not in calm.details and "warnings" not in calm.details
    # with the baselines counted as evidence there is no reference point to name
    assert "central_references" not in agreement.compute(_ctx(embs, frozenset({"pixels"}), compare_with="all")).details
    # the run stage's check (agreement.central_in_pool) finds the same, with the metric's k / max_items options
    assert agreement.central_in_pool(_ctx(embs, frozenset({"pixels"}))) == res.details["central_references"]
    assert agreement.central_in_pool(_ctx(_pool(), frozenset({"R1", "R2"}))) == {}
    assert agreement.central_in_pool(_ctx(embs)) == {}  # no reference points
    assert agreement.central_in_pool(_ctx({"M0": embs["M0"], "pixels": embs["pixels"]}, frozenset({"pixels"}))) == {}
    # too few items for the check (nn_agreement needs 3) is no pool to check, not an error about a metric not asked for
    assert agreement.central_in_pool(_ctx({k: v[:2] for k, v in embs.items()}, frozenset({"pixels"}))) == {}


def test_select_counts_central_baselines_as_evidence_in_every_metric_and_says_so(tmp_path, monkeypatch):
    """Two poolings of one tiny untrained ViT on random images: pixel PCA and the random projection of the pixels
    agree with both more than the two agree with each other (the 8×8 digits' situation, docs/archive/benchmarks-diary.md §4m), so
    the metrics consult them like models (the text pool of test_select_marks_the_builtin_baselines_as_reference_points
    keeps its baselines as reference points)."""
    import embedselect
    from testkit import tinymodels as tm

    vit = str(tm.make_tiny_timm(tmp_path / "vit"))
    imgs = tm.make_tiny_images(tmp_path / "imgs", n=60)[0].parent
    r = embedselect.select(imgs, [f"v={vit}", f"v-max={vit}?pooling=max", "pixel-pca", "random-projection"],
                           cache_dir=tmp_path / "c", metrics=["nn_agreement", "task_prior"])
    central = r.details["central_references"]
    assert set(central) == {"pixel-pca", "random-projection"} and min(central.values()) >= 1
    # the witnesses are one head per family: v-max is a variant of v (another pooling of the same weights)
    assert r.details["nn_agreement"]["compared_with"] == ["v", "pixel-pca", "random-projection"]
    assert set(r.details["task_prior"]["prior_members"]) == {"v", "pixel-pca", "random-projection"}
    assert "central_references" not in r.details["nn_agreement"]  # nothing left aside for the metric to name
    said = [w for w in r.warnings if "count as evidence in this ranking" in w]
    assert len(said) == 1 and "pixel-pca (" in said[0] and "embedselect validate" in said[0]
    # run again over the same store: the check of the reference points reads its pairs back and searches nothing
    from embedselect.metrics.comparators import agreement

    def no_search(*a, **kw):
        raise AssertionError("a k-NN search on a run whose pairs are all stored")

    monkeypatch.setattr(agreement, "neighbour_lists", no_search)
    again = embedselect.select(imgs, [f"v={vit}", f"v-max={vit}?pooling=max", "pixel-pca", "random-projection"],
                               cache_dir=tmp_path / "c", metrics=["nn_agreement", "task_prior"])
    assert again.details["central_references"] == central
    assert [c.scores for c in again.candidates] == [c.scores for c in r.candidates]
