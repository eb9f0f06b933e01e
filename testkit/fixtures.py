"""pytest fixtures used by both tests/ and benchmarks/tests/ (each conftest imports them by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One torch thread for the test: small linear algebra is faster and steadier that way when other work
    shares the cores; the previous setting is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh embedselect cache directory, also exported as EMBEDSELECT_CACHE_DIR."""
    d = tmp_path / "cache"
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(d))
    return d
