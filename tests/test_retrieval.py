"""The search check: the queries file and its errors, ``select(queries=)`` and ``embedselect validate --queries``
(issue 43); the retrieval scores themselves are tested in test_retrieval_scores.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from embedselect.data import ReferenceData
from embedselect.data.queries import QueryFileError, load_queries
from embedselect.errors import ColumnNotFoundError, DataError, EmptyDataError

from testkit.tinymodels import make_constant_sentence_transformer, make_tiny_sentence_transformer

WORDS = ("cat dog car bank money river water tree house city food sun moon sky rain snow book music game phone "
         "market stock price computer").split()


def texts(n: int = 40) -> list[str]:
    """``n`` distinct short sentences of the tiny models' vocabulary."""
    out = []
    for i in range(n):
        a, b, c = WORDS[i % len(WORDS)], WORDS[(3 * i + 1) % len(WORDS)], WORDS[(7 * i + 2) % len(WORDS)]
        out.append(f"the {a} and the {b} near a {c} number {i}")
    assert len(set(out)) == n
    return out


# --- the queries file ----------------------------------------------------------------------------------------------
def ref_of(items):
    return ReferenceData.from_texts(items)


def test_relevant_items_by_id_by_ids_and_by_exact_text():
    ref = ref_of(["alpha; beta", "gamma", "delta", "gamma"])  # ids "0".."3" (list positions)
    rows = [{"query": "q1", "relevant": "1"}, {"query": "q2", "relevant": " 0 ; 2 "},
            {"query": "q3", "relevant": "alpha; beta"}, {"query": "q4", "relevant": "gamma"},
            {"query": "q5", "relevant": "delta;0"}, {"query": "q6", "relevant": [2, "3"]}]
    qs = load_queries(rows, ref)
    assert qs.relevant == ((1, 3), (0, 2), (0,), (1, 3), (0, 2), (1, 2, 3))  # "gamma" twice: both, by id too
    assert qs.rows == (1, 2, 3, 4, 5, 6) and qs.queries[0] == "q1"
    assert qs.fingerprint != load_queries(rows[:5], ref).fingerprint


@pytest.mark.fault
@pytest.mark.parametrize("rows, err, match", [
    ([{"query": "a", "relevant": "0"}, {"query": "b", "relevant": "9"}], QueryFileError, r"row 2: '9' is neither an id"),
    ([{"query": "a", "relevant": ""}], QueryFileError, "row 1 .*no relevant item"),
    ([{"query": "a", "relevant": None}], QueryFileError, "row 1 .*no relevant item"),
    ([{"query": "  ", "relevant": "0"}], QueryFileError, "row 1: the query is empty"),
    ([{"question": "a", "relevant": "0"}], ColumnNotFoundError, "no column 'query'"),
    ([], EmptyDataError, "has no rows"),
])
def test_bad_query_rows_name_the_row(rows, err, match):
    with pytest.raises(err, match=match) as info:
        load_queries(rows, ref_of(["x", "y"]))
    assert info.value.exit_code == 3


@pytest.mark.fault
def test_bad_query_files_are_typed_errors(tmp_path):
    ref = ref_of(["x", "y"])
    empty = tmp_path / "q.csv"
    empty.write_text("")
    with pytest.raises(EmptyDataError, match="is empty"):
        load_queries(empty, ref)
    header = tmp_path / "h.csv"
    header.write_text("query,relevant\n")
    with pytest.raises(EmptyDataError, match="no rows"):
        load_queries(header, ref)
    with pytest.raises(DataError, match="does not exist"):
        load_queries(tmp_path / "missing.csv", ref)
    with pytest.raises(QueryFileError, match="not a file"):
        load_queries(tmp_path, ref)
    for bad in (empty, header, tmp_path / "missing.csv", tmp_path):  # select(queries=) as well as validate --queries:
        with pytest.raises(DataError) as info:  # the file is named as such, not by the command line's flag
            load_queries(bad, ref)
        assert str(info.value).startswith("queries file "), info.value
    many = tmp_path / "m.csv"
    many.write_text("query,relevant\n" + "".join(f"q{i},{i + 10}\n" for i in range(8)))
    with pytest.raises(QueryFileError, match=r"row 1: .*row 5: .*\(and 3 more rows\)"):
        load_queries(many, ref)


