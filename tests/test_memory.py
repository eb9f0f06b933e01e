"""Memory at scale (issue 12): select() hands the metrics read-only memory maps of the cached vector files, holds no
more than about one candidate's matrix in its own memory at a time, and every metric works on such maps."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import embedselect
from embedselect.metrics import MetricContext, get_metric, information_sufficiency
from embedselect.metrics.sufficiency import rows as suff_rows
from embedselect.metrics.sufficiency import score as suff_mod
from embedselect.metrics.base import MetricSpec, _SPECS, register_metric, unusable_reason
from embedselect.store import Store

N_ITEMS = 40_000
DIMS = (512, 520, 528, 536)
CANDS = [f"rp{d}=random-projection?dim={d}" for d in DIMS]


def _texts(n: int) -> list[str]:
    rng = np.random.default_rng(0)
    words = np.array("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi".split())
    return [" ".join(words[rng.integers(0, len(words), 6)]) + f" {i}" for i in range(n)]


@pytest.fixture
def spy_metric():
    """A registered metric that records what select() hands it, and scores each candidate by its width."""
    seen: dict[str, object] = {}

    def compute(ctx: MetricContext):
        from embedselect.metrics.base import MetricResult

        seen.update(ctx.embeddings)
        return MetricResult(name="spy", scores={k: float(np.shape(v)[1]) for k, v in ctx.embeddings.items()})

    register_metric(MetricSpec("spy", compute, description="test spy"))
    try:
        yield seen
    finally:
        _SPECS.pop("spy", None)


def test_select_hands_metrics_read_only_memory_maps_of_the_cache(cache_dir, spy_metric):
    texts = _texts(300)
    for run in ("fresh", "cached"):
        spy_metric.clear()
        r = embedselect.select(texts, ["tfidf-svd", "random-projection"], metrics=["spy", "rankme"],
                               metric_options={"spy": {"run": run}})  # not the stored result of the first run
        assert [c.cached for c in r] == [run == "cached"] * 2
        assert set(spy_metric) == {"tfidf-svd", "random-projection"}
        for name, v in spy_metric.items():
            # a map of the stored file, the same bytes the store holds, and not writable: metrics must copy first
            assert isinstance(v, np.memmap) and not v.flags.writeable, (run, name, type(v))
            key = next(c.run_key for c in r if c.name == name)
            assert np.array_equal(v, Store.open(cache_dir).load_vectors(key))
            with pytest.raises(ValueError):
                v[0, 0] = 1.0


@pytest.mark.slow  # 40 000 items x 4 candidates: about 80 s on a 2-core CI machine (pytest --durations)
def test_select_never_holds_every_candidates_matrix_at_once(cache_dir):
    texts = _texts(N_ITEMS)
    embedselect.embed(texts, CANDS)  # into the cache; select then reads them from there
    every = N_ITEMS * sum(DIMS) * 4  # 4 x about 80 MiB of float32
    tracemalloc.start()
    try:
        r = embedselect.select(texts, CANDS, metrics=["rankme", "nn_agreement", "task_prior"],
                               metric_options={"task_prior": {"probes": False, "moments_max_items": 2048}})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(c.cached and c.ok for c in r)
    # numpy's allocations (tracemalloc sees them; pages of a memory map are not allocations): the old select loaded
    # every candidate's matrix (peak >= every); now a metric holds one candidate's row blocks and the seeded
    # subsamples (a few thousand rows per candidate, whatever n is)
    assert peak < 0.5 * every, f"peak {peak / 2**20:.0f} MiB of numpy allocations, all matrices {every / 2**20:.0f} MiB"


def _mapped(tmp_path, arrays: dict[str, np.ndarray]) -> dict[str, np.memmap]:
    out = {}
    for k, a in arrays.items():
        np.save(tmp_path / f"{k}.npy", a)
        out[k] = np.load(tmp_path / f"{k}.npy", mmap_mode="r")
    return out


@pytest.mark.parametrize("metric,options", [
    ("task_prior", {"n_tasks": 4}), ("rankme", {}), ("nn_agreement", {}), ("alpha_req", {}), ("uniformity", {}),
    ("modularity", {}),
    ("sufficiency", {"max_steps": 40, "eval_every": 20, "batch_size": 64, "hidden": 16, "n_components": 2}),
])
def test_every_metric_gives_the_same_scores_on_read_only_maps(tmp_path, metric, options):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((400, 12)).astype(np.float32)
    arrays = {"a": base @ rng.standard_normal((12, 16)).astype(np.float32),
              "b": base[:, :8] + 0.3 * rng.standard_normal((400, 8)).astype(np.float32),
              "c": rng.standard_normal((400, 10)).astype(np.float32)}
    fn = get_metric(metric)
    in_memory = fn(MetricContext(embeddings=arrays, run_keys={k: k for k in arrays}, options=options))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="The given NumPy array is not writable")  # torch on a read-only map
        mapped = fn(MetricContext(embeddings=_mapped(tmp_path, arrays), run_keys={k: k for k in arrays},
                                  options=options))
    assert mapped.scores == in_memory.scores


def test_unusable_reason_reads_row_blocks_with_the_same_answer(monkeypatch):
    import embedselect._util.arrays as arrays

    x = np.random.default_rng(0).standard_normal((1000, 8)).astype(np.float32)
    nan = x.copy()
    nan[[3, 700, 701], 2] = np.nan
    const = np.tile(x[:1], (1000, 1)) + np.float32(1e-9) * np.arange(1000, dtype=np.float32)[:, None]
    whole = [unusable_reason("m", a) for a in (x, nan, const)]
    assert whole[0] is None and whole[1].startswith("3 of 1000 items") and whole[2].startswith("every item")
    monkeypatch.setattr(arrays, "BLOCK_ELEMENTS", 64)  # 8 rows per block
    assert list(map(len, arrays.row_blocks(x))) == [8] * 125
    assert [unusable_reason("m", a) for a in (x, nan, const)] == whole


def test_a_stored_matrix_is_checked_once_per_run_and_a_changeable_one_every_time(tmp_path, monkeypatch):
    """The unusable check reads the whole matrix (four passes). Every metric of a run asks it of the same read-only
    memory maps of the store, so it is answered once per candidate per run; an array a caller may still change is
    checked on every call."""
    from embedselect.data import sample_path
    from embedselect.metrics import pool

    calls: list[str] = []
    real = pool.unusable_reason
    monkeypatch.setattr(pool, "unusable_reason", lambda name, x: calls.append(name) or real(name, x))
    cands = ["tfidf-svd", "random-projection", "rp64=random-projection?dim=64", "svd32=tfidf-svd?dim=32"]
    r = embedselect.select(str(sample_path("texts")), cands, column="text", cache_dir=tmp_path / "c", seed=0)
    assert len(r.ok) == 4 and len(r.metrics) == 5  # five metrics, and the pool's own checks before them
    assert sorted(calls) == sorted(c.split("=")[0] for c in cands)  # each candidate once

    calls.clear()
    x = np.random.default_rng(0).standard_normal((100, 8)).astype(np.float32)
    assert unusable_reason("m", x) is None and unusable_reason("m", x) is None and calls == ["m", "m"]
    x[5, 2] = np.nan  # a caller's array can change between calls: never remembered
    assert unusable_reason("m", x).startswith("1 of 100 items")
    np.save(tmp_path / "v.npy", x)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    calls.clear()
    assert unusable_reason("m", mapped).startswith("1 of 100 items") and unusable_reason("m", mapped) is not None
    assert unusable_reason("other", mapped).startswith("1 of 100 items")  # the message names the candidate asked
    assert calls == ["m", "other"]


def _pool(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 6))
    return {"a": (z @ rng.standard_normal((6, 10)) + 0.5 * rng.standard_normal((n, 10))).astype(np.float32),
            "b": (z[:, :4] + 0.5 * rng.standard_normal((n, 4))).astype(np.float32),
            "c": (np.tanh(z) @ rng.standard_normal((6, 8))).astype(np.float32)}


FEW_ROWS = dict(max_steps=30, eval_every=10, patience=2, batch_size=32, hidden=16, n_components=2,
                marginal_max_items=300)


def test_sufficiency_holds_only_the_rows_it_reads_with_the_same_estimate(monkeypatch):
    pool = _pool(3000)
    held = information_sufficiency(pool, seed=0, **FEW_ROWS)
    # at most 30 steps x 32 rows + 450 val + 600 test + 300 EM rows, not all 3 000
    assert held.settings["n_rows_held"] < 2500
    monkeypatch.setattr(suff_rows, "held_rows", lambda n, *used: None)
    every = information_sufficiency(pool, seed=0, **FEW_ROWS)
    assert every.settings["n_rows_held"] == 3000
    np.testing.assert_allclose(held.matrix.to_numpy(), every.matrix.to_numpy(), rtol=1e-4, atol=1e-5)


def test_sufficiency_statistics_in_row_blocks_equal_all_at_once(monkeypatch):
    import embedselect.metrics.sufficiency.knife.prepare as knife  # where Prepared.fit reads it

    pool = _pool(1500, seed=1)
    once = information_sufficiency(pool, seed=0, **FEW_ROWS)
    monkeypatch.setattr(knife, "STATS_BLOCK_ROWS", 100)  # about 9 blocks of training rows
    blocked = information_sufficiency(pool, seed=0, **FEW_ROWS)
    np.testing.assert_allclose(blocked.matrix.to_numpy(), once.matrix.to_numpy(), rtol=1e-4, atol=1e-5)


def test_sufficiency_standardises_on_at_most_prep_max_items_training_rows(monkeypatch):
    # each candidate's standardisation and principal axes read a seeded sample of prep_max_items training rows, not all
    # of them (12 s per candidate at 10^6 x 384 on 2 cores); the training still draws from every training row
    from embedselect.metrics.sufficiency import knife

    seen: list[np.ndarray] = []
    fit = knife.Prepared.fit.__func__

    def spy(cls, x, train_idx, *a, **kw):
        seen.append(np.asarray(train_idx))
        return fit(cls, x, train_idx, *a, **kw)

    monkeypatch.setattr(knife.Prepared, "fit", classmethod(spy))
    pool = _pool(3000)
    capped = information_sufficiency(pool, seed=0, **FEW_ROWS, prep_max_items=500, max_repeats=1)
    n_train = capped.settings["n_train"]
    assert n_train > 500 and suff_mod._subsampled(capped.settings)["prep"] == 500
    assert [len(s) for s in seen] == [500] * 3 and all(np.array_equal(s, seen[0]) for s in seen)
    assert len(np.unique(seen[0])) == 500  # distinct rows, one seeded sample shared by the candidates
    seen.clear()
    information_sufficiency(pool, seed=0, **FEW_ROWS, max_repeats=1)  # under the default cap: every training row
    assert [len(s) for s in seen] == [n_train] * 3
    assert np.isfinite(capped.matrix.to_numpy()[~np.eye(3, dtype=bool)]).all()
