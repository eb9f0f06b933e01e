"""Stage 1 of a run for one candidate: pin it to exact bytes (model, revision, backend), check its modality, record
the model, and compute the cache keys of its vectors (:class:`Pinned`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedselect.errors import ConfigError
from embedselect._util.kinds import FITTED_BASELINES, REDUCTION_OPTIONS, is_baseline_id
from embedselect.ranking.result import CandidateResult
from embedselect.pipeline.context import RunContext

log = logging.getLogger("embedselect.pipeline.embedding")


@dataclass(frozen=True)
class Pinned:
    """A resolved candidate and the cache key of its embeddings of the run's data."""

    rc: Any  # ResolvedCandidate
    key: str | None  # None: not cached across runs (precomputed vectors; an embedder object or API without a revision)
    memo: str | None = None  # for vectors kept for the run only: their key in ctx.run_vectors
    space: str | None = None  # the vector space of its per-item vectors in the store; None: kept whole (a fitted
    # baseline) or not stored across runs
    key_options: dict[str, Any] | None = None  # the vector options of its cache keys (None: not stored across runs)
    precision: str | None = None  # the precision of its cache keys


def pin_candidate(ctx: RunContext, cand: Any, res: CandidateResult, step: dict[str, Any]) -> Pinned:
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
            memo = run_key(model_id=rc.model_id, revision=revision, backend=rc.backend, options=base,
                           fingerprint=ctx.ref.fingerprint, precision="as-given")
            # what the metrics and their caches know the vectors by
            res.run_key = memo if not reduced else run_key(
                model_id=rc.model_id, revision=revision, backend=rc.backend, options={**base, **reduced},
                fingerprint=ctx.ref.fingerprint, precision="as-given")
            return Pinned(rc, None, memo)
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
    return Pinned(rc, key, space=space, key_options=dict(key_options), precision=precision)


def _card(rc: Any) -> tuple[str, tuple[str, ...], Any]:
    """(model id, the names a card may call the model by, what its own card declares): for the copy rule of the
    rank stage. A hub snapshot's files link into its repo's cache folder; a local folder's card must be inside it."""
    from embedselect.models.candidates.card import card_origin, model_aliases

    if rc.local_dir is None:  # a built-in baseline: no card, and no card names it
        return rc.model_id, (), None
    within = Path(rc.local_dir).parent.parent if rc.candidate.kind == "hub" else None
    return rc.model_id, model_aliases(rc.model_id, rc.local_dir), card_origin(rc.local_dir, within=within)
