"""Stages 1 and 2 of a run: resolve each candidate, read its vectors from the cache or embed and store them
(embed, embed_reference); a candidate's failure is recorded by :mod:`embedselect.pipeline.failed`."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import ConfigError, MetricError
from embedselect._util.kinds import FITTED_BASELINES, is_baseline_id
from embedselect.config import LoadPolicy, OnError, RankConfig, Runtime
from embedselect.models.backends.reduce import REDUCTION_OPTIONS, bytes_per_vector, reduction_of
from embedselect.models.backends.weights import UNTRAINED_SETTING
from embedselect.ranking.result import CandidateResult, RankingWarning
from embedselect.pipeline.context import STAGES_PER_CANDIDATE, EmbedOutcome, RunContext, load_reference_data, run_context
from embedselect.pipeline.failed import record_candidate_failure

log = logging.getLogger(__name__)


def embed(
    data: Any,
    candidates: Any,
    *,
    column: str | None = None,
    max_items: int | None = None,
    seed: int = 0,
    on_error: OnError = "fail",
    id_column: str | None = None,
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    token: str | None = None,
    progress: bool = False,
    keep_vectors: bool = False,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
) -> list[EmbedOutcome]:
    """Make sure every candidate's embeddings of ``data`` are in the cache; compute only what is missing.

    A candidate that cannot be resolved, loaded or run is returned with ``status="failed"`` and its reason,
    recorded in the store's ``failures`` table, and the others go on. The arguments mean what they mean for
    :func:`~embedselect.pipeline.run.select` (``config`` / ``runtime`` instead of the keywords likewise; of a
    RankConfig only the data settings, ``seed`` and ``policy`` apply: embedding reads no labels and computes no
    metric, so a config with ``labels``, ``drop_duplicates``, weights or options is refused);
    ``keep_vectors`` puts each float32 (n, d) matrix into its outcome (a read-only memory map of the cached file;
    see :class:`EmbedOutcome`).

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.

    Raises:
        ConfigError: a setting embedding does not use (see above), or an invalid one.
    """
    from embedselect.store import Store

    config, runtime = _embed_configs(config, runtime, dict(
        column=column, id_column=id_column, max_items=max_items, seed=seed, on_error=on_error, policy=policy,
        cache_dir=cache_dir, device=device, batch_size=batch_size, token=token, progress=progress))
    ref = load_reference_data(data, config)
    return embed_reference(ref, candidates, store=Store.open(runtime.cache_dir), config=config, runtime=runtime,
                           keep_vectors=keep_vectors)


def _embed_configs(config: RankConfig | None, runtime: Runtime | None,
                   keywords: dict[str, Any]) -> tuple[RankConfig, Runtime]:
    """:func:`embed`'s RankConfig and Runtime: the objects given, or built from its keywords; refuses a keyword
    beside the object that holds it and the settings of a RankConfig that embedding would not use."""
    from embedselect.config import from_keywords

    built, built_runtime = from_keywords(**keywords)
    defaults, default_runtime = from_keywords()
    if config is not None:
        clash = [k for k in ("column", "id_column", "max_items", "seed", "on_error", "policy")
                 if getattr(built, k) != getattr(defaults, k)]
        if clash:
            raise ConfigError(f"{', '.join(clash)} given both as keyword(s) and by config=")
        unused = [f"{k}={getattr(config, k)!r}" for k in ("labels", "drop_duplicates", "weights", "bootstrap")
                  if getattr(config, k) != getattr(defaults, k)] + (["metric_options"] if config.metric_options else [])
        if unused:
            raise ConfigError(f"embed() does not use {', '.join(unused)} (it reads no labels and computes no metric); "
                              "drop them, or call select()")
    if runtime is not None and built_runtime != default_runtime:
        raise ConfigError("cache_dir, device, batch_size, token or progress given both as keyword(s) and by runtime=")
    return config or built, runtime or built_runtime


def embed_reference(
    ref: Any,
    candidates: Any,
    *,
    store: Any,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
    keep_vectors: bool = False,
) -> list[EmbedOutcome]:
    """:func:`embed` for a caller that already holds the loaded data and an open store (the search index, the
    nightly job, the executors' workers), so that neither is loaded or opened twice.

    Args:
        ref: a :class:`~embedselect.data.ReferenceData`.
        candidates: as for :func:`embed` (specs, :class:`~embedselect.models.candidates.Candidate` objects, or both).
        store: the :class:`~embedselect.store.Store` the embeddings are read from and written to.
        config: its ``seed`` (baselines) and ``policy`` apply (default :class:`~embedselect.config.RankConfig()`).
        runtime: its ``device``, ``batch_size``, ``token`` and ``progress`` apply (``cache_dir``: ``store`` is the
            cache).
        keep_vectors: as for :func:`embed`.

    Returns:
        one :class:`EmbedOutcome` per candidate, in the order given.
    """
    ctx = run_context(ref, candidates, store=store, config=config or RankConfig(), runtime=runtime or Runtime(),
                      rank=False)
    try:
        return embed_stage(ctx, keep_vectors=keep_vectors)
    finally:
        ctx.bar.close()


def embed_stage(ctx: RunContext, *, keep_vectors: bool) -> list[EmbedOutcome]:
    """Stages 1 and 2, one candidate at a time: resolve it (:func:`_resolve`), then read its vectors from the cache
    or compute and store them (:func:`_vectors`). A candidate's failure is recorded and the others go on. Fills
    ``ctx.outcomes``, ``ctx.vectors`` (with ``keep_vectors``) and ``ctx.timings["candidates"]``."""
    for cand in ctx.candidates:
        outcome = _embed_candidate(ctx, cand, keep_vectors=keep_vectors)
        ctx.outcomes.append(outcome)
        ctx.timings["candidates"][cand.name] = outcome.wall_seconds
        if outcome.result.ok and outcome.vectors is not None:
            ctx.vectors[cand.name] = outcome.vectors
    return ctx.outcomes


@dataclass(frozen=True)
class _Pinned:
    """A resolved candidate and the cache key of its embeddings of the run's data."""

    rc: Any  # ResolvedCandidate
    key: str | None  # None: not cached across runs (precomputed vectors; an embedder object or API without a revision)
    memo: str | None = None  # for vectors kept for the run only: their key in ctx.run_vectors
    space: str | None = None  # the vector space of its per-item vectors in the store; None: kept whole (a fitted
    # baseline) or not stored across runs
    key_options: dict[str, Any] | None = None  # the vector options of its cache keys (None: not stored across runs)
    precision: str | None = None  # the precision of its cache keys


def _embed_candidate(ctx: RunContext, cand: Any, *, keep_vectors: bool) -> EmbedOutcome:
    """One candidate's embeddings of ``ctx.ref`` (from the cache or computed), or its failure; see :func:`embed`."""
    t_start = time.perf_counter()
    res = CandidateResult(name=cand.name, spec=cand.spec)
    outcome = EmbedOutcome(res)
    step = {"stage": "resolve", "done": 0}  # where a failure happened, and the progress steps counted so far
    try:
        pinned = _resolve(ctx, cand, res, step)
        outcome.card = ctx.cards.get(cand.name)
        loaded: dict[str, Any] = {}  # the embedder, when _vectors loaded one (the queries reuse it)
        if pinned.key is None:
            vectors = _vectors(ctx, cand, pinned, res, step, loaded)
        else:
            with ctx.store.run_lock(pinned.key, what=cand.name):  # a concurrent run of the same key: wait, read it
                vectors = _vectors(ctx, cand, pinned, res, step, loaded)
        reduction = reduction_of(cand.options, name=cand.name)
        if reduction is not None:  # ?truncate_dim= / ?precision=: computed from the model's own vectors
            vectors, ctx.reductions[cand.name] = reduction.apply(vectors, name=cand.name)
        res.n, res.dim = int(vectors.shape[0]), int(vectors.shape[1])
        res.bytes_per_vector = bytes_per_vector(res.dim, cand.options)
        if cand.kind != "vectors" and res.seconds and res.seconds > 0:
            res.items_per_second = (res.embedded_items or res.n) / res.seconds  # the items those seconds embedded
        if ctx.queries is not None:
            step["stage"] = "queries"
            _embed_queries(ctx, cand, pinned, vectors, loaded.get("embedder"))
        if keep_vectors:
            outcome.vectors = vectors
        outcome.untrained_norms = int(loaded.get(UNTRAINED_SETTING) or 0)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one model's failure must not end the run
        record_candidate_failure(ctx, cand, res, exc, step)
    outcome.wall_seconds = time.perf_counter() - t_start
    return outcome


def _resolve(ctx: RunContext, cand: Any, res: CandidateResult, step: dict[str, Any]) -> _Pinned:
    """Stage 1 for one candidate: pin it to exact bytes, check its modality, record the model and compute the cache
    key of its vectors (model, revision, backend, the options that change vectors, data fingerprint, precision).

    Precomputed vectors, and an embedder object or a hosted API without a revision, are not stored: their pinned key is None, and their
    result's ``run_key`` names the vectors for the metrics only (the vectors' content hash; a key unique to this run
    for an unpinned embedder) and ``cache_scope`` says so (``"input"`` / ``"run"``)."""
    from embedselect.models.backends.base import vector_options
    from embedselect.models.backends.baselines import baseline_key_options
    from embedselect.models.backends.device import key_precision, library_output
    from embedselect.models.backends.loader import object_parameter_count, parameter_count, weight_bytes
    from embedselect.models.candidates import resolve_candidate
    from embedselect.store import run_key, space_key

    with ctx.bar.stage(f"{cand.name}: resolve"):
        step["done"] += 1
        with library_output():
            rc = resolve_candidate(cand, policy=ctx.policy.for_model(cand.ref), token=ctx.token,
                                   digest_dir=None if ctx.store.read_only else ctx.store.root / "digests")
        res.model_id, res.revision, res.backend, res.modality = rc.model_id, rc.revision, rc.backend, rc.modality
        ctx.cards[cand.name] = _card(rc)
        res.model_bytes = weight_bytes(rc.local_dir) if rc.local_dir else None
        res.parameters = (parameter_count(rc.local_dir) if rc.local_dir
                          else object_parameter_count(cand.embedder) if cand.kind == "embedder" else None)
        if rc.modality != ctx.ref.modality:
            raise ConfigError(
                f"{cand.name} embeds {rc.modality} but the reference data is {ctx.ref.modality}; "
                "choose candidates of the data's modality"
            )
        revision = rc.revision
        if cand.kind == "vectors":  # read from the user's input every run (revision: their content hash)
            res.cache_scope = "input"
        elif cand.kind == "embedder" and not cand.revision:
            res.cache_scope, revision = "run", f"unpinned-{ctx.run_id}"  # a key no other run shares
            res.revision = None
            log.warning("%s: an embedder object without a revision: its vectors are kept for this run only (give "
                        "Candidate(name=..., embedder=..., revision=...) to cache them across runs)", cand.name)
        elif cand.kind == "api" and not cand.revision:
            res.cache_scope, revision = "run", f"unpinned-{ctx.run_id}"
            res.revision = None
            log.warning("%s: a hosted embedding API without ?revision=: its vectors are kept for this run only (a "
                        "provider may change the model behind a name; add ?revision=NAME to cache them across runs "
                        "under model, dimensions and host)", cand.name)
        # ?truncate_dim= / ?precision= are computed from the model's own vectors: those are stored (or kept) under
        # the key without them, shared with the model's other variants; the candidate's run_key has them
        reduced = {k: v for k, v in vector_options(cand.options).items() if k in REDUCTION_OPTIONS}
        base = {k: v for k, v in vector_options(cand.options).items() if k not in REDUCTION_OPTIONS}
        if res.cache_scope != "cache":
            # an embedder object is known by its identity within the run, not by its name: one object under two
            # names is called once (as two names of one hub model share one run key)
            held = f"embedder:object-{id(cand.embedder)}" if cand.kind == "embedder" else rc.model_id
            memo = run_key(model_id=held, revision=revision, backend=rc.backend, options=base,
                           fingerprint=ctx.ref.fingerprint, precision="as-given")
            # what the metrics and their caches know the vectors by
            res.run_key = memo if not reduced else run_key(
                model_id=rc.model_id, revision=revision, backend=rc.backend, options={**base, **reduced},
                fingerprint=ctx.ref.fingerprint, precision="as-given")
            return _Pinned(rc, None, memo)
        ctx.store.record_model(model_id=rc.model_id, revision=rc.revision, backend=rc.backend, modality=rc.modality,
                               spec=cand.spec, local_dir=str(rc.local_dir) if rc.local_dir else None)
        is_baseline = is_baseline_id(rc.model_id)
        precision = ("as-returned" if cand.kind in ("embedder", "api")  # the object or server decides
                     else key_precision(cand.options.get("dtype"), ctx.device, baseline=is_baseline))
        key_options = (baseline_key_options(rc.backend, modality=rc.modality, options=base, seed=ctx.seed)
                       if is_baseline else base)  # a baseline's every own setting (?seed= over the run's, ?dim=, ...)
        key = run_key(model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options=key_options,
                      fingerprint=ctx.ref.fingerprint, precision=precision)
        res.run_key = key if not reduced else run_key(
            model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options={**key_options, **reduced},
            fingerprint=ctx.ref.fingerprint, precision=precision)
        space = None if rc.backend in FITTED_BASELINES else space_key(  # a fit depends on the whole data
            model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options=key_options, precision=precision)
    return _Pinned(rc, key, space=space, key_options=dict(key_options), precision=precision)


def _card(rc: Any) -> tuple[str, tuple[str, ...], Any]:
    """(model id, the names a card may call the model by, what its own card declares): for the copy rule of the
    rank stage. A hub snapshot's files link into its repo's cache folder; a local folder's card must be inside it."""
    from embedselect.models.candidates.card import card_origin, model_aliases

    if rc.local_dir is None:  # a built-in baseline: no card, and no card names it
        return rc.model_id, (), None
    within = Path(rc.local_dir).parent.parent if rc.candidate.kind == "hub" else None
    return rc.model_id, model_aliases(rc.model_id, rc.local_dir), card_origin(rc.local_dir, within=within)


def _vectors(ctx: RunContext, cand: Any, pinned: _Pinned, res: CandidateResult, step: dict[str, Any],
             loaded: dict[str, Any]) -> np.ndarray:
    """Stage 2 for one candidate: its float32 (n, d) embeddings of ``ctx.ref``, as a read-only memory map of its
    run's cached file (the in-memory matrix only when the file cannot be mapped back, or for a candidate kept for
    this run only). Sets ``res.embedded_items`` / ``res.stored_items``.

    The run's own file when the cache holds it (its items are then added to the item index if an embedselect
    without the index stored it); else the items whose vectors any earlier run of the same vector space stored
    (:meth:`~embedselect.store.Store.stored_items`, keyed by content) are read, only the others are embedded (the
    model is loaded only if there are any), and the assembled matrix is stored as this run's file with its item
    index rows. A fitted baseline (its vectors depend on the whole data) has no vector space: all its items are
    embedded. A model it loads is left in ``loaded["embedder"]``, and how many of its model's normalisation layers
    held their initial values (found at its load, or the record of the stored run it read) in
    ``loaded[UNTRAINED_SETTING]``."""
    from embedselect.models.backends.device import library_output

    rc, key, ref = pinned.rc, pinned.key, ctx.ref
    if cand.kind == "vectors":
        return _precomputed(ctx, cand, res, step)
    n = len(ref)
    if key is None and pinned.memo in ctx.run_vectors:  # another variant of this model computed them in this run
        res.seconds = 0.0
        res.embedded_items, res.stored_items = 0, 0
        res.cached = None  # neither embedded nor read from the cache: taken from the other variant's
        if cand.kind == "api":
            res.api_tokens = 0
        ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])
        step["done"] = STAGES_PER_CANDIDATE
        return ctx.run_vectors[pinned.memo]
    step["stage"] = "cache"
    vectors = ctx.store.load_vectors(key, mmap=True) if key is not None else None
    if vectors is not None:
        rec = ctx.store.get_run(key)
        res.cached, res.seconds = True, rec.seconds if rec else None
        loaded[UNTRAINED_SETTING] = rec.settings.get(UNTRAINED_SETTING) if rec else None
        res.embedded_items, res.stored_items = 0, n
        if cand.kind == "api":
            res.api_tokens = 0  # nothing sent: a paid call is never repeated for stored vectors
        if pinned.space is not None and ctx.store.needs_index(key):  # stored by an embedselect without the index
            ctx.store.index_run(key, pinned.space, _item_keys(ctx))
        log.info("%s: cached (%d x %d)", cand.name, *vectors.shape)
        ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])
        step["done"] = STAGES_PER_CANDIDATE
        return vectors
    if key is not None:
        ctx.store.require_writable(f"store the embeddings of {cand.name}")  # before any work that could not be kept
    items = _item_keys(ctx) if pinned.space is not None else None
    stored = ctx.store.stored_items(pinned.space, items) if pinned.space is not None and items is not None else None
    todo = np.flatnonzero(~stored.found) if stored is not None else np.arange(n)
    res.embedded_items, res.stored_items = int(len(todo)), n - int(len(todo))
    res.cached = not len(todo)  # no forward pass in this call
    if stored is not None and stored.runs:
        log.info("%s: %d of %d items read from the cache, %d to embed", cand.name, res.stored_items, n, len(todo))
    embedder, seconds = None, None
    if len(todo):
        step["stage"] = "load"
        from embedselect.models.backends.loader import load_embedder

        with ctx.bar.stage(f"{cand.name}: load"), library_output():
            step["done"] += 1
            embedder = load_embedder(rc, device=ctx.device, policy=ctx.policy.for_model(cand.ref),
                                     options=cand.options, seed=ctx.seed)
        loaded["embedder"] = embedder
        step["stage"] = "embed"
        log.info("%s: embedding %d %s items on %s", cand.name, len(todo), ref.modality, embedder.device)
        todo_items = list(ref.items) if len(todo) == n else [ref.items[i] for i in todo]
        with ctx.bar.stage(f"{cand.name}: embed {len(todo)} {ref.modality} items"):
            step["done"] += 1
            t0 = time.perf_counter()
            # progress=False: the run's line shows this stage and its items/s; the backend's own bar (sentence-
            # transformers' "Batches", a per-item bar) was drawn under it, two bars fighting for the terminal
            new = embedder.embed(todo_items, batch_size=ctx.batch_size, progress=False)
            seconds = time.perf_counter() - t0
        ctx.bar.rate(cand.name, len(todo), seconds)
        new = check_embeddings(new, what=f"the embeddings {cand.name} returned", n=len(todo), dtype=None,
                               finite=False, error=MetricError)  # not finite: refused by the store, with its message
        vectors = _assemble(cand.name, new, todo, stored)
    else:
        assert stored is not None and stored.vectors is not None  # n >= 1 items, all found
        vectors = stored.vectors
        ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])  # load and embed: nothing to do
        step["done"] = STAGES_PER_CANDIDATE
    res.seconds = seconds
    if cand.kind == "api":  # only the items not stored were sent
        res.api_tokens = int(getattr(embedder, "tokens_used", 0)) if embedder is not None else 0
    if key is None:  # cached for this run only: the vectors stay in memory
        if pinned.memo is not None:
            ctx.run_vectors[pinned.memo] = vectors
        ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])
        step["done"] = STAGES_PER_CANDIDATE
        return vectors
    step["stage"] = "store"
    settings: dict[str, Any] = {}
    device: str | None = None
    if embedder is not None:  # with what its load found of its weights, for a later run that reads the cache
        settings, device = embedder.settings(), embedder.device
        if getattr(embedder, UNTRAINED_SETTING, 0):
            settings[UNTRAINED_SETTING] = loaded[UNTRAINED_SETTING] = getattr(embedder, UNTRAINED_SETTING)
    else:  # every item from the cache: the settings of a run they came from
        source = ctx.store.get_run(stored.runs[0]) if stored is not None and stored.runs else None
        if source is not None:
            settings, device = source.settings, source.device
            loaded[UNTRAINED_SETTING] = settings.get(UNTRAINED_SETTING)
    with ctx.bar.stage(f"{cand.name}: store {vectors.nbytes / 2**20:,.1f} MiB", steps=0):  # named, not counted
        ctx.store.save_run(key=key, vectors=vectors, model_id=rc.model_id, revision=rc.revision, backend=rc.backend,
                           settings=settings, fingerprint=ref.fingerprint, device=device,
                           seconds=seconds if len(todo) == n else None,  # the time of this whole matrix only
                           items=(pinned.space, items) if pinned.space is not None and items is not None else None)
    # hand on the stored file, memory-mapped, and let the in-memory matrix go: the run then holds at most one
    # candidate's matrix in its own memory at a time (the file was just written and checksummed: size check only)
    mapped = ctx.store.load_vectors(key, verify=False, mmap=True)
    return mapped if mapped is not None else vectors


