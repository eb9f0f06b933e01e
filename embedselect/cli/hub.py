"""Hub commands of the CLI: ``embedselect crawl`` and ``embedselect hub ls``.

:func:`register` adds them to the main parser's subparsers (see :func:`embedselect.cli.build_parser`); each
sets ``func`` to a handler ``(args) -> exit code``. Exit codes: 0 ok, 5 (hub) when a crawl got no model and
some page failed, 8 (partial) when ``--strict`` is given and any page failed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from embedselect.cli.common import add_cache_dir_arg, add_log_args, stderr_line
from embedselect.errors import EXIT_CODES, ConfigError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT]?)\s*$")
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
_ALL_HELP = ("also list crawled ids that are no hub model id (e.g. with markup or escape sequences); by default they "
             "are left out and counted on stderr")


def parse_count(text: str) -> int:
    """A parameter count such as ``"110M"``, ``"1.5B"``, ``"300k"`` or ``"125000000"`` → int."""
    m = _SIZE_RE.match(str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a parameter count (e.g. 110M, 1.5B, 300000)")
    return int(round(float(m.group(1)) * _SUFFIX[m.group(2).lower()]))


def register(subparsers) -> None:
    """Add ``crawl`` and ``hub`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "crawl",
        help="list embedding models on the hub and record them in the cache's hub models table",
        description="List models on the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN honoured) and upsert them into "
        "the cache's hub models table, keeping history (downloads, trending score per crawl).",
    )
    p.add_argument("--library", help="library_name, e.g. sentence-transformers, timm, transformers")
    p.add_argument("--pipeline-tag", help="e.g. feature-extraction, image-feature-extraction, sentence-similarity")
    p.add_argument("--tag", action="append", default=[], help="required tag (repeatable)")
    p.add_argument("--author", help="user or organisation")
    p.add_argument("--search", help="substring of the model id")
    p.add_argument("--sort", default="trending", choices=["trending", "downloads", "likes", "recency", "created"],
                   help="order of the listing, descending (default trending)")
    p.add_argument("--limit", type=int, default=100, help="maximum number of models (default 100)")
    p.add_argument("--max-pages", type=int, default=50,
                   help="listing pages read at most (default 50); a listing whose next link never ends stops here")
    p.add_argument("--min-params", type=parse_count, help="minimum parameter count, e.g. 10M")
    p.add_argument("--max-params", type=parse_count, help="maximum parameter count, e.g. 500M")
    p.add_argument("--license", action="append", dest="licenses", help="allowed licence id (repeatable)")
    p.add_argument("--exclude-gated", action="store_true", help="skip gated repos")
    p.add_argument("--no-record", action="store_true", help="only print; do not record in the hub models table")
    p.add_argument("--all", action="store_true", help=_ALL_HELP + " (in the table and in --json, as hub ls)")
    add_cache_dir_arg(p)
    p.add_argument("--json", action="store_true", help="print the crawl as JSON on stdout")
    p.add_argument("--strict", action="store_true", help="exit 8 if any listing page failed")
    add_log_args(p, quiet="print no table (warnings and --json still)")
    p.set_defaults(func=cmd_crawl)

    p = subparsers.add_parser("hub", help="list the hub models recorded by `crawl`")
    p.add_argument("hub_cmd", choices=["ls"], help="ls: list them, most trending first")
    p.add_argument("--modality", choices=["text", "image"], help="only text or only image models")
    p.add_argument("--max-params", type=parse_count, help="maximum parameter count, e.g. 150M")
    p.add_argument("--license", action="append", dest="licenses", help="allowed licence id (repeatable)")
    p.add_argument("--exclude-gated", action="store_true", help="skip gated repos")
    p.add_argument("--new", action="store_true", help="only models first seen in the latest crawl")
    p.add_argument("--include-refused", action="store_true", help="also list models the safety policy refused")
    p.add_argument("--limit", type=int, help="at most this many models (default: all)")
    p.add_argument("--all", action="store_true", help=_ALL_HELP)
    add_cache_dir_arg(p)
    p.add_argument("--json", action="store_true", help="print the models as JSON on stdout")
    add_log_args(p)
    p.set_defaults(func=cmd_hub)


def _fmt(v) -> str:
    if v is None or v != v:  # None or NaN
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def _table(rows: list[dict], cols: list[str], *, terminal: bool | None = None) -> str:
    """The hub models as a plain table, one line per model: each cell is :func:`embedselect.cli.format.cell` (a
    license tag or library name from the hub holding a line break printed a line that read as another model's row),
    to a pipe as on a terminal. On a terminal (``terminal``, default: stdout is one) the cells also lose their
    terminal control characters before they are measured: a crawled id with an escape sequence shifted its row (the
    characters were dropped only when written)."""
    from embedselect.cli.format import cell, stdout_is_terminal

    on_tty = stdout_is_terminal() if terminal is None else terminal
    cells = [[cell(_fmt(r.get(c)), on_tty) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def cmd_crawl(args) -> int:
    """Handler of ``embedselect crawl``."""
    from embedselect.pipeline import refresh_hub_models

    result, crawl_id = refresh_hub_models(
        cache_dir=args.cache_dir,
        record=not args.no_record,
        library=args.library,
        pipeline_tag=args.pipeline_tag,
        tags=tuple(args.tag),
        author=args.author,
        search=args.search,
        sort=args.sort,
        limit=args.limit,
        min_params=args.min_params,
        max_params=args.max_params,
        licenses=args.licenses,
        include_gated=not args.exclude_gated,
        max_pages=args.max_pages,
    )
    if args.json or not args.quiet:  # hub ls's rule (_listed): ids that are no hub model id left out and counted
        shown = _listed([m.repo_id for m in result.models], show_all=args.all)
    if args.json:
        out = result.to_dict()
        out["models"] = [m for m, ok in zip(out["models"], shown) if ok]
        out["crawl_id"] = crawl_id
        print(json.dumps(out, indent=2, default=str))
    elif not args.quiet:
        rows = [m.to_dict() for m, ok in zip(result.models, shown) if ok]
        print(_table(rows, ["repo_id", "library", "modality", "num_params", "downloads", "trending_score", "license",
                            "gated"]))
        print(
            f"{len(result.models)} models from {result.pages} page(s)"
            + (f", recorded as crawl {crawl_id}" if crawl_id else ""),
            file=sys.stderr,
        )
    for e in result.errors:
        stderr_line(f"embedselect: warning: page {e.page} ({e.kind}): {e.message}")  # the message quotes the hub
    if result.errors and not result.models:
        return EXIT_CODES["hub"]
    if result.errors and args.strict:
        return EXIT_CODES["partial"]
    return 0


def _is_model_id(repo_id: object) -> bool:
    """Whether a crawled ``repo_id`` is a hub model id the hub would accept (:func:`~embedselect.models.hub.fetch.
    check_repo_id`)."""
    from embedselect.errors import CandidateError
    from embedselect.models.hub.fetch import check_repo_id

    try:
        check_repo_id(repo_id)  # type: ignore[arg-type]
    except CandidateError:
        return False
    return True


def _listed(repo_ids: list[object], *, show_all: bool) -> list[bool]:
    """Which crawled ``repo_ids`` a listing (``crawl``'s table, ``hub ls``) shows: every one with ``show_all``
    (``--all``), else those that are a hub model id (:func:`_is_model_id`); the ids left out are counted in one line
    on stderr."""
    shown = [show_all or _is_model_id(r) for r in repo_ids]
    if not all(shown):
        first = next(r for r, ok in zip(repo_ids, shown) if not ok)
        print(f"embedselect: {shown.count(False)} crawled id(s) left out: failed validation, not a hub model id (e.g. "
              f"{first!r}); --all shows them", file=sys.stderr)
    return shown


def cmd_hub(args) -> int:
    """Handler of ``embedselect hub ls``."""
    from embedselect.store import Store
    from embedselect.store.hub_models import candidates

    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be a positive integer")
    df = candidates(
        Store.open(args.cache_dir),
        modality=args.modality,
        max_params=args.max_params,
        licenses=args.licenses,
        exclude_gated=args.exclude_gated,
        new_since_last_crawl=args.new,
        include_refused=args.include_refused,
        limit=args.limit if args.all else None,  # the limit counts the ids listed
    )
    if not args.all:  # ids the hub would not accept (check_repo_id, the one rule): no candidate, left out and counted
        df = df[_listed(list(df["repo_id"]), show_all=False)]
        df = df.head(args.limit) if args.limit is not None else df
    if args.json:
        print(df.to_json(orient="records", date_format="iso"))
    else:
        rows = df.to_dict(orient="records")
        print(_table(rows, ["repo_id", "library", "modality", "num_params", "downloads", "trending_score", "gated",
                            "is_new"]))
    return 0
