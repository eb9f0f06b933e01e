"""Combine several label-free metrics into one rank, keeping each metric's own rank visible.

Method ``"mean-rank"`` (:data:`DEFAULT_METHOD`, what ``select()`` uses; a weighted Borda count):

1. For each metric, place each candidate it scored among the *families* (``families``: candidate -> family key;
   variants and copies of one model share one): ``u`` = the fraction of the other families' heads that score above
   it, ties counting half (:func:`embedselect.metrics.pool.relative_positions`). For a family's head this is its
   normalised rank among the heads, ``(rank - 1) / (F - 1)``; without families (every candidate a family of its own)
   it is ``(rank - 1) / (m - 1)`` (m = candidates the metric scored; ``u = 0`` when m = 1). Candidates a metric did
   not score, or scored NaN, are left out of that metric.
2. Combined score = ``1 - Σ_k w_k u_k / Σ_k w_k`` over the metrics that scored the candidate:
   1.0 means first on every metric, 0.0 last on every metric. Higher is better.

Counting each family once is what makes the order of the models invariant to the pool's make-up: adding options,
layers or copies of a model moves no head's ``u`` (issue 41; tests/test_invariance.py).

Method ``"mean-z"``: the weighted mean of per-metric z-scores (score minus the heads' mean, over the heads' standard
deviation, :func:`embedselect.metrics.pool.relative_z`; unbounded, 0 = average). It uses the size of the gaps, not
only the order; one metric with an outlier can dominate (docs/validity.md, "Current defaults": both modalities
combine by mean rank).

Ties follow the package's one rule (:func:`embedselect.ranking.ties.tie_groups`): equal combined scores share
a rank (competition ranks 1, 1, 3) and are listed by name; no metric breaks a tie, because a tie decided by
one metric is that metric's ranking, not the combination's. :func:`decide` says when the leading candidates
cannot be separated (a tie, overlapping bootstrap intervals, too few candidates). The per-metric ranks are
always columns of :func:`rank_table`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from embedselect.errors import ConfigError, DataError
from embedselect.metrics.pool import relative_positions, relative_z
from embedselect.ranking.ties import finite_scores, just_below, order_by_score, rank_scores, tie_groups
from embedselect.ranking.warning_codes import UNDECIDED_CAUSES

__all__ = ["METHODS", "DEFAULT_METHOD", "MIN_POOL", "MIN_MODEL_FAMILIES", "SETTLE", "WITNESSES", "Decision", "metric_ranks", "combine_ranks",
           "rank_table", "decide",
           "copies_below_parents"]

METHODS = ("mean-rank", "mean-z")
DEFAULT_METHOD = "mean-rank"
"""The combination ``select()`` uses for texts and images (:mod:`embedselect.pipeline.defaults`), chosen by
leave-one-dataset-out on the validity benchmark (docs/validity.md, "Current defaults"). Ranks make each signal one
vote; mean z keeps the size of the gaps, which lets one signal's outlier or a family's shared bias decide."""

MIN_POOL = 4
"""With fewer scored candidates than this, the ranking is reported as undecided: the label-free scores
compare candidates with one another (consensus priors, pairwise sufficiency), so 2 or 3 candidates give them
too little to compare against."""


def metric_ranks(per_metric_scores: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """Rank of every candidate under each metric.

    Args:
        per_metric_scores: metric -> {candidate: score}, higher = better.

    Returns:
        DataFrame indexed by candidate, one float column per metric: rank 1.0 = best, ties share the
        average rank, NaN where the metric did not score the candidate.
    """
    cols: dict[str, pd.Series] = {}
    for metric, scores in per_metric_scores.items():
        ranks = rank_scores(finite_scores(scores), ties="average")
        cols[metric] = pd.Series({k: float(r) for k, r in ranks.items() if r is not None}, dtype=np.float64)
    df = pd.DataFrame(cols)
    df.index.name = "candidate"
    return df


def _check(per_metric_scores, weights, method) -> dict[str, float]:
    if method not in METHODS:
        raise ConfigError(f"unknown combination method {method!r}; choose from {', '.join(METHODS)}")
    if not per_metric_scores:
        raise DataError("no metric scores to combine")
    if weights is None:
        return {m: 1.0 for m in per_metric_scores}
    unknown = set(weights) - set(per_metric_scores)
    if unknown:
        raise ConfigError(
            f"weights given for metric(s) {sorted(unknown)} that have no scores; metrics: "
            f"{', '.join(per_metric_scores)}"
        )
    w = {m: float(weights.get(m, 0.0)) for m in per_metric_scores}
    if any(not math.isfinite(v) or v < 0 for v in w.values()) or sum(w.values()) <= 0:
        raise ConfigError(f"weights must be finite, >= 0 and not all 0; got {dict(weights)}")
    return w


def combine_ranks(
    per_metric_scores: Mapping[str, Mapping[str, float]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "mean-rank",
    families: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """One combined score per candidate (higher = better); see the module docstring for the formula.

    Args:
        per_metric_scores: metric -> {candidate: score}, higher = better for every metric; each dict in the
            candidates' order (a family's head is the member named by its key, else its first member).
        weights: metric -> weight >= 0 (default: all 1). Metrics missing from ``weights`` get 0.
        method: ``"mean-rank"`` (default; in [0, 1]) or ``"mean-z"`` (unbounded, mean 0 over the heads).
        families: candidate -> family key (``Ranking.details['families']``, ``MetricContext.families``); None or a
            candidate not named: a family of its own.

    Returns:
        candidate -> combined score, for every candidate scored by at least one metric with a
        positive weight. Use :func:`rank_table` for the ordered table with the per-metric ranks.

    Raises:
        ConfigError: unknown method, negative / all-zero weights, weights for unknown metrics.
        DataError: no metrics, or no finite score at all.
    """
    w = _check(per_metric_scores, weights, method)
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for metric, scores in per_metric_scores.items():
        if w[metric] == 0:
            continue
        sc = finite_scores(scores)
        if not sc:
            continue
        part = relative_positions(sc, families) if method == "mean-rank" else relative_z(sc, families)
        for k, u in part.items():
            num[k] = num.get(k, 0.0) + w[metric] * float(u)
            den[k] = den.get(k, 0.0) + w[metric]
    if not num:
        raise DataError("no finite score in any weighted metric; nothing to combine")
    if method == "mean-rank":
        return {k: 1.0 - num[k] / den[k] for k in num}
    return {k: num[k] / den[k] for k in num}


def rank_table(
    per_metric_scores: Mapping[str, Mapping[str, float]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "mean-rank",
    families: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The combined ranking with every metric's own rank beside it (``families`` as for :func:`combine_ranks`).

    Returns:
        DataFrame indexed by candidate, sorted best first, with columns ``{metric}_rank`` (float,
        1 = best, NaN if unscored) for each metric, ``combined`` (the :func:`combine_ranks` score)
        and ``rank`` (int, 1 = best, ties broken as documented in the module docstring).
    """
    combined = combine_ranks(per_metric_scores, weights=weights, method=method, families=families)
    ranks = metric_ranks(per_metric_scores)
    order = order_by_score(combined)
    df = ranks.add_suffix("_rank").reindex(order)
    df["combined"] = pd.Series(combined, dtype=np.float64)
    competition = rank_scores(combined)
    df["rank"] = np.array([competition[c] for c in order], dtype=np.int64)
    df.index.name = "candidate"
    return df


