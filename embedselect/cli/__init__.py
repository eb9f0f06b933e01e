"""Command line: ``embedselect rank | embed | validate | ask | cache | demo | crawl | hub | metrics | index | search |
neighbours | nightly | badge | card | leaderboard | report``, one module per command group (each has ``register(subparsers)``; add a group to
:data:`GROUPS`).

Exit codes (for pipelines): 0 ok, 1 unexpected error, 2 usage/config, 3 data, 4 candidates, 5 hub, 6 cache,
7 metric, 8 partial (some candidates failed and ``--strict`` was given), 130 interrupted (Ctrl-C), 141 stdout closed
before the output was written (quietly, as a shell tool ended by SIGPIPE: ``embedselect cache ls | head -1``), 143
terminated (SIGTERM, stopped as Ctrl-C stops a command: :class:`~embedselect.errors.Terminated`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import signal
import sys
import traceback
from typing import Any, Sequence

from embedselect.cli.common import annotate, check_run_paths
from embedselect.cli.format import format_table
from embedselect.cli.examples import add_examples
from embedselect.cli.rank import demo_candidates
from embedselect.errors import EXIT_CODES, EmbedselectError, Terminated
from embedselect.models.policy import configured_by
from embedselect.publish.text import terminal, terminal_line

GROUPS = ("rank", "ask", "cache", "hub", "search", "nightly", "publish")
"""Command groups, in the order ``--help`` lists them: modules of this package with ``register(subparsers)``."""

__all__ = ["main", "build_parser", "format_table", "demo_candidates", "GROUPS"]


def build_parser() -> argparse.ArgumentParser:
    from embedselect.version import __version__

    parser = argparse.ArgumentParser(
        prog="embedselect",
        description="Rank embedding models on your own data, label-free.",
    )
    parser.add_argument("--version", action="version", version=f"embedselect {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    for group in GROUPS:
        importlib.import_module(f"embedselect.cli.{group}").register(sub)
    add_examples(sub)
    annotate(parser)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give every command's own ``--help`` its one-line help as description where it has none (``hub``, ``report``,
    ``cache ls``... said nothing about what they do), down the nested commands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, p in action.choices.items():
                if not p.description and helps.get(name):
                    h = str(helps[name])
                    p.description = h[:1].upper() + h[1:] + ("" if h.endswith(".") else ".")
                _describe(p)


class TerminalText:
    """stdout while a person reads it at a terminal: every write loses terminal control sequences and bidirectional
    controls (:func:`embedselect.publish.text.terminal`); model names from the hub and the user's own data items are
    untrusted text. Everything else is the wrapped stream's."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def write(self, s: str) -> int:
        return self._raw.write(terminal(s))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; returns the exit status (see the module docstring). A standard output that is closed
    before the start (``embedselect cache ls >&-``: Python's ``sys.stdout`` is None) is refused at once, exit 2,
    before any work."""
    raw = sys.stdout
    if raw is None or getattr(raw, "closed", False):
        if sys.stderr is not None:
            print("embedselect: error: the standard output is closed (>&-); nothing was done: send it to a file or "
                  "to /dev/null instead (>/dev/null)", file=sys.stderr)
        return EXIT_CODES["usage"]
    if raw.isatty():
        sys.stdout = TerminalText(raw)
    before = _on_sigterm(_terminate)
    try:
        return _main(argv)
    except BrokenPipeError:  # also from argparse's --help / --version, before any command runs
        return closed_stdout()
    finally:
        sys.stdout = raw
        _on_sigterm(before)


def _terminate(signum: int, frame: Any) -> None:
    """The CLI's SIGTERM handler: :class:`~embedselect.errors.Terminated` where the command is."""
    raise Terminated()


def _on_sigterm(handler: Any) -> Any:
    """Install ``handler`` for SIGTERM and return the one it replaces; nothing (None) off the main thread, where
    Python cannot install one (a command run from a worker thread keeps the process's own SIGTERM rule)."""
    if handler is None:
        return None
    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        return None


class _TerminalFormatter(logging.Formatter):
    """Log records on stderr, each message one line without terminal control sequences or bidirectional controls
    (:func:`embedselect.publish.text.terminal_line`, the rule of every stderr line that may quote untrusted text: a
    model id, a card field, an API error, a file name); a traceback a record carries keeps its lines, without
    control sequences."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return terminal_line(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return terminal(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return terminal(super().formatStack(stack_info))


_HUB_RETRY_LINE = re.compile(r"^(HTTP Error \d+ thrown while requesting |'.*' thrown while requesting |"
                             r"Retrying in \S+ \[Retry |Rate limited\. Waiting \S+ before retry \[Retry )", re.S)
"""The lines huggingface_hub's ``http_backoff`` logs (a warning each) for each failed attempt and each retry of one
request."""


class _HubRetries(logging.Filter):
    """Drops huggingface_hub's per-attempt retry lines (:data:`_HUB_RETRY_LINE`); every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("huggingface_hub") and _HUB_RETRY_LINE.match(record.getMessage()))


def _hub_logs_through_ours(handler: logging.Handler, *, quiet: bool) -> None:
    """huggingface_hub gives its logger a stderr handler of its own when it is imported, and its records reach the
    root logger's handler too: every warning it logs (each request it retries, in a night's cron mail) was printed
    twice, once bare. Its own handler is taken off, so each record is one line in embedselect's format, cleaned as
    every stderr line is (:class:`_TerminalFormatter`). The import is the light logging module only.

    The rule for its retry lines (one per failed attempt, one per retry: ~22 for one unreachable model): shown at
    the default verbosity and with ``-v`` (at a terminal they say why the run waits up to half a minute per file);
    with ``--quiet`` ``handler`` drops them (:class:`_HubRetries`): what outlived the retries is said once, as the
    failure the command reports (a night's ``embedselect: warning: failed NAME: …``). The library's other warnings
    are shown at every verbosity."""
    import huggingface_hub.utils.logging  # noqa: F401 - adds the library's handler, once per process

    hub_logger = logging.getLogger("huggingface_hub")
    for h in list(hub_logger.handlers):
        if type(h) is logging.StreamHandler:  # the library's bare one (a program's own handlers are of other kinds)
            hub_logger.removeHandler(h)
    if quiet:
        handler.addFilter(_HubRetries())


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING
    if getattr(args, "verbose", False):
        level = logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    _hub_logs_through_ours(handler, quiet=bool(getattr(args, "quiet", False)))
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        os.environ.setdefault("TQDM_DISABLE", "1")
    saved_before = _runs_saved()
    try:
        check_run_paths(args)  # every output option of every command, before any work
        with configured_by("cli"):  # a refusal names the flags (a night sets its YAML's policy: keys inside)
            code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        return closed_stdout()
    except KeyboardInterrupt as exc:  # Ctrl-C, and SIGTERM (Terminated)
        said = interrupted_message(_runs_saved() - saved_before)
        if isinstance(exc, Terminated):
            print("terminated (SIGTERM)" + said.removeprefix("interrupted"), file=sys.stderr)
            return EXIT_CODES["terminated"]
        print(said, file=sys.stderr)
        return EXIT_CODES["interrupted"]
    except EmbedselectError as exc:
        if getattr(args, "verbose", False):
            traceback.print_exc()
        print(f"embedselect: error: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - a bug or an unforeseen environment: one line, not a traceback
        if getattr(args, "verbose", False):
            traceback.print_exc()
            hint = ""
        else:
            hint = " (run with -v for the traceback)"
        print(f"embedselect: error: unexpected {type(exc).__name__}: {one_line(exc)}{hint}", file=sys.stderr)
        return EXIT_CODES["error"]


def _runs_saved() -> int:
    """:func:`embedselect.store.vectors.runs_saved`, 0 while the store is not imported (nothing stored, and a
    command that never opens a cache does not pay for the import)."""
    vectors = sys.modules.get("embedselect.store.vectors")
    return vectors.runs_saved() if vectors is not None else 0


def interrupted_message(saved: int) -> str:
    """What a command interrupted by Ctrl-C says: that the ``saved`` embedding runs it stored are cached and will be
    reused, only when it stored some (a command that embeds nothing, or was stopped before its first run was stored,
    says only that it was interrupted)."""
    if saved <= 0:
        return "interrupted"
    runs = "the embedding run this command finished is" if saved == 1 else \
        f"the {saved} embedding runs this command finished are"
    return f"interrupted; {runs} cached and will be reused by the next run"


def closed_stdout() -> int:
    """Exit status 141 after the reader of stdout went away (``| head -1``): nothing printed, and stdout pointed at
    the null device so that Python's own flush at exit does not fail again (the recipe of Python's ``signal``
    documentation)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a file descriptor
        pass
    return EXIT_CODES["broken_pipe"]


def one_line(exc: BaseException, limit: int = 2000) -> str:
    """An exception's message on one line (newlines and runs of spaces collapsed, no terminal control sequences), at
    most ``limit`` characters."""
    text = terminal_line(exc) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"

