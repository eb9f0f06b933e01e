"""The report's figures, drawn with matplotlib (Agg) into inline SVG: no network, no scripts, and text drawn
as paths (``svg.fonttype = "path"``), so a hostile candidate name cannot become markup, and never as math
(``text.parse_math`` off): a ``$`` in a name is a dollar sign.

Every function takes a :class:`~embedselect.ranking.result.Ranking` and returns an SVG document as a string, or
``None`` when the ranking lacks what the figure needs (e.g. no sufficiency matrix).
"""

from __future__ import annotations

import io
import math
from typing import Any

from embedselect._util.names import cut_middle
from embedselect.publish.text import clean
from embedselect.ranking.result import Ranking

_BLUE, _GREY, _ORANGE = "#2563eb", "#9ca3af", "#ea580c"


def _figure(width: float = 6.4, height: float = 4.0):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    # text.parse_math off: every label is plain text, so a candidate named "mini$x_$" is drawn as written (mathtext
    # would parse it and fail); text.usetex off: no LaTeX is ever run on a name
    plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False, "svg.hashsalt": "embedselect", "text.parse_math": False,
                         "text.usetex": False})
    return plt, plt.figure(figsize=(width, height))


def _svg(plt, fig) -> str:
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: inline SVG in HTML


def _log_x(ax: Any) -> None:
    """A log scale on ``ax``'s x axis labelled with plain numbers (0.1, 10, 1,000) on its major ticks: the default labels are
    mathtext (``$\\mathdefault{10^{2}}$``), which is drawn as written with ``text.parse_math`` off, and its minor
    labels overlap them."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _finite(v: Any) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def _short(name: str, n: int = 28) -> str:
    """A candidate's name in a figure: at most ``n`` characters, cut in the middle (its start and its end, an ellipsis
    between: :func:`~embedselect._util.names.cut_middle`, the rule of the CLI's table), so that names that differ at
    the end (``...-base-v1``, ``...-base-v2``) stay apart; untrusted, so no control or bidi characters."""
    return cut_middle(clean(name), n)


def _label_points(fig: Any, ax: Any, points: list[tuple[str, float, float]], *, marker: float) -> None:
    """Name each point of ``ax`` (name, x, y) in a label that stays readable when points coincide or crowd.

    Points whose markers (``marker`` points wide) overlap on the drawn axes share one label listing their names, one
    a line. Labels are placed top to bottom, each at the first place inside the axes that covers no marker and no
    label placed before: beside its point (right, then left), else one label height further down or up at a time,
    with a thin line back to its point; where none is free, below what is in its way.
    Labels of points at one place drew over each other, unreadable."""
    from matplotlib.transforms import Bbox

    fig.canvas.draw()  # the axes' final limits: positions in pixels
    renderer = fig.canvas.get_renderer()
    near = marker * fig.dpi / 72.0
    groups: list[tuple[Any, list[str]]] = []  # (pixel position, names)
    for name, x, y in points:
        px = ax.transData.transform((x, y))
        for pos, names in groups:
            if abs(pos[0] - px[0]) <= near and abs(pos[1] - px[1]) <= near:
                names.append(name)
                break
        else:
            groups.append((px, [name]))
    r = near / 2.0  # every marker is in the way of the labels, not only the labels placed before
    placed: list[Any] = [Bbox.from_extents(p[0] - r, p[1] - r, p[0] + r, p[1] + r) for p, _ in groups]
    to_points = 72.0 / fig.dpi
    inside = ax.bbox
    for pos, names in sorted(groups, key=lambda g: (-g[0][1], g[0][0])):
        xy = ax.transData.inverted().transform(pos)
        text = "\n".join(_short(n) for n in names)
        style = {"textcoords": "offset points", "fontsize": 8, "va": "center"}
        label = ax.annotate(text, xy, xytext=(5.0, 0.0), ha="left", **style)
        step = label.get_window_extent(renderer).height * to_points + 2.0
        # beside the point (right, then left), else one label height further down or up at a time, in the axes
        tries = [(dx, ha, k * step * sign) for k in range(12) for sign in ((0,) if k == 0 else (-1, 1))
                 for dx, ha in ((5.0, "left"), (-5.0, "right"))]
        chosen = tries[0]
        for dx, ha, dy in tries:
            label.set_ha(ha)
            label.xyann = (dx, dy)
            box = label.get_window_extent(renderer)
            fits = inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
            if fits and not any(b.overlaps(box) for b in placed):
                chosen = (dx, ha, dy)
                break
        else:  # crowded: below the labels and markers in its way, as it must
            dx, ha, dy = chosen
            label.set_ha(ha)
            label.xyann = (dx, dy)
            box = label.get_window_extent(renderer)
            for _ in range(len(placed) + 1):
                hit = next((b for b in placed if b.overlaps(box)), None)
                if hit is None:
                    break
                dy -= (box.y1 - hit.y0 + 2.0) * to_points
                label.xyann = (dx, dy)
                box = label.get_window_extent(renderer)
            chosen = (dx, ha, dy)
        dx, ha, dy = chosen
        if abs(dy) > 6.0:  # moved off its point: a line back to it
            label.remove()
            label = ax.annotate(text, xy, xytext=(dx, dy), ha=ha, **style,
                                arrowprops={"arrowstyle": "-", "lw": 0.5, "color": _GREY, "shrinkB": 3})
        placed.append(label.get_window_extent(renderer))


def task_prior_scatter(ranking: Ranking) -> str | None:
    """Task Prior alignment: mean E[Tr(MG)] vs its variance per candidate (both under the prior)."""
    pts = [(c.name, c.columns.get("task_prior_mean"), c.columns.get("task_prior_var")) for c in ranking.ok]
    pts = [p for p in pts if _finite(p[1]) and _finite(p[2])]
    if len(pts) < 2:
        return None
    plt, fig = _figure(5.6, 3.8)
    ax = fig.gca()
    best = set(ranking.leaders or ([ranking.best.name] if ranking.best else []))
    for name, mean, var in pts:
        ax.scatter(var, mean, s=36, color=_BLUE if name in best else _GREY, zorder=3)
    _label_points(fig, ax, [(name, float(var), float(mean)) for name, mean, var in pts if var is not None and mean is not None],
                  marker=6.0)
    ax.set_xlabel("variance of the alignment under the prior")
    ax.set_ylabel("mean alignment under the prior")
    ax.set_title("Task Prior statistics (higher mean, lower variance is better)")
    return _svg(plt, fig)


def task_accuracy(ranking: Ranking) -> str | None:
    """Held-out probe accuracy on the prior's tasks (sampled, or its clusters: ``details['task_prior']['tasks']``), per
    candidate: the distribution over tasks (a box and every task as a dot) when the ranking stored it, else mean ± std
    and the 5th percentile."""
    tp = ranking.details.get("task_prior") or {}
    per_task = tp.get("task_accuracy") or {}
    kind = "cluster" if tp.get("tasks") == "clusters" else "sampled"
    names = [c.name for c in ranking.ok if per_task.get(c.name)]
    if names:
        import numpy as np

        plt, fig = _figure(5.6, 0.5 * len(names) + 1.2)
        ax = fig.gca()
        ys = list(range(len(names)))[::-1]
        data = [np.asarray(per_task[n], dtype=np.float64) for n in names]
        ax.boxplot(data, positions=ys, orientation="horizontal", widths=0.5, showfliers=False,
                   medianprops={"color": _BLUE}, boxprops={"color": _GREY})
        rng = np.random.default_rng(0)  # fixed jitter: the same figure for the same ranking
        for y, d in zip(ys, data):
            ax.scatter(d, y + rng.uniform(-0.15, 0.15, size=len(d)), s=6, color=_BLUE, alpha=0.5, zorder=3)
        ax.set_yticks(ys, [_short(n) for n in names])
        ax.set_xlabel(f"held-out accuracy per {kind} task ({len(data[0])} tasks)")
        ax.set_title(f"Accuracy over {kind} tasks")
        return _svg(plt, fig)
    rows: list[Any] = [(c.name, c.columns.get("task_prior.probe_acc_mean"), c.columns.get("task_prior.probe_acc_std"),
             c.columns.get("task_prior.probe_acc_p05")) for c in ranking.ok]
    rows = [r for r in rows if _finite(r[1])]
    if not rows:
        return None
    plt, fig = _figure(5.6, 0.45 * len(rows) + 1.2)
    ax = fig.gca()
    ys = list(range(len(rows)))[::-1]
    for y, (name, mean, std, p05) in zip(ys, rows):
        if _finite(std):
            ax.plot([mean - std, mean + std], [y, y], color=_BLUE, lw=4, alpha=0.35, solid_capstyle="butt")
        if _finite(p05):
            ax.plot([p05], [y], marker="|", color=_ORANGE, ms=12, mew=2)
        ax.plot([mean], [y], marker="o", color=_BLUE)
    ax.set_yticks(ys, [_short(r[0]) for r in rows])
    ax.set_xlabel("held-out accuracy (dot: mean, bar: ±1 std, tick: 5th pct.)")
    ax.set_title("Accuracy over sampled tasks")
    return _svg(plt, fig)


def sufficiency_heatmap(ranking: Ranking) -> str | None:
    """The information-sufficiency matrix IS(row → column) in nats per target dimension, ordered by community when
    there are communities. A cell that was not estimated (no score reads it under the metric's ``pairs="scored"``, or
    a candidate left out) is drawn in :data:`NOT_ESTIMATED` grey, named in a legend, never as a value; the diagonal
    is left blank."""
    d = ranking.details.get("sufficiency") or {}
    matrix = d.get("matrix") or {}
    if len(matrix) < 2:
        return None
    comms = d.get("communities") or []
    order = [n for group in comms for n in group if n in matrix]
    order += [n for n in matrix if n not in order]
    values = [[matrix.get(a, {}).get(b) if a != b else None for b in order] for a in order]
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    arr = np.array([[np.nan if v is None else float(v) for v in row] for row in values], dtype=np.float64)
    missing = ~np.isfinite(arr) & ~np.eye(len(order), dtype=bool)
    size = 1.2 + 0.55 * len(order)
    plt, fig = _figure(size + 1.8, size + (0.4 if missing.any() else 0.0))
    ax = fig.gca()
    im = ax.imshow(np.ma.masked_invalid(arr), cmap="viridis")
    if missing.any():
        ax.imshow(np.ma.masked_where(~missing, np.ones_like(arr)), cmap=ListedColormap([NOT_ESTIMATED]), vmin=0,
                  vmax=1)
        ax.legend(handles=[Patch(facecolor=NOT_ESTIMATED, edgecolor="#6b7280", label="not estimated")],
                  loc="lower left", bbox_to_anchor=(0.0, 1.0), frameon=False, fontsize=8, borderaxespad=0.2)
    labels = [_short(n, 22) for n in order]
    ax.set_xticks(range(len(order)), labels, rotation=40, ha="right")
    ax.set_yticks(range(len(order)), labels)
    ax.set_xlabel("target (predicted)")
    ax.set_ylabel("source (predicts)")
    fig.colorbar(im, ax=ax, label="nats per target dimension")
    ax.set_title("Information sufficiency, grouped by community" if comms else "Information sufficiency",
                 pad=18 if missing.any() else 6)
    return _svg(plt, fig)


NOT_ESTIMATED = "#d1d5db"
"""The heatmap's colour of a cell that was not estimated (a light grey, outside viridis)."""


