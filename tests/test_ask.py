"""`embedselect ask` (issue 42): triplet questions where the leaders disagree, the CSV a person and a script both fill,
the interactive loop (undo, resume after a kill, under a pty) and the answers folded into `rank` / `select()`."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import ReferenceData, sample_path
from embedselect.errors import AnswersError, ConfigError
from embedselect.pipeline.questions import MAX_USES, choose_triplets
from embedselect.validation.answers import agrees, contenders, verdict, wilson
from testkit.terminal import run_on_pty
from embedselect.validation.questions import COLUMNS, Question, parse_questions, questions_csv, read_questions

SAMPLE = sample_path("texts")
POOL = ["tfidf-svd", "random-projection"]
"""alpha_req puts random-projection first on the sample; the topic labels prefer tfidf-svd's neighbours."""


def label_answers(df, ref: ReferenceData) -> list[str]:
    """The simulated person: the option sharing the anchor's label; skip when both or neither do."""
    lab = dict(zip(ref.ids, (str(x) for x in ref.labels)))
    out = []
    for r in df.itertuples():
        a, b = lab[r.a_id] == lab[r.anchor_id], lab[r.b_id] == lab[r.anchor_id]
        out.append("a" if a and not b else "b" if b and not a else "skip")
    return out


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """A cache holding a cheap stored ranking (alpha_req) of the sample under POOL: ask reads its contenders."""
    cache = tmp_path_factory.mktemp("ask-cache") / "cache"
    r = embedselect.select(SAMPLE, POOL, column="text", metrics=["alpha_req"], cache_dir=cache)
    assert [c.name for c in r.ok][0] == "random-projection"
    return cache


def _store_rows(cache: Path) -> int:
    return len(embedselect.Store.open(cache).query_df("SELECT * FROM rankings"))


# --- the file ---------------------------------------------------------------------------------------------------
def test_csv_round_trip_keeps_texts_with_commas_quotes_and_line_breaks():
    qs = [Question(1, "3", "7", "9", 'a "quoted", comma', "two\nlines", "ünïcode ✓", "a"),
          Question(2, "img/x,1.png", "b.png", "c.png", "/p/a.png", "/p/b.png", "/p/c.png", "")]
    text = questions_csv(qs)
    assert text.splitlines()[0] == ",".join(COLUMNS)
    back = parse_questions(text)
    assert [q.to_row() for q in back] == [q.to_row() for q in qs]
    assert [q.row for q in back] == [1, 2]


def test_wilson_interval():
    lo, hi = wilson(8, 10)
    assert 0.49 < lo < 0.50 and 0.94 < hi < 0.95  # the textbook values 0.490, 0.943
    assert all(math.isnan(v) for v in wilson(0, 0))
    assert wilson(5, 5)[1] == 1.0


def test_verdict_needs_enough_answers_and_a_paired_lead():
    m = 12
    good = np.ones(m, dtype=bool)
    bad = np.zeros(m, dtype=bool)
    v = verdict({"x": bad, "y": good}, ["x", "y"])
    assert v.winner == "y" and v.decided and v.pairs[0]["wins"] == m
    few = verdict({"x": bad[:5], "y": good[:5]}, ["x", "y"])
    assert not few.decided  # fewer than MIN_ANSWERED
    assert few.winner == "x" and few.need() == " (at least 10 answers needed)"
    # the counts say what they count ("x against the others: y 0:5" did not), short enough for 60 columns
    assert few.pair_counts() == "x vs y 0:5 (answers only one of them orders your way)"
    assert few.summary() == ("x, y not separated yet (at least 10 answers needed); x vs y 0:5 (answers only one of "
                             "them orders your way)")
    st = verdict({"st0": good, "st2": bad, "st1": good}, ["st0", "st2", "st1"], min_answered=20)
    assert st.pair_counts() == "st0 vs st2 12:0, vs st1 0:0 (answers only one of them orders your way)"
    assert len(verdict({"st0": good, "st2": bad}, ["st0", "st2"], min_answered=20).pair_counts()) <= 60
    queries = verdict({"x": bad[:5] * 1.0, "y": good[:5] * 0.5}, ["x", "y"], unit="queries")
    assert queries.pair_counts() == "x vs y 0:5 (queries where one of them ranks the first relevant item higher)"
    same = verdict({"x": good, "y": good}, ["x", "y"])
    assert same.winner == "x" and not same.decided  # no question separates them


