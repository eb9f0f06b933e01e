"""``embedselect ask``: the triplet questions that settle what the label-free ranking cannot, in a file a person and a
script can both fill (:mod:`embedselect.validation.answers` holds the file and the scoring; the questions are chosen
by :mod:`embedselect.pipeline.questions`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from embedselect.config import RankConfig, Runtime, from_keywords
from embedselect.errors import ConfigError
from embedselect.pipeline.answers import load_answers, resolve_against, shown_of, usable_items
from embedselect.pipeline.context import load_reference_data
from embedselect.ranking.result import Ranking
from embedselect.validation.answers import Answered, contenders
from embedselect.validation.questions import (
    Question,
    is_questions_file,
    questions_frame,
    read_questions,
    write_questions,
)

log = logging.getLogger(__name__)

DEFAULT_QUESTIONS = 40
"""Questions ``ask`` writes unless told otherwise (``-n``)."""


@dataclass
class AskSession:
    """What ``ask`` prepared: the data, the contenders the questions decide between and their embeddings, and the
    questions (old ones first, with their answers, then the new ones).

    Attributes:
        ref: the :class:`~embedselect.data.ReferenceData`.
        contenders: candidate names, label-free order (:func:`~embedselect.validation.duels.contenders`).
        vectors: contender name -> float32 (n, d) embeddings of ``ref`` (read-only memory maps of the cache).
        questions: every question, in file order.
        n_new: how many of them this call added.
        out: the questions file (None: the API was asked for a DataFrame only).
        ranking_note: which ranking named the contenders (a stored one, or the one this call made).
        ranking: that ranking; its failed candidates (:attr:`~embedselect.ranking.result.Ranking.failed`) are in no
            question, and are said as ``rank`` says them.
    """

    ref: Any
    contenders: list[str]
    vectors: dict[str, np.ndarray] = field(repr=False)
    questions: list[Question]
    n_new: int
    out: Path | None
    ranking_note: str
    ranking: Ranking = field(repr=False)

    def answered(self) -> Answered:
        """The answered questions as item positions (checked against the data)."""
        return resolve_against(self.questions, self.ref, str(self.out or "questions"))

    def save(self) -> None:
        """Write :attr:`questions` to :attr:`out` atomically (nothing when there is no file)."""
        if self.out is not None:
            write_questions(self.out, self.questions)


def ask(data: Any, candidates: Any, *, n: int = DEFAULT_QUESTIONS, out: str | Path | None = None,
        config: RankConfig | None = None, runtime: Runtime | None = None, **keywords: Any):
    """Triplet questions that decide between the leaders of the label-free ranking of ``candidates`` on ``data``.

    Each question shows an anchor item and two others, ``a`` and ``b``: which is closer to the anchor? They are
    chosen where the contenders' embeddings disagree most (:mod:`embedselect.pipeline.questions`): one candidate per
    model family, the best of each family among the leaders of the newest stored ranking of this data and this pool
    of candidates, or of its first families when the leaders are of one family
    (:func:`~embedselect.validation.duels.contenders`); without such a ranking, one is made first
    (:func:`~embedselect.pipeline.run.select`, stored). Embeddings come from the cache; what is missing is embedded.
    Seeded: the same data, pool, ``n`` and ``seed`` give the same questions.

    Args:
        data, candidates: as for :func:`~embedselect.pipeline.run.select`.
        config, runtime: as for :func:`~embedselect.pipeline.run.select` (its column, sub-sampling, seed, error rule
            and load policy; the cache, device, batch size, token and progress), or the same settings as
            ``keywords`` (``column=``, ``id_column=``, ``max_items=``, ``seed=``, ``cache_dir=``, ...; see
            :func:`embedselect.config.from_keywords`).
        n: how many questions the file should hold.
        out: the questions CSV (columns ``question_id, anchor_id, a_id, b_id, anchor, a, b, answer``; the ids are
            the data's item ids: row numbers, or the values of ``id_column``). When it
            exists (a file ``ask`` wrote for this data) its questions and answers are kept and new questions are
            added only up to ``n``. Written atomically; a file ``ask`` did not write is never replaced.

    Returns:
        a pandas DataFrame with those columns, one row per question (``answer`` ``""`` until answered). A candidate
        that failed in the ranking (it is in no question) is said as :func:`select` says it: in
        ``frame.attrs["failed"]`` (name -> its note, "NAME failed (TYPE): why") and a logged warning each, and
        with ``strict`` (``Runtime.strict``) as :class:`~embedselect.errors.CandidatesFailedError` once the
        questions are written.

    Raises:
        ConfigError: ``n`` < 1, fewer than two candidates scored, or ``out`` is not a questions file of ``ask``.
        AnswersError: ``out`` holds answers to another data set or malformed rows (it is left as it is).
        CandidatesFailedError: ``strict`` and some candidate failed (the error carries the ranking).
        DataError, AllCandidatesFailedError, CacheError: as for :func:`select`.
    """
    from embedselect.pipeline.run import raise_if_failed

    session = prepare_ask(data, candidates, n=n, out=out, config=config, runtime=runtime, **keywords)
    if (runtime or from_keywords(**keywords)[1]).strict:
        raise_if_failed(session.ranking)
    frame = questions_frame(session.questions)
    frame.attrs["failed"] = {c.name: c.failure_note for c in session.ranking.failed}
    for note in frame.attrs["failed"].values():
        log.warning("%s", note)
    return frame


def prepare_ask(data: Any, candidates: Any, *, n: int = DEFAULT_QUESTIONS, out: str | Path | None = None,
                config: RankConfig | None = None, runtime: Runtime | None = None, check_out: Any = None,
                **keywords: Any) -> AskSession:
    """:func:`ask`, returning the :class:`AskSession` (the CLI's interactive mode keeps answering into it).
    ``check_out(path)``, when given, checks the output path before any work (the CLI's own rules)."""
    from embedselect._fs import guard as fsguard
    from embedselect.models.candidates import parse_candidates
    from embedselect.pipeline.embedding import embed_reference
    from embedselect.store import Store

    if int(n) < 1:
        raise ConfigError(f"-n {n}: ask for at least one question")
    if (config is not None or runtime is not None) and keywords:
        raise ConfigError(f"{', '.join(sorted(keywords))} given both as keyword(s) and by config=/runtime=")
    kw_config, kw_runtime = from_keywords(**keywords)
    config, runtime = config or kw_config, runtime or kw_runtime
    config = config.replace(labels=None)  # the questions need no labels
    path = Path(out).expanduser() if out is not None else None
    if path is not None:
        if check_out is not None:
            check_out(path)
        fsguard.check_replaceable([path], ours=is_questions_file, what="--out")
    ref = load_reference_data(data, config.replace(drop_duplicates=None))
    ref.require_distinct()
    old: list[Question] = []
    if path is not None and path.exists():
        old = read_questions(path)
        load_answers(path, ref)  # another data set's file, unknown ids: refused before any work
    names = [c.name for c in parse_candidates(candidates, modality=ref.modality)]
    if len(names) < 2:
        raise ConfigError("ask needs at least two candidates: the questions decide between them")
    store = Store.open(runtime.cache_dir)
    stored = _stored_ranking(store, ref.fingerprint, names)
    if stored is None:
        from embedselect.pipeline.run import select

        log.info("no stored ranking of this data and these candidates: ranking them first")
        ranking = select(ref, candidates, config=config.replace(column=None, id_column=None, max_items=None),
                         runtime=runtime.replace(save=True, strict=False))
        note = f"the ranking made now ({ranking.short_id})"
    else:
        ranking = Ranking.from_dict(stored)
        note = f"the stored ranking {ranking.short_id} of {ranking.created_at[:19]}"
    order = [c.name for c in ranking.ok]
    names_c = contenders(ranking.leaders or order[:1], order, stored_families(ranking.to_dict()))
    if len(names_c) < 2:
        raise ConfigError(f"only {len(order)} candidate(s) could be scored ({', '.join(order) or 'none'}): the "
                          "questions need two contenders; fix or add candidates")
    cands = {c.name: c for c in parse_candidates(candidates, modality=ref.modality)}
    outcomes = embed_reference(ref, [cands[m] for m in names_c], store=store, config=config, runtime=runtime,
                               keep_vectors=True)
    failed = [o.result for o in outcomes if not o.result.ok]
    if failed:
        raise ConfigError(f"{failed[0].name} could not be embedded again ({failed[0].error}); fix it and run again")
    vectors = {o.result.name: o.vectors for o in outcomes if o.vectors is not None}
    pos = {x: i for i, x in enumerate(ref.ids)}
    taken = [(pos[q.anchor_id], pos[q.a_id], pos[q.b_id]) for q in old]
    from embedselect.pipeline.questions import choose_triplets

    new = choose_triplets(vectors, max(0, int(n) - len(old)), usable=usable_items(ref), seed=config.seed,
                          taken=taken)
    shown = shown_of(ref)
    first_id = max((q.question_id for q in old), default=0) + 1
    added = [Question(first_id + t, ref.ids[i], ref.ids[a], ref.ids[b], shown[i], shown[a], shown[b])
             for t, (i, a, b) in enumerate(new)]
    session = AskSession(ref, names_c, vectors, old + added, len(added), path, note, ranking)
    if path is not None and (added or not path.exists()):
        session.save()
    if len(old) + len(added) < n:
        log.warning("%d questions asked for, %d found where %s disagree (each item in at most a few questions, no "
                    "duplicates)", n, len(old) + len(added), ", ".join(names_c))
    return session


def stored_families(ranking: Mapping[str, Any]) -> dict[str, str]:
    """candidate -> family key of a stored ranking (its ``details["families"]``: family -> members, written for the
    families of two members or more); a candidate not in it is a family of its own."""
    shared = (ranking.get("details") or {}).get("families") or {}
    return {str(m): str(f) for f, members in shared.items() for m in (members or [])}


def _stored_ranking(store: Any, fingerprint: str, names: list[str]) -> dict[str, Any] | None:
    """The newest stored ranking of the data ``fingerprint`` over exactly the candidates ``names``, or None."""
    rows = store.list_rankings(fingerprint=fingerprint, limit=50)
    for rid, fp in zip(rows["ranking_id"], rows["fingerprint"]):
        if fp != fingerprint:
            continue
        d = store.get_ranking(str(rid))
        if d and {c["name"] for c in d.get("candidates", [])} == set(names):
            return d
    return None
