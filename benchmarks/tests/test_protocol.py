"""The selection / confirmation protocol's harness (benchmarks/protocol.py) on synthetic views."""

import hashlib

import pytest

from benchmarks.protocol import PARAMS, half, halves, params_of, read_view, unread_views
from benchmarks.sets.registry import DATASETS


def test_the_split_is_the_hash_rule_and_covers_every_dataset():
    split = halves()
    listed = [n for h in split.values() for names in h.values() for n in names]
    assert sorted(listed) == sorted(DATASETS)
    for n in DATASETS:
        even = int(hashlib.sha256(n.encode()).hexdigest()[0], 16) % 2 == 0
        assert half(n) == ("selection" if even else "confirmation")
    # the halves written in docs/validity.md ("## Protocol")
    assert split["confirmation"]["text"] == ["aiml-topics", "amazon-reviews", "analogy", "car-origins",
                                             "chatterbot-languages", "city-continents", "convention-2012",
                                             "debates-2016", "django-messages", "hamlet-speakers", "icd10-chapters",
                                             "inquirer-domains", "moral-foundations", "nrc-emotion", "polarity",
                                             "pylint-messages", "quote-sources", "review-subjectivity", "roget-heads",
                                             "sms-spam", "whissell-imagery"]
    assert split["selection"]["text"] == ["bible-genres", "census-names", "chatterbot-topics", "editorial-sentiment",
                                          "emoji", "empath", "entity-types", "food-kinds", "fortune-topics",
                                          "mimesis-fields", "movie-genres", "snippet-genre", "stdlib-domains", "trec",
                                          "tweet-sentiment", "vader", "warriner-arousal", "word-classes",
                                          "wordnet-domains", "wordnet-glosses"]
    assert split["confirmation"]["image"] == ["mnist-5k", "photo-patches", "sample-photos"]


ENTRIES = [
    {"name": "all-mpnet-base-v2", "parent": None, "kind": "transformer", "dims": 768},
    {"name": "all-mpnet-base-v2-first64", "parent": "all-mpnet-base-v2", "relation": "truncated", "dims": 64},
    {"name": "all-MiniLM-L6-v2", "parent": None, "kind": "transformer", "dims": 384},
    {"name": "all-MiniLM-L6-v2-cls", "parent": "all-MiniLM-L6-v2", "relation": "pooling", "dims": 384},
    {"name": "e5", "parent": None, "kind": "transformer", "dims": 1024},
    {"name": "tfidf-svd", "parent": None, "kind": "baseline", "dims": 256},
    {"name": "random-projection", "parent": None, "kind": "baseline", "dims": 256},
]


def test_params_follow_the_parent_chain_and_baselines_count_zero():
    by = {e["name"]: e for e in ENTRIES}
    assert params_of(by["all-mpnet-base-v2-first64"], ENTRIES) == PARAMS["all-mpnet-base-v2"]
    assert params_of(by["tfidf-svd"], ENTRIES) == 0.0
    with pytest.raises(SystemExit, match="e5"):
        params_of(by["e5"], ENTRIES)


def test_a_view_is_read_as_select_combines_it():
    entries = [e for e in ENTRIES if e["name"] != "e5"]
    truth = {"all-mpnet-base-v2": 0.80, "all-mpnet-base-v2-first64": 0.70, "all-MiniLM-L6-v2": 0.75,
             "all-MiniLM-L6-v2-cls": 0.72, "tfidf-svd": 0.60, "random-projection": 0.30}
    # both signals put MiniLM first: the pick is 0.05 below the best, but two model families cannot be separated
    signals = {"s1": {"all-MiniLM-L6-v2": 3.0, "all-MiniLM-L6-v2-cls": 2.5, "all-mpnet-base-v2": 2.0,
                      "all-mpnet-base-v2-first64": 1.0, "tfidf-svd": 0.0, "random-projection": -1.0}}
    signals["s2"] = dict(signals["s1"])
    view = {"truth": truth, "signals": signals, "entries": entries,
            "pairs": [("all-mpnet-base-v2-first64", "all-mpnet-base-v2")]}
    r = read_view(view, {"s1": 1.0, "s2": 1.0}, "mean-rank")
    assert r["regret"] == pytest.approx(0.05)
    assert not r["decided"] and not r["wrong"] and r["best_in_leaders"]
    assert r["leaders"] == ["all-MiniLM-L6-v2", "all-mpnet-base-v2"]
    assert r["params"]["regret"] == 0.0 and r["params"]["rho"] > 0.5  # the larger model is the better one here
    assert r["width"]["regret"] == 0.0
    assert -1.0 <= r["tau"] <= 1.0 and r["tau"] < r["rho"]


