"""The typed result of :func:`embedselect.select`: the :class:`Ranking` (per-candidate results, ordered, with
provenance), the typed dicts of its fields, and its accessors.

Its parts live beside it and are importable from here too: a candidate's outcome (:mod:`.candidate`), the warnings
and their codes (:mod:`.warning_codes`), the JSON form and its format versions (:mod:`.form`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, TypedDict, cast

if TYPE_CHECKING:
    import pandas as pd

from embedselect.ranking.candidate import CandidateResult, Status
from embedselect.ranking.form import (FORMAT_VERSION, OLDEST_FORMAT, ranking_from_dict, ranking_from_json,
                                      ranking_to_dict, ranking_to_json)
from embedselect.ranking.io import same_value, to_pandas
from embedselect.ranking.warning_codes import WARNING_CODES, RankingWarning


class PolicySettings(TypedDict):
    """``Ranking.settings["policy"]``: what the load policy allowed."""

    allow_pickle: bool
    trust_remote_code: bool


class RankingSettings(TypedDict, total=False):
    """``Ranking.settings``: the run's configuration as recorded (the :class:`~embedselect.config.RankConfig` and
    :class:`~embedselect.config.Runtime` values that decide or describe the result)."""

    seed: int
    max_items: int | None
    on_error: Literal["fail", "skip"]
    drop_duplicates: Literal["exact", "near"] | None
    device: str
    batch_size: int | None
    metric_options: dict[str, dict[str, Any]]
    weights: dict[str, float] | None
    combined_weights: dict[str, float]
    bootstrap: int
    policy: PolicySettings


class ValidationReport(TypedDict, total=False):
    """``Ranking.validation``: the check of the label-free ranking against the user's labels
    (:meth:`embedselect.validation.check.ValidationReport.to_dict`)."""

    accuracy_column: str
    level: float
    n_boot: int
    seed: int
    warnings: list[str]
    probe_settings: dict[str, Any]
    metrics: list[dict[str, Any]]
    table: dict[str, dict[str, Any]]


class MetricDetails(TypedDict, total=False):
    """The keys a metric's entry of ``Ranking.details`` may have in common (each metric adds its own); read one with
    :meth:`Ranking.metric_details`."""

    headline: str
    secondary: list[str]
    warnings: list[str]
    pool_warning: str
    not_comparable: str
    excluded: dict[str, str]
    settings: dict[str, Any]


class RankingTimings(TypedDict, total=False):
    """``Ranking.timings``: wall seconds of this call's stages (None: the stage did not run)."""

    candidates: dict[str, float]
    metrics: dict[str, float]
    validation: float | None
    retrieval: float | None
    total: float | None



