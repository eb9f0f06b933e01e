"""A :class:`~embedselect.ranking.result.Ranking`'s JSON form: its format versions, the plain dict it is written as
and read from (:func:`ranking_to_dict`, :func:`ranking_from_dict`) and that dict as JSON text. The values inside it
(non-finite numbers, the equality a round trip keeps) are :mod:`embedselect.ranking.io`'s."""

from __future__ import annotations

import json
from dataclasses import Field, asdict
from typing import Any, ClassVar, Mapping, Protocol, Sequence, TypeVar

from embedselect.ranking.candidate import CandidateResult
from embedselect.ranking.io import from_jsonable, known_fields, to_jsonable
from embedselect.ranking.warning_codes import RankingWarning


class _RankingFields(Protocol):
    """What the form reads of a :class:`~embedselect.ranking.result.Ranking` (a dataclass with ``warnings``); typed
    so, this module need not import the class that imports it."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def warnings(self) -> Sequence[Any]: ...


_R = TypeVar("_R", bound=_RankingFields)

FORMAT_VERSION = 2
"""The ranking JSON's format. 2: ``warnings`` are objects ``{"code", "message", "candidates"}`` and scores that are
not finite are written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (so they read back as themselves).
1: warnings were strings and non-finite numbers ``null``; :func:`ranking_from_dict` still reads it."""
OLDEST_FORMAT = 1
"""The oldest ranking format :func:`ranking_from_dict` reads."""

_NUMERIC_CANDIDATE_FIELDS = ("scores", "columns", "intervals", "combined_score", "seconds")
_NUMERIC_RANKING_FIELDS = ("details", "validation", "uncertainty", "timings")


def ranking_to_dict(ranking: _RankingFields) -> dict[str, Any]:
    """Plain JSON-ready values (format :data:`FORMAT_VERSION`): non-finite numbers as ``"NaN"`` /
    ``"Infinity"`` / ``"-Infinity"``, warnings as objects (:meth:`Ranking.to_dict`)."""
    d = asdict(ranking)
    d["warnings"] = [RankingWarning.from_value(w).to_dict() for w in ranking.warnings]
    d["format_version"] = FORMAT_VERSION
    out: dict[str, Any] = to_jsonable(d, nonfinite="string")
    return out


def ranking_to_json(ranking: _RankingFields, *, indent: int | None = 2) -> str:
    """Strict JSON text of :func:`ranking_to_dict` (no bare NaN; non-finite numbers are its strings)."""
    return json.dumps(ranking_to_dict(ranking), indent=indent, allow_nan=False)


def ranking_from_dict(cls: type[_R], d: Mapping[str, Any]) -> _R:
    """A ``cls`` (:class:`Ranking`) from :func:`ranking_to_dict`'s form, of this format or an older one down to
    :data:`OLDEST_FORMAT` (:meth:`Ranking.from_dict`).

    Fields this version does not know (written by a newer embedselect of the same format) are ignored with a
    logged warning.

    Raises:
        RankingFormatError: not a ranking, a format newer than :data:`FORMAT_VERSION` or older than
            :data:`OLDEST_FORMAT`, or a required field missing.
    """
    from embedselect.errors import RankingFormatError

    if not isinstance(d, Mapping) or not isinstance(d.get("candidates"), list):
        raise RankingFormatError("not an embedselect ranking: expected an object with a 'candidates' list")
    d = dict(d)
    version = d.pop("format_version", OLDEST_FORMAT)
    if not isinstance(version, int) or isinstance(version, bool):
        raise RankingFormatError(f"format_version must be an integer; got {version!r}")
    if version > FORMAT_VERSION:
        raise RankingFormatError(f"this ranking was written by a newer embedselect (format {version}; this one "
                                 f"reads {OLDEST_FORMAT} to {FORMAT_VERSION}): upgrade embedselect")
    if version < OLDEST_FORMAT:
        raise RankingFormatError(f"ranking format {version} is older than this embedselect reads "
                                 f"({OLDEST_FORMAT} to {FORMAT_VERSION}): re-run the ranking")
    d = known_fields(cls, d, "ranking")
    try:
        cands = []
        for c in d["candidates"]:
            c = known_fields(CandidateResult, dict(c), "candidate")
            cands.append(CandidateResult(**{k: from_jsonable(v) if k in _NUMERIC_CANDIDATE_FIELDS else v
                                            for k, v in c.items()}))
        d["candidates"] = cands
        d["warnings"] = [RankingWarning.from_value(w) for w in d.get("warnings") or []]
        ranking = cls(**{k: from_jsonable(v) if k in _NUMERIC_RANKING_FIELDS else v for k, v in d.items()})
    except (TypeError, AttributeError, ValueError) as exc:
        raise RankingFormatError(f"not a readable ranking (format {version}): {exc}") from None
    return ranking


def ranking_from_json(cls: type[_R], text: str) -> _R:
    """:func:`ranking_from_dict` of JSON text.

    Raises:
        RankingFormatError: not JSON, or not a ranking this embedselect reads.
    """
    from embedselect.errors import RankingFormatError

    try:
        d = json.loads(text)
    except ValueError as exc:
        raise RankingFormatError(f"not JSON: {exc}") from None
    return ranking_from_dict(cls, d)


__all__ = ["FORMAT_VERSION", "OLDEST_FORMAT", "ranking_from_dict", "ranking_from_json", "ranking_to_dict",
           "ranking_to_json"]
