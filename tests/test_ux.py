"""What a person at the terminal and an operator in a pipeline meet (issue 14): a silent library, typed errors
for odd arguments, names, output paths checked before any work, timings, one-line CLI errors."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import CandidateSpecError, EmbedselectError
from testkit.options import FAST_SUFFICIENCY

SAMPLE = str(sample_path("texts"))
PAIR = ["tfidf-svd", "random-projection"]


# --- 2. select() never prints ------------------------------------------------------------------------
@pytest.mark.fault
def test_select_prints_nothing_even_when_it_warns(tmp_path):
    """Run in a fresh interpreter whose program set up no logging: select() logs a warning (an embedder object without
    a revision: its vectors are kept for this run only), and logging's last-resort handler, which writes such records
    to stderr when no handler is found, must not reach it (embedselect's NullHandler is that handler). The run counts
    the records made through a record factory, which is no handler and so cannot hide the last resort."""
    code = (
        "import logging\n"
        "import numpy as np\n"
        "made = []\n"
        "factory = logging.getLogRecordFactory()\n"
        "def record(*args, **kwargs):\n"
        "    made.append(factory(*args, **kwargs))\n"
        "    return made[-1]\n"
        "logging.setLogRecordFactory(record)\n"
        "def letters(items):\n"
        "    return np.array([[t.count(c) for c in 'aeinost '] for t in items], dtype=np.float32)\n"
        "import embedselect\n"
        f"r = embedselect.select({SAMPLE!r}, [*{PAIR!r}, letters], column='text', metrics=['task_prior', 'sufficiency'],\n"
        f"                       metric_options={{'sufficiency': {{**{FAST_SUFFICIENCY!r}, 'max_repeats': 1}}}},\n"
        f"                       cache_dir={str(tmp_path / 'c')!r})\n"
        "assert r.warnings and r['letters'].ok\n"
        "said = [x.getMessage() for x in made if x.name.startswith('embedselect') and x.levelno >= logging.WARNING]\n"
        "assert any('letters: an embedder object without a revision' in m for m in said), said\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""


def test_the_package_logger_has_a_null_handler():
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("embedselect").handlers)


@pytest.mark.parametrize("bad", [42, {"tfidf-svd": "x", "random-projection": "y"}])
@pytest.mark.fault
def test_odd_candidates_get_a_typed_error(tmp_path, bad):
    with pytest.raises(CandidateSpecError) as info:
        embedselect.select(SAMPLE, bad, column="text", metrics=["task_prior"], cache_dir=tmp_path / "c")
    assert isinstance(info.value, EmbedselectError)
    assert "list" in str(info.value)


def test_metric_warnings_reach_the_top_level_warnings(tmp_path):
    r = embedselect.select(SAMPLE, PAIR, column="text", metrics=["sufficiency"], cache_dir=tmp_path / "c")
    metric_warnings = r.details["sufficiency"]["warnings"]
    pool = r.details["sufficiency"]["pool_warning"]
    assert len(metric_warnings) >= 2 and pool in metric_warnings
    for w in metric_warnings:  # all of them, but the pool's size: the ranking says that once (see below)
        assert any(w in top for top in r.warnings) == (w != pool), w


# --- 3. names ------------------------------------------------------------------------------------------
def test_name_equals_spec_and_readable_local_names(tmp_path):
    from embedselect.models.candidates import parse_candidates
    from testkit.tinymodels import make_tiny_sentence_transformer

    model = make_tiny_sentence_transformer(tmp_path / "all-tiny" / "model")
    (model / "README.md").write_text("---\nlibrary_name: sentence-transformers\n---\n\n# tiny-minilm\n\ntext\n")
    named = parse_candidates(f"mine={model},cls={model}?pooling=cls,tfidf-svd,rp=random-projection?dim=8")
    assert [c.name for c in named] == ["mine", "cls", "tfidf-svd", "rp"]
    assert named[1].options == {"pooling": "cls"} and named[3].options == {"dim": 8}
    # default names: the model card's title plus the options, not the folder's basename "model"
    plain = parse_candidates([str(model), f"{model}?pooling=cls"])
    assert [c.name for c in plain] == ["tiny-minilm", "tiny-minilm?pooling=cls"]
    (model / "README.md").write_text("# <script>alert(1)</script>\n")  # untrusted card text is not a name
    assert parse_candidates(str(model))[0].name == "all-tiny"  # the parent of a folder called "model"
    with pytest.raises(CandidateSpecError, match="NAME=SPEC"):
        parse_candidates("=tfidf-svd")


def test_cli_names_reach_the_table(tmp_path, capsys):
    assert main(["rank", SAMPLE, "-c", "text", "-m", "words=tfidf-svd,noise=random-projection", "--metrics",
                 "task_prior", "--cache-dir", str(tmp_path / "c"), "-q", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert {c["name"] for c in r["candidates"]} == {"words", "noise"}


# --- 4. output paths ------------------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--out", "--html", "--markdown"])
@pytest.mark.parametrize("where", ["directory", "missing-parent"])
@pytest.mark.fault
def test_bad_output_paths_are_refused_before_any_work(tmp_path, capsys, option, where):
    target = tmp_path if where == "directory" else tmp_path / "no" / "such" / "r.json"
    cache = tmp_path / "cache"
    code = main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--metrics", "task_prior", "--cache-dir",
                 str(cache), "-q", "--json", option, str(target)])
    assert code == 2
    err = capsys.readouterr()
    assert err.out == ""  # nothing was computed, nothing half-printed
    assert len(err.err.strip().splitlines()) == 1 and option in err.err
    assert not cache.exists()  # no work: the store was never opened
    assert not (tmp_path / "no").exists()  # a missing parent is not created silently


@pytest.mark.fault
def test_outputs_are_written_through_unique_temporary_names(tmp_path, capsys):
    out = tmp_path / "r.json"
    users_file = tmp_path / "r.json.tmp"
    users_file.write_text("the user's own file")
    assert main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "--cache-dir", str(tmp_path / "c"), "-q", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["candidates"]
    assert users_file.read_text() == "the user's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "r.json", "r.json.tmp"]  # no temporary left


@pytest.mark.fault
def test_write_atomic_removes_its_temporary_file_when_writing_fails(tmp_path):
    from embedselect.cli.common import write_atomic

    with pytest.raises(TypeError):
        write_atomic(tmp_path / "x.txt", 42)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


# --- 5. timings -----------------------------------------------------------------------------------------
def test_per_stage_wall_time_in_the_ranking_json_store_and_table(tmp_path, capsys):
    from embedselect.cli.format import format_table
    from embedselect.ranking.result import Ranking
    from embedselect.store import Store

    labels = [str(i % 2) for i in range(240)]
    texts = [f"text number {i} about {'cats' if i % 2 else 'dogs'} and {i % 7}" for i in range(240)]
    r = embedselect.select(texts, PAIR, labels=labels, metrics=["task_prior"], cache_dir=tmp_path / "c")
    t = r.timings
    assert set(t["candidates"]) == set(PAIR) and all(v > 0 for v in t["candidates"].values())
    assert set(t["metrics"]) == {"task_prior"} and t["metrics"]["task_prior"] > 0
    assert t["validation"] > 0
    assert t["total"] >= sum(t["candidates"].values()) + t["metrics"]["task_prior"] + t["validation"]
    assert Ranking.from_json(r.to_json()).timings == t  # in the JSON
    stored = Store.open(tmp_path / "c").get_ranking(r.ranking_id)  # and in the store
    assert stored["timings"]["metrics"]["task_prior"] == pytest.approx(t["metrics"]["task_prior"])
    footer = format_table(r).splitlines()[-1]
    assert footer.startswith("time: embed tfidf-svd") and "task_prior" in footer and "validation" in footer


# --- 6. one-line errors, JSON only ----------------------------------------------------------------------
@pytest.mark.fault
def test_an_unexpected_exception_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    import embedselect.pipeline

    def boom(*a, **k):
        raise RuntimeError("something broke\n  deep inside")

    monkeypatch.setattr(embedselect.pipeline, "select", boom)
    argv = ["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "embedselect: error: unexpected RuntimeError: something broke deep inside (run with -v for the traceback)"
    ]
    assert main([*argv, "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("embedselect: error: unexpected")


@pytest.mark.fault
def test_typed_errors_are_one_line_with_their_exit_code(tmp_path, capsys, monkeypatch):
    import embedselect.pipeline
    from embedselect.errors import CacheError

    def locked(*a, **k):
        raise CacheError("the cache is busy\nwait or use --cache-dir")

    monkeypatch.setattr(embedselect.pipeline, "select", locked)
    assert main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--cache-dir", str(tmp_path / "c")]) == 6
    assert capsys.readouterr().err.strip().splitlines() == [
        "embedselect: error: the cache is busy wait or use --cache-dir"
    ]


@pytest.mark.fault
def test_json_on_stdout_is_only_json_even_with_warnings(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "embedselect.cli", "rank", SAMPLE, "-c", "text", "-m", ",".join(PAIR),
         "--metrics", "sufficiency", "--json", "--cache-dir", str(tmp_path / "c"),
         *[a for k, v in {**FAST_SUFFICIENCY, "max_repeats": 1}.items() for a in ("--option", f"sufficiency.{k}={v}")]],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["warnings"]  # stdout parses as one JSON document
    # each warning went to stderr once, as the table's notes say it
    assert [ln for ln in done.stderr.splitlines() if ln.startswith("note: ")] == [
        f"note: {w['message']}" for w in json.loads(done.stdout)["warnings"]]


# --- 4. the text output of validate -----------------------------------------------------------------------
TRIO = [*PAIR, "rp8=random-projection?dim=8"]


def test_validate_text_shows_what_its_docs_say_to_read(tmp_path):
    """Per candidate the accuracy with its interval and chance; which probe; each correlation with its interval;
    the wrong pairs; the small-pool warning; and what the unrequested task_prior_alignment row is."""
    from embedselect.cli.format import format_table

    r = embedselect.select(SAMPLE, TRIO, column="text", labels="label", metrics=["task_prior"],
                           metric_options={"task_prior": {"prior": "balanced"}},  # a prior that gets pairs wrong here
                           cache_dir=tmp_path / "c")
    v = r.validation
    text = format_table(r)
    section = text.split("validation against your labels")[1]
    chance = next(iter(v["table"].values()))["chance"]
    assert f"chance (always the most frequent class) {chance:.3f}" in section
    assert v["probe_settings"]["accuracy_probe"] in section  # which probe produced the accuracies
    assert "90% bootstrap interval" in section
    for c in r.ok:
        acc, lo, hi = (c.columns[f"labels.logistic_acc{s}"] for s in ("", "_lo", "_hi"))
        assert lo < acc < hi
        assert any(c.name in line and f"{acc:.3f} [{lo:.3f}, {hi:.3f}]" in line for line in section.splitlines())
    for mv in v["metrics"]:
        lo, hi = mv["spearman_ci"]
        line = next(ln for ln in section.splitlines() if ln.strip().split(":")[0].split(" (")[0] == mv["metric"])
        assert f"Spearman {mv['spearman']:.2f} [{lo:.2f}, {hi:.2f}]" in line, line
    wrong = [w for mv in v["metrics"] for w in mv["wrong_pairs"]]
    assert wrong  # this pool has some: every one is listed, with its accuracy gap
    for w in wrong:
        assert f"{w['ranked_higher']} above {w['ranked_lower']} (accuracy {w['accuracy_diff']:.3f} lower)" in section
    assert any("rank correlations over so few models are noisy" in ln for ln in section.splitlines())
    alignment = next(ln for ln in section.splitlines() if ln.strip().startswith("task_prior_alignment"))
    assert "secondary score of task_prior" in alignment and "not in the combined rank" in alignment


@pytest.mark.fault
def test_validate_with_one_candidate_reports_its_accuracy(tmp_path, capsys):
    code = main(["validate", SAMPLE, "-c", "text", "--labels", "label", "-m", "tfidf-svd", "--metrics", "task_prior",
                 "--cache-dir", str(tmp_path / "c"), "-q"])
    out = capsys.readouterr()
    assert code == 0, out.err
    section = out.out.split("validation against your labels")[1]
    assert "tfidf-svd" in section and "a ranking needs at least two candidates" in section
    assert main(["validate", SAMPLE, "-c", "text", "--labels", "label", "-m", "tfidf-svd", "--cache-dir",
                 str(tmp_path / "c"), "-q", "--json"]) == 0  # default metrics: sufficiency cannot score one
    r = json.loads(capsys.readouterr().out)
    assert r["validation"]["metrics"] == []
    assert 0 < r["candidates"][0]["columns"]["labels.logistic_acc"] <= 1
    assert any("needs at least two candidates" in w for w in r["validation"]["warnings"])


# --- 6. duplicates ------------------------------------------------------------------------------------------
def _texts(n: int) -> list[str]:
    return [f"text number {i} about {'cats' if i % 2 else 'dogs'} and {i % 7}" for i in range(n)]


@pytest.mark.fault
def test_duplicates_are_shown_in_the_table_the_json_and_the_html(tmp_path, capsys):
    import pandas as pd

    data = tmp_path / "d.csv"
    pd.DataFrame({"text": _texts(120) + _texts(30)}).to_csv(data, index=False)  # 30 exact copies
    html = tmp_path / "r.html"
    argv = ["rank", str(data), "-c", "text", "-m", ",".join(PAIR), "--metrics", "task_prior", "--cache-dir",
            str(tmp_path / "c"), "-q"]
    assert main([*argv, "--json", "--html", str(html)]) == 0
    said = "30 of the 150 reference items are exact copies of an earlier item"
    found = next(w for w in json.loads(capsys.readouterr().out)["warnings"] if said in w["message"])
    warning = found["message"]
    assert found["code"] == "duplicates" and "inflate the agreement between candidates" in warning  # says what they do
    assert said in html.read_text()
    assert main(argv) == 0
    assert any(line.startswith("note: ") and said in line for line in capsys.readouterr().out.splitlines())
    clean = embedselect.select(_texts(120), PAIR, metrics=["task_prior"], cache_dir=tmp_path / "c")
    assert not any("exact copies" in w for w in clean.warnings)


@pytest.mark.fault
def test_a_reference_set_of_identical_items_is_refused_up_front(tmp_path):
    from embedselect.errors import DataError

    with pytest.raises(DataError, match="all 60 reference items are the same") as info:
        embedselect.select(["the same text"] * 60, PAIR, metrics=["task_prior"], cache_dir=tmp_path / "c")
    assert "distinct" in str(info.value)
    assert not (tmp_path / "c").exists()  # before any work
    # near-constant data (58 copies of one text and 2 others) is ranked, with the copies said
    r = embedselect.select(["the same text"] * 58 + ["a cat", "a dog"], PAIR, metrics=["task_prior"],
                           cache_dir=tmp_path / "c")
    assert any("57 of the 60 reference items are exact copies" in w for w in r.warnings)


# --- hostile inputs -------------------------------------------------------------------------------------------
@pytest.mark.fault
def test_one_degenerate_candidate_fails_only_that_candidate(tmp_path):
    """A model that gives (up to float noise) the same vector for every input used to abort the whole ranking:
    a traceback in the default metrics, or "no metric could be computed" with task_prior."""
    import math

    from testkit.tinymodels import make_constant_sentence_transformer

    flat = make_constant_sentence_transformer(tmp_path / "flat")
    r = embedselect.select(SAMPLE, [f"flat={flat}", *TRIO], column="text", cache_dir=tmp_path / "c",
                           metric_options={"sufficiency": FAST_SUFFICIENCY})
    assert r.metrics == ["task_prior", "sufficiency", "nn_agreement", "rankme", "modularity"]  # the defaults
    healthy = [c for c in r if c.name != "flat"]
    assert all(math.isfinite(c.scores[m]) for c in healthy for m in r.metrics)
    assert all(c.rank is not None for c in healthy) and r.best.name != "flat"
    assert all(math.isnan(r["flat"].scores[m]) for m in r.metrics) and r["flat"].rank is None
    for m in r.metrics:  # the reason, once per metric
        said = [w for w in r.warnings if w.startswith(m) and "flat" in w and "same embedding" in w]
        assert len(said) == 1, (m, r.warnings)
    only_tp = embedselect.select(SAMPLE, [f"flat={flat}", *PAIR], column="text", metrics=["task_prior"],
                                 cache_dir=tmp_path / "c")
    assert sorted(c.name for c in only_tp if c.rank is not None) == sorted(PAIR)


def _snapshot(root):
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("how", ["permissions", "env"])
@pytest.mark.fault
def test_a_read_only_cache_serves_what_it_holds(tmp_path, capsys, monkeypatch, how):
    """A shared, pre-filled cache the user cannot write: `cache ls` and a fully cached `rank` work and change
    nothing; work that would have to be stored fails with a typed error (the candidate, or `cache rm`: exit 6)."""
    import os
    import stat

    cache = tmp_path / "c"
    rank = ["rank", SAMPLE, "-c", "text", "--metrics", "task_prior", "--cache-dir", str(cache), "-q", "--json"]
    assert main([*rank, "-m", ",".join(PAIR)]) == 0
    capsys.readouterr()
    before = _snapshot(cache)
    dirs = [cache, *(p for p in cache.rglob("*") if p.is_dir())]
    if how == "env":
        monkeypatch.setenv("EMBEDSELECT_CACHE_READONLY", "1")
    else:
        for p in [*dirs, *(cache / f for f in before)]:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        if os.geteuid() == 0:  # root writes anyway: show it what another user would see
            real = os.access
            monkeypatch.setattr(os, "access", lambda p, mode, **k: False if (mode & os.W_OK and str(p).startswith(
                str(cache))) else real(p, mode, **k))
    try:
        assert main(["cache", "ls", "--cache-dir", str(cache)]) == 0
        listing = capsys.readouterr().out
        assert all(n in listing for n in ("baseline:tfidf-svd", "baseline:random-projection"))
        assert main([*rank, "-m", ",".join(PAIR)]) == 0
        r = json.loads(capsys.readouterr().out)
        assert all(c["cached"] and c["status"] == "ok" for c in r["candidates"])
        assert any(w["code"] == "not-stored" and "read-only" in w["message"] for w in r["warnings"])
        assert r["ranking_id"] is None
        assert main([*rank, "-m", ",".join([*PAIR, "rp8=random-projection?dim=8"])]) == 0
        r = json.loads(capsys.readouterr().out)
        failed = [c for c in r["candidates"] if c["status"] != "ok"]
        assert [c["name"] for c in failed] == ["rp8"] and failed[0]["error_type"] == "CacheReadOnlyError"
        assert "read-only" in failed[0]["error"] and "--cache-dir" in failed[0]["error"]
        fresh = ["-m", "rp8=random-projection?dim=8"]  # nothing cached, nothing can be stored: a cache error
        assert main([*rank, *fresh]) == 6
        assert main(["embed", SAMPLE, "-c", "text", "--cache-dir", str(cache), "-q", *fresh]) == 6
        capsys.readouterr()
        assert main(["cache", "rm", "--all", "--cache-dir", str(cache)]) == 6
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "read-only" in err[0]
        assert _snapshot(cache) == before  # nothing was written, not even a lock file
    finally:
        for p in dirs:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


@pytest.mark.fault
def test_a_ragged_csv_row_is_named_and_skippable(tmp_path):
    from embedselect.data import ReferenceData
    from embedselect.errors import DecodeError

    data = tmp_path / "r.csv"
    data.write_text('text,label\nfirst row,a\nsecond row,b,EXTRA\n"third, quoted",c\nfourth,d\n')
    with pytest.raises(DecodeError) as info:
        ReferenceData.load(data, column="text")
    msg = str(info.value)
    assert "row 2" in msg and "3 fields" in msg and "--on-error skip" in msg
    ref = ReferenceData.load(data, column="text", label_column="label", on_error="skip")
    assert ref.items == ("first row", "third, quoted", "fourth")
    assert ref.ids == ("1", "3", "4")  # data row numbers, as without the ragged row
    assert list(ref.labels) == ["a", "c", "d"]
    assert ref.report.n_skipped_undecodable == 1 and ref.report.skipped_examples[0]["id"] == "2"


@pytest.mark.fault
def test_images_that_fail_to_decode_are_named_without_internals(tmp_path):
    from PIL import Image

    from embedselect.data import ReferenceData
    from embedselect.errors import DecodeError

    for i in range(3):
        Image.new("RGB", (8, 8), (60 * i, 0, 0)).save(tmp_path / f"ok{i}.png")
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(DecodeError) as info:
        ReferenceData.load(tmp_path)
    msg = str(info.value)
    assert "broken.jpg" in msg and "empty.png" in msg
    assert not any(s in msg for s in ("ImageInvalid", "BytesIO", "0x")), msg
    ref = ReferenceData.load(tmp_path, on_error="skip")
    reasons = [e["reason"] for e in ref.report.skipped_examples]
    assert len(reasons) == 2 and not any("BytesIO" in r or "ImageInvalid" in r for r in reasons), reasons


@pytest.mark.fault
def test_images_left_out_with_on_error_skip_are_named_in_the_notes(tmp_path, capsys):
    """rank --on-error skip said nothing of the images it left out (a truncated JPEG, an empty file): the table and
    its notes were those of a folder without them; only the JSON's dataset.report counted them. Now a note (code
    skipped-items) names them with the reason, in the table's notes, the JSON and the HTML."""
    import numpy as np
    from PIL import Image

    photos = tmp_path / "photos"
    photos.mkdir()
    rng = np.random.default_rng(0)
    for i in range(60):
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(photos / f"p{i}.png")
    (photos / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (photos / "empty.png").write_bytes(b"")
    html = tmp_path / "r.html"
    argv = ["rank", str(photos), "-m", "pixel-pca,random-projection", "--metrics", "task_prior", "--on-error",
            "skip", "--cache-dir", str(tmp_path / "c"), "-q"]
    assert main([*argv, "--json", "--html", str(html)]) == 0
    found = [w for w in json.loads(capsys.readouterr().out)["warnings"] if w["code"] == "skipped-items"]
    assert len(found) == 1, found
    said = found[0]["message"]
    assert said.startswith("2 of the 62 images were left out (--on-error skip): broken.jpg (not a readable image"), said
    assert "empty.png (" in said and said in html.read_text()
    assert main(argv) == 0
    assert f"note: {said}" in capsys.readouterr().out


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
@pytest.mark.fault
def test_a_numeric_column_given_as_the_text_column_is_refused(tmp_path, suffix):
    import pandas as pd

    from embedselect.data import ReferenceData
    from embedselect.errors import DataError

    frame = pd.DataFrame({"id": [3, 1, 2], "text": ["a cat", "a dog", "a bird"]})
    path = tmp_path / f"d.{suffix}"
    {"csv": lambda: frame.to_csv(path, index=False), "parquet": lambda: frame.to_parquet(path),
     "jsonl": lambda: frame.to_json(path, orient="records", lines=True)}[suffix]()
    with pytest.raises(DataError, match="column 'id' holds only numbers") as info:
        ReferenceData.load(path, column="id")
    assert "text" in str(info.value).split("holds only numbers")[1]  # names the text-like column to use
    assert ReferenceData.load(path, column="text").items == ("a cat", "a dog", "a bird")


@pytest.mark.fault
def test_a_small_pool_is_said_once(tmp_path):
    import re

    r = embedselect.select(SAMPLE, TRIO, column="text", cache_dir=tmp_path / "c",
                           metric_options={"sufficiency": FAST_SUFFICIENCY})
    about_the_pool = [w for w in r.warnings if re.search(r"pool|\b3 candidate", w)]
    assert len(about_the_pool) == 1, about_the_pool
    assert "unreliable in pools smaller than 4" in about_the_pool[0]
    assert any("small pool" in w for w in r.details["sufficiency"]["warnings"])  # the metric's own note stays
    assert r.details["task_prior"]["pool_warning"]


@pytest.mark.fault
def test_validate_says_how_many_items_had_no_label(tmp_path):
    import pandas as pd

    from embedselect.cli.format import format_table

    frame = pd.read_csv(SAMPLE)
    labels = [None if i % 6 == 0 else v for i, v in enumerate(frame["label"])]  # 40 of 240 unlabelled
    r = embedselect.select(list(frame["text"]), PAIR, labels=labels, metrics=["task_prior"], cache_dir=tmp_path / "c")
    said = "40 of the 240 items have no label and were left out of the check"
    assert any(said in w for w in r.validation["warnings"])
    assert said in format_table(r)
    assert next(iter(r.validation["table"].values()))["n_labeled"] == 200


@pytest.mark.fault
def test_validate_with_a_class_of_two_labelled_items_checks_the_ranking(tmp_path, capsys):
    """Six labelled items, four of one topic and two of another: `validate --json` checks the ranking (two folds, the
    logistic probe at a fixed C where a training fold holds one item of a class). It was exit 1, "unexpected
    ValueError: This solver needs samples of at least 2 classes", and no JSON."""
    import pandas as pd

    frame = pd.read_csv(SAMPLE)
    labels = frame["label"]
    big, small = labels.unique()[:2]
    keep = set(labels.index[labels == big][:4]) | set(labels.index[labels == small][:2])
    frame["label"] = [v if i in keep else None for i, v in enumerate(labels)]
    data = tmp_path / "few_labels.csv"
    frame.to_csv(data, index=False)
    argv = ["validate", str(data), "-c", "text", "--labels", "label", "-m", ",".join(PAIR), "--metrics",
            "task_prior", "--cache-dir", str(tmp_path / "c"), "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    got = json.loads(capsys.readouterr().out)
    assert got["validation"]["probe_settings"]["n_folds"] == 2
    assert all(row["n_labeled"] == 6 and row["logistic_C"] == 1.0 for row in got["validation"]["table"].values())


@pytest.mark.fault
def test_a_failed_candidate_is_reported_once_in_the_table(tmp_path):
    from embedselect.cli.format import format_table
    from testkit.tinymodels import make_pickle_only_model

    bad = make_pickle_only_model(tmp_path / "bad")  # refused at load: pickle weights
    r = embedselect.select(SAMPLE, [*PAIR, f"nope={bad}"], column="text", metrics=["task_prior"],
                           cache_dir=tmp_path / "c")
    assert r["nope"].failure_note in r.warnings  # the JSON keeps it among the warnings
    text = format_table(r)
    assert sum(r["nope"].error in line for line in text.splitlines()) == 1, text


@pytest.mark.fault
def test_two_runs_needing_the_same_embeddings_compute_them_once(tmp_path, monkeypatch, caplog):
    """Issue 14 ("coordinate per run key"): a second run that needs embeddings another run is computing into the same
    cache waits for it (saying so) and reads the stored result instead of loading the model and embedding again."""
    import threading
    import time

    import embedselect.models.backends.loader as loader
    from embedselect import pipeline as api

    real = loader.load_embedder
    loads: list[str] = []
    first_loading, go = threading.Event(), threading.Event()

    def slow_first_load(rc, **kw):
        loads.append(threading.current_thread().name)
        if len(loads) == 1:
            first_loading.set()
            assert go.wait(60)
        return real(rc, **kw)

    monkeypatch.setattr(loader, "load_embedder", slow_first_load)
    outcomes: dict[str, list] = {}

    def run(name):
        outcomes[name] = api.embed(SAMPLE, ["tfidf-svd"], column="text", cache_dir=tmp_path / "c")

    first = threading.Thread(target=run, args=("first",), name="first")
    first.start()
    assert first_loading.wait(60)
    second = threading.Thread(target=run, args=("second",), name="second")
    with caplog.at_level("WARNING", logger="embedselect.store"):
        second.start()
        deadline = time.monotonic() + 60
        while len(loads) < 2 and "waiting for it" not in caplog.text and second.is_alive():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        go.set()
        first.join(120)
        second.join(120)
    assert loads == ["first"], loads  # the second run loaded no model
    (a,), (b,) = outcomes["first"], outcomes["second"]
    assert a.result.ok and not a.result.cached
    assert b.result.ok and b.result.cached and b.result.run_key == a.result.run_key
    assert "another embedselect process is computing these embeddings" in caplog.text


@pytest.mark.slow
@pytest.mark.fault
def test_bootstrap_replicates_do_not_repeat_the_metric_warnings(tmp_path, caplog):
    """Issue 14: `--bootstrap 200` printed ~400 repeated WARNING lines, two per resample; the point estimate's
    warnings are said once, as the ranking's notes, and the replicates' repeats are not said at all."""
    with caplog.at_level("WARNING", logger="embedselect"):
        r = embedselect.select(SAMPLE, PAIR, column="text", metrics=["sufficiency"], bootstrap=6, cache_dir=tmp_path / "c",
                               metric_options={"sufficiency": {"max_steps": 10, "eval_every": 5, "patience": 1,
                                                               "hidden": 8, "n_components": 2}})
    said = ("small pool", "1000+ items are recommended")  # the metric's two warnings here
    assert not [rec for rec in caplog.records if any(s in rec.getMessage() for s in said)]  # no log line at all
    assert len([w for w in r.warnings if said[1] in w]) == 1  # the note, once (the pool's is the ranking's own)
    assert r.uncertainty and logging.getLogger("embedselect.metrics").level == logging.NOTSET  # the level is restored


@pytest.mark.fault
def test_the_fault_table_names_marked_tests_and_every_fault_test_is_counted():
    """docs/ux.md's fault table and the counted fault suite cannot drift: every test the table names exists and carries
    the `fault` marker, and every module with fault tests (tests/ and benchmarks/tests/, the suite's two test paths) has an
    area in scripts/fault_suite.py's counts."""
    import importlib
    import re
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "ux.md").read_text()
    rows = [ln for ln in doc.split("| Hostile input |", 1)[1].split("\n\n", 1)[0].splitlines()[2:] if ln.startswith("|")]
    assert len(rows) >= 20
    named = 0
    for row in rows:
        module = None
        refs = [r for r in re.findall(r"`([^`]+)`", row.rsplit("|", 2)[1]) if "::" in r]
        assert refs, f"a fault-table row names no test: {row[:80]}"
        for ref in refs:
            file, name = ref.split("::")
            module = file[:-3] if file else module
            mod = importlib.import_module(f"tests.{module}")
            fn = getattr(mod, name, None)
            assert fn is not None, f"docs/ux.md names {module}::{name}, which does not exist"
            assert any(m.name == "fault" for m in getattr(fn, "pytestmark", [])), f"{module}::{name} lacks @pytest.mark.fault"
            named += 1
    areas = runpy.run_path(str(root / "scripts" / "fault_suite.py"))["AREAS"]
    marked = {p.stem for d in ("tests", "benchmarks/tests") for p in (root / d).glob("test_*.py")
              if "@pytest.mark.fault" in p.read_text()}
    assert marked <= set(areas), f"fault tests in modules without an area: {sorted(marked - set(areas))}"
    assert named >= 30