def test_contenders_are_one_per_model_family():
    fam = {"m": "m", "m-int8": "m", "m-128": "m", "n": "n", "n-cls": "n", "tfidf": "tfidf"}
    order = ["m", "m-int8", "m-128", "n-cls", "n", "tfidf"]
    # undecided, leaders of two families (the first one's copies among them): the best leader of each family
    assert contenders(["m", "m-int8", "n", "n-cls"], order, fam) == ["m", "n-cls"]
    assert contenders(["m-int8", "n"], order, fam) == ["m-int8", "n"]  # the best *leader* of each family
    # one leader, or leaders of one family: the best members of the first families, never a copy beside its model
    assert contenders(["m"], order, fam) == ["m", "n-cls", "tfidf"]
    assert contenders(["m", "m-int8"], order, fam, top=2) == ["m", "n-cls"]
    # without families each candidate is its own (the rule the copies would otherwise break)
    assert contenders(["m"], order) == ["m", "m-int8", "m-128"]
    assert contenders(["x"], ["x", "y"], top=1) == ["x", "y"]  # always two when two exist


def test_verdict_keeps_the_label_free_pick_unless_an_interval_rules_it_out():
    m = 40
    rng = np.random.default_rng(0)
    x = rng.random(m) < 0.5
    near = x.copy()
    near[:3] = ~near[:3]  # differs from x on 3 questions only: no interval separates them
    v = verdict({"x": x, "near": near}, ["x", "near"])
    assert v.winner == "x" and not v.decided and not v.ruled_out
    # three contenders: the label-free first ruled out, the other two not separated: the next in label-free order
    good = np.ones(m, dtype=bool)
    v3 = verdict({"x": np.zeros(m, dtype=bool), "y": near | good, "z": good}, ["x", "y", "z"])
    assert v3.ruled_out.keys() == {"x"} and v3.winner == "y" and v3.remaining == ["y", "z"] and not v3.decided


def test_ask_reads_the_families_of_the_stored_ranking(tmp_path):
    from embedselect.pipeline.asking import stored_families

    pool = ["random-projection", "rp64=random-projection?dim=64", "tfidf-svd"]
    r = embedselect.select(SAMPLE, pool, column="text", metrics=["alpha_req"], cache_dir=tmp_path / "cache")
    d = json.loads(r.to_json())
    fam = stored_families(d)
    assert fam == {"random-projection": "random-projection", "rp64": "random-projection"}
    order = [c["name"] for c in d["candidates"] if c.get("status") == "ok"]
    names = contenders(order[:1], order, fam)
    assert sorted(names) == sorted({fam.get(n, n): n for n in names}.values())
    assert {fam.get(n, n) for n in names} == {"random-projection", "tfidf-svd"}
    session_names = embedselect.pipeline.asking.prepare_ask(SAMPLE, pool, column="text", n=5,
                                                            cache_dir=tmp_path / "cache").contenders
    assert {fam.get(n, n) for n in session_names} == {"random-projection", "tfidf-svd"}
    assert len(session_names) == 2


# --- bad files: a typed error naming the row, nothing stored touched ---------------------------------------------
def _good_rows(ref: ReferenceData) -> list[list[str]]:
    ids, items = ref.ids, ref.items
    return [[str(q), ids[i], ids[i + 1], ids[i + 2], items[i], items[i + 1], items[i + 2], "a"] for q, i in
            ((1, 0), (2, 3), (3, 6))]


def _write(path: Path, rows, header=COLUMNS) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        if header is not None:
            w.writerow(header)
        w.writerows(rows)
    return path


