"""One progress display for a whole run: candidates × stages (resolve, load, embed, each metric, validation).

Drawn with tqdm (the style sentence-transformers and huggingface_hub already use) on stderr, and only when asked
for *and* stderr is a terminal: pipelines, CI logs, ``--quiet`` and the Python API (unless ``progress=True``) get
nothing. While it is shown it is the only bar: the pipeline asks no backend for its own per-batch bar
(sentence-transformers' "Batches", the transformers backend's per-item bar were drawn under it, fighting for the
screen; the run's line shows the embed stage and its items/s), and the libraries draw none of theirs
(transformers' "Loading weights" stayed on the terminal after every model; see
:func:`embedselect.models.backends.device.library_output`).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, TextIO

from embedselect._util.names import cut_middle
from embedselect._util.terminal import columns, reported_size


def progress_enabled(progress: bool, stream: TextIO | None = None) -> bool:
    """True when a progress bar should be drawn: ``progress`` was asked for *and* ``stream`` (default
    stderr) is an interactive terminal. Pipelines, CI logs and ``--quiet`` get no bar. The run's bar
    (:class:`RunProgress`) follows it, and so do the backends' per-batch bars of an ``embed(progress=True)`` called
    outside a run."""
    if not progress:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def bar_size(stream) -> dict[str, Any]:
    """tqdm's size arguments for a bar on ``stream``, so that a redraw never runs past the terminal's edge (a line
    longer than the terminal wraps, and each redraw leaves a trail of lines): follow the terminal's width when it
    reports a size; a terminal that reports 0×0 (some CI runners, ``script``, an unsized pty) gets
    :func:`bar_columns`, fixed, and 20 rows, since tqdm draws nothing at all there (it takes 0 rows as "no room for
    any bar")."""
    if reported_size(stream) is not None:
        return {"dynamic_ncols": True}
    return {"dynamic_ncols": False, "ncols": bar_columns(stream), "nrows": 20}


def bar_columns(stream) -> int:
    """The columns a bar on ``stream`` may take now: the terminal's width less one (tqdm keeps the last column free,
    so that a full line does not wrap); on a terminal that reports no size, ``$COLUMNS`` (80 when unset) less one."""
    return max(columns(stream) - 1, 20)


class RunProgress:
    """The run's progress bar: one step per (candidate, stage), per metric and for validation.

    Args:
        total: number of steps the run will take.
        enabled: draw it (it is drawn only if also stderr is a terminal).
        desc: the label before the bar.
    """

    def __init__(self, total: int, *, enabled: bool, desc: str = "embedselect") -> None:
        self.enabled = progress_enabled(enabled)
        self._bar = None
        self._label, self._note = desc, ""
        self._redirect = contextlib.ExitStack()
        if self.enabled:
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            # log lines (warnings) are printed above the bar instead of through it
            self._redirect.enter_context(logging_redirect_tqdm())

            self._bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, position=0, leave=False,
                             **bar_size(sys.stderr), bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                             "[{elapsed}<{remaining}]{postfix}")

    def set_total(self, total: int) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    @contextlib.contextmanager
    def stage(self, label: str, *, steps: int = 1) -> Iterator[None]:
        """Show ``label`` (e.g. ``"minilm: embed"``) while the block runs; count ``steps`` when it ends, also when
        it fails (a failed candidate's stage is over), but not when it is interrupted (Ctrl-C): the bar then stays
        where the run stopped (it drew the stage as done, ``9/9 100%``, above the "interrupted" line)."""
        self._label = label
        self._show()
        try:
            yield
        except Exception:
            self.advance(steps)
            raise
        self.advance(steps)

    def advance(self, steps: int = 1) -> None:
        if self._bar is not None and steps:
            self._bar.update(steps)

    def rate(self, name: str, n_items: int, seconds: float) -> None:
        """Show the embedding speed of the last candidate (items/s) after the bar."""
        per_s = n_items / seconds if seconds > 0 else float("inf")
        self._note = f"{name}: {n_items} items, {per_s:,.0f} items/s"
        self._show()

    def _show(self) -> None:
        """Draw the stage's label and the speed note within the terminal's width (:func:`bar_columns`), read at
        each draw: the percentage, a bar of at least 10 cells and the counts keep their room; the note is left out
        when the two do not fit, then the label is cut in the middle. (tqdm itself would cut the line's end: the
        bar shrank to one cell and the counts were lost.)"""
        if self._bar is None:
            return
        total = self._bar.total or 0
        room = bar_columns(sys.stderr) - len(f" 100%|{'#' * 10}| {total}/{total} [00:00<00:00]")
        note = self._note if len(self._label) + 2 + len(self._note) <= room else ""
        self._bar.set_description_str(cut_middle(self._label, max(room, 8)), refresh=False)
        self._bar.set_postfix_str(note, refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.refresh()  # the final count, once (tqdm skips redraws of quick updates)
            self._bar.close()
            self._bar = None
        self._redirect.close()