def _item_keys(ctx: RunContext) -> list[str]:
    """The item key of each item of ``ctx.ref``, in order (:func:`~embedselect.store.keys.item_key` of the bytes its
    fingerprint covers), computed once per run."""
    from embedselect.data.duplicates import item_digests
    from embedselect.store.keys import item_key

    if ctx.item_keys is None:
        ctx.item_keys = [item_key(d) for d in item_digests(ctx.ref)]
    return ctx.item_keys


def _assemble(name: str, new: np.ndarray, todo: np.ndarray, stored: Any) -> np.ndarray:
    """The run's matrix: the stored rows of ``stored`` (:class:`~embedselect.store.vectors.StoredItems`, or None)
    with ``new`` (len(todo), d) at rows ``todo``; float32 (n, d)."""
    if stored is None or stored.vectors is None:
        return new
    out = stored.vectors
    if new.shape[1] != out.shape[1]:
        raise MetricError(f"{name} returned {new.shape[1]} dimensions for new items, but its cached vectors of the "
                          f"same model and options have {out.shape[1]}; remove them with `embedselect cache rm`")
    out[todo] = new
    return out


def _precomputed(ctx: RunContext, cand: Any, res: CandidateResult, step: dict[str, Any]) -> np.ndarray:
    """Stage 2 of a candidate of precomputed vectors: its rows for ``ctx.ref``'s items, float32 (n, d), picked by
    item id or source row (:func:`~embedselect.models.backends.custom.precomputed_vectors`); nothing is cached."""
    from embedselect.models.backends.custom import precomputed_vectors

    step["stage"] = "load"
    with ctx.bar.stage(f"{cand.name}: read precomputed vectors"):
        step["done"] += 1
        vectors = precomputed_vectors(cand.vectors, name=cand.name, ids=ctx.ref.ids,
                                      positions=ctx.ref.source_positions(), n_source=ctx.ref.report.n_total)
    res.embedded_items, res.stored_items = 0, 0
    res.cached = None  # neither embedded nor read from the cache: given
    ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])
    step["done"] = STAGES_PER_CANDIDATE
    return vectors