@dataclass
class Ranking:
    """Candidates ordered best first (failed candidates last), with everything needed to reproduce it.

    Attributes:
        candidates: per-candidate results, sorted by combined rank.
        metrics: the metrics computed, in the order requested.
        combine: how per-metric ranks were combined into ``rank``.
        dataset: summary of the reference data (source, modality, n, fingerprint, load report).
        settings: the arguments of the call (seed, max_items, metric options, device...).
        versions: package versions that produced it.
        details: metric name -> the metric's details (prior used, pairwise matrix, communities, ...), typed by
            :meth:`metric_details`; beside the metrics, the pool's ``copies``, ``families`` and
            ``central_references``.
        validation: accuracy of probes trained on user labels, and rank correlations, when labels were given.
        retrieval: the search check, when queries were given: each candidate's MRR@10, nDCG@10, recall@1 and
            recall@10 on the user's queries, with bootstrap intervals over the queries, and each label-free score's
            rank correlations with MRR@10 (see :func:`embedselect.pipeline.queries.retrieval_stage`).
        uncertainty: bootstrap results, when requested.
        warnings: things the user should know (small pool, failed candidates, ...), each a :class:`RankingWarning`
            with a stable ``code`` (:data:`WARNING_CODES`).
        ranking_id: its id in the store; None when it was not stored (``save=False``, a cache that refused it).
        created_at: when it was made (UTC, ISO 8601).
        decided: False when the scores cannot separate the first candidate from others (a tie in the combined
            score, overlapping bootstrap intervals on every bootstrapped score, fewer than ``combine.MIN_POOL``
            model families, only two model families beside the reference points, or another candidate first when
            any one signal is left out); see :func:`embedselect.ranking.combine.decide`.
        leaders: the first candidate and every plausible best it cannot be told apart from (``[best]`` when
            decided).
        undecided_reasons: why ``decided`` is False, in words (empty when decided).
        next_step: when ``decided`` is False, how to settle it (:data:`embedselect.ranking.combine.SETTLE`: answer a
            few questions, or check the leaders against a few labels; with answers or queries that do not decide yet,
            answer more questions or add queries; checked against labels, the candidate their held-out probes put
            first and those within its interval); empty when decided.
        timings: wall time of this call's stages, in seconds: ``{"candidates": {name: s}, "metrics": {metric: s},
            "validation": s | None, "total": s}``. A candidate's time covers resolving, loading and embedding it (or
            reading its cached vectors); a metric's covers its bootstrap; a result served from the store is
            counted at the time it took to read it.
        answers: a person's answers to triplet questions (``rank --answers``), when given: ``source``,
            ``n_questions``, ``n_answered``, ``n_skipped``, the ``contenders`` they decide between, the ``winner``
            (most answers ordered the person's way), ``decided`` (they separate the winner from every other
            contender; then ``decided``/``leaders`` of the ranking say so) and ``pairs`` (per other contender the
            questions only the winner / only it orders the person's way, with the Wilson interval); each candidate's
            agreement is in its ``columns`` (``answers.agreement``, ``_low``, ``_high``, ``answers.n``). See
            :mod:`embedselect.validation.answers`.
    """

    candidates: list[CandidateResult]
    metrics: list[str]
    combine: str
    dataset: dict[str, Any]
    settings: RankingSettings
    versions: dict[str, str]
    details: dict[str, Any] = field(default_factory=dict)
    validation: ValidationReport | None = None
    retrieval: dict[str, Any] | None = None
    uncertainty: dict[str, Any] | None = None
    warnings: list[RankingWarning] = field(default_factory=list)
    ranking_id: str | None = None
    created_at: str = ""
    decided: bool = True
    leaders: list[str] = field(default_factory=list)
    undecided_reasons: list[str] = field(default_factory=list)
    next_step: str = ""
    timings: RankingTimings = field(default_factory=RankingTimings)
    answers: dict[str, Any] | None = None

    def __eq__(self, other: object) -> bool:  # NaN equals NaN, tuples their lists: what a JSON round trip keeps
        if not isinstance(other, Ranking):
            return NotImplemented
        return all(same_value(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    # --- access ---------------------------------------------------------------------------------
    def metric_details(self, metric: str) -> MetricDetails:
        """``details[metric]`` with the keys every metric's details may hold typed (:class:`MetricDetails`; a metric's
        own keys are there too); empty when the metric left none. The pool-level entries of :attr:`details`
        (``copies``, ``families``, ``central_references``) are not a metric's."""
        value = self.details.get(metric)
        return cast(MetricDetails, value) if isinstance(value, dict) else MetricDetails()

    @property
    def ok(self) -> list[CandidateResult]:
        """Candidates that were scored, best first."""
        return [c for c in self.candidates if c.ok]

    @property
    def short_id(self) -> str:
        """What outputs print of :attr:`ranking_id`: its first 12 characters, or "not stored"."""
        return self.ranking_id[:12] if self.ranking_id else "not stored"

    @property
    def failed(self) -> list[CandidateResult]:
        return [c for c in self.candidates if not c.ok]

    @property
    def shown_only(self) -> list[str]:
        """The metrics computed and shown but not part of the combined score (weight 0 in
        ``settings["combined_weights"]``), in :attr:`metrics` order."""
        weights = (self.settings or {}).get("combined_weights") or {}
        return [m for m in self.metrics if m in weights and not weights[m]]

    @property
    def best(self) -> CandidateResult | None:
        """The first row of the table (None when no candidate was scored).

        When :attr:`decided` is False it is still the first row — the first of :attr:`leaders` under the
        documented tie rule (ties listed by name) — but not a winner: read :attr:`leaders` and
        :attr:`undecided_reasons`, and treat the leaders as equals on this data.
        """
        ok = self.ok
        return ok[0] if ok else None

    def __repr__(self) -> str:
        """One line: the data, what was decided, the first rows with their combined score, the failed candidates and
        the warnings' codes (the fields themselves are :meth:`to_dict`)."""
        src = PurePath(str((self.dataset or {}).get("source") or "")).name or "the data"
        said = (f"decided: {self.best.name}" if self.decided and self.best else
                f"undecided, leaders {', '.join(self.leaders)}")
        rows = [f"{c.rank if c.rank is not None else '-'}. {c.name} "
                f"{c.combined_score if c.combined_score is None else format(c.combined_score, '.3f')}"
                for c in self.ok[:8]]
        rows += [f"… {len(self.ok) - 8} more"] if len(self.ok) > 8 else []
        failed = f"; failed: {', '.join(f'{c.name} ({c.error_type})' for c in self.failed)}" if self.failed else ""
        codes = list(dict.fromkeys(RankingWarning.from_value(w).code for w in self.warnings))
        n = len(self.candidates)
        return (f"<Ranking of {n} candidate{'s' if n != 1 else ''} on {src} ({said}): {', '.join(rows)}{failed}"
                f"{'; warnings: ' + ', '.join(codes) if codes else ''}>")

    __str__ = __repr__

    def __getitem__(self, name: str) -> CandidateResult:
        for c in self.candidates:
            if c.name == name:
                return c
        raise KeyError(f"no candidate named {name!r}; have {[c.name for c in self.candidates]}")

    def __len__(self) -> int:
        return len(self.candidates)

    def __iter__(self) -> Iterator[CandidateResult]:
        return iter(self.candidates)

    def to_pandas(self) -> pd.DataFrame:
        """One row per candidate: rank, name, combined score, per-metric score and rank, extra columns,
        provenance and status. Index: candidate name (:func:`embedselect.ranking.io.to_pandas`)."""
        return to_pandas(self.candidates, self.metrics)

    def warnings_with(self, *codes: str) -> list[RankingWarning]:
        """The warnings whose code is one of ``codes`` (all of them when none is given)."""
        unknown = sorted(set(codes) - set(WARNING_CODES))
        if unknown:
            from embedselect.errors import ConfigError

            raise ConfigError(f"unknown warning code(s) {unknown}; known: {', '.join(sorted(WARNING_CODES))}")
        return [w for w in self.warnings if not codes or w.code in codes]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (format :data:`FORMAT_VERSION`): non-finite numbers as ``"NaN"`` /
        ``"Infinity"`` / ``"-Infinity"``, warnings as objects (:func:`embedselect.ranking.form.ranking_to_dict`)."""
        return ranking_to_dict(self)

    def to_json(self, *, indent: int | None = 2) -> str:
        """Strict JSON text (no bare NaN; non-finite numbers are the strings of :meth:`to_dict`).
        ``Ranking.from_json(r.to_json()) == r``, NaN scores included."""
        return ranking_to_json(self, indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Ranking":
        """Read :meth:`to_dict`'s form, of this format or an older one down to :data:`OLDEST_FORMAT`
        (:func:`embedselect.ranking.form.ranking_from_dict`).

        Fields this version does not know (written by a newer embedselect of the same format) are ignored with a
        logged warning.

        Raises:
            RankingFormatError: not a ranking, a format newer than :data:`FORMAT_VERSION` or older than
                :data:`OLDEST_FORMAT`, or a required field missing.
        """
        return ranking_from_dict(cls, d)

    @classmethod
    def from_json(cls, text: str) -> "Ranking":
        """:meth:`from_dict` of JSON text.

        Raises:
            RankingFormatError: not JSON, or not a ranking this embedselect reads.
        """
        return ranking_from_json(cls, text)


__all__ = ["FORMAT_VERSION", "OLDEST_FORMAT", "WARNING_CODES", "CandidateResult", "MetricDetails", "PolicySettings",
           "Ranking", "RankingSettings", "RankingTimings", "RankingWarning", "Status", "ValidationReport"]
