"""Log a :class:`~embedselect.ranking.result.Ranking` to MLflow (``pip install 'embedselect[mlflow]'``).

One MLflow run per ranking:

- **params**: the settings (seed, max_items, bootstrap, on_error, device, batch_size, metrics, combine, weights and
  metric options as JSON), the data (modality, items, fingerprint) and the embedselect version; a setting that is not
  set (``max_items`` without a cap) is left out, not logged as ``"None"``;
- **metrics**: for every scored candidate ``<candidate>.<metric>`` (its score), ``<candidate>.<metric>.rank``,
  ``<candidate>.combined_score`` and ``<candidate>.rank``; candidate names are made MLflow keys (characters
  other than letters, digits, ``_ - . / space`` become ``_``); non-finite scores are left out;
- **artifacts** under ``embedselect/``: ``ranking.json`` (``Ranking.to_json``, read back with
  ``Ranking.from_json``) and ``report.html`` (the self-contained HTML report);
- **tags**: ``embedselect.pick`` (the first candidate when the ranking decided; empty when it did not, as no
  candidate is picked then: ``embedselect.leaders`` names the candidates it could not tell apart),
  ``embedselect.decided``, ``embedselect.leaders``, ``embedselect.failed`` (the candidates that failed, by name; their
  reasons are in ``ranking.json``), ``embedselect.warnings`` (the warning codes), ``embedselect.ranking_id``.

Nothing is printed: MLflow's "View run ... at: URL" lines, which a run it ends writes to standard output for a
tracking server, are turned off while :func:`log_ranking` runs (they followed ``rank --json``'s JSON on stdout, and the
URL is the tracking URI, password included); so are MLflow's INFO log lines ("Experiment with name ... does not exist.
Creating a new experiment.") unless embedselect's log shows INFO (``-v``), as for transformers' own output.

mlflow is imported only when :func:`log_ranking` runs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterator

from embedselect._util.extras import require
from embedselect._util.library_logs import library_logs_below
from embedselect.ranking.result import Ranking

__all__ = ["log_ranking", "metric_key", "ranking_metrics", "ranking_params", "ranking_tags"]

_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-./ ]")


def metric_key(name: str) -> str:
    """``name`` as an MLflow key: characters MLflow refuses in keys become ``_``."""
    return _BAD_KEY_CHARS.sub("_", name).strip() or "_"


def ranking_params(ranking: Ranking) -> dict[str, str]:
    """The run's params: settings, data and version, as strings (what MLflow stores). A setting that is not set
    (``max_items`` without a cap, ``batch_size`` left to the backend, no weights recorded) is left out: MLflow has no
    null param, and the text ``"None"`` would read as a value."""
    s = ranking.settings or {}
    weights = s.get("combined_weights") or s.get("weights")
    data = ranking.dataset or {}
    params: dict[str, Any] = {
        "seed": s.get("seed"),
        "max_items": s.get("max_items"),
        "bootstrap": s.get("bootstrap"),
        "on_error": s.get("on_error"),
        "device": s.get("device"),
        "batch_size": s.get("batch_size"),
        "metrics": ",".join(ranking.metrics),
        "combine": ranking.combine,
        "weights": None if weights is None else json.dumps(weights, sort_keys=True),
        "metric_options": json.dumps(s.get("metric_options") or {}, sort_keys=True, default=str),
        "candidates": len(ranking.candidates),
        "data.modality": data.get("modality"),
        "data.n": data.get("n"),
        "data.fingerprint": data.get("fingerprint"),
        "embedselect.version": (ranking.versions or {}).get("embedselect"),
    }
    return {k: str(v) for k, v in params.items() if v is not None}


def ranking_metrics(ranking: Ranking) -> dict[str, float]:
    """Every scored candidate's scores and ranks, keyed ``<candidate>.<metric>[.rank]``, ``<candidate>.rank`` and
    ``<candidate>.combined_score`` (finite values only). Two names that become the same key are told apart by
    ``_2``, ``_3``... in the order of the ranking.

    Raises:
        ValueError: never for a ranking made by embedselect; a key MLflow would refuse cannot be built.
    """
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    for c in ranking.ok:
        key = metric_key(c.name)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}_{seen[key]}"
        values: dict[str, Any] = {f"{key}.{m}": c.scores.get(m) for m in ranking.metrics}
        values.update({f"{key}.{m}.rank": c.ranks.get(m) for m in ranking.metrics})
        values.update({f"{key}.combined_score": c.combined_score, f"{key}.rank": c.rank})
        for k, v in values.items():
            if v is not None and math.isfinite(float(v)):
                out[k] = float(v)
    return out


def ranking_tags(ranking: Ranking) -> dict[str, str]:
    """The pick (empty when the ranking did not decide), the decision, the leaders and the failed candidates as
    tags."""
    best = ranking.best
    return {
        "embedselect.pick": best.name if best is not None and ranking.decided else "",
        "embedselect.decided": str(bool(ranking.decided)).lower(),
        "embedselect.leaders": ",".join(ranking.leaders),
        "embedselect.failed": ",".join(c.name for c in ranking.failed),
        "embedselect.warnings": ",".join(sorted({w.code for w in ranking.warnings})),
        "embedselect.ranking_id": ranking.ranking_id or "",  # "": not stored
    }


def log_ranking(ranking: Ranking, *, tracking_uri: str | None = None, experiment: str | None = None,
                run_name: str | None = None, html: bool = True) -> str:
    """Log ``ranking`` to MLflow as one run (what is logged: the module docstring).

    Args:
        ranking: the ranking to log.
        tracking_uri: the tracking server or store (None: MLflow's own choice, ``MLFLOW_TRACKING_URI`` first).
        experiment: the experiment's name (created if missing; None: MLflow's active or default experiment).
        run_name: the run's name (None: ``embedselect <ranking_id[:8]>``).
        html: also log the HTML report (``report.html``).

    Returns:
        the MLflow run id. Inside an active run (``with mlflow.start_run():``) the ranking is logged into it.

    Raises:
        MissingExtraError: mlflow is not installed (the message names ``pip install 'embedselect[mlflow]'``).
    """
    mlflow: Any = require("mlflow", extra="mlflow", purpose="logging a ranking to MLflow")
    with _quiet():
        if tracking_uri:
            mlflow.set_tracking_uri(tracking_uri)
        if experiment:
            mlflow.set_experiment(experiment)
        return _log(mlflow, ranking, run_name=run_name, html=html)


_NO_LINKS = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"
"""MLflow's switch for the run and experiment links it prints on standard output when it ends a run."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """While the block runs, MLflow prints no links, and logs below WARNING only when embedselect's log shows INFO;
    the caller's switch and MLflow logger level are put back."""
    before = os.environ.get(_NO_LINKS)
    os.environ[_NO_LINKS] = "true"
    try:
        with library_logs_below("mlflow", logging.WARNING):
            yield
    finally:
        if before is None:
            os.environ.pop(_NO_LINKS, None)
        else:
            os.environ[_NO_LINKS] = before


def _log(mlflow: Any, ranking: Ranking, *, run_name: str | None, html: bool) -> str:
    """Log ``ranking`` into the active run, or into a run of its own that it ends; the run id."""
    active = mlflow.active_run()
    run = active or mlflow.start_run(run_name=run_name or f"embedselect {(ranking.ranking_id or '')[:8]}".strip())
    try:
        mlflow.log_params(ranking_params(ranking))
        mlflow.log_metrics(ranking_metrics(ranking))
        mlflow.set_tags(ranking_tags(ranking))
        with tempfile.TemporaryDirectory(prefix="embedselect-mlflow-") as tmp:
            folder = Path(tmp) / "embedselect"
            folder.mkdir()
            (folder / "ranking.json").write_text(ranking.to_json(), encoding="utf-8")
            if html:
                from embedselect.publish.report import to_html

                (folder / "report.html").write_text(to_html(ranking), encoding="utf-8")
            mlflow.log_artifacts(str(folder), artifact_path="embedselect")
        run_id: str = run.info.run_id
    finally:
        if active is None:
            mlflow.end_run()
    return run_id