def pareto_front(points: list[tuple[str, float, float]], *, lower_cost_better: bool = True) -> list[str]:
    """Names on the Pareto front of (name, cost, score): no other point has a score at least as high at a cost
    at least as good, and is strictly better in one of them."""
    front = []
    for name, cost, score in points:
        dominated = any(
            (s >= score and (c <= cost if lower_cost_better else c >= cost)) and (s > score or c != cost)
            for n, c, s in points if n != name
        )
        if not dominated:
            front.append(name)
    return front


def _items_per_second(c: Any) -> float | None:
    """A candidate's measured items per second (``n / seconds`` for a ranking made before the field)."""
    if c.items_per_second:
        return float(c.items_per_second)
    return c.n / c.seconds if c.n and c.seconds else None


def score_vs_cost(ranking: Ranking) -> str | None:
    """Combined score against three costs: model size (MB of weight files; baselines have none), bytes per vector
    as deployed (storage, search: 4 per dimension, less for an int8 or binary variant; 4 x dim for a ranking made
    before the field) and measured throughput (items per second of the embedding run), with the Pareto front of each
    marked: the candidates no other beats on both score and that cost."""
    rows = [c for c in ranking.ok if _finite(c.combined_score)]
    if len(rows) < 2:
        return None
    plt, fig = _figure(11.0, 3.6)
    axes = fig.subplots(1, 3)
    panels: list[tuple[str, list[Any], bool]] = [  # scores are finite: rows were filtered above
        ("model size, MB of weights (lower is cheaper)",
         [(c.name, c.model_bytes / 1e6, c.combined_score) for c in rows if c.model_bytes], True),
        ("bytes per vector (lower is cheaper)",
         [(c.name, float(c.bytes_per_vector or 4 * c.dim), c.combined_score) for c in rows if c.dim], True),
        ("items per second when embedded (higher is cheaper)",
         [(c.name, rate, c.combined_score) for c in rows if (rate := _items_per_second(c))], False),
    ]
    for ax, (label, pts, lower) in zip(axes, panels):
        if len(pts) < 2:
            ax.set_axis_off()
            ax.text(0.5, 0.5, "not known for enough\ncandidates in this run", ha="center",
                    va="center", transform=ax.transAxes)
            continue
        front = set(pareto_front(pts, lower_cost_better=lower))
        for name, cost, score in pts:
            on = name in front
            ax.scatter(cost, score, s=40 if on else 24, color=_BLUE if on else _GREY, zorder=3)
            ax.annotate(_short(name, 22), (cost, score), textcoords="offset points", xytext=(4, 4), fontsize=7)
        fpts = sorted((c, s) for n, c, s in pts if n in front)
        ax.plot([p[0] for p in fpts], [p[1] for p in fpts], color=_BLUE, lw=1, alpha=0.6)
        costs = [p[1] for p in pts]
        if max(costs) > 20 * min(costs):
            _log_x(ax)
        ax.set_xlabel(label)
        ax.set_ylabel("combined score")
    fig.suptitle("Score vs cost (blue: Pareto front)")
    return _svg(plt, fig)


def label_free_vs_accuracy(ranking: Ranking) -> str | None:
    """When labels were given: the combined label-free score against held-out probe accuracy."""
    if not ranking.validation:
        return None
    col = f"labels.{ranking.validation.get('accuracy_column', 'logistic_acc')}"
    pts = [(c.name, c.combined_score, c.columns.get(col)) for c in ranking.ok]
    pts = [p for p in pts if _finite(p[1]) and _finite(p[2])]
    if len(pts) < 2:
        return None
    plt, fig = _figure(5.6, 3.8)
    ax = fig.gca()
    for name, score, acc in pts:
        ax.scatter(score, acc, s=36, color=_BLUE, zorder=3)
        ax.annotate(_short(name), (score, acc), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("label-free combined score")
    ax.set_ylabel("held-out probe accuracy on your labels")
    ax.set_title("Does the label-free ranking match your labels?")
    return _svg(plt, fig)


FIGURES = {
    "task_prior_scatter": task_prior_scatter,
    "task_accuracy": task_accuracy,
    "sufficiency_heatmap": sufficiency_heatmap,
    "score_vs_cost": score_vs_cost,
    "label_free_vs_accuracy": label_free_vs_accuracy,
}
"""Figure id -> function, in the order the report shows them."""
