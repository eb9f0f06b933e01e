"""``embedselect ask``: write the triplet questions that decide between the leaders, and (``--interactive``) ask them
one at a time in a terminal, saving each answer at once."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from typing import Any, Iterator, TextIO

from embedselect._util.terminal import columns
from embedselect.cli.common import (add_data_args, add_model_args, check_output_path, output_option, rank_config,
                                    runtime, stderr_line)
from embedselect.errors import EXIT_CODES, Terminated

MAX_LINES = 8
"""At most this many wrapped lines of one text are shown (the rest is cut, marked with …)."""
KEYS = "a b s u q"


def cmd_ask(args) -> int:
    from embedselect.pipeline.asking import DEFAULT_QUESTIONS, prepare_ask

    if args.interactive and args.out is None:
        from embedselect.errors import ConfigError

        raise ConfigError("--interactive needs --out FILE: the answers are saved there as they are given")
    session = prepare_ask(args.data, args.models, n=args.n or DEFAULT_QUESTIONS, out=args.out,
                          config=rank_config(args), runtime=runtime(args),
                          check_out=lambda p: check_output_path(p, option="--out", cache_dir=args.cache_dir,
                                                                overwrite=None, updatable=_is_questions_file(p, args)))
    from embedselect.cli.format import cell, failure_lines, prose, stdout_is_terminal, wrap_line
    from embedselect.cli.rank import exit_status

    # a candidate that failed in the ranking is in no question: said as rank says it (its '!' line; on stderr under
    # --json; --strict's line and exit 8)
    failed = {c.name: f"{c.error_type}: {c.error}" for c in session.ranking.failed}
    if args.interactive:
        on_tty = stdout_is_terminal()
        for line in failure_lines(session.ranking):
            print("\n".join(wrap_line(prose(line, on_tty), columns(sys.stdout)) if on_tty else [prose(line, on_tty)]))
        status = interactive(session, sys.stdin, sys.stdout, viewer=args.open)
        return status or exit_status(failed, strict=args.strict, hits=[])
    from embedselect.validation.questions import questions_frame

    if args.json:
        print(json.dumps(questions_frame(session.questions).to_dict("records"), indent=2, ensure_ascii=False))
        for c in [] if args.strict else session.ranking.failed:
            stderr_line(f"note: {c.failure_note}")
        return exit_status(failed, strict=args.strict, hits=[])
    answered = sum(1 for q in session.questions if q.answer)
    where = f" in {session.out}" if session.out else ""
    tty = stdout_is_terminal()
    print(cell(f"{len(session.questions)} questions{where} ({session.n_new} new, {answered} answered) deciding "
               f"between {', '.join(session.contenders)}, the contenders of {session.ranking_note}.", tty))
    for line in failure_lines(session.ranking):
        print(prose(line, tty))
    if session.out:
        print(f"answer them with --interactive, or fill the answer column with a, b or skip; then: embedselect rank "
              f"... --answers {session.out}")
    return exit_status(failed, strict=args.strict, hits=[])


# --- the interactive loop ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _keys(stream: TextIO) -> Iterator[Iterator[str]]:
    """Single key presses from ``stream``: on a terminal in cbreak mode (no Enter needed; Ctrl-C still interrupts),
    else one character at a time from its lines (white space ignored). The iterator ends at end of input (a closed
    terminal)."""
    fd = None
    with contextlib.suppress(AttributeError, ValueError, OSError):
        fd = stream.fileno() if stream.isatty() else None
    if fd is None:
        def chars() -> Iterator[str]:
            while True:
                line = stream.readline()
                if not line:
                    return
                yield from (c for c in line if not c.isspace())
        yield chars()
        return
    import termios
    import tty

    saved = termios.tcgetattr(fd)

    def presses() -> Iterator[str]:
        while True:
            try:
                b = os.read(fd, 1)
            except OSError:  # the terminal went away
                return
            if not b:
                return
            yield b.decode("utf-8", "replace")

    try:
        tty.setcbreak(fd)
        yield presses()
    finally:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _wrap(text: str, width: int, indent: str = "    ") -> str:
    lines = textwrap.wrap(" ".join(str(text).split()), width=max(20, width - len(indent))) or [""]
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
        lines[-1] = lines[-1][: max(0, width - len(indent) - 1)] + "…"
    return "\n".join(indent + line for line in lines)


def _viewer() -> tuple[list[str] | None, str]:
    """The command that opens a file in the desktop's viewer, or None with why there is none (the note ``--open``
    prints). macOS: ``open``. Elsewhere ``xdg-open`` or ``gio open``, and only with a desktop to show it on
    (``DISPLAY`` or ``WAYLAND_DISPLAY`` set): without one xdg-open finds no method, exits 3 and shows nothing, and
    ``open`` may be another program (Debian's ``openvt``)."""
    if sys.platform == "darwin":
        return (["open"], "") if shutil.which("open") else (None, "no image viewer found (open)")
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None, "no desktop to show images on (DISPLAY and WAYLAND_DISPLAY are not set)"
    for cmd in (["xdg-open"], ["gio", "open"]):
        if shutil.which(cmd[0]):
            return cmd, ""
    return None, "no image viewer found (xdg-open / gio)"


def _failed_opener(opener: list[str], started: list[subprocess.Popen]) -> str | None:
    """Why the viewer ``opener`` did not show the last question's images (its exit status), or None while it runs
    or when it succeeded; ``started``: the processes it was started as."""
    code = next((c for c in (p.poll() for p in started) if c), None)
    return None if code is None else f"{' '.join(opener)} could not open the images (exit {code})"


QUESTION = "which of a and b is closer to the anchor?"
KEY_HELP = "a / b   s skip   u undo   q quit"


def _show(q: Any, position: int, total: int, out: TextIO, width: int, image: bool) -> None:
    """One question: a rule naming it, filled to the terminal's width less one column, the three items (texts
    wrapped by :func:`_wrap`), and the question with the keys, on two lines when one would not fit ``width``."""
    head = f"── question {position} of {total} (id {q.question_id}) "
    print("\n" + head + "─" * max(0, width - 1 - len(head)), file=out)
    for label, item_id, text in (("anchor", q.anchor_id, q.anchor), ("a", q.a_id, q.a), ("b", q.b_id, q.b)):
        print(f"{label} [{item_id}]:", file=out)
        print(f"    {text}" if image else _wrap(text, width), file=out)
    ask = f"{QUESTION}  {KEY_HELP}"
    print(ask if len(ask) <= width else f"{QUESTION}\n  {KEY_HELP}", file=out, flush=True)


def _tally(session: Any) -> Any:
    from embedselect.validation.answers import agrees, verdict

    answered = session.answered()
    return verdict({m: agrees(v, answered) for m, v in session.vectors.items()}, session.contenders)


def interactive(session: Any, stdin: TextIO, out: TextIO, *, viewer: bool = False) -> int:
    """Ask the unanswered questions of ``session`` one at a time; each answer (a, b, s = skip; u undoes the last
    one) is written to the questions file at once (atomically), so that q, Ctrl-C or a closed terminal lose nothing
    and the next run resumes. Stops by itself once the answers separate the contenders
    (:func:`embedselect.validation.duels.verdict`). Returns the exit status."""
    from embedselect.validation.questions import with_answer

    from embedselect.cli.format import cell, stdout_is_terminal, wrap_line

    width, tty = columns(out), stdout_is_terminal(out)

    def say(line: str) -> None:
        """A line of words: one line (:func:`~embedselect.cli.format.cell`), wrapped at words to the terminal's
        width on a terminal (:func:`~embedselect.cli.format.wrap_line`, as under rank's table); whole to a pipe."""
        text = cell(line, tty)
        print("\n".join(wrap_line(text, width) if tty else [text]), file=out, flush=True)

    image = session.ref.modality == "image"
    opener, why = _viewer() if (viewer and image) else (None, "")
    if viewer and image and opener is None:
        say(f"note: {why}: --open shows nothing; open the paths shown yourself")
    started: list[subprocess.Popen] = []
    total = len(session.questions)
    say(f"deciding between {', '.join(session.contenders)} (the contenders of {session.ranking_note}); answers are "
        f"saved in {session.out} as you go")
    undo: list[int] = []

    def tally() -> Any:
        v = _tally(session)
        n_skip = sum(1 for q in session.questions if q.answer == "skip")
        say(f"tally: {v.n_answered} answered, {n_skip} skipped; {v.summary()}")
        return v

    if tally().decided:
        say(f"the answers already separate the contenders: run embedselect rank ... --answers {session.out}")
        return 0
    try:
        with _keys(stdin) as keys:
            while True:
                todo = [q for q in session.questions if not q.answer]
                if not todo:
                    say(f"all {total} questions answered, and they do not separate the contenders yet: run again "
                        f"with -n {2 * total} for more questions")
                    return 0
                q = todo[0]
                _show(q, total - len(todo) + 1, total, out, width, image)
                if opener is not None:
                    started = []
                    for p in (q.anchor, q.a, q.b):
                        with contextlib.suppress(OSError):
                            started.append(subprocess.Popen(
                                [*opener, p], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, start_new_session=True))
                key = _next_key(keys, out)
                failed = _failed_opener(opener, started) if opener is not None else None
                if failed is not None:  # said once; the next questions are not sent to it
                    say(f"note: {failed}: open the paths shown yourself")
                    opener = None
                if key in (None, "q"):
                    say(f"stopped: {_progress(session)}")
                    return 0
                if key == "u":
                    last = undo.pop() if undo else next(
                        (x.question_id for x in reversed(session.questions) if x.answer), None)
                    if last is None:
                        print("nothing to undo", file=out)
                        continue
                    session.questions = with_answer(session.questions, last, "")
                    session.save()
                    say(f"undone: question {last} is unanswered again")
                    tally()
                    continue
                session.questions = with_answer(session.questions, q.question_id, "skip" if key == "s" else key)
                session.save()
                undo.append(q.question_id)
                if tally().decided:
                    say(f"the answers separate the contenders. Next: embedselect rank ... --answers {session.out}")
                    return 0
    except KeyboardInterrupt as exc:  # Ctrl-C, and SIGTERM (Terminated)
        print(file=out)
        say(f"interrupted: {_progress(session)}")
        return EXIT_CODES["terminated" if isinstance(exc, Terminated) else "interrupted"]


def _progress(session: Any) -> str:
    """Where a stopped session is, counted as the tally counts: "1 answered, 1 skipped, 38 to go of 40; saved in
    q.csv; run the same command to go on" (a skipped question is no answer, and the next run does not ask it again)."""
    n_skip = sum(1 for q in session.questions if q.answer == "skip")
    n_answered = sum(1 for q in session.questions if q.answer in ("a", "b"))
    todo = len(session.questions) - n_skip - n_answered
    return (f"{n_answered} answered, {n_skip} skipped, {todo} to go of {len(session.questions)}; saved in "
            f"{session.out}; run the same command to go on")


def _next_key(keys: Iterator[str], out: TextIO) -> str | None:
    """The next of a / b / s / u / q pressed (others are named and ignored); None at end of input."""
    for k in keys:
        k = k.lower()
        if k in ("a", "b", "s", "u", "q"):
            return k
        if k == "\x04":  # Ctrl-D
            return None
        print(f"press one of {KEYS}", file=out, flush=True)
    return None


def _is_questions_file(path: Any, args: Any) -> bool:
    """``ask --out FILE``: an existing FILE is updated in place (its answers kept) when it is a questions file
    (:func:`embedselect.validation.questions.is_questions_file`, the rule ``ask`` replaces a file by); any other file
    is left to the output rule."""
    from pathlib import Path

    from embedselect.validation.questions import is_questions_file

    return is_questions_file(Path(os.fspath(path)))


def register(sub) -> None:
    """Add ``ask`` to the main parser's subparsers."""
    p = sub.add_parser("ask", help="the few triplet questions that decide between the leaders; answer them here")
    add_data_args(p, labels=False)
    add_model_args(p)
    p.add_argument("-n", type=int, default=None, help="how many questions the file should hold (default 40); "
                   "with an existing file, new questions are added only when -n grows")
    output_option(p.add_argument("--out", "-o", help="the questions CSV (question_id, anchor_id, a_id, b_id, anchor, "
                                 "a, b, answer); an existing one keeps its answers"), updatable=_is_questions_file)
    p.add_argument("--interactive", "-i", action="store_true",
                   help="ask the questions here, one at a time (keys a / b / s skip / u undo / q quit); each answer "
                   "is saved at once and the next run resumes")
    p.add_argument("--open", action="store_true", help="with --interactive: open images in the desktop's viewer")
    p.add_argument("--json", action="store_true", help="print the questions as JSON")
    p.add_argument("--strict", action="store_true", help="exit 8 if any candidate failed (its questions are written)")
    p.set_defaults(func=cmd_ask, labels=None)
