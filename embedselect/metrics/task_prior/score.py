"""Task Priors (Bhattacharjee et al., "Task Priors", sections 2.2–2.4 and 3).

A prior kernel K (n×n) defines a Gibbs measure over label graphs G, μ_K(G) ∝ exp(Tr(GK)/T), under
which the edges are independent Bernoulli(σ(K_ij/T)) variables (Lemma 2.5). For a candidate's kernel
M, Theorem 2.6 gives, summing over all i, j including the diagonal,

    E[Tr(MG)]   = Σ_ij M_ij σ(K_ij/T)
    Var(Tr(MG)) = Σ_ij M_ij² σ(K_ij/T) (1 − σ(K_ij/T)).

Kernels are normalised double-centred cosine kernels (:mod:`embedselect.metrics.kernels`), given by
exact factors ``K = Z Zᵀ``. :func:`task_prior_moments` streams symmetric tiles ``Z_I Z_Jᵀ`` (upper
triangle, off-diagonal tiles counted twice) with torch on CPU or CUDA and accumulates in float64, so
memory is O(n·d + tile²) and no n×n matrix is formed.

:func:`sample_tasks` implements Algorithm 1 (prefix sampler), vectorised over many tasks.
:func:`compute` is the ``task_prior`` metric used by ``embedselect.select``.

The closed-form moments and the temperature rule live in :mod:`embedselect.metrics.task_prior.moments`, the
sampler in :mod:`embedselect.metrics.task_prior.sampling`; this module holds the priors and the metric.

See ``docs/task_prior.md`` for the method notes (temperature scaling, defaults, prior choices).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from embedselect.errors import ConfigError, MetricError, TooFewItemsError
from embedselect.metrics.content_seed import fingerprint
from embedselect.metrics.base import MIN_ITEMS, MetricContext, MetricResult, evidence, family_of, unusable_reason
from embedselect.metrics.kernels import kernel_factor, label_factor, torch_device
from embedselect.metrics.task_prior.moments import (
    DEFAULT_TAU,
    Prior,
    TaskPriorMoments,
    check_dtype,
    check_tile,
    resolve_temperature,
    stream_moments,
    task_prior_moments,
    to_torch,
)
from embedselect.metrics.task_prior.priors import (
    POOL_PRIORS,
    WEIGHED_PRIORS,
    cross_gram,
    pool_weights,
    prior_factors,
    prior_kernels,
)
from embedselect.metrics.task_prior.sampling import (
    cluster_tasks_from_kernel,
    positive_int,
    sample_tasks,
    sample_tasks_from_factor,
)

__all__ = ["DEFAULT_TAU", "TaskPriorMoments", "compute", "resolve_temperature", "sample_tasks",
           "sample_tasks_from_factor", "task_prior_moments"]


# --------------------------------------------------------------------------------------------------
# the `task_prior` metric
# --------------------------------------------------------------------------------------------------
_OPTION_DEFAULTS: dict[str, Any] = {
    "prior": "central",
    "prior_from": "models",
    "tau": DEFAULT_TAU,
    "temperature": None,
    "n_tasks": 256,
    "n_classes": 2,
    "probes": True,
    "agreement": True,
    "headline": "probes",
    "max_items": 4096,
    "moments_max_items": 16384,
    "test_fraction": 0.3,
    "splits": "auto",
    "dtype": "float64",
    "tile": None,
    "tasks": "sampled",
    "leave_self_out": False,
    "cluster_classes": (4, 8, 16),
    "cluster_restarts": 8,
}

_SMALL_POOL = 4
def compute(ctx: MetricContext) -> MetricResult:
    """The ``task_prior`` metric: closed-form moments plus probes on sampled tasks.

    Options (``ctx.options``):
        prior: "central" (default, chosen by leave-one-dataset-out, docs/validity.md, "Current defaults": the
            balanced prior's weights times each member's mean CKA with the other members, :func:`central_weights`,
            so a kernel the others do not share, such as an untrained network's, weighs little), "balanced" (the
            candidates' kernels summed with redundancy weights w_k = 1 / Σ_l CKA_kl^8, so a group of near-copies
            counts about once, then renormalised to unit Frobenius norm; it gave the untrained network the largest
            weight; both priors' weights are in ``details['prior_weights']``), "consensus"
            (plain sum, renormalised), "loo" (leave-one-out consensus: each candidate is scored
            under the sum of the *other* candidates' kernels), a candidate key (that candidate's
            kernel; self-biased), or "labels" (centred same-label graph of ``ctx.labels``; the only
            case labels are read).
        prior_from: "models" (default: a pool prior — balanced, central, consensus, loo — sums the kernels of one
            head per family among the candidates that are not reference points, ``ctx.references``, i.e. not the
            built-in baselines, when at least two families are left, :func:`~embedselect.metrics.pool.evidence`; the
            baselines and the families' other members are scored under it) or "all" (one head per family, the
            reference points included).
            The members are in ``details['prior_members']``. On natural photographs a prior that counts pixel PCA and
            a random projection ranks them above every ImageNet model (docs/validity.md, "Reference points").
        tau: scale-free temperature, T = tau / n (default :data:`DEFAULT_TAU`).
        temperature: absolute temperature; overrides tau (used for the moments at n and for the
            sampler on the probe subsample alike).
        n_tasks (256), n_classes (2): sampled tasks for the probes. The mean over tasks is the score; with fewer
            tasks its spread across seeds flips close top picks (docs/validity.md, "Signals and metric seeds").
            All tasks share one eigendecomposition per candidate; the sampler's cost is
            linear in the tasks (11 wide candidates at n = 300: about 1 s on 2 cores).
        probes (True): sample tasks and train probes; False gives the closed-form moments only.
        agreement (True): also compute the agreement score.
        max_items (4096): items (seeded subsample) used for sampling and probes.
        moments_max_items (16384): items (a seeded subsample, drawn apart from the probes') for the closed-form
            moments, whose cost is O(n²·d) time (O(n·d) memory): at n = 100 000 on two CPU cores they alone
            take about 4-6 minutes per candidate (docs/benchmarks.md, "Task Prior moments"). ``None``: all items.
            When it bites, ``details['subsampled']['moments']`` says how many were used, and the temperature
            follows the subsample (T = tau / n_used).
        test_fraction (0.3): held-out share for the probes.
        splits ("auto"): train/test splits the tasks are spread over (task s on split s % splits): with one split
            the held-out items, not the tasks, make most of the score's spread across seeds. "auto": enough splits to hold out about 2 000 items
            in all, 1 to 8 (:func:`~embedselect.metrics.probes.probe_splits`: 8 at 300 items, 2 at 4 096); each
            split costs its own ridge factorisations.
        dtype ("float64"), tile (None = device default): precision and tile of the streamed moments.
        tasks ("sampled"): where the probes' tasks come from. "sampled": ``n_tasks`` labelings of ``n_classes`` drawn
            from the Gibbs measure at the temperature (Algorithm 1). "clusters": the prior's most likely labelings
            instead of random ones, k-means partitions of its spectral embedding
            (:func:`~embedselect.metrics.task_prior.sampling.cluster_tasks_from_kernel`), ``cluster_restarts`` (8) per
            class count in ``cluster_classes`` ((4, 8, 16); counts above a fifth of the probe items are dropped);
            the image default, with ``cluster_restarts`` 32 (docs/validity.md, "Current defaults").
        leave_self_out (False): a pool prior leaves the scored candidate's own family out (its head, the member
            of the prior from that family; the weights of the others unchanged), for the moments and the probes
            alike, so a candidate is not scored on tasks it or its variants helped draw; "loo" is the consensus
            prior with it.

        headline ("probes"): the score used for ranking: "probes", the mean held-out probe accuracy
            over the sampled tasks, or "alignment", the closed-form E[Tr(MG)] / ‖σ(K/T)‖_F (exact,
            deterministic, cheap to bootstrap). The other one is still reported in ``columns`` and named
            in ``details['secondary']``, so that validation with labels measures both. "probes" is the
            default because it tracked held-out label accuracy better on the real datasets of the validity
            benchmark's first check (Spearman 0.90 vs 0.50 on polarity, 0.70 vs 0.60 on analogy, equal on digits;
            ``python -m benchmarks.validity``, docs/validity.md, "Reproducing"); the closed form did better on the bundled demo sample (0.8 vs 0.7) and on
            a synthetic pool of near-duplicates. With ``probes=False`` the headline is the alignment.

    Headline score: higher is better (see ``headline``).

    Raises:
        ConfigError: unknown option or bad value; ``prior='labels'`` without labels.
        TooFewItemsError: fewer than ``MIN_ITEMS['task_prior']`` items.
        MetricError: no candidate's embeddings can be used. A candidate whose embeddings cannot be (see
            :func:`~embedselect.metrics.base.unusable_reason`, or a zero kernel) gets score NaN and its reason in
            ``details['excluded']``; the others are scored without it.
    """
    opt = _options(ctx)
    keys = list(ctx.embeddings)
    n = _check_rows(ctx, keys)
    need = MIN_ITEMS["task_prior"]
    n_all = n
    cap = opt["moments_max_items"]
    moment_rows = None
    if cap is not None and n > positive_int(cap, "moments_max_items", need):
        rng_m = np.random.default_rng([ctx.seed, 5])
        moment_rows = np.sort(rng_m.choice(n, size=int(cap), replace=False))
        n = int(cap)

    sub = None
    if opt["probes"]:  # the seeded subsample of the probes, drawn before any candidate is looked at
        max_items = positive_int(opt["max_items"], "max_items", need)
        rng = np.random.default_rng([ctx.seed, 3])
        sub = np.sort(rng.choice(n_all, size=max_items, replace=False)) if n_all > max_items else np.arange(n_all)
    keys, zs, zsub, excluded = _factors(ctx, keys, opt, moment_rows, sub)
    m = len(keys)
    warnings: list[str] = []
    kind, labels_z = _resolve_prior(ctx, opt["prior"], keys, excluded, n_all, moment_rows, warnings)
    pool_warning = None
    n_families = len({family_of(k, ctx.families) for k in keys})
    if n_families < _SMALL_POOL and kind in POOL_PRIORS:
        pool_warning = (f"pool is small ({n_families} model families among {m} candidates): consensus-based scores "
                        "are unreliable")
        warnings.append(pool_warning)
    prior_name = kind if not kind.startswith("candidate:") else f"candidate:{keys[int(kind.split(':')[1])]}"
    members = evidence(keys, ctx.references if opt["prior_from"] == "models" else frozenset(), ctx.families)
    heads = {family_of(keys[i], ctx.families): i for i in members}
    left_out = [heads.get(family_of(k, ctx.families)) for k in keys]  # each candidate's own family's member
    g = cross_gram(zs) if kind in POOL_PRIORS else None  # the kernels' cross Gram matrix, for the moments and probes
    columns, details = _moments(ctx, opt, keys, zs, kind, labels_z, n, n_all, prior_name, members, left_out, g)
    if kind in POOL_PRIORS:
        details["prior_members"] = [keys[i] for i in members]
    if moment_rows is not None:
        details["subsampled"] = {"moments": n}
    if opt["probes"]:
        assert sub is not None  # drawn above when probes are on
        same = g is not None and all(a is b for a, b in zip(zsub, zs))  # the probes read the moments' rows
        _probes(ctx, opt, keys, zsub, kind, sub, n_all, columns, details, members, left_out,
                g[np.ix_(members, members)] if same and g is not None else None)
    return _finish(opt, columns, details, excluded, warnings, pool_warning)


def _moment_input(a: Any, moment_rows: np.ndarray | None) -> np.ndarray:
    """``a`` as an array, restricted to the moments' rows when they are a subsample."""
    return np.asarray(a) if moment_rows is None else np.asarray(a)[moment_rows]


