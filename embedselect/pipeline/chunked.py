"""A cached candidate's embedding, kept as it goes (:func:`embed_in_chunks`): the items are embedded in slices of at
most :data:`SLICE_ITEMS`, and what is embedded so far is stored as a partial run (a chunk) once :data:`CHUNK_SECONDS`
have passed since the embedding began or since the last chunk, and when the embedding fails (with the rows an
embedder that failed part-way says it had embedded: :data:`~embedselect.models.backends.base.EMBEDDED_ROWS`) or is
interrupted (Ctrl-C: the interrupt is re-raised once what was embedded is stored). A
chunk is a run of the store like any other (its own file of its rows, its item index rows committed with its row,
checksummed on every read), marked partial in its settings (:data:`~embedselect.store.keys.PARTIAL_SETTING`); the
next run of the same vector space reads its items through the index and embeds only the rest. Once the candidate's
whole run is stored, :meth:`~embedselect.store.Store.drop_covered_chunks` removes the chunks it covers."""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any, Sequence

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import MetricError
from embedselect.models.backends.base import EMBEDDED_ROWS
from embedselect.models.backends.weights import UNTRAINED_SETTING
from embedselect.pipeline.context import RunContext
from embedselect.pipeline.pinning import Pinned
from embedselect.store.keys import PARTIAL_SETTING

log = logging.getLogger("embedselect.pipeline.embedding")

SLICE_ITEMS = 4096
"""Items per call of the embedder when a cached candidate's items are embedded: the most a kill can lose beyond the
time since the last chunk, and the granularity at which :data:`CHUNK_SECONDS` is checked."""
CHUNK_SECONDS = 60.0
"""A chunk is stored after the slice that ends this many seconds (or more) after the embedding began or the last
chunk was stored; never after the last slice (the whole run is stored then)."""


def embed_in_chunks(ctx: RunContext, cand: Any, pinned: Pinned, embedder: Any, items: Sequence[Any],
                    keys: Sequence[str]) -> np.ndarray:
    """float32 (len(items), d): ``embedder``'s vectors of ``items`` (whose item keys are ``keys``), the embedder
    called on slices of at most :data:`SLICE_ITEMS` items, storing chunks as the module says. For a candidate cached
    across runs in a vector space (``pinned.key`` and ``pinned.space`` set).

    Raises:
        MetricError: a slice came back in another width than the slices before it.
        Exception: the embedder's error; when items were kept in chunks, its message says how many and that the
            next run resumes from them.
    """
    n = len(items)
    parts: list[np.ndarray] = []
    stored_parts = stored = 0  # how many of the parts, and of the items, are stored in chunks
    kept = 0  # items stored in chunks by this call
    last = time.monotonic()
    try:
        for start in range(0, n, SLICE_ITEMS):
            stop = min(start + SLICE_ITEMS, n)
            part = check_embeddings(embedder.embed(items[start:stop], batch_size=ctx.batch_size, progress=False),
                                    what=f"the embeddings {cand.name} returned", n=stop - start, dtype=None,
                                    finite=False, error=MetricError)
            if parts and part.shape[1] != parts[0].shape[1]:
                raise MetricError(f"{cand.name} returned {part.shape[1]}-wide vectors for items {start + 1}-{stop} "
                                  f"of {n}, but {parts[0].shape[1]}-wide vectors for the items before")
            parts.append(part)
            if stop < n and time.monotonic() - last >= CHUNK_SECONDS:
                kept += _store_chunk(ctx, pinned, embedder, np.concatenate(parts[stored_parts:]), keys[stored:stop])
                stored_parts, stored, last = len(parts), stop, time.monotonic()
    except BaseException as exc:  # a failure, and Ctrl-C (KeyboardInterrupt) too: keep what is embedded, re-raise
        kept += _keep_on_failure(ctx, pinned, embedder, exc, parts[stored_parts:], stored, keys)
        if kept:
            _say_kept(exc, kept, n, name=pinned.rc.model_id)
        raise
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _keep_on_failure(ctx: RunContext, pinned: Pinned, embedder: Any, exc: BaseException, fresh: list[np.ndarray],
                     stored: int, keys: Sequence[str]) -> int:
    """Store as one chunk what the failed embedding had not stored yet: the slices ``fresh`` (items ``stored`` on),
    and the rows of the failing slice that follows them that the embedder says it had embedded (``exc``'s
    :data:`EMBEDDED_ROWS`, taken off it). A chunk that cannot be stored is logged and the failure stands. Returns how
    many items were stored. A second Ctrl-C while the chunk is written is not caught: the write is atomic (at most
    an orphan file, which ``cache gc`` removes, is left)."""
    start = stored + sum(len(p) for p in fresh)  # the failing slice's first item
    rows, vectors = list(range(stored, start)), list(fresh)
    extra = exc.__dict__.pop(EMBEDDED_ROWS, None)
    if extra is not None:
        idx, vec = extra
        if len(idx) and start + int(np.max(idx)) < len(keys) and (not vectors or vec.shape[1] == vectors[0].shape[1]):
            rows += [start + int(i) for i in idx]
            vectors.append(np.asarray(vec, dtype=np.float32))
    if not rows:
        return 0
    try:
        return _store_chunk(ctx, pinned, embedder, np.concatenate(vectors), [keys[i] for i in rows])
    except Exception as store_exc:  # noqa: BLE001 - the embedding's failure is the one to report
        log.warning("%s: the %d items embedded before the failure could not be kept: %s", pinned.rc.model_id,
                    len(rows), store_exc)
        return 0


