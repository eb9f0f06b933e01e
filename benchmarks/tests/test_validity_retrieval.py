"""The retrieval views' harness (benchmarks/validity_retrieval.py) on synthetic data: the protocol's halves, the
documents-only int8 calibration, the pairs-to-set rule, and the protocol's reading of views and of a proposed search
default."""

import numpy as np
import pytest

from benchmarks import protocol
from benchmarks.retrieval_default import SEARCH_CANDIDATES, choose_search_default, choose_witnesses, confirm_search_default, propose_search_default
from benchmarks.retrieval_pools import int8_on_docs
from benchmarks.sets.reading import fresh_python, module_docstrings
from benchmarks.sets.retrieval_corpora import _newsgroup_posts, load_alice_qa, load_chatterbot_world_qa, load_film_reviews, load_newsgroup_subjects, load_wikipedia_titles, load_wordnet_definitions, load_wordnet_examples
from benchmarks.sets.retrieval_docs import load_duckdb_functions, load_library_docstrings, load_matplotlib_rcparams, load_mypy_error_codes, load_pandas_options, load_pytest_options, load_python_docstrings, load_ruff_rules
from benchmarks.sets.retrieval_pairs import from_pairs
from benchmarks.sets.retrieval_registry import SETS
from benchmarks.validity_retrieval import SIGNALS, VIEWS, half, summary, to_markdown
from embedselect.errors import DataError


def test_sets_are_split_by_the_protocols_rule_and_every_view_is_a_known_pool():
    for name in SETS:
        assert half(name) == protocol.half(name)
    # the split of the five sets (fixed by their names)
    assert {n: half(n) for n in SETS} == {
        "chatterbot-qa": "selection", "movie-dialog": "confirmation", "python-topics": "confirmation",
        "emoji-names": "confirmation", "word-norm": "confirmation", "wordnet-definitions": "selection",
        "alice-qa": "selection", "newsgroup-subjects": "confirmation", "wikipedia-titles": "confirmation",
        "ruff-rules": "confirmation", "film-reviews": "confirmation", "python-docstrings": "confirmation",
        "chatterbot-world-qa": "selection", "sympy-docstrings": "confirmation",
        "networkx-docstrings": "confirmation", "scipy-docstrings": "confirmation",
        "matplotlib-rcparams": "confirmation", "wordnet-examples": "confirmation", "pandas-options": "selection",
        "mypy-error-codes": "selection", "pytest-options": "selection", "duckdb-functions": "selection",
        "sklearn-docstrings": "confirmation"}
    assert VIEWS["issue"] == tuple(protocol.POOLS["issue8"])
    for view in ("minilm-heavy", "three-families", "families-unbalanced"):
        assert VIEWS[view] == tuple(protocol.POOLS[view])


def test_int8_is_calibrated_on_the_documents_only():
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(50, 4)).astype(np.float32)
    queries = np.vstack([docs.max(axis=0) + 5, docs.min(axis=0) - 5])  # outside the documents' range
    out = int8_on_docs(np.vstack([docs, queries]), 50)
    assert out.dtype == np.float32 and out.min() >= -128 and out.max() <= 127
    assert np.array_equal(out[:50], int8_on_docs(docs, 50))  # the queries change nothing of the documents
    assert (out[50] == 127).all() and (out[51] == -128).all()  # clipped to the documents' range


def test_pairs_become_documents_queries_and_relevant_rows():
    pairs = [("hi", "hello there"), ("hi", "good day"), ("bye", "see you"), ("see you", "see you")]
    docs, queries, rel = from_pairs(pairs)
    assert docs == ["hello there", "good day", "see you"]
    assert queries == ["hi", "bye"]  # a query equal to its own document is dropped
    assert rel == [[0, 1], [2]]


ENTRIES = [
    {"name": "a", "parent": None, "kind": "transformer", "dims": 384},
    {"name": "a-copy", "parent": "a", "relation": "truncated", "kind": "transformer", "dims": 64},
    {"name": "b", "parent": None, "kind": "transformer", "dims": 768},
    {"name": "c", "parent": None, "kind": "transformer", "dims": 256},
    {"name": "tfidf-svd", "parent": None, "kind": "baseline", "dims": 256},
]