def _options(ctx: MetricContext) -> dict[str, Any]:
    """The checked options, defaults filled in (``headline`` is "alignment" when probes are off)."""
    unknown = set(ctx.options) - set(_OPTION_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"unknown task_prior option(s) {sorted(unknown)}; known: {', '.join(sorted(_OPTION_DEFAULTS))}"
        )
    opt = {**_OPTION_DEFAULTS, **dict(ctx.options)}
    if opt["prior_from"] not in ("models", "all"):
        raise ConfigError(f"task_prior option 'prior_from' must be 'models' or 'all', got {opt['prior_from']!r}")
    if opt["headline"] not in ("alignment", "probes"):
        raise ConfigError(f"task_prior option 'headline' must be 'alignment' or 'probes', got {opt['headline']!r}")
    if not opt["probes"]:
        opt["headline"] = "alignment"
    if opt["tasks"] not in ("sampled", "clusters"):
        raise ConfigError(f"task_prior option 'tasks' must be 'sampled' or 'clusters', got {opt['tasks']!r}")
    for flag in ("probes", "agreement", "leave_self_out"):
        if not isinstance(opt[flag], (bool, np.bool_)):
            raise ConfigError(f"task_prior option {flag!r} must be True or False, got {opt[flag]!r}")
    return opt


