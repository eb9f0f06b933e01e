"""The warnings of a :class:`~embedselect.ranking.result.Ranking`: their stable codes (:data:`WARNING_CODES`) and
:class:`RankingWarning`, a warning's code, message and candidates."""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

log = logging.getLogger(__name__)

WARNING_CODES: dict[str, str] = {
    "candidate-failed": "a candidate could not be resolved, loaded or embedded; it has no scores",
    "undecided": "",  # from UNDECIDED_CAUSES, below
    "small-pool": "",
    "baseline-wins": "a built-in baseline (tfidf-svd, random-projection, pixel-pca) is first or among the leaders: "
                     "no model beat it on this data",
    "baselines-central": "built-in baselines agree with the models' nearest neighbours as much as the models agree "
                         "with each other: the models may capture little beyond them",
    "copy-below-parent": "a quantised or truncated copy of another candidate was put below it (candidates: the copy, "
                         "then its parent)",
    "metric-failed": "a metric could not be computed at all; the combined score is made of the others",
    "metric-excluded": "a metric did not score a candidate (degenerate for that metric)",
    "metric-note": "a metric's own caveat (its prior, its estimator, ...)",
    "untrained-checkpoint": "a candidate's model looks untrained (every normalisation layer at its initial values): "
                            "its vectors are random; it is ranked",
    "duplicates": "the reference data holds duplicate items",
    "skipped-items": "items of the data were left out (--on-error skip: undecodable or empty); the note names them",
    "not-stored": "the ranking, metric results or pairs were not stored: a read-only cache, or a full disk",
    "answers": "what a person's answers to `ask`'s questions ruled out or decided between the contenders "
               "(candidates: the contenders left, the winner first)",
    "queries": "what your search queries (`--queries`) ruled out or decided between the contenders (candidates: as for answers)",
    "note": "a warning without a more specific code (also every warning of a format-1 ranking file)",
}
"""The stable codes of :class:`RankingWarning` (docs/validation.md lists them; ``rank --fail-on`` takes them).
A code is never renamed; new codes may be added."""

UNDECIDED_CAUSES: dict[str, tuple[str, str]] = {
    "tie": ("undecided", "a tie in the combined score"),
    "overlap": ("undecided", "bootstrap intervals that overlap the first candidate's on every bootstrapped score"),
    "signals": ("undecided", "another candidate first when one combined signal is left out"),
    "witness": ("undecided", "another candidate first on a signal shown beside the combination (a witness)"),
    "reference-first": ("undecided", "a built-in baseline first"),
    "untrained-first": ("undecided", "an untrained checkpoint first"),
    "no-score": ("undecided", "no candidate with a combined score"),
    "contenders-left": ("undecided", "answers or search queries that do not separate the contenders they leave"),
    "few-families": ("small-pool", "too few model families scored for the label-free scores to be reliable (they "
                                   "compare candidates with each other; the options and copies of one model count "
                                   "once)"),
    "two-families": ("small-pool", "only two model families beside the reference points"),
    "one-family": ("small-pool", "search queries over candidates of one model family"),
}
"""Why a ranking is undecided: cause -> (its warning code, the cause in words). The one list of them: the texts of
``WARNING_CODES["undecided"]`` and ``["small-pool"]`` are made from it, every reason of
:func:`embedselect.ranking.combine.decide` (and of answers or queries that decide nothing) names its cause
(``Decision.causes``) and takes its code from here, and docs/validation.md's warning-code table says the same
(tests/test_aggregate.py checks both)."""


def _listed(code: str) -> str:
    said = [why for c, why in UNDECIDED_CAUSES.values() if c == code]
    return ", ".join(said[:-1]) + f", or {said[-1]}" if len(said) > 1 else said[0]


WARNING_CODES["undecided"] = f"no clear winner: {_listed('undecided')} (candidates: the leaders)"
WARNING_CODES["small-pool"] = f"{_listed('small-pool')} (candidates: the leaders)"


class RankingWarning(str):
    """A warning of a :class:`Ranking`: a stable :attr:`code` (:data:`WARNING_CODES`), the message, and the
    candidates it concerns.

    It is the message as a ``str`` too (``print(w)``, ``"tie" in w`` work as they did when warnings were strings);
    two warnings are equal when code, message and candidates are.
    """

    code: str
    candidates: tuple[str, ...]

    def __new__(cls, code: str, message: str, candidates: Iterable[str] = ()) -> "RankingWarning":
        if code not in WARNING_CODES:
            raise ValueError(f"unknown warning code {code!r}; known: {sorted(WARNING_CODES)}")
        self = super().__new__(cls, message)
        self.code = code
        self.candidates = tuple(str(c) for c in candidates)
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickling (the Ray executor)
        return (self.code, str(self), self.candidates)

    @property
    def message(self) -> str:
        return str.__str__(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RankingWarning):
            return (self.code, self.message, self.candidates) == (other.code, other.message, other.candidates)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"RankingWarning({self.code!r}, {self.message!r}, {list(self.candidates)!r})"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "candidates": list(self.candidates)}

    @classmethod
    def from_value(cls, value: Any) -> "RankingWarning":
        """A warning from its JSON form: the object of format 2, or the bare string of format 1 (code ``note``)."""
        if isinstance(value, RankingWarning):
            return value
        if isinstance(value, str):
            return cls("note", value)
        if isinstance(value, Mapping) and isinstance(value.get("message"), str):
            code = value.get("code", "note")
            if code not in WARNING_CODES:  # written by a newer embedselect: keep the message, say so
                log.warning("ranking warning code %r is not known to this embedselect; read as 'note'", code)
                code = "note"
            return cls(code, value["message"], value.get("candidates") or ())
        from embedselect.errors import RankingFormatError

        raise RankingFormatError(f"a ranking warning must be a string or an object with a message; got {value!r}")


__all__ = ["UNDECIDED_CAUSES", "WARNING_CODES", "RankingWarning"]