def _embed_queries(ctx: RunContext, cand: Any, pinned: _Pinned, vectors: np.ndarray, embedder: Any) -> None:
    """The search check's vectors for one candidate (``select(..., queries=)``): ``ctx.query_vectors[name]`` float32
    (m, d), the queries embedded as the model embeds queries, and, only when the model embeds documents with a prompt
    of its own, ``ctx.search_vectors[name]`` float32 (n, d), the reference items embedded with it (else the search
    runs over the ranking's own ``vectors``). Both are read from the cache when an earlier run stored them, and stored
    otherwise (:mod:`embedselect.pipeline.query_vectors`: keyed by model, revision, options and the texts' content;
    a run that finds them all loads no model).

    The rule: a sentence-transformers model that defines a non-empty ``query`` prompt (``document`` / ``passage`` /
    ``corpus`` for the documents) gets it, as ``encode_query`` / ``encode_document`` would; a candidate's own
    ``?prompt=`` / ``?prompt_name=`` is used for queries and documents alike; every other model embeds a query as it
    embeds an item. A fitted baseline (tfidf-svd) is fitted on the reference items, the fit its item vectors come
    from, and transforms the queries with it (never refitted on the queries). ``embedder``: the model
    :func:`_vectors` loaded, or None (it is loaded here when some text must be embedded)."""
    from embedselect.models.backends.loader import load_embedder
    from embedselect.models.backends.device import library_output
    from embedselect.pipeline.query_vectors import RoleTexts, role_vectors, texts_fingerprint

    rc, ref, queries = pinned.rc, ctx.ref, list(ctx.queries.queries)
    if cand.kind == "vectors":  # precomputed vectors: there is no model to embed the queries with
        ctx.warnings.append(RankingWarning("metric-excluded", f"{cand.name} is precomputed vectors: it cannot embed "
                                           "the queries and is left out of the search check", [cand.name]))
        return
    fitted = rc.backend in FITTED_BASELINES
    held = {"embedder": None if fitted else embedder}

    def model() -> Any:
        if held["embedder"] is None:
            with ctx.bar.stage(f"{cand.name}: load for the queries", steps=0), \
                    library_output():
                held["embedder"] = load_embedder(rc, device=ctx.device, policy=ctx.policy.for_model(cand.ref),
                                                 options=cand.options, seed=ctx.seed,
                                                 fit_items=list(ref.items) if fitted else None)
        return held["embedder"]

    asked = RoleTexts("query", queries)
    if fitted:  # its fit is the reference items': the queries' vectors depend on them too
        asked.fingerprint = texts_fingerprint([ref.fingerprint, asked.fingerprint])
    with ctx.bar.stage(f"{cand.name}: embed {len(queries)} queries", steps=0):
        q, prompts = role_vectors(ctx, cand.name, pinned, asked, model)
    reduction = reduction_of(cand.options, name=cand.name)
    if reduction is not None:  # as its items: truncated and quantised with the items' int8 ranges
        q, _ = reduction.apply(q, name=cand.name, ranges=ctx.reductions.get(cand.name))
    ctx.query_vectors[cand.name] = check_embeddings(q, what=f"{cand.name}'s query vectors", n=len(queries),
                                                    dtype=None, error=MetricError)
    if prompts["document"]:
        documents = RoleTexts("document", [str(t) for t in ref.items], fingerprint=ref.fingerprint,
                              item_keys=_item_keys(ctx))
        with ctx.bar.stage(f"{cand.name}: embed {len(ref)} items as documents", steps=0):
            d, _ = role_vectors(ctx, cand.name, pinned, documents, model, prompts=prompts)
        if reduction is not None:
            d, _ = reduction.apply(d, name=cand.name, ranges=ctx.reductions.get(cand.name))
        ctx.search_vectors[cand.name] = check_embeddings(d, what=f"{cand.name}'s document vectors", n=len(ref),
                                                         dtype=None, error=MetricError)
    if ctx.query_vectors[cand.name].shape[1] != vectors.shape[1]:
        raise MetricError(f"{cand.name} embeds queries in {ctx.query_vectors[cand.name].shape[1]} dimensions but its "
                          f"items in {vectors.shape[1]}")
    ctx.query_prompts[cand.name] = prompts