def _check_rows(ctx: MetricContext, keys: list[str]) -> int:
    """The number of items n every candidate embeds (at least ``MIN_ITEMS['task_prior']``)."""
    if not keys:
        raise MetricError("task_prior needs at least one candidate's embeddings")
    n = int(np.asarray(ctx.embeddings[keys[0]]).shape[0]) if np.ndim(ctx.embeddings[keys[0]]) == 2 else -1
    need = MIN_ITEMS["task_prior"]
    if 0 <= n < need:
        raise TooFewItemsError(f"task_prior needs at least {need} reference items, got {n}; add more data",
                               needed=need, got=n)
    for k in keys:  # the contract: every candidate embeds the same n items
        rows_k = int(np.asarray(ctx.embeddings[k]).shape[0]) if np.ndim(ctx.embeddings[k]) == 2 else -1
        if rows_k != n:
            raise MetricError(f"embeddings[{k!r}] has {rows_k} rows, expected {n} (same items, same order)")
    return n


def _factors(ctx: MetricContext, keys: list[str], opt: Mapping[str, Any], moment_rows: np.ndarray | None,
             sub: np.ndarray | None) -> tuple[list[str], list[np.ndarray], list, dict[str, str]]:
    """The usable candidates, their kernel factors on the moments' rows and on the probe subsample (None when
    probes are off; the moments' factor itself when both read every row), and the candidates left out with their
    reasons."""
    # a candidate whose embeddings cannot be used (non-finite, one repeated vector, a zero kernel on the moments'
    # rows or on the probes' subsample) is left out with its reason (score NaN); the others are scored without it
    excluded: dict[str, str] = {}
    zs: list[np.ndarray] = []
    zsub: list = []  # the probe-subsample factors (None when probes are off)
    for k in keys:
        why = unusable_reason(k, ctx.embeddings[k])
        if why is None:
            try:
                z = kernel_factor(_moment_input(ctx.embeddings[k], moment_rows), what=f"embeddings[{k!r}]")
                every_row = moment_rows is None and sub is not None and len(sub) == len(z)
                zk = None if not opt["probes"] else z if every_row else \
                    kernel_factor(np.asarray(ctx.embeddings[k])[sub], what=f"embeddings[{k!r}] (probe subsample)")
            except MetricError as exc:
                why = str(exc)
        if why is not None:
            excluded[k] = why
            continue
        zs.append(z)
        zsub.append(zk)
    if excluded:
        keys = [k for k in keys if k not in excluded]
        if not keys:
            raise MetricError(
                "task_prior could not score any candidate: " + "; ".join(f"{k}: {v}" for k, v in excluded.items())
            )
    return keys, zs, zsub, excluded


