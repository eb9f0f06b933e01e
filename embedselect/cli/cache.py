"""``embedselect cache ls | rm | gc | path``: inspect or clean the embedding cache."""

from __future__ import annotations

from embedselect.errors import ConfigError


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
            from embedselect.publish.text import short_revision

            df = df.assign(run_key=df.run_key.str[:12], fingerprint=df.fingerprint.str[:12],
                           revision=df.revision.map(short_revision))
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


def register(sub) -> None:
    """Add ``cache`` and its commands (``ls``, ``rm``, ``gc``, ``path``) to the main parser's subparsers. Each command
    is a parser of its own, so ``cache rm --cache-dir DIR KEY`` reads KEY (with one parser for all four, a run key
    after an option was "unrecognized arguments") and ``cache rm --help`` shows rm's options only."""
    import argparse

    p = sub.add_parser("cache", help="inspect or clean the embedding cache")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache-dir", help="the cache (default: $EMBEDSELECT_CACHE_DIR, else the user cache folder)")
    commands = p.add_subparsers(dest="cache_cmd", required=True, metavar="{ls,rm,gc,path}")
    ls = commands.add_parser("ls", parents=[common], help="list the cached embedding runs and their size")
    ls.add_argument("--json", action="store_true", help="one JSON record per run")
    rm = commands.add_parser("rm", parents=[common], help="remove embedding runs (and then orphan vector files)")
    rm.add_argument("run_key", nargs="*", help="run keys (or prefixes) to remove")
    rm.add_argument("--model", help="runs whose model id contains this")
    rm.add_argument("--fingerprint", help="runs of this data fingerprint (prefix)")
    rm.add_argument("--all", action="store_true", help="everything")
    commands.add_parser("gc", parents=[common], help="remove vector files no run points at")
    commands.add_parser("path", parents=[common], help="print where the cache is")
    p.set_defaults(func=cmd_cache)