BAD = {
    "answer other than a/b/skip": (lambda r: r[1].__setitem__(7, "maybe"), "row 2", "maybe"),
    "unknown id": (lambda r: r[2].__setitem__(2, "99999"), "row 3", "99999"),
    "another data set": (lambda r: r[0].__setitem__(4, "a text of some other data"), "row 1", "another data set"),
    "question id not a number": (lambda r: r[1].__setitem__(0, "two"), "row 2", "whole number"),
    "question id twice": (lambda r: r[2].__setitem__(0, "1"), "row 3", "also on row 1"),
    "too few fields": (lambda r: r[1].pop(), "row 2", "fields"),
    "same item twice": (lambda r: r[0].__setitem__(2, r[0][1]), "row 1", "three different items"),
}


@pytest.mark.fault
@pytest.mark.parametrize("case", sorted(BAD))
def test_every_bad_file_is_a_typed_error_naming_the_row(tmp_path, case):
    ref = ReferenceData.load(SAMPLE, column="text")
    rows = _good_rows(ref)
    spoil, where, what = BAD[case]
    spoil(rows)
    path = _write(tmp_path / "q.csv", rows)
    with pytest.raises(AnswersError) as e:
        from embedselect.pipeline.answers import load_answers

        load_answers(path, ref)
    assert where in str(e.value) and what in str(e.value)


@pytest.mark.fault
@pytest.mark.parametrize("content, what", [
    (b"", "empty"),
    (b"id,text,label\n1,x,a\n", "lacks"),
    ("question_id,anchor_id,a_id,b_id,anchor,a,b,answer\n1,1,2,3,\"unclosed".encode(), "not valid CSV"),
    (b"question_id,anchor_id,a_id,b_id,anchor,a,b,answer\n1,1,2,3,\xff\xfe,b,c,a\n", "UTF-8"),
])
def test_malformed_files_are_refused(tmp_path, content, what):
    p = tmp_path / "q.csv"
    p.write_bytes(content)
    with pytest.raises(AnswersError, match=what):
        read_questions(p)


@pytest.mark.fault
def test_rank_with_a_bad_answers_file_exits_3_before_touching_the_cache(tmp_path, capsys):
    ref = ReferenceData.load(SAMPLE, column="text")
    rows = _good_rows(ref)
    rows[1][7] = "c"
    path = _write(tmp_path / "q.csv", rows)
    before = path.read_bytes()
    cache = tmp_path / "cache"
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", ",".join(POOL), "--metrics", "alpha_req", "--answers",
                 str(path), "--cache-dir", str(cache), "-q"])
    assert code == 3
    err = capsys.readouterr().err
    assert "row 2" in err and "'c'" in err
    assert not cache.exists()  # the store was never opened
    assert path.read_bytes() == before


# --- question choice --------------------------------------------------------------------------------------------
def test_questions_are_disputed_spread_capped_and_never_use_duplicates():
    rng = np.random.default_rng(0)
    n = 300
    x = rng.normal(size=(n, 8)).astype(np.float32)
    y = x.copy()
    y[:, :4] = rng.normal(size=(n, 4))  # half the dimensions differ: the two orders disagree often
    usable = np.ones(n, dtype=bool)
    usable[::7] = False
    t = choose_triplets({"x": x, "y": y}, 40, usable=usable, seed=3)
    assert len(t) == 40
    assert t == choose_triplets({"x": x, "y": y}, 40, usable=usable, seed=3)  # seeded
    flat = np.array(t).ravel()
    assert usable[flat].all()
    assert np.bincount(flat).max() <= MAX_USES
    assert len({(i, frozenset((a, b))) for i, a, b in t}) == 40
    tt = np.array(t)
    dx = np.einsum("ij,ij->i", _u(x)[tt[:, 0]], _u(x)[tt[:, 1]]) - np.einsum("ij,ij->i", _u(x)[tt[:, 0]], _u(x)[tt[:, 2]])
    dy = np.einsum("ij,ij->i", _u(y)[tt[:, 0]], _u(y)[tt[:, 1]]) - np.einsum("ij,ij->i", _u(y)[tt[:, 0]], _u(y)[tt[:, 2]])
    assert (np.sign(dx) != np.sign(dy)).all()  # every question is one the two order differently
    # a/b is a coin flip: neither side is always x's choice
    assert 0 < (dx > 0).sum() < 40
    more = choose_triplets({"x": x, "y": y}, 10, usable=usable, seed=3, taken=t)
    assert not {(i, frozenset((a, b))) for i, a, b in more} & {(i, frozenset((a, b))) for i, a, b in t}
    assert np.bincount(np.concatenate([flat, np.array(more).ravel()])).max() <= MAX_USES


