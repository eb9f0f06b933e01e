"""What the tool may create, replace and delete on disk: the one guard every writer of published files goes through.

The rule (DESIGN.md, "What the tool may touch"; rsync's and restic's: never delete what is not ours):

- An output target is checked before any work (:func:`check_output_target`): never empty, ``.``, ``/`` or the
  home folder, never equal to or containing a protected folder (the store, the data, the configuration's folder)
  nor inside one given as ``inside_forbidden``; and its folder must be writable (probed with a real file, which
  also catches read-only mounts where ``os.access`` says yes).
- A folder is the tool's when it carries :data:`MARKER` (written by :func:`mark_owned`); the tool takes over only
  a missing or empty folder, one carrying the marker, or a link pointing into its own versions folder
  (:func:`check_takeover`). Anything else is refused (``ConfigError``, exit 2) naming it: never moved, never
  deleted.
- Files are replaced by writing a complete new copy under a temporary name, fsync, rename over
  (:func:`write_text` / :func:`write_bytes` / :func:`replacing`); new files follow the umask, an existing file
  keeps its mode. A folder is replaced by :func:`swap_dir`: the new folder is complete before it takes the old
  one's name, and the old one is removed only after.
- Temporary names carry the host and the process id (:func:`temp_name`), so that :func:`sweep_leftovers` removes
  only what a dead run of this tool left on this host.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Mapping

from embedselect.errors import ConfigError

MARKER = ".embedselect-owned"
"""File name of the ownership marker: a small JSON ``{"tool": "embedselect", "kind": ..., "created_at": ...}``."""

_HOST = hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
_TEMP_RE = re.compile(r"^\.(?P<base>.+)\.(?P<kind>[a-z]+)-h(?P<host>[0-9a-f]{8})-p(?P<pid>\d+)-r[0-9a-f]{6}(?:\.[a-z]+)?$")


# --- names, modes --------------------------------------------------------------------------------------------
def temp_name(base: str, kind: str, suffix: str = "") -> str:
    """A hidden temporary name next to ``base``: ``.<base>.<kind>-h<host>-p<pid>-r<random>[.suffix]``; the host
    (a hash of the host name) and the pid tell :func:`sweep_leftovers` whether the run that made it is gone."""
    return f".{base}.{kind}-h{_HOST}-p{os.getpid()}-r{secrets.token_hex(3)}" + (f".{suffix}" if suffix else "")


def umask() -> int:
    """The process's umask, read without changing it where the OS tells it (Linux ``/proc``)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    old = os.umask(0o022)  # elsewhere: the classic read-by-setting (not thread-safe, set back at once)
    os.umask(old)
    return old


def _mode_for(path: Path) -> int:
    """The mode a (re)written ``path`` gets: an existing file's own mode, else ``0o666`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~umask()


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so that a rename into it survives a power cut (best effort: where the OS cannot, nothing)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- atomic files ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block ends without error the file written there is
    fsync'd, given ``path``'s mode (or the umask's for a new file) and renamed over ``path`` in one step. On error
    the temporary file is removed and ``path`` is untouched. For writers that want a path (FAISS, numpy)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    tmp = folder / temp_name(path.name, "tmp")
    mode = _mode_for(path)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (a reader sees the old or the new file, never a part); a new file
    follows the umask, an existing one keeps its mode. Raises OSError (e.g. ENOSPC) with ``path`` untouched."""
    with replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def write_text(path: str | Path, text: str, *, encoding: str = "utf-8") -> None:
    """:func:`write_bytes` of ``text`` encoded (UTF-8 by default, newlines as given)."""
    if not isinstance(text, str):
        raise TypeError(f"write_text needs a str, got {type(text).__name__}")
    write_bytes(path, text.encode(encoding))


# --- ownership -------------------------------------------------------------------------------------------------
def mark_owned(folder: str | Path, kind: str) -> None:
    """Write the ownership marker into ``folder`` (a folder this tool has just created)."""
    info = {"tool": "embedselect", "kind": kind, "created_at": datetime.now(timezone.utc).isoformat()}
    write_text(Path(folder) / MARKER, json.dumps(info) + "\n")


def is_owned(folder: str | Path) -> bool:
    """Whether ``folder`` is a real folder (not a link) carrying a valid marker of this tool."""
    p = Path(folder)
    if p.is_symlink() or not p.is_dir():
        return False
    try:
        return json.loads((p / MARKER).read_text(encoding="utf-8")).get("tool") == "embedselect"
    except (OSError, ValueError, AttributeError):
        return False


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _real(p: Path) -> Path:
    """``p`` made absolute with its *parent* resolved (``p`` itself, possibly a link, is not followed)."""
    p = Path(os.path.abspath(p))
    return Path(os.path.realpath(p.parent)) / p.name if p.name else p