def _row(name, truth, signals):
    view = {"truth": truth, "signals": signals, "pairs": [("a-copy", "a")], "entries": ENTRIES}
    read = protocol.read_view(view, {"task_prior": 1.0}, "mean-rank")
    read.pop("combined")
    sig = {m: {"rho": protocol.correlations(s, truth)[0]} for m, s in signals.items()}
    best = max(truth, key=truth.get)
    return {"set": name, "view": "v", "half": half(name), "truth": truth, **read, "kind": "q → a",
            "n_candidates": len(truth), "n_docs": 10, "n_queries": 10, "best": best, "best_mrr": truth[best],
            "raw": {"signals": signals, "pairs": [["a-copy", "a"]], "entries": ENTRIES},
            "signals": {m: sig.get(m, {"rho": float("nan")}) for m in SIGNALS}}


@pytest.fixture
def rows(monkeypatch):
    """One selection view and two confirmation views where nn_agreement orders the candidates as the truth does and
    task_prior backwards; the text default is task_prior alone here."""
    monkeypatch.setitem(protocol.PARAMS, "a", 1.0)
    monkeypatch.setitem(protocol.PARAMS, "b", 3.0)
    monkeypatch.setitem(protocol.PARAMS, "c", 2.0)
    import benchmarks.default_grid as dg

    monkeypatch.setattr(dg, "default_setting", lambda modality: ({"task_prior": 1.0}, "mean-rank"))
    truth = {"a": 0.5, "a-copy": 0.45, "b": 0.7, "c": 0.6, "tfidf-svd": 0.1}
    good = dict(truth)
    bad = {k: -v for k, v in truth.items()}
    flat = {k: 0.0 for k in truth}
    signals = {"task_prior": bad, "nn_agreement": good, "sufficiency": flat, "rankme": flat, "modularity": flat}
    return [_row(n, truth, signals) for n in ("chatterbot-qa", "movie-dialog", "word-norm")]


def test_summary_reads_the_default_and_the_blind_orders(rows):
    s = summary(rows)
    assert s["views"] == 3 and s["rho"] < -0.8 and s["within"] == 0.0  # the copy kept below its parent
    assert s["params"]["rho"] == pytest.approx(protocol.correlations({"a": 1, "a-copy": 1, "b": 3, "c": 2,
                                                                      "tfidf-svd": 0}, rows[0]["truth"])[0])
    assert s["signals"]["nn_agreement"] == pytest.approx(1.0)
    md = to_markdown(rows)
    assert "| selection half | 1 |" in md and "| confirmation half | 2 |" in md
    assert "| set word-norm (confirmation) | 1 |" in md  # one line per set too


def test_a_search_default_is_chosen_on_selection_and_judged_by_the_rule_on_confirmation(rows):
    out = choose_search_default(rows)
    assert "Selection half (1 views): ['chatterbot-qa']" in out
    chosen = out.split("Proposed on the selection half: ")[1].split("\n")[0]
    assert chosen == "nn_agreement 1."  # the first, fewest-weight candidate is as good as the grid's best here
    assert "Verdict: adopt" in out  # better ρ, more picks within 0.02, never confidently wrong more often
    worse = [dict(r) for r in rows]
    for r in worse[1:]:  # the confirmation views' nn_agreement now backwards too: the rule refuses
        r["raw"] = {**r["raw"], "signals": {**r["raw"]["signals"],
                                            "nn_agreement": r["raw"]["signals"]["task_prior"]}}
    assert "Verdict: not adopted" in choose_search_default(worse)


def test_the_proposal_reads_the_selection_half_only(rows):
    out = choose_search_default(rows[:1])
    assert "Proposed on the selection half: nn_agreement 1." in out
    assert "Verdict" not in out and "not read" in out  # no confirmation view: nothing read there
    # the confirmation views do not change the proposal
    flipped = [rows[0], *({**r, "raw": {**r["raw"], "signals": {**r["raw"]["signals"], "nn_agreement":
                                                                r["raw"]["signals"]["task_prior"]}}}
                          for r in rows[1:])]
    assert propose_search_default(rows[:1])[0] == propose_search_default(
        [r for r in flipped if r["half"] == "selection"])[0]


