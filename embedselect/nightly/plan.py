"""Which candidates a night ranks, and which of them need a forward pass.

The pool of a night is: crawled models at a revision no earlier night (of the same ranking key) has seen ("new"
or "updated"), plus the previous night's top ``keep_top`` hub models (so that newcomers are compared with the
leaders; a baseline, local folder, API or set of vectors among them comes back only while it is pinned), plus the
``pinned`` reference candidates. A candidate needs embedding when the store has no embedding run of its
model, revision and reference data.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import embedselect.store.nightly as history

log = logging.getLogger(__name__)


@dataclass
class Planned:
    """One candidate of the night.

    Attributes:
        name: display key (the repo id for hub models, the spec for pinned ones).
        why: "new", "updated" (a new revision), "retry" (the same revision again: a passing fault stopped it, or
            ``retry_failed``), "top" or "pinned".
        model_id / revision: what will be embedded, when known before resolving (hub: repo id and commit sha).
        cached: True when the store already holds its embeddings of the reference data; None = not known
            until resolved (a pinned hub id without a revision).
        prev_rank: its rank in the previous night, if it was ranked.
    """

    name: str
    why: str
    model_id: str | None
    revision: str | None
    cached: bool | None
    prev_rank: int | None = None
    candidate: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "why": self.why, "model_id": self.model_id, "revision": self.revision,
                "cached": self.cached, "prev_rank": self.prev_rank}


@dataclass
class NightPlan:
    """The plan: ``candidates`` to rank (in order: pinned, top, new/updated by trending), ``skipped`` crawled
    models with the reason, ``deferred`` new models left for a later night by ``max_new``; ``previous_rows``: the
    result rows of the previous night (``previous_run``), what tonight's leaderboard is compared with."""

    candidates: list[Planned]
    skipped: list[dict[str, Any]]
    deferred: list[Planned]
    previous_run: str | None
    previous_rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def to_embed(self) -> list[Planned]:
        return [p for p in self.candidates if not p.cached]

    def to_dict(self) -> dict[str, Any]:
        return {
            "previous_run": self.previous_run,
            "candidates": [p.to_dict() for p in self.candidates],
            "to_embed": [p.name for p in self.to_embed],
            "reuse": [p.name for p in self.candidates if p.cached],
            "deferred": [p.to_dict() for p in self.deferred],
            "skipped": self.skipped,
        }


def _refused(store: Any) -> set[tuple[str, str]]:
    """(repo, commit) pairs the safety policy refused: a refusal is of one revision, a new commit is planned."""
    from embedselect.store import hub_models

    df = hub_models.refusals(store)
    return {(str(r), str(v)) for r, v in zip(df["repo_id"], df["revision"]) if isinstance(v, str) and v}


def build_plan(cfg: Any, store: Any, crawl: Any, ref: Any, *, token: str | None = None) -> NightPlan:
    """Choose the night's candidates from the crawl, the history of earlier nights and the config.

    Args:
        cfg: :class:`~embedselect.nightly.config.NightlyConfig`.
        store: the :class:`~embedselect.store.Store` (read only here).
        crawl: the :class:`~embedselect.models.hub.CrawlResult` of tonight (None = no crawl).
        ref: the :class:`~embedselect.data.ReferenceData`.
    """
    from embedselect._util.kinds import kind_of_model_id
    from embedselect.models.candidates import Candidate, parse_candidates, resolve_candidate

    key = cfg.ranking_key()
    prev_run, prev_rows = history.previous_night(store, key)
    prev_rank = {r["name"]: r["rank"] for r in prev_rows if r["status"] == "ok"}
    # failed at this revision: not planned again unless retry_failed; a passing fault (transient) always is
    ranked_before = history.seen_revisions(store, key, include_failed=not cfg.retry_failed)
    seen = history.seen_revisions(store, key, include_failed=True, include_transient=True)
    known_repos = {repo for repo, _ in seen}
    refused = _refused(store)
    fp = ref.fingerprint

    def hub_planned(repo: str, sha: str, why: str) -> Planned:
        cand = Candidate(spec=f"{repo}@{sha}", kind="hub", ref=repo, revision=sha, name=repo, modality=ref.modality)
        return Planned(repo, why, repo, sha, store.has_run(repo, sha, fp), prev_rank.get(repo), cand)

    pool: dict[str, Planned] = {}
    for spec_cand in parse_candidates(list(cfg.pinned_specs), modality=ref.modality) if cfg.pinned else []:
        model_id = revision = None
        cached: bool | None = None
        if spec_cand.kind != "hub" or spec_cand.revision:
            try:
                rc = resolve_candidate(spec_cand, token=token) if spec_cand.kind != "hub" else None
            except Exception as exc:  # noqa: BLE001 - reported again, with its reason, by the embed stage
                log.warning("pinned %s cannot be resolved: %s", spec_cand.name, exc)
                rc = None
            if rc is not None:
                model_id, revision = rc.model_id, rc.revision
            elif spec_cand.kind == "hub":
                model_id, revision = spec_cand.ref, spec_cand.revision
            if model_id and revision:
                cached = store.has_run(model_id, revision, fp)
        pool[spec_cand.name] = Planned(spec_cand.name, "pinned", model_id, revision, cached,
                                       prev_rank.get(spec_cand.name), spec_cand)

    fresh: list[Planned] = []
    skipped: list[dict[str, Any]] = []
    for m in crawl.models if crawl is not None else ():
        if m.repo_id in pool:
            continue
        why = None
        if not m.sha:
            why = "the hub listed no commit sha"
        elif m.modality is not None and m.modality != ref.modality:
            why = f"{m.modality} model, reference data is {ref.modality}"
        elif (m.repo_id, m.sha) in refused:
            why = "refused by the safety policy at this revision"
        elif (m.repo_id, m.sha) in ranked_before:
            why = "unchanged since an earlier night"
        if why:
            skipped.append({"name": m.repo_id, "revision": m.sha, "reason": why})
            continue
        why = "retry" if (m.repo_id, m.sha) in seen else "updated" if m.repo_id in known_repos else "new"
        fresh.append(hub_planned(m.repo_id, m.sha, why))

    deferred: list[Planned] = []
    if cfg.max_new is not None and len(fresh) > cfg.max_new:
        # cached ones cost nothing: keep them, defer the most expensive (not cached) beyond the cap
        fresh.sort(key=lambda p: not p.cached)
        fresh, deferred = fresh[: cfg.max_new], fresh[cfg.max_new :]
    fresh_names = {p.name for p in fresh} | {p.name for p in deferred}

    top = [r for r in prev_rows if r["status"] == "ok" and r["rank"] is not None and r["rank"] <= cfg.keep_top]
    for r in sorted(top, key=lambda r: r["rank"]):
        if r["name"] in pool or r["name"] in fresh_names:
            continue
        if kind_of_model_id(r["model_id"]) == "hub":  # the others come back only while pinned
            pool[r["name"]] = hub_planned(r["model_id"], r["revision"], "top")
            skipped = [s for s in skipped if s["name"] != r["name"]]
    for p in fresh:
        pool[p.name] = p
    return NightPlan(list(pool.values()), skipped, deferred, prev_run, prev_rows)
