"""Pure functions of the wider validity benchmark's harness (benchmarks/validity_pools.py and the modules it reads:
named_pools, scoring, signal_cache; validity_default's default_grid, lodo), on synthetic inputs."""

import collections
import math

import pytest

from benchmarks.named_pools import POOL_MODALITY, POOLS, datasets_for_pool, pool_roles
from benchmarks.scoring import correlations, family_violations, regret, top_pick
from benchmarks.sets.registry import DATASETS as ALL_DATASETS
from benchmarks.validity_pools import DEFAULT_SETTING, lodo_settings, mean_rho, settings_grid

ENTRIES = [
    {"name": "teacher", "parent": None, "relation": None},
    {"name": "static", "parent": "teacher", "relation": "distilled"},
    {"name": "first64", "parent": "teacher", "relation": "truncated"},
    {"name": "cls", "parent": "teacher", "relation": "pooling"},
    {"name": "random", "parent": None, "relation": None},
]
TRUTH = {"teacher": 0.9, "static": 0.7, "first64": 0.92, "cls": 0.6, "random": 0.3}


def test_family_violation_only_for_copies_above_a_better_parent():
    scores = {"teacher": 0.5, "static": 0.8, "first64": 0.9, "cls": 0.99, "random": 0.1}
    # static > teacher while the teacher is better: a violation; first64 > teacher but first64 is really better:
    # not one; cls is a pooling, not a copy relation
    assert family_violations(scores, TRUTH, ENTRIES) == [("static", "teacher")]
    assert family_violations({**scores, "static": 0.4}, TRUTH, ENTRIES) == []
    # an unscored (NaN) copy is skipped, not counted
    assert family_violations({**scores, "static": math.nan}, TRUTH, ENTRIES) == []


def test_regret_and_top_pick_follow_the_tie_rule():
    scores = {"teacher": 0.5, "static": 0.8, "first64": 0.8, "cls": 0.1, "random": 0.0}
    pick, tied = top_pick(scores)
    assert tied == ["first64", "static"] and pick == "first64"  # ties listed by name
    assert regret(scores, TRUTH) == pytest.approx(0.0)
    assert regret({"static": 1.0, "teacher": 0.0}, TRUTH) == pytest.approx(0.92 - 0.7)


def test_correlations_perfect_and_reversed():
    rho, tau = correlations(TRUTH, TRUTH)
    assert rho == pytest.approx(1.0) and tau == pytest.approx(1.0)
    rho, tau = correlations({k: -v for k, v in TRUTH.items()}, TRUTH)
    assert rho == pytest.approx(-1.0) and tau == pytest.approx(-1.0)
    assert all(math.isnan(v) for v in correlations({"teacher": 1.0, "static": 0.0}, TRUTH))


def test_lodo_chooses_on_the_other_datasets_only():
    a, b = (1.0, None), (2.0, None)

    def results(table: dict) -> list[dict]:  # run_dataset's results, as far as the choice reads them
        return [{"name": d, "settings": {s: {"spearman": v} for s, v in row.items()}} for d, row in table.items()]

    # b is better on d1 alone; a is better on d2 and d3
    table = {"d1": {a: 0.5, b: 0.6}, "d2": {a: 0.9, b: 0.5}, "d3": {a: 0.8, b: 0.6}}
    chosen = lodo_settings(results(table), [a, b])
    assert chosen == {"d1": a, "d2": a, "d3": a}  # d1's own numbers never choose for d1
    table["d2"][b] = 1.0
    table["d3"][b] = 1.0
    chosen = lodo_settings(results(table), [a, b])
    assert chosen["d1"] == b and chosen["d2"] == b
    # a NaN (undefined ranking) counts as a failure, and exact ties go to the earlier setting
    assert lodo_settings(results({"x": {a: math.nan, b: 0.1}, "y": {a: 0.5, b: 0.5}}), [a, b]) == {"x": a, "y": b}


