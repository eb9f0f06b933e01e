"""The protocol applied to a search-specific default on the retrieval views: a setting proposed on the selection
half (:func:`propose_search_default`), its witnesses chosen on the same views (:func:`choose_witnesses`), then read
once on the confirmation half and judged by :data:`ADOPT_RULE` (:func:`confirm_search_default`)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from embedselect.errors import DataError


SEARCH_GRID = {"task_prior": (0.0, 1.0), "sufficiency": (0.0, 0.25, 1.0), "nn_agreement": (0.0, 0.5, 1.0, 2.0),
               "rankme": (0.0, 0.5, 1.0), "modularity": (0.0, 0.5, 1.0)}
"""The weights a search-specific default could be chosen from (fixed before any view was read), with the methods
``mean-rank`` and ``mean-z``: 2 × 216 settings less the all-zero one. Its best setting on the selection half is the
yardstick the few-weight candidates of :data:`SEARCH_CANDIDATES` are held against."""

SearchSetting = tuple[dict[str, float], str]

SEARCH_CANDIDATES: tuple[SearchSetting, ...] = (
    ({"nn_agreement": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "task_prior": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "sufficiency": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "rankme": 1.0}, "mean-rank"),
    ({"nn_agreement": 1.0, "modularity": 1.0}, "mean-rank"),
    ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 1.0}, "mean-rank"),
    ({"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 1.0, "rankme": 1.0, "modularity": 0.5}, "mean-z"),
)
"""The search defaults proposed first, fewest weights first and led by nn_agreement (the one signal that followed
search quality on both halves of the first reading); the last is the first round's choice. Fixed before the
selection half of the nine sets was read."""

CHOICE_MARGIN = 0.02
"""A candidate of :data:`SEARCH_CANDIDATES` is as good as the grid's best when its selection mean ρ is at most this far
below the best's and it has as many views with ρ ≥ 0.8 and regret ≤ 0.02 (the protocol's rule 4: the simpler rule wins
within the noise; the metric-seed spread of a view's ρ is 0.035, of a mean over 20+ views under 0.02)."""


ADOPT_RULE = ("a search default (and `rank --use search`) is adopted only if, on the confirmation half's views, its "
              "mean ρ is above the text default's, its share within 0.02 MRR is not below it and its share "
              "confidently wrong is not above it")
"""The rule, fixed before the confirmation half is read: a second default is a switch users must choose, so it has to
be better, not merely as good."""


def _view_of(r: dict[str, Any]) -> dict[str, Any]:
    return {"truth": r["truth"], "signals": r["raw"]["signals"], "pairs": [tuple(p) for p in r["raw"]["pairs"]],
            "entries": r["raw"]["entries"]}


