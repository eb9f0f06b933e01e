"""The typed result of :func:`embedselect.select`: per-candidate scores and ranks, with provenance."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, TypedDict

if TYPE_CHECKING:
    import pandas as pd

FORMAT_VERSION = 1

Status = Literal["ok", "failed"]
"""A candidate's outcome: scored, or failed (with ``error_type`` and ``error``)."""


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
    """The keys a metric's entry of ``Ranking.details`` may have in common (each metric adds its own)."""

    headline: str
    secondary: list[str]
    warnings: list[str]
    pool_warning: str
    not_comparable: str
    excluded: dict[str, str]
    settings: dict[str, Any]


@dataclass
class CandidateResult:
    """One candidate's outcome.

    Attributes:
        name: display key, unique within the ranking.
        spec: the candidate as the user wrote it.
        model_id / revision / backend / modality: what was actually embedded (revision is a hub commit sha,
            a content hash of a local directory, or a builtin baseline version).
        status: "ok" or "failed". Failed candidates carry ``error_type`` / ``error`` and no scores.
        n / dim: rows and dimension of the embedding matrix.
        seconds: wall time of the embedding (from the cache record when ``cached``).
        cached: True if the embeddings came from the cache (no forward pass in this call).
        scores: metric name -> headline score (higher is better).
        ranks: metric name -> 1-based rank among the ok candidates (1 = best).
        columns: extra per-metric numbers, e.g. "task_prior.probe_acc_mean".
        combined_score / rank: the aggregate over metrics (see :mod:`embedselect.ranking.combine`).
        intervals: score name -> [low, high] bootstrap confidence interval, when computed. The key is the
            metric name when its headline score was bootstrapped, else the name of the bootstrapped score
            (e.g. ``task_prior_alignment``: the closed-form part of ``task_prior``, without probes).
        run_key: the cache key of the embedding run.
        model_bytes: size of the model's weight files in bytes (None for the built-in baselines); a cost.
    """

    name: str
    spec: str
    model_id: str | None = None
    revision: str | None = None
    backend: str | None = None
    modality: str | None = None
    status: Status = "ok"
    error_type: str | None = None
    error: str | None = None
    n: int | None = None
    dim: int | None = None
    seconds: float | None = None
    cached: bool = False
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    columns: dict[str, float] = field(default_factory=dict)
    combined_score: float | None = None
    rank: int | None = None
    intervals: dict[str, list[float]] = field(default_factory=dict)
    run_key: str | None = None
    model_bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def failure_note(self) -> str | None:
        """The ranking's warning about this candidate's failure ("NAME failed (TYPE): why"), None when ok."""
        return None if self.ok else f"{self.name} failed ({self.error_type}): {self.error}"


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
        details: metric name -> the metric's details (prior used, pairwise matrix, communities, ...).
        validation: accuracy of probes trained on user labels, and rank correlations, when labels were given.
        uncertainty: bootstrap results, when requested.
        warnings: things the user should know (small pool, failed candidates, ...).
        ranking_id / created_at: identity in the store.
        decided: False when the scores cannot separate the first candidate from others (a tie in the combined
            score, overlapping bootstrap intervals on every bootstrapped score, or fewer than
            ``aggregate.MIN_POOL`` candidates); see :func:`embedselect.ranking.combine.decide`.
        leaders: the first candidate and every candidate it cannot be told apart from (``[best]`` when decided).
        undecided_reasons: why ``decided`` is False, in words (empty when decided).
        timings: wall time of this call's stages, in seconds: ``{"candidates": {name: s}, "metrics": {metric: s},
            "validation": s | None, "total": s}``. A candidate's time covers resolving, loading and embedding it (or
            reading its cached vectors); a metric's covers its bootstrap; a result served from the store is
            counted at the time it took to read it.
    """

    candidates: list[CandidateResult]
    metrics: list[str]
    combine: str
    dataset: dict[str, Any]
    settings: RankingSettings
    versions: dict[str, str]
    details: dict[str, Any] = field(default_factory=dict)
    validation: ValidationReport | None = None
    uncertainty: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    ranking_id: str = ""
    created_at: str = ""
    decided: bool = True
    leaders: list[str] = field(default_factory=list)
    undecided_reasons: list[str] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)

    # --- access ---------------------------------------------------------------------------------
    @property
    def ok(self) -> list[CandidateResult]:
        """Candidates that were scored, best first."""
        return [c for c in self.candidates if c.ok]

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

    def __getitem__(self, name: str) -> CandidateResult:
        for c in self.candidates:
            if c.name == name:
                return c
        raise KeyError(f"no candidate named {name!r}; have {[c.name for c in self.candidates]}")

    def __len__(self) -> int:
        return len(self.candidates)

    def __iter__(self) -> Iterator[CandidateResult]:
        return iter(self.candidates)

    # --- conversion -----------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """One row per candidate: rank, name, combined score, per-metric score and rank, extra columns,
        provenance and status. Index: candidate name."""
        import pandas as pd

        rows = []
        for c in self.candidates:
            row: dict[str, Any] = {"rank": c.rank, "name": c.name, "score": c.combined_score}
            for m in self.metrics:
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
                    "cached": c.cached,
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
            for m in self.metrics:
                df[f"{m}_rank"] = df[f"{m}_rank"].astype("Int64")
        return df

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["format_version"] = FORMAT_VERSION
        out: dict[str, Any] = to_jsonable(d)
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """JSON text (NaN and infinities are written as null)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Ranking":
        d = dict(d)
        version = d.pop("format_version", FORMAT_VERSION)
        if version > FORMAT_VERSION:
            from embedselect.errors import ConfigError

            raise ConfigError(f"this ranking was written by a newer embedselect (format {version}); upgrade")
        d["candidates"] = [CandidateResult(**c) for c in d["candidates"]]
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "Ranking":
        return cls.from_dict(json.loads(text))


