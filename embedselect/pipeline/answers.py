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
from embedselect.pipeline.evidence import fold_verdict
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
    checked against ``ref`` (:func:`resolve_against`).

    Raises:
        AnswersError (exit 3): see :func:`embedselect.validation.questions.read_questions` and
            :func:`~embedselect.validation.answers.resolve`; nothing has been read from or written to the cache.
    """
    questions = read_questions(source)
    name = str(source) if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__") else "<DataFrame>"
    return resolve_against(questions, ref, name)


def resolve_against(questions: Any, ref: Any, source: str) -> Answered:
    """``questions`` checked against ``ref`` (:func:`~embedselect.validation.answers.resolve`: its ids, and what
    the file shows of each item: the texts, or the images' files) and the answered ones as item positions."""
    return resolve(questions, ref.ids, shown_of(ref), images=ref.modality != "text", source=source)


def answers_stage(ctx: Any, decision: Any) -> Any:
    """Fold ``ctx.answers`` into the run after the combined rank (a no-op without answers).

    Every scored candidate gets the columns ``answers.agreement`` (the share of answered questions it orders the
    person's way), ``answers.agreement_low`` / ``_high`` (95 % Wilson interval) and ``answers.n``. Between the
    contenders (:func:`~embedselect.validation.duels.contenders` of ``decision``'s leaders, the order and the
    pool's model families: one candidate per family) the answers rule out contenders that another contender beats
    (:func:`~embedselect.validation.duels.verdict`), and the decision follows as
    :func:`~embedselect.pipeline.evidence.fold_verdict` says (one contender left: decided). ``ctx.answers_summary``
    holds what the Ranking's ``answers`` field shows.

    Returns:
        the (possibly new) :class:`~embedselect.ranking.combine.Decision`.
    """
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
    file = ans.source if ans.source != "<DataFrame>" else "FILE"
    return fold_verdict(ctx, decision, names, v, code="answers", said=f"your {said}", by="your answers",
                        on_what="the questions where only one of the two orders them your way",
                        more=f"answer more questions (embedselect ask ... -n MORE --out {file}, with --interactive to answer "
                             f"them there; then embedselect rank ... --answers {file} again)")
