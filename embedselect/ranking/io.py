"""How a :class:`~embedselect.ranking.result.Ranking`'s values are written and read: strict-JSON values (non-finite
numbers as strings, read back as themselves), the equality a JSON round trip keeps, and the pandas table."""

from __future__ import annotations

import logging
import math
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import pandas as pd


log = logging.getLogger(__name__)

_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def known_fields(cls: Any, d: dict[str, Any], what: str) -> dict[str, Any]:
    """``d`` without the keys that are not fields of the dataclass ``cls`` (logged as a warning: a newer
    embedselect wrote them)."""
    names = {f.name for f in fields(cls)}
    extra = sorted(set(d) - names)
    if extra:
        log.warning("ignoring %s field(s) %s: written by a newer embedselect", what, extra)
    return {k: v for k, v in d.items() if k in names}


def from_jsonable(obj: Any) -> Any:
    """The inverse of ``to_jsonable(obj, nonfinite="string")`` for numbers: the strings ``"NaN"`` / ``"Infinity"`` /
    ``"-Infinity"`` back to floats, in nested dict values and lists (keys are left alone). :meth:`Ranking.from_dict`
    applies it to the fields that hold numbers only (scores, columns, intervals, details, validation, uncertainty,
    timings), never to names or messages."""
    if isinstance(obj, dict):
        return {k: from_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_jsonable(v) for v in obj]
    if isinstance(obj, str) and obj in _NONFINITE:
        return _NONFINITE[obj]
    return obj


def same_value(a: Any, b: Any) -> bool:
    """Equality for JSON-like values where NaN equals NaN and a tuple equals the list of its items (what a JSON round
    trip keeps); numpy arrays and scalars compare by value."""
    if hasattr(a, "tolist") and not isinstance(a, (str, bytes)):
        a = a.tolist()
    if hasattr(b, "tolist") and not isinstance(b, (str, bytes)):
        b = b.tolist()
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return bool(a == b)


def to_jsonable(obj: Any, *, nonfinite: str = "null") -> Any:
    """Make ``obj`` strict-JSON serialisable: numpy scalars -> Python, tuples -> lists, and NaN / infinities ->
    ``None`` (``nonfinite="null"``) or the strings ``"NaN"`` / ``"Infinity"`` / ``"-Infinity"`` (``"string"``,
    what a ranking file uses, read back by :func:`from_jsonable`)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, nonfinite=nonfinite) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, nonfinite=nonfinite) for v in obj]
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        if nonfinite == "string":
            return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
        return None
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:  # numpy scalar
        return to_jsonable(obj.item(), nonfinite=nonfinite)
    if hasattr(obj, "tolist"):
        return to_jsonable(obj.tolist(), nonfinite=nonfinite)
    return obj


def to_pandas(candidates: Sequence[Any], metrics: Sequence[str]) -> pd.DataFrame:
    """``Ranking.to_pandas()``: one row per candidate (``candidates``: the ranking's ``CandidateResult`` rows, in
    order): rank, name, combined score, per-metric score and rank (``metrics``: the ranking's metrics), extra columns,
    provenance and status. Index: candidate name. Takes the rows, not the ranking, so this module needs nothing of
    :mod:`embedselect.ranking.result` (which imports it)."""
    import pandas as pd

    rows = []
    for c in candidates:
        row: dict[str, Any] = {"rank": c.rank, "name": c.name, "score": c.combined_score}
        for m in metrics:
            row[m] = c.scores.get(m, math.nan)
            row[f"{m}_rank"] = c.ranks.get(m)
        for key, (low, high) in c.intervals.items():
            row[f"{key}_low"], row[f"{key}_high"] = low, high
        row.update(c.columns)
        row.update(
            {
                "model_id": c.model_id,
                "revision": c.revision,
                "backend": c.backend,
                "dim": c.dim,
                "bytes_per_vector": c.bytes_per_vector,
                "items_per_second": c.items_per_second,
                "parameters": c.parameters,
                "api_tokens": c.api_tokens,
                "cached": c.cached,
                "embedded_items": c.embedded_items,
                "stored_items": c.stored_items,
                "seconds": c.seconds,
                "status": c.status,
                "error": c.error,
            }
        )
        rows.append(row)
    df = pd.DataFrame(rows)
    if not df.empty:
        df = df.set_index("name")
        df["rank"] = df["rank"].astype("Int64")
        for m in metrics:
            df[f"{m}_rank"] = df[f"{m}_rank"].astype("Int64")
    return df


__all__ = ["from_jsonable", "known_fields", "same_value", "to_jsonable", "to_pandas"]