def test_a_setting_whose_signals_have_no_score_orders_nothing_and_is_not_proposed(rows):
    """rankme has no finite score on a small set: the grid's rankme-only settings order nothing there (ρ counted as
    -1, no pick) instead of stopping the proposal (combine_ranks raises DataError for them)."""
    nan = {k: float("nan") for k in rows[0]["truth"]}
    r = dict(rows[0])
    r["raw"] = {**r["raw"], "signals": {**r["raw"]["signals"], "rankme": nan}}
    setting, lines = propose_search_default([r])
    assert setting == ({"nn_agreement": 1.0}, "mean-rank")
    good = dict(rows[0])
    good["raw"] = {**good["raw"], "signals": {**good["raw"]["signals"], "rankme": dict(good["truth"]),
                                              "nn_agreement": {k: 0.0 for k in good["truth"]}}}
    assert set(propose_search_default([good, r])[0][0]) - {"rankme"}  # not rankme alone: it orders only one


def test_a_richer_setting_is_proposed_only_when_the_few_weight_ones_fall_short(rows, monkeypatch):
    """nn_agreement alone half wrong, the truth only in task_prior + rankme together: no few-weight candidate is as
    good as the grid's best, so the grid's best is proposed."""
    r = dict(rows[0])
    truth = r["truth"]
    order = sorted(truth, key=truth.get)
    half_right = {k: (i if i % 2 else -i) for i, k in enumerate(order)}
    r["raw"] = {**r["raw"], "signals": {"task_prior": {k: truth[k] for k in truth},
                                        "nn_agreement": half_right, "sufficiency": {k: -truth[k] for k in truth},
                                        "rankme": {k: -truth[k] for k in truth},
                                        "modularity": {k: -truth[k] for k in truth}}}
    setting, lines = propose_search_default([r])
    assert setting not in SEARCH_CANDIDATES
    assert setting[0].get("task_prior")
    assert any(line.startswith("| grid best: ") for line in lines)


def test_wordnet_definitions_pair_a_gloss_with_its_synsets_words(tmp_path):
    (tmp_path / "data.noun").write_text(
        "  1 This software and database is being provided\n"
        "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 000 | a member of the genus Canis; "
        "\"the dog barked all night\"\n", "utf-8")
    (tmp_path / "data.adj").write_text(
        "00001740 00 a 02 able(a) 0 able 1 000 | having the necessary means or skill\n", "utf-8")
    for pos in ("verb", "adv"):
        (tmp_path / f"data.{pos}").write_text("", "utf-8")
    docs, queries, rel = load_wordnet_definitions(tmp_path)
    assert docs == ["dog, domestic dog, Canis familiaris", "able"]  # the marker "(a)" dropped, words once
    assert queries == ["a member of the genus Canis", "having the necessary means or skill"]  # examples dropped
    assert rel == [[0], [1]]


@pytest.mark.fault
def test_wordnet_definitions_name_a_missing_file(tmp_path):
    (tmp_path / "data.noun").write_text("", "utf-8")
    with pytest.raises(DataError, match=r"lacks \['data.verb', 'data.adj', 'data.adv'\]"):
        load_wordnet_definitions(tmp_path)


def test_alice_qa_keeps_plain_answers_and_each_random_choice(tmp_path):
    (tmp_path / "a.aiml").write_text("""<?xml version="1.0"?><aiml>
<category><pattern>DO YOU LIKE CATS</pattern><template>Yes, cats are <em>very</em> nice.</template></category>
<category><pattern>WHAT IS UP</pattern><template><random><li>Not much at all.</li><li>The sky, as always.</li>
</random></template></category>
<category><pattern>HELLO *</pattern><template>Hi there you.</template></category>
<category><pattern>WHO ARE YOU</pattern><template>I am <bot name="name"/>, a robot.</template></category>
<category><pattern>REDIRECT ME</pattern><template><srai>WHAT IS UP</srai></template></category>
<category><pattern>SHORT</pattern><template>Too short.</template></category>
</aiml>""", "utf-8")
    docs, queries, rel = load_alice_qa(tmp_path)
    assert queries == ["do you like cats", "what is up"]  # wildcards, computed and short answers left out
    assert docs == ["Yes, cats are very nice.", "Not much at all.", "The sky, as always."]
    assert rel == [[0], [1, 2]]


@pytest.mark.fault
def test_alice_qa_names_a_file_that_is_not_xml(tmp_path):
    (tmp_path / "broken.aiml").write_text("<aiml><category>", "utf-8")
    with pytest.raises(DataError, match="broken.aiml: cannot read it as AIML"):
        load_alice_qa(tmp_path)