def _resolve_prior(ctx: MetricContext, prior_opt: Any, keys: list[str], excluded: Mapping[str, str], n_all: int,
                   moment_rows: np.ndarray | None, warnings: list[str]) -> tuple[str, np.ndarray | None]:
    """The prior's kind ("labels", one of :data:`POOL_PRIORS` or "candidate:<index>") and, for "labels", the
    label factor on the moments' rows; caveats are appended to ``warnings``."""
    m = len(keys)
    labels_z = None
    if prior_opt == "labels":
        if ctx.labels is None:
            raise ConfigError("prior='labels' needs labels; pass labels to select() or choose prior='consensus'")
        if len(ctx.labels) != n_all:
            raise ConfigError(f"labels has length {len(ctx.labels)}, expected {n_all} (one per reference item)")
        labels_z = label_factor(_moment_input(ctx.labels, moment_rows))
        kind = "labels"
    elif prior_opt in POOL_PRIORS:
        kind = prior_opt
        if m == 1:
            kind = "candidate:0"
            warnings.append(f"only one candidate: prior '{prior_opt}' falls back to the candidate's own kernel")
        elif kind == "loo" and m == 2:
            warnings.append("prior 'loo' with two candidates scores each under the other's kernel")
    elif prior_opt in excluded:
        raise MetricError(f"the prior candidate {prior_opt!r} cannot be used: {excluded[prior_opt]}")
    elif prior_opt in ctx.embeddings:
        kind = f"candidate:{keys.index(prior_opt)}"
        warnings.append(f"prior is candidate {prior_opt!r}: it and its relatives are favoured (self-bias)")
    else:
        raise ConfigError(
            f"prior must be 'consensus', 'balanced', 'central', 'loo', 'labels' or a candidate key ({', '.join(map(repr, keys))}); "
            f"got {prior_opt!r}"
        )
    return kind, labels_z


