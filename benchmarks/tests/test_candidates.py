"""The pools' candidates of benchmarks/candidates.py: every candidate has a producer or is derived, and each family's
copies name their parent."""

from __future__ import annotations

import numpy as np

from benchmarks.candidates import E5, GLOVE, IMAGE_POOL, POOLS, TEXT_POOL, USE, derive, producers_for


def _rng(seed=0):
    return np.random.default_rng(seed)


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


def test_the_other_text_families_are_independent_models_with_copies_of_their_own():
    text = {c.name: c for c in TEXT_POOL}
    for model in (E5, USE, GLOVE):
        assert text[model].parent is None and text[model].base_model
    assert text[E5 + "-first128"].parent == E5 and text[E5 + "-first128"].relation == "truncated"
    assert text[E5 + "-int8"].parent == E5 and text[E5 + "-int8"].relation == "quantized-int8"
    assert derive(E5 + "-first128", _rng().normal(size=(4, 384))).shape == (4, 128)
