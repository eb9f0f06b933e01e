"""CLI commands that publish a stored ranking: ``badge``, ``card``, ``leaderboard``, ``report``.

Each takes a stored ranking id (``--ranking``, a unique prefix is enough) or the latest ranking of a dataset
(``--dataset FINGERPRINT-PREFIX``), or else the newest ranking in the store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def _ranking(args):
    from embedselect.store import Store
    from embedselect.store.rankings import get_ranking, latest_ranking

    store = Store.open(args.cache_dir)
    if args.ranking:
        return store, get_ranking(store, args.ranking)
    return store, latest_ranking(store, args.dataset)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def cmd_badge(args) -> int:
    from embedselect.publish.badges import write_badges

    _, ranking = _ranking(args)
    index = write_badges(ranking, args.out_dir, dataset_label=args.label, base_url=args.base_url)
    if args.json:
        print(json.dumps(index, indent=2, ensure_ascii=False))
    else:
        for e in index:
            print(f"{e['message']:<40} {Path(args.out_dir) / e['svg']}\n  {e['markdown']}")
    return 0


def cmd_leaderboard(args) -> int:
    from embedselect.publish import leaderboard
    from embedselect.store.rankings import list_rankings, previous_ranking

    if args.list:
        from embedselect.store import Store

        rows = list_rankings(Store.open(args.cache_dir), args.dataset)
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['ranking_id'][:12]}  {r['created_at']}  {r['fingerprint'][:12]}  "
                      f"{r['metrics']}  {r['n_candidates']} candidates")  # fmt: skip
        return 0
    store, ranking = _ranking(args)
    prev = previous_ranking(store, ranking, same_candidates=True) or previous_ranking(
        store, ranking, same_candidates=False
    )
    render = {"markdown": leaderboard.to_markdown, "json": leaderboard.to_json, "html": leaderboard.to_html}
    text = render[args.format](ranking, prev)
    if args.output:
        _write(Path(args.output), text + ("" if text.endswith("\n") else "\n"))
    else:
        print(text)
    return 0


def cmd_card(args) -> int:
    from embedselect.publish.cards import write_card

    _, ranking = _ranking(args)
    if args.candidate is None:
        if ranking.best is None:
            from embedselect.errors import ConfigError

            raise ConfigError("this ranking has no ranked candidate; nothing to write")
        args.candidate = ranking.best.name
    path = write_card(args.card, ranking, args.candidate, image_url=args.image_url)
    print(f"wrote {path} ({args.candidate}: rank {ranking[args.candidate].rank} of {len(ranking.ok)})")
    return 0


def cmd_report(args) -> int:
    from embedselect.publish.report import to_html

    _, ranking = _ranking(args)
    _write(Path(args.output), to_html(ranking))
    print(f"wrote {args.output} (ranking {ranking.ranking_id[:12]})")
    return 0


def register(subparsers) -> None:
    def common(p):
        p.add_argument("--ranking", help="stored ranking id (a unique prefix is enough)")
        p.add_argument("--dataset", help="use the latest ranking of this dataset fingerprint (prefix)")
        p.add_argument("--cache-dir", help="store root (default: $EMBEDSELECT_CACHE_DIR or the user cache dir)")

    p = subparsers.add_parser("badge", help="SVG badges + shields.io endpoint JSON for a stored ranking")
    common(p)
    p.add_argument("--out-dir", default="badges", help="directory for <model>.svg / <model>.json / index.json")
    p.add_argument("--label", help="dataset name shown on the badge (default: the data file name)")
    p.add_argument("--base-url", help="URL the files will be served from (for the Markdown snippets)")
    p.add_argument("--json", action="store_true", help="print the index as JSON")
    p.set_defaults(func=cmd_badge)

    p = subparsers.add_parser("leaderboard", help="leaderboard of a stored ranking with changes since the last one")
    common(p)
    p.add_argument("--format", choices=["markdown", "json", "html"], default="markdown")
    p.add_argument("--output", "-o", help="write to this file instead of stdout")
    p.add_argument("--list", action="store_true", help="list stored rankings instead")
    p.set_defaults(func=cmd_leaderboard)

    p = subparsers.add_parser("card", help="write a ranking result into a local model card (README.md)")
    common(p)
    p.add_argument("card", help="model card file or directory (README.md inside); created when missing")
    p.add_argument("--candidate", help="candidate name in the ranking (default: the top-ranked one)")
    p.add_argument("--image-url", help="URL of the badge SVG (default: the relative file name from `badge`)")
    p.set_defaults(func=cmd_card)

    p = subparsers.add_parser("report", help="self-contained HTML report of a stored ranking")
    common(p)
    p.add_argument("--output", "-o", default="embedselect-report.html")
    p.set_defaults(func=cmd_report)
