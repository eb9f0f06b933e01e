"""One family, one witness: the pool-relative metrics consult one head per family of variants and copies of one
model, and compare a candidate with the other families' heads only (issue 41; issue 23 weighed each member by
1 / family size, which still leaned the pool towards the family with more options)."""

from __future__ import annotations

import numpy as np
import pytest

from embedselect import select
from embedselect.data import sample_path
from embedselect.metrics.comparators import agreement
from embedselect.metrics.sufficiency import score as sufficiency
from embedselect.metrics.task_prior import score as taskprior
from embedselect.metrics.base import MetricContext, compared_with, evidence, family_heads
from embedselect.metrics.pool import relative_positions, relative_z
from testkit.tinymodels import make_tiny_transformers_text


def test_family_heads_evidence_and_whom_a_candidate_is_compared_with():
    keys = ["A-cls", "A", "A-len8", "B", "pixels"]
    fam = {"A-cls": "A", "A-len8": "A"}
    assert family_heads(keys, [0, 1, 2, 3], fam) == [1, 3]  # the member named by the family key
    assert family_heads(keys, [0, 2, 3], fam) == [0, 3]  # else the family's first member
    assert family_heads(keys, range(5), None) == [0, 1, 2, 3, 4]
    assert evidence(keys, {"pixels"}, fam) == [1, 3]
    # one model family left: its members are the witnesses (the reference points would outvote them: the demo's
    # MiniLM with two options beside tfidf-svd and random-projection ranked tfidf-svd first)
    assert evidence(keys, {"pixels", "B"}, fam) == [0, 1, 2]
    assert evidence(["A", "B", "pixels"], {"pixels", "B"}, None) == [0, 1, 2]  # one model alone: every family's head
    assert compared_with(keys, 0, [1, 3], fam) == [3]  # a variant is compared with the other families only
    assert compared_with(keys, 1, [1, 3], fam) == [3]
    assert compared_with(keys, 3, [1, 3], fam) == [1]
    assert compared_with(["A", "A2"], 0, [0, 1], None) == [1]
    assert compared_with(["A", "A2"], 0, [0], {"A2": "A"}) == []  # nothing to compare with


def test_a_candidates_place_counts_each_family_once():
    scores = {"A": 0.5, "A-cls": 0.9, "A-len8": 0.8, "B": 0.7, "C": 0.1}
    fam = {"A-cls": "A", "A-len8": "A"}
    u = relative_positions(scores, fam)
    assert u["A"] == 0.5 and u["B"] == 0.0 and u["C"] == 1.0  # the heads' normalised ranks among A, B, C
    assert u["A-cls"] == 0.0 and u["A-len8"] == 0.0  # above every family's head, A's own included
    assert relative_positions({**scores, "A-len8": 0.4}, fam)["A-len8"] == 2 / 3  # below its own head and B
    plain = relative_positions(scores, None)  # every candidate a family of its own: (rank - 1) / (m - 1)
    assert plain == {"A-cls": 0.0, "A-len8": 0.25, "B": 0.5, "A": 0.75, "C": 1.0}
    assert relative_positions({"A": 1.0, "B": 1.0, "C": 0.0}, None) == {"A": 0.25, "B": 0.25, "C": 1.0}
    z = relative_z(scores, fam)
    heads = np.array([0.5, 0.7, 0.1])
    assert z["A-cls"] == pytest.approx((0.9 - heads.mean()) / heads.std())


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
    for prior in ("balanced", "central", "consensus"):
        fam = taskprior.compute(_ctx(pool, FAMILIES, probes=False, prior=prior)).details
        assert fam["prior_members"] == ["A", "B"]  # the family's head only
        if prior != "consensus":
            assert {k for k, v in fam["prior_weights"].items() if v > 0} == {"A", "B"}
    # the variants are scored under the prior of the heads: the same prior whatever the variants are
    heads = {k: pool[k] for k in ("A", "B")}
    alone = taskprior.compute(_ctx(heads, FAMILIES, probes=False)).scores
    fam_scores = taskprior.compute(_ctx(pool, FAMILIES, probes=False)).scores
    for k in heads:
        assert fam_scores[k] == pytest.approx(alone[k], rel=1e-9)


def test_the_task_prior_leaves_a_candidates_own_family_out():
    pool = {**_pool(), "C": np.random.default_rng(9).standard_normal((240, 16)).astype(np.float32)}
    opts = {"probes": False, "prior": "consensus", "leave_self_out": True}
    got = taskprior.compute(_ctx(pool, FAMILIES, **opts)).columns["task_prior_alignment"]
    # A's variant is scored under the prior without A (its family's head), i.e. under B + C: the same as when A is
    # not in the pool and the variant is a reference point (consulted by no prior, leaving nothing out)
    without_a = {k: v for k, v in pool.items() if k != "A"}
    ctx = MetricContext(embeddings=without_a, run_keys={k: k for k in without_a}, seed=0, options=opts,
                        families=FAMILIES, references=frozenset({"A-cls", "A-len8"}))
    ref = taskprior.compute(ctx).columns["task_prior_alignment"]
    assert got["A-cls"] == pytest.approx(ref["A-cls"], rel=1e-9)
    assert got["B"] != pytest.approx(ref["B"], rel=1e-6)  # B's prior: A and C in the pool, C alone without A


def test_nn_agreement_and_sufficiency_compare_with_the_other_families_heads():
    pool = _pool()
    nn = agreement.compute(_ctx(pool, FAMILIES))
    g = nn.details["agreement"]
    assert nn.details["compared_with"] == ["A", "B"]
    assert nn.scores["B"] == pytest.approx(g["B"]["A"])  # B with A's head only
    for k in ("A", "A-cls", "A-len8"):  # A and its variants with B only, not with each other
        assert nn.scores[k] == pytest.approx(g[k]["B"])
    plain = agreement.compute(_ctx(pool))
    assert plain.scores["A"] > nn.scores["A"]  # its own variants no longer carry it
    suff = sufficiency.compute(_ctx(pool, FAMILIES, estimator="gaussian"))
    m = suff.details["matrix"]
    for k in ("A", "A-cls", "A-len8"):
        assert suff.scores[k] == pytest.approx(m[k]["B"])
    assert suff.scores["B"] == pytest.approx(m["B"]["A"])


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
    assert {k for k, v in w.items() if v > 0} == {"a", "b"}  # one head per family; the baselines are references
    g = r.details["nn_agreement"]["agreement"]
    assert r["b"].scores["nn_agreement"] == pytest.approx(g["b"]["a"])
    for k in ("a", "a-cls", "a-len8"):
        assert r[k].scores["nn_agreement"] == pytest.approx(g[k]["b"])