def run_settings(embedder: Any) -> dict[str, Any]:
    """The settings a run ``embedder`` embedded is stored with (whole or a chunk): its own, and the count of
    normalisation layers its load found at their initial values when there are any (:data:`UNTRAINED_SETTING`),
    for a later run that reads the cache."""
    settings: dict[str, Any] = embedder.settings()
    if getattr(embedder, UNTRAINED_SETTING, 0):
        settings[UNTRAINED_SETTING] = getattr(embedder, UNTRAINED_SETTING)
    return settings


def _store_chunk(ctx: RunContext, pinned: Pinned, embedder: Any, vectors: np.ndarray, keys: Sequence[str]) -> int:
    """Store ``vectors`` (the rows of the items ``keys``) as a partial run of ``pinned``'s run through
    :meth:`~embedselect.store.Store.save_run`; its key is a hash of the run key and the items, so a chunk of the same
    items stored again replaces it. Returns len(keys)."""
    assert pinned.key is not None and pinned.space is not None
    rc = pinned.rc
    chunk = hashlib.sha256("\n".join([pinned.key, "chunk", *keys]).encode()).hexdigest()
    settings = {**run_settings(embedder), PARTIAL_SETTING: pinned.key}
    ctx.store.save_run(key=chunk, vectors=vectors, model_id=rc.model_id, revision=rc.revision, backend=rc.backend,
                       settings=settings, fingerprint=ctx.ref.fingerprint, device=embedder.device, seconds=None,
                       items=(pinned.space, list(keys)))
    log.info("%s: stored %d embedded items as a partial run (%s)", rc.model_id, len(keys), chunk[:12])
    return len(keys)


def _say_kept(exc: BaseException, kept: int, n: int, *, name: str) -> None:
    """Say that ``kept`` of the ``n`` items are kept in the cache and that the next run resumes: added to the message
    of ``exc`` when it is an error with one (the candidate's failure says it); logged as one warning line for an
    interrupt (Ctrl-C), whose own message and exit status stay the CLI's, or an error without a message."""
    note = (f"the {kept} of its {n} items embedded before this are kept in the cache: the next run resumes from "
            f"them and embeds only the other {n - kept}")
    if isinstance(exc, Exception) and exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}; {note}", *exc.args[1:])
    elif isinstance(exc, Exception):
        log.info("%s: %s", name, note)
    else:
        log.warning("%s: interrupted; %s", name, note)