def test_newsgroup_subjects_pair_a_thread_subject_with_each_posts_own_words():
    body = " ".join(f"word{i}" for i in range(200))
    posts = [
        f"From: a@b\nSubject: Re: Moon landing\n\nIn article <1@x> c@d writes:\n> quoted text here\n{body}\n--\nsig",
        "From: e@f\nSubject: Moon landing\n\nThe moon landing happened in 1969 and was watched by millions.",
        "From: g@h\nSubject: Too short\n\nJust a few words.",
        "From: no subject line\n\nsome body text without any subject line at all here",
    ]
    docs, queries, rel = load_newsgroup_subjects(posts)
    assert queries == ["Moon landing"]
    assert docs[0].split() == body.split()[:150]  # attribution, quote and signature out, 150 words at most
    assert docs[1].startswith("The moon landing") and rel == [[0, 1]]


def test_the_newsgroup_posts_ship_with_gensim():
    posts = _newsgroup_posts()
    assert len(posts) == 200 and all("Subject:" in p for p in posts)


def test_wikipedia_titles_pair_a_title_with_its_lead(tmp_path):
    import bz2

    def page(title, text, ns=0):
        return (f"<page><title>{title}</title><ns>{ns}</ns><id>1</id><revision><id>2</id>"
                f"<text xml:space=\"preserve\">{text}</text></revision></page>")

    lead = "'''Anarchism''' is a [[political philosophy]] " + " ".join(f"w{i}" for i in range(200))
    xml = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"><siteinfo><namespaces>'
           '<namespace key="0" /></namespaces></siteinfo>'
           + page("Anarchism", lead) + page("AccessibleComputing", "#REDIRECT [[Computer accessibility]]")
           + page("Stub", "Too short to keep.") + "</mediawiki>")
    p = tmp_path / "dump.xml.bz2"
    p.write_bytes(bz2.compress(xml.encode("utf-8")))
    docs, queries, rel = load_wikipedia_titles(p)
    assert queries == ["Anarchism"] and rel == [[0]]
    words = docs[0].split()
    assert words[:4] == ["Anarchism", "is", "a", "political"] and len(words) == 150  # markup out, 150 words


RULE = {"name": "unused-import", "code": "F401",
        "explanation": "## What it does\nChecks for unused imports, as in [`os`](https://x/os).\n\n"
                       "## Why is this bad?\nUnused imports add a performance overhead at runtime, and risk "
                       "creating import cycles.\n\n## Example\n```python\nimport os\n```\n"
                       "## Options\n- lint.ignore-init-module-imports\n"}


def test_ruff_rules_pair_a_rules_name_with_what_it_does_and_why():
    short = {"name": "too-short", "explanation": "## What it does\nChecks a thing.\n"}
    docs, queries, rel = load_ruff_rules([RULE, short])
    assert queries == ["unused import"] and rel == [[0]]  # an explanation under 10 words left out
    assert docs == ["Checks for unused imports, as in os. Unused imports add a performance overhead at runtime, and "
                    "risk creating import cycles."]  # links, code, the example and the options out


@pytest.mark.fault
@pytest.mark.parametrize("rules", [{"name": "x"}, [{"name": "x"}], [{"name": 3, "explanation": "y"}]])
def test_ruff_rules_name_output_that_is_not_a_list_of_rules(rules):
    with pytest.raises(DataError, match="ruff's rule"):
        load_ruff_rules(rules)


def _film_file(path, rows):
    import bz2
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    path.write_bytes(bz2.compress(buf.getvalue().encode("utf-8")))
    return path


def test_film_reviews_pair_a_review_with_its_films_plot(tmp_path):
    plot = " ".join(f"p{i}" for i in range(200))
    p = _film_file(tmp_path / "rt.csv.bz2", [
        ["category", "text", "movie_name", "has_plot_and_reviews"],
        ["plot", plot, "alien", "True"],
        ["fresh", "A  masterpiece of  dread in space.", "alien", "True"],
        ["rotten", "Too long by half, and slow.", "alien", "True"],
        ["fresh", "Short.", "alien", "True"],
        ["fresh", "A review of a film that has no plot here.", "heat", "False"]])
    docs, queries, rel = load_film_reviews(p)
    assert docs == [" ".join(plot.split()[:150])]  # 150 words at most
    assert queries == ["A masterpiece of dread in space.", "Too long by half, and slow."]  # short and plotless out
    assert rel == [[0], [0]]