@dataclass
class Decision:
    """Whether the combined ranking separates its first candidate from the rest.

    Attributes:
        decided: True when the first candidate is the winner on this data; False when the scores cannot
            separate it from ``leaders`` or the pool is too small to judge.
        leaders: the first candidate followed by every candidate it cannot be told apart from: every plausible best
            (the first is what ``Ranking.best`` returns; a single name when decided).
        reasons: plain-language reasons when undecided (empty when decided).
        codes: the warning code of each reason, in the same order (:data:`embedselect.ranking.result.WARNING_CODES`):
            ``small-pool`` for the rules on the pool's families, ``undecided`` for the others (each its cause's code).
        settle: how to settle it when undecided (:data:`SETTLE`; empty when decided).
        causes: the cause of each reason, in the same order (a key of
            :data:`embedselect.ranking.warning_codes.UNDECIDED_CAUSES`).
    """

    decided: bool
    leaders: list[str]
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    settle: str = ""
    causes: list[str] = field(default_factory=list)


SETTLE = ("to settle it, answer a few questions about your items (embedselect ask, then embedselect rank --answers) "
          "or label a few hundred items and check the leaders against the labels (embedselect validate)")
"""What an undecided ranking tells the user to do next (``Ranking.next_step``, the table, the report)."""

def no_clear_winner(leaders: Sequence[str]) -> str:
    """What an undecided ranking says about its ``leaders`` (the table, the report, the leaderboard): several
    leaders cannot be separated; a single one leads but the pool cannot confirm it (too few model families)."""
    if len(leaders) > 1:
        return f"no clear winner: the leaders {', '.join(leaders)} cannot be separated on this data"
    return f"no clear winner: {leaders[0] if leaders else 'the first candidate'} leads, but this pool cannot confirm it"


