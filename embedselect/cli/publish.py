"""Publishing commands: ``embedselect badge | card | leaderboard | report``, each from a stored ranking (``--ranking
ID``, or the latest for ``--fingerprint FP``, or the latest of all)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from embedselect.cli.common import (add_cache_dir_arg, add_log_args, add_overwrite_arg, input_option, output_option,
                                    read_text_input, stderr_line, write_atomic)

QUIET = "print nothing but errors (what --out and --push write is written all the same; --json and a result " \
        "without --out are still printed)"
"""What ``--quiet`` leaves out of badge, card, leaderboard and report: the lines that say what was written."""


def _ranking(args):
    from embedselect.publish import load_ranking
    from embedselect.store import Store

    store = Store.open(args.cache_dir)
    return store, load_ranking(store, ranking_id=args.ranking, fingerprint=args.fingerprint)


def cmd_badge(args) -> int:
    from embedselect.publish import write_badges

    from embedselect._fs import guard as fsguard
    from embedselect.store import default_cache_dir

    fsguard.check_output_target(args.out, what="--out", into=True,
                                inside_forbidden={"cache": args.cache_dir or default_cache_dir()})
    _, ranking = _ranking(args)
    written = write_badges(ranking, args.out, dataset=args.dataset, base_url=args.base_url)
    if args.json:
        print(json.dumps(written, indent=2))
    elif not args.quiet:
        for name, files in written.items():
            print(f"{name}: {files['svg']}\n  {files['markdown']}")
    return 0


def is_card_file(path: Path) -> bool:
    """Whether ``path`` is a model card to update: an existing regular file named ``*.md`` / ``*.markdown`` or
    starting with a YAML front matter (``---``), decodable as UTF-8 (a user's README, an earlier ``card --out``)."""
    import stat

    try:
        if path.is_symlink() or not stat.S_ISREG(path.stat().st_mode) or path.stat().st_size > 16 << 20:
            return False
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError):
        return False
    return path.suffix.lower() in (".md", ".markdown") or text.lstrip().startswith("---")


def _card_updates(path: Path, args) -> bool:
    """``card --out FILE``: FILE is updated as a card (its own text kept) when no other ``--card`` is given and it
    is one (:func:`is_card_file`), or when ``--card`` names FILE itself."""
    if args.card is None:
        return not args.overwrite and is_card_file(path)
    card = Path(args.card).expanduser()
    return card.exists() and path.exists() and os.path.samefile(card, path)


def cmd_card(args) -> int:
    from embedselect.publish import push_card, update_card

    card_file = args.card
    if card_file is None and args.out and _card_updates(Path(args.out).expanduser(), args):
        card_file = args.out  # the existing card at --out is updated, never replaced by a new one
        if not args.quiet:
            print(f"updating the model card {args.out} (its text and metadata are kept)", file=sys.stderr)
    text = read_text_input(card_file, option="--card") if card_file else None  # before any work
    _, ranking = _ranking(args)
    card = update_card(text, ranking, args.candidate, dataset=args.dataset, base_url=args.base_url)
    if args.out:
        write_atomic(Path(args.out), card, kind="card", what="--out")
        if not args.quiet:
            print(f"wrote {args.out}", file=sys.stderr)
    if args.push:
        url = push_card(args.push, card)
        if not args.quiet:
            stderr_line(f"opened a pull request on {args.push}: {url}")  # the URL is the hub's answer
    if not args.out and not args.push:
        print(card)
    return 0


def _ranking_list(df: Any) -> str:
    """``leaderboard --list`` for a person: each stored ranking by the 12-character prefix ``--ranking`` takes, its
    time, data file, size and first row (marked when the ranking did not decide), then its metrics (the JSON has
    the full ids and fingerprints; the table was 64-hex fingerprints and 32-hex ids, over 200 characters wide); each
    text cell one line (:func:`embedselect.cli.format.cell`)."""
    import numpy as np
    import pandas as pd

    from embedselect.cli.format import frame_cells, stdout_is_terminal

    if df.empty:
        return "no stored rankings: run embedselect rank first"
    first = [f"{f} (undecided)" if d is False or d is np.False_ else str(f) for f, d in zip(df["first"], df["decided"])]
    view = pd.DataFrame({
        "ranking": df["ranking_id"].str[:12],
        "created": pd.to_datetime(df["created_at"], utc=True).dt.strftime("%Y-%m-%d %H:%M:%S"),
        "data": [Path(str(s)).name if s else "-" for s in df["source"]],
        "fingerprint": df["fingerprint"].str[:12],
        "candidates": df["n_candidates"],
        "first": first,
        "metrics": df["metrics"],
    })
    return frame_cells(view, stdout_is_terminal()).to_string(index=False)


