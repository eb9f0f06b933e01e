"""One candidate's outcome in a :class:`~embedselect.ranking.result.Ranking`: :class:`CandidateResult` and its
:data:`Status`."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from embedselect.ranking.io import same_value

Status = Literal["ok", "failed"]
"""A candidate's outcome: scored, or failed (with ``error_type`` and ``error``)."""


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


__all__ = ["CandidateResult", "Status"]
