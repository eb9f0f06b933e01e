"""The search check's vectors of one candidate (``select(..., queries=)``): the queries embedded as the model embeds
queries and, for a model with a document prompt of its own, the reference items embedded as documents; read from the
cache when an earlier run stored them.

Cache keys, like the reference embeddings' (:func:`embedselect.pipeline.pinning.pin_candidate`):

- run key: :func:`~embedselect.store.keys.run_key` of the candidate's model, revision, backend, vector options and
  precision, with the option ``embed_role`` (``"query"`` / ``"document"``) added, over the texts' content (the
  queries: sha256 of their item keys in order; the documents: the reference data's fingerprint; a fitted baseline's
  queries: both, since its fit is the documents');
- item index: the same vector space with ``embed_role`` (:func:`~embedselect.store.keys.space_key`), each text keyed
  by its content (:func:`~embedselect.store.keys.item_key` of its UTF-8 bytes), so a later run over other queries
  embeds only the queries no earlier run embedded. A fitted baseline has no item index (its vectors depend on the fit).

The role prompts the model chose (``{"query": name or None, "document": ...}``) are stored in the run's settings, so a
run that finds every vector in the cache loads no model. Vectors are written by
:meth:`~embedselect.store.Store.save_run` (the file written and fsynced before the row that makes it visible is
committed), under the run's lock; an entry whose file is missing, short or fails its checksum is discarded and
embedded again. A read-only cache is read, never written. A candidate whose vectors are kept for the run only (an
embedder object or an API without a revision) embeds its queries every run.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any, Callable, Sequence

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect.errors import MetricError

log = logging.getLogger(__name__)

__all__ = ["ROLE_OPTION", "RoleTexts", "role_vectors", "texts_fingerprint"]

ROLE_OPTION = "embed_role"
"""The option added to a candidate's vector options in the cache keys of its query and document vectors."""
PROMPTS_SETTING = "role_prompts"
"""The key of the role prompts in a stored query or document run's settings."""


