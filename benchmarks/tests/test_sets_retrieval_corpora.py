"""The retrieval sets of dialogues, dictionaries and articles (benchmarks/sets/retrieval_corpora.py), on synthetic
texts and tiny fakes of the file formats; malformed input named."""

import pytest

from benchmarks.sets.retrieval_corpora import _newsgroup_posts, load_alice_qa, load_chatterbot_world_qa, load_film_reviews, load_newsgroup_subjects, load_wikipedia_titles, load_wordnet_definitions, load_wordnet_examples
from embedselect.errors import DataError


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