def test_every_text_and_image_candidate_has_a_parameter_count():
    from benchmarks.candidates import POOLS as CANDIDATES

    for pool in CANDIDATES.values():
        entries = [{"name": c.name, "kind": c.kind, "parent": c.parent} for c in pool]
        for e in entries:
            assert params_of(e, entries) >= 0.0
    assert PARAMS["multilingual-e5-small"] > PARAMS["all-mpnet-base-v2"] > PARAMS["use-multilingual-3"]


def test_read_view_asks_the_witnesses_it_is_given():
    entries = [e for e in ENTRIES if e["name"] in ("all-mpnet-base-v2", "all-MiniLM-L6-v2", "tfidf-svd",
                                                   "random-projection")]
    entries = entries + [{"name": "use-multilingual-3", "parent": None, "kind": "transformer", "dims": 512}]
    truth = {"all-mpnet-base-v2": 0.70, "all-MiniLM-L6-v2": 0.80, "use-multilingual-3": 0.75, "tfidf-svd": 0.6,
             "random-projection": 0.3}
    first = {"all-mpnet-base-v2": 3.0, "all-MiniLM-L6-v2": 2.0, "use-multilingual-3": 1.0, "tfidf-svd": 0.0,
             "random-projection": -1.0}
    nn = {"all-MiniLM-L6-v2": 0.9, "all-mpnet-base-v2": 0.8, "use-multilingual-3": 0.7, "tfidf-svd": 0.0,
          "random-projection": 0.0}
    view = {"truth": truth, "signals": {"s1": first, "s2": first, "nn_agreement": nn}, "entries": entries, "pairs": []}
    plain = read_view(view, {"s1": 1.0, "s2": 0.25}, "mean-rank", witnesses=())
    assert plain["decided"] and plain["wrong"] and plain["leaders"] == ["all-mpnet-base-v2"]
    asked = read_view(view, {"s1": 1.0, "s2": 0.25}, "mean-rank", witnesses=("nn_agreement",))
    assert not asked["decided"] and not asked["wrong"] and asked["best_in_leaders"]
    assert asked["leaders"] == ["all-mpnet-base-v2", "all-MiniLM-L6-v2"]
    assert asked["rho"] == plain["rho"] and asked["top"] == plain["top"]  # the order does not move


def test_a_built_view_that_was_not_read_is_named(tmp_path, monkeypatch):
    """A view whose pool is built but whose signals are not cached for the current code is named, not dropped in
    silence (the third round's views were, until SAME_RESULTS listed the code version that scored them)."""
    import json

    from benchmarks.named_pools import POOLS

    monkeypatch.setenv("EMBEDSELECT_BENCH_CACHE", str(tmp_path))
    built = tmp_path / "pools" / "some-set"
    built.mkdir(parents=True)
    built.joinpath("candidates.json").write_text(json.dumps([{"name": n} for n in POOLS["two-models"]]))
    read = [{"dataset": "some-set", "pool": "two-models"}]
    assert unread_views(["some-set"], ["two-models", "issue8"], []) == ["some-set/two-models"]
    assert unread_views(["some-set"], ["two-models", "issue8"], read) == []  # issue8 is not built here