def check_takeover(path: str | Path, *, versions: str | Path | None = None, what: str = "output") -> None:
    """Refuse (``ConfigError``, exit 2) to replace ``path`` unless it is the tool's: missing, an empty folder, a
    folder carrying :data:`MARKER`, or a link whose target lies inside ``versions`` (the tool's versions folder).
    A user's folder with files, a file, or a link elsewhere is named and left exactly as it is."""
    p = Path(path)
    if p.is_symlink():
        target = Path(os.path.realpath(p))
        if versions is not None and _inside(target, Path(os.path.realpath(versions))) and target != Path(
                os.path.realpath(versions)):  # fmt: skip
            return
        raise ConfigError(f"{what} {p} is a link to {os.readlink(p)} that embedselect did not make; it was left as "
                          "it is: remove it or choose another path")  # fmt: skip
    if not p.exists():
        return
    if not p.is_dir():
        raise ConfigError(f"{what} {p} is an existing file, not a folder of embedselect's; it was left as it is: "
                          "choose another path")  # fmt: skip
    if is_owned(p) or not any(p.iterdir()):
        return
    raise ConfigError(f"{what} {p} is a folder with files that embedselect did not create; it was not moved or "
                      "deleted: choose a new or empty folder (embedselect takes over only folders it made)")  # fmt: skip


# --- output targets --------------------------------------------------------------------------------------------
def _probe_writable(folder: Path, what: str, path: Path) -> None:
    """Create and remove one temporary file in the nearest existing ancestor of ``folder``."""
    probe_dir = folder
    while not probe_dir.exists():
        if probe_dir.parent == probe_dir:
            break
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise ConfigError(f"{what} {path}: {probe_dir} is a file, so the folder {folder} cannot be created; choose "
                          "another path")  # fmt: skip
    probe = probe_dir / temp_name("write-check", "probe")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: the folder {probe_dir} is not writable ({exc.strerror or exc}); choose "
                          "another place or fix its permissions") from None  # fmt: skip


def check_output_target(path: str | Path, *, protected: Mapping[str, str | Path | None] | None = None,
                        inside_forbidden: Mapping[str, str | Path | None] | None = None, what: str = "output",
                        writable: bool = True) -> Path:
    """Check, before any work, that the tool may publish at ``path``; return it absolute.

    Args:
        path: the output (a file or a folder the tool will replace as a whole).
        protected: name -> folder that ``path`` must neither equal nor contain (e.g. the configuration's folder,
            the data file's folder): replacing ``path`` would move or delete it.
        inside_forbidden: name -> folder that ``path`` must not equal, contain, nor lie inside (e.g. the store).
        what: how the message names ``path`` (``output``, ``--out``).
        writable: also probe that ``path``'s folder can be written (a real temporary file, removed at once).

    Raises:
        ConfigError (exit 2): empty, ``.``, ``/`` or the home folder; overlapping a protected folder; not writable.
    """
    raw = str(path).strip()
    if raw in ("", ".", "./"):
        raise ConfigError(f"{what}: {raw!r} would be the current folder; name a folder of its own, e.g. ./site")
    p = _real(Path(raw).expanduser())
    home = Path(os.path.realpath(Path.home()))
    if p == Path(p.anchor) or p == home:
        raise ConfigError(f"{what}: {p} is {'the root folder' if p == Path(p.anchor) else 'the home folder'}; "
                          "name a folder of its own, e.g. ./site")  # fmt: skip
    checks = [(name, folder, False) for name, folder in dict(protected or {}).items()]
    checks += [(name, folder, True) for name, folder in dict(inside_forbidden or {}).items()]
    for name, folder, no_inside in checks:
        if folder is None:
            continue
        f = Path(os.path.realpath(os.path.abspath(Path(folder).expanduser())))
        if p == f:
            raise ConfigError(f"{what}: {p} is the {name}; the published output needs a folder of its own")
        if _inside(f, p):
            raise ConfigError(f"{what}: {p} contains the {name} ({f}); the published output needs a folder of its "
                              "own, e.g. a new ./site next to it")  # fmt: skip
        if no_inside and _inside(p, f):
            raise ConfigError(f"{what}: {p} is inside the {name} ({f}); choose a folder outside it")
    if writable:
        _probe_writable(p.parent, what, p)
    return p


# --- folders ---------------------------------------------------------------------------------------------------
def _renameat2_exchange() -> Callable[[Path, Path], None] | None:
    """Linux's atomic exchange of two paths (``renameat2(RENAME_EXCHANGE)``), or None where unavailable."""
    name = ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name, use_errno=True).renameat2 if name else None
    except (OSError, AttributeError):
        fn = None
    if fn is None:
        return None

    def exchange(a: Path, b: Path) -> None:
        if fn(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), str(b))

    return exchange


