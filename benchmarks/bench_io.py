"""Where the benchmark cache lives, and atomic writes into it.

The cache root is ``$EMBEDSELECT_BENCH_CACHE`` (default ``~/.cache/embedselect-bench``). Every file is written to a
temporary name beside its target and renamed into place, so a stopped run never leaves half a file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np


def bench_cache() -> Path:
    return Path(os.environ.get("EMBEDSELECT_BENCH_CACHE", Path.home() / ".cache" / "embedselect-bench"))


def _atomic(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, mode) as fh:
            write(fh)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def save_npy(path: Path, arr: np.ndarray) -> None:
    _atomic(path, lambda fh: np.save(fh, arr, allow_pickle=False))


def save_json(path: Path, obj: Any) -> None:
    _atomic(path, lambda fh: fh.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n"), mode="w")