def _moments(ctx: MetricContext, opt: Mapping[str, Any], keys: list[str], zs: list[np.ndarray], kind: str,
             labels_z: np.ndarray | None, n: int, n_all: int, prior_name: str,
             members: list[int], left_out: list[int | None],
             g: np.ndarray | None) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """The closed-form moments' columns (mean, var, alignment per candidate) and the details they start; ``g``: the
    cross Gram matrix of ``zs`` (:func:`~embedselect.metrics.task_prior.priors.cross_gram`) for a pool prior;
    ``left_out``: per candidate, the member of its own family (an index into ``zs``) or None, which a prior that
    leaves the candidate out leaves out."""
    m = len(keys)
    temperature = resolve_temperature(n, temperature=opt["temperature"], tau=opt["tau"])
    dtype = check_dtype(opt["dtype"])
    dev = torch_device(ctx.device)
    tile = check_tile(opt["tile"], dev)
    if kind in POOL_PRIORS:
        assert g is not None, "a pool prior comes with its cross Gram matrix"
        wts = np.zeros(m)  # only the members (the evidence) weigh in the pool's prior
        wts[members] = pool_weights(kind, g[np.ix_(members, members)], len(members))
        if kind in WEIGHED_PRIORS:
            details_weights = {k: float(v / wts.sum()) for k, v in zip(keys, wts)}
        if not _leaves_self_out(kind, opt):
            prior = Prior("sum", weights=[float(v) for v in wts], scale=1.0 / math.sqrt(float(wts @ g @ wts)))
        else:  # each candidate's prior: the members but its own family's
            scales = []
            for c in range(m):
                wc = wts.copy()
                if left_out[c] is not None:
                    wc[left_out[c]] = 0.0
                scales.append(1.0 / math.sqrt(float(wc @ g @ wc)))
            prior = Prior("loo", scales=scales, weights=[float(v) for v in wts],
                          drop=[-1 if d is None else d for d in left_out])
    elif kind == "labels":
        assert labels_z is not None  # set with kind = "labels" above
        prior = Prior("ext", z=to_torch(labels_z, dev, dtype))
    else:
        prior = Prior("model", index=int(kind.split(":")[1]))
    res = stream_moments([to_torch(z, dev, dtype) for z in zs], prior, temperature, tile=tile)
    moments = {
        k: TaskPriorMoments(mean=e, var=v, p_fro=math.sqrt(max(pp, 0.0)), temperature=temperature, n=n)
        for k, (e, v, pp) in zip(keys, res)
    }
    columns: dict[str, dict[str, float]] = {
        "task_prior_mean": {k: mo.mean for k, mo in moments.items()},
        "task_prior_var": {k: mo.var for k, mo in moments.items()},
        "task_prior_alignment": {k: mo.alignment for k, mo in moments.items()},
    }
    details: dict[str, Any] = {
        "prior": prior_name,
        "temperature": temperature,
        "tau": temperature * n,
        "n_items": n_all,
        "n_moment_items": n,
        "dtype": dtype,
        "device": str(dev),
        "headline": "task_prior_alignment",
    }
    if kind in WEIGHED_PRIORS:
        details["prior_weights"] = details_weights
    return columns, details


