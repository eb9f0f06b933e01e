"""Candidates the user brings (issue 44, items 1 and 2): an embedder object (``encode``, a SentenceTransformer
instance, a plain callable) and precomputed vectors (an array, a mapping, ``.npy`` / ``.parquet`` files), each ranked
in one pool with a baseline by select() and by the CLI; their bad output is a typed error naming the candidate."""

from __future__ import annotations

import hashlib
import json
import logging

import numpy as np
import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import ReferenceData, sample_path
from embedselect.errors import CandidateSpecError, EmbedderOutputError, PrecomputedVectorsError
from embedselect.models.backends.custom import ObjectEmbedder, precomputed_vectors
from embedselect.models.candidates import Candidate, parse_candidates
from embedselect.ranking.result import Ranking
from embedselect.store import Store
from testkit import tinymodels as tm

SAMPLE = sample_path("texts")
WIDTH = 12

pytestmark = pytest.mark.usefixtures("one_thread")


def _word_vector(word: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).normal(size=WIDTH)


def bag_of_words(items: list[str]) -> np.ndarray:
    """A deterministic callable embedder: the sum of a seeded random vector per word, float64 (n, WIDTH)."""
    return np.stack([sum((_word_vector(w) for w in t.lower().split()), np.zeros(WIDTH)) for t in items])


class Encoder:
    """An object with ``encode(items, batch_size)`` that counts its calls and the items it saw."""

    def __init__(self, shift: float = 0.5) -> None:
        self.shift, self.calls, self.items = shift, 0, 0

    def encode(self, items, batch_size):
        self.calls += 1
        self.items += len(items)
        assert len(items) <= batch_size
        return bag_of_words(items) + self.shift


@pytest.fixture(scope="module")
def ref() -> ReferenceData:
    return ReferenceData.load(SAMPLE, column="text")


def _vectors_for(ref: ReferenceData) -> np.ndarray:
    return (bag_of_words(list(ref.items)) * 2.0).astype(np.float32)


