"""Which rows one sufficiency estimate reads: the seeded train / validation / test splits, the minibatch schedule,
the rows the marginals' EM fits and the standardisation read, and the rows held in memory for them (all int64 row
ids)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embedselect.metrics.sufficiency.settings import SufficiencySettings, derive_seed


def splits(n: int, st: SufficiencySettings, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint (train, val, test) row indices (int64, sorted), drawn from ``seed``."""
    perm = np.random.default_rng(derive_seed(seed, "split", n)).permutation(n)
    n_test, n_val = split_sizes(n, st)
    test, val, train = perm[:n_test], perm[n_test : n_test + n_val], perm[n_test + n_val :]
    return np.sort(train), np.sort(val), np.sort(test)


def split_sizes(n: int, st: SufficiencySettings) -> tuple[int, int]:
    """Rows in the (test, validation) splits of n items."""
    return (min(max(int(round(st.test_fraction * n)), 10), st.max_test_items),
            min(max(int(round(st.val_fraction * n)), 10), st.max_val_items))


def held_rows(n: int, *used: np.ndarray) -> np.ndarray | None:
    """The sorted distinct row ids (int64) in the ``used`` index arrays, or None when that is every one of the n rows
    (the estimate then indexes the full matrices by row id)."""
    held = np.unique(np.concatenate([np.ravel(u) for u in used]))
    return None if len(held) == n else held


def repeat_count(n: int, st: SufficiencySettings) -> int:
    """How many seeds' estimates over n items are averaged (:meth:`SufficiencySettings.repeats` of n's test split)."""
    return st.repeats(split_sizes(n, st)[0])


@dataclass
class Rows:
    """The rows one estimate reads (int64 row ids; ``*_h`` and the schedule / EM rows as positions in ``held``
    when ``held`` is not None; ``*_h`` are the splits themselves when it is None; ``prep``, the training rows the
    standardisation and principal axes read, always row ids of the full matrix) and the effective settings for its
    training rows."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    eff: dict[str, int]
    schedule: np.ndarray
    em_rows: np.ndarray
    prep: np.ndarray
    held: np.ndarray | None
    val_h: np.ndarray
    test_h: np.ndarray


def plan_rows(n: int, st: SufficiencySettings, seed: int) -> Rows:
    """Splits, minibatch schedule, EM rows and the rows held."""
    from embedselect.metrics.sufficiency import knife

    train, val, test = splits(n, st, seed)
    eff = st.effective(len(train))
    # the rows the estimate reads: the training schedule's (steps x batch rows, independent of n), the held-out
    # splits and the marginals' EM rows. Each candidate's prepared matrices hold only those (all n for n up to a
    # few hundred thousand at the default settings; bounded above that, so that the candidates held together for
    # the batched training do not grow with n). Standardisation and principal axes read at most prep_max_items
    # training rows, the marginals' EM fits at most marginal_max_items (each a seeded sample of the training rows).
    schedule = knife.batch_schedule(train, st.batch_size, st.max_steps, derive_seed(seed, "batches", n))
    em_rows = sample_rows(train, st.marginal_max_items, derive_seed(seed, "em-rows", n))
    prep = sample_rows(train, st.prep_max_items, derive_seed(seed, "prep-rows", n))
    held = held_rows(n, schedule, val, test, em_rows)
    val_h, test_h = val, test  # read only when held is not None
    if held is not None:  # positions in the held rows
        schedule, val_h, test_h, em_rows = (np.searchsorted(held, a) for a in (schedule, val, test, em_rows))
    return Rows(train, val, test, eff, schedule, em_rows, prep, held, val_h, test_h)


def sample_rows(train: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """``train`` itself when it holds at most ``cap`` rows, else a sorted seeded sample of ``cap`` of them (int64)."""
    if len(train) <= cap:
        return train
    return np.sort(np.random.default_rng(seed).choice(train, cap, replace=False))


__all__ = ["Rows", "held_rows", "plan_rows", "repeat_count", "sample_rows", "split_sizes", "splits"]