MIN_MODEL_FAMILIES = 3
"""With fewer model families (not reference points) than this, the ranking between the models is undecided: the
pool-relative signals judge a model by the other models, and two families give them one comparison."""


WITNESSES: tuple[str, ...] = ("nn_agreement",)
"""Signals shown beside the combination (weight 0) that :func:`decide` also asks about first place: when one of them,
computed for the pool, puts another candidate first, the ranking is undecided and that candidate joins the leaders.
nn_agreement (shown with weight 0 by the text default; images combine it, so it is not asked there): chosen on the
selection half and confirmed on the confirmation half (docs/validity.md, "Selection and confirmation halves")."""


def _first_group(per_metric: Mapping[str, Mapping[str, float]], weights: Mapping[str, float], method: str,
                 families: Mapping[str, str] | None, copies: Sequence[tuple[str, str]]) -> list[str]:
    """The candidates first (tied) when ``per_metric`` alone is combined as :func:`decide`'s ranking was: each family
    once, copies below their parents."""
    alt = combine_ranks(per_metric, weights={k: weights[k] for k in per_metric}, method=method, families=families)
    alt, _ = copies_below_parents(alt, copies)
    groups = tie_groups(alt)
    return list(groups[0]) if groups else []


def _signals_against(first: str, per_metric: Mapping[str, Mapping[str, float]], weights: Mapping[str, float],
                     method: str, families: Mapping[str, str] | None,
                     copies: Sequence[tuple[str, str]], tied: Sequence[str] = ()) -> list[tuple[list[str], str]]:
    """:func:`decide`'s rule 5: when leaving out one of at least two signals with a positive weight (and finite
    scores) puts another candidate first, those candidates and the reason (one entry, or none). A candidate of
    ``tied`` (the combined score's first tie group, leaders by rule 1) is not named: two candidates with the same
    vectors tie without any signal, so the signals left out would name the other only because of the tie."""
    live = [m for m, v in weights.items() if v > 0 and finite_scores(per_metric[m])]
    flips: dict[str, list[str]] = {}
    if len(live) >= 2:
        for m in live:
            top = _first_group({k: per_metric[k] for k in live if k != m}, weights, method, families, copies)
            if first not in top or len(top) > 1:
                for c in top:
                    if c != first and c not in tied:
                        flips.setdefault(c, []).append(m)
    if not flips:
        return []
    said = "; ".join(f"without {', '.join(ms)}, {c} would be first" for c, ms in flips.items())
    return [(list(flips), f"the signals disagree about first place: {said}")]