def _u(x):
    """Rows about their mean, scaled to unit length: the cosines the questions and the answers use."""
    x = x - x.mean(0)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_common_offset_changes_neither_the_answers_agreement_nor_the_questions():
    """The cosines are taken about each candidate's mean over the data: adding one vector to all of a candidate's
    vectors (the common part of mean-pooled early layers) changes neither which answers it agrees with nor which
    questions are chosen. About the origin, the offset decided most orders."""
    from embedselect.validation.answers import Answered, orders

    rng = np.random.default_rng(1)
    n = 200
    x = rng.normal(size=(n, 8))
    x -= x.mean(0)
    y = x.copy()
    y[:, :4] = rng.normal(size=(n, 4))
    shifted = x + 6.0 * rng.normal(size=8)  # a large common part
    t = np.array([rng.choice(n, 3, replace=False) for _ in range(300)])
    assert np.allclose(orders(shifted, t), orders(x, t))
    signs = np.sign(orders(x, t)).astype(np.int8)
    ans = Answered(t, signs, np.arange(len(t)), len(t), 0)
    assert agrees(shifted, ans).all()  # the person answered as x orders: the shifted copy agrees with every answer
    usable = np.ones(n, dtype=bool)
    assert choose_triplets({"x": shifted, "y": y}, 20, usable=usable, seed=0) == \
        choose_triplets({"x": x, "y": y}, 20, usable=usable, seed=0)


# --- the API end to end -----------------------------------------------------------------------------------------
def test_ask_writes_questions_keeps_answers_and_grows_only_with_n(ranked, tmp_path):
    out = tmp_path / "questions.csv"
    df = embedselect.ask(SAMPLE, POOL, column="text", n=12, out=out, cache_dir=ranked)
    assert list(df.columns) == list(COLUMNS) and len(df) == 12
    ref = ReferenceData.load(SAMPLE, column="text", label_column="label")
    text = dict(zip(ref.ids, ref.items))
    for r in df.itertuples():
        assert (text[r.anchor_id], text[r.a_id], text[r.b_id]) == (r.anchor, r.a, r.b)
    assert (df["answer"] == "").all()
    assert df.equals(embedselect.ask(SAMPLE, POOL, column="text", n=12, cache_dir=ranked))  # seeded, no file
    # a person answers some; the same n keeps the file as it is, a larger n adds questions only
    df["answer"] = label_answers(df, ref)
    out.write_text(df.to_csv(index=False), encoding="utf-8")
    again = embedselect.ask(SAMPLE, POOL, column="text", n=12, out=out, cache_dir=ranked)
    assert again.equals(df.astype({"question_id": "int64"}))
    grown = embedselect.ask(SAMPLE, POOL, column="text", n=20, out=out, cache_dir=ranked)
    assert len(grown) == 20 and grown.head(12).equals(again)
    assert (grown["answer"].iloc[12:] == "").all()
    assert read_questions(out)[0].answer == df["answer"].iloc[0]


@pytest.mark.fault
def test_ask_never_replaces_a_file_it_did_not_write(ranked, tmp_path):
    mine = tmp_path / "questions.csv"
    mine.write_text("name,score\nx,1\n")
    with pytest.raises(ConfigError, match="not written by embedselect"):
        embedselect.ask(SAMPLE, POOL, column="text", n=5, out=mine, cache_dir=ranked)
    assert mine.read_text() == "name,score\nx,1\n"


