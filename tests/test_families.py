"""One family, one vote: variants and copies of one model weigh once in what the pool-relative metrics consult
(issue 23; docs/archive/benchmarks-diary.md §4h)."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect import select
from embedselect.data import sample_path
from embedselect.metrics.comparators import agreement
from embedselect.metrics.sufficiency import score as sufficiency
from embedselect.metrics.task_prior import score as taskprior
from embedselect.metrics.base import MetricContext, family_weights, weighted_median
from testkit.tinymodels import make_tiny_transformers_text


def test_family_weights_and_the_weighted_median():
    keys = ["A", "A-cls", "A-len8", "B", "pixels"]
    fam = {"A-cls": "A", "A-len8": "A"}
    np.testing.assert_allclose(family_weights(keys, [0, 1, 2, 3], fam), [1 / 3, 1 / 3, 1 / 3, 1.0])
    np.testing.assert_allclose(family_weights(keys, [0, 3, 4], fam), [1.0, 1.0, 1.0])  # a family of one left
    np.testing.assert_allclose(family_weights(keys, [0, 1, 3], None), [1.0, 1.0, 1.0])
    for values in ([3.0, 1.0, 2.0], [4.0, 1.0, 3.0, 2.0], [0.5]):
        assert weighted_median(values, [1.0] * len(values)) == np.median(values)  # equal weights: the median
    assert weighted_median([0.1, 0.2, 0.9], [1 / 3, 1 / 3, 1.0]) == 0.9  # the lone model outweighs a family of two
    assert weighted_median([1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 3.0]) == 3.5


def _pool(n: int = 240) -> dict[str, np.ndarray]:
    """Model A with two variants of itself (noisy re-views of A's vectors) and an unrelated model B."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, 24)).astype(np.float32)
    b = rng.standard_normal((n, 24)).astype(np.float32)
    return {"A": a, "A-cls": a + 0.8 * rng.standard_normal(a.shape).astype(np.float32),
            "A-len8": a + 0.8 * rng.standard_normal(a.shape).astype(np.float32), "B": b}


FAMILIES = {"A": "A", "A-cls": "A", "A-len8": "A", "B": "B"}


def _ctx(embs, families=None, **options) -> MetricContext:
    return MetricContext(embeddings=embs, run_keys={k: k for k in embs}, seed=0, options=options,
                         families=families or {})


def test_the_task_prior_counts_a_family_once():
    pool = _pool()
    # the balanced prior's arithmetic (the central prior, the default, multiplies it by each member's centrality)
    alone = taskprior.compute(_ctx(pool, probes=False, prior="balanced")).details["prior_weights"]
    fam = taskprior.compute(_ctx(pool, FAMILIES, probes=False, prior="balanced")).details["prior_weights"]
    share = lambda w: sum(w[k] for k in ("A", "A-cls", "A-len8"))  # noqa: E731
    assert share(alone) > 0.6  # three votes against one
    # each member's redundancy weight is divided by the family's size: the family's share now equals what one of
    # them had against B, and B's weight grows accordingly
    expected = (share(alone) / 3) / (share(alone) / 3 + alone["B"])
    assert share(fam) == pytest.approx(expected, rel=1e-9)
    assert fam["B"] > alone["B"]
    cons = taskprior.compute(_ctx(pool, FAMILIES, probes=False, prior="consensus")).details
    assert cons["prior_members"] == list(pool)


def test_nn_agreement_and_sufficiency_weigh_each_consulted_model_by_its_family():
    pool = _pool()
    nn = agreement.compute(_ctx(pool, FAMILIES))
    g = nn.details["agreement"]
    # B is compared with A's family only (equal weights); A with B (weight 1) and its two variants (1/3 each)
    assert nn.scores["B"] == pytest.approx(np.mean([g["B"]["A"], g["B"]["A-cls"], g["B"]["A-len8"]]))
    assert nn.scores["A"] == pytest.approx((g["A"]["B"] + (g["A"]["A-cls"] + g["A"]["A-len8"]) / 3) / (1 + 2 / 3))
    plain = agreement.compute(_ctx(pool))
    assert plain.scores["A"] > nn.scores["A"]  # its own variants no longer carry it
    suff = sufficiency.compute(_ctx(pool, FAMILIES, estimator="gaussian"))
    m = suff.details["matrix"]
    assert suff.scores["A"] == pytest.approx(weighted_median([m["A"][t] for t in ("A-cls", "A-len8", "B")],
                                                             [1 / 3, 1 / 3, 1.0]))
    assert suff.scores["A"] == pytest.approx(m["A"]["B"])  # B outweighs the two variants together


def test_select_groups_variants_of_one_model_and_weighs_them_once(tmp_path):
    a = str(make_tiny_transformers_text(tmp_path / "tiny-a", seed=0))
    b = str(make_tiny_transformers_text(tmp_path / "tiny-b", seed=1))
    cands = [f"a={a}?backend=transformers&pooling=mean", f"a-cls={a}?backend=transformers&pooling=cls",
             f"a-len8={a}?backend=transformers&pooling=mean&max_length=8", f"b={b}?backend=transformers&pooling=mean",
             "tfidf-svd", "random-projection", "rp64=random-projection?dim=64"]
    r = select(sample_path("texts"), cands, column="text", max_items=80, metrics=["task_prior", "nn_agreement"],
               metric_options={"task_prior": {"probes": False}}, cache_dir=tmp_path / "cache")
    assert r.details["families"] == {"a": ["a", "a-cls", "a-len8"], "random-projection": ["random-projection", "rp64"]}
    w = r.details["task_prior"]["prior_weights"]
    assert {k for k, v in w.items() if v > 0} == {"a", "a-cls", "a-len8", "b"}  # the baselines are references
    assert w["b"] > 0.3  # one vote of two, give or take the redundancy weights; three of four without families
    g = r.details["nn_agreement"]["agreement"]
    assert r["b"].scores["nn_agreement"] == pytest.approx(np.mean([g["b"][x] for x in ("a", "a-cls", "a-len8")]))
    assert r["a"].scores["nn_agreement"] == pytest.approx(
        (g["a"]["b"] + (g["a"]["a-cls"] + g["a"]["a-len8"]) / 3) / (1 + 2 / 3))
