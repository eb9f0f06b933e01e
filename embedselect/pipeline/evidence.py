"""A person's evidence folded into a run's decision: what :func:`embedselect.validation.duels.verdict` says between
the contenders becomes the ranking's ``decided`` / ``leaders``, the contenders' rows are reordered and a note says what
was ruled out. Used by the answers to ``ask``'s questions (:mod:`embedselect.pipeline.answers`) and by search queries
(:mod:`embedselect.pipeline.queries`)."""

from __future__ import annotations

from typing import Any

from embedselect.validation.duels import DECIDE_LEVEL


def fold_verdict(ctx: Any, decision: Any, names: list[str], v: Any, *, code: str, said: str, by: str, on_what: str,
                 more: str) -> Any:
    """Fold the verdict ``v`` between the contenders ``names`` (label-free order) into ``decision``.

    With fewer than two contenders nothing changes. When ``v`` rules nothing out, a note (``code``) says the evidence
    does not separate them yet. Otherwise the contenders' rows list the remaining ones first (label-free order), then
    those ruled out; when one remains, ``decided`` is True and ``leaders`` is it, and the label-free "no clear winner"
    notes give way to one saying so; when several remain and the label-free first was ruled out, ``leaders`` are those
    remaining (undecided). ``said`` names the evidence ("your 12 answers (3 skipped)"), ``by`` its owner in the
    undecided reason ("your answers"), ``on_what`` the questions the counts are taken on, ``more`` how to get more:
    an undecided result's ``settle`` ("to settle it, " + ``more``), since the evidence is already what the label-free
    ``settle`` asks for.

    Returns:
        the (possibly new) :class:`~embedselect.ranking.combine.Decision`.
    """
    from dataclasses import replace

    from embedselect.ranking.combine import Decision
    from embedselect.ranking.result import RankingWarning

    if len(names) < 2:
        return decision
    settle = f"to settle it, {more}"
    go_on = decision if decision.decided else replace(decision, settle=settle)
    if not v.ruled_out:
        ctx.warnings.append(RankingWarning(code, f"{said} do not separate {', '.join(names)} yet{v.need()}; "
                                           f"{v.pair_counts()}; {more}", names))
        return go_on
    reorder(ctx, names, v.remaining + [c for c in names if c in v.ruled_out])
    out = "; ".join(f"{c} by {r['by']} ({r['wins']}:{r['losses']} on {on_what})" for c, r in v.ruled_out.items())
    if v.decided or v.winner != names[0]:  # the evidence changes what the label-free ranking said
        drop_label_free_notes(ctx, decision)
    if v.decided:
        ctx.warnings.append(RankingWarning(code, f"decided by {said}: {v.winner}; they rule out {out} "
                                           f"({DECIDE_LEVEL:.1%} Wilson interval above one half)", [str(v.winner)]))
        return Decision(True, [str(v.winner)], [], [])
    ctx.warnings.append(RankingWarning(code, f"{said} rule out {out}; they do not separate "
                                       f"{', '.join(v.remaining)} yet (listed in the label-free order): {more}",
                                       v.remaining))
    if v.winner == names[0]:
        return go_on
    why = f"{by} rule out {', '.join(v.ruled_out)} but do not separate {', '.join(v.remaining)}"
    ctx.warnings.append(RankingWarning("undecided", f"no clear winner: {why}", v.remaining))
    return Decision(False, list(v.remaining), [why], ["undecided"], settle=settle, causes=["contenders-left"])


def drop_label_free_notes(ctx: Any, decision: Any) -> None:
    """Remove from ``ctx.warnings`` the label-free "no clear winner" notes of ``decision`` (its reasons), which the
    evidence's own note replaces."""
    label_free = [f"no clear winner: {why}" for why in decision.reasons]
    ctx.warnings = [w for w in ctx.warnings if w not in label_free]


def reorder(ctx: Any, names: list[str], order: list[str]) -> None:
    """Put the contenders ``names`` in ``order`` in the rows they hold in the table (other rows keep their places);
    their ranks become strictly increasing from the first one's."""
    slots = [i for i, o in enumerate(ctx.outcomes) if o.result.name in set(names)]
    by_name = {o.result.name: o for o in ctx.outcomes}
    moved = [by_name[n] for n in order]
    old = sorted(o.result.rank for o in moved)
    prev = None
    for slot, o, r in zip(slots, moved, old):
        rank = r if prev is None else max(r, prev + 1)
        o.result.rank = prev = rank
        ctx.outcomes[slot] = o