def texts_fingerprint(item_keys: Sequence[str]) -> str:
    """sha256 hex of texts' item keys in order: the content key of a list of queries."""
    h = hashlib.sha256()
    for k in item_keys:
        h.update(k.encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


class RoleTexts:
    """Texts to embed for one role: ``texts`` (m strings), their ``item_keys`` (m item keys, or None to key them
    here) and the ``fingerprint`` of the run key."""

    def __init__(self, role: str, texts: Sequence[str], fingerprint: str | None = None,
                 item_keys: Sequence[str] | None = None) -> None:
        from embedselect.store.keys import item_key

        self.role = role
        self.texts = list(texts)
        self.item_keys = list(item_keys) if item_keys is not None else [item_key(t.encode("utf-8")) for t in self.texts]
        self.fingerprint = fingerprint or texts_fingerprint(self.item_keys)


def role_prompts(embedder: Any) -> dict[str, str | None]:
    """``{"query": ..., "document": ...}``: the model's own prompt name per role (``embedder.role_prompt``), None for
    a model without one."""
    role_prompt = getattr(embedder, "role_prompt", None)
    return {role: role_prompt(role) if role_prompt else None for role in ("query", "document")}


def _embed(embedder: Any, texts: list[str], prompt: str | None, batch_size: int | None) -> np.ndarray:
    return (embedder.embed(texts, batch_size=batch_size, prompt_name=prompt) if prompt
            else embedder.embed(texts, batch_size=batch_size))


def role_vectors(ctx: Any, name: str, pinned: Any, what: RoleTexts, model: Callable[[], Any],
                 prompts: dict[str, str | None] | None = None) -> tuple[np.ndarray, dict[str, str | None]]:
    """One candidate's vectors of ``what.texts`` embedded for ``what.role``, from the cache or embedded and stored.

    Args:
        ctx: the run (:class:`~embedselect.pipeline.context.RunContext`: its store, batch size, progress bar).
        name: the candidate's name (messages).
        pinned: the candidate's :class:`~embedselect.pipeline.pinning.Pinned`: its resolved model, and its
            key options and precision (None when its vectors are not cached across runs).
        model: returns the loaded embedder (loaded on the first call, only when some text must be embedded).
        prompts: the role prompts when already known (the query run's), else read from the store or the model.

    Returns:
        (float32 (m, d) vectors before any ``?truncate_dim=`` / ``?precision=`` reduction, the role prompts).
    """
    from embedselect._util.kinds import FITTED_BASELINES
    from embedselect.store.keys import run_key, space_key

    rc = pinned.rc
    batch = ctx.batch_size
    if pinned.key is None or pinned.key_options is None:  # not cached across runs: embed every time
        e = model()
        got = role_prompts(e) if prompts is None else prompts
        return _embed(e, what.texts, got[what.role], batch), got
    options = {**pinned.key_options, ROLE_OPTION: what.role}
    key = run_key(model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options=options,
                  fingerprint=what.fingerprint, precision=pinned.precision)
    space = None if rc.backend in FITTED_BASELINES else space_key(
        model_id=rc.model_id, revision=rc.revision, backend=rc.backend, options=options, precision=pinned.precision)
    store = ctx.store
    with store.run_lock(key, what=f"{name}'s {what.role} vectors"):
        cached = store.load_vectors(key)
        if cached is not None:
            rec = store.get_run(key)
            stored_prompts = (rec.settings or {}).get(PROMPTS_SETTING) if rec is not None else None
            if isinstance(stored_prompts, dict):
                log.info("%s: %d %s vectors read from the cache", name, len(cached), what.role)
                return cached, {r: stored_prompts.get(r) for r in ("query", "document")}
        stored = store.stored_items(space, what.item_keys) if space is not None else None
        todo = np.flatnonzero(~stored.found) if stored is not None else np.arange(len(what.texts))
        settings: dict[str, Any] = {}
        device, seconds = None, None
        if len(todo):
            e = model()
            got = role_prompts(e) if prompts is None else prompts
            t0 = time.perf_counter()
            new = _embed(e, [what.texts[i] for i in todo], got[what.role], batch)
            seconds = time.perf_counter() - t0
            new = check_embeddings(new, what=f"{name}'s {what.role} vectors", n=len(todo), dtype=None,
                                   error=MetricError)
            if stored is not None and stored.vectors is not None:
                if new.shape[1] != stored.vectors.shape[1]:
                    raise MetricError(f"{name} returned {new.shape[1]} dimensions for new {what.role} texts, but its "
                                      f"cached ones have {stored.vectors.shape[1]}; remove them with "
                                      "`embedselect cache rm`")
                vectors = stored.vectors
                vectors[todo] = new
            else:
                vectors = np.asarray(new, dtype=np.float32)
            settings, device = dict(e.settings()) if hasattr(e, "settings") else {}, getattr(e, "device", None)
        else:  # every text stored by earlier runs of this space
            assert stored is not None and stored.vectors is not None and stored.runs
            vectors = stored.vectors
            source = store.get_run(stored.runs[0])
            got = (dict(prompts) if prompts is not None
                   else dict((source.settings or {}).get(PROMPTS_SETTING) or {}) if source is not None else {})
            if set(got) != {"query", "document"}:  # a source without its prompts: ask the model
                got = role_prompts(model())
            if source is not None:
                settings, device = dict(source.settings), source.device
            log.info("%s: every %s vector read from the cache's item index", name, what.role)
        if store.read_only:
            log.info("%s: the cache is read-only: its %s vectors are not stored", name, what.role)
        else:
            store.save_run(key=key, vectors=vectors, model_id=rc.model_id, revision=rc.revision, backend=rc.backend,
                           settings={**settings, PROMPTS_SETTING: got}, fingerprint=what.fingerprint, device=device,
                           seconds=seconds if len(todo) == len(what.texts) else None,
                           items=(space, what.item_keys) if space is not None else None)
    return vectors, got
