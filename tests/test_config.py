"""The run configuration (issue 46): one RankConfig / Runtime built by the three front doors, one place for the
combined weights and for the EMBEDSELECT_* variables, errors that pickle, and the bugs found on the way."""

from __future__ import annotations

import inspect
import pickle
import re
from pathlib import Path

import pytest

import embedselect
from embedselect import errors
from embedselect.config import LoadPolicy, RankConfig, Runtime, from_keywords
from embedselect.data import ReferenceData, sample_path
from embedselect.errors import ConfigError, EnvironmentVariableError

SAMPLE = str(sample_path("texts"))
PKG = Path(embedselect.__file__).resolve().parent

SETTINGS = dict(metrics=["task_prior", "rankme"], weights={"rankme": 0.5}, metric_options={"task_prior": {"tau": 0.1}},
                max_items=50, seed=3, bootstrap=10, on_error="skip", drop_duplicates="exact", column="text",
                labels="label", policy=LoadPolicy(allow_pickle=True, max_bytes=10**9, allow_models=frozenset({"org/m"})))
"""One set of settings, written for select(); the CLI flags and the nightly YAML below say the same."""


def test_the_three_front_doors_build_one_rank_config(tmp_path, monkeypatch):
    """CLI flags, select() keywords and the nightly YAML accept the same settings and build equal RankConfigs."""
    import yaml

    from embedselect.cli import build_parser
    from embedselect.cli.common import rank_config
    from embedselect.nightly import load_config
    from embedselect.pipeline import run

    args = build_parser().parse_args([
        "rank", SAMPLE, "-c", "text", "--labels", "label", "-m", "tfidf-svd", "--metrics", "task_prior,rankme",
        "--weight", "rankme=0.5", "--option", "task_prior.tau=0.1", "--max-items", "50", "--seed", "3",
        "--bootstrap", "10", "--on-error", "skip", "--drop-duplicates", "exact", "--allow-pickle",
        "--allow-model", "org/m", "--max-model-bytes", "1GB"])
    from_cli = rank_config(args)

    seen = {}

    class Stop(Exception):
        pass

    def capture(data, config, *, labels=None):
        seen["config"] = config
        raise Stop

    monkeypatch.setattr(run, "load_reference_data", capture)
    with pytest.raises(Stop):
        embedselect.select(SAMPLE, "tfidf-svd", **SETTINGS)
    from_select = seen["config"]

    (tmp_path / "nightly.yaml").write_text(yaml.safe_dump({
        "data": {"path": SAMPLE, "column": "text", "labels": "label", "max_items": 50, "on_error": "skip",
                 "drop_duplicates": "exact"},
        "metrics": ["task_prior", "rankme"], "weights": {"rankme": 0.5}, "metric_options": {"task_prior": {"tau": 0.1}},
        "seed": 3, "bootstrap": 10, "output": str(tmp_path / "site"),
        "policy": {"allow_pickle": True, "max_bytes": 10**9, "allow_models": ["org/m"]},
    }))
    from_nightly = load_config(tmp_path / "nightly.yaml").rank_config()

    assert from_cli == from_select == from_nightly == from_keywords(**SETTINGS)[0]
    assert from_cli.to_dict()["weights"] == {"rankme": 0.5} and from_cli.metrics == ("task_prior", "rankme")
    # select() with the objects builds nothing else, and a keyword beside its object is refused
    with pytest.raises(Stop):
        embedselect.select(SAMPLE, "tfidf-svd", config=from_cli, runtime=Runtime(save=False))
    assert seen["config"] is from_cli
    with pytest.raises(ConfigError, match="seed given both"):
        embedselect.select(SAMPLE, "tfidf-svd", config=from_cli, seed=4)