# --- embedder objects ---------------------------------------------------------------------------------------------
def test_embedder_objects_rank_in_one_pool_with_a_baseline(cache_dir, caplog):
    enc = Encoder()
    pinned = Candidate(name="pinned", embedder=Encoder(shift=1.0), revision="v1")
    with caplog.at_level(logging.WARNING, logger="embedselect"):
        r = embedselect.select(SAMPLE, [bag_of_words, enc, pinned, "tfidf-svd"], column="text",
                               metrics=["task_prior"], batch_size=64)
    assert {c.name for c in r} == {"bag_of_words", "Encoder", "pinned", "tfidf-svd"}
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert enc.calls == 4 and enc.items == 240  # 240 items in batches of at most 64, rows in order
    assert r["Encoder"].dim == WIDTH and r["Encoder"].n == 240
    assert (r["bag_of_words"].cache_scope, r["Encoder"].cache_scope) == ("run", "run")
    assert (r["pinned"].cache_scope, r["tfidf-svd"].cache_scope) == ("cache", "cache")
    assert r["bag_of_words"].model_id == "embedder:bag_of_words" and r["bag_of_words"].revision is None
    assert r["pinned"].revision == "v1"
    warned = [m for m in caplog.messages if "kept for this run only" in m]
    assert sorted(m.split(":")[0] for m in warned) == ["Encoder", "bag_of_words"]
    assert json.loads(r.to_json())["candidates"][0]["cache_scope"] in ("run", "cache")
    # the unpinned ones are not in the cache; the pinned one is, under (name, revision, options, data)
    models = set(Store.open(cache_dir).list_runs()["model_id"])
    assert "embedder:pinned" in models and "embedder:Encoder" not in models and "embedder:bag_of_words" not in models

    # a second run: the pinned candidate comes from the cache (its object is not called), the unpinned one is
    # embedded again
    again, enc2 = Candidate(name="pinned", embedder=Encoder(shift=1.0), revision="v1"), Encoder()
    r2 = embedselect.select(SAMPLE, [again, enc2, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert r2["pinned"].cached and again.embedder.calls == 0
    assert not r2["Encoder"].cached and enc2.calls > 0
    assert r2["Encoder"].run_key != r["Encoder"].run_key  # a run-only key: no metric cache entry is shared
    # another revision is another cache entry: embedded again
    other = Candidate(name="pinned", embedder=Encoder(shift=1.0), revision="v2")
    r3 = embedselect.select(SAMPLE, [other, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert not r3["pinned"].cached and other.embedder.calls > 0


def test_a_sentence_transformer_instance_is_a_candidate(tmp_path, ref):
    from sentence_transformers import SentenceTransformer

    folder = tm.make_tiny_sentence_transformer(tmp_path / "st")
    model = SentenceTransformer(str(folder), device="cpu")
    (cand,) = parse_candidates([model], modality="text")
    assert cand.kind == "embedder" and cand.embedder is model
    out = ObjectEmbedder(model, name="st", modality="text", revision=None).embed(list(ref.items[:10]), batch_size=4)
    direct = model.encode(list(ref.items[:10]), convert_to_numpy=True)
    assert out.shape == (10, 32) and out.dtype == np.float32
    np.testing.assert_allclose(out, direct, atol=1e-5)


@pytest.mark.fault
@pytest.mark.parametrize("bad, needle", [
    (lambda items: np.ones((len(items) - 1, 4)), "rows"),
    (lambda items: np.ones(len(items)), "2-D"),
    (lambda items: np.full((len(items), 4), np.nan), "non-finite"),
    (lambda items: [["x"] * 4 for _ in items], "not numeric"),
    (lambda items: 1 / 0, "ZeroDivisionError"),
])
def test_a_wrong_embedder_output_is_a_typed_error_naming_the_candidate(bad, needle):
    emb = ObjectEmbedder(bad, name="broken", modality="text", revision=None)
    with pytest.raises(EmbedderOutputError, match=needle) as info:
        emb.embed(["a b", "c d", "e f"], batch_size=8)
    assert "'broken'" in str(info.value)


@pytest.mark.fault
def test_widths_that_change_between_batches_are_refused():
    emb = ObjectEmbedder(lambda items: np.ones((len(items), 3 if len(items) == 2 else 5)), name="w",
                         modality="text", revision=None)
    with pytest.raises(EmbedderOutputError, match="different widths"):
        emb.embed(["a", "b", "c"], batch_size=2)
    # the embedding stops at the first batch of another width (every batch was embedded first: a costly embedder
    # ran over all the data for a result that was then refused)
    calls: list[int] = []

    def narrower(items):
        calls.append(len(items))
        return np.ones((len(items), 8 if len(calls) == 1 else 6))

    emb = ObjectEmbedder(narrower, name="w", modality="text", revision=None)
    with pytest.raises(EmbedderOutputError, match=r"different widths: 6-wide vectors for items 11-20 of 100, but 8-wide "
                                                  r"vectors for the items before \(the embedding stopped"):
        emb.embed([str(i) for i in range(100)], batch_size=10)
    assert calls == [10, 10]


@pytest.mark.fault
def test_values_too_large_for_float32_are_named_so_for_an_object_and_a_npy_file(tmp_path, ref, recwarn):
    """An object's float64 output or a float64 .npy holding 1e300 (finite) was refused as "NaN or inf", after numpy
    printed "RuntimeWarning: overflow encountered in cast"."""
    def big(items):
        out = bag_of_words(items)
        out[1, 3] = 1e300
        return out

    with pytest.raises(EmbedderOutputError, match=r"'big''s embedder: 1 of 5 row\(s\) hold values too large for "
                                                  r"float32 \(the largest seen 1e\+300"):
        ObjectEmbedder(big, name="big", modality="text", revision=None).embed(list(ref.items[:5]))
    v = bag_of_words(list(ref.items))
    v[4, 0] = -2e300
    np.save(tmp_path / "v.npy", v)
    with pytest.raises(PrecomputedVectorsError, match=r"'mine': 1 of 240 row\(s\) hold values too large for float32 "
                                                      r"\(the largest seen 2e\+300"):
        precomputed_vectors(tmp_path / "v.npy", name="mine", ids=ref.ids, positions=ref.source_positions(),
                            n_source=ref.report.n_total)
    assert not [w for w in recwarn if "overflow" in str(w.message)]


def test_a_failing_embedder_fails_only_its_candidate(cache_dir):
    r = embedselect.select(SAMPLE, [Candidate(name="nan", embedder=lambda items: np.full((len(items), 4), np.inf)),
                                    bag_of_words, "tfidf-svd"], column="text", metrics=["task_prior"])
    assert not r["nan"].ok and r["nan"].error_type == "EmbedderOutputError" and "'nan'" in r["nan"].error
    assert r["bag_of_words"].ok and r["tfidf-svd"].ok


@pytest.mark.fault
def test_a_candidate_object_needs_encode_or_a_call_and_a_name():
    with pytest.raises(CandidateSpecError, match="encode"):
        Candidate(name="x", embedder=object())
    with pytest.raises(CandidateSpecError, match="needs a name"):
        Candidate(embedder=bag_of_words)
    with pytest.raises(CandidateSpecError, match="callable"):
        parse_candidates([42])


def test_two_different_objects_of_one_name_are_both_kept():
    a, b = Encoder(), Encoder()
    names = [c.name for c in parse_candidates([a, b, a])]
    assert names[0] == "Encoder" and len(names) == 2 and names[1] != "Encoder"


def test_one_embedder_object_under_two_names_is_called_once_in_a_run(cache_dir):
    enc, twin = Encoder(), Encoder()  # twin: another object giving the same vectors, still an embedder of its own
    cands = [Candidate(name="a", embedder=enc), Candidate(name="b", embedder=enc), Candidate(name="c", embedder=twin),
             "tfidf-svd"]
    r = embedselect.select(SAMPLE, cands, column="text", metrics=["task_prior"])
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert enc.items == 240 and twin.items == 240  # enc saw 480 items: once per name
    assert (r["a"].embedded_items, r["b"].embedded_items, r["b"].cached, r["c"].embedded_items) == (240, 0, None, 240)
    assert r["a"].scores == r["b"].scores and r["b"].dim == WIDTH
    # across runs an object has no identity: the next run calls it again (once)
    embedselect.select(SAMPLE, cands[:2] + ["tfidf-svd"], column="text", metrics=["task_prior"])
    assert enc.items == 480


def test_matryoshka_variants_of_one_object_with_a_revision_are_one_model(cache_dir):
    """One object ranked as the model and its ?truncate_dim= variants is embedded once and stored as one run: the
    variants are computed from the model's vectors (each name was embedded and stored: 3 calls and 3 runs here)."""
    enc = Encoder()

    def pool(obj, names=("m", "m4", "m8")):
        widths = {"m": None, "m4": 4, "m8": 8}
        return [Candidate(name=n, embedder=obj, revision="v1",
                          options={"truncate_dim": widths[n]} if widths[n] else {}) for n in names] + ["tfidf-svd"]

    r = embedselect.select(SAMPLE, pool(enc), column="text", metrics=["task_prior"], batch_size=240)
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert enc.calls == 1 and enc.items == 240
    assert (r["m"].embedded_items, r["m4"].embedded_items, r["m8"].embedded_items) == (240, 0, 0)
    assert (r["m4"].dim, r["m8"].dim) == (4, 8) and len({r[n].run_key for n in ("m", "m4", "m8")}) == 3
    assert {r[n].model_id for n in ("m", "m4", "m8")} == {"embedder:m"}
    runs = Store.open(cache_dir).list_runs()
    assert list(runs[runs["model_id"].str.startswith("embedder:")]["model_id"]) == ["embedder:m"]
    # declared copies of the model, ranked below it
    assert {("m4", "m"), ("m8", "m")} <= {(p["copy"], p["parent"]) for p in r.details["copies"]["pairs"]}
    # a later run of the model and one variant (another object: the revision says it is the same model) reads the
    # stored run
    again = Encoder()
    r2 = embedselect.select(SAMPLE, pool(again, ("m", "m8")), column="text", metrics=["task_prior"])
    assert again.calls == 0 and r2["m8"].cached and r2["m8"].dim == 8
    assert len(Store.open(cache_dir).list_runs()) == len(runs)


# --- precomputed vectors ------------------------------------------------------------------------------------------
def test_vectors_in_every_form_rank_in_one_pool_with_a_baseline(tmp_path, cache_dir, ref):
    import pyarrow as pa
    import pyarrow.parquet as pq

    vecs = _vectors_for(ref)
    np.save(tmp_path / "v.npy", vecs)
    pq.write_table(pa.table({"id": list(ref.ids)[::-1], "vector": [list(map(float, v)) for v in vecs[::-1]]}),
                   tmp_path / "v.parquet")
    cands = [
        Candidate.from_vectors("array", vecs),
        Candidate.from_vectors("by-id", vecs[::-1], ids=list(ref.ids)[::-1]),
        Candidate.from_vectors("mapping", dict(zip(ref.ids, vecs))),
        Candidate.from_vectors("npy", tmp_path / "v.npy"),
        Candidate.from_vectors("parquet", str(tmp_path / "v.parquet")),
        "tfidf-svd",
    ]
    r = embedselect.select(SAMPLE, cands, column="text", metrics=["task_prior"])
    assert all(c.ok for c in r), [c.failure_note for c in r]
    forms = ["array", "by-id", "mapping", "npy", "parquet"]
    assert {r[n].cache_scope for n in forms} == {"input"} and r["tfidf-svd"].cache_scope == "cache"
    # the same vectors in five forms: the same score, and none of them is written to the cache
    assert len({round(r[n].scores["task_prior"], 9) for n in forms}) == 1
    assert not any(m.startswith("vectors:") for m in Store.open(cache_dir).list_runs()["model_id"])


def test_a_source_aligned_array_serves_a_sample(tmp_path, ref):
    full = _vectors_for(ref)
    sample = ReferenceData.load(SAMPLE, column="text", max_items=50, seed=3)
    out = precomputed_vectors(full, name="v", ids=sample.ids, positions=sample.source_positions(),
                              n_source=sample.report.n_total)
    np.testing.assert_array_equal(out, full[[int(i) - 1 for i in sample.ids]])
    np.testing.assert_allclose(out, bag_of_words(list(sample.items)) * 2.0, rtol=1e-6)


@pytest.mark.fault
def test_bad_vectors_are_an_error_naming_the_rows(tmp_path, ref):
    vecs = _vectors_for(ref)
    kw = dict(name="mine", ids=ref.ids, positions=ref.source_positions(), n_source=ref.report.n_total)
    mapping = dict(zip(ref.ids, vecs))
    for gone in ("7", "9"):
        del mapping[gone]
    with pytest.raises(PrecomputedVectorsError, match=r"2 of 240 items have no vector \(ids '7', '9'\)"):
        precomputed_vectors(mapping, **kw)
    wide = dict(zip(ref.ids, vecs))
    wide["5"] = np.ones(WIDTH + 1)
    with pytest.raises(PrecomputedVectorsError, match=r"1 vectors are not 12 wide.*'5'"):
        precomputed_vectors(wide, **kw)
    nan = vecs.copy()
    nan[[2, 10]] = np.nan
    with pytest.raises(PrecomputedVectorsError, match=r"2 of 240 vectors hold NaN or inf \(ids '3', '11'\)"):
        precomputed_vectors(nan, **kw)
    with pytest.raises(PrecomputedVectorsError, match="239 rows, expected 240"):
        precomputed_vectors(vecs[:-1], **kw)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"key": ["1"], "vector": [[1.0]]}), tmp_path / "cols.parquet")
    with pytest.raises(PrecomputedVectorsError, match="needs 'id'"):
        precomputed_vectors(tmp_path / "cols.parquet", **kw)
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(PrecomputedVectorsError, match="cannot read"):
        precomputed_vectors(tmp_path / "junk.npy", **kw)


@pytest.mark.fault
def test_vectors_specs_that_cannot_work_are_refused_at_once(tmp_path):
    with pytest.raises(CandidateSpecError, match="does not exist"):
        parse_candidates(f"v=vectors:{tmp_path / 'none.npy'}")
    with pytest.raises(CandidateSpecError, match="need a name"):
        parse_candidates(f"vectors:{tmp_path / 'none.npy'}")
    (tmp_path / "v.csv").write_text("1,2\n")
    with pytest.raises(CandidateSpecError, match=".npy file"):
        parse_candidates(f"v=vectors:{tmp_path / 'v.csv'}")


def test_cli_ranks_npy_and_parquet_vectors_with_a_baseline(tmp_path, capsys, ref):
    import pyarrow as pa
    import pyarrow.parquet as pq

    vecs = _vectors_for(ref)
    np.save(tmp_path / "v.npy", vecs)
    pq.write_table(pa.table({"id": list(ref.ids), "vector": [list(map(float, v)) for v in vecs]}),
                   tmp_path / "v.parquet")
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", f"np=vectors:{tmp_path / 'v.npy'},tfidf-svd",
                 "-m", f"pq=vectors:{tmp_path / 'v.parquet'}", "--metrics", "task_prior", "--json", "-q",
                 "--cache-dir", str(tmp_path / "c")])
    assert code == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert {c.name for c in r} == {"np", "pq", "tfidf-svd"} and all(c.ok for c in r)
    assert r["np"].scores == r["pq"].scores and r["np"].cache_scope == "input"
    assert [(c.name, c.model_id) for c in r if c.name == "np"] == [("np", "vectors:np")]  # the JSON's kind


