"""Search commands of the CLI: ``embedselect index``, ``embedselect search`` and ``embedselect neighbours``.

:func:`register` adds them to the main parser's subparsers (see :func:`embedselect.cli.build_parser`); each
sets ``func`` to a handler ``(args) -> exit code``. Errors are typed and mapped to exit codes by
:func:`embedselect.cli.main` (an index that does not match its model or data: 6, like other store errors).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from embedselect.cli.common import (
    JoinModels,
    add_data_args,
    add_load_args,
    add_overwrite_arg,
    input_option,
    load_policy,
    output_option,
    rank_config,
    runtime,
    write_atomic,
)
from embedselect.errors import ConfigError
from embedselect.publish.text import short_revision


def register(subparsers) -> None:
    """Add ``index``, ``search`` and ``neighbours`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "index",
        help="write a FAISS index of your data under one model (e.g. the winner of `rank`)",
        description="Build a FAISS index of the reference data under one candidate, from its cached vectors "
        "(embedding only when not cached), with the row ids and a manifest (model id, revision, data "
        "fingerprint, metric, dimension) so that `embedselect search` can check it later.",
    )
    add_data_args(p, labels=False, seed=False)
    input_option(p.add_argument("--model", "-m", required=True,
                                help="candidate spec (hub id, local dir, baseline), or 'best': the top candidate of "
                                     "the newest ranking of the same data in the cache"),
                 name="a candidate's input (a model folder or vectors file)", models=True)
    output_option(p.add_argument("--out", "-o", required=True, type=Path, help="index folder to write"), folder=True)
    p.add_argument("--seed", type=int, default=0,
                   help="root seed (default 0; for 'best' the ranking's, found also when it sampled --max-items "
                        "items with another seed)")
    p.add_argument("--metric", choices=["cosine", "ip", "l2"], default="cosine",
                   help="similarity of the index: cosine (default), inner product or L2 distance")
    p.add_argument("--approximate", action="store_true", help="HNSW index instead of exact (for very large data)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing index in --out")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    add_load_args(p)
    p.set_defaults(func=cmd_index)

    p = subparsers.add_parser(
        "search",
        help="embed a query with an index's model and print the nearest items",
        description="Search an index written by `embedselect index`: the query (text, or an image path for an "
        "image index) is embedded with the same model at the same revision.",
    )
    input_option(p.add_argument("index_dir", type=Path, help="folder written by `embedselect index`"), name="the index")
    input_option(p.add_argument("query", nargs="+", help="query text(s) or image path(s)"), name="a query image")
    p.add_argument("-k", type=int, default=10, help="results per query (default 10)")
    p.add_argument("--model", help="refuse the index unless it was built with this model")
    input_option(p.add_argument("--data", help="refuse the index unless it was built from this data file / folder"),
                 name="the data")
    p.add_argument("--column", "-c", help="text column of --data")
    p.add_argument("--id-column", metavar="NAME", help="id column of --data, as given to `index` (the index's hits "
                                                      "carry the ids it was built with)")
    p.add_argument("--max-items", type=int, help="as given to `index` for --data")
    p.add_argument("--seed", type=int, default=None, help="as given to `index` for --data")
    p.add_argument("--json", action="store_true", help="print the hits as JSON on stdout")
    add_load_args(p)
    p.set_defaults(func=cmd_search)

    p = subparsers.add_parser(
        "neighbours",
        aliases=["neighbors"],
        help="show the nearest neighbours of sample items under each candidate, side by side",
        description="For a few seeded sample items, their nearest other items under each candidate (cosine, "
        "exact FAISS search, vectors from the cache), the candidates' mutual k-NN agreement and its communities, "
        "and optionally near-duplicates in the data (and a copy of the data without them).",
    )
    add_data_args(p, labels=False, seed=False)
    input_option(p.add_argument("--models", "-m", required=True, action=JoinModels,
                                help="comma-separated candidates, as for `rank` (the option may be repeated)"),
                 name="a candidate's input (a model folder or vectors file)", models=True)
    p.add_argument("--sample", type=int, default=5, help="number of seeded sample items (default 5)")
    p.add_argument("--rows", metavar="IDS",
                   help="comma-separated items to show instead of a sample, by id: the 1-based row number in the "
                        "data file (as 'item N' shows it), or the --id-column value")
    p.add_argument("-k", type=int, default=5, help="neighbours shown per item (default 5)")
    p.add_argument("--agreement-k", type=int, default=10, help="k of the mutual k-NN agreement (default 10)")
    p.add_argument("--near-duplicates", type=float, metavar="COSINE",
                   help="count near-duplicate items (cosine similarity >= COSINE, e.g. 0.95) under each candidate")
    output_option(p.add_argument("--write-deduped", type=Path, metavar="FILE.csv",
                                 help="with --near-duplicates, text data: write the items minus near-duplicates under "
                                      "the first candidate (columns id, text) to rank them again"))
    p.add_argument("--seed", type=int, default=0, help="seed of the sample and the sub-sample (default 0)")
    p.add_argument("--json", action="store_true", help="print the view as JSON on stdout")
    output_option(p.add_argument("--html", type=Path, help="also write the view as an HTML section to this file"))
    add_overwrite_arg(p)
    add_load_args(p)
    p.set_defaults(func=cmd_neighbours)


def _clip(text: str, room: int | None) -> str:
    """``text`` (one line already) in at most ``room`` characters, an ellipsis as its last when cut; whole with
    None."""
    return text if room is None or len(text) <= room else text[: max(room - 1, 0)] + "…"


def hit_lines(query: str, hits: list, width: int | None, tty: bool, *, cut: bool = True) -> list[str]:
    """What ``embedselect search`` prints for one query: its line, a header row and a row a hit (columns two spaces
    or more apart, the text last). Each text and id is one line through :func:`embedselect.cli.format.cell` (without
    control characters on a terminal); on a terminal (``width``, its columns) each hit's text is cut to the width
    less one column and the query line wraps at words; to a pipe (None) every text is whole. The id column is as
    wide as the widest id shown (16 at most, an id cut in the middle beyond). ``cut`` False (an image index, whose
    items are paths to open) keeps every item whole on a terminal too."""
    from embedselect._util.names import cut_middle
    from embedselect.cli.format import cell, wrap_line

    ids = [cut_middle(cell(h.id, tty), 16) for h in hits]
    id_width = max([2, *(len(i) for i in ids)])
    head = f"  {'rank':<4}  {'score':<7}  {'id':<{id_width}}  "
    line = f"query: {cell(query, tty)}"
    lines = wrap_line(line, width) if width is not None else [line]
    lines.append(head + "text")
    room = None if width is None or not cut else max(width - 1 - len(head), 10)
    lines += [f"  {h.rank:<4}  {h.score:<7.4f}  {i:<{id_width}}  {_clip(cell(h.item, tty), room)}"
              for h, i in zip(hits, ids)]
    return lines


def cmd_index(args) -> int:
    from embedselect.search import build_index

    idx = build_index(args.data, args.model, out=args.out, config=rank_config(args), runtime=runtime(args),
                      metric=args.metric, exact=False if args.approximate else None, overwrite=args.overwrite)
    m = idx.manifest
    if args.json:
        print(json.dumps(m.to_dict(), indent=2, default=str))
    else:
        kind = "exact" if m.exact else "approximate"
        print(f"index {idx.directory}: {m.n} items x {m.dim} dims, {m.name} ({m.model_id}@{short_revision(m.revision)}), "
              f"{m.metric}, {kind} ({m.index_type}, built on {m.index_device}); data {m.fingerprint[:12]}")
    return 0


def cmd_search(args) -> int:
    from embedselect.search import SearchIndex

    if args.k < 1:
        raise ConfigError("-k must be at least 1")
    idx = SearchIndex.load(args.index_dir, model=args.model, data=args.data, column=args.column,
                           max_items=args.max_items, seed=args.seed, id_column=args.id_column)
    results = idx.search(args.query, args.k, device=args.device, policy=load_policy(args))
    if args.json:
        payload = {
            "index": str(idx.directory),
            "model": idx.manifest.name,
            "metric": idx.manifest.metric,
            "results": [{"query": q, "hits": [h.__dict__ for h in hits]} for q, hits in zip(args.query, results)],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    from embedselect.cli.format import stdout_is_terminal, table_width

    for q, hits in zip(args.query, results):  # per query a header row, then one row a hit, columns apart by 2 spaces
        print("\n".join(hit_lines(q, hits, table_width(), stdout_is_terminal(),
                                   cut=idx.manifest.modality == "text")))
    if not sys.stdout.isatty():
        sys.stdout.flush()
    return 0


def cmd_neighbours(args) -> int:
    from embedselect.search import neighbours_view

    if args.write_deduped is not None and args.near_duplicates is None:
        raise ConfigError("--write-deduped needs --near-duplicates COSINE (the similarity above which items are "
                          "near-duplicates)")
    ids = [r.strip() for r in args.rows.split(",") if r.strip()] if args.rows else None
    view = neighbours_view(
        args.data, args.models, sample=args.sample, ids=ids, k=args.k, agreement_k=args.agreement_k,
        near_duplicate_threshold=args.near_duplicates, config=rank_config(args), runtime=runtime(args),
    )
    if args.write_deduped is not None:
        import pandas as pd

        if view.modality != "text":
            raise ConfigError("--write-deduped writes text data; for images use the JSON output's groups")
        keep = view.near_duplicate_keep
        frame = pd.DataFrame({"id": [i for i, k in zip(view.all_ids, keep) if k],
                              "text": [t for t, k in zip(view.all_items, keep) if k]})
        write_atomic(args.write_deduped, frame.to_csv(index=False), kind="csv", what="--write-deduped")
        print(f"wrote {len(frame)} of {len(keep)} items (near-duplicates under {view.names[0]} dropped) to "
              f"{args.write_deduped}", file=sys.stderr)
    if args.html is not None:
        write_atomic(args.html, "<!doctype html><meta charset=utf-8><title>embedselect neighbours</title>\n"
                     + view.to_html() + "\n", kind="html", what="--html")
    print(json.dumps(view.to_dict(), indent=2, ensure_ascii=False) if args.json else view.to_text(), end="")
    if args.json:
        print()
    return 0