def test_lodo_leaves_every_column_of_the_held_out_dataset_out_together():
    """A dataset's views (or (view, seed) pairs) are columns of one dataset: none of them chooses for it."""
    from benchmarks.lodo import lodo_choices

    # setting 1 wins d1's two columns by far, setting 0 the columns of d2 and d3: without d1, setting 0 (with one of
    # d1's columns left in, setting 1 would win: mean 0.67 against 0.4)
    table = [[0.0, 0.0, 0.6, 0.6], [1.0, 1.0, 0.5, 0.5]]
    assert lodo_choices(table, ["d1", "d1", "d2", "d3"], mean_rho) == {"d1": 0, "d2": 1, "d3": 1}


def test_grid_starts_with_the_default():
    grid = settings_grid()
    assert grid[0] == DEFAULT_SETTING and len(grid) == len(set(grid)) == 36  # 6 sufficiency weights x (no comparator + 5 comparators)


def test_validity_default_grid_and_objective():
    """The default-choosing script's grid (512 settings, both methods) and its objective: views meeting both
    targets first, mean Spearman (undefined = -1) second."""
    import math

    from benchmarks.default_grid import settings
    from benchmarks.lodo import objective

    grid = settings()
    assert len(grid) == 512 and {m for _, m in grid} == {"mean-rank", "mean-z"}
    assert ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.5, "rankme": 0.5}, "mean-z") in grid
    assert ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 1.0, "rankme": 0.5, "modularity": 0.5},
            "mean-rank") in grid  # the text default (docs/archive/benchmarks-diary.md §4k)
    good, bad = {"rho": 0.9, "regret": 0.0}, {"rho": 0.95, "regret": 0.05}
    assert objective([good, bad]) > objective([bad, bad])  # a met target beats a higher correlation
    assert objective([{"rho": math.nan, "regret": 0.0}]) == pytest.approx(-0.1)


def test_issue_targets_are_read_per_view_over_seeds():
    """done_when averages a view's ρ over its seeds before the per-view bar, counts regret per (view, seed) pair,
    and says which of issue 23's three targets are met."""
    from benchmarks.lodo import done_when

    rows = [{"rho": 0.9, "regret": 0.0}, {"rho": 0.5, "regret": 0.0},  # view a: mean 0.7 passes the 0.6 bar
            {"rho": 0.55, "regret": 0.05}, {"rho": math.nan, "regret": 0.1}]  # view b: NaN counts as -1
    out = done_when(rows, ["a", "a", "b", "b"])
    assert out.startswith("ρ ≥ 0.6 on 1/2 views (NOT met; lowest b -0.22, a 0.70)")
    assert "mean over views 0.237 (NOT met)" in out and "regret ≤ 0.02 on 50% of (view, seed) pairs (NOT met)" in out
    ok = done_when([{"rho": 0.9, "regret": 0.0}] * 5, ["a"] * 4 + ["b"])
    assert ok.count("(met") == 3 and "NOT" not in ok


def test_per_view_table_averages_each_view_over_its_seeds_and_counts_the_settings_chosen():
    from benchmarks.lodo import per_view_table

    a, b = {"dataset": "d1", "pool": "all"}, {"dataset": "d0", "pool": "photo8"}
    rows = [(({"rho": 0.9, "regret": 0.0}, "s1"), a), (({"rho": math.nan, "regret": 0.05}, "s2"), a),
            (({"rho": 0.7, "regret": 0.01}, "s1"), b), (({"rho": 0.5, "regret": 0.03}, "s1"), a)]
    lines = per_view_table(rows).splitlines()
    assert lines[2] == "| d0/photo8 | 0.70 | 0.010 | 1.0 | s1 ×1 |"  # views sorted by name
    assert lines[3] == "| d1/all | 0.13 | 0.027 | 0.3 | s1 ×2; s2 ×1 |"  # (0.9 - 1 + 0.5) / 3: NaN counts as -1