def test_a_rank_config_is_frozen_validated_and_pickles():
    cfg = RankConfig(**SETTINGS)
    with pytest.raises(AttributeError):
        cfg.seed = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.weights["rankme"] = 1.0  # type: ignore[index]
    assert pickle.loads(pickle.dumps(cfg)) == cfg and RankConfig.from_dict(cfg.to_dict()) == cfg
    assert hash(cfg) == hash(RankConfig(**SETTINGS)) and len({cfg, RankConfig(**SETTINGS), RankConfig()}) == 2
    assert RankConfig(metrics="task_prior, rankme").metrics == ("task_prior", "rankme")
    for bad, match in [({"seed": -1}, "seed"), ({"max_items": 0}, "max_items"), ({"bootstrap": 1.5}, "bootstrap"),
                       ({"on_error": "ignore"}, "on_error must be 'fail' or 'skip'"),
                       ({"drop_duplicates": "fuzzy"}, "drop_duplicates"), ({"metrics": []}, "at least one metric"),
                       ({"metrics": ["nope"]}, "unknown metric"), ({"metrics": ["rankme"], "weights": {"sufficiency": 1}}, "not requested"),
                       ({"weights": {"task_prior": -1}}, ">= 0"), ({"column": ""}, "column")]:
        with pytest.raises(ConfigError, match=match):
            RankConfig(**bad)
    with pytest.raises(ConfigError, match="not all 0"):
        RankConfig(metrics=["rankme"], weights={"rankme": 0})
    rt = Runtime(token="hf_secret", batch_size=8)
    assert "hf_secret" not in repr(rt) and pickle.loads(pickle.dumps(rt)) == rt
    with pytest.raises(ConfigError, match="batch_size"):
        Runtime(batch_size=0)


def _rankme_left_out(monkeypatch):
    """task_prior (weight 1) fails; rankme (weight 0 for texts) says it cannot compare the candidates."""
    from embedselect.errors import MetricError
    from embedselect.metrics import MetricResult
    from embedselect.pipeline import scoring

    why = "every candidate has at least n - 1 dimensions"

    def fake(m):
        def compute(ctx):
            if m == "task_prior":
                raise MetricError("task_prior broke")
            return MetricResult(name=m, scores={k: float(i) for i, k in enumerate(sorted(ctx.embeddings))},
                                details={"not_comparable": why, "warnings": [f"left out of the score: {why}"]})
        return compute

    monkeypatch.setattr(scoring, "get_metric", fake)
    return why


def test_a_weight_0_metric_that_becomes_the_score_keeps_its_warning(cache_dir, monkeypatch):
    """Issue 46: when the only positive-weight metric fails, the weight-0 metric is promoted to weight 1; its
    warning used to be dropped as moot first (decided on the requested metrics' weights)."""
    why = _rankme_left_out(monkeypatch)
    r = embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["task_prior", "rankme"],
                           save=False)
    assert r.settings["combined_weights"] == {"rankme": 1.0}
    assert any(w.startswith("rankme") and w.endswith(why) for w in r.warnings), r.warnings
    assert any("task_prior was not computed" in w for w in r.warnings)


def test_the_combined_weights_are_decided_in_one_place():
    from embedselect.pipeline.defaults import combined_weights

    assert combined_weights(["task_prior", "rankme"], "text") == {"task_prior": 1.0, "rankme": 0.0}
    assert combined_weights(["rankme"], "text") == {"rankme": 1.0}  # every weight 0: they are the score
    assert combined_weights(["task_prior", "rankme"], "text", {"rankme": 2}) == {"task_prior": 1.0, "rankme": 2.0}
    sources = {p.relative_to(PKG).as_posix(): p.read_text(encoding="utf-8") for p in PKG.rglob("*.py")}
    deciding = sorted(p for p, s in sources.items() if re.search(r"weight_of\(|default_weight\(", s)
                      and p != "pipeline/defaults.py" and p != "cli/rank.py")  # the CLI's table only prints them
    assert deciding == [], f"combined weights decided outside pipeline/defaults.combined_weights: {deciding}"


def test_a_loaded_reference_data_refuses_settings_it_cannot_apply(cache_dir):
    """Issue 46: select(ReferenceData, labels="col") or column= were silently ignored."""
    ref = ReferenceData.load(SAMPLE, column="text")
    with pytest.raises(ConfigError, match="labels='label'.*ReferenceData"):
        embedselect.select(ref, ["tfidf-svd"], labels="label")
    with pytest.raises(ConfigError, match="column='text'"):
        embedselect.select(ref, ["tfidf-svd"], column="text")
    with pytest.raises(ConfigError, match="labels=<array>"):
        embedselect.select(ref, ["tfidf-svd"], labels=["a"] * len(ref))


def test_embed_refuses_labels(cache_dir, capsys):
    """Issue 46: embed(labels=...) and `embed --labels` were accepted and dropped."""
    from embedselect.cli import main

    assert "labels" not in inspect.signature(embedselect.embed).parameters
    with pytest.raises(TypeError, match="labels"):
        embedselect.embed(SAMPLE, ["tfidf-svd"], column="text", labels="label")  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="labels='label'"):
        embedselect.embed(SAMPLE, ["tfidf-svd"], config=RankConfig(column="text", labels="label"))
    with pytest.raises(SystemExit) as ei:
        main(["embed", SAMPLE, "-c", "text", "--labels", "label", "-m", "tfidf-svd"])
    assert ei.value.code == 2 and "--labels" in capsys.readouterr().err