@pytest.mark.fault
def test_ask_updates_its_file_after_a_spreadsheet_moved_its_columns(ranked, tmp_path, capsys):
    """A questions file a spreadsheet saved with its columns moved (and a byte-order mark, CRLF, " A "): `rank
    --answers` read it, but `ask --out` refused it as "not written by embedselect ... give --overwrite", an option ask
    does not have. Now ask updates it (answers kept, ask's column order); a file of the user's own is refused without
    offering --overwrite."""
    import pandas as pd

    path = tmp_path / "q.csv"
    argv = ["ask", str(SAMPLE), "-c", "text", "-m", ",".join(POOL), "-n", "5", "--cache-dir", str(ranked), "--out"]
    assert main([*argv, str(path)]) == 0
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df["answer"] = [" A ", "b", "skip", "", ""]
    moved = df[["answer", *[c for c in COLUMNS if c != "answer"]]]
    path.write_bytes(moved.to_csv(index=False, lineterminator="\r\n").encode("utf-8-sig"))
    capsys.readouterr()
    assert main([*argv, str(path), "-n", "6"]) == 0, capsys.readouterr().err
    assert path.read_text(encoding="utf-8").splitlines()[0] == ",".join(COLUMNS)
    assert [q.answer for q in read_questions(path)] == ["a", "b", "skip", "", "", ""]
    mine = tmp_path / "mine.csv"
    mine.write_text("name,score\nx,1\n")
    assert main([*argv, str(mine)]) == 2
    err = capsys.readouterr().err
    assert "not written by embedselect" in err and "--overwrite" not in err
    assert mine.read_text() == "name,score\nx,1\n"


def test_duplicates_are_never_asked_about(ranked, tmp_path):
    import pandas as pd

    df = pd.read_csv(SAMPLE)
    dup = pd.concat([df, df.iloc[:60]], ignore_index=True)  # the first 60 texts twice
    data = tmp_path / "dup.csv"
    dup.to_csv(data, index=False)
    embedselect.select(data, POOL, column="text", metrics=["alpha_req"], cache_dir=ranked)
    q = embedselect.ask(data, POOL, column="text", n=30, cache_dir=ranked)
    used = set(q["anchor"]) | set(q["a"]) | set(q["b"])
    assert not used & set(df["text"].iloc[:60])


def test_answers_decide_between_the_leaders(ranked, tmp_path):
    ref = ReferenceData.load(SAMPLE, column="text", label_column="label")
    # 160 questions: about 67 answered on this sample, enough for the 99.9 % interval (80 give 33, not enough)
    df = embedselect.ask(SAMPLE, POOL, column="text", n=160, cache_dir=ranked)
    df["answer"] = label_answers(df, ref)
    path = tmp_path / "answers.csv"
    path.write_text(df.to_csv(index=False), encoding="utf-8")
    plain = embedselect.select(SAMPLE, POOL, column="text", metrics=["alpha_req"], cache_dir=ranked, save=False)
    assert plain.best.name == "random-projection" and not plain.decided  # a pool of two: undecided
    r = embedselect.select(SAMPLE, POOL, column="text", metrics=["alpha_req"], cache_dir=ranked, answers=path,
                           save=False)
    assert r.answers["decided"] and r.answers["winner"] == "tfidf-svd", r.answers
    assert r.decided and r.leaders == ["tfidf-svd"] and r.best.name == "tfidf-svd"
    assert [c.rank for c in r.ok] == [1, 2]
    t = r.to_pandas()
    assert t.loc["tfidf-svd", "answers.agreement"] > t.loc["random-projection", "answers.agreement"]
    assert t.loc["tfidf-svd", "answers.agreement_low"] < t.loc["tfidf-svd", "answers.agreement"]
    n = int(t.loc["tfidf-svd", "answers.n"])
    assert n == (df["answer"].isin(["a", "b"])).sum() == r.answers["n_answered"]
    d = json.loads(r.to_json())
    assert d["answers"]["winner"] == "tfidf-svd"
    assert not any(w.startswith("no clear winner") for w in r.warnings)
    from embedselect.cli.format import format_table
    from embedselect.publish import report

    table = format_table(r)
    assert "answers" in table.splitlines()[0] and "decided by your" in table
    assert "Your answers" in report.to_html(r) and "Agreement with your answers" in report.to_markdown(r)
    # too few answers: the label-free pick stands, and the note names the contenders once, with the counts
    few = df.copy()
    answered = few.index[few["answer"].isin(["a", "b"])]
    few.loc[answered[5:], "answer"] = ""
    r5 = embedselect.select(SAMPLE, POOL, column="text", metrics=["alpha_req"], cache_dir=ranked, answers=few,
                            save=False)
    assert not r5.decided and r5.best.name == "random-projection"
    (note,) = [w for w in r5.warnings if w.code == "answers"]
    skipped = int((few["answer"] == "skip").sum())
    assert note.startswith(f"your 5 answers ({skipped} skipped) do not separate random-projection, tfidf-svd yet (at "
                           "least 10 answers needed); random-projection vs tfidf-svd "), note
    assert "(answers only one of them orders your way)" in note
    assert "not separated yet" not in note
    # the DataFrame ask() returned is accepted as it is
    assert embedselect.select(SAMPLE, POOL, column="text", metrics=["alpha_req"], cache_dir=ranked, answers=df,
                              save=False).leaders == ["tfidf-svd"]