@pytest.mark.fault
def test_film_reviews_name_a_missing_column(tmp_path):
    p = _film_file(tmp_path / "rt.csv.bz2", [["category", "text"], ["plot", "x"]])
    with pytest.raises(DataError, match=r"no column\(s\) \['movie_name'\]"):
        load_film_reviews(p)


def test_python_docstrings_pair_a_summary_with_the_rest():
    rest = " ".join(f"r{i}" for i in range(200))
    docs, queries, rel = load_python_docstrings([
        f"Return the sum of\n  two numbers.\n\n{rest}",
        "Too short.\n\nThe summary above has fewer than three words, so this is left out of it.",
        "A summary whose rest is short.\n\nOnly five words here.",
        "A summary with no rest at all."])
    assert queries == ["Return the sum of two numbers."] and rel == [[0]]
    assert docs == [" ".join(rest.split()[:150])]


def test_python_docstrings_read_public_functions_classes_and_methods():
    import inspect
    import textwrap

    got = module_docstrings(["textwrap"])
    assert inspect.getdoc(textwrap.dedent) in got and inspect.getdoc(textwrap.TextWrapper.wrap) in got
    assert inspect.getdoc(textwrap.TextWrapper._split) not in got  # private methods out
    assert len(got) == len(set(got))


def test_python_docstrings_do_not_follow_what_this_process_patched(monkeypatch):
    import textwrap

    monkeypatch.setattr(textwrap, "shorten", lambda *a: None)  # a patch here (as an imported package might make)
    monkeypatch.setattr(textwrap.TextWrapper, "__doc__", "Patched here only.")
    got = module_docstrings(["textwrap"])
    assert "Patched here only." not in got and any(d.startswith("Collapse and truncate") for d in got)


def test_chatterbot_world_qa_reads_every_language_but_english(tmp_path):
    for lang, text in [("english", "- - hi there\n  - hello there\n"), ("french", "- - Bonjour\n  - Salut\n"),
                       ("german", "- - Wie geht's?\n  - Gut, danke.\n  - Und dir?\n- - '123'\n  - '456'\n")]:
        (tmp_path / lang).mkdir()
        (tmp_path / lang / "a.yml").write_text("categories:\n- x\nconversations:\n" + text, "utf-8")
    docs, queries, rel = load_chatterbot_world_qa(tmp_path)
    assert queries == ["Bonjour", "Wie geht's?"]  # English and letterless pairs out
    assert docs == ["Salut", "Gut, danke."] and rel == [[0], [1]]


@pytest.mark.fault
def test_chatterbot_world_qa_names_a_file_that_is_not_yaml(tmp_path):
    (tmp_path / "french").mkdir()
    (tmp_path / "french" / "bad.yml").write_text("conversations: [unclosed\n", "utf-8")
    with pytest.raises(DataError, match="bad.yml: cannot read it as YAML"):
        load_chatterbot_world_qa(tmp_path)


@pytest.mark.fault
def test_chatterbot_world_qa_names_a_folder_without_other_languages(tmp_path):
    (tmp_path / "english").mkdir()
    with pytest.raises(DataError, match="no language folder but english"):
        load_chatterbot_world_qa(tmp_path)


def test_library_docstrings_pair_a_summary_with_the_rest_before_the_examples():
    rest = " ".join(f"r{i}" for i in range(200))
    docs, queries, rel = load_library_docstrings("scipy", [
        "Compute the spanning\n  tree of a graph.\n\nParameters\n----------\nG : graph\n    The graph to span and "
        "then some more words.\n\nExamples\n--------\n>>> span(G)\nTree",
        f"Return the sum of two numbers.\n\n{rest}",
        "Integrate a function numerically.\n\nA short rest.\n>>> quad(f, 0, 1)\n(0.5, 0.0) and many more words "
        "after the example that are not kept at all",
        "Too short.\n\nThe summary above has fewer than three words, so this is left out of it."])
    assert queries == ["Compute the spanning tree of a graph.", "Return the sum of two numbers."]
    assert docs == ["Parameters G : graph The graph to span and then some more words.",
                    " ".join(rest.split()[:150])]  # underlines and the examples out; the third's rest too short
    assert rel == [[0], [1]]