def test_select_embedded_records_the_settings_the_data_were_loaded_with(tmp_path):
    """Issue 46: select_embedded recorded max_items=None, on_error="fail" whatever the night used."""
    from embedselect.pipeline import embed_reference, select_embedded
    from embedselect.pipeline.context import load_reference_data
    from embedselect.models.candidates import parse_candidates
    from embedselect.store import Store

    config = RankConfig(metrics=["task_prior"], column="text", max_items=40, seed=2, on_error="skip")
    ref = load_reference_data(SAMPLE, config)
    store = Store.open(tmp_path / "c")
    cands = parse_candidates("tfidf-svd,random-projection", modality="text")
    outcomes = embed_reference(ref, cands, store=store, config=config)
    r = select_embedded(ref, cands, outcomes, store=store, config=config, runtime=Runtime(save=False))
    assert (r.settings["max_items"], r.settings["on_error"], r.settings["seed"]) == (40, "skip", 2)


def test_index_best_finds_a_ranking_of_a_sample_drawn_with_another_seed(tmp_path, cache_dir, capsys):
    """Issue 46: `index --model best --max-items N` after `rank --max-items N --seed 3` sampled with seed 0 and
    never found the ranking."""
    from embedselect.cli import main
    from embedselect.search import SearchIndex

    r = embedselect.select(SAMPLE, ["tfidf-svd", "random-projection"], column="text", metrics=["task_prior"],
                           max_items=40, seed=3)
    out = tmp_path / "idx"
    assert main(["index", SAMPLE, "-c", "text", "--max-items", "40", "--model", "best", "--out", str(out)]) == 0
    m = SearchIndex.load(out).manifest
    assert (m.name, m.seed, m.fingerprint) == (r.best.name, 3, r.dataset["fingerprint"])


def test_dash_c_means_the_text_column_in_every_verb():
    import argparse

    from embedselect.cli import build_parser

    def parsers(p):
        yield p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    yield from parsers(sub)

    seen = 0
    for p in parsers(build_parser()):
        for a in p._actions:
            if "-c" in a.option_strings:
                seen += 1
                assert a.dest == "column", f"{p.prog}: -c is --{a.dest}"
    assert seen >= 6


@pytest.mark.parametrize("value", ["2min", "nan", "-1", "inf"])
def test_a_bad_lock_timeout_names_the_variable_and_the_accepted_form(tmp_path, monkeypatch, value):
    from embedselect.store import Store

    monkeypatch.setenv("EMBEDSELECT_LOCK_TIMEOUT", value)
    with pytest.raises(EnvironmentVariableError, match="EMBEDSELECT_LOCK_TIMEOUT.*number of seconds >= 0: give e.g.") as ei:
        Store.open(tmp_path / "c")
    assert ei.value.variable == "EMBEDSELECT_LOCK_TIMEOUT" and isinstance(ei.value, ConfigError)
    monkeypatch.setenv("EMBEDSELECT_LOCK_TIMEOUT", " 2.5 ")
    assert Store.open(tmp_path / "c").lock_timeout == 2.5


def test_a_bad_boolean_variable_is_refused(tmp_path, monkeypatch):
    from embedselect.store import Store

    monkeypatch.setenv("EMBEDSELECT_CACHE_READONLY", "maybe")
    with pytest.raises(EnvironmentVariableError, match="EMBEDSELECT_CACHE_READONLY=.maybe. is not 1, true"):
        Store.open(tmp_path / "c")


def test_only_one_module_reads_embedselect_environment_variables():
    readers = sorted(p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py")
                     if re.search(r"(environ|getenv)[^\n]*EMBEDSELECT_", p.read_text(encoding="utf-8")))
    assert readers == [], f"EMBEDSELECT_* read outside embedselect/_util/env.py: {readers}"
    from embedselect._util import env

    documented = set(re.findall(r"EMBEDSELECT_[A-Z_]+", (PKG / "_util" / "env.py").read_text(encoding="utf-8")))
    used = {v for p in PKG.rglob("*.py") for v in re.findall(r"EMBEDSELECT_[A-Z_]+", p.read_text(encoding="utf-8"))}
    assert used <= documented and set(env.VARIABLES) == documented
    install = (PKG.parent / "docs" / "install.md").read_text(encoding="utf-8")
    table = install[install.index("## Environment variables"):]
    assert set(re.findall(r"^\| `(EMBEDSELECT_[A-Z_]+)` \|", table, flags=re.M)) == documented  # each with what it does