def test_best_in_sample_averages_seeds_per_view_then_views():
    """The grid's in-sample ceiling (printed after the LODO): a view's ρ is its mean over seeds, the setting with the
    highest mean over views wins even where another has the higher single (view, seed) ρ; NaN counts as -1."""
    from benchmarks.lodo import best_in_sample

    views = ["a", "a", "b"]
    table = [[{"rho": 1.0}, {"rho": 1.0}, {"rho": 0.1}],      # view means a 1.0, b 0.1: 0.55
             [{"rho": 0.8}, {"rho": 0.6}, {"rho": 0.6}],      # a 0.7, b 0.6: 0.65
             [{"rho": 1.0}, {"rho": math.nan}, {"rho": 1.0}]]  # a 0.0, b 1.0: 0.5
    mean, low, lab = best_in_sample(table, views, ["x", "y", "z"])
    assert lab == "y" and mean == pytest.approx(0.65) and low == pytest.approx(0.6)


def test_report_of_two_datasets_scored_by_one_signal_has_no_combination_section():
    """`validity_pools.py --metrics rankme` on two datasets: no setting of the grid can be scored (it needs
    task_prior), so the report leaves the leave-one-dataset-out section out instead of failing (KeyError: None)."""
    sig = {"spearman": 0.5, "kendall": 0.4, "regret": 0.01, "violations": [], "top": "a", "tied": ["a"], "seconds": 1}
    results = [{"name": d, "modality": "text", "n": 10, "n_pool": 10, "n_total": 10, "n_classes": 2,
                "truth": {"a": {"acc": 0.9}, "b": {"acc": 0.8}}, "signals": {"rankme": dict(sig)}, "settings": {}}
               for d in ("x", "y")]
    from benchmarks import validity_pools as vp

    md = vp.to_markdown(results, command="c", folds=5, max_items=10, seed=0)
    assert "rankme" in md and "Leave-one-dataset-out choice" not in md


def test_variant_signals_run_their_metric_with_the_options():
    """`validity_pools.py --metrics task_prior-consensus` computes task_prior with prior='consensus' (issue 23's LODO
    of the prior), not the default prior; `validity_default.py --variants` puts those signals in its grid."""
    import numpy as np

    from benchmarks.default_grid import FAMILIES, settings
    from benchmarks.signal_cache import _metric_one
    from embedselect.metrics.base import MetricContext, get_metric

    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 6))
    vecs = {"a": base, "b": base + 0.05 * rng.normal(size=(40, 6)), "c": rng.normal(size=(40, 6)),
            "d": np.c_[base[:, :3], rng.normal(size=(40, 3))]}
    keys = {k: f"t:{k}" for k in vecs}
    got = _metric_one("task_prior-consensus", vecs, keys, 0)["scores"]
    want = get_metric("task_prior")(MetricContext(embeddings=vecs, run_keys=keys, seed=0,
                                                  options={"prior": "consensus"})).scores
    balanced = _metric_one("task_prior", vecs, keys, 0)["scores"]
    assert got == pytest.approx({k: float(v) for k, v in want.items()})
    assert got != pytest.approx(balanced)
    grid = settings(FAMILIES["models as evidence + normal scores"])
    assert len(grid) == 512 and all("task_prior" in w and "nn_agreement-all" not in w for w, _ in grid)
    assert any("sufficiency-normal_scores" in w for w, _ in grid)


def test_named_pools_run_on_datasets_of_their_modality_only():
    assert set(POOL_MODALITY) == set(POOLS) - {"all"}
    images = [d for d, ds in ALL_DATASETS.items() if ds.modality == "image"]
    texts = [d for d, ds in ALL_DATASETS.items() if ds.modality == "text"]
    assert datasets_for_pool("photo8", None) == images and len(images) >= 4
    assert datasets_for_pool("width", None) == texts
    assert datasets_for_pool("photo8", ["trec", "lfw-faces", "digits"]) == ["lfw-faces", "digits"]
    assert datasets_for_pool("issue", ["trec", "lfw-faces"]) == ["trec"]
    assert datasets_for_pool("all", ["trec", "lfw-faces"]) == ["trec", "lfw-faces"]
    assert len(POOLS["photo8"]) == 8 and len(POOLS["width"]) == 10 and set(POOLS["issue"]) < set(POOLS["width"])