def test_answers_that_do_not_decide_say_to_answer_more_not_to_start_asking(ranked, tmp_path):
    """``rank --answers`` whose answers separate nothing yet: ``next_step`` (the table's "no clear winner" line, the
    JSON, the report) said to start asking ("answer a few questions ... embedselect ask, then embedselect rank
    --answers"), what the person had just done; it says to answer more questions in that file now. An answer that
    rules out the label-free first but leaves several contenders had an empty ``next_step``."""
    from types import SimpleNamespace

    from embedselect.pipeline.evidence import fold_verdict
    from embedselect.ranking.combine import SETTLE, Decision

    ref = ReferenceData.load(SAMPLE, column="text", label_column="label")
    df = embedselect.ask(SAMPLE, POOL, column="text", n=40, cache_dir=ranked)
    df["answer"] = label_answers(df, ref)
    answered = df.index[df["answer"].isin(["a", "b"])]
    df.loc[answered[5:], "answer"] = ""
    path = tmp_path / "q.csv"
    path.write_text(df.to_csv(index=False), encoding="utf-8")
    r = embedselect.select(SAMPLE, POOL, column="text", metrics=["alpha_req"], cache_dir=ranked, answers=path,
                           save=False)
    assert not r.decided and r.next_step != SETTLE
    assert r.next_step.startswith("to settle it, answer more questions"), r.next_step
    assert f"--answers {path}" in r.next_step and f"--out {path}" in r.next_step, r.next_step
    # three contenders, the label-free first ruled out, two left: undecided, and it says how to go on
    ctx = SimpleNamespace(warnings=[], outcomes=[SimpleNamespace(result=SimpleNamespace(name=n, rank=i + 1))
                                                 for i, n in enumerate("abc")])
    scores = {"a": np.zeros(30, bool), "b": np.ones(30, bool), "c": np.ones(30, bool)}
    d = fold_verdict(ctx, Decision(False, ["a", "b", "c"], ["tie"], ["undecided"], settle=SETTLE), ["a", "b", "c"],
                     verdict(scores, ["a", "b", "c"]), code="answers", said="your 30 answers", by="your answers",
                     on_what="the questions", more="answer more questions (here)")
    assert not d.decided and d.leaders == ["b", "c"] and d.settle == "to settle it, answer more questions (here)"


def test_images_ids_are_relative_paths(tmp_path):
    from testkit.tinymodels import make_dark_light_photos

    folder = make_dark_light_photos(tmp_path / "photos")
    cache = tmp_path / "cache"
    pool = ["pixel-pca", "random-projection"]
    embedselect.select(folder, pool, metrics=["alpha_req"], cache_dir=cache)
    out = tmp_path / "q.csv"
    df = embedselect.ask(folder, pool, n=8, out=out, cache_dir=cache)
    assert len(df) > 0
    for r in df.itertuples():
        assert r.anchor_id.endswith(".png") and not Path(r.anchor_id).is_absolute()
        assert Path(r.anchor) == folder / r.anchor_id and Path(r.anchor).is_file()
    df["answer"] = ["a"] * len(df)
    out.write_text(df.to_csv(index=False))
    r = embedselect.select(folder, pool, metrics=["alpha_req"], cache_dir=cache, answers=out, save=False)
    assert r.answers["n_answered"] == len(df)
    bad = df.copy()
    bad.loc[0, "a_id"] = "nope/missing.png"
    with pytest.raises(AnswersError, match="row 1"):
        embedselect.select(folder, pool, metrics=["alpha_req"], cache_dir=cache, answers=bad, save=False)