def test_the_table_says_which_rows_are_precomputed_vectors(tmp_path, capsys, ref):
    """New-user audit: rank's table had no column telling a user's precomputed vectors (or a hosted API) from the
    models; a kind column follows the name when a row is one the user brought, and a pool of models and baselines
    keeps its table as it was."""
    np.save(tmp_path / "v.npy", _vectors_for(ref))
    assert main(["rank", str(SAMPLE), "-c", "text", "-m", f"mine=vectors:{tmp_path / 'v.npy'},tfidf-svd",
                 "--metrics", "task_prior", "-q", "--cache-dir", str(tmp_path / "c")]) == 0
    header, _, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["rank", "candidate", "kind", "score"], header
    kinds = {line.split()[1]: line.split()[2] for line in rows[:2]}
    assert kinds == {"mine": "vectors", "tfidf-svd": "baseline"}, rows
    assert main(["rank", str(SAMPLE), "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "-q", "--cache-dir", str(tmp_path / "c")]) == 0
    assert "kind" not in capsys.readouterr().out.splitlines()[0]
    from embedselect._util.kinds import kind_of_model_id

    assert [kind_of_model_id(m) for m in ("openai:api.example.com/small", "embedder:ours", "local:/m",
                                          "BAAI/bge-small-en-v1.5", None)] == ["api", "embedder", "local", "hub", None]


@pytest.mark.fault
def test_cli_refuses_an_output_that_is_a_vectors_file(tmp_path, capsys):
    vecs = tmp_path / "v.npy"
    np.save(vecs, np.ones((240, 4), dtype=np.float32))
    before = vecs.read_bytes()
    for option in ("--out", "--html"):
        code = main(["rank", str(SAMPLE), "-c", "text", "-m", f"v=vectors:{vecs},tfidf-svd", option, str(vecs),
                     "-q", "--cache-dir", str(tmp_path / "c")])
        assert code == 2
        assert "an input of this command" in capsys.readouterr().err
    assert vecs.read_bytes() == before
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", f"v=vectors:{tmp_path / 'missing.npy'},tfidf-svd", "-q",
                 "--cache-dir", str(tmp_path / "c")])
    assert code == 4 and "does not exist" in capsys.readouterr().err


