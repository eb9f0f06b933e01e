"""The state one run hands from stage to stage (RunContext, EmbedOutcome), the reference data it reads, and the
run's keys and versions (metric cache keys, package versions, score conversion)."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import platform
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from embedselect.config import LoadPolicy, RankConfig, Runtime
from embedselect.errors import ConfigError
from embedselect.metrics.base import get_spec
from embedselect.pipeline.savings import Savings
from embedselect.ranking.result import CandidateResult, RankingTimings, RankingWarning

BeforeMetrics = Callable[[frozenset[str], dict[str, str], Callable[[str], Any]], Any]
"""The hook :attr:`RunContext.before_metrics`: (reference points, families, metric name -> its pair cache) -> ignored."""


@dataclass
class EmbedOutcome:
    """What happened to one candidate in :func:`~embedselect.pipeline.embedding.embed`.

    ``vectors`` is the float32 (n, d) matrix when ``status == "ok"`` and ``keep_vectors`` was set: a read-only
    :class:`numpy.memmap` of the cached file (copy it before writing into it), so that holding every candidate's
    outcome does not hold every candidate's matrix in memory.
    """

    result: CandidateResult
    vectors: np.ndarray | None = field(default=None, repr=False)
    wall_seconds: float = 0.0
    """Wall time of this call for the candidate (resolve, load and embed, or the cache read), in seconds."""
    card: tuple[str, tuple[str, ...], Any] | None = None
    """What the rank stage's copy rule needs from the resolved model (:attr:`RunContext.cards`); it travels with the
    outcome from wherever the candidate was resolved (a Ray worker) to the night's rank stage."""
    untrained_norms: int = 0
    """How many normalisation layers its model held at their initial values (its checkpoint looks untrained), found
    when it was loaded or read from the cache's record of its run; 0: none, or not known. The rank stage makes it an
    ``untrained-checkpoint`` note of the candidate."""

    def stored_or_carried(self, store: Any) -> np.ndarray | None:
        """Its vectors for a caller that did not embed it in its own run (the nightly job's rank stage): those it
        carries when no cache holds them (``result.cache_scope`` ``"input"``: precomputed vectors; ``"run"``: an API
        without a revision), else its run's file read back from ``store`` by run key (a memory map); None when it
        failed, or when its run is no longer in the cache (``cache rm`` since it was embedded)."""
        if not self.result.ok:
            return None
        if self.result.cache_scope != "cache":
            return self.vectors
        return store.load_vectors(self.result.run_key, mmap=True) if self.result.run_key else None