def propose_search_default(sel: list[dict[str, Any]]) -> tuple[SearchSetting, list[str]]:
    """The search default proposed on the selection half's views alone: the first setting of
    :data:`SEARCH_CANDIDATES` (fewest weights first) that is as good as the best of :data:`SEARCH_GRID` ∪ the candidates
    by ``lodo.objective``'s parts (as many views with ρ ≥ 0.8 and regret ≤ 0.02, mean ρ within
    :data:`CHOICE_MARGIN`); the best itself when none
    is. Returns the setting and the lines that report the choice (each candidate's selection numbers)."""
    import itertools

    from benchmarks.protocol import read_view
    from benchmarks.cached_views import evaluate
    from benchmarks.default_grid import label
    from benchmarks.scoring import TARGETS

    grid = [({m: w for m, w in zip(SEARCH_GRID, ws) if w}, meth) for meth in ("mean-rank", "mean-z")
            for ws in itertools.product(*SEARCH_GRID.values()) if any(ws)]
    settings = [*SEARCH_CANDIDATES, *grid]

    def one(view: dict[str, Any], setting: SearchSetting) -> dict[str, float]:
        """``evaluate``'s ρ and regret; a setting whose weighted signals have no finite score on the view (rankme on
        a set of under ~150 documents) orders nothing there: ρ undefined, no pick."""
        try:
            return evaluate(view, *setting, True)
        except DataError:
            return {"rho": math.nan, "regret": math.inf}

    def score(setting: SearchSetting) -> tuple[int, float]:
        """(views with ρ ≥ 0.8 and regret ≤ 0.02, mean ρ with an undefined ρ as -1): ``objective``'s two parts."""
        res = [one(_view_of(r), setting) for r in sel]
        hits = sum(1 for x in res if x["rho"] >= TARGETS["spearman_each"] and x["regret"] <= TARGETS["regret"])
        return hits, float(np.mean([x["rho"] if math.isfinite(x["rho"]) else -1.0 for x in res]))

    scores = [score(st) for st in settings]
    best = max(range(len(settings)), key=lambda i: (scores[i], -i))
    hits_b, rho_b = scores[best]
    chosen = next((i for i in range(len(SEARCH_CANDIDATES))
                   if scores[i][0] >= hits_b and scores[i][1] >= rho_b - CHOICE_MARGIN), best)
    lines = [f"Selection half ({len(sel)} views): {sorted({r['set'] for r in sel})}.",
             f"Best of the grid and the candidates: {label(settings[best])} (views with ρ ≥ 0.8 and regret ≤ 0.02: "
             f"{hits_b}, mean ρ {rho_b:.3f}).", "",
             "| setting (selection half) | views ρ ≥ 0.8 and regret ≤ 0.02 | mean ρ | mean τ | within 0.02 MRR | "
             "confidently wrong |", "|---|---|---|---|---|---|"]
    default = _default()
    for name, st in [("text default: " + label(default), default),
                     *((label(c), c) for c in SEARCH_CANDIDATES),
                     *(() if best < len(SEARCH_CANDIDATES) else (("grid best: " + label(settings[best]),
                                                                   settings[best]),))]:
        rd = [read_view(_view_of(r), *st) for r in sel]
        h = sum(1 for x in rd if x["rho"] >= 0.8 and x["regret"] <= 0.02)
        lines.append(f"| {name} | {h}/{len(sel)} | {finite_mean([x['rho'] for x in rd]):.3f} | "
                     f"{finite_mean([x['tau'] for x in rd]):.3f} | {sum(x['regret'] <= 0.02 for x in rd)}/{len(sel)} | "
                     f"{sum(x['wrong'] for x in rd)}/{len(sel)} |")
    lines.append(f"\nProposed on the selection half: {label(settings[chosen])}.")
    return settings[chosen], lines


WITNESS_CANDIDATES: tuple[tuple[str, ...], ...] = ((), ("task_prior",), ("sufficiency",), ("task_prior", "sufficiency"))
"""The witnesses a search order may carry (the signals shown with weight 0 that ``decide`` asks about first place),
fixed before the fourth round read any new view: none, the text default's two weighted signals alone and together. A
signal the order weights is no witness (:func:`benchmarks.protocol.read_view` asks only weight-0 signals)."""

WitnessedSetting = tuple[dict[str, float], str, tuple[str, ...]]
"""A search setting with its witnesses: weights, method, the weight-0 signals ``decide`` asks about first place."""


def answered_right(read: dict[str, Any]) -> bool:
    """A view read by :func:`benchmarks.protocol.read_view` is answered right when its pick is within 0.02 of the best
    while decided, or, undecided, when the best (within 0.02) is among its leaders."""
    from benchmarks.protocol import REGRET

    return bool(read["regret"] <= REGRET if read["decided"] else read["best_in_leaders"])


def choose_witnesses(sel: list[dict[str, Any]], setting: SearchSetting) -> tuple[WitnessedSetting, list[str]]:
    """The witnesses of ``setting`` chosen on the selection half's views alone: of :data:`WITNESS_CANDIDATES`, the one
    with the fewest views confidently wrong, then the most answered right (:func:`answered_right`), then the fewest
    signals named (then the first). Returns the setting with its witnesses and the lines that report the choice."""
    from benchmarks.protocol import read_view

    weights, method = setting
    lines = [f"Witnesses of {_label(setting)} on the selection half ({len(sel)} views):", "",
             "| witnesses | asked (weight 0) | decided | confidently wrong | answered right | mean leaders |",
             "|---|---|---|---|---|---|"]
    keys = []
    for i, cand in enumerate(WITNESS_CANDIDATES):
        rd = [read_view(_view_of(r), weights, method, cand) for r in sel]
        wrong, right = sum(x["wrong"] for x in rd), sum(answered_right(x) for x in rd)
        keys.append((wrong, -right, len(cand), i))
        asked = [m for m in cand if m not in weights]
        lines.append(f"| {' + '.join(cand) or 'none'} | {', '.join(asked) or 'none'} | "
                     f"{sum(x['decided'] for x in rd)}/{len(rd)} | {wrong}/{len(rd)} | {right}/{len(rd)} | "
                     f"{finite_mean([len(x['leaders']) for x in rd]):.2f} |")
    chosen = WITNESS_CANDIDATES[min(keys)[3]]
    lines.append(f"\nWitnesses chosen on the selection half: {' + '.join(chosen) or 'none'}.")
    return (weights, method, chosen), lines