def _witnesses_against(first: str, per_metric: Mapping[str, Mapping[str, float]], weights: Mapping[str, float],
                       method: str, families: Mapping[str, str] | None, copies: Sequence[tuple[str, str]],
                       witnesses: Sequence[str], tied: Sequence[str] = ()) -> list[tuple[list[str], str]]:
    """:func:`decide`'s rule 6: per witness (a signal of ``witnesses`` computed with finite scores and weight 0) whose
    own ranking does not put ``first`` alone first, the candidates it puts first instead and the reason. As in rule 5
    (:func:`_signals_against`), a candidate of ``tied`` (the combined score's first tie group, leaders by rule 1) is
    not named: a witness that puts only such candidates first (two with the same vectors) does not disagree."""
    out = []
    for m in witnesses:
        if m not in per_metric or weights.get(m, 0.0) > 0 or not finite_scores(per_metric[m]):
            continue
        top = _first_group({m: per_metric[m]}, {m: 1.0}, method, families, copies)
        others = [c for c in top if c != first and c not in tied]
        if others:
            out.append((others, f"{m}, shown beside the combination, puts {', '.join(others)} first"
                                + (" (a tie)" if first in top else "")))
    return out


def _first_pick(order: Sequence[str], fam: Mapping[str, str], models: Sequence[str],
                untrained: frozenset[str] | set[str]) -> str | None:
    """The plausible best :func:`decide`'s rules 7 and 8 add: the first candidate of ``order`` (best first) that is
    neither untrained nor a reference point (a member of one of ``models``, the model families; ``fam``: candidate ->
    family key); None when there is none."""
    return next((c for c in order if fam[c] in models and c not in untrained), None)


def _not_a_pick(said: str, pick: str | None) -> list[tuple[list[str], str]]:
    """Rules 7 and 8's entry: ``pick`` (:func:`_first_pick`) joins the leaders, and the reason ``said`` names it, or
    says that there is none (then nobody joins)."""
    if pick is None:
        return [([], f"{said}; no candidate that is neither untrained nor a reference point scored")]
    return [([pick], f"{said}; {pick} is the first candidate that is neither untrained nor a reference point")]


def _reference_first(first: str, pick: str | None, models: Sequence[str],
                     references: frozenset[str] | set[str]) -> list[tuple[list[str], str]]:
    """:func:`decide`'s rule 7: when ``first`` is a reference point and a model family scored (``models``), the
    reason, with ``pick`` (:func:`_first_pick`) as the plausible best; else nothing."""
    if first not in references or not models:
        return []
    return _not_a_pick(f"{first}, a reference point (a built-in baseline), is first: it measures what the models "
                       "add beyond it, it is not a pick", pick)


def _untrained_first(first: str, pick: str | None,
                     untrained: frozenset[str] | set[str]) -> list[tuple[list[str], str]]:
    """:func:`decide`'s rule 8: when ``first`` is an untrained checkpoint, the reason, with ``pick``
    (:func:`_first_pick`) as the plausible best; no candidate when there is none."""
    if first not in untrained:
        return []
    return _not_a_pick(f"{first} looks like an untrained checkpoint (every normalisation layer at its initial values), "
                       "and it is first: its vectors are random, and random models can agree with each other well "
                       "enough to lead; it is not a pick", pick)


def _overlapping(first: str, others: Sequence[str],
                 intervals: Mapping[str, Mapping[str, Sequence[float]]]) -> list[str]:
    """:func:`decide`'s rule 2: the candidates of ``others`` whose bootstrap interval overlaps ``first``'s on every
    bootstrapped score they share (at least one), in the order given."""
    mine = intervals.get(first) or {}
    close = []
    for c in others:
        theirs = intervals.get(c) or {}
        shared = [k for k in mine if k in theirs]
        if shared and all(_overlap(mine[k], theirs[k]) for k in shared):
            close.append(c)
    return close


def _overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    lo1, hi1 = float(a[0]), float(a[1])
    lo2, hi2 = float(b[0]), float(b[1])
    if not all(math.isfinite(v) for v in (lo1, hi1, lo2, hi2)):
        return True  # an undefined interval separates nothing
    return max(lo1, lo2) <= min(hi1, hi2)