def versions() -> dict[str, str]:
    from importlib import metadata

    from embedselect.version import __version__

    out = {"embedselect": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "torch", "transformers", "sentence-transformers", "timm", "huggingface_hub", "duckdb"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def num(v: Any) -> float:
    """A float from a metric value (None, as JSON writes NaN, becomes NaN)."""
    return math.nan if v is None else float(v)


@functools.lru_cache(maxsize=None)
def code_version(metric: str) -> str:
    """The metric's code version (its spec's hash of its source), computed once per process."""
    return get_spec(metric).code_version()


def competition_rank(r: float | None) -> Any:
    """A rank from ``rank_scores(..., ties="min")`` (an int, or None for an unranked score) as it is stored."""
    return None if r is None else int(r)


def metric_key(metric: str, run_keys: Mapping[str, str], options: Mapping[str, Any], seed: int, labels, *,
               references: frozenset[str] = frozenset(), families: Mapping[str, str] | None = None) -> str:
    """Cache key of a whole metric result: the metric, embedselect's version and metric code, the options, the
    seed, the embedding runs it read (by candidate name), which of them are reference points, which share a family
    and, only for a label prior, the labels."""
    from embedselect.version import __version__

    payload = {
        "metric": metric,
        "version": __version__,
        "code": code_version(metric),
        "options": options,
        "seed": seed,
        "runs": sorted(run_keys.items()),
        "references": sorted(references),
        "families": sorted((families or {}).items()),
        "labels": hashlib.sha256(json.dumps([str(x) for x in labels]).encode()).hexdigest()
        if labels is not None
        else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def load_reference_data(data: Any, config: RankConfig, *, labels: Any = None) -> Any:
    """``data`` as a :class:`~embedselect.data.ReferenceData`, the one way ``select()``, ``embed()``, the search
    index and the nightly job read reference data: a path or a list of items is loaded with ``config``'s column,
    label column, sub-sampling (``max_items``, ``seed``) and ``on_error``; ``labels`` is an array of labels aligned
    with a list of items (a label *column* is ``config.labels``). ``config.drop_duplicates`` (``"exact"``,
    ``"near"`` or None) then removes duplicates (:meth:`~embedselect.data.ReferenceData.drop_duplicates`, after
    sub-sampling).

    A :class:`~embedselect.data.ReferenceData` is used as it is (only duplicates dropped): it was loaded already,
    so a column, label column, labels or sub-sample given with it are refused rather than ignored.

    Raises:
        ConfigError: a setting that cannot apply to ``data`` (see above), or labels as an array for a data file.
    """
    from embedselect.data import ReferenceData

    if labels is not None and config.labels is not None:
        raise ConfigError("give labels either as a column name (labels='label') or as an array, not both")
    if isinstance(data, ReferenceData):
        given = [f"{k}={v!r}" for k, v in (("column", config.column), ("labels", config.labels),
                                             ("id_column", config.id_column)) if v is not None]
        if labels is not None:
            given.append("labels=<array>")
        if config.max_items is not None and len(data) > config.max_items:
            given.append(f"max_items={config.max_items}")
        if given:
            raise ConfigError(f"{', '.join(given)} cannot apply to a ReferenceData that is loaded already: pass them to "
                              "ReferenceData.load(...) (column=, label_column=, labels=, id_column=, max_items=) "
                              "instead")
        return data if config.drop_duplicates is None else data.drop_duplicates(config.drop_duplicates, seed=config.seed)
    kw: dict[str, Any] = {"max_items": config.max_items, "seed": config.seed, "on_error": config.on_error}
    is_file = isinstance(data, (str, Path)) and Path(data).is_file()
    if config.column is not None:
        kw["column"] = config.column
    if config.id_column is not None:
        kw["id_column"] = config.id_column
    if config.labels is not None:
        kw["label_column"] = config.labels
    elif labels is not None:
        if is_file:
            raise ConfigError("for a data file, give labels as the name of its label column (labels='label')")
        kw["labels"] = labels
    ref = ReferenceData.load(data, **kw)
    return ref if config.drop_duplicates is None else ref.drop_duplicates(config.drop_duplicates, seed=config.seed)


STAGES_PER_CANDIDATE = 3
"""Steps of the run's progress display per candidate: resolve, load (or the cache look-up), embed."""


@dataclass
class RunContext:
    """One run of ``select()`` or ``embed()``, built once by :func:`run_context` and handed from stage to stage.

    Internal. The stages, in order: resolve and embed each candidate (:mod:`embedselect.pipeline.embedding`), the
    metrics (:mod:`embedselect.pipeline.scoring`), then the rank, validate and report stages
    (:mod:`embedselect.pipeline.conclude`). The first block of fields is the run's input; the second is filled by the
    stages.

    Attributes:
        ref: the :class:`~embedselect.data.ReferenceData` (n items of one modality).
        candidates: the parsed :class:`~embedselect.models.candidates.Candidate` objects, unique names, in order.
        store: the open :class:`~embedselect.store.Store` (embeddings, metric results, failures, rankings).
        bar: the run's :class:`~embedselect._util.progress.RunProgress`.
        device: the torch device string (``"cpu"``, ``"cuda:0"``), resolved once.
        config: the run's :class:`~embedselect.config.RankConfig`; ``seed``, ``policy``, ``weights`` and
            ``bootstrap`` read it.
        runtime: the run's :class:`~embedselect.config.Runtime`; ``batch_size``, ``token`` and ``progress`` read it.
        metrics: the metrics to compute (``config.metrics``; empty for :func:`embed`).
        metric_options: ``config.metric_options`` under the data's defaults
            (:func:`embedselect.pipeline.defaults.metric_options`).
        outcomes: one :class:`EmbedOutcome` per candidate, in order.
        vectors: candidate name -> float32 (n, d) matrix, the candidates that were embedded: read-only memory maps
            of the cached files (:meth:`~embedselect.store.Store.load_vectors` with ``mmap=True``), so the metrics
            stage holds only the pages of the candidate (or pair) a metric is working on.
        per_metric: metric -> {candidate name: headline score}; ``details``: metric -> the metric's details.
        uncertainty: metric -> its bootstrap summary (when ``bootstrap``).
        warnings: what the result should tell the user, in order.
        pool_notes: the metrics' caveats about the pool's size (``details['pool_warning']``): added to ``warnings``
            only when the ranking itself does not already say that the pool is small.
        timings: wall seconds per candidate, per metric, of the validation and in total.
        cards: candidate name -> (model id, the names a model card may call it by, what its own card declares:
            a :class:`~embedselect.models.candidates.card.CardOrigin` or None), for every resolved candidate.
        copies: the embedded candidates' copy pairs (:class:`~embedselect.metrics.copies.DerivedCopy`) and
        families: candidate name -> family key (:func:`embedselect.pipeline.families.pool_relations`), both found
            before the metrics.
        queries: the :class:`~embedselect.data.queries.QuerySet` of the search check, or None.
        query_vectors: candidate name -> float32 (m, d) query vectors; search_vectors: candidate name -> float32
            (n, d) the items embedded with the model's document prompt (only for a model that has one); query_prompts:
            candidate name -> {"query": prompt name or None, "document": ...} (see
            :func:`embedselect.pipeline.candidate_queries.embed_candidate_queries`).
        run_id: a key unique to this run: the cache key of vectors kept for the run only (an embedder object or
            API without a revision) is made of it and of the model id (for an embedder object, the model its
            candidates of one object share, not its name: ``parse_candidates``), so a model's variants (``?truncate_dim=``, ``?precision=``) and one object's names share one computation
            within the run and nothing across runs.
        run_vectors: such vectors, by that key (float32 (n, d), the model's own, before any reduction).
        reductions: candidate name -> the int8 ranges its reduction took from the reference items (float32 (2, d)),
            for its query vectors.
        answers: a person's answered questions (:class:`~embedselect.validation.answers.Answered`), checked against
            ``ref`` before any work, or None; ``answers_summary``: what they decided
            (:func:`embedselect.pipeline.answers.answers_stage`), the Ranking's ``answers``.
        item_keys: the content key of each item of ``ref`` (:func:`embedselect.store.keys.item_key`), computed by
            the first candidate that needs them (the item index of the cache), else None.
        before_metrics: called once by the metrics stage with the reference points the metrics set aside, the
            embedded candidates' families (what every metric's context receives) and the run's pair caches (metric
            name -> the pair cache that metric reads, whose writes are a saving: :meth:`Savings.pairs
            <embedselect.pipeline.savings.Savings.pairs>`), before any metric, or None
            (:func:`~embedselect.pipeline.run.select_embedded`).
        savings: the writes that only save work later (metric results and pairs, the ranking) and what the cache
            could not keep of them (:class:`~embedselect.pipeline.savings.Savings`).
    """

    ref: Any
    candidates: list[Any]
    store: Any
    bar: Any
    device: str
    config: RankConfig = field(default_factory=RankConfig)
    runtime: Runtime = field(default_factory=Runtime)
    metrics: list[str] = field(default_factory=list)
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: list[EmbedOutcome] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    per_metric: dict[str, dict[str, float]] = field(default_factory=dict)
    combined_weights: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    uncertainty: dict[str, Any] = field(default_factory=dict)
    warnings: list[RankingWarning] = field(default_factory=list)
    pool_notes: list[RankingWarning] = field(default_factory=list)
    timings: RankingTimings = field(default_factory=RankingTimings)
    cards: dict[str, tuple[str, tuple[str, ...], Any]] = field(default_factory=dict)
    copies: list[Any] = field(default_factory=list)
    families: dict[str, str] = field(default_factory=dict)
    queries: Any = None
    query_vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    search_vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    query_prompts: dict[str, dict[str, str | None]] = field(default_factory=dict)
    answers: Any = None
    answers_summary: dict[str, Any] | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    run_vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    reductions: dict[str, Any] = field(default_factory=dict, repr=False)
    item_keys: list[str] | None = field(default=None, repr=False)
    before_metrics: BeforeMetrics | None = field(default=None, repr=False)
    savings: Savings = field(default_factory=Savings, repr=False)

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def policy(self) -> LoadPolicy:
        return self.config.policy

    @property
    def weights(self) -> Mapping[str, float] | None:
        return self.config.weights

    @property
    def bootstrap(self) -> int:
        return self.config.bootstrap

    @property
    def batch_size(self) -> int | None:
        return self.runtime.batch_size

    @property
    def token(self) -> str | None:
        return self.runtime.token

    @property
    def progress(self) -> bool:
        return self.runtime.progress

    @property
    def results(self) -> list[CandidateResult]:
        """The candidates' results, in the order of :attr:`outcomes`."""
        return [o.result for o in self.outcomes]


def run_context(ref: Any, candidates: Any, *, store: Any, config: RankConfig, runtime: Runtime,
                rank: bool = True, embedded: bool = False) -> RunContext:
    """The :class:`RunContext` of a run: records the data set in the store, parses the candidates for the data's
    modality, resolves the device once and sizes the progress display (per candidate, per metric, validation).
    ``rank=False`` (``embed()``): no metrics. ``embedded`` (:func:`~embedselect.pipeline.run.select_embedded`): the
    candidates come embedded, so the display counts no stage of theirs.

    Raises:
        ConfigError: no candidates, or an unknown device.
        CandidateSpecError: a candidate spec is not understood.
    """
    from embedselect.models.backends.device import resolve_device
    from embedselect.models.candidates import parse_candidates
    from embedselect.pipeline.defaults import metric_options as with_defaults
    from embedselect._util.progress import RunProgress

    store.record_dataset(
        fingerprint=ref.fingerprint, modality=ref.modality, n_items=len(ref), source=ref.source, summary=ref.to_dict()
    )
    cands = parse_candidates(candidates, modality=ref.modality)
    if not cands:
        raise ConfigError("no candidates given: pass model ids, local directories, baselines or catalog:NAME")
    dev = resolve_device(runtime.device)
    metrics = list(config.metrics) if rank else []
    steps = (0 if embedded else STAGES_PER_CANDIDATE * len(cands)) + len(metrics) + (
        bool(metrics) and ref.labels is not None)
    options = {m: dict(o) for m, o in config.metric_options.items()}
    return RunContext(
        ref=ref, candidates=cands, store=store, bar=RunProgress(steps, enabled=runtime.progress), device=dev,
        config=config, runtime=runtime, metrics=metrics, metric_options=with_defaults(options, ref.modality),
        timings={"candidates": {}, "metrics": {}, "validation": None, "total": None},
    )
