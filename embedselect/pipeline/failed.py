"""A candidate that failed in a run: its result marked failed, the failure recorded in the cache (token-free) and
logged, its remaining progress steps counted."""

from __future__ import annotations

import logging
from typing import Any

from embedselect.errors import EmbedselectError
from embedselect.pipeline.context import STAGES_PER_CANDIDATE, RunContext
from embedselect.ranking.result import CandidateResult

log = logging.getLogger(__name__)


def record_candidate_failure(ctx: RunContext, cand: Any, res: CandidateResult, exc: Exception, step: dict[str, Any]) -> None:
    """A candidate failed at ``step["stage"]``: mark its result failed (with no vectors: ``cached``, ``embedded_items``,
    ``stored_items`` None), log it (INFO: the caller says it), record it (token-free; a hub revision's policy refusal in
    ``hub_refusals`` too) through :func:`embedselect.store.failures.record_failure` and count its remaining steps."""
    from embedselect.store.failures import record_failure

    ctx.bar.advance(STAGES_PER_CANDIDATE - step["done"])  # the candidate's remaining stages will not run
    stage = step["stage"]
    hub_repo = cand.ref if cand.kind == "hub" else None
    message = record_failure(ctx.store, spec=cand.spec, stage=stage, error=exc, model_id=res.model_id or hub_repo,
                             revision=res.revision or cand.revision, fingerprint=ctx.ref.fingerprint,
                             token=ctx.token, repo_id=hub_repo)
    res.status, res.error_type, res.error = "failed", type(exc).__name__, message
    if res.n is None:  # no vectors: the counts set before its load or embedding said what never happened
        res.cached = res.embedded_items = res.stored_items = None
    if not isinstance(exc, EmbedselectError):
        log.debug("unexpected error for %s", cand.name, exc_info=exc)
    # said once by the caller (rank's '!' line, embed's and neighbours' 'failed', a night's summary, select()'s warning)
    log.info("%s failed at %s: %s: %s", cand.name, stage, type(exc).__name__, message)
