"""Information sufficiency's estimator settings, code version, derived seeds and pair/marginal cache keys."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embedselect.errors import ConfigError
from embedselect._util.kinds import PAIR_KEY_PREFIX

_HERE = Path(__file__).parent
_CODE_FILES: tuple[Path, ...] = (
    _HERE / "score.py", _HERE / "rows.py", Path(__file__), _HERE / "result.py",
    *sorted((_HERE / "knife").glob("*.py")), _HERE.parent / "normal_scores.py",
)
"""Source files whose code decides a cached pair or marginal: a change to any invalidates the cache."""


def code_version() -> str:
    """sha256 (hex, 16 chars) of the estimator's source (:data:`_CODE_FILES`), part of every pair and marginal
    cache key, as the code hash is for the metric cache: a fix in the knife package never reuses old pair results."""
    h = hashlib.sha256()
    for path in _CODE_FILES:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class SufficiencySettings:
    """Estimator settings (all part of the cache key).

    Attributes:
        n_components: mixture components C for both the marginal and the conditional (paper: 8 for text).
        hidden: width of the conditional's hidden layer.
        source_pcs: the source enters through its top principal components (whitened); lossless when
            the source has at most this many dimensions.
        target_pcs: the conditional shifts means and scales of the target's top principal coordinates;
            the others keep the marginal's components with u-dependent weights and one scale shift.
        batch_size: rows per optimiser step (all pairs see the same rows).
        learning_rate: Adam step size.
        max_steps: most optimiser steps per pair (independent of n).
        eval_every: steps between held-out evaluations (early-stopping checks).
        patience: evaluations without validation improvement before a pair stops.
        val_fraction / test_fraction: share of rows held out for early stopping / for the estimate.
        max_val_items / max_test_items: caps on those splits (large n needs no more).
        marginal_max_items: most training rows used by the EM fit of a marginal.
        prep_max_items: most training rows whose statistics standardise each candidate and rotate it to its
            principal axes (a seeded sample above that; the training itself still draws its minibatches from every
            training row). Reading every training row for them costs 12 s per candidate at 10^6 x 384 on 2 CPU
            cores, 2.3 s at 100 000 (docs/benchmarks.md, "Information sufficiency").
        rows_per_pc: small-n rule: at most max(min_pcs, n_train / rows_per_pc) source PCs and target top
            coordinates (40: below about 5 000 training rows the conditional's inputs and shifted coordinates are
            capped; with 10, most pairs at 300-1 000 items overfit before their first evaluation and stopped
            at step 0, IS = 0; docs/sufficiency.md, "Small n (the small-n rule)").
        min_pcs: floor of that cap.
        rows_per_component: small-n rule: at most n_train / rows_per_component mixture components.
        eval_epochs: small-n rule: evaluate at least every ``eval_epochs`` passes over the training rows.
        min_steps: early stopping counts evaluations without improvement only after this many steps.
        max_repeats / repeat_test_rows: small-n rule for the seed noise: the estimate is repeated under that many
            seeds (each its own splits, minibatch order and initial weights; :func:`repeat_seeds`) and the matrices
            averaged, as many times as it takes for the test splits to hold ``repeat_test_rows`` rows in all, at most
            ``max_repeats`` (:meth:`repeats`: 5 below 1 248 items, where one test split holds 60 rows at 300; once from
            4 998 items). One estimate at 300 items is the largest seed noise of the combined text ranking
            (docs/sufficiency.md, "Averaged estimates at small n"). Neither is part of a pair's cache key: a repeat is a plain estimate under its
            own seed.
        normal_scores: replace each dimension by the normal scores of its ranks first (seeded ties;
            :func:`~embedselect.metrics.normal_scores.normal_scores`), so point masses (ReLU / max-pool zeros,
            int8 levels) cannot make the estimate unbounded. Off by default until chosen by leave-one-dataset-out.

    The small-n rule (see :meth:`effective`) only bites when the training split is small (for the
    defaults: PC caps below 5 120 training rows, component cap below 512, evaluation interval below
    2 305); it keeps a conditional with more inputs than training rows from
    memorising them, which made every pair stop at step 0 (IS = 0) on a 200-item set.
    """

    n_components: int = 8
    hidden: int = 64
    source_pcs: int = 128
    target_pcs: int = 64
    batch_size: int = 256
    learning_rate: float = 3e-3
    max_steps: int = 1500
    eval_every: int = 50
    patience: int = 4
    val_fraction: float = 0.15
    test_fraction: float = 0.2
    max_val_items: int = 5000
    max_test_items: int = 10000
    marginal_max_items: int = 50000
    prep_max_items: int = 100000
    rows_per_pc: int = 40
    min_pcs: int = 8
    rows_per_component: int = 64
    eval_epochs: int = 5
    min_steps: int = 100
    max_repeats: int = 5
    repeat_test_rows: int = 1000
    normal_scores: bool = False

    def __post_init__(self) -> None:
        ints = ("n_components", "hidden", "source_pcs", "target_pcs", "batch_size", "max_steps", "eval_every", "patience",
                "max_val_items", "max_test_items", "marginal_max_items", "prep_max_items", "rows_per_pc", "min_pcs", "rows_per_component",
                "eval_epochs", "max_repeats", "repeat_test_rows")
        for name in ints:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f"sufficiency option {name} must be a positive integer, got {v!r}")
        v = self.min_steps
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ConfigError(f"sufficiency option min_steps must be a non-negative integer, got {v!r}")
        if not isinstance(self.normal_scores, bool):
            raise ConfigError(f"sufficiency option normal_scores must be true or false, got {self.normal_scores!r}")
        if not (isinstance(self.learning_rate, (int, float)) and 0 < self.learning_rate < 1):
            raise ConfigError(f"sufficiency option learning_rate must be in (0, 1), got {self.learning_rate!r}")
        for name in ("val_fraction", "test_fraction"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v < 0.5):
                raise ConfigError(f"sufficiency option {name} must be in (0, 0.5), got {v!r}")

    def effective(self, n_train: int) -> dict[str, int]:
        """Capacity and evaluation settings actually used for ``n_train`` training rows.

        Returns ``source_pcs``, ``target_pcs`` (each <= max(min_pcs, n_train // rows_per_pc)),
        ``n_components`` (<= max(1, n_train // rows_per_component)) and ``eval_every`` (<= eval_epochs
        passes over the training rows, in optimiser steps). Large n gets the settings unchanged.
        """
        pcs = max(self.min_pcs, n_train // self.rows_per_pc)
        steps_per_epoch = max(1, math.ceil(n_train / self.batch_size))
        return {
            "source_pcs": min(self.source_pcs, pcs),
            "target_pcs": min(self.target_pcs, pcs),
            "n_components": min(self.n_components, max(1, n_train // self.rows_per_component)),
            "eval_every": min(self.eval_every, self.eval_epochs * steps_per_epoch),
        }

    def repeats(self, n_test: int) -> int:
        """How many estimates (seeds) are averaged when one test split holds ``n_test`` rows:
        ``min(max_repeats, ceil(repeat_test_rows / n_test))``, at least 1."""
        return max(1, min(self.max_repeats, math.ceil(self.repeat_test_rows / max(1, n_test))))

    def key(self, seed: int) -> str:
        """Stable hash of the estimator's code (:func:`code_version`), the settings and the seed (hex, 16 chars);
        the repeat settings are not in it (one estimate does not depend on them)."""
        own = {k: v for k, v in dataclasses.asdict(self).items() if k not in REPEAT_FIELDS}
        blob = json.dumps({"v": code_version(), "seed": int(seed), **own}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


REPEAT_FIELDS = ("max_repeats", "repeat_test_rows")
"""The settings that choose how many estimates are averaged, not how one is made."""


def repeat_seeds(seed: int, repeats: int) -> list[int]:
    """The seeds of ``repeats`` averaged estimates: ``seed`` itself first (so one estimate is the plain one, and its
    cached pairs serve both), then seeds derived from it."""
    return [int(seed)] + [derive_seed(seed, "repeat", r) for r in range(1, repeats)]


RUN_OPTIONS = ("batched", "max_batch_bytes")


def derive_seed(*parts: Any) -> int:
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def pair_key(src_id: str, tgt_id: str, skey: str) -> str:
    """``skey`` (:meth:`SufficiencySettings.key`) already holds the code version, the settings and the seed."""
    return PAIR_KEY_PREFIX + hashlib.sha256(f"{src_id}|{tgt_id}|{skey}".encode()).hexdigest()[:40]


def marginal_key(tgt_id: str, skey: str) -> str:
    return "is-marginal:" + hashlib.sha256(f"{tgt_id}|{skey}".encode()).hexdigest()[:40]