def test_a_file_matches_the_reference_files_row_ids(tmp_path):
    data = tmp_path / "docs.csv"
    pd.DataFrame({"text": ["red car", "blue sky", "big dog"]}).to_csv(data, index=False)
    ref = ReferenceData.load(data, column="text")
    q = tmp_path / "q.jsonl"
    q.write_text('{"query": "sky", "relevant": 2}\n{"query": "pet", "relevant": "big dog"}\n')
    qs = load_queries(q, ref)
    assert qs.relevant == ((1,), (2,)) and qs.source == str(q)


def test_an_exact_copy_of_a_relevant_item_is_relevant_and_costs_no_candidate_a_place(tmp_path, cache_dir):
    """The data hold one text twice (rows 1 and 40); the query names the second copy by its id. No embedding can tell
    the copies apart and the search puts the first one first: counted irrelevant, it cost every candidate half of
    that query's MRR@10 (validate said 0.750 for all three of a pool on two queries whose right text each found
    first)."""
    from embedselect.pipeline import select

    items = texts()
    items[39] = items[0]
    data = tmp_path / "docs.csv"
    pd.DataFrame({"text": items}).to_csv(data, index=False)
    queries = tmp_path / "q.csv"
    pd.DataFrame([{"query": items[0], "relevant": "40"}, {"query": items[5], "relevant": "6"}]).to_csv(queries,
                                                                                                       index=False)
    ref = ReferenceData.load(data, column="text")
    assert load_queries(queries, ref).relevant == ((0, 39), (5,))
    exact = make_tiny_sentence_transformer(tmp_path / "exact", seed=0)
    ranking = select(data, [f"exact={exact}", "tfidf-svd"], column="text", queries=queries, metrics=["rankme"],
                     cache_dir=cache_dir)
    assert ranking.retrieval["queries"]["relevant_per_query"] == 1.5
    for name in ("exact", "tfidf-svd"):
        assert ranking.retrieval["scores"][name]["mrr@10"] == 1.0


# --- select(queries=) and the CLI ----------------------------------------------------------------------------------
QUERY_ROWS = [0, 3, 5, 9, 11, 20, 33, 39]


def write_case(tmp_path):
    """40 documents; 8 queries, each the exact text of one document (ids are 1-based data rows), and one more whose
    text is row 1's with rows 1 and 2 both relevant."""
    items = texts()
    data = tmp_path / "docs.csv"
    pd.DataFrame({"text": items}).to_csv(data, index=False)
    rows = [{"query": items[r], "relevant": str(r + 1)} for r in QUERY_ROWS]
    rows.append({"query": items[1], "relevant": "2;3"})
    queries = tmp_path / "queries.csv"
    pd.DataFrame(rows).to_csv(queries, index=False)
    return data, queries


def test_select_scores_candidates_whose_search_quality_is_known_by_construction(tmp_path, cache_dir):
    from embedselect.pipeline import select

    data, queries = write_case(tmp_path)
    exact = make_tiny_sentence_transformer(tmp_path / "exact", seed=0)
    constant = make_constant_sentence_transformer(tmp_path / "constant", seed=1)
    prompted = make_tiny_sentence_transformer(tmp_path / "prompted", seed=0, prompts={"query": "sky sky sky "})
    ranking = select(data, [f"exact={exact}", f"constant={constant}", f"prompted={prompted}", "tfidf-svd"],
                     column="text", queries=queries, metrics=["rankme"], cache_dir=cache_dir)
    r = ranking.retrieval
    assert r["queries"]["n_queries"] == 9 and r["score_column"] == "mrr@10"
    scores = r["scores"]
    # a query that is a document's own text, embedded without a prompt, finds that document first
    for name in ("exact", "tfidf-svd"):  # tfidf-svd: fitted on the documents, the queries transformed with that fit
        assert scores[name]["mrr@10"] == 1.0 and scores[name]["recall@1"] == pytest.approx((8 + 0.5) / 9)
    # every text gets the same vector (up to float noise that depends on the length only): no better than chance,
    # where the document's own text finds it first for the other two
    assert scores["constant"]["mrr@10"] < 0.5
    # the model's own query prompt is used for the queries only: they are no longer the documents' own vectors
    assert r["prompts"]["prompted"] == {"query": "query", "document": None}
    assert r["prompts"]["exact"] == {"query": None, "document": None}
    assert scores["prompted"]["mrr@10"] < 1.0
    lo, hi = scores["constant"]["mrr@10_lo"], scores["constant"]["mrr@10_hi"]
    assert lo <= scores["constant"]["mrr@10"] <= hi
    checked = {m["metric"] for m in r["metrics"]}
    assert {"rankme", "combined"} <= checked
    assert ranking["exact"].columns["search.mrr@10"] == 1.0
    assert json.loads(ranking.to_json())["retrieval"]["scores"]["exact"]["mrr@10"] == 1.0