# --- the interactive loop ---------------------------------------------------------------------------------------
def test_interactive_saves_each_answer_undoes_and_resumes(ranked, tmp_path):
    from embedselect.cli.ask import interactive
    from embedselect.pipeline.asking import prepare_ask

    out = tmp_path / "q.csv"
    session = prepare_ask(SAMPLE, POOL, column="text", n=6, out=out, cache_dir=ranked)
    screen = io.StringIO()
    assert interactive(session, io.StringIO("a\nx b\nu\ns\nq\n"), screen) == 0
    answers = [q.answer for q in read_questions(out)]
    assert answers == ["a", "skip", "", "", "", ""]  # b undone, then skipped
    text = screen.getvalue()
    assert "undone: question 2" in text and "press one of" in text
    # a skip is no answer: the line says what the tally says (it read "stopped: 2 of 6 answered")
    assert "stopped: 1 answered, 1 skipped, 4 to go of 6; saved in" in text
    session = prepare_ask(SAMPLE, POOL, column="text", n=6, out=out, cache_dir=ranked)
    screen = io.StringIO()
    assert interactive(session, io.StringIO("u\nb"), screen) == 0  # end of input: saved, like q
    assert [q.answer for q in read_questions(out)] == ["a", "b", "", "", "", ""]  # undo of the last answer in the file
    assert "question 2 of 6" in screen.getvalue()
    screen = io.StringIO()
    assert interactive(session, _CtrlCAfter("s\n"), screen) == 130  # Ctrl-C: the same count, exit 130
    assert "interrupted: 2 answered, 1 skipped, 3 to go of 6; saved in" in screen.getvalue()


class _CtrlCAfter(io.StringIO):
    """Key presses, then Ctrl-C (KeyboardInterrupt) once they are read."""

    def readline(self, *args: object) -> str:  # type: ignore[override]
        line = super().readline()
        if not line:
            raise KeyboardInterrupt
        return line


def test_interactive_stops_once_the_answers_separate_the_leaders(ranked, tmp_path):
    from embedselect.cli.ask import interactive
    from embedselect.pipeline.asking import prepare_ask

    out = tmp_path / "q.csv"
    session = prepare_ask(SAMPLE, POOL, column="text", n=160, out=out, cache_dir=ranked)
    ref = ReferenceData.load(SAMPLE, column="text", label_column="label")
    from embedselect.validation.questions import questions_frame

    keys = "".join({"a": "a", "b": "b", "skip": "s"}[x] for x in label_answers(questions_frame(session.questions), ref))
    screen = io.StringIO()
    assert interactive(session, io.StringIO(keys), screen) == 0
    assert "the answers separate the contenders" in screen.getvalue()
    answered = [q.answer for q in read_questions(out)]
    assert "" in answered  # it stopped before the last question
    v = verdict({m: agrees(vec, session.answered()) for m, vec in session.vectors.items()}, session.contenders)
    assert v.decided and v.winner == "tfidf-svd"


class _SlowKeys(io.StringIO):
    """Key presses that come a moment apart, as a person's do (the viewer started for a question has exited)."""

    def readline(self, *args: object) -> str:  # type: ignore[override]
        import time

        time.sleep(0.5)
        return super().readline()