def cmd_leaderboard(args) -> int:
    from embedselect.publish import leaderboard as lb

    store, ranking = _ranking(args)
    if args.list:
        df = store.list_rankings(fingerprint=args.fingerprint)
        print(df.to_json(orient="records", date_format="iso", indent=2) if args.json else _ranking_list(df))
        return 0
    previous = lb.previous_ranking(store, ranking)
    fmt = "json" if args.json else args.format
    text = {"md": lb.to_markdown, "json": lb.to_json, "html": lb.to_html}[fmt](ranking, previous)
    if args.out:
        write_atomic(Path(args.out), text, kind={"md": "markdown"}.get(fmt, fmt), what="--out")
    else:
        print(text)
    return 0


def cmd_report(args) -> int:
    from embedselect.publish import report

    _, ranking = _ranking(args)
    write_atomic(Path(args.out), report.to_html(ranking), kind="html", what="--out")
    if not args.quiet:
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def register(sub) -> None:
    """Add badge, card, leaderboard and report to the main parser's subparsers."""

    def source(p):
        add_cache_dir_arg(p)
        add_log_args(p, quiet=QUIET)
        p.add_argument("--ranking", metavar="ID", help="stored ranking id or a unique prefix (default: the latest)")
        p.add_argument("--fingerprint", metavar="FP", help="the latest ranking of this data fingerprint (prefix)")

    p = sub.add_parser("badge", help="write an SVG badge and a shields.io endpoint JSON per ranked candidate")
    source(p)
    output_option(p.add_argument("--out", required=True, type=Path, help="folder for <candidate>.svg / .json and badges.md"),
                  folder=True)
    p.add_argument("--dataset", help="data set name shown on the badge (default: the data file's name)")
    p.add_argument("--base-url", help="where the SVGs will be served, for the Markdown snippets")
    p.add_argument("--json", action="store_true", help="print the written files as JSON")
    p.set_defaults(func=cmd_badge)

    p = sub.add_parser("card", help="write a ranking's result into a model card (model-index + badge section)")
    source(p)
    p.add_argument("--candidate", required=True, help="the ranked candidate's name")
    input_option(p.add_argument("--card", help="existing README.md to update (default: a new card, or the card "
                                               "already at --out)"), updated_by="out")
    output_option(p.add_argument("--out", help="write the card here (default: print it); an existing card there "
                                               "is updated"), updatable=_card_updates)
    add_overwrite_arg(p)
    p.add_argument("--dataset", help="data set name in the card (default: the data file's name)")
    p.add_argument("--base-url", help="where the badge SVG is served")
    p.add_argument("--push", metavar="REPO_ID", help="open a pull request with the card on this hub model repo")
    p.set_defaults(func=cmd_card)

    p = sub.add_parser("leaderboard", help="a ranking as a leaderboard with rank/score changes against the previous one")
    source(p)
    p.add_argument("--format", choices=["md", "json", "html"], default="md",
                   help="Markdown (default), JSON or a self-contained HTML page")
    p.add_argument("--json", action="store_true", help="same as --format json")
    output_option(p.add_argument("--out", help="write to this file (default: print)"))
    add_overwrite_arg(p)
    p.add_argument("--list", action="store_true", help="list the stored rankings instead")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("report", help="a self-contained HTML report of a stored ranking")
    source(p)
    output_option(p.add_argument("--out", required=True, help="the HTML file to write"))
    add_overwrite_arg(p)
    p.set_defaults(func=cmd_report)