def test_the_document_prompt_is_used_for_the_documents_of_the_search(tmp_path):
    from embedselect.models.backends.sentence_transformers import SentenceTransformerEmbedder

    both = make_tiny_sentence_transformer(tmp_path / "m", prompts={"query": "q: ", "passage": "sky moon "})
    e = SentenceTransformerEmbedder(both, device="cpu")
    assert (e.role_prompt("query"), e.role_prompt("document")) == ("query", "passage")
    items = texts(3)
    plain, doc = e.embed(items), e.embed(items, prompt_name="passage")
    assert not np.allclose(plain, doc)
    own = SentenceTransformerEmbedder(both, device="cpu", options={"prompt": "x "})
    assert own.role_prompt("query") is None  # the candidate's own prompt is used for every text


@pytest.mark.fault
def test_validate_cli_search_check_and_its_errors(tmp_path, cache_dir, capsys):
    from embedselect.cli import main

    data, queries = write_case(tmp_path)
    argv = ["validate", str(data), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
            "--cache-dir", str(cache_dir)]
    assert main([*argv, "--queries", str(queries), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["retrieval"]["scores"]["tfidf-svd"]["mrr@10"] == 1.0
    assert got["validation"] is None
    for m in got["retrieval"]["metrics"]:  # named for what it holds: the top pick's MRR@10 on the queries
        assert m["top_pick_mrr@10"] == got["retrieval"]["scores"][m["top_pick"]]["mrr@10"]
    assert main([*argv, "--queries", str(queries)]) == 0
    text = capsys.readouterr().out
    assert "search check against your queries: 9 queries" in text and "MRR@10" in text
    # a mean, said as one (write_case's nine queries: eight with one relevant item, one with two)
    assert "1.111 relevant items per query on average; exact cosine search" in text
    bad = tmp_path / "bad.csv"
    bad.write_text("query,relevant\nfine,1\nlost,4000\n")
    assert main([*argv, "--queries", str(bad)]) == 3
    assert "row 2: '4000' is neither an id" in capsys.readouterr().err
    assert main(argv) == 2  # neither --labels nor --queries
    assert "--queries FILE" in capsys.readouterr().err
    before = queries.read_bytes()
    assert main([*argv, "--queries", str(queries), "--out", str(queries)]) == 2
    assert "is --queries" in capsys.readouterr().err
    assert queries.read_bytes() == before


def test_queries_order_the_table_and_decide_when_they_separate_the_best(tmp_path, cache_dir):
    """Two model families: label-free alone cannot decide between two (rule 4). Sixteen queries, each a document's own
    text: the model that embeds a query as it embeds the document finds it first every time; the other embeds queries
    with a long query prompt that drowns the text, and finds the document lower on most of them, so the queries put
    it second and rule it out (99.9 % Wilson interval): decided. Five queries order the table the same way but are
    too few to decide, and the ranking says so."""
    from embedselect.pipeline import select

    items = texts()
    data = tmp_path / "docs.csv"
    pd.DataFrame({"text": items}).to_csv(data, index=False)
    exact = make_tiny_sentence_transformer(tmp_path / "exact", seed=0)
    drowned = make_tiny_sentence_transformer(tmp_path / "drowned", seed=1, prompts={"query": "sky " * 30})
    models = [f"drowned={drowned}", f"exact={exact}"]

    def run(n):
        queries = tmp_path / f"q{n}.csv"
        pd.DataFrame([{"query": items[r], "relevant": str(r + 1)} for r in range(0, 2 * n, 2)]).to_csv(queries,
                                                                                                       index=False)
        return select(data, models, column="text", queries=queries, metrics=["rankme"], cache_dir=cache_dir)

    plain = select(data, models, column="text", metrics=["rankme"], cache_dir=cache_dir)
    assert not plain.decided and set(plain.leaders) == {"exact", "drowned"}
    ranking = run(16)
    verdict = ranking.retrieval["decision"]
    assert verdict["order"] == ["exact", "drowned"] and verdict["winner"] == "exact" and verdict["decided"]
    assert list(verdict["ruled_out"]) == ["drowned"] and verdict["ruled_out"]["drowned"]["by"] == "exact"
    assert ranking.decided and ranking.leaders == ["exact"] and [c.name for c in ranking.candidates] == verdict["order"]
    assert [c.rank for c in ranking.candidates] == [1, 2]
    said = [w for w in ranking.warnings if w.code == "queries"]
    assert len(said) == 1 and said[0].startswith("decided by your 16 queries: exact finds the relevant items best")
    assert not [w for w in ranking.warnings if w.code in ("undecided", "small-pool")]  # the label-free notes gave way
    assert json.loads(ranking.to_json())["retrieval"]["decision"]["winner"] == "exact"
    from embedselect.cli.format import format_table
    from embedselect.publish.report import retrieval_sentence

    header, _, first, _second = format_table(ranking).splitlines()[:4]
    assert "MRR@10" in header.split() and first.split()[:4] == ["1", "exact", first.split()[2], "1"]
    assert retrieval_sentence(ranking.retrieval).endswith("they decide: exact beats the best of every other model "
                                                          "family.")
    # the HTML report's table shows the MRR@10 it follows beside the score, as the CLI's does (it showed the score
    # alone: a row above a higher score, with nothing beside it to say why)
    import re

    from embedselect.publish.report import to_html

    page = to_html(ranking, plots=False).replace("\n", "")
    assert '<th>score</th><th>MRR@10</th><th title="score, then the rank by it">rankme <span class="rk">#</span></th>' in page
    rows = re.findall(r'<tr class="(?:lead|ok)">(.*?)</tr>', page)
    mrr = [re.findall(r'<td class="num">([^<]*)</td>', r)[1] for r in rows[:2]]  # rank, MRR@10 (the score has a bar)
    assert mrr == [f"{ranking[n].columns['search.mrr@10']:.4g}" for n in ("exact", "drowned")] and mrr[0] == "1"
    from embedselect.publish.report import to_markdown

    table = to_markdown(ranking).splitlines()
    assert table[0].startswith("| rank | candidate | score | MRR@10 | rankme (rank) |")
    assert table[2].split(" | ")[3] == "1" and table[3].split(" | ")[3] == mrr[1]  # exact, drowned

    few = run(5)
    assert [c.name for c in few.candidates] == ["exact", "drowned"]
    assert not few.decided and few.leaders == ["exact", "drowned"] and not few.retrieval["decision"]["ruled_out"]
    assert any(w.code == "queries" and w.startswith("the table follows your 5 queries") for w in few.warnings)
    assert any(w.code == "undecided" and "(at least 10 queries needed)" in w for w in few.warnings)
    assert "add queries" in few.next_step


def test_with_one_model_family_the_queries_order_its_members_and_decide_nothing(tmp_path, cache_dir):
    """A model and its own variant (a prompt of its own) are one family: the queries put the member that finds the
    documents first at the top, and the ranking stays undecided with a small-pool note, its code matching the
    decision's reason."""
    from embedselect.pipeline import select

    items = texts()
    data = tmp_path / "docs.csv"
    pd.DataFrame({"text": items}).to_csv(data, index=False)
    queries = tmp_path / "q.csv"
    pd.DataFrame([{"query": items[r], "relevant": str(r + 1)} for r in range(0, 32, 2)]).to_csv(queries, index=False)
    model = make_tiny_sentence_transformer(tmp_path / "m", seed=0)
    ranking = select(data, [f"drowned={model}?prompt={'sky ' * 30}", f"plain={model}"], column="text",
                     queries=queries, metrics=["rankme"], cache_dir=cache_dir)
    assert ranking.retrieval["decision"]["contenders"] == ["plain"]
    assert [c.name for c in ranking.candidates][0] == "plain" and not ranking.decided and ranking.leaders == ["plain"]
    (note,) = [w for w in ranking.warnings if "every candidate is of one model family" in w]
    assert note.code == "small-pool"


def test_the_search_checks_notes_name_the_queries_not_labels(tmp_path, cache_dir):
    """A metric that scored too few candidates to be checked against MRR@10 is said to be not checked against your
    queries (the search check said "not checked against the labels: 'rankme' scored 0 of the candidates with an
    accuracy", on a run without labels)."""
    from embedselect.pipeline import select

    data, queries = write_case(tmp_path)  # 40 items: both baselines have at least 39 dimensions, rankme scores neither
    ranking = select(data, ["tfidf-svd", "random-projection"], column="text", queries=queries,
                     metrics=["rankme", "nn_agreement"], weights={"nn_agreement": 1.0}, cache_dir=cache_dir)
    notes = ranking.retrieval["warnings"]
    assert "not checked against your queries: 'rankme' scored 0 of the candidates with an MRR@10 (a ranking needs at " \
           "least 2)" in notes, notes
    assert not any("labels" in n or "accuracy" in n for n in notes), notes


def test_the_search_checks_json_names_its_mrr_for_what_it_holds():
    """The search check compares with MRR@10, not an accuracy: its JSON says so in ``top_pick_mrr@10``,
    ``best_mrr@10`` and each wrong pair's ``mrr@10_diff`` (``"top_pick_" + score_column``...), beside the old names,
    kept with the same values for readers of format-2 files; the label check's JSON keeps its own names only."""
    from embedselect.validation.check import validate_scores

    scores = {"m": {"a": 3.0, "b": 2.0, "c": 1.0}}
    mrr = {"a": 0.2, "b": 0.5, "c": 0.9}
    metric = validate_scores(scores, mrr, truth="mrr@10", n_boot=20).to_dict()["metrics"][0]
    assert (metric["top_pick"], metric["top_pick_mrr@10"], metric["best_mrr@10"]) == ("a", 0.2, 0.9)
    assert metric["top_pick_accuracy"] == 0.2 and metric["best_accuracy"] == 0.9
    pairs = metric["wrong_pairs"]
    assert len(pairs) == 3 and all(p["mrr@10_diff"] == p["accuracy_diff"] > 0 for p in pairs)
    labels = validate_scores(scores, mrr, n_boot=20).to_dict()["metrics"][0]
    assert not [k for k in labels if "mrr" in k] and not [k for p in labels["wrong_pairs"] for k in p if "mrr" in k]


def test_one_query_is_said_in_the_singular(tmp_path, cache_dir, capsys):
    """A queries file of one query read "1 queries from ..." in the table's head and the report, and "your 1 query do
    not separate ..." in the notes."""
    from embedselect.cli import main
    from embedselect.publish.report import retrieval_sentence

    data, _ = write_case(tmp_path)
    one = tmp_path / "one.csv"
    one.write_text("query,relevant\nfine,1\n")
    assert main(["validate", str(data), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics",
                 "task_prior", "--cache-dir", str(cache_dir), "--queries", str(one)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "search check against your queries: 1 query from" in text and "1 queries" not in text
    assert "your 1 query does not separate" in text and "query do not" not in text
    said = retrieval_sentence({"queries": {"n_queries": 1, "source": "one.csv", "relevant_per_query": 1}})
    assert said.startswith("1 query from one.csv (1 relevant item per query)")
