"""What a load did (:class:`LoadReport`) and the sentence a ranking shows about the duplicates it dropped."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

DUPLICATE_RULES = ("exact", "near")
"""Rules of :meth:`ReferenceData.drop_duplicates` (``select(..., drop_duplicates=...)``)."""
NEAR_DUPLICATE_THRESHOLD = 0.95
"""Default cosine threshold of the ``"near"`` rule."""


@dataclass(frozen=True)
class LoadReport:
    """What happened while loading.

    Attributes:
        n_total: rows / files found in the source.
        n_used: items kept in the final :class:`ReferenceData` (after skipping, dedupe and sampling).
        n_skipped_empty: empty or whitespace-only texts dropped (missing cells count as empty).
        n_skipped_undecodable: items dropped because they could not be decoded (``on_error="skip"``).
        n_duplicates: valid items that are exact duplicates of an earlier one (text equality, or equal image
            bytes), counted before sub-sampling. Removed only when ``deduped`` is true.
        n_distinct: distinct items among the ``n_used`` items kept (after dedupe and sampling); None in reports
            written before it was counted.
        skipped_examples: the first few dropped items, as ``{"id": ..., "reason": ...}`` dicts.
        sampled: whether seeded sub-sampling to ``max_items`` happened.
        deduped: whether duplicates were removed (``dedupe=True`` or :meth:`ReferenceData.drop_duplicates`).
        duplicates_dropped: the rule that removed them: ``"exact"`` or ``"near"`` (``None``: none removed).
        n_dropped_duplicates: items removed by that rule (``n_used`` counts what remains).
        near_duplicate_threshold: the cosine threshold of ``"near"`` (``None`` otherwise).
    """

    n_total: int
    n_used: int
    n_skipped_empty: int = 0
    n_skipped_undecodable: int = 0
    n_duplicates: int = 0
    skipped_examples: tuple[dict[str, str], ...] = ()
    sampled: bool = False
    deduped: bool = False
    duplicates_dropped: str | None = None
    n_dropped_duplicates: int = 0
    near_duplicate_threshold: float | None = None
    n_distinct: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable copy."""
        d = dataclasses.asdict(self)
        d["skipped_examples"] = [dict(e) for e in self.skipped_examples]
        return d


def dropped_duplicates_note(dataset: Mapping[str, Any]) -> str | None:
    """The sentence a ranking's table and report show about duplicates dropped before ranking, from the ranking's
    ``dataset`` summary (:meth:`ReferenceData.to_dict`, stored rankings included); None when no rule removed any.

    Example: ``"12 near duplicates dropped before ranking (rule 'near': the same item, or cosine similarity >= 0.95
    of candidate-independent features); the scores use the 240 items left"``."""
    rep = dataset.get("report") or {}
    rule = rep.get("duplicates_dropped")
    if not rule:
        return None
    n_dropped = int(rep.get("n_dropped_duplicates") or 0)
    n_left = dataset.get("n", rep.get("n_used"))
    how = "the same item" if rule == "exact" else (
        "the same item, or cosine similarity >= "
        f"{float(rep.get('near_duplicate_threshold') or NEAR_DUPLICATE_THRESHOLD):g} of candidate-independent features")
    if n_dropped == 0:
        return f"no duplicates found (rule '{rule}': {how}); the scores use all {n_left} items"
    return (f"{n_dropped} {rule} duplicate{'s' if n_dropped != 1 else ''} dropped before ranking (rule '{rule}': "
            f"{how}); the scores use the {n_left} items left")