def test_library_docstrings_read_a_subpackage_under_its_top_level_package():
    import inspect
    from email.mime.text import MIMEText

    assert inspect.getdoc(MIMEText) in module_docstrings(["email.mime.text"])  # defined in email.mime.text
    import yaml  # an installed package (the dev extra's PyYAML): read with the site packages, not without

    assert inspect.getdoc(yaml.safe_load) in module_docstrings(["yaml"], site=True)


@pytest.mark.fault
def test_library_docstrings_name_a_module_that_cannot_be_imported():
    with pytest.raises(DataError, match="cannot read the docstrings of yaml: .*No module named 'yaml'"):
        module_docstrings(["yaml"])  # the standard library alone (python -I -S): no site packages
    with pytest.raises(DataError, match="package 'no_such_library_xyz' is not installed"):
        load_library_docstrings("no_such_library_xyz")


RCPARAMS = """## a header comment
#axes.titlesize:     large   # font size of the axes title
#legend.fancybox:      True     # if True, use a rounded box for the
                                # legend background, else a rectangle
#figure.dpi: 100  # dpi
#figure.edgecolor: white  # figure edge color
#lines.color: C0  # has no colour of its own
#lines.linestyle: -
                  # not a continuation: the setting has no comment
#axes.edgecolor: black  # figure edge color
"""


def test_matplotlib_rcparams_pair_a_settings_name_with_its_comment(tmp_path):
    p = tmp_path / "matplotlibrc"
    p.write_text(RCPARAMS, "utf-8")
    docs, queries, rel = load_matplotlib_rcparams(p)
    assert docs == ["font size of the axes title", "if True, use a rounded box for the legend background, else a "
                    "rectangle", "figure edge color", "has no colour of its own"]
    assert queries == ["axes titlesize", "legend fancybox", "figure edgecolor", "lines color", "axes edgecolor"]
    assert rel == [[0], [1], [2], [3], [2]]  # comments under 3 words and settings without one out


@pytest.mark.fault
def test_matplotlib_rcparams_name_a_file_without_settings(tmp_path):
    p = tmp_path / "matplotlibrc"
    p.write_text("## only comments\nbackend: Agg\n", "utf-8")
    with pytest.raises(DataError, match="matplotlibrc: no commented setting"):
        load_matplotlib_rcparams(p)


def test_wordnet_examples_pair_each_example_with_its_synsets_definition(tmp_path):
    (tmp_path / "data.noun").write_text(
        "  1 This software and database is being provided\n"
        "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 000 | a member of the genus Canis; "
        "\"the dog barked all night\"; \"a good  dog\"; \"dogs!\"\n"
        "02084072 05 n 01 cur 0 000 | an inferior dog; \"the dog barked all night\"\n", "utf-8")
    (tmp_path / "data.adj").write_text(
        "00001740 00 a 02 able(a) 0 able 1 000 | having the necessary means or skill\n", "utf-8")
    for pos in ("verb", "adv"):
        (tmp_path / f"data.{pos}").write_text("", "utf-8")
    docs, queries, rel = load_wordnet_examples(tmp_path)
    assert docs == ["a member of the genus Canis", "an inferior dog"]  # the adjective has no example
    assert queries == ["the dog barked all night", "a good dog"]  # examples under 3 words out, spaces collapsed
    assert rel == [[0, 1], [0]]  # an example of two synsets finds both


@pytest.mark.fault
def test_wordnet_examples_name_a_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"lacks \['data.noun', 'data.verb', 'data.adj', 'data.adv'\]"):
        load_wordnet_examples(tmp_path)


PANDAS_OPTIONS = """compute.use_bottleneck : bool
    Use the bottleneck library to accelerate if it is installed,
    the default is True
    [default: True] [currently: False]
display.max_rows : int
    If max_rows is exceeded, switch to truncate view.
    [default: 60] [currently: 60]
io.excel.xls.reader : string
    Deprecated.
    [default: ] [currently: ]
"""


