"""What the tool may create, replace and delete on disk: the one guard every writer of published files goes through.

The rule (docs/nightly.md, "What a night may create, replace and delete"; rsync's and restic's: never delete what is
not ours):

- An output target is checked before any work (:func:`check_output_target`, :func:`check_output_file`): never
  empty, ``.``, ``/`` or home, never equal to or containing a protected folder (store, data, configuration) nor
  inside one given as ``inside_forbidden`` (the cache), and none of them inside what is replaced or pruned with it;
  its folder must be writable (probed with a real file). A link is never replaced nor written through.
- A folder is the tool's only while its marker :data:`MARKER` (:func:`mark_owned`, written last) lists every entry
  in it unchanged (:func:`is_owned`): a marker alone, forged or copied along with a user's files, is not enough.
  The tool takes over only a missing or empty folder, one of its own, or a link into its versions folder
  (:func:`check_takeover`), and deletes only its own (:func:`remove_owned`); anything else is refused
  (``ConfigError``, exit 2) or kept, and named. In a folder the user named for files (badges) it replaces only
  files it wrote (:func:`check_replaceable`).
- Files are replaced by a complete new copy under a temporary name, fsync, rename over (:func:`write_text`,
  :func:`replacing`); new files follow the umask, an existing file keeps its mode. A folder is replaced by
  :func:`swap_dir`: the new one is complete before it takes the old one's name, the old one removed only after.
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
import logging
import os
import re
import secrets
import shutil
import socket
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from embedselect.errors import ConfigError
from embedselect._fs.owned import MARKER, folder_inventory, foreign, is_marked, is_owned, marked_kind, remove_owned

log = logging.getLogger(__name__)


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
    if path.is_symlink():
        raise ConfigError(f"{path} is a link to {os.readlink(path)}; embedselect does not replace links nor write "
                          "through them: name the file itself")
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
def mark_owned(folder: str | Path, kind: str, *, inventory: bool = True) -> None:
    """Write the ownership marker into ``folder`` (a folder this tool has just created and filled). With
    ``inventory`` the marker lists every entry now inside (path, size, mtime): the folder is the tool's only while it
    holds exactly those (:func:`is_owned`). Without it (a container such as a versions folder, which is never
    removed) the marker only claims the folder (:func:`is_marked`)."""
    folder = Path(folder)
    info = {"tool": "embedselect", "kind": kind, "created_at": datetime.now(timezone.utc).isoformat(),
            "files": folder_inventory(folder) if inventory else None}
    write_text(folder / MARKER, json.dumps(info) + "\n")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _real(p: Path) -> Path:
    """``p`` made absolute with its *parent* resolved (``p`` itself, possibly a link, is not followed)."""
    p = Path(os.path.abspath(p))
    return Path(os.path.realpath(p.parent)) / p.name if p.name else p


def check_takeover(path: str | Path, *, versions: str | Path | None = None, what: str = "output",
                   ours: str = "a folder of embedselect's", kinds: Iterable[str] | None = None) -> None:
    """Refuse (``ConfigError``, exit 2) to replace ``path`` unless it is the tool's: missing, an empty folder, a
    folder the tool wrote and nobody changed since (:func:`is_owned`), or a link whose target lies inside ``versions`` (the tool's versions folder). A user's
    folder with files, a folder carrying a marker but also other files, a file, or a link elsewhere is named and
    left exactly as it is; ``ours`` names what the tool would take over (in the message), ``kinds`` the marker
    kinds it may take over (a night never takes an index the tool wrote, nor an index a night's site)."""
    p = Path(path)
    if p.is_symlink():
        target = Path(os.path.realpath(p))
        if versions is not None and _inside(target, Path(os.path.realpath(versions))) and target != Path(
                os.path.realpath(versions)):
            return
        raise ConfigError(f"{what} {p} is a link to {os.readlink(p)} that embedselect did not make; it was left as "
                          "it is: remove it or choose another path")
    if not p.exists():
        return
    if not p.is_dir():
        raise ConfigError(f"{what} {p} is an existing file, not {ours}; it was left as it is: choose another path")
    if not any(p.iterdir()) or is_owned(p, kinds):
        return
    if kinds is not None and is_owned(p) and marked_kind(p) not in set(kinds):
        raise ConfigError(f"{what} {p} holds embedselect's {marked_kind(p)}, not {ours}; it was not moved or deleted: "
                          "choose another path")
    if is_marked(p):
        extra = foreign(p)
        raise ConfigError(f"{what} {p} is not {ours}: it carries embedselect's marker but also holds files that "
                          f"embedselect did not write there ({', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''}); "
                          "it was not moved or deleted: move those files away or choose a new or empty folder")
    raise ConfigError(f"{what} {p} is not {ours}: a folder with files that embedselect did not create; it was not "
                      "moved or deleted: choose a new or empty folder (embedselect takes over only folders it made)")


def check_replaceable(paths: Iterable[Path], *, ours: Callable[[Path], bool], what: str = "--out") -> None:
    """Before writing files into a folder the user named (``badge --out DIR``): refuse (``ConfigError``, exit 2,
    nothing written) when one of ``paths`` exists and is not a file the tool wrote there (``ours(path)``, e.g.
    by its content), or is a link. Missing paths are created; nothing else in the folder is touched."""
    bad = [p for p in paths if p.is_symlink() or (p.exists() and not (p.is_file() and ours(p)))]
    if bad:
        names = ", ".join(str(p) for p in bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise ConfigError(f"{what}: {names} already exist{'s' if len(bad) == 1 else ''} and "
                          f"{'was' if len(bad) == 1 else 'were'} not written by embedselect; nothing was written and "
                          "they were left as they are: move them away or choose another folder")


def check_output_file(path: str | Path, *, what: str = "--out",
                      inside_forbidden: Mapping[str, str | Path | None] | None = None) -> Path:
    """Check a single output file the user named (``report --out FILE``): replacing that file is the request, but
    never through a link (a link is refused, its target untouched) and never inside a folder of the tool's own
    (``inside_forbidden``, e.g. the cache). Returns it absolute."""
    p = _real(Path(str(path)).expanduser())
    if Path(path).expanduser().is_symlink():
        raise ConfigError(f"{what} {path} is a link to {os.readlink(Path(path).expanduser())}; embedselect does not "
                          "replace links nor write through them: name the file itself")
    for name, folder in dict(inside_forbidden or {}).items():
        if folder is not None and _inside(p, Path(os.path.realpath(os.path.abspath(Path(folder).expanduser())))):
            raise ConfigError(f"{what} {path} is inside the {name} ({folder}); choose a file outside it")
    return p


def own_file(path: str | Path, *, what: str, error: type[Exception] = ConfigError) -> Path:
    """A fixed-name file in one of the tool's own folders that it opens for writing (a lock, a pid file): never a
    link, since a link planted there would make it truncate or overwrite the file the link names. Raises ``error``."""
    p = Path(path)
    if p.is_symlink():
        raise error(f"{what} {p} is a link to {os.readlink(p)}; embedselect never opens its own files through a link: "
                    "remove the link")
    return p


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
                          "another path")
    probe = probe_dir / temp_name("write-check", "probe")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: the folder {probe_dir} is not writable ({exc.strerror or exc}); choose "
                          "another place or fix its permissions") from None


def check_output_target(path: str | Path, *, protected: Mapping[str, str | Path | None] | None = None,
                        inside_forbidden: Mapping[str, str | Path | None] | None = None, what: str = "output",
                        writable: bool = True, replaced: Iterable[str | Path] = (), into: bool = False) -> Path:
    """Check, before any work, that the tool may publish at ``path``; return it absolute.

    Args:
        path: the output (a file or a folder the tool will replace as a whole).
        protected: name -> folder that ``path`` must neither equal nor contain (e.g. the configuration's folder,
            the data file's folder): replacing ``path`` would move or delete it.
        inside_forbidden: name -> folder that ``path`` must not equal, contain, nor lie inside (e.g. the store).
        what: how the message names ``path`` (``output``, ``--out``).
        replaced: other folders the tool replaces or prunes along with ``path`` (its versions folder): they must not
            hold a protected folder either. Where ``path`` is a link, its target is checked too.
        into: files are written into the folder ``path`` (badges), which is never replaced: it may be the current
            folder, and where it exists it must be a folder.
        writable: also probe that ``path``'s folder can be written (a real temporary file, removed at once).

    Raises:
        ConfigError (exit 2): empty, ``.``, ``/`` or the home folder; overlapping a protected folder; not writable.
    """
    raw = str(path).strip()
    if raw in ("", ".", "./") and not (into and raw):
        raise ConfigError(f"{what}: {raw!r} would be the current folder; name a folder of its own, e.g. ./site")
    p = _real(Path(raw).expanduser())
    home = Path(os.path.realpath(Path.home()))
    if into and (p.exists() or p.is_symlink()) and not p.is_dir():
        raise ConfigError(f"{what} {p} is an existing file, not a folder; it was left as it is: name a folder")
    if p == Path(p.anchor) or p == home:
        raise ConfigError(f"{what}: {p} is {'the root folder' if p == Path(p.anchor) else 'the home folder'}; "
                          "name a folder of its own, e.g. ./site")
    checks = [(name, folder, False) for name, folder in dict(protected or {}).items()]
    checks += [(name, folder, True) for name, folder in dict(inside_forbidden or {}).items()]
    also = [Path(os.path.realpath(p))] if p.is_symlink() and not into else []  # a link is replaced; what it points at, pruned
    also += [Path(os.path.realpath(os.path.abspath(r))) for r in replaced]
    for name, folder, no_inside in checks:
        if folder is None:
            continue
        f = Path(os.path.realpath(os.path.abspath(Path(folder).expanduser())))
        if p == f:
            raise ConfigError(f"{what}: {p} is the {name}; the published output needs a folder of its own")
        if _inside(f, p):
            raise ConfigError(f"{what}: {p} contains the {name} ({f}); the published output needs a folder of its "
                              "own, e.g. a new ./site next to it")
        for q in also:
            if _inside(f, q):
                raise ConfigError(f"{what}: the {name} ({f}) lies inside {q}, which embedselect replaces or prunes "
                                  f"with {p}; move the {name} out of it")
        if no_inside and (_inside(p, f) or _inside(Path(os.path.realpath(p)), f)):
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


def swap_dir(new: str | Path, target: str | Path, *, kinds: Iterable[str] | None = None) -> None:
    """Put the complete folder ``new`` at ``target``; the old ``target`` (the tool's, checked by the caller) is
    removed only after, and only while it is still the tool's (:func:`remove_owned`: a file a user added in the
    meantime keeps it, under its temporary name, with a warning). On Linux the two are exchanged in one step (a
    kill leaves the old or the new at ``target``); elsewhere the old is renamed aside to a :func:`temp_name` first,
    and :func:`sweep_leftovers` puts it back if a kill came between the two renames."""
    new, target = Path(new), Path(target)
    if not target.exists() and not target.is_symlink():
        os.replace(new, target)
        fsync_dir(target.parent)
        return
    old = None
    if _exchange is not None:
        try:
            _exchange(new, target)
            old = new  # the exchange put the old folder at the new one's name
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                raise
    if old is None:
        old = target.parent / temp_name(target.name, "old")
        os.replace(target, old)
        try:
            os.replace(new, target)
        except BaseException:
            os.replace(old, target)  # the old one back; a kill here is undone by sweep_leftovers
            raise
    fsync_dir(target.parent)
    if not remove_owned(old, kinds=kinds) and (old.exists() or old.is_symlink()):
        log.warning("%s: the folder it replaced holds files embedselect did not write (%s); it was kept as %s",
                    target, ", ".join(foreign(old)[:5]), old)


def replace_folder(out: str | Path, fill: Callable[[Path], None], *, error: type[Exception], what: str,
                   kind: str, check: Callable[[], None] | None = None) -> None:
    """Build a folder with ``fill(tmp)`` in a new hidden folder next to ``out``, mark it (:func:`mark_owned` with
    ``kind`` and its inventory), fsync its files and :func:`swap_dir` it in. ``check()`` runs just before the swap
    (the caller's :func:`check_takeover`, again: the folder may have changed while the new one was built); the old
    folder is removed only while it is the tool's. Temporary folders of dead runs are cleaned first.

    Raises:
        error: writing failed (disk full, FAISS's write error, ...): the message names ``out`` and the reason, the
            temporary folder is removed and ``out`` is untouched.
        ConfigError: ``check()`` refused ``out``; the new folder is removed and ``out`` is untouched.
    """
    out = Path(out)
    sweep_leftovers(out.parent, out.name, kinds=("tmp", "old"))
    tmp = out.parent / temp_name(out.name, "tmp")
    swapped = False
    try:
        tmp.mkdir(parents=True)
        fill(tmp)
        mark_owned(tmp, kind)
        for f in tmp.rglob("*"):
            if f.is_file() and not f.is_symlink():
                fd = os.open(f, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        if check is not None:
            check()
        swap_dir(tmp, out, kinds=(kind,))
        swapped = True
    except (error, ConfigError):
        raise
    except (OSError, RuntimeError) as exc:  # FAISS reports a failed write as RuntimeError ("... write error ...")
        reason = " ".join(str(exc).split())
        if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "No space left" in reason:
            reason = "no space left on device; free disk space or choose another place"
        raise error(f"could not write {what} to {out}: {reason[-300:]}; {out} was not changed") from None
    finally:
        if not swapped and tmp.exists():  # the new folder, never swapped in (or, killed inside the swap, the old)
            if not is_marked(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
            elif not remove_owned(tmp, kinds=(kind,)):
                log.warning("%s: a replaced folder holding files embedselect did not write was kept as %s", out, tmp)


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


def sweep_leftovers(folder: str | Path, base: str, *,
                    kinds: tuple[str, ...] = ("tmp", "link", "partial", "old")) -> list[Path]:
    """Remove, in ``folder``, the temporary names of ``base`` that dead runs of this tool left on this host (only
    names matching :func:`temp_name`'s pattern, of the given kinds). An ``old`` folder whose ``base`` is missing is put back instead (a kill inside
    :func:`swap_dir`); a folder carrying the marker is removed only while it is the tool's (:func:`is_owned`: one
    that a user added files to is kept). Returns what was removed or put back."""
    folder = Path(folder)
    done: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return done
    for e in entries:
        m = dead_temp(e.name, base)
        if not (m and m["kind"] in kinds):
            continue
        if m and m["kind"] == "old" and not (folder / base).exists() and not (folder / base).is_symlink():
            os.replace(e, folder / base)
        elif e.is_symlink() or not e.is_dir():
            e.unlink(missing_ok=True)
        elif is_marked(e) and not is_owned(e):
            continue
        else:
            shutil.rmtree(e, ignore_errors=True)
        done.append(e)
    return done
