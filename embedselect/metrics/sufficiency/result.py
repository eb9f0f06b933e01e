"""Information sufficiency's result: the IS matrix, median scores, Louvain communities, subsampling notes and the
mean of several seeds' estimates."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from embedselect.metrics.sufficiency.inputs import pool_caveats


@dataclass
class SufficiencyResult:
    """Pairwise information sufficiency of a pool of embedders.

    Attributes:
        matrix: DataFrame (rows = source U, columns = target Z) of IS(U -> Z) in nats per target
            dimension on the test split; the diagonal is NaN, and so is every pair not estimated (when only some
            pairs were: the metric's ``pairs="scored"``).
        scores: candidate -> median over the others of IS(candidate -> other), over the pairs estimated
            (higher = better).
        communities: Louvain communities of the directed IS graph (edge weights max(IS, 0)), each a
            sorted list of candidate names; sorted by size then name. None when not every pair was estimated.
        marginal_entropy: candidate -> H(Z)/dim(Z) on the test split, nats per dimension.
        pairs: per-pair diagnostics (source, target, is, h_z, h_z_given_u in nats per item, dim,
            best_step, steps, cached).
        settings: the estimator settings, seed and split sizes used.
        warnings: human-readable caveats (e.g. a small pool, a candidate left out).
        pool_warning: the one of ``warnings`` about the pool's size, or None.
        excluded: candidate -> why it was left out (NaN/inf values, constant rows, no non-null dimension);
            its score and matrix row/column are NaN, the other candidates are ranked without it.
        spread: when several estimates were averaged (``settings["repeats"]`` > 1), candidate -> the standard
            deviation over them of its median IS (nats per target dimension); None for one estimate.
    """

    matrix: pd.DataFrame
    scores: dict[str, float]
    communities: list[list[str]] | None
    marginal_entropy: dict[str, float]
    pairs: list[dict[str, Any]]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)
    pool_warning: str | None = None
    spread: dict[str, float] | None = None

    @property
    def n_computed(self) -> int:
        return sum(not p["cached"] for p in self.pairs)

    @property
    def n_cached(self) -> int:
        return sum(bool(p["cached"]) for p in self.pairs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (NaN diagonal left out of the nested matrix; a pair not estimated is NaN there)."""
        mat = {
            s: {t: float(self.matrix.loc[s, t]) for t in self.matrix.columns if t != s}
            for s in self.matrix.index
        }
        return {
            "matrix": mat,
            "scores": dict(self.scores),
            "communities": None if self.communities is None else [list(c) for c in self.communities],
            "marginal_entropy_per_dim": dict(self.marginal_entropy),
            "pairs": [dict(p) for p in self.pairs],
            "settings": dict(self.settings),
            "warnings": list(self.warnings),
            "excluded": dict(self.excluded),
            "pool_warning": self.pool_warning,
            "spread": None if self.spread is None else dict(self.spread),
        }


def communities(matrix: pd.DataFrame, seed: int) -> list[list[str]]:
    import networkx as nx
    from networkx.algorithms.community import louvain_communities

    g = nx.DiGraph()
    g.add_nodes_from(matrix.index)
    for s in matrix.index:
        for t in matrix.columns:
            if s != t and matrix.loc[s, t] > 0:
                g.add_edge(s, t, weight=float(matrix.loc[s, t]))
    comms = louvain_communities(g, weight="weight", seed=int(seed) % (2**32))
    return sorted((sorted(c) for c in comms), key=lambda c: (-len(c), c))


def subsampled(settings: Mapping[str, Any]) -> dict[str, int]:
    """Which capped parts of the estimate used fewer rows than the data offer, and how many they used:
    ``test`` / ``val`` (splits held at max_test_items / max_val_items, the other rows train) and
    ``marginal_fit`` (the EM fit of each marginal on at most marginal_max_items training rows), ``prep`` (each
    candidate's standardisation and principal axes from at most prep_max_items training rows); for the Gaussian
    estimator, ``rows`` (a seeded sample of max_items rows)."""
    if settings.get("estimator") == "gaussian":
        return {"rows": int(settings["n_used"])} if settings["n_used"] < settings["n_items"] else {}
    n = settings["n_train"] + settings["n_val"] + settings["n_test"]
    out = {}
    for split in ("test", "val"):
        if round(settings[f"{split}_fraction"] * n) > settings[f"n_{split}"]:
            out[split] = int(settings[f"n_{split}"])
    if settings["n_train"] > settings["marginal_max_items"]:
        out["marginal_fit"] = int(settings["marginal_max_items"])
    if settings["n_train"] > settings["prep_max_items"]:
        out["prep"] = int(settings["prep_max_items"])
    return out


def median_scores(matrix: pd.DataFrame, names: list[str]) -> dict[str, float]:
    """Each candidate of ``matrix``'s rows -> the median of its IS towards the other ``names``, over the pairs
    estimated (NaN cells are not; NaN when it is not one of ``names`` or none of its pairs was estimated)."""
    out = {}
    for s in matrix.index:
        v = np.array([matrix.loc[s, t] for t in names if t != s], dtype=np.float64) if s in names else np.array([])
        v = v[np.isfinite(v)]
        out[s] = float(np.median(v)) if len(v) else math.nan
    return out


def caveats(names: list[str], excluded: Mapping[str, str], n: int, n_test: int,
            repeats: int) -> tuple[list[str], str | None]:
    """The estimate's warnings and the one about the pool's size (or None)."""
    warnings, pool_warning = pool_caveats(names, excluded)
    if n < 1000:
        averaged = f", the mean of {repeats} estimates under different splits" if repeats > 1 else ""
        warnings.append(
            f"only {n} reference items ({n_test} in the test split{averaged}): estimates are noisy "
            f"(paper, appendix E.3); 1000+ items are recommended"
        )
    return warnings, pool_warning


def average(runs: list[SufficiencyResult], seed: int, n: int) -> SufficiencyResult:
    """The mean of estimates under several seeds (:func:`~embedselect.metrics.sufficiency.settings.repeat_seeds`, the
    first ``seed`` itself; ``n`` items each): the IS matrix averaged pair by pair (float64); a candidate left out of any
    estimate is left out of the mean. ``spread``: each candidate's standard deviation over the estimates of its median
    IS, in nats per target dimension (the seed noise that the mean divides by about sqrt(repeats))."""
    first = runs[0]
    excluded = {k: v for r in reversed(runs) for k, v in r.excluded.items()}
    every = list(first.matrix.index)
    names = [k for k in every if k not in excluded]
    mat = pd.DataFrame(np.mean([r.matrix.loc[every, every].to_numpy(dtype=np.float64) for r in runs], axis=0),
                       index=first.matrix.index, columns=first.matrix.columns)
    mat.loc[list(excluded)] = np.nan
    mat.loc[:, list(excluded)] = np.nan
    scores = median_scores(mat, names)
    per_run = [median_scores(r.matrix, names) for r in runs]
    spread = {s: float(np.std([m[s] for m in per_run])) for s in names}
    warnings, pool_warning = caveats(names, excluded, n, first.settings["n_test"], len(runs))
    seeds = [r.settings["seed"] for r in runs]
    return SufficiencyResult(
        matrix=mat,
        scores=scores,
        communities=communities(mat, seed) if all(r.communities is not None for r in runs) else None,
        marginal_entropy={t: float(np.mean([r.marginal_entropy[t] for r in runs])) for t in names},
        pairs=[{**p, "seed": s} for r, s in zip(runs, seeds) for p in r.pairs],
        settings={**first.settings, "seed": int(seed), "repeats": len(runs), "repeat_seeds": seeds},
        warnings=warnings,
        excluded=excluded,
        pool_warning=pool_warning,
        spread=spread,
    )
