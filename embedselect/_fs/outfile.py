"""Single-file outputs the user names (``--out``, ``--html``, ``--markdown``, ``report --out``, ``card --out``, ...):
which existing paths the tool may replace, and how it writes them. :mod:`embedselect._fs.guard` is the rule for
folders; this is the same rule for one file.

- A path that does not exist is created; a regular file is written under a unique temporary name, fsync'd and
  renamed over (:func:`embedselect._fs.guard.write_bytes`), so a failure leaves the old file as it was.
- An existing regular file is replaced only when the tool wrote it (:func:`is_tool_output`: the generator mark
  :func:`mark` puts into HTML and Markdown, or the shape of the tool's JSON) or the user said ``--overwrite``;
  anything else (a user's README, their data) is refused, exit 2, and left as it is.
- A character device (``/dev/null``, ``/dev/full``, a terminal) or a named pipe is written into, never replaced by
  a regular file; a block device, a socket, a folder or a link is refused.
- Never a file the same run reads, nor one inside a folder it reads (:func:`check_not_read`): compared by device
  and inode (``os.path.samefile``), so links, ``..`` and hard links cannot hide it.
- A write that fails (disk or quota full, read-only file system, ``/dev/full``) is an
  :class:`~embedselect.errors.OutputWriteError` naming the file and the reason (:func:`os_reason`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Mapping

from embedselect.errors import ConfigError, OutputWriteError

HTML_MARK = '<meta name="generator" content="embedselect">'
"""Put into every HTML file the tool writes (right after ``<head>``): the HTML standard's way to say which program
made a page."""
MARKDOWN_MARK = "<!-- generator: embedselect; the next run that writes this file replaces it -->"
"""The first line of every Markdown file the tool writes (a comment: renderers show nothing)."""
_SNIFF = 8192  # the marks sit at the start of the file
_MAX_JSON = 64 << 20  # a JSON output of the tool is far smaller; a larger file is not taken for one


def mark(text: str, kind: str) -> str:
    """``text`` with the generator mark of its ``kind``: ``html`` (:data:`HTML_MARK` after ``<head>``, or after
    the doctype of a page without one), ``markdown`` (:data:`MARKDOWN_MARK` as the first line); other kinds
    (``json``, ``csv``, ``card``) unchanged. Idempotent."""
    if kind == "html" and HTML_MARK not in text[:_SNIFF]:
        low = text[:_SNIFF].lower()
        at = low.find("<head>")
        if at >= 0:
            at += len("<head>")
        elif low.startswith("<!doctype"):
            at = low.find(">") + 1
        else:
            at = 0
        return text[:at] + HTML_MARK + text[at:]
    if kind == "markdown" and not text.startswith(MARKDOWN_MARK):
        return MARKDOWN_MARK + "\n" + text
    return text


EMBED_ROW_KEYS = ("name", "status", "cached", "embedded_items", "stored_items", "n", "dim", "seconds", "run_key",
                  "error_type", "error")
"""The keys of a row of ``embed --out``'s JSON, in their order: each the candidate result's attribute of that name
(``embed`` writes the rows from them, and :func:`is_tool_output` knows its own file by them)."""

_EMBED_ROW_FIRST = frozenset(EMBED_ROW_KEYS) - {"embedded_items", "stored_items"}
"""The keys of the rows the first versions of ``embed --out`` wrote (before the incremental cache's two counts)."""


def _tool_json(doc: Any) -> bool:
    """Whether ``doc`` has the shape of a JSON output of the tool: a ranking (``rank --out``), a leaderboard
    (``leaderboard --format json``) or ``embed --out``'s rows."""
    if isinstance(doc, dict):
        versions = doc.get("versions")
        if {"format_version", "ranking_id", "candidates"} <= doc.keys() and isinstance(versions, dict):
            return "embedselect" in versions
        return {"ranking_id", "previous_ranking_id", "leaders", "rows"} <= doc.keys()
    if isinstance(doc, list) and doc:
        return all(isinstance(r, dict) and _EMBED_ROW_FIRST <= set(r) <= set(EMBED_ROW_KEYS) for r in doc)
    return False


def is_tool_output(path: str | Path) -> bool:
    """Whether the regular file ``path`` (not a link) is one the tool wrote: its first bytes hold :data:`HTML_MARK`
    or start with :data:`MARKDOWN_MARK`, or it is JSON of the tool's own shape (see :func:`_tool_json`). A claim
    by content, like a badge's: a user's file carries none of these."""
    p = Path(path)
    try:
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode):
            return False
        with open(p, "rb") as f:
            head = f.read(_SNIFF)
            if head.startswith(MARKDOWN_MARK.encode()) or HTML_MARK.encode() in head:
                return True
            if st.st_size > _MAX_JSON or head.lstrip()[:1] not in (b"{", b"["):
                return False
            return _tool_json(json.loads(head + f.read()))
    except (OSError, ValueError, RecursionError):
        return False


