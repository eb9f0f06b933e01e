"""``embedselect cache ls | rm | gc | path``: inspect or clean the embedding cache."""

from __future__ import annotations

import sys

from embedselect.cli.common import add_log_args
from embedselect.errors import ConfigError
from embedselect.store.model_ids import containing, is_pattern


def cmd_cache(args) -> int:
    from embedselect.store import Store

    store = Store.open(args.cache_dir)
    if args.cache_cmd == "ls":
        df = store.list_runs()
        if args.json:
            print(df.to_json(orient="records", date_format="iso", indent=2))
            return 0
        partial, df = df[df.partial], df[~df.partial].drop(columns=["partial"])
        if df.empty:
            print(f"cache {store.root}: empty" if partial.empty else f"cache {store.root}: no embedding run")
        else:
            from embedselect.cli.format import frame_cells, stdout_is_terminal
            from embedselect.publish.text import MISSING, short_revision

            df = df.assign(run_key=df.run_key.str[:12], fingerprint=df.fingerprint.str[:12],
                           revision=df.revision.map(short_revision))
            print(f"cache {store.root}: {len(df)} embedding run(s), {df.bytes.sum() / 1e6:.1f} MB")
            # an unknown value (the seconds of a run put together from earlier runs) as every table shows one
            shown = frame_cells(df.drop(columns=["created_at"]), stdout_is_terminal())
            print(shown.to_string(index=False, na_rep=MISSING))
        if not partial.empty:  # chunks of embeddings still under way: not runs of the user's, but disk
            print(f"and {int(partial.n.sum())} item(s) of {partial.model_id.nunique()} model(s) kept from interrupted "
                  f"embeddings ({len(partial)} partial run(s), {partial.bytes.sum() / 1e6:.1f} MB): the next run of "
                  "those models resumes from them; `cache rm --model ID` removes them")
        return 0
    if args.cache_cmd == "rm":
        return _rm(store, args)
    if args.cache_cmd == "path":
        print(store.root)
        return 0
    if args.cache_cmd == "gc":
        chunks = store.drop_covered_chunks()  # partial runs whose items a whole run holds (a kill in between)
        files = store.gc()
        locks = store.sweep_locks()
        if not args.quiet:
            print(f"removed {files} orphan file(s) and {locks} unused lock file(s)"
                  + (f", and {chunks} partial run(s) that whole runs hold" if chunks else ""))
        return 0
    raise ConfigError("cache: choose ls, rm, gc or path")


def _rm(store, args) -> int:
    """``cache rm``: list the runs it removes (by model), then remove them and the orphan files. ``--model`` names one
    model by its id (:mod:`embedselect.store.model_ids`); a removal that takes several things by one wide selector
    (:func:`_wide`: ``--all``, a pattern naming several models, a run-key prefix naming several runs) removes them
    only after a yes on a terminal, or with ``--yes``. Only the cache's own rows and vector files are removed."""
    if not (args.all or args.model or args.fingerprint or args.run_key):
        raise ConfigError("cache rm: say what to remove: --model ID, --fingerprint FP, RUN_KEY..., or --all")
    store.require_writable("remove embedding runs")
    runs = store.list_runs()
    if args.all:
        chosen = runs
    else:
        found = set(store.find_runs(model=args.model, fingerprint=args.fingerprint)) \
            if args.model or args.fingerprint else set()
        chosen = runs[runs.run_key.map(lambda k: k in found or any(k.startswith(p) for p in args.run_key))]
    if chosen.empty:
        if not args.quiet:
            print("removed 0 embedding run(s)" + _no_match(args.model, runs.model_id))
        return 0
    models = chosen.assign(whole=~chosen.partial).groupby("model_id", sort=False).agg(
        runs=("whole", "sum"), partial=("partial", "sum"), bytes=("bytes", "sum"))
    wide = None if args.yes else _wide(args, runs, chosen, len(models))
    if not args.quiet or wide is not None:  # what a question (or its refusal) is about is always listed
        print(f"cache {store.root}: {_counted(chosen)} of {len(models)} model(s) to remove:")
        for model_id, row in models.iterrows():
            print(f"  {model_id}: {row.runs} run(s)" + (f" and {row.partial} partial run(s)" if row.partial else "")
                  + f", {row.bytes / 1e6:.1f} MB")
    if wide is not None:
        what, question, narrower = wide
        if not _terminal():
            raise ConfigError(f"cache rm: {what} (listed above); nothing was removed: give --yes to remove them all"
                              + (f", or {narrower}" if narrower else ""))
        if not _confirm(f"{question} [y/N] "):
            print("nothing was removed")
            return 0
    n = store.delete_runs(list(chosen.run_key[~chosen.partial]))
    chunks = store.delete_runs(list(chosen.run_key[chosen.partial]))
    removed = store.gc()
    if not args.quiet:
        said = [f"{n} embedding run(s)"] + [f"{chunks} partial run(s)"] * bool(chunks) \
            + [f"{removed} orphan file(s)"] * bool(removed)
        print("removed " + (", ".join(said[:-1]) + " and " if len(said) > 1 else "") + said[-1])
    return 0


