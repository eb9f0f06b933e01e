"""The search check's query (and document-prompt) vectors are cached like reference embeddings (issue 43): keyed by
model, revision, options and the texts' content, so a second ``select(queries=)`` embeds no query again and loads no
model, a run over one more query embeds only that one, and an entry that was not completely written is never read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embedselect.store import Store
from testkit.tinymodels import make_tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("one_thread")

WORDS = "cat dog car bank money river water tree house city food sun moon sky rain snow book music game".split()


def _texts(n: int = 40) -> list[str]:
    return [f"the {WORDS[i % len(WORDS)]} and a {WORDS[(3 * i + 1) % len(WORDS)]} number {i}" for i in range(n)]


@pytest.fixture
def encoded(monkeypatch):
    """Every text any SentenceTransformer.encode call of this test was given, and how often a model was loaded."""
    from sentence_transformers import SentenceTransformer

    import embedselect.models.backends.loader as loader

    seen: dict[str, list] = {"texts": [], "loads": []}
    real_encode, real_load = SentenceTransformer.encode, loader.load_embedder

    def encode(self, sentences, *a, **kw):
        seen["texts"].extend([sentences] if isinstance(sentences, str) else list(sentences))
        return real_encode(self, sentences, *a, **kw)

    def load(rc, *a, **kw):
        seen["loads"].append(rc.model_id)
        return real_load(rc, *a, **kw)

    monkeypatch.setattr(SentenceTransformer, "encode", encode)
    monkeypatch.setattr(loader, "load_embedder", load)
    return seen


def _case(tmp_path, n_queries: int = 6):
    items = _texts()
    data = tmp_path / "docs.csv"
    pd.DataFrame({"text": items}).to_csv(data, index=False)
    rows = [{"query": f"which {WORDS[i]} is it", "relevant": str(i + 1)} for i in range(n_queries)]
    queries = tmp_path / f"q{n_queries}.csv"
    pd.DataFrame(rows).to_csv(queries, index=False)
    return data, queries, items


def _run(data, queries, cands, cache_dir):
    from embedselect.pipeline import select

    r = select(data, cands, column="text", queries=queries, metrics=["rankme"], cache_dir=cache_dir)
    assert all(c.status == "ok" for c in r.candidates), [(c.name, c.error) for c in r.candidates]
    return r.retrieval


@pytest.mark.slow
def test_a_second_search_check_embeds_no_query_and_loads_no_model(tmp_path, cache_dir, encoded):
    data, queries, items = _case(tmp_path)
    plain = make_tiny_sentence_transformer(tmp_path / "plain", seed=0)
    prompted = make_tiny_sentence_transformer(tmp_path / "prompted", seed=1,
                                              prompts={"query": "sky sky ", "passage": "moon "})
    cands = [f"plain={plain}", f"prompted={prompted}", "tfidf-svd"]
    first = _run(data, queries, cands, cache_dir)
    # the items twice (each model), the queries twice, the documents once more with the passage prompt
    assert len(encoded["texts"]) == 2 * len(items) + 2 * 6 + len(items)
    assert first["prompts"]["prompted"] == {"query": "query", "document": "passage"}

    encoded["texts"].clear(), encoded["loads"].clear()
    second = _run(data, queries, cands, cache_dir)
    assert encoded["texts"] == [] and encoded["loads"] == []  # nothing embedded, no model (nor tfidf fit) loaded
    assert second["scores"] == first["scores"] and second["prompts"] == first["prompts"]

    _, seven, _ = _case(tmp_path, n_queries=7)  # one query more: only it is embedded, by each model
    third = _run(data, seven, cands, cache_dir)
    assert encoded["texts"] == [f"which {WORDS[6]} is it"] * 2
    for name in ("plain", "prompted"):  # the six stored queries' vectors are the ones embedded again would give
        assert third["scores"][name]["n_queries"] == 7


def test_query_vectors_from_the_cache_equal_fresh_ones(tmp_path, cache_dir, encoded):
    from embedselect.pipeline.query_vectors import ROLE_OPTION

    data, queries, _ = _case(tmp_path)
    model = make_tiny_sentence_transformer(tmp_path / "m", seed=2, prompts={"query": "rain "})
    _run(data, queries, [f"m={model}", "random-projection"], cache_dir)
    store = Store.open(cache_dir)
    runs = store.list_runs()
    query_runs = [k for k in runs.run_key if ROLE_OPTION in str(store.get_run(k).settings) or
                  "role_prompts" in store.get_run(k).settings]
    assert len(query_runs) == 2  # the model's and the random projection's queries
    from sentence_transformers import SentenceTransformer

    fresh = SentenceTransformer(str(model), device="cpu").encode(
        [f"which {WORDS[i]} is it" for i in range(6)], prompt_name="query")
    stored = [store.load_vectors(k) for k in query_runs]
    assert any(v.shape == fresh.shape and np.allclose(v, fresh, atol=1e-5) for v in stored)


@pytest.mark.fault
def test_a_half_written_query_entry_is_never_read_back(tmp_path, cache_dir, encoded, monkeypatch):
    """Killed with the query vectors' file renamed into place and its row not committed: the next run finds no
    entry, embeds the queries again and scores them as a run that was never killed."""
    import embedselect.store.vectors as sv

    data, queries, _ = _case(tmp_path)
    model = make_tiny_sentence_transformer(tmp_path / "m", seed=3)
    cands = [f"m={model}"]
    from embedselect.pipeline import select

    select(data, cands, column="text", metrics=["rankme"], cache_dir=cache_dir)  # the items' vectors stored
    store = Store.open(cache_dir)
    assert len(store.list_runs()) == 1

    def die(*a, **kw):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(sv, "fsync_dir", die)
        with pytest.raises(KeyboardInterrupt):
            _run(data, queries, cands, cache_dir)
    assert len(store.list_runs()) == 1  # no row for the queries
    assert store.gc() == 1  # their file, renamed into place without its row, is swept

    encoded["texts"].clear()
    again = _run(data, queries, cands, cache_dir)
    assert len(encoded["texts"]) == 6  # the queries embedded again, nothing read from the killed write
    clean = _run(data, queries, cands, tmp_path / "clean-cache")
    assert again["scores"] == clean["scores"]


@pytest.mark.fault
def test_a_damaged_query_entry_is_discarded_and_embedded_again(tmp_path, cache_dir, encoded, caplog):
    data, queries, _ = _case(tmp_path)
    model = make_tiny_sentence_transformer(tmp_path / "m", seed=4)
    cands = [f"m={model}"]
    first = _run(data, queries, cands, cache_dir)
    store = Store.open(cache_dir)
    key = next(k for k in store.list_runs().run_key if "role_prompts" in store.get_run(k).settings)
    path = cache_dir / store.get_run(key).vector_file
    path.write_bytes(path.read_bytes()[:-16])  # a file cut short
    encoded["texts"].clear()
    second = _run(data, queries, cands, cache_dir)
    assert len(encoded["texts"]) == 6 and "discarding cached run" in caplog.text
    assert second["scores"] == first["scores"]
