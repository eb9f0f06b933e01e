"""The typed result of :func:`embedselect.select`: per-candidate scores and ranks, with provenance."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, fields
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Literal, Mapping, TypedDict, cast

if TYPE_CHECKING:
    import pandas as pd

from embedselect.ranking.io import from_jsonable, known_fields, same_value, to_jsonable, to_pandas

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
"""The ranking JSON's format. 2: ``warnings`` are objects ``{"code", "message", "candidates"}`` and scores that are
not finite are written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (so they read back as themselves).
1: warnings were strings and non-finite numbers ``null``; :meth:`Ranking.from_dict` still reads it."""
OLDEST_FORMAT = 1
"""The oldest ranking format :meth:`Ranking.from_dict` reads."""

WARNING_CODES: dict[str, str] = {
    "candidate-failed": "a candidate could not be resolved, loaded or embedded; it has no scores",
    "undecided": "no clear winner: a tie in the combined score, bootstrap intervals that overlap the first "
                 "candidate's on every bootstrapped score, or another candidate first when one signal is left out "
                 "(candidates: the leaders)",
    "small-pool": "too few model families scored for the label-free scores to be reliable (they compare candidates "
                  "with each other; the options and copies of one model count once), or only two model families "
                  "beside the reference points (candidates: the leaders)",
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
class CandidateResult:
    """One candidate's outcome.

    Attributes:
        name: display key, unique within the ranking.
        spec: the candidate as the user wrote it.
        model_id / revision / backend / modality: what was actually embedded (revision is a hub commit sha,
            a content hash of a local directory, or a builtin baseline version).
        status: "ok" or "failed". Failed candidates carry ``error_type`` / ``error`` and no scores.
        n / dim: rows and dimension of the embedding matrix.
        seconds: wall time of embedding the ``embedded_items`` this call embedded (when ``cached``: of the stored
            run it read, None when that run was itself assembled from the cache).
        cached: True if the embeddings came from the cache (no forward pass in this call); None when none were embedded
            or cached for it (precomputed vectors, a run-only variant whose vectors another one embedded, a failure).
        embedded_items / stored_items: how many of the ``n`` items this call embedded, and how many it read from
            the cache (vectors stored per item content by earlier runs of the same model, revision and options,
            on this data or any other; a fitted baseline such as tfidf-svd is stored whole, per data). Both 0 for
            precomputed vectors and for a variant (``?truncate_dim=`` / ``?precision=``) of a model kept for the
            run only whose vectors another variant computed in this run; None for a failed candidate that got no vectors and in rankings written before
            they were counted.
        scores: metric name -> headline score (higher is better).
        ranks: metric name -> 1-based rank among the ok candidates (1 = best).
        columns: extra per-metric numbers, e.g. "task_prior.probe_acc_mean".
        combined_score / rank: the aggregate over metrics (see :mod:`embedselect.ranking.combine`).
        intervals: score name -> [low, high] bootstrap confidence interval, when computed (none, not NaN, where the
            metric did not score this candidate). The key is the
            metric name when its headline score was bootstrapped, else the name of the bootstrapped score
            (e.g. ``task_prior_alignment``: the closed-form part of ``task_prior``, without probes).
        run_key: the cache key of the embedding run (None when the vectors are not cached across runs).
        cache_scope: where the vectors are kept: ``"cache"`` (the cache, across runs), ``"run"`` (this run only: an
            embedder object or a hosted API without a revision), ``"input"`` (precomputed vectors, read from the user's input).
        model_bytes: size of the model's weight files in bytes (None for the built-in baselines); a cost.
        api_tokens: for a hosted embedding API (``openai:MODEL``), the tokens this run was billed for (the
            servers' ``usage.total_tokens`` summed; 0 when its vectors came from the cache); None for other kinds.
        bytes_per_vector: bytes one vector takes as deployed: 4 per dimension, 1 with ``?precision=int8``, 1/8 with
            ``?precision=binary`` (:func:`embedselect.models.backends.reduce.bytes_per_vector`); a cost.
        items_per_second: items embedded per second when the vectors were computed (``embedded_items / seconds``, on the machine
            that computed them: this one unless they came from a shared cache); None when not measured (precomputed
            vectors, a variant computed from its model's vectors in this run).
        parameters: the model's parameter count, where known: the tensors of its safetensors files (read from their
            headers, no weights loaded), or an embedder object's ``parameters()`` (a torch module); None otherwise.
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
    cached: bool | None = False
    embedded_items: int | None = None
    stored_items: int | None = None
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    columns: dict[str, float] = field(default_factory=dict)
    combined_score: float | None = None
    rank: int | None = None
    intervals: dict[str, list[float]] = field(default_factory=dict)
    run_key: str | None = None
    model_bytes: int | None = None
    cache_scope: str = "cache"
    api_tokens: int | None = None
    bytes_per_vector: int | None = None
    items_per_second: float | None = None
    parameters: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __eq__(self, other: object) -> bool:  # NaN scores equal NaN: a JSON round trip compares equal
        if not isinstance(other, CandidateResult):
            return NotImplemented
        return all(same_value(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

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
        ``"Infinity"`` / ``"-Infinity"``, warnings as objects."""
        d = asdict(self)
        d["warnings"] = [RankingWarning.from_value(w).to_dict() for w in self.warnings]
        d["format_version"] = FORMAT_VERSION
        out: dict[str, Any] = to_jsonable(d, nonfinite="string")
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        """Strict JSON text (no bare NaN; non-finite numbers are the strings of :meth:`to_dict`).
        ``Ranking.from_json(r.to_json()) == r``, NaN scores included."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Ranking":
        """Read :meth:`to_dict`'s form, of this format or an older one down to :data:`OLDEST_FORMAT`.

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

    @classmethod
    def from_json(cls, text: str) -> "Ranking":
        """:meth:`from_dict` of JSON text.

        Raises:
            RankingFormatError: not JSON, or not a ranking this embedselect reads.
        """
        from embedselect.errors import RankingFormatError

        try:
            d = json.loads(text)
        except ValueError as exc:
            raise RankingFormatError(f"not JSON: {exc}") from None
        return cls.from_dict(d)


_NUMERIC_CANDIDATE_FIELDS = ("scores", "columns", "intervals", "combined_score", "seconds")
_NUMERIC_RANKING_FIELDS = ("details", "validation", "uncertainty", "timings")


__all__ = ["FORMAT_VERSION", "OLDEST_FORMAT", "WARNING_CODES", "CandidateResult", "MetricDetails", "PolicySettings",
           "Ranking", "RankingSettings", "RankingTimings", "RankingWarning", "Status", "ValidationReport"]
