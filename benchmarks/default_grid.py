"""The settings the validity benchmark chooses the default among, and the package's own default as one: the weight
grid (:data:`GRID`, :func:`settings`), the option families of the signals that stand in it (:data:`FAMILIES`), the
package's default weights and witnesses per modality under the names of the cached signals, and the signals a view
must have cached for them."""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

from benchmarks.signal_cache import VARIANTS
from embedselect.metrics.base import DEFAULT_METRICS, get_spec

SIGNALS = ("task_prior", "sufficiency", "nn_agreement", "rankme", "modularity")
GRID = {"task_prior": (1.0,), "sufficiency": (0.0, 0.25, 0.5, 1.0), "nn_agreement": (0.0, 0.5, 1.0, 2.0),
        "rankme": (0.0, 0.5, 1.0, 2.0), "modularity": (0.0, 0.25, 0.5, 1.0)}
METHODS = ("mean-rank", "mean-z")
FAMILIES = {
    "every candidate as evidence (before)": ("task_prior-all", "sufficiency-all", "nn_agreement-all"),
    "models as evidence": ("task_prior", "sufficiency", "nn_agreement"),
    "models as evidence + normal scores": ("task_prior", "sufficiency-normal_scores", "nn_agreement"),
    "models as evidence, KNIFE sufficiency": ("task_prior", "sufficiency-knife", "nn_agreement"),
    "models as evidence, Gaussian sufficiency": ("task_prior", "sufficiency-gaussian", "nn_agreement"),
    "4-class tasks, KNIFE sufficiency": ("task_prior-q4", "sufficiency-knife", "nn_agreement"),
    "4-class tasks, Gaussian sufficiency": ("task_prior-q4", "sufficiency-gaussian", "nn_agreement"),
    "8-class tasks, KNIFE sufficiency": ("task_prior-q8", "sufficiency-knife", "nn_agreement"),
    "8-class tasks, Gaussian sufficiency": ("task_prior-q8", "sufficiency-gaussian", "nn_agreement"),
    "1024 tasks, KNIFE sufficiency": ("task_prior-t1024", "sufficiency-knife", "nn_agreement"),
    "1024 tasks, Gaussian sufficiency": ("task_prior-t1024", "sufficiency-gaussian", "nn_agreement"),
    "balanced prior, KNIFE sufficiency": ("task_prior-balanced", "sufficiency-knife", "nn_agreement"),
    "balanced prior, Gaussian sufficiency": ("task_prior-balanced", "sufficiency-gaussian", "nn_agreement"),
    "central prior, KNIFE sufficiency": ("task_prior-central", "sufficiency-knife", "nn_agreement"),
    "central prior, Gaussian sufficiency": ("task_prior-central", "sufficiency-gaussian", "nn_agreement"),
    "cluster tasks, KNIFE sufficiency": ("task_prior-clusters", "sufficiency-knife", "nn_agreement"),
    "cluster tasks, Gaussian sufficiency": ("task_prior-clusters", "sufficiency-gaussian", "nn_agreement"),
    "32 cluster restarts, KNIFE sufficiency": ("task_prior-clusters32", "sufficiency-knife", "nn_agreement"),
    "32 cluster restarts, Gaussian sufficiency": ("task_prior-clusters32", "sufficiency-gaussian", "nn_agreement"),
}
"""--variants: the option families compared; each is the (task_prior, sufficiency, nn_agreement) signal that stands
in the grid. "before": the pool's built-in baselines count in task_prior's prior and nn_agreement's comparison as
they did until 2026-11-25 (``prior_from='all'``, ``compare_with='all'``, ``targets='all'``); "models": they are reference points
(:attr:`embedselect.metrics.base.MetricContext.references`); "KNIFE" / "Gaussian": sufficiency's estimator named
explicitly (issue 23: the default's estimator chosen by LODO); "4-class" / "8-class": task_prior's probes on tasks of
4 or 8 classes sampled from the prior (``n_classes``; 2 by default); "1024 tasks": task_prior's mean over 1024 sampled
tasks instead of 256 (``n_tasks``); "balanced prior" / "central prior": task_prior's pool prior named explicitly, its
members weighted by redundancy or by centrality (``prior``); "cluster tasks": task_prior's probes on the central prior's
k-means partitions into 4, 8 and 16 classes, each candidate's own kernel left out of its prior (``tasks='clusters'``,
``leave_self_out``); "32 cluster restarts": the same with 32 k-means partitions per class count instead of 8
(``cluster_restarts``). ``--families`` picks some of them."""
WITHIN_MODALITY_FAMILIES = {
    "text": ("balanced prior, KNIFE sufficiency", "balanced prior, Gaussian sufficiency",
             "central prior, KNIFE sufficiency", "central prior, Gaussian sufficiency"),
    "image": ("cluster tasks, KNIFE sufficiency", "cluster tasks, Gaussian sufficiency",
              "32 cluster restarts, KNIFE sufficiency", "32 cluster restarts, Gaussian sufficiency"),
}
"""Per modality, the families whose grids ``--within-modality`` searches unless ``--families`` names one list for
both: those each modality's default was chosen from (texts docs/archive/benchmarks-diary.md §4o-p, images §4r-s), so that one run
reads both defaults' leave-one-dataset-out over every view."""


