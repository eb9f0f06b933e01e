"""Stage 2 of a run for one candidate: its embeddings of the run's data, read from the cache (whole, or item by item
from earlier runs of the same vector space), embedded where missing and stored (:func:`candidate_vectors`)."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import MetricError
from embedselect.ranking.result import CandidateResult
from embedselect.models.backends.weights import UNTRAINED_SETTING
from embedselect.store.keys import PARTIAL_SETTING
from embedselect.pipeline.chunked import embed_in_chunks, run_settings
from embedselect.pipeline.context import STAGES_PER_CANDIDATE, RunContext
from embedselect.pipeline.pinning import Pinned

log = logging.getLogger("embedselect.pipeline.embedding")


def candidate_vectors(ctx: RunContext, cand: Any, pinned: Pinned, res: CandidateResult, step: dict[str, Any],
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
            ctx.store.index_run(key, pinned.space, item_keys(ctx))
        log.info("%s: cached (%d x %d)", cand.name, *vectors.shape)
        ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])
        step["done"] = STAGES_PER_CANDIDATE
        return vectors
    if key is not None:
        ctx.store.require_writable(f"store the embeddings of {cand.name}")  # before any work that could not be kept
    items = item_keys(ctx) if pinned.space is not None else None
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
            if key is not None and pinned.space is not None:  # cached per item: kept in chunks as it goes
                new = embed_in_chunks(ctx, cand, pinned, embedder, todo_items, [item_keys(ctx)[i] for i in todo])
            else:
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
        settings, device = run_settings(embedder), embedder.device
        if UNTRAINED_SETTING in settings:
            loaded[UNTRAINED_SETTING] = settings[UNTRAINED_SETTING]
    else:  # every item from the cache: the settings of a run they came from
        source = ctx.store.get_run(stored.runs[0]) if stored is not None and stored.runs else None
        if source is not None:
            settings, device = source.settings, source.device
            loaded[UNTRAINED_SETTING] = settings.get(UNTRAINED_SETTING)
            settings = {k: v for k, v in settings.items() if k != PARTIAL_SETTING}  # a chunk's: this run is whole
    with ctx.bar.stage(f"{cand.name}: store {vectors.nbytes / 2**20:,.1f} MiB", steps=0):  # named, not counted
        ctx.store.save_run(key=key, vectors=vectors, model_id=rc.model_id, revision=rc.revision, backend=rc.backend,
                           settings=settings, fingerprint=ref.fingerprint, device=device,
                           seconds=seconds if len(todo) == n else None,  # the time of this whole matrix only
                           items=(pinned.space, items) if pinned.space is not None and items is not None else None)
    if pinned.space is not None:  # the chunks of an embedding this run has now stored whole
        ctx.store.drop_covered_chunks(pinned.space)
    # hand on the stored file, memory-mapped, and let the in-memory matrix go: the run then holds at most one
    # candidate's matrix in its own memory at a time (the file was just written and checksummed: size check only)
    mapped = ctx.store.load_vectors(key, verify=False, mmap=True)
    return mapped if mapped is not None else vectors


def item_keys(ctx: RunContext) -> list[str]:
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