def test_embedselect_catalog_dir_is_searched_first_for_a_catalog_name(tmp_path, monkeypatch):
    from embedselect.models.candidates import parse_candidates

    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "text.yaml").write_text("schema: 1\nmodality: text\nmodels:\n  - baseline: tfidf-svd\n")
    shipped = parse_candidates("catalog:text")
    monkeypatch.setenv("EMBEDSELECT_CATALOG_DIR", str(tmp_path / "cat"))
    assert [c.ref for c in parse_candidates("catalog:text")] == ["tfidf-svd"] != [c.ref for c in shipped]


def test_embedselect_torchvision_shim_0_switches_the_fix_off(monkeypatch):
    """With the variable 0 the fix looks at nothing and applies nothing; unset it goes on to look for torchvision
    (here: not installed, so nothing to fix); a value that is no flag is refused."""
    import sys

    from embedselect._util import compat

    looked: list[str] = []
    monkeypatch.setattr(compat.importlib.util, "find_spec", lambda name: looked.append(name))
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    for value, expected in (("0", []), ("off", []), ("", ["torchvision"])):
        monkeypatch.setattr(compat, "_state", {})
        monkeypatch.setenv("EMBEDSELECT_TORCHVISION_SHIM", value)
        looked.clear()
        assert compat.ensure_torchvision_importable() is False and looked == expected, value
    monkeypatch.setattr(compat, "_state", {})
    monkeypatch.setenv("EMBEDSELECT_TORCHVISION_SHIM", "maybe")
    with pytest.raises(EnvironmentVariableError, match="EMBEDSELECT_TORCHVISION_SHIM"):
        compat.ensure_torchvision_importable()


def test_every_error_pickles_round_trip_with_its_attributes():
    """The Ray executor pickles errors: TooFewItemsError and UnsafeModelError could not be unpickled."""
    kwargs = {errors.TooFewItemsError: {"needed": 3, "got": 1}, errors.UnsafeModelError: {"reason": "gated"},
              errors.HubError: {"status_code": 503, "request_id": "r-1", "repo_id": "org/m"},
              errors.EnvironmentVariableError: {"variable": "EMBEDSELECT_X", "accepted": "a number"},
              errors.CandidatesFailedError: {"ranking": None, "failed": ["org/m"]},
              errors.MissingExtraError: {"extra": "mlflow"}}
    classes = [c for n in errors.__all__ if inspect.isclass(c := getattr(errors, n))]
    assert len(classes) > 25
    for cls in classes:
        exc = cls("what went wrong; what to do", **kwargs.get(cls, {}))
        if cls is errors.UnsafeModelError:
            exc.revision = "abc123"
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and str(back) == str(exc) and back.args == exc.args, cls
        assert vars(back) == vars(exc), cls
    assert set(kwargs) <= set(classes)


def test_the_cache_errors_are_one_family_named_cache():
    """The user's word is "cache" (``--cache-dir``, ``EMBEDSELECT_CACHE_DIR``, ``cache:``): its errors are
    ``CacheError`` and its subclasses, exit 6; no error class says "store"."""
    family = [errors.CacheLockedError, errors.CacheReadOnlyError, errors.CacheDatabaseCorruptError]
    assert all(issubclass(c, errors.CacheError) and c.exit_code == errors.EXIT_CODES["cache"] == 6 for c in family)
    assert not [n for n in errors.__all__ if "Store" in n]


def test_the_facade_lists_its_public_names():
    public = {"select", "embed", "Ranking", "CandidateResult", "ReferenceData", "Candidate", "RankConfig", "Runtime",
              "LoadPolicy", "EmbedselectError", "DataError", "ConfigError", "CandidateError", "HubError",
              "CacheError", "MetricError"}
    assert public <= set(dir(embedselect)) and set(dir(embedselect)) == set(embedselect.__all__)
    assert not any(n.endswith("Error") for n in set(embedselect.__all__) - public)
    from embedselect import pipeline

    assert {"RunContext", "STAGES_PER_CANDIDATE"}.isdisjoint(pipeline.__all__)


