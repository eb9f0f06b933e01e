"""Search queries that hold nothing (``embedselect search IDX ""``) are refused with a typed error, exit 2, instead of
returning k hits of a meaningless vector (issue 20)."""

from __future__ import annotations

import pytest

from embedselect.errors import ConfigError
from embedselect.search import SearchIndex, build_index

TEXTS = ["the cat sat on the mat", "a dog runs in the park", "stock prices fell today", "rain and snow tonight",
         "the river bank was green", "music from an old book"]


@pytest.fixture
def index_dir(tmp_path, cache_dir):
    data = tmp_path / "d.txt"
    data.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "idx"
    build_index(data, "random-projection", out=out)
    return out


@pytest.mark.fault
@pytest.mark.parametrize("query", ["", "   ", "\t\n"], ids=["empty", "spaces", "whitespace"])
def test_an_empty_query_is_refused(index_dir, capsys, query):
    from embedselect.cli import main

    assert main(["search", str(index_dir), query]) == 2
    err = capsys.readouterr().err
    assert "query is empty" in err and "text to search for" in err, err
    idx = SearchIndex.load(index_dir)
    with pytest.raises(ConfigError, match="query 2 of 2 is empty"):
        idx.search(["cat", query], k=2)
    assert idx.search(["cat"], k=2)[0][0].item == TEXTS[0]  # a real query still works