def _counted(runs) -> str:
    """How many runs the frame ``runs`` (rows of :meth:`~embedselect.store.Store.list_runs`) holds, its chunks
    (column ``partial``, the store's one rule) said apart as ``cache ls`` says them: "3 embedding run(s)", "3
    embedding run(s) and 2 partial run(s) kept from interrupted embeddings"."""
    chunks = int(runs.partial.sum())
    return f"{len(runs) - chunks} embedding run(s)" + (
        f" and {chunks} partial run(s) kept from interrupted embeddings" if chunks else "")


def _wide(args, runs, chosen, n_models: int) -> tuple[str, str, str] | None:
    """The one rule for when ``cache rm`` asks first: when one selector takes several things at once: ``--all``, a
    ``--model`` pattern naming several models, or a run-key prefix naming several runs. A run key (or a prefix) that
    names one run, an exact model id and ``--fingerprint`` do not ask. Returns (what was matched, the question, a
    narrower way to say it, or ""), or None when it need not ask."""
    if args.all:
        return (f"--all takes every run of the cache ({_counted(chosen)})",
                f"remove all {_counted(chosen)} of the cache?", "")
    if args.model and n_models > 1 and is_pattern(args.model, runs.model_id):
        return (f"--model {args.model!r} matches {n_models} models", f"remove the runs of these {n_models} models?",
                "one model's exact id (as cache ls shows it)")
    several = {p: int(runs.run_key.str.startswith(p).sum()) for p in args.run_key}
    several = {p: n for p, n in several.items() if n > 1}
    if several:
        said = ", ".join(f"{p!r} matches {n} runs" for p, n in several.items())
        return (f"the run key prefix {said}", f"remove these {_counted(chosen)}?",
                "a longer prefix that names one run (cache ls --json shows the whole keys)")
    return None


def _no_match(model: str | None, model_ids) -> str:
    """Why ``--model`` removed nothing, when cached ids contain it (it names a model only by its exact id)."""
    close = containing(model, model_ids) if model else []
    if not close:
        return ""
    shown = ", ".join(close[:5]) + (f" and {len(close) - 5} more" if len(close) > 5 else "")
    return (f": no cached model has the id {model!r} (--model names one model exactly); ids containing it: {shown}; "
            f"give one of them, or a pattern: --model '*{model}*'")


def _terminal() -> bool:
    """Whether standard input is a terminal (someone can answer a question)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _confirm(question: str) -> bool:
    """A yes (``y`` or ``yes``) to ``question``, asked on standard error and read from standard input (a terminal:
    :func:`_terminal`); False at the end of input or for any other answer."""
    print(question, end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def register(sub) -> None:
    """Add ``cache`` and its commands (``ls``, ``rm``, ``gc``, ``path``) to the main parser's subparsers. Each command
    is a parser of its own, so ``cache rm --cache-dir DIR KEY`` reads KEY (with one parser for all four, a run key
    after an option was "unrecognized arguments") and ``cache rm --help`` shows rm's options only."""
    import argparse

    p = sub.add_parser("cache", help="inspect or clean the embedding cache")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache-dir", help="the cache (default: $EMBEDSELECT_CACHE_DIR, else the user cache folder)")
    add_log_args(common, quiet="print nothing but errors and what was asked for (ls's table, path's folder; rm lists "
                               "what it asks about)")
    commands = p.add_subparsers(dest="cache_cmd", required=True, metavar="{ls,rm,gc,path}")
    ls = commands.add_parser("ls", parents=[common], help="list the cached embedding runs and their size")
    ls.add_argument("--json", action="store_true", help="one JSON record per run")
    rm = commands.add_parser("rm", parents=[common], help="remove embedding runs (and then orphan vector files)")
    rm.add_argument("run_key", nargs="*", help="run keys (or prefixes) to remove; a prefix naming several runs "
                    "lists them and removes them after a yes, or with --yes")
    rm.add_argument("--model", help="the runs of the model with this id, as cache ls shows it ('baseline:' and "
                    "'local:' may be left out); a glob pattern ('*MiniLM*') may name several models, which are "
                    "listed and removed after a yes, or with --yes")
    rm.add_argument("--fingerprint", help="runs of this data fingerprint (prefix)")
    rm.add_argument("--all", action="store_true", help="everything (listed, then removed after a yes, or with --yes)")
    rm.add_argument("--yes", "-y", action="store_true",
                    help="remove without asking what --all, a --model pattern naming several models or a run key "
                    "prefix naming several runs takes (asked on a terminal; without one, these need --yes)")
    commands.add_parser("gc", parents=[common], help="remove vector files no run points at, and lock files no "
                                                      "process holds")
    commands.add_parser("path", parents=[common], help="print where the cache is")
    p.set_defaults(func=cmd_cache)