def _label(setting: SearchSetting | WitnessedSetting) -> str:
    """A setting's weights and method (``default_grid.label``), and its witnesses when it carries them."""
    from benchmarks.default_grid import label

    text = label((setting[0], setting[1]))
    if len(setting) == 3:
        text += f"; witnesses: {' + '.join(setting[2]) or 'none'}"
    return text


def _default() -> SearchSetting:
    from benchmarks.default_grid import default_setting

    return default_setting("text")


def confirm_search_default(conf: list[dict[str, Any]], setting: SearchSetting | WitnessedSetting
                           ) -> tuple[bool, list[str]]:
    """The confirmation half read once with ``setting`` (its witnesses when it carries them, else the package's)
    beside the package's text default (with the package's witnesses), each view read as
    :func:`benchmarks.protocol.read_view` reads it, then :data:`ADOPT_RULE`. Returns the verdict and the report's
    lines."""
    from benchmarks.protocol import read_view

    lines = [f"Confirmation half ({len(conf)} views): {sorted({r['set'] for r in conf})}.",
             f"Rule: {ADOPT_RULE}.", "",
             "| view | text default: ρ, regret, decided | proposed for search: ρ, regret, decided |", "|---|---|---|"]
    witnessed = {"text default": (*_default(), None),
                 "proposed": (setting[0], setting[1], setting[2] if len(setting) == 3 else None)}
    reads = {name: [read_view(_view_of(r), w, m, wit) for r in conf] for name, (w, m, wit) in witnessed.items()}
    for r, a, b in zip(conf, reads["text default"], reads["proposed"]):
        lines.append(f"| {r['set']} / {r['view']} | {fmt_value(a['rho'])}, {a['regret']:.3f}, {'yes' if a['decided'] else 'no'}"
                     f" | {fmt_value(b['rho'])}, {b['regret']:.3f}, {'yes' if b['decided'] else 'no'} |")
    got = {}
    for name, res in reads.items():
        got[name] = (finite_mean([x["rho"] for x in res]), float(np.mean([x["regret"] <= 0.02 for x in res])),
                     float(np.mean([x["wrong"] for x in res])))
        lines.append(f"\nConfirmation, {name}: mean ρ {got[name][0]:.3f}, mean τ {finite_mean([x['tau'] for x in res]):.3f}, "
                     f"within 0.02 on {sum(x['regret'] <= 0.02 for x in res)}/{len(res)}, confidently wrong "
                     f"{sum(x['wrong'] for x in res)}/{len(res)}, mean regret {finite_mean([x['regret'] for x in res]):.3f}, "
                     f"decided {sum(x['decided'] for x in res)}/{len(res)}, answered right "
                     f"{sum(answered_right(x) for x in res)}/{len(res)}, mean leaders "
                     f"{finite_mean([len(x['leaders']) for x in res]):.2f}")
    (rho_c, within_c, wrong_c), (rho_d, within_d, wrong_d) = got["proposed"], got["text default"]
    adopt = rho_c > rho_d and within_c >= within_d and wrong_c <= wrong_d
    lines.append(f"\nVerdict: {'adopt' if adopt else 'not adopted'} ({ADOPT_RULE}).")
    return adopt, lines


def choose_search_default(rows: list[dict[str, Any]]) -> str:
    """The protocol applied to a use-specific default: :func:`propose_search_default` on the selection half's views
    (the order), :func:`choose_witnesses` on the same views (its witnesses); then, when ``rows`` hold confirmation
    views, :func:`confirm_search_default` on them with the order and its witnesses (read once). Run on the selection
    sets alone (``report --sets ...``) it proposes without reading the confirmation half."""
    sel = [r for r in rows if r["half"] == "selection"]
    conf = [r for r in rows if r["half"] == "confirmation"]
    if not sel:
        return "(no view of the selection half: nothing proposed)"
    order, lines = propose_search_default(sel)
    setting, more = choose_witnesses(sel, order)
    lines += ["", *more, f"Proposed: {_label(setting)}."]
    if conf:
        lines += ["", *confirm_search_default(conf, setting)[1]]
    else:
        lines.append("(no view of the confirmation half among these rows: not read)")
    return "\n".join(lines)


def fmt_value(x: Any, nd: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}f}"


def finite_mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return float(np.mean(xs)) if xs else math.nan
