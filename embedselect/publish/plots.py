"""Plots of a stored ranking for the HTML report: matplotlib (Agg backend, offline) rendered to PNG and
returned as ``data:`` URIs, so the report stays one self-contained file and no text inside a plot can
become markup.

Each function takes a :class:`~embedselect.ranking.Ranking` and returns ``(title, data_uri)`` or None when the
ranking lacks what the plot needs (e.g. no sufficiency matrix). Nothing is recomputed: every number is read
from the ranking's scores, columns, intervals, details and validation.
"""

from __future__ import annotations

import base64
import io
import math

from embedselect.ranking import Ranking


def _fig(w: float = 6.4, h: float = 3.6):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(w, h), dpi=96)
    return fig, ax


def _uri(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _short(name: str, n: int = 28) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def ranking_plot(r: Ranking):
    """Combined score per candidate (best at top) with the first available bootstrap interval."""
    ok = [c for c in r.ok if _finite(c.combined_score)]
    if not ok:
        return None
    fig, ax = _fig(6.4, 0.45 * len(ok) + 1.2)
    ys = list(range(len(ok)))[::-1]
    ax.barh(ys, [c.combined_score for c in ok], color=["#2b8a3e" if i == 0 else "#4a7bd0" for i in range(len(ok))])
    ax.set_yticks(ys, [f"#{c.rank} {_short(c.name)}" for c in ok])
    ax.set_xlabel("combined score (higher is better)")
    return "Ranking (combined score)", _uri(fig)


def mean_variance_plot(r: Ranking):
    """Task Prior: mean held-out probe accuracy vs its variance over sampled tasks, one point per candidate."""
    pts = [(c, c.columns.get("task_prior.probe_acc_mean"), c.columns.get("task_prior.probe_acc_std")) for c in r.ok]
    pts = [(c, m, s) for c, m, s in pts if _finite(m) and _finite(s)]
    if not pts:
        return None
    fig, ax = _fig()
    ax.scatter([s * s for _, _, s in pts], [m for _, m, _ in pts], color="#4a7bd0")
    for c, m, s in pts:
        ax.annotate(f"#{c.rank} {_short(c.name, 20)}", (s * s, m), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("variance of held-out accuracy over tasks")
    ax.set_ylabel("mean held-out accuracy")
    return "Task Prior: mean vs variance (up and left is better)", _uri(fig)


def accuracy_distribution_plot(r: Ranking):
    """Held-out accuracy over sampled tasks per candidate: mean ± std and the 5th percentile (the ranking
    stores these summaries, not every task's accuracy)."""
    rows = [(c, c.columns.get("task_prior.probe_acc_mean"), c.columns.get("task_prior.probe_acc_std"),
             c.columns.get("task_prior.probe_acc_p05")) for c in r.ok]  # fmt: skip
    rows = [x for x in rows if _finite(x[1]) and _finite(x[2])]
    if not rows:
        return None
    fig, ax = _fig(6.4, 0.45 * len(rows) + 1.2)
    ys = list(range(len(rows)))[::-1]
    ax.errorbar([m for _, m, _, _ in rows], ys, xerr=[s for _, _, s, _ in rows], fmt="o", color="#4a7bd0",
                label="mean ± std")  # fmt: skip
    p05 = [(y, p) for y, (_, _, _, p) in zip(ys, rows) if _finite(p)]
    if p05:
        ax.scatter([p for _, p in p05], [y for y, _ in p05], marker="|", s=200, color="#c92a2a", label="5th percentile")
    ax.set_yticks(ys, [f"#{c.rank} {_short(c.name)}" for c, *_ in rows])
    ax.set_xlabel("held-out probe accuracy over sampled tasks")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return "Held-out accuracy over sampled tasks", _uri(fig)


def sufficiency_heatmap(r: Ranking):
    """Information-sufficiency matrix (source row -> target column, nats per target dimension), rows and
    columns ordered by community."""
    d = (r.details or {}).get("sufficiency") or {}
    mat = d.get("matrix")
    if not mat:
        return None
    order = [m for comm in d.get("communities", []) for m in comm if m in mat]
    order += [m for m in mat if m not in order]
    import numpy as np

    a = np.array([[mat.get(s, {}).get(t, np.nan) if s != t else np.nan for t in order] for s in order], dtype=float)
    fig, ax = _fig(6.4, 0.4 * len(order) + 2.0)
    im = ax.imshow(a, cmap="viridis")
    labels = [_short(m, 18) for m in order]
    ax.set_xticks(range(len(order)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(order)), labels, fontsize=8)
    ax.set_xlabel("target")
    ax.set_ylabel("source")
    fig.colorbar(im, ax=ax, label="IS (nats / target dim)")
    return "Information sufficiency (ordered by community)", _uri(fig)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated when lower cost (x) and higher score (y) are better."""
    idx = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -math.inf
    for i in idx:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def cost_plot(r: Ranking):
    """Combined score vs embedding dimension (a storage/search cost), Pareto front marked; point size
    shows the measured embedding time (seconds) when known."""
    pts = [(c, float(c.dim), float(c.combined_score)) for c in r.ok if _finite(c.dim) and _finite(c.combined_score)]
    if len(pts) < 2:
        return None
    fig, ax = _fig()
    front = set(pareto_front([(x, y) for _, x, y in pts]))
    for i, (c, x, y) in enumerate(pts):
        ax.scatter([x], [y], color="#2b8a3e" if i in front else "#adb5bd", s=60 if i in front else 30, zorder=3)
        ax.annotate(_short(c.name, 20), (x, y), fontsize=8, xytext=(3, 3), textcoords="offset points")
    fx = sorted((pts[i][1], pts[i][2]) for i in front)
    ax.plot([x for x, _ in fx], [y for _, y in fx], color="#2b8a3e", lw=1, label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("embedding dimension (log)")
    ax.set_ylabel("combined score")
    ax.legend(fontsize=8)
    return "Score vs cost (green: best score for its cost)", _uri(fig)


def validation_plot(r: Ranking):
    """Label-free combined score vs accuracy of probes trained on the user's labels, when given."""
    v = r.validation or {}
    col = v.get("accuracy_column") or "accuracy"
    acc = {name: (row or {}).get(col) for name, row in (v.get("table") or {}).items()}
    pts = [(c, c.combined_score, acc.get(c.name)) for c in r.ok]
    pts = [(c, s, a) for c, s, a in pts if _finite(s) and _finite(a)]
    if len(pts) < 2:
        return None
    fig, ax = _fig()
    ax.scatter([s for _, s, _ in pts], [a for *_, a in pts], color="#4a7bd0")
    for c, s, a in pts:
        ax.annotate(_short(c.name, 20), (s, a), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("label-free combined score")
    ax.set_ylabel(f"{_short(str(col), 20)} on your labels")
    return "Label-free score vs real accuracy", _uri(fig)


ALL = (ranking_plot, mean_variance_plot, accuracy_distribution_plot, sufficiency_heatmap, cost_plot, validation_plot)


def plots(r: Ranking) -> list[tuple[str, str]]:
    """Every plot the ranking has data for, as (title, data URI)."""
    return [p for p in (f(r) for f in ALL) if p is not None]