def test_pandas_options_pair_an_options_name_with_its_description():
    docs, queries, rel = load_pandas_options(PANDAS_OPTIONS)
    assert queries == ["compute use bottleneck", "display max rows"]
    assert docs == ["Use the bottleneck library to accelerate if it is installed, the default is True",
                    "If max_rows is exceeded, switch to truncate view."]  # the default / current line out
    assert rel == [[0], [1]]  # a description under 3 words out


@pytest.mark.fault
@pytest.mark.parametrize("text", ["", "Some text\n  without options\n"])
def test_pandas_options_name_a_description_without_options(text):
    with pytest.raises(DataError, match="pandas' options: no line 'name : type'"):
        load_pandas_options(text)


def test_mypy_error_codes_pair_a_code_with_its_description():
    docs, queries, rel = load_mypy_error_codes([("attr-defined", "Check that attribute exists"),
                                                    ("misc", "Miscellaneous"), ("union-attr", "Check that "
                                                                                "attribute exists  in each union")])
    assert queries == ["attr defined", "union attr"]
    assert docs == ["Check that attribute exists", "Check that attribute exists in each union"]
    assert rel == [[0], [1]]


@pytest.mark.fault
@pytest.mark.parametrize("codes", [["attr-defined"], [("a", "b", "c")], [("a", 3)]])
def test_mypy_error_codes_name_a_code_that_is_not_a_pair(codes):
    with pytest.raises(DataError, match="mypy's error code 0: expected a .code, description. pair"):
        load_mypy_error_codes(codes)


PYTEST_HELP = """usage: python -m pytest [options] [file_or_dir] [file_or_dir] [...]

positional arguments:
  file_or_dir           the files or folders to run

general:
  -k EXPRESSION         Only run tests matching the given keyword expression,
                        e.g. -k 'test_method or test_other'.
  -x, --exitfirst       Exit instantly on first error or failed test
  --lf, --last-failed   Rerun only the tests that failed at the last run (or all
                        if none failed)
  --fixtures, --funcargs
                        Show available fixtures, sorted by plugin appearance
  --maxfail=num         Exit after first num failures or errors
  --trace               Break

[pytest] configuration options in the first pytest.ini|tox.ini|setup.cfg file found:

  log_cli (bool):       Enable log display during test run
  tmp_path_retention_policy ('all' | 'failed' | 'none'):
                        Controls which directories created by the `tmp_path`
                        fixture are kept around

Environment variables:
  PYTEST_ADDOPTS           Extra command line options
"""


def test_pytest_options_pair_an_options_long_name_with_its_help():
    docs, queries, rel = load_pytest_options(PYTEST_HELP)
    assert queries == ["exitfirst", "last failed", "fixtures", "maxfail", "log cli", "tmp path retention policy"]
    assert docs == ["Exit instantly on first error or failed test",
                    "Rerun only the tests that failed at the last run (or all if none failed)",
                    "Show available fixtures, sorted by plugin appearance", "Exit after first num failures or errors",
                    "Enable log display during test run",
                    "Controls which directories created by the `tmp_path` fixture are kept around"]
    assert rel == [[i] for i in range(6)]  # no long name, help under 3 words, positionals, environment: out


@pytest.mark.fault
def test_pytest_options_name_a_help_without_options():
    with pytest.raises(DataError, match="pytest's help lists no option"):
        load_pytest_options("usage: pytest\n\npositional arguments:\n  file_or_dir   the files to run\n")


def test_duckdb_functions_pair_a_functions_name_with_its_description():
    docs, queries, rel = load_duckdb_functions([
        ("array_length", "Returns the length of the `list`."), ("len", "Returns the length of the `list`."),
        ("len", "Returns the length of the string."), ("->>", "Extracts a value as text from JSON"),
        ("__internal_compress", "Compresses a value for storage"), ("pi", "Returns pi.")])
    assert docs == ["Returns the length of the list.", "Returns the length of the string."]  # backticks out
    assert queries == ["array length", "len"]  # operators, internal names, descriptions under 3 words out
    assert rel == [[0], [0, 1]]  # aliases find one description, a name with two descriptions both


@pytest.mark.fault
@pytest.mark.parametrize("rows", [["len"], [("len", None)], [("a", "b", "c")]])
def test_duckdb_functions_name_a_row_that_is_not_a_pair(rows):
    with pytest.raises(DataError, match="duckdb's function 0: expected a .name, description. pair"):
        load_duckdb_functions(rows)