_exchange = _renameat2_exchange()


def swap_dir(new: str | Path, target: str | Path) -> None:
    """Put the complete folder ``new`` at ``target``; the old ``target`` (the tool's, checked by the caller) is
    removed only after. On Linux the two are exchanged in one step (a kill leaves the old or the new at
    ``target``); elsewhere the old is renamed aside to a :func:`temp_name` first, and :func:`sweep_leftovers`
    puts it back if a kill came between the two renames."""
    new, target = Path(new), Path(target)
    if not target.exists() and not target.is_symlink():
        os.replace(new, target)
        fsync_dir(target.parent)
        return
    if _exchange is not None:
        try:
            _exchange(new, target)
            fsync_dir(target.parent)
            shutil.rmtree(new, ignore_errors=True)  # now the old folder
            return
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                raise
    aside = target.parent / temp_name(target.name, "old")
    os.replace(target, aside)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(aside, target)  # the old one back; a kill here is undone by sweep_leftovers
        raise
    fsync_dir(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def replace_folder(out: str | Path, fill: Callable[[Path], None], *, error: type[Exception], what: str,
                   legacy_tmp: bool = False) -> None:
    """Build a folder with ``fill(tmp)`` in a new hidden folder next to ``out``, fsync its files and
    :func:`swap_dir` it in (the caller has checked that ``out`` is missing, empty or the tool's). Temporary
    folders of dead runs are cleaned first (with ``legacy_tmp`` also older versions' ``.<name>.tmp-<pid>``).

    Raises:
        error: writing failed (disk full, FAISS's write error, ...): the message names ``out`` and the reason, the
            temporary folder is removed and ``out`` is untouched.
    """
    out = Path(out)
    legacy = re.compile(rf"^\.{re.escape(out.name)}\.tmp-(\d+)$")

    def old_tmp(e: Path) -> bool:
        m = legacy.match(e.name) if legacy_tmp else None
        return m is not None and e.is_dir() and not e.is_symlink() and not _pid_alive(int(m.group(1)))

    sweep_leftovers(out.parent, out.name, kinds=("tmp", "old"), extra=old_tmp)
    tmp = out.parent / temp_name(out.name, "tmp")
    try:
        tmp.mkdir(parents=True)
        fill(tmp)
        for f in tmp.rglob("*"):
            if f.is_file() and not f.is_symlink():
                fd = os.open(f, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        swap_dir(tmp, out)
    except error:
        raise
    except (OSError, RuntimeError) as exc:  # FAISS reports a failed write as RuntimeError ("... write error ...")
        shutil.rmtree(tmp, ignore_errors=True)
        reason = " ".join(str(exc).split())
        if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "No space left" in reason:
            reason = "no space left on device; free disk space or choose another place"
        raise error(f"could not write {what} to {out}: {reason[-300:]}; {out} was not changed") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# --- leftovers of dead runs ------------------------------------------------------------------------------------
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def temp_parts(name: str) -> re.Match | None:
    """The parts (``base``, ``kind``, ``host``, ``pid``) of ``name`` when it is a :func:`temp_name`; else None."""
    return _TEMP_RE.match(name)


def dead_temp(name: str, base: str | None = None) -> re.Match | None:
    """The parts of ``name`` when it is a :func:`temp_name` (of ``base`` if given) made on this host by a
    process that is gone; else None."""
    m = _TEMP_RE.match(name)
    if not m or m["host"] != _HOST or (base is not None and m["base"] != base):
        return None
    pid = int(m["pid"])
    return m if pid != os.getpid() and not _pid_alive(pid) else None


def sweep_leftovers(folder: str | Path, base: str, *, kinds: tuple[str, ...] = ("tmp", "link", "partial", "old"),
                    extra: Callable[[Path], bool] | None = None) -> list[Path]:
    """Remove, in ``folder``, the temporary names of ``base`` that dead runs of this tool left on this host (only
    names matching :func:`temp_name`'s pattern, of the given kinds; ``extra(path)`` may accept more, e.g. the
    names of older versions). An ``old`` folder whose ``base`` is missing is put back instead (a kill inside
    :func:`swap_dir`). Returns what was removed or put back."""
    folder = Path(folder)
    done: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return done
    for e in entries:
        m = dead_temp(e.name, base)
        if not ((m and m["kind"] in kinds) or (extra is not None and extra(e))):
            continue
        if m and m["kind"] == "old" and not (folder / base).exists() and not (folder / base).is_symlink():
            os.replace(e, folder / base)
        elif e.is_symlink() or not e.is_dir():
            e.unlink(missing_ok=True)
        else:
            shutil.rmtree(e, ignore_errors=True)
        done.append(e)
    return done