def test_every_public_module_lists_its_names():
    """The facade, the top-level modules and every package's __init__ (the public modules) define ``__all__``, and
    each name in it exists."""
    import importlib

    public = ["embedselect", "embedselect.config", "embedselect.errors", "embedselect.version"]
    public += sorted("embedselect." + ".".join(p.parent.relative_to(PKG).parts) for p in PKG.rglob("__init__.py")
                     if p.parent != PKG and not any(part.startswith("_") for part in p.parent.relative_to(PKG).parts))
    missing, unknown = [], []
    for name in public:
        mod = importlib.import_module(name)
        if not hasattr(mod, "__all__"):
            missing.append(name)
            continue
        unknown += [f"{name}.{n}" for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing and not unknown, (missing, unknown)


def test_the_nightly_key_counts_a_new_setting_only_when_it_is_not_its_default(tmp_path):
    """The nightly history is kept per ranking_key: the settings the night gained (bootstrap, drop_duplicates,
    labels, policy) leave the key of an unchanged file as it was, and change it when set."""
    from embedselect.nightly.config import parse_config

    base = {"data": {"path": SAMPLE, "column": "text"}, "output": str(tmp_path / "site")}
    key = parse_config(base, base_dir=tmp_path).ranking_key()
    defaults = {**base, "data": {**base["data"], "drop_duplicates": None, "labels": None}, "bootstrap": 0,
                "policy": {"allow_pickle": False}}
    assert parse_config(defaults, base_dir=tmp_path).ranking_key() == key
    for changed in ({**base, "bootstrap": 10}, {**base, "policy": {"allow_pickle": True}},
                    {**base, "data": {**base["data"], "drop_duplicates": "exact"}}):
        assert parse_config(changed, base_dir=tmp_path).ranking_key() != key
    with pytest.raises(ConfigError, match="weights for metric"):  # validated as select() validates it
        parse_config({**base, "metrics": ["rankme"], "weights": {"sufficiency": 1}}, base_dir=tmp_path)


def test_the_nightly_job_settings_pickle_for_the_ray_workers():
    from embedselect.nightly.executors import EmbedJob

    job = EmbedJob(config=RankConfig(**SETTINGS), runtime=Runtime(device="cpu", token="hf_secret"), timeout_s=60.0)
    back = pickle.loads(pickle.dumps(job))
    assert back == job and back.token == "hf_secret" and "hf_secret" not in repr(job)


def test_misspelt_metric_options_are_refused_by_the_config_with_the_close_name():
    """RankConfig checks every metric option against the metric's spec (the CLI case, before any embedding:
    tests/test_pipeline_results.py)."""
    with pytest.raises(ConfigError, match=r"'tua' \(did you mean 'tau'\?\), 'n_task' \(did you mean 'n_tasks'\?\)"):
        RankConfig(metric_options={"task_prior": {"tua": 0.1, "n_task": 8}})
    with pytest.raises(ConfigError, match=r"unknown metric 'sufficency' \(did you mean 'sufficiency'\?\)"):
        RankConfig(metric_options={"sufficency": {"max_repeats": 1}})
    with pytest.raises(ConfigError, match="unknown modularity option 'kk' .*known: k, max_items, restarts"):
        RankConfig(metric_options={"modularity": {"kk": 3}})
    # an estimator's settings are known with that estimator, or with none named (the data's kind chooses it)
    RankConfig(metric_options={"sufficiency": {"folds": 3, "max_steps": 10}})
    with pytest.raises(ConfigError, match="sufficiency option 'max_steps' belongs to the KNIFE estimator"):
        RankConfig(metric_options={"sufficiency": {"estimator": "gaussian", "max_steps": 10}})


def test_every_builtin_metric_names_its_options_and_its_defaults_pass_the_check():
    """Each built-in spec names its options (one place per metric: its option defaults), and the options the
    pipeline itself gives (each kind of data's defaults, the bootstrap's overrides) pass the check."""
    from embedselect.metrics.base import available_metrics, get_spec
    from embedselect.pipeline.defaults import BY_MODALITY

    for m in available_metrics():
        spec = get_spec(m)
        assert spec.option_names({}), m
        spec.check_options(spec.bootstrap_options)
    for defaults in BY_MODALITY.values():
        for m, options in defaults.options.items():
            get_spec(m).check_options(options)
    RankConfig(metric_options={"task_prior": {"prior": "labels", "n_tasks": 8}, "nn_agreement": {"k": 5},
                               "rankme": {"max_items": 100}, "sufficiency": {"estimator": "knife", "batched": False}})


@pytest.mark.fault
def test_a_direct_call_of_a_metric_with_a_misspelt_option_gets_the_close_name():
    """A call into a metric that bypasses RankConfig (``get_metric("task_prior")(ctx)`` with ``tua``) met only the
    metric's own check: "unknown task_prior option(s) ['tua']; known: ...", no close name. The registry's function
    checks first, with the metric's defaults where the call names none (sufficiency's KNIFE estimator), and is
    still the metric's (spec_of), pickled too."""
    import numpy as np

    from embedselect.metrics import MetricContext, get_metric
    from embedselect.metrics.base import spec_of

    rng = np.random.default_rng(0)
    emb = {n: rng.normal(size=(60, 8)).astype(np.float32) for n in "abcd"}

    def call(metric: str, **options):
        return get_metric(metric)(MetricContext(embeddings=emb, run_keys={n: n for n in emb}, seed=0,
                                                options=options))

    for metric, options, said in [
            ("task_prior", {"tua": 1}, "unknown task_prior option 'tua' (did you mean 'tau'?)"),
            ("nn_agreement", {"kk": 3}, "unknown nn_agreement option 'kk' (did you mean 'k'?)"),
            ("modularity", {"kk": 3}, "unknown modularity option 'kk' (did you mean 'k'?)"),
            ("sufficiency", {"max_stepz": 1}, "unknown sufficiency option 'max_stepz' (did you mean 'max_steps'?)"),
            ("sufficiency", {"estimator": "gaussian", "max_steps": 1}, "'max_steps' belongs to the KNIFE estimator"),
            ("sufficiency", {"folds": 3}, "'folds' belongs to the Gaussian estimator (estimator='gaussian') and has "
                                          "no effect with the KNIFE one (estimator='knife')")]:
        with pytest.raises(ConfigError, match=re.escape(said)):
            call(metric, **options)
    fn = get_metric("modularity")
    assert spec_of(fn).name == "modularity" and spec_of(pickle.loads(pickle.dumps(fn))).name == "modularity"
    assert set(call("modularity", k=5).scores) == set(emb)  # a right option: the metric's result


@pytest.mark.fault
def test_misspelt_metric_and_baseline_names_get_the_close_name():
    """New-user audit: ``--metrics sufficency``, ``-m tfidf-svg`` and ``-m random-projections`` listed what exists
    without the close name."""
    from embedselect.errors import CandidateSpecError, UnknownMetricError
    from embedselect.metrics.base import get_spec
    from embedselect.models.backends.baselines import make_baseline
    from embedselect.models.candidates import parse_candidates

    with pytest.raises(UnknownMetricError, match=r"'sufficency' \(did you mean 'sufficiency'\?\); available: "):
        RankConfig(metrics="task_prior,sufficency")
    with pytest.raises(UnknownMetricError, match=r"'rankmee' \(did you mean 'rankme'\?\)"):
        get_spec("rankmee")
    with pytest.raises(UnknownMetricError, match=r"unknown metric 'zzz'; available"):  # nothing close: no guess
        RankConfig(metrics=["zzz"])
    # a weight's misspelt metric (``--weight sufficency=1``) said only "not requested: ['sufficency']"
    with pytest.raises(ConfigError, match=r"weights: unknown metric 'sufficency' \(did you mean 'sufficiency'\?\)"):
        RankConfig(weights={"sufficency": 1})
    with pytest.raises(ConfigError, match=r"weights: unknown metric 'zzz'; available"):
        RankConfig(metrics=["task_prior"], weights={"zzz": 1})
    with pytest.raises(ConfigError, match=r"not requested: \['sufficiency'\]"):  # a metric, not ranked: as before
        RankConfig(metrics=["task_prior"], weights={"sufficiency": 1})
    for typo, meant in [("tfidf-svg", "tfidf-svd"), ("random-projections", "random-projection")]:
        with pytest.raises(CandidateSpecError, match=rf"'{typo}' \(did you mean the baseline '{meant}'\?\)"):
            parse_candidates(typo)
    with pytest.raises(CandidateSpecError, match=r"unknown baseline 'tfidf' \(did you mean 'tfidf-svd'\?\)"):
        parse_candidates("baseline:tfidf")
    with pytest.raises(ConfigError, match=r"unknown baseline 'pixel-pcb' \(did you mean 'pixel-pca'\?\)"):
        make_baseline("pixel-pcb", modality="image", options={})