def _probes(ctx: MetricContext, opt: Mapping[str, Any], keys: list[str], zsub: list, kind: str, sub: np.ndarray,
            n_all: int, columns: dict[str, dict[str, float]], details: dict[str, Any], members: list[int],
            left_out: list[int | None], g_members: np.ndarray | None = None) -> None:
    """Draw tasks from the prior on the probe subsample (sampled or its clusters, option ``tasks``), train probes on
    them, and add the probe columns and details. ``g_members``: the members' cross Gram matrix on these rows, when
    already computed."""
    from embedselect.metrics.probes import probe_splits, probe_tasks

    dev = torch_device(ctx.device)
    ns = len(sub)
    splits = probe_splits(ns, opt["test_fraction"]) if opt["splits"] == "auto" else positive_int(opt["splits"], "splits", 1)
    t_sub = resolve_temperature(ns, temperature=opt["temperature"], tau=opt["tau"])
    lz = label_factor(np.asarray(ctx.labels)[sub]) if kind == "labels" else None
    per_cand_prior = _leaves_self_out(kind, opt)
    draw = _task_drawer(opt, ns, t_sub, (kind, zsub, lz, members, g_members))
    drawn: dict[int | None, dict[int, np.ndarray]] = {}  # the member left out -> the tasks of that prior
    summaries: dict[str, dict[str, float]] = {}
    task_acc: dict[str, list[float]] = {}  # candidate -> held-out accuracy per task (for plots)
    for c, k in enumerate(keys):
        who = left_out[c] if per_cand_prior else None  # a family shares its prior and its tasks
        if who not in drawn:  # the seed follows the member left out (its vectors), not the candidates' order
            at = 0 if who is None else int(fingerprint(np.asarray(ctx.embeddings[keys[who]]), sub)[:8], 16) + 1
            drawn[who] = draw(who, int(np.random.default_rng([ctx.seed, 4, at]).integers(2**31)))
        tasks = drawn[who]
        # one probe per task over max(q) one-hot columns: a class a task lacks never wins the argmax, since a ridge
        # fit with an intercept to one-hot targets predicts scores that sum to 1 over the classes present
        rep = probe_tasks(np.asarray(ctx.embeddings[k])[sub], np.concatenate(list(tasks.values())),
                          n_classes=max(tasks), test_fraction=opt["test_fraction"], agreement=bool(opt["agreement"]),
                          seed=ctx.seed, device=str(dev), splits=splits)
        summaries[k] = rep.summary()
        task_acc[k] = [round(float(a), 4) for a in rep.accuracy]
    for col in next(iter(summaries.values())):
        columns[col] = {k: summaries[k][col] for k in keys}
    if ns < n_all:
        details.setdefault("subsampled", {})["probes"] = ns
    qs = sorted(tasks)  # the class counts (one for sampled tasks)
    details.update(n_probe_items=ns, n_tasks=sum(len(t) for t in tasks.values()), n_classes=qs[0] if len(qs) == 1 else qs,
                   tasks=opt["tasks"], probe_temperature=t_sub, test_fraction=float(opt["test_fraction"]),
                   splits=splits, task_accuracy=task_acc)