@pytest.mark.fault
def test_open_says_when_no_viewer_can_show_the_images(tmp_path, monkeypatch):
    """ask --interactive --open on a machine without a desktop: xdg-open (installed on many servers) finds no method,
    exits 3 and shows nothing, and ask said nothing either. Now it says there is no desktop (DISPLAY and
    WAYLAND_DISPLAY unset) and starts no viewer; with a desktop whose viewer fails, it says so once, after the first
    question, and sends it no more."""
    from PIL import Image

    from embedselect.cli.ask import interactive
    from embedselect.pipeline.asking import prepare_ask

    photos = tmp_path / "photos"
    photos.mkdir()
    rng = np.random.default_rng(0)
    for i in range(60):
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(photos / f"p{i}.png")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name in ("xdg-open", "open", "gio"):
        (bin_dir / name).write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\nexit 3\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(sys, "platform", "linux")
    session = prepare_ask(photos, ["pixel-pca", "random-projection"], n=4, out=tmp_path / "q.csv",
                          cache_dir=tmp_path / "c", metrics=["task_prior"])
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    screen = io.StringIO()
    assert interactive(session, io.StringIO("a\nq\n"), screen, viewer=True) == 0
    assert ("note: no desktop to show images on (DISPLAY and WAYLAND_DISPLAY are not set): --open shows nothing; "
            "open the paths shown yourself") in screen.getvalue()
    assert not calls.exists()
    monkeypatch.setenv("DISPLAY", ":0")
    screen = io.StringIO()
    assert interactive(session, _SlowKeys("b\ns\nq\n"), screen, viewer=True) == 0
    said = "note: xdg-open could not open the images (exit 3): open the paths shown yourself"
    assert screen.getvalue().count(said) == 1, screen.getvalue()
    assert len(calls.read_text().splitlines()) == 3  # the first question's three images, then no more


@pytest.mark.slow
@pytest.mark.fault
def test_a_kill_in_the_middle_of_an_interactive_session_loses_no_answer(ranked, tmp_path):
    out = tmp_path / "q.csv"
    argv = [sys.executable, "-m", "embedselect", "ask", str(SAMPLE), "-c", "text", "-m", ",".join(POOL), "-n", "8",
            "--out", str(out), "--interactive", "--cache-dir", str(ranked)]
    screen, code = run_on_pty(argv, [("question 1 of 8", "a"), ("question 2 of 8", "b")], kill_after=2,
                              kill_once="tally: 2 answered")  # the tally is printed after the answer was saved
    assert code is None, screen
    assert [q.answer for q in read_questions(out)] == ["a", "b"] + [""] * 6
    screen, code = run_on_pty(argv, [("question 3 of 8", "s"), ("question 4 of 8", "u"), ("undone", "q")])
    assert code == 0, screen
    assert "question 3 of 8" in screen and "question 1 of 8" not in screen  # resumed where it stopped
    assert [q.answer for q in read_questions(out)] == ["a", "b"] + [""] * 6  # the skip undone


@pytest.mark.fault
def test_interactive_lines_fit_a_60_column_terminal(ranked, tmp_path):
    """At 60 columns the terminal broke ask's lines mid-word: the question with its keys (74 characters), the
    opening line, the tallies and the "stopped:" line ran past the width, and the rule over a question grew with its
    ids. Each line now fits the terminal's width (wrapped at words, as under rank's table), saying the same."""
    import re

    out = tmp_path / "q.csv"
    argv = [sys.executable, "-m", "embedselect", "ask", str(SAMPLE), "-c", "text", "-m", ",".join(POOL), "-n", "12",
            "--out", str(out), "--interactive", "--cache-dir", str(ranked)]
    screen, code = run_on_pty(argv, [("q quit", "a")] + [("q quit", "s")] * 9 + [("question 11 of 12", "q")],
                              size=(40, 60))
    assert code == 0, screen
    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", ln).split("\r")[-1] for ln in screen.split("\r\n")]
    assert max(len(ln) for ln in lines) <= 60, "\n".join(ln for ln in lines if len(ln) > 60)
    rules = [ln for ln in lines if ln.startswith("── question")]
    assert len(rules) == 11 and {len(ln) for ln in rules} == {59}, rules  # "(id 10)" too
    said = " ".join(" ".join(lines).split())
    assert "which of a and b is closer to the anchor? a / b s skip u undo q quit" in said
    assert "tally: 1 answered, 9 skipped;" in said
    glued = said.replace(" ", "")  # a path longer than the width is cut across lines
    assert f"answersaresavedin{out}asyougo".replace(" ", "") in glued
    assert f"stopped:1answered,9skipped,2togoof12;savedin{out};runthesamecommandtogoon".replace(" ", "") in glued