@pytest.mark.fault
def test_a_nan_output_says_which_items_it_counted():
    """New-user audit: a NaN embedder on 240 items said '32 of 32 rows' (its first batch) as if that were all."""
    nan = ObjectEmbedder(lambda items: np.full((len(items), 4), np.nan), name="nan", modality="text", revision=None)
    with pytest.raises(EmbedderOutputError, match=r"32 of the 32 rows for items 1-32 of 240 hold non-finite values "
                                                  r"\(NaN or inf\) \(the embedding stopped at that batch\)"):
        nan.embed([f"t{i}" for i in range(240)], batch_size=32)
    with pytest.raises(EmbedderOutputError, match=r"'nan''s embedder: 3 of the 3 rows hold non-finite values \(NaN "
                                                  r"or inf\); its embedder"):
        nan.embed(["a", "b", "c"], batch_size=32)


def test_precomputed_vectors_are_not_called_uncached(tmp_path, capsys, ref):
    """Nothing is embedded or cached for precomputed vectors (read from the input every run): the table's ``cached``
    column said "no" for them, and the JSON ``false``, beside "yes" / ``true`` for the cached baseline. They now say
    "-" and null, in rank's table, its JSON (and the Ranking read back), and embed's."""
    np.save(tmp_path / "v.npy", _vectors_for(ref))
    argv = ["rank", str(SAMPLE), "-c", "text", "-m", f"mine=vectors:{tmp_path / 'v.npy'},tfidf-svd", "--metrics",
            "task_prior", "-q", "--cache-dir", str(tmp_path / "c")]
    for run in ("first", "again"):  # the baseline embedded, then read from the cache
        assert main(argv) == 0
        header, _, *rows = capsys.readouterr().out.splitlines()
        cells = {row.split()[1]: row.split()[header.split().index("cached")] for row in rows[:2]}
        assert cells == {"mine": "-", "tfidf-svd": "no" if run == "first" else "yes"}, (header, rows)
    assert main([*argv, "--json", "--out", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {c["name"]: c["cached"] for c in doc["candidates"]} == {"mine": None, "tfidf-svd": True}
    r = Ranking.from_json((tmp_path / "r.json").read_text())
    assert r["mine"].cached is None and r["tfidf-svd"].cached is True
    assert r.to_pandas().loc["mine", "cached"] is None
    assert main(["embed", str(SAMPLE), "-c", "text", "-m", f"mine=vectors:{tmp_path / 'v.npy'},tfidf-svd", "--json",
                 "-q", "--cache-dir", str(tmp_path / "c")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["name"]: row["cached"] for row in rows} == {"mine": None, "tfidf-svd": True}


@pytest.mark.fault
def test_an_id_given_twice_is_refused_not_overwritten(tmp_path, ref):
    """ids= with an id twice kept the last row for it and ranked (the first vector silently dropped), and a mapping
    with 1 and "1" failed with "'<' not supported between instances of 'str' and 'int'"; both are refused naming the
    ids, as a Parquet file's repeated ids are."""
    vecs = _vectors_for(ref)
    twice = np.vstack([vecs, vecs[:1] + 1.0])
    with pytest.raises(PrecomputedVectorsError, match=r"candidate 'mine': ids '1' appear more than once"):
        Candidate.from_vectors("mine", twice, ids=[*ref.ids, "1"])
    mapping: dict = {int(i): v for i, v in zip(ref.ids, vecs)}
    mapping["1"] = vecs[0]
    with pytest.raises(PrecomputedVectorsError, match=r"candidate 'mine': ids '1' appear more than once"):
        Candidate.from_vectors("mine", mapping)
    ints = Candidate.from_vectors("mine", {int(i): v for i, v in zip(ref.ids, vecs)})  # ints alone are ids
    out = precomputed_vectors(ints.vectors, name="mine", ids=ref.ids, positions=None, n_source=len(ref))
    np.testing.assert_array_equal(out, vecs)


@pytest.mark.fault
def test_vectors_that_are_not_flat_lists_of_numbers_are_refused_naming_the_ids(tmp_path, ref):
    """A Parquet file whose vectors hold text failed with numpy's "could not convert string to float: 'a'" (no
    candidate, a ValueError), and one whose vectors are 2 x 2 lists was ranked as 4-wide vectors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kw = dict(name="mine", ids=ref.ids, positions=None, n_source=len(ref))
    vecs = _vectors_for(ref).tolist()
    text = [list(v) for v in vecs]
    text[3] = ["a"] * WIDTH
    pq.write_table(pa.table({"id": ref.ids, "vector": [[str(x) for x in v] for v in text]}), tmp_path / "s.parquet")
    with pytest.raises(PrecomputedVectorsError, match=r"candidate 'mine': 240 of 240 vectors are not lists of numbers "
                                                      r"\(ids '1', '2', '3', '4', '5' and 235 more\)"):
        precomputed_vectors(tmp_path / "s.parquet", **kw)
    nested = {i: np.reshape(v, (2, WIDTH // 2)) for i, v in zip(ref.ids, vecs)}
    with pytest.raises(PrecomputedVectorsError, match=r"240 of 240 vectors are not flat lists of numbers"):
        precomputed_vectors(nested, **kw)
    one = {i: np.asarray(v) for i, v in zip(ref.ids, vecs)}
    one["9"] = "oops"
    with pytest.raises(PrecomputedVectorsError, match=r"1 of 240 vectors are not lists of numbers \(ids '9'\)"):
        precomputed_vectors(one, **kw)


@pytest.mark.fault
def test_a_parquet_file_much_larger_than_the_data_converts_only_the_items_rows(tmp_path, ref):
    """A vector store's export holds far more rows than the data sample: every vector of the file became a Python
    list (a 300 MB file of 200 000 x 384 vectors took 4.4 GB of memory and 68 s for 300 items); only the rows of the
    data's items are converted now (the Python objects made are measured: Arrow's own buffers are not traced)."""
    import tracemalloc

    import pyarrow as pa
    import pyarrow.parquet as pq

    vecs = _vectors_for(ref)
    extra = 40_000
    ids = [*ref.ids, *(f"x{i}" for i in range(extra))]
    rows = np.vstack([vecs, np.ones((extra, WIDTH), dtype=np.float32)])
    pq.write_table(pa.table({"id": ids, "vector": list(rows)}), tmp_path / "big.parquet")
    tracemalloc.start()
    try:
        out = precomputed_vectors(tmp_path / "big.parquet", name="mine", ids=ref.ids, positions=None,
                                  n_source=len(ref))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out, vecs)
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"  # every row as lists of floats: about 20 MiB