def test_ground_truth_measured_again_on_other_splits_is_cached_beside_the_first(tmp_path, monkeypatch):
    import json

    import numpy as np

    from benchmarks.signal_cache import ground_truth

    monkeypatch.setenv("EMBEDSELECT_BENCH_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 30)
    vec = {"good": (y[:, None] + rng.normal(size=(90, 4))).astype(np.float32),
           "noise": rng.normal(size=(90, 4)).astype(np.float32)}
    first = ground_truth("toy", y, vec, n=90, seed=0, folds=5, jobs=1)
    again = ground_truth("toy", y, vec, n=90, seed=0, folds=5, jobs=1, split_seed=1)
    folder = tmp_path / "validity_pools" / "toy" / "n90_seed0"
    assert sorted(p.name for p in folder.iterdir()) == ["truth_logistic_f5.json", "truth_logistic_f5_split1.json"]
    assert json.loads((folder / "truth_logistic_f5.json").read_text())["good"]["acc"] == first["good"]["acc"]
    assert first["good"]["acc"] > first["noise"]["acc"] and again["good"]["acc"] > again["noise"]["acc"]
    assert (first["good"]["acc"], first["noise"]["acc"]) != (again["good"]["acc"], again["noise"]["acc"])  # other folds
    assert ground_truth("toy", y, vec, n=90, seed=0, folds=5, jobs=1, split_seed=0) == first  # split 0 is the first


def test_the_benchmark_reads_each_modality_default_under_the_signal_cached_with_its_options():
    """A metric the package runs with default options for a modality (images: Gaussian sufficiency, task_prior on
    cluster tasks) is read from the benchmark signal computed with exactly those options; texts read the plain ones."""
    from benchmarks.default_grid import default_extra, default_setting
    from benchmarks.signal_cache import VARIANTS
    from embedselect.pipeline.defaults import default_weight, metric_options

    image, method = default_setting("image")
    assert "task_prior-clusters32" in image and "sufficiency-gaussian" in image and "task_prior" not in image
    assert VARIANTS["task_prior-clusters32"] == ("task_prior", metric_options(None, "image")["task_prior"])
    assert image["task_prior-clusters32"] == default_weight("task_prior", "image") and method == "mean-rank"
    text, _ = default_setting("text")
    assert "task_prior" in text and not any(s.startswith("task_prior-") for s in text)
    assert {m: set(x) for m, x in default_extra().items()} == {"text": set(),
                                                              "image": {"sufficiency-gaussian", "task_prior-clusters32"}}


def test_a_view_needs_the_extra_signals_of_its_own_modality_only():
    """The default's extra signals are per modality: a text view is not dropped for lacking the image default's
    cluster-task signal (``--placements``, ``per_view.py`` and ``truth_noise.py`` read texts and images together)."""
    from benchmarks.default_grid import SIGNALS, default_extra, needed_signals

    assert needed_signals(default_extra(), "text") == SIGNALS
    assert set(needed_signals(default_extra(), "image")) == {*SIGNALS, "sufficiency-gaussian", "task_prior-clusters32"}
    assert needed_signals(("x", "task_prior"), "text") == (*SIGNALS, "x")  # one list for every view, no repeats
    assert needed_signals({"image": ("x",)}, "text") == SIGNALS


def test_lodo_within_modality_chooses_each_modality_from_its_own_grid():
    """``--within-modality``: a held-out dataset's setting is chosen on the other datasets of its modality, from that
    modality's grid only (texts and images each from the families their default was chosen from)."""
    from benchmarks.lodo import lodo_within_modality

    def view(name: str, modality: str, follows: str) -> dict:
        truth = {f"c{i}": i / 10 for i in range(6)}
        other = {k: -v for k, v in truth.items()}
        signals = {"a": truth if follows == "a" else other, "b": truth if follows == "b" else other}
        return {"dataset": name, "pool": "all", "modality": modality, "truth": truth, "signals": signals,
                "pairs": [], "entries": []}

    views = [view(f"t{i}", "text", "a") for i in range(3)] + [view(f"i{i}", "image", "b") for i in range(3)]
    a, b = ({"a": 1.0}, "mean-rank"), ({"b": 1.0}, "mean-rank")
    held = lodo_within_modality(views, {"text": [b, a], "image": [a, b]})
    assert [lab for _, lab in held] == ["a 1"] * 3 + ["b 1"] * 3
    assert all(r["rho"] == pytest.approx(1.0) for r, _ in held)
    held = lodo_within_modality(views, {"text": [b], "image": [a, b]})  # the text grid lacks the right setting
    assert [lab for _, lab in held] == ["b 1"] * 6 and all(r["rho"] == pytest.approx(-1.0) for r, _ in held[:3])


def test_the_family_pools_hold_three_to_five_model_families():
    from benchmarks.candidates import TEXT_POOL

    entries = [{"name": c.name, "kind": c.kind, "parent": c.parent} for c in TEXT_POOL]
    for pool in ("three-families", "four-families", "families-unbalanced", "families-larger-worse"):
        names = list(POOLS[pool])
        assert set(names) <= {e["name"] for e in entries}, pool
        refs, fams = pool_roles([e for e in entries if e["name"] in names], names)
        models = {fams[c] for c in names if c not in refs}
        assert 3 <= len(models) <= 5, (pool, models)
    _, fams = pool_roles(entries, list(POOLS["families-unbalanced"]))
    assert sorted(collections.Counter(fams[c] for c in POOLS["families-unbalanced"]).values()) == [1, 1, 1, 1, 3]


def test_cached_signal_reads_an_earlier_version_known_to_give_the_same_results(tmp_path):
    from benchmarks.signal_cache import SAME_RESULTS, cached_signal, metric_cache_name

    current = tmp_path / metric_cache_name("sufficiency")
    earlier = tmp_path / metric_cache_name("sufficiency", version=SAME_RESULTS["sufficiency"][0])
    other = tmp_path / metric_cache_name("sufficiency", version="0123456789")
    assert cached_signal(tmp_path, "sufficiency") == current and not current.exists()
    other.write_text("{}")  # a version not known to agree is never read
    assert cached_signal(tmp_path, "sufficiency") == current
    oldest = tmp_path / metric_cache_name("sufficiency", version=SAME_RESULTS["sufficiency"][-1])
    oldest.write_text("{}")
    assert cached_signal(tmp_path, "sufficiency") == oldest
    earlier.write_text("{}")  # the first version listed wins over the ones after it
    assert cached_signal(tmp_path, "sufficiency") == earlier
    assert cached_signal(tmp_path, "task_prior") == tmp_path / metric_cache_name("task_prior")
    current.write_text("{}")  # the current code's result wins
    assert cached_signal(tmp_path, "sufficiency") == current
    central = frozenset({"tfidf-svd"})
    assert cached_signal(tmp_path, "sufficiency", central).name.endswith("_ev-tfidf-svd.json")


class _MemoryPairs:
    """A pair cache in memory that counts what is stored."""

    def __init__(self):
        self.store = {}

    def get_many(self, keys):
        return {k: self.store[k] for k in keys if k in self.store}

    def put_many(self, items):
        self.store.update(items)


def _pairs_stored(cache):
    from embedselect.metrics.sufficiency.settings import PAIR_KEY_PREFIX

    return sorted(k for k in cache.store if k.startswith(PAIR_KEY_PREFIX))


@pytest.mark.slow
def test_sufficiency_stores_exactly_the_pairs_its_scores_read_and_scores_as_with_every_pair(monkeypatch):
    """The benchmark runs sufficiency on its plain pair cache under the metric's ``pairs`` default: the cache receives
    the pairs ``scored_targets`` names (those of each averaged estimate) and no other (none towards a reference point,
    a copy, or the candidate's own family), and the scores are those of ``pairs="all"``."""
    import numpy as np

    from benchmarks import signal_cache as sc
    from embedselect.metrics.base import MetricContext, get_metric
    from embedselect.metrics.sufficiency.rows import repeat_count
    from embedselect.metrics.sufficiency.score import scored_targets
    from embedselect.metrics.sufficiency.settings import SufficiencySettings, pair_key, repeat_seeds

    opts = {"max_steps": 40, "eval_every": 10, "min_steps": 10, "max_repeats": 2}
    monkeypatch.setitem(sc.VARIANTS, "sufficiency-test", ("sufficiency", opts))
    monkeypatch.setitem(sc.VARIANTS, "sufficiency-test-all", ("sufficiency", {**opts, "targets": "all"}))
    rng = np.random.default_rng(0)
    base = rng.normal(size=(120, 8))
    vecs = {"a": base + 0.3 * rng.normal(size=(120, 8)), "a-copy": base[:, :6] + 0.1 * rng.normal(size=(120, 6)),
            "b": np.c_[base[:, :4], rng.normal(size=(120, 4))], "c": rng.normal(size=(120, 6)) + base[:, :6],
            "ref": rng.normal(size=(120, 5))}
    keys = {k: f"t:{k}" for k in vecs}
    refs = frozenset({"ref"})
    fams = {"a": "a", "a-copy": "a", "b": "b", "c": "c", "ref": "ref"}
    read = {(s, t) for s, ts in scored_targets(list(vecs), refs, fams).items() for t in ts}
    # witnesses: the heads a, b, c; each candidate is compared with the other families' heads
    assert ("a", "b") in read and ("ref", "c") in read and ("a-copy", "b") in read
    assert ("a", "ref") not in read and ("b", "a-copy") not in read and ("a-copy", "a") not in read
    assert len(read) == 11
    st = SufficiencySettings(**opts)
    skeys = [st.key(s) for s in repeat_seeds(0, repeat_count(120, st))]
    assert len(skeys) == 2

    every, only, targets_all = _MemoryPairs(), _MemoryPairs(), _MemoryPairs()
    want = get_metric("sufficiency")(MetricContext(embeddings=dict(vecs), run_keys=keys, seed=0,
                                                   options={**opts, "pairs": "all"},
                                                   references=refs, families=fams, pair_cache=every)).scores
    got = sc._metric_one("sufficiency-test", vecs, keys, 0, refs, fams, pair_cache=only)
    assert _pairs_stored(only) == sorted(pair_key(keys[s], keys[t], k) for s, t in read for k in skeys)
    assert len(_pairs_stored(every)) == 20 * 2
    assert got["scores"] == pytest.approx({k: float(v) for k, v in want.items()}, abs=1e-6)
    assert all(only.store[k]["is"] == pytest.approx(every.store[k]["is"], abs=1e-6) for k in _pairs_stored(only))
    # a cached reading answers from the stored pairs only (nothing trained or stored), the same again
    stored = dict(only.store)
    assert sc._metric_one("sufficiency-test", vecs, keys, 0, refs, fams, pair_cache=only)["scores"] == got["scores"]
    assert only.store == stored
    # targets="all" reads every pair: every pair is trained and stored
    sc._metric_one("sufficiency-test-all", vecs, keys, 0, refs, fams, pair_cache=targets_all)
    assert _pairs_stored(targets_all) == _pairs_stored(every)