def _kind(st: os.stat_result) -> str:
    m = st.st_mode
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(m):
            return name
    return "not a regular file"


def check_not_read(out: str | Path, reads: Mapping[str, Iterable[str | Path]], *, what: str,
                   folder: bool = False) -> None:
    """Refuse an output ``out`` that is, or lies inside, a path the same run reads: ``reads`` maps how the message
    names each (``the data``, ``--labels``) to its paths (missing ones are skipped). Files are compared by device
    and inode (a link, ``..`` or a hard link to the data is the data). With ``folder`` (``out`` is a folder the
    tool replaces) it must not contain one either.

    Raises:
        ConfigError: exit 2, before any work; nothing is touched.
    """
    o = Path(os.path.abspath(Path(out).expanduser()))
    o_real = Path(os.path.realpath(o))
    for name, paths in reads.items():
        for src in paths:
            s = Path(src).expanduser()
            if not s.exists():
                continue
            s_real = Path(os.path.realpath(s))
            same = o.exists() and os.path.samefile(o, s)
            if same or o_real == s_real:
                raise ConfigError(f"{what} {out} is {name} ({src}), an input of this command; it was left as it is: "
                                  "write the output to another file")
            if s.is_dir() and s_real in o_real.parents:
                raise ConfigError(f"{what} {out} is inside {name} ({src}), an input of this command; choose a file "
                                  "outside it")
            if folder and o_real in s_real.parents:
                raise ConfigError(f"{what} {out} holds {name} ({src}), an input of this command; choose another folder")


def check_replace(path: str | Path, *, what: str, overwrite: bool | None = False, updatable: bool = False) -> str:
    """What writing ``path`` would do, refused unless the tool may: ``new`` (missing), ``ours`` (a file the tool
    wrote), ``overwrite`` (a user's regular file, with ``--overwrite``), ``update`` (``updatable``: the command
    updates this file's content, e.g. a model card), ``device`` (a character device or a named pipe: written into,
    never replaced). Links, folders, block devices and sockets are refused. ``overwrite`` None: the command has no
    ``--overwrite`` (``ask``), and the refusal does not offer it.

    Raises:
        ConfigError: exit 2; the path is left as it is.
    """
    p = Path(path).expanduser()
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return "new"
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"{what} {path} is a link to {os.readlink(p)}; embedselect does not replace links nor write "
                          "through them: name the file itself")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        if not os.access(p, os.W_OK):
            raise ConfigError(f"{what} {path} is not writable: choose another file or fix its permissions")
        return "device"
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{what} {path} is {_kind(st)}; it was left as it is: name a file")
    if updatable:
        return "update"
    if is_tool_output(p):
        return "ours"
    if overwrite:
        return "overwrite"
    offer = "" if overwrite is None else ", or give --overwrite to replace it"
    raise ConfigError(f"{what} {path} already exists and was not written by embedselect; it was left as it is: "
                      f"choose another name{offer}")


def os_reason(exc: OSError) -> str:
    """A failed write's reason in words that say what to do (a full disk or quota, a file-size limit: the cache's
    rule, :func:`embedselect._fs.no_room.room_remedy`; a read-only file system, a folder it may not write)."""
    from embedselect._fs.no_room import room_remedy

    if exc.errno is not None and (todo := room_remedy(exc.errno)) is not None:
        return f"{os.strerror(exc.errno).lower()}; {todo} or choose another place"
    if exc.errno == errno.EROFS:
        return "the file system is read-only; choose another place"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; choose another place or fix its permissions"
    return " ".join(str(exc.strerror or exc).split())


def write(path: str | Path, text: str, *, what: str = "output", kind: str = "text") -> None:
    """Write ``text`` (UTF-8, with the generator :func:`mark` of its ``kind``) to ``path``: into it when it is a
    character device or a named pipe (a FIFO blocks until a reader opens it, as ``echo > fifo`` does), else
    atomically (a new file follows the umask, an existing one keeps its mode).

    Raises:
        OutputWriteError: the write failed (``/dev/full``, a full disk or quota, a read-only file system): the
            message names ``path`` and the reason; a regular file is left as it was.
    """
    from embedselect._fs import guard

    p = Path(path).expanduser()
    data = mark(text, kind).encode("utf-8")
    try:
        st = os.lstat(p)
        into = stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)
    except FileNotFoundError:
        into = False
    try:
        if into:
            fd = os.open(p, os.O_WRONLY | os.O_NOCTTY)  # no O_CREAT, no O_TRUNC: the node stays what it is
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        else:
            guard.write_bytes(p, data)
    except OSError as exc:
        kept = "" if into else (f"; {path} was not changed" if p.exists() else "; nothing was written")
        raise OutputWriteError(f"could not write {what} to {path}: {os_reason(exc)}{kept}") from None
