"""``embedselect nightly``: one scheduled night (see docs/nightly.md).

Exit codes: 0 the night ranked something (some models may have failed or been left for the next night: see
the summary), 9 another night holds the lock, 10 the night ranked nothing (outputs kept), 12 degraded (the night
ranked and published, but its crawl failed: new models may be missing), 2/3 bad config or data.
"""

from __future__ import annotations

import json

from embedselect.cli.common import add_log_args, input_option, stderr_line
from embedselect.errors import EXIT_CODES


def register(subparsers) -> None:
    """Add ``nightly`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "nightly",
        help="crawl trending hub models, rank the new ones with the leaders, publish the leaderboard",
        description="One night of the scheduled ranking: crawl (HF_ENDPOINT, HF_TOKEN honoured) -> plan -> embed "
        "what the cache lacks -> rank -> publish into the output folder (atomically) and record the history.",
    )
    input_option(p.add_argument("--config", required=True, help="nightly YAML file (see docs/nightly.md)"),
                 name="the configuration")
    p.add_argument("--dry-run", action="store_true", help="crawl and print the plan; embed, rank and write nothing")
    p.add_argument("--json", action="store_true", help="print the run summary (run.json) on stdout")
    add_log_args(p, quiet="print no summary (run.json is written all the same); a failed model is still one line on stderr")
    p.set_defaults(func=cmd_nightly)


def _lead(s: dict) -> str:
    """``leader NAME``, or, for a night whose ranking named no clear winner, its leaders as such."""
    if s.get("decided") is False:
        from embedselect.ranking.combine import no_clear_winner

        return no_clear_winner(s.get("leaders") or [s["leader"]])
    return f"leader {s['leader']}"


def _human(s: dict) -> str:
    if s["status"] == "dry-run":
        plan = s["plan"]
        lines = [f"dry run: {s['crawl']['models']} model(s) crawled, {s['candidates']['considered']} candidate(s) planned"]
        for c in plan["candidates"]:
            lines.append(f"  {c['why']:8s} {c['name']}  {'reuse' if c['cached'] else 'embed'}")
        for c in plan["deferred"]:
            lines.append(f"  deferred {c['name']}  (max_new)")
        wc = s["would_compute"]
        lines.append(f"would embed {wc['forward_passes']} model(s); at most {wc['sufficiency_pairs_at_most']} "
                     "sufficiency pair(s), cached ones reused")
        return "\n".join(lines)
    lines = [
        f"night {s['run_id']}: {s['status']}; {_lead(s)}; ranked {s['ranked']}",
        f"  embedded {s['embedded']['count']}, reused {s['reused']['count']}, "
        f"failed {len(s['failed'])}, left {len(s['left'])}",
        f"  sufficiency pairs computed {s['pairs']['computed']}, reused {s['pairs']['reused']}",
        f"  wall {s['wall_seconds']:.1f}s: " + ", ".join(f"{k} {v:.1f}s" for k, v in s["stages"].items()),
        f"  outputs: {s['output']}",
    ]
    lines += [f"  failed {f['name']}: {f['error_type']}: {f['reason']}" for f in s["failed"]]
    lines += [f"  left for the next night: {x['name']} ({x['reason']})" for x in s["left"]]
    lines += [f"  degraded: {why}" for why in s.get("degraded") or []]
    lines += [f"  note: {s['not_stored']}"] if s.get("not_stored") else []
    return "\n".join(lines)


def cmd_nightly(args) -> int:
    """Handler of ``embedselect nightly``."""
    from embedselect.errors import NightlyEmptyError, NightlyLockedError
    from embedselect.nightly import load_config, run_night

    try:
        summary = run_night(load_config(args.config), dry_run=args.dry_run, progress=not args.quiet)
    except (NightlyEmptyError, NightlyLockedError) as exc:
        if args.json:  # the machine-readable summary also for the nights that exit non-zero
            status = "locked" if isinstance(exc, NightlyLockedError) else "empty"
            print(json.dumps(getattr(exc, "summary", None) or {"status": status, "error": str(exc)}, indent=2,
                             default=str))
        raise
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    elif not args.quiet:
        print(_human(summary))
    else:  # no summary: a failed model is still said once, on stderr (a cron log keeps it)
        for f in summary.get("failed") or []:
            stderr_line(f"embedselect: warning: failed {f['name']}: {f['error_type']}: {f['reason']}")
        if summary.get("not_stored"):
            stderr_line(f"embedselect: warning: {summary['not_stored']}")
    if summary.get("status") == "degraded":
        for why in summary.get("degraded") or []:
            stderr_line(f"embedselect: nightly degraded: {why}")
        return EXIT_CODES["degraded"]
    return 0
