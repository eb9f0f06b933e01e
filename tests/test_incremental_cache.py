"""The cache embeds only what is new (issue 44, item 4): vectors are stored per item content under (model, revision,
options), so a run over a superset, a sub-sample or another seed of the same data embeds only the items no earlier
run embedded; each candidate's record says how many items it embedded and how many it read from the cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

import embedselect
from embedselect.data import ReferenceData, sample_path
from embedselect.models.candidates import Candidate
from embedselect.store import Store
from testkit import tinymodels as tm

SAMPLE = sample_path("texts")

pytestmark = pytest.mark.usefixtures("one_thread")


class Counting:
    """An embedder object (``encode(items, batch_size)``) that counts the items it embedded: a deterministic
    function of each text alone (a seeded random vector per word, summed), float32 (n, 8)."""

    def __init__(self) -> None:
        self.items = 0

    def encode(self, items, batch_size):
        self.items += len(items)
        out = np.zeros((len(items), 8), dtype=np.float32)
        for i, text in enumerate(items):
            for w in text.lower().split():
                out[i] += np.random.default_rng(abs(hash(w)) % 2**32).normal(size=8).astype(np.float32)
        return out + 1.0


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return list(ReferenceData.load(SAMPLE, column="text").items)


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    return tm.make_tiny_sentence_transformer(tmp_path_factory.mktemp("inc") / "tiny-st")


@pytest.fixture
def st_count(monkeypatch):
    """Counts the texts every SentenceTransformer.encode call is given in this test."""
    from sentence_transformers import SentenceTransformer

    seen = {"items": 0}
    real = SentenceTransformer.encode

    def counting(self, sentences, *a, **kw):
        seen["items"] += 1 if isinstance(sentences, str) else len(sentences)
        return real(self, sentences, *a, **kw)

    monkeypatch.setattr(SentenceTransformer, "encode", counting)
    return seen


def _counts(outcomes) -> dict[str, tuple[int | None, int | None]]:
    return {o.result.name: (o.result.embedded_items, o.result.stored_items) for o in outcomes}


def test_superset_embeds_only_the_new_items_and_a_subsample_none(cache_dir, texts, tiny_st, st_count):
    enc = Counting()
    cands = lambda: [Candidate(name="enc", embedder=enc, revision="v1"), str(tiny_st), "tfidf-svd"]  # noqa: E731
    first = embedselect.embed(texts[:200], cands(), batch_size=32, keep_vectors=True)
    assert all(o.result.ok for o in first), [o.result.failure_note for o in first]
    st_name = first[1].result.name
    assert _counts(first) == {"enc": (200, 0), st_name: (200, 0), "tfidf-svd": (200, 0)}
    assert enc.items == 200 and st_count["items"] == 200

    second = embedselect.embed(texts, cands(), batch_size=32, keep_vectors=True)  # 40 new items at the end
    assert _counts(second) == {"enc": (40, 200), st_name: (40, 200), "tfidf-svd": (240, 0)}  # a fit: whole
    assert enc.items == 240 and st_count["items"] == 240
    for a, b in zip(first[:2], second[:2]):  # the rows read from the cache are the rows the first run stored
        assert np.array_equal(np.asarray(a.vectors), np.asarray(b.vectors)[:200])
    fresh = Counting().encode(texts, 32)
    assert np.allclose(np.asarray(second[0].vectors), fresh, atol=1e-6)  # and the new rows are in their places

    again = embedselect.embed(texts, cands(), batch_size=32)  # the same data: the run's own file
    assert _counts(again)["enc"] == (0, 240) and again[0].result.cached

    # a sub-sample with another seed of the same file: all its items are stored (its tfidf-svd is fitted anew)
    r = embedselect.select(SAMPLE, cands(), column="text", max_items=150, seed=7, metrics=["task_prior"],
                           batch_size=32)
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert (r["enc"].embedded_items, r["enc"].stored_items, r["enc"].cached) == (0, 150, True)
    assert (r[st_name].embedded_items, r[st_name].stored_items) == (0, 150)
    assert (r["tfidf-svd"].embedded_items, r["tfidf-svd"].stored_items) == (150, 0)
    assert enc.items == 240 and st_count["items"] == 240  # nothing embedded again
    record = {c["name"]: c for c in json.loads(r.to_json())["candidates"]}
    assert (record["enc"]["embedded_items"], record["enc"]["stored_items"]) == (0, 150)
    assert (record["tfidf-svd"]["embedded_items"], record["tfidf-svd"]["stored_items"]) == (150, 0)
    assert list(r.to_pandas().loc[["enc", "tfidf-svd"], "embedded_items"]) == [0, 150]


def test_a_candidate_without_a_revision_stays_run_only(cache_dir, texts):
    enc = Counting()
    for _ in range(2):
        out = embedselect.embed(texts[:50], [Candidate(name="loose", embedder=enc)])
        assert _counts(out) == {"loose": (50, 0)} and out[0].result.cache_scope == "run"
    assert enc.items == 100
    assert Store.open(cache_dir).query_df("SELECT count(*) AS n FROM item_vectors").n[0] == 0


@pytest.mark.fault
@pytest.mark.parametrize("hook", ["_insert_index", "fsync_dir"])
def test_a_kill_between_the_vectors_and_the_index_leaves_a_cache_the_next_run_reads(cache_dir, texts, monkeypatch,
                                                                                   hook):
    """Killed after the vectors were written and fsynced, with the index rows being inserted (``_insert_index``)
    or with the file renamed into place and the transaction not yet committed (``fsync_dir``)."""
    import embedselect.store.vectors as sv

    enc = Counting()
    cand = lambda: [Candidate(name="enc", embedder=enc, revision="v1")]  # noqa: E731
    embedselect.embed(texts[:100], cand())

    def die(*a, **kw):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(sv, hook, die)
        with pytest.raises(KeyboardInterrupt):
            embedselect.embed(texts[:160], cand())
    assert enc.items == 160
    store = Store.open(cache_dir)
    assert len(store.list_runs()) == 1  # the killed run left no row, and no index rows
    assert store.query_df("SELECT count(DISTINCT run_key) AS n FROM item_vectors").n[0] == 1
    assert store.gc() == (1 if hook == "fsync_dir" else 0)  # a file renamed into place without its row: swept

    out = embedselect.embed(texts[:160], cand(), keep_vectors=True)
    assert _counts(out) == {"enc": (60, 100)} and enc.items == 220  # the killed run's 60 items: embedded again
    assert np.allclose(np.asarray(out[0].vectors), Counting().encode(texts[:160], 32), atol=1e-6)
    assert len(store.list_runs()) == 2 and store.gc() == 0


@pytest.mark.fault
def test_a_damaged_source_file_is_discarded_and_its_items_embedded_again(cache_dir, texts, caplog):
    enc = Counting()
    cand = lambda: [Candidate(name="enc", embedder=enc, revision="v1")]  # noqa: E731
    first = embedselect.embed(texts[:100], cand())
    store = Store.open(cache_dir)
    path = cache_dir / store.get_run(first[0].result.run_key).vector_file
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0xFF  # one flipped byte in the last vector: the checksum fails
    path.write_bytes(bytes(raw))
    out = embedselect.embed(texts[:120], cand(), keep_vectors=True)
    assert _counts(out) == {"enc": (120, 0)} and enc.items == 220
    assert any("checksum mismatch" in m for m in caplog.messages)
    assert np.allclose(np.asarray(out[0].vectors), Counting().encode(texts[:120], 32), atol=1e-6)
    assert store.get_run(first[0].result.run_key) is None


def test_gc_and_rm_keep_the_index_in_step_with_the_runs(cache_dir, texts):
    enc = Counting()
    cand = lambda: [Candidate(name="enc", embedder=enc, revision="v1")]  # noqa: E731
    a = embedselect.embed(texts[:80], cand())[0].result.run_key
    b = embedselect.embed(texts[:120], cand())[0].result.run_key
    store = Store.open(cache_dir)
    rows = lambda: dict(store.query_df(  # noqa: E731
        "SELECT run_key, count(*) AS n FROM item_vectors GROUP BY run_key").itertuples(index=False))
    assert rows() == {a: 80, b: 120}
    orphan = store.vectors_dir / "ab" / ("ab" + "0" * 62 + ".npy")  # a file of the store's naming, no row
    orphan.parent.mkdir(exist_ok=True)
    np.save(orphan, np.zeros((2, 2), dtype=np.float32))
    assert store.gc() == 1 and not orphan.exists() and rows() == {a: 80, b: 120}
    assert store.delete_runs([b]) == 1 and rows() == {a: 80}
    out = embedselect.embed(texts[:120], cand())  # b's 40 items are gone with it; a's 80 are still stored
    assert _counts(out) == {"enc": (40, 80)}


def test_a_run_stored_before_the_index_joins_it_when_read(cache_dir, texts):
    enc = Counting()
    cand = lambda: [Candidate(name="enc", embedder=enc, revision="v1")]  # noqa: E731
    key = embedselect.embed(texts[:90], cand())[0].result.run_key
    with Store.open(cache_dir)._write() as con:  # what an embedselect of schema version 2 wrote: no index table
        con.execute("DROP TABLE item_vectors")
        con.execute("DELETE FROM schema_history WHERE version = 3")
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    store = Store.open(cache_dir)  # migrated to version 3 on its first connection, with an empty index
    assert store.query_df("SELECT count(*) AS n FROM item_vectors").n[0] == 0
    assert _counts(embedselect.embed(texts[:90], cand())) == {"enc": (0, 90)}  # read by its run key, indexed
    assert store.query_df("SELECT count(*) AS n FROM item_vectors WHERE run_key = ?", [key]).n[0] == 90
    assert _counts(embedselect.embed(texts[:100], cand())) == {"enc": (10, 90)} and enc.items == 100


def test_the_rank_table_says_how_many_items_came_from_the_cache(cache_dir, texts):
    """A run over a superset of earlier data embeds only the new items; the table's ``cached`` column said ``no`` for
    it (as for a candidate embedded whole), so the rank table never showed the reuse: it says ``200/240``."""
    from embedselect.cli.format import format_table

    enc = Counting()
    cands = lambda: [Candidate(name="enc", embedder=enc, revision="v1"), "random-projection"]  # noqa: E731
    embedselect.embed(texts[:200], cands())
    r = embedselect.select(texts, cands(), metrics=["task_prior"], save=False)
    assert (r["enc"].embedded_items, r["enc"].stored_items, r["enc"].cached) == (40, 200, False)
    rows = {line.split()[1]: line.split() for line in format_table(r).splitlines()[2:4]}
    header = format_table(r).splitlines()[0].split()
    assert rows["enc"][header.index("cached")] == "200/240"
    again = embedselect.select(texts, cands(), metrics=["task_prior"], save=False)
    assert {line.split()[1]: line.split()[header.index("cached")] for line in format_table(again).splitlines()[2:4]} \
        == {"enc": "yes", "random-projection": "yes"}