def _leaves_self_out(kind: str, opt: Mapping[str, Any]) -> bool:
    """Whether each candidate is scored under a prior without its own kernel: "loo", or a pool prior with the option
    ``leave_self_out``."""
    return kind == "loo" or (bool(opt["leave_self_out"]) and kind in POOL_PRIORS)


def _task_drawer(opt: Mapping[str, Any], ns: int, t_sub: float,
                 prior_args: tuple[Any, ...]) -> Callable[[int | None, int], dict[int, np.ndarray]]:
    """``draw(who, seed) -> {class count q: int64 tasks (S_q, ns)}`` for the option ``tasks``: the tasks of the prior
    for candidate ``who`` (None: nobody left out), from its factor (ns, D,
    :func:`~embedselect.metrics.task_prior.priors.prior_factors`) for sampled tasks or its kernel (ns, ns,
    :func:`~embedselect.metrics.task_prior.priors.prior_kernels`) for cluster tasks. ``prior_args``: their arguments
    (kind, factors, label factor, members, cross Gram matrix); the options are checked first."""
    if opt["tasks"] == "sampled":
        n_tasks = positive_int(opt["n_tasks"], "n_tasks", 1)
        q = positive_int(opt["n_classes"], "n_classes", 2)
        factor = prior_factors(*prior_args)
        return lambda who, seed: {q: sample_tasks_from_factor(factor(who), n_tasks, q, temperature=t_sub, seed=seed)}
    classes = opt["cluster_classes"]
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__") or not list(classes):
        raise ConfigError(f"task_prior option 'cluster_classes' must list class counts ≥ 2, got {classes!r}")
    qs = sorted({positive_int(q, "cluster_classes", 2) for q in classes})
    qs = [q for q in qs if q <= max(2, ns // 5)] or [2]  # at least about 5 items per class
    restarts = positive_int(opt["cluster_restarts"], "cluster_restarts", 1)
    kernel = prior_kernels(*prior_args)
    return lambda who, seed: cluster_tasks_from_kernel(kernel(who), qs, restarts, seed=seed)


def _finish(opt: Mapping[str, Any], columns: dict[str, dict[str, float]], details: dict[str, Any],
            excluded: Mapping[str, str], warnings: list[str], pool_warning: str | None) -> MetricResult:
    """The headline scores (NaN for the candidates left out), warnings and the metric result."""
    if opt["headline"] == "probes":
        details.update(headline="probe_acc_mean", secondary=["task_prior_alignment"])
        scores = dict(columns["probe_acc_mean"])
    else:
        details.update(headline="task_prior_alignment", secondary=["probe_acc_mean"] if opt["probes"] else [])
        scores = dict(columns["task_prior_alignment"])
    if excluded:
        details["excluded"] = excluded
        for k in excluded:
            scores[k] = math.nan
            for values in columns.values():
                values[k] = math.nan
    if warnings:
        details["warnings"] = warnings
    if pool_warning:
        details["pool_warning"] = pool_warning
    return MetricResult(name="task_prior", scores=scores, columns=columns, details=details)