def to_jsonable(obj: Any) -> Any:
    """Make ``obj`` strict-JSON serialisable: NaN/inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:  # numpy scalar
        return to_jsonable(obj.item())
    if hasattr(obj, "tolist"):
        return to_jsonable(obj.tolist())
    return obj


# ------------------------------------------------------------------------------------------------
# the one rank rule of the package
# ------------------------------------------------------------------------------------------------
TIE_RTOL = 1e-9
"""Scores within this relative distance (``math.isclose(a, b, rel_tol=TIE_RTOL, abs_tol=TIE_ATOL)``) of the
best score of their group are a tie: the same weighted mean summed in a different order must not decide."""
TIE_ATOL = 1e-12


def just_below(score: float) -> float:
    """The score that ranks strictly below ``score`` and as close to it as the tie rule allows (not a tie under
    :func:`tie_groups`): ``score`` minus 4× the tie tolerance."""
    return score - 4 * max(TIE_RTOL * abs(score), TIE_ATOL)


def _finite_items(scores: Mapping[str, float | None]) -> list[tuple[str, float]]:
    out = []
    for k, v in scores.items():
        if v is None:
            continue
        v = float(v)
        if math.isfinite(v):
            out.append((str(k), v))
    return out


def tie_groups(scores: Mapping[str, float | None]) -> list[list[str]]:
    """Candidates grouped by tied score, best (highest) group first; names inside a group in alphabetical order.

    This is the package's one tie rule. Scores are "higher is better". Two scores tie when they are equal up
    to :data:`TIE_RTOL` / :data:`TIE_ATOL` relative to the highest score of the group. ``None``, NaN and
    infinities are not ranked (left out). Where one order is needed (the table's rows, ``Ranking.best``, a
    validation's top pick), tied candidates are listed by name: a neutral, reproducible order that favours no
    metric and no kind of model; the ranking then says the tie exists (``Ranking.decided`` / ``leaders``).
    """
    items = sorted(_finite_items(scores), key=lambda kv: (-kv[1], kv[0]))
    groups: list[list[str]] = []
    head = None
    for k, v in items:
        if head is not None and math.isclose(v, head, rel_tol=TIE_RTOL, abs_tol=TIE_ATOL):
            groups[-1].append(k)
        else:
            groups.append([k])
            head = v
    return [sorted(g) for g in groups]


def order_by_score(scores: Mapping[str, float | None]) -> list[str]:
    """Names best first by :func:`tie_groups` (ties by name); unranked (None / NaN) names last, by name."""
    ordered = [k for g in tie_groups(scores) for k in g]
    rest = sorted(str(k) for k in scores if str(k) not in set(ordered))
    return ordered + rest


def rank_scores(scores: Mapping[str, float | None], *, ties: str = "min") -> dict[str, float | None]:
    """1-based ranks (1 = highest score) under the tie rule of :func:`tie_groups`.

    Args:
        scores: name -> score, higher is better.
        ties: ``"min"`` (default; competition ranks 1, 1, 3: what tables and JSON show, so a tie reads as a
            tie) or ``"average"`` (1.5, 1.5, 3: tied candidates share the ranks they span, what a rank
            average such as the Borda count in :mod:`embedselect.ranking.combine` needs).

    Returns:
        name -> rank (int for ``"min"``, float for ``"average"``); ``None`` for an unranked (None / NaN / inf)
        score.
    """
    if ties not in ("min", "average"):
        raise ValueError(f"ties must be 'min' or 'average', got {ties!r}")
    ranks: dict[str, float | None] = {str(k): None for k in scores}
    pos = 1
    for g in tie_groups(scores):
        r = pos if ties == "min" else pos + (len(g) - 1) / 2.0
        for k in g:
            ranks[k] = r
        pos += len(g)
    return ranks


__all__ = [
    "FORMAT_VERSION",
    "TIE_ATOL",
    "TIE_RTOL",
    "CandidateResult",
    "MetricDetails",
    "PolicySettings",
    "Ranking",
    "RankingSettings",
    "Status",
    "ValidationReport",
    "just_below",
    "order_by_score",
    "rank_scores",
    "tie_groups",
    "to_jsonable",
]