def copies_below_parents(
    combined: Mapping[str, float], pairs: Sequence[tuple[str, str]]
) -> tuple[dict[str, float], list[tuple[str, str]]]:
    """Combined scores with every derived copy strictly below each of its parents.

    A copy that is a coordinate-wise function of its parent's vectors (:mod:`embedselect.metrics.copies`: a
    quantisation or a truncation) cannot carry more information about any labelling than the parent (data
    processing inequality): the parent is at least as good as its copy. So when a copy scores at or above its
    parent, the copy gets the closest score below its parent's that is not a tie
    (:func:`embedselect.ranking.ties.just_below`). The parent keeps its own score: were it to take the copy's, adding
    a copy to the pool could lift its model above another (issue 41: the order of the models must not follow the
    pool's make-up). Chains such as first-64 < first-128 < full resolve in order; candidates that are neither copy
    nor parent keep their scores.

    Args:
        combined: candidate -> combined score (higher is better).
        pairs: (copy, parent) names; pairs naming a candidate without a finite score are ignored.

    Returns:
        (the adjusted scores, the (copy, parent) pairs that were moved, in the order they were moved).
    """
    out = {k: float(v) for k, v in combined.items()}
    live = [(c, p) for c, p in pairs if c in out and p in out and math.isfinite(out[c]) and math.isfinite(out[p])]
    moved: list[tuple[str, str]] = []
    for _ in range(len(live) + 1):  # a chain of k copies settles in at most k passes
        changed = False
        for c, p in live:
            if out[c] >= out[p]:
                out[c] = just_below(out[p])
                if (c, p) not in moved:
                    moved.append((c, p))
                changed = True
        if not changed:
            break
    return out, moved