def test_a_fresh_interpreter_gets_the_environment_asked_for(monkeypatch):
    monkeypatch.setenv("ES_TEST_KEPT", "kept")
    monkeypatch.setenv("ES_TEST_DROPPED", "here only")
    out = fresh_python("import os; print(os.environ.get('ES_TEST_KEPT'), os.environ.get('ES_TEST_DROPPED'), "
                           "os.environ.get('ES_TEST_SET'), os.listdir('.'))",
                           env={"ES_TEST_DROPPED": None, "ES_TEST_SET": "set"}, what="x")
    assert out.split() == ["kept", "None", "set", "[]"]  # and an empty working folder


@pytest.mark.fault
def test_a_fresh_interpreter_that_fails_is_named():
    with pytest.raises(DataError, match="cannot read duckdb's functions: ModuleNotFoundError: No module named "
                                           "'no_such_module_xyz'"):
        fresh_python("import no_such_module_xyz", what="duckdb's functions")


@pytest.fixture
def witness_row(monkeypatch):
    """A selection view where nn_agreement and rankme put c first (b is best by 0.1) and task_prior follows the
    truth: the order alone is decided and wrong; task_prior as a witness leaves it undecided with b among the
    leaders; sufficiency (backwards) names the reference point instead."""
    monkeypatch.setitem(protocol.PARAMS, "a", 1.0)
    monkeypatch.setitem(protocol.PARAMS, "b", 3.0)
    monkeypatch.setitem(protocol.PARAMS, "c", 2.0)
    truth = {"a": 0.5, "a-copy": 0.45, "b": 0.7, "c": 0.6, "tfidf-svd": 0.1}
    nn = {"c": 0.9, "b": 0.8, "a": 0.5, "a-copy": 0.4, "tfidf-svd": 0.1}
    signals = {"task_prior": dict(truth), "nn_agreement": nn, "rankme": nn, "modularity": nn,
               "sufficiency": {k: -v for k, v in truth.items()}}
    return _row("chatterbot-qa", truth, signals)


ORDER = ({"nn_agreement": 1.0, "rankme": 1.0}, "mean-rank")


def test_witnesses_are_chosen_by_fewest_wrong_then_most_right_then_fewest_signals(witness_row):
    setting, lines = choose_witnesses([witness_row], ORDER)
    # none: confidently wrong; task_prior and task_prior + sufficiency: undecided, the best among the leaders
    # (answered right); sufficiency: undecided, the best not among them. Fewest signals: task_prior alone.
    assert setting == (*ORDER, ("task_prior",))
    table = "\n".join(lines)
    assert "| none | none | 1/1 | 1/1 | 0/1 |" in table and "| task_prior | task_prior | 0/1 | 0/1 | 1/1 |" in table
    assert "| sufficiency | sufficiency | 0/1 | 0/1 | 0/1 |" in table
    assert lines[-1] == "\nWitnesses chosen on the selection half: task_prior."


def test_a_signal_the_order_weights_is_no_witness(witness_row):
    order = ({"nn_agreement": 1.0, "rankme": 1.0, "task_prior": 0.01}, "mean-rank")  # still c first
    setting, lines = choose_witnesses([witness_row], order)
    assert "| task_prior | none |" in "\n".join(lines)  # named, not asked: weighted
    assert setting[2] != ("task_prior",)  # it reads as no witness at all, and loses the tie on signals


def test_the_confirmation_reads_the_order_with_the_witnesses_it_carries(witness_row, monkeypatch):
    import benchmarks.default_grid as dg

    monkeypatch.setattr(dg, "default_setting", lambda modality: ({"task_prior": 1.0}, "mean-rank"))
    conf = [{**witness_row, "set": "word-norm", "half": "confirmation"}]
    _, without = confirm_search_default(conf, (*ORDER, ()))
    _, carried = confirm_search_default(conf, (*ORDER, ("task_prior",)))
    assert any("proposed: mean ρ" in x and "confidently wrong 1/1" in x and "answered right 0/1" in x for x in without)
    assert any("proposed: mean ρ" in x and "confidently wrong 0/1" in x and "answered right 1/1" in x for x in carried)
    out = choose_search_default([witness_row, *conf])
    assert "Witnesses chosen on the selection half:" in out and "Proposed: " in out and "Verdict:" in out