def settings(family: tuple[str, ...] = ("task_prior", "sufficiency")) -> list[tuple[dict[str, float], str]]:
    """Every weight combination of :data:`GRID`, with ``family``'s signals standing for task_prior, sufficiency and
    (when given) nn_agreement."""
    names = (family[0], family[1], family[2] if len(family) > 2 else "nn_agreement", "rankme", "modularity")
    return [({m: w for m, w in zip(names, ws) if w}, meth)
            for meth in METHODS for ws in itertools.product(*GRID.values())]


def default_weights() -> dict[str, float]:
    """The package's default weights of the metrics in its score (weight > 0)."""
    return {m: get_spec(m).weight for m in DEFAULT_METRICS if get_spec(m).weight > 0}


def default_setting(modality: str) -> tuple[dict[str, float], str]:
    """The package's default weights (by signal name: a metric with default options for ``modality`` under the name of
    the :data:`~benchmarks.signal_cache.VARIANTS` signal cached with exactly those options) and method for data of
    ``modality``."""
    from embedselect.pipeline.defaults import default_method, default_weight, metric_options

    w = {m: default_weight(m, modality) for m in DEFAULT_METRICS if default_weight(m, modality) > 0}
    for metric, opts in metric_options(None, modality).items():
        if metric in w and opts:  # the signal cached under those options' name
            names = [v for v, (m, o) in VARIANTS.items() if m == metric and o == opts]
            if not names:
                raise SystemExit(f"no signal in signal_cache.VARIANTS computes {metric} with {opts}: add one")
            w[names[0]] = w.pop(metric)
    return w, default_method(modality)


def default_witnesses(modality: str) -> tuple[str, ...]:
    """The signals that ``select()`` computes for data of ``modality`` with weight 0 (shown, not combined) and that
    :func:`embedselect.ranking.combine.decide` asks about first place (:data:`~embedselect.ranking.combine.WITNESSES`):
    nn_agreement for texts, none for images (their default combines it). A view read as the product reads it computes
    these beside :func:`default_setting`'s weights and gives them to ``decide`` with weight 0."""
    from embedselect.pipeline.defaults import default_weight
    from embedselect.ranking.combine import WITNESSES

    return tuple(m for m in WITNESSES if m in DEFAULT_METRICS and default_weight(m, modality) == 0)


def default_extra() -> dict[str, tuple[str, ...]]:
    """Per modality, the signals beyond :data:`SIGNALS` that its default reads (:func:`default_setting`: the image
    default's Gaussian sufficiency and cluster-task task_prior today; none for texts): what a view scored under its
    modality's default needs cached. Given to :func:`load_views` as ``extra``, each view requires its own modality's
    signals only."""
    from embedselect._util.kinds import MODALITIES

    return {m: tuple(s for s in default_setting(m)[0] if s not in SIGNALS) for m in MODALITIES}


def label(setting: tuple[dict[str, float], str]) -> str:
    w, meth = setting
    return " + ".join(f"{m} {v:g}" for m, v in w.items()) + ("" if meth == "mean-rank" else ", mean z")


def needed_signals(extra: Sequence[str] | Mapping[str, Sequence[str]], modality: str) -> tuple[str, ...]:
    """The signals a view of ``modality`` must have cached: :data:`SIGNALS`, then ``extra`` (one list for every view,
    or per modality; a modality not named adds none)."""
    more = extra.get(modality, ()) if isinstance(extra, Mapping) else extra
    return tuple(dict.fromkeys((*SIGNALS, *more)))


def family_signals(families: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The signals beyond :data:`SIGNALS` that ``families`` read (what a view must have cached)."""
    return tuple(dict.fromkeys(m for sigs in families.values() for m in sigs if m not in SIGNALS))