def decide(
    combined: Mapping[str, float],
    *,
    intervals: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    min_pool: int = MIN_POOL,
    per_metric: Mapping[str, Mapping[str, float]] | None = None,
    weights: Mapping[str, float] | None = None,
    method: str = DEFAULT_METHOD,
    families: Mapping[str, str] | None = None,
    references: frozenset[str] | set[str] = frozenset(),
    copies: Sequence[tuple[str, str]] = (),
    witnesses: Sequence[str] | None = None,
    untrained: frozenset[str] | set[str] = frozenset(),
) -> Decision:
    """Can the combined ranking name a winner?

    Args:
        combined: candidate -> combined score (higher is better), as from :func:`combine_ranks` (after
            :func:`copies_below_parents`).
        intervals: candidate -> {score name: (low, high)} bootstrap intervals (``CandidateResult.intervals``),
            when a bootstrap ran.
        min_pool: fewer finite-scored families than this is undecided (:data:`MIN_POOL`).
        per_metric, weights, method: the signals and how ``combined`` was made from them (:func:`combine_ranks`),
            for the check that no single signal decides first place; None skips it.
        families: candidate -> family key (variants and copies of one model share one); None: each its own.
        references: the reference points (built-in baselines): not model families.
        copies: (copy, parent) pairs, as given to :func:`copies_below_parents`.
        witnesses: signals of ``per_metric`` with weight 0 (shown, not combined) asked about first place too (rule
            6); None: :data:`WITNESSES`.
        untrained: the candidates whose model looks untrained (every normalisation layer at its initial values;
            ``EmbedOutcome.untrained_norms``), for rule 8.

    Rules (each adds to ``leaders`` / ``reasons``):

    1. **Tie**: candidates whose combined score ties the first one's (:func:`embedselect.ranking.ties.tie_groups`).
    2. **Overlapping intervals**: a candidate whose bootstrap interval overlaps the first candidate's on
       *every* bootstrapped score they share (at least one) is not separated from it by the data.
    3. **Small pool**: fewer than ``min_pool`` families (variants and copies of one model count once); every
       model family's best member is a plausible best (the reference points' only when no model family scored; a
       reference point joins the leaders by the other rules only).
    4. **Two model families**: fewer than :data:`MIN_MODEL_FAMILIES` model families (reference points aside) give
       the pool-relative signals one comparison; the other family's best member is a plausible best.
    5. **The signals disagree**: leaving out any one signal with a positive weight (of at least two) and combining
       the others the same way puts another candidate first; each such candidate is a plausible best (one tied
       with the first by rule 1 is a leader already and not named again: the tie, not the signals, puts it there).
    6. **A witness disagrees**: a weight-0 signal of ``witnesses``, ranked alone the same way (each family once,
       copies below their parents), puts another candidate first; that candidate is a plausible best (one tied with
       the first by rule 1 is not named, as in rule 5).
    7. **A reference point is first**: a built-in baseline in first place is a yardstick, not a pick; when a model
       family scored, the first candidate that is neither untrained nor a reference point is a plausible best (the
       ranking is undecided also when there is none).
    8. **An untrained checkpoint is first**: random vectors agree with each other and can lead; it is not a pick.
       The first candidate that is neither untrained nor a reference point is a plausible best, as in rule 7; the
       ranking is undecided also when there is none.

    The first candidate (``leaders[0]``) is always the first row of :func:`rank_table` and ``Ranking.best``.
    """
    groups = tie_groups(combined)
    if not groups:
        return Decision(False, [], ["no candidate has a combined score"], ["undecided"], SETTLE, ["no-score"])
    order = [k for g in groups for k in g]
    first = order[0]
    leaders = list(groups[0])
    reasons: list[str] = []
    causes: list[str] = []  # the cause of each reason (UNDECIDED_CAUSES)

    def add(names: Sequence[str]) -> None:
        leaders.extend([c for c in order if c in names and c not in leaders])

    if len(groups[0]) > 1:
        causes.append("tie")
        reasons.append(f"tie: {', '.join(groups[0])} have the same combined score; listed by name, not by merit")
    if intervals:
        close = _overlapping(first, order[len(groups[0]):], intervals)
        if close:
            add(close)
            causes.append("overlap")
            reasons.append(
                f"the bootstrap intervals of {first} overlap those of {', '.join(close)} on every bootstrapped "
                "score: the data do not separate them (use more items, or read them as equals)"
            )
    fam = {c: (families or {}).get(c, c) for c in order}
    best_of: dict[str, str] = {}  # family -> its best member (order is best first)
    for c in order:
        best_of.setdefault(fam[c], c)
    models = [f for f, c in best_of.items() if not any(m in references for m in order if fam[m] == f)]
    if len(best_of) < min_pool:
        add([best_of[f] for f in models] or list(best_of.values()))
        causes.append("few-families")
        reasons.append(
            f"only {len(best_of)} model famil{'y' if len(best_of) == 1 else 'ies'} scored ({len(order)} candidates; "
            "the options and copies of one model count once): label-free scores compare candidates with each other "
            f"and are unreliable in pools smaller than {min_pool} families; add candidates"
        )
    elif len(models) == 2:
        add([best_of[f] for f in models])
        causes.append("two-families")
        reasons.append(
            f"two model families ({' and '.join(models)}; the rest are reference points): the signals that judge a "
            "model by the others have one comparison, which cannot say which of the two is better"
        )
    against: list[tuple[str, list[tuple[list[str], str]]]] = []  # (cause, what its rule found)
    if per_metric is not None:
        w = {m: float((weights or {}).get(m, 1.0 if weights is None else 0.0)) for m in per_metric}
        against.append(("signals", _signals_against(first, per_metric, w, method, families, copies, groups[0])))
        against.append(("witness", _witnesses_against(first, per_metric, w, method, families, copies,
                                                      WITNESSES if witnesses is None else witnesses, groups[0])))
    pick = _first_pick(order, fam, models, untrained)
    against.append(("reference-first", _reference_first(first, pick, models, references)))
    against.append(("untrained-first", _untrained_first(first, pick, untrained)))
    for cause, found in against:
        for others, why in found:
            add(others)
            causes.append(cause)
            reasons.append(why)
    decided = not reasons
    codes = [UNDECIDED_CAUSES[c][0] for c in causes]
    return Decision(decided, leaders if not decided else [first], reasons, codes, "" if decided else SETTLE, causes)
