"""A person's answers folded into a run (``rank --answers``, ``select(..., answers=...)``): read and check them
against the reference data before any work, then, after the combined rank, each candidate's agreement with them and,
where they separate the contenders, the decision (:func:`answers_stage`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from embedselect.validation.answers import (
    DECIDE_LEVEL,
    MIN_ANSWERED,
    Agreement,
    Answered,
    agrees,
    contenders,
    resolve,
    verdict,
)
from embedselect.validation.questions import read_questions


def shown_of(ref: Any) -> list[str]:
    """What the questions file shows of each item: the text, or the image's path."""
    return [str(x) for x in ref.items]


def usable_items(ref: Any) -> np.ndarray:
    """bool (n,): items without an exact duplicate in ``ref`` (equal text bytes, equal image file bytes); a
    duplicated item is never put in a question."""
    from collections import Counter

    from embedselect.data.duplicates import item_digests

    digests = item_digests(ref)
    counts = Counter(digests)
    return np.array([counts[d] == 1 for d in digests], dtype=bool)


def load_answers(source: Any, ref: Any) -> Answered:
    """The answers of ``source`` (the questions CSV's path, or the DataFrame :func:`embedselect.ask` returned)
    checked against ``ref``: item ids it has and, for texts, the same texts.

    Raises:
        AnswersError (exit 3): see :func:`embedselect.validation.questions.read_questions` and
            :func:`~embedselect.validation.answers.resolve`; nothing has been read from or written to the cache.
    """
    questions = read_questions(source)
    name = str(source) if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__") else "<DataFrame>"
    return resolve(questions, ref.ids, shown_of(ref) if ref.modality == "text" else None, source=name)


def answers_stage(ctx: Any, decision: Any) -> Any:
    """Fold ``ctx.answers`` into the run after the combined rank (a no-op without answers).

    Every scored candidate gets the columns ``answers.agreement`` (the share of answered questions it orders the
    person's way), ``answers.agreement_low`` / ``_high`` (95 % Wilson interval) and ``answers.n``. Between the
    contenders (:func:`~embedselect.validation.answers.contenders` of ``decision``'s leaders, the order and the
    pool's model families: one candidate per family) the
    answers rule out contenders that another contender beats (:func:`~embedselect.validation.answers.verdict`): the
    contenders' rows list the remaining ones first (label-free order), then those ruled out. When one remains,
    ``decided`` is True and ``leaders`` is it, and the label-free "no clear winner" notes give way to one saying
    so; when several remain and the label-free first was ruled out, ``leaders`` are those remaining (undecided).
    Otherwise the decision stands; a note says how far the answers got. ``ctx.answers_summary`` holds what the Ranking's
    ``answers`` field shows.

    Returns:
        the (possibly new) :class:`~embedselect.ranking.combine.Decision`.
    """
    from embedselect.ranking.combine import Decision
    from embedselect.ranking.result import RankingWarning

    ans = ctx.answers
    if ans is None:
        return decision
    ok = [o.result for o in ctx.outcomes if o.result.ok and o.result.name in ctx.vectors]
    agree = {r.name: agrees(ctx.vectors[r.name], ans) for r in ok}
    for r in ok:
        r.columns.update(Agreement(int(np.sum(agree[r.name])), ans.n_answered).to_columns())
    names = contenders(decision.leaders, [r.name for r in ok if r.rank is not None], ctx.families)
    v = verdict(agree, names)
    ctx.answers_summary = {"source": ans.source, "n_questions": ans.n_questions, "n_answered": ans.n_answered,
                           "n_skipped": ans.n_skipped, "contenders": names, "level": DECIDE_LEVEL,
                           "min_answered": MIN_ANSWERED, **v.to_dict()}
    said = f"{ans.n_answered} answer{'s' if ans.n_answered != 1 else ''} ({ans.n_skipped} skipped)"
    if len(names) < 2:
        return decision
    if not v.ruled_out:
        ctx.warnings.append(RankingWarning("answers", f"your {said} do not separate {', '.join(names)} yet"
                                           f"{v.need()}; {v.winner} against the others: {v.pair_counts()}; answer "
                                           "more questions (embedselect ask ... -n MORE --interactive)", names))
        return decision
    _reorder(ctx, names, v.remaining + [c for c in names if c in v.ruled_out])
    out = "; ".join(f"{c} by {r['by']} ({r['wins']}:{r['losses']} on the questions where only one of the two orders "
                    "them your way)" for c, r in v.ruled_out.items())
    if v.decided or v.winner != names[0]:  # the answers change what the label-free ranking said
        label_free = [f"no clear winner: {why}" for why in decision.reasons]
        ctx.warnings = [w for w in ctx.warnings if w not in label_free]
    if v.decided:
        ctx.warnings.append(RankingWarning("answers", f"decided by your {said}: {v.winner}; they rule out {out} "
                                           f"({DECIDE_LEVEL:.1%} Wilson interval above one half)", [str(v.winner)]))
        return Decision(True, [str(v.winner)], [], [])
    ctx.warnings.append(RankingWarning("answers", f"your {said} rule out {out}; they do not separate "
                                       f"{', '.join(v.remaining)} yet (listed in the label-free order): answer more "
                                       "questions (embedselect ask ... -n MORE --interactive)", v.remaining))
    if v.winner == names[0]:
        return decision
    why = f"your answers rule out {', '.join(v.ruled_out)} but do not separate {', '.join(v.remaining)}"
    ctx.warnings.append(RankingWarning("undecided", f"no clear winner: {why}", v.remaining))
    return Decision(False, list(v.remaining), [why], ["undecided"])


def _reorder(ctx: Any, names: list[str], order: list[str]) -> None:
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
