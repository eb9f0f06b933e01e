"""Vector files of the cache: paths, crash-safe writes beside their rows, checked reads, run locks, removal and gc."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from embedselect._util.arrays import check_embeddings
from embedselect._fs.guard import fsync_dir
from embedselect.errors import CacheError
from embedselect.store.db import Database
from embedselect.store.keys import PARTIAL_SETTING, RUN_KEY_RE, RunRecord, utc_now
from embedselect.store.model_ids import matching_models
from embedselect.store.worklock import work_lock
from embedselect.store.write_failure import cache_write_error, refused_errno

log = logging.getLogger("embedselect.store")  # the store's logger, as before the split

_SHARD_RE = re.compile(r"^[0-9a-f]{2}$")
_VECTOR_RE = re.compile(r"^(?:(?P<key>[0-9a-f]{64})\.npy|\.(?P<tkey>[0-9a-f]{64})\.npy(?:\.[A-Za-z0-9-]+)?\.\d+\.\d+\.tmp)$")
_saved = [0]
_saved_lock = threading.Lock()


def runs_saved() -> int:
    """How many whole embedding runs this process has stored (:meth:`VectorStore.save_run` committed them; a chunk,
    :attr:`RunRecord.partial`, is not one), in any store: the CLI compares it before and after a command to say, when
    interrupted, whether the command finished any."""
    return _saved[0]


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class VectorStore(Database):
    """The embedding-run half of :class:`embedselect.store.Store` (it inherits this): rows of ``embedding_runs``
    and their vector files under ``vectors_dir``."""

    vectors_dir: Path

    def _vector_path(self, key: str) -> Path:
        if not RUN_KEY_RE.match(key):
            raise CacheError(f"invalid run key {key!r}")
        return self.vectors_dir / key[:2] / f"{key}.npy"

    def get_run(self, key: str) -> RunRecord | None:
        """The run's record, or None if it is not cached."""
        with self._read() as con:
            row = con.execute(
                """SELECT run_key, model_id, revision, backend, settings, fingerprint, n, dim, dtype, device,
                          seconds, vector_file, sha256, bytes FROM embedding_runs WHERE run_key = ?""",
                [key],
            ).fetchone()
        if row is None:
            return None
        key_, model_id, revision, backend, settings, fp, n, dim, dtype, device, seconds, vfile, sha, size = row
        return RunRecord(key_, model_id, revision, backend, json.loads(settings), fp, n, dim, dtype, device, seconds,
                         vfile, sha, size)

    def load_vectors(self, key: str, *, verify: bool = True, mmap: bool = False) -> np.ndarray | None:
        """The cached (n, d) float32 matrix of run ``key``, or None if not cached.

        A row whose file is missing, has the wrong size or fails its sha256 is deleted (so that the caller
        recomputes it) and a warning is logged; with ``verify=False`` only the size is checked.

        With ``mmap=True`` the matrix is a read-only :class:`numpy.memmap` of the file (opened after the checks):
        its pages are read on demand and belong to the page cache, not to this process's allocations, so a caller
        can hold many candidates' matrices while only the one it works on is resident. Writing into it raises
        ``ValueError`` (copy first). The file stays readable through the mapping even if the store replaces it
        (``os.replace`` of a new version) or removes it (``cache rm`` / ``gc``) meanwhile: both unlink the old
        inode, which lives until the mapping is closed (POSIX).
        """
        rec = self.get_run(key)
        if rec is None:
            return None
        path = self.root / rec.vector_file
        problem = None
        if not path.is_file():
            problem = "file is missing"
        elif path.stat().st_size != rec.bytes:
            problem = f"file has {path.stat().st_size} bytes, expected {rec.bytes}"
        elif verify and _sha256_file(path) != rec.sha256:
            problem = "checksum mismatch"
        if problem is None:
            try:
                arr = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
            except (OSError, ValueError) as exc:
                problem = f"unreadable ({exc})"
            else:
                try:  # the recorded shape, float32 (a memory map stays one: nothing is converted)
                    check_embeddings(arr, what="the file", n=rec.n, d=rec.dim, dtype=None, finite=False,
                                     error=CacheError)
                    if arr.dtype != np.float32:
                        raise CacheError(f"the file holds {arr.dtype}, not float32")
                except CacheError as exc:
                    problem = str(exc)
                else:
                    return arr
        log.warning("discarding cached run %s (%s): %s; it will be recomputed", key[:12], rec.model_id, problem)
        if self.can_record("the removal of the broken run"):
            self.delete_runs([key], only_if_sha256={key: rec.sha256})
        return None

    def save_run(
        self,
        *,
        key: str,
        vectors: np.ndarray,
        model_id: str,
        revision: str,
        backend: str,
        settings: Mapping[str, Any],
        fingerprint: str,
        device: str | None,
        seconds: float | None,
        items: tuple[str, Sequence[str]] | None = None,
    ) -> RunRecord:
        """Durably store an embedding matrix (float32, shape (n, d)) and its run record.

        The file is fully written and fsync'd before the row that makes it visible is committed. ``items``: (space
        key, the n item keys in row order) of a run whose rows are per-item vectors (see :meth:`stored_items`):
        their item index rows are committed in the same transaction as the run's row.
        """
        from embedselect.version import __version__

        self.require_writable(f"store the embeddings of {model_id}")
        vectors = np.ascontiguousarray(check_embeddings(
            vectors, what=f"the embeddings of {model_id} (not cached)", min_rows=1, error=CacheError, hint=""))
        path = self._vector_path(key)
        tmp = self._tmp_name(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                np.save(f, vectors, allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:  # a full disk, a quota, a read-only folder: no partial file is left, nothing stored
            with contextlib.suppress(OSError):  # is touched (a read-only mount refuses even to unlink a missing file)
                tmp.unlink(missing_ok=True)
            if refused_errno(exc) is None:
                raise
            raise cache_write_error(exc, what=f"store the embeddings of {model_id}", path=path.parent,
                                    root=self.root) from exc
        try:
            digest = _sha256_file(tmp)
            size = tmp.stat().st_size
            rec = RunRecord(
                run_key=key,
                model_id=model_id,
                revision=revision,
                backend=backend,
                settings=dict(settings),
                fingerprint=fingerprint,
                n=int(vectors.shape[0]),
                dim=int(vectors.shape[1]),
                dtype="float32",
                device=device,
                seconds=seconds,
                vector_file=str(path.relative_to(self.root)),
                sha256=digest,
                bytes=size,
            )
            # The rename and the row commit are one critical section under the inter-process lock: a `cache rm` or
            # `gc` in another process sees either the old state or the new file with its row, never the renamed file
            # without its row (which it would delete). Writing and hashing the temporary file above stay outside.
            with self._write() as con:
                con.execute(
                    """INSERT OR REPLACE INTO embedding_runs VALUES
                       (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [
                        rec.run_key, rec.model_id, rec.revision, rec.backend,
                        json.dumps(rec.settings, sort_keys=True, default=str), rec.fingerprint, rec.n, rec.dim,
                        rec.dtype, rec.device, rec.seconds, rec.vector_file, rec.sha256, rec.bytes, __version__,
                        utc_now(),
                    ],
                )
                con.execute("DELETE FROM item_vectors WHERE run_key = ?", [key])
                if items is not None:
                    _insert_index(con, key, items[0], items[1], n=rec.n)
                os.replace(tmp, path)
                fsync_dir(path.parent)  # tests hook this name: the instant between rename and commit
        finally:
            tmp.unlink(missing_ok=True)  # only still there when the row or the rename failed
        if not rec.partial:
            with _saved_lock:
                _saved[0] += 1
        return rec

    @contextlib.contextmanager
    def run_lock(self, key: str, *, what: str = "") -> Iterator[None]:
        """Hold the per-run lock of run ``key`` (``locks/<key>.lock``) while its vectors are looked up and, if not
        cached, computed and stored: a second process (or thread) that needs the same run waits here and then
        reads the cached result instead of computing it again. Held for the whole embedding (minutes), so there is
        no timeout: a lock whose holder dies is released by the system. A no-op on a read-only cache.

        ``what`` names the run in the log line said while waiting (e.g. the candidate's name).
        """
        if self.read_only:
            yield
            return
        self._vector_path(key)  # validates the key
        name = what or key[:12]
        with work_lock(self.root, key, work=f"the embeddings of {name}",
                       waiting=f"{name}: another embedselect process is computing these embeddings in the cache at "
                               f"{self.root}"):
            yield

    def list_runs(self):
        """All cached embedding runs as a pandas DataFrame (newest first); its column ``partial`` is True for a
        chunk of an embedding still under way (:attr:`RunRecord.partial`), which ``cache ls`` does not list."""
        df = self.query_df(
            """SELECT run_key, model_id, revision, backend, fingerprint, n, dim, device, seconds, bytes, created_at,
                      settings FROM embedding_runs ORDER BY created_at DESC"""
        )
        return df.assign(partial=df.settings.map(lambda s: PARTIAL_SETTING in json.loads(s)).astype(bool)).drop(
            columns=["settings"])

    def drop_covered_chunks(self, space: str | None = None) -> int:
        """Remove the partial runs (chunks, :attr:`RunRecord.partial`; of vector space ``space``, or of every space)
        each item of which a whole run of the same space holds, through :meth:`delete_runs` (``cache rm``'s code):
        their rows, index rows and files. Called once a whole run is stored, and by ``cache gc``. Returns how many."""
        with self._read() as con:
            partial = sorted(k for k, s in con.execute("SELECT run_key, settings FROM embedding_runs").fetchall()
                             if PARTIAL_SETTING in json.loads(s))
            if not partial:
                return 0
            marks = ",".join("?" * len(partial))
            covered = [r[0] for r in con.execute(
                f"""SELECT c.run_key FROM item_vectors c LEFT JOIN
                      (SELECT DISTINCT space_key, item_hash FROM item_vectors WHERE run_key NOT IN ({marks})) f
                      ON f.space_key = c.space_key AND f.item_hash = c.item_hash
                    WHERE c.run_key IN ({marks}) {"AND c.space_key = ?" if space is not None else ""}
                    GROUP BY c.run_key HAVING count(*) FILTER (WHERE f.item_hash IS NULL) = 0""",
                [*partial, *partial, *([space] if space is not None else [])]).fetchall()]
        return self.delete_runs(covered)

    def delete_runs(self, keys: list[str], *, only_if_sha256: Mapping[str, str] | None = None) -> int:
        """Delete runs: their rows (committed), then their files, in one critical section under the inter-process
        lock, so that a writer in another process cannot rename a fresh file for one of these keys into place in
        between (it would be deleted while its new row stays). Returns the number of rows deleted.

        ``only_if_sha256``: run key -> checksum; such a run is deleted only while its row still records that
        checksum (a reader discarding a damaged file must not delete a fresh run another process has written since).
        """
        if not keys:
            return 0
        self.require_writable("remove embedding runs")
        marks = ",".join("?" * len(keys))
        with self._critical():
            with self._write() as con:
                rows = con.execute(
                    f"SELECT run_key, vector_file, sha256 FROM embedding_runs WHERE run_key IN ({marks})", list(keys)
                ).fetchall()
                if only_if_sha256 is not None:
                    rows = [r for r in rows if r[0] not in only_if_sha256 or only_if_sha256[r[0]] == r[2]]
                if rows:
                    gone = ",".join("?" * len(rows))
                    con.execute(f"DELETE FROM embedding_runs WHERE run_key IN ({gone})", [r[0] for r in rows])
                    con.execute(f"DELETE FROM item_vectors WHERE run_key IN ({gone})", [r[0] for r in rows])
            for key, rel, _sha in rows:
                path = self.root / rel
                if self._ours(path, key):  # a row never makes the store delete a path it did not name itself
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
        return len(rows)

    def _ours(self, path: Path, key: str | None = None) -> bool:
        """Whether ``path`` is a vector file of this store's own naming (``vectors/<ab>/<run_key>.npy``, or a
        writer's temporary ``.<run_key>.npy.<host>.<pid>.<tid>.tmp``, of run ``key`` when given), a regular file
        in a real shard folder: never a link, never a user's file that happens to sit under ``vectors/``."""
        shard = path.parent
        if shard.parent != self.vectors_dir or not _SHARD_RE.match(shard.name) or shard.is_symlink():
            return False
        m = _VECTOR_RE.match(path.name)
        name_key = (m["key"] or m["tkey"]) if m is not None else ""
        if not name_key or name_key[:2] != shard.name or (key is not None and name_key != key):
            return False
        return not path.is_symlink() and path.is_file()

    def find_runs(self, *, model: str | None = None, fingerprint: str | None = None) -> list[str]:
        """Run keys of the model ``model`` names (:func:`~embedselect.store.model_ids.matching_models`: its id
        exactly, or a glob pattern) and/or of a data fingerprint prefix."""
        sql = "SELECT run_key, model_id FROM embedding_runs WHERE 1=1"
        params: list[Any] = []
        if fingerprint:
            sql += " AND starts_with(fingerprint, ?)"
            params.append(fingerprint)
        with self._read() as con:
            rows = con.execute(sql, params).fetchall()
        if model:
            named = set(matching_models(model, (r[1] for r in rows)))
            rows = [r for r in rows if r[1] in named]
        return [r[0] for r in rows]

    # --- the item index -----------------------------------------------------------------------------
    def stored_items(self, space: str, items: Sequence[str]) -> StoredItems:
        """The stored vectors of ``items`` (item keys, :func:`~embedselect.store.keys.item_key`) in vector space
        ``space`` (:func:`~embedselect.store.keys.space_key`): each is taken from a row of a run's vector file that
        the item index names, read as :meth:`load_vectors` reads it (checksummed; a damaged file is discarded with
        its run and index rows, and its items count as not stored). Runs that hold most of the items are read
        first, so that few files are read. A read-only cache of an older schema (no index) has none stored."""
        n = len(items)
        found = np.zeros(n, dtype=bool)
        if n == 0 or not self._has_index():
            return StoredItems(found, None, [])
        with self._read() as con:
            rows = con.execute(
                """SELECT item_hash, run_key, row_index FROM item_vectors
                   WHERE space_key = ? AND item_hash IN (SELECT unnest(?::VARCHAR[]))""",
                [space, list(dict.fromkeys(items))],
            ).fetchall()
        where: dict[str, dict[str, int]] = {}  # run key -> item key -> row
        for item, run, row in rows:
            where.setdefault(run, {})[item] = int(row)
        positions: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            positions.setdefault(item, []).append(i)
        out: np.ndarray | None = None
        sources: list[str] = []
        for run in sorted(where, key=lambda r: (-len(where[r]), r)):
            wanted = [(item, row) for item, row in where[run].items() if not found[positions[item][0]]]
            if not wanted:
                continue
            arr = self.load_vectors(run, mmap=True)
            if arr is None:  # damaged: discarded with its index rows; its items are embedded again
                continue
            if out is None:
                out = np.zeros((n, arr.shape[1]), dtype=np.float32)
            elif arr.shape[1] != out.shape[1]:
                log.warning("cached run %s has %d dimensions where other runs of its space have %d; not used",
                            run[:12], arr.shape[1], out.shape[1])
                continue
            dest = [i for item, _ in wanted for i in positions[item]]
            src = [row for item, row in wanted for _ in positions[item]]
            order = np.argsort(src, kind="stable")  # read the mapped file front to back
            out[np.asarray(dest)[order]] = arr[np.asarray(src)[order]]
            found[dest] = True
            sources.append(run)
        return StoredItems(found, out, sources)

    def needs_index(self, key: str) -> bool:
        """Whether run ``key`` is stored without item index rows (a run stored before the index existed) on a
        writable cache: then :meth:`index_run` adds them."""
        if self.read_only:
            return False
        with self._read() as con:
            return not con.execute("SELECT count(*) FROM item_vectors WHERE run_key = ?", [key]).fetchone()[0]

    def index_run(self, key: str, space: str, items: Sequence[str]) -> None:
        """Add the item index rows of run ``key`` (its n item keys in row order, in vector space ``space``) when it
        has none: a run stored before the index existed joins it when a run reads it by its run key."""
        with self._write() as con:
            row = con.execute("SELECT n FROM embedding_runs WHERE run_key = ?", [key]).fetchone()
            if row is not None and int(row[0]) == len(items) and not con.execute(
                    "SELECT count(*) FROM item_vectors WHERE run_key = ?", [key]).fetchone()[0]:
                _insert_index(con, key, space, items, n=len(items))

    def _has_index(self) -> bool:
        """Whether the database has the item index table (a read-only cache of an older schema has not)."""
        if not self.read_only:
            return True
        with self._read() as con:
            return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = "
                                    "'item_vectors' AND table_schema = 'main'").fetchone()[0])

    GC_GRACE_SECONDS = 3600
    """Temporary (``.tmp``) vector files younger than this are kept by :meth:`gc` unless their writer is known to be
    gone: a writer in another process (perhaps on another host sharing the cache) may still be writing one."""

    def gc(self) -> int:
        """Remove vector files no row points at: ``.npy`` files left by a run killed between renaming its file and
        committing its row, at once (the rename and the commit are one critical section, so an unreferenced
        ``.npy`` seen under the lock belongs to no running writer), and temporary files of writers that are gone
        (a process of this host that no longer runs) or older than :attr:`GC_GRACE_SECONDS`. The row read and the
        removals are one critical section under the inter-process lock. Returns how many files were removed."""
        self.require_writable("remove files")
        removed = 0
        with self._critical() as con:
            with self._write() as tx:  # index rows of no run (none are written so; a store edited by hand)
                tx.execute("DELETE FROM item_vectors WHERE run_key NOT IN (SELECT run_key FROM embedding_runs)")
            known = {r[0] for r in con.execute("SELECT vector_file FROM embedding_runs").fetchall()}
            for path in self.vectors_dir.glob("*/*"):
                rel = str(path.relative_to(self.root))
                if rel in known or not self._ours(path):  # only the store's own names; never through a link
                    continue
                if path.name.endswith(".tmp"):
                    if _writer_alive(path):
                        continue
                elif path.suffix != ".npy":
                    continue
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
        return removed

    def _tmp_name(self, path: Path) -> Path:
        """The temporary name a writer of this process and thread uses for ``path``: ``.<name>.<host>.<pid>.<tid>.tmp``
        in the same folder (so that :meth:`gc` can tell whether its writer still runs)."""
        return path.with_name(f".{path.name}.{_host_tag()}.{os.getpid()}.{threading.get_ident()}.tmp")


@dataclass(frozen=True)
class StoredItems:
    """What :meth:`VectorStore.stored_items` found: ``found`` bool (n,), True for each item whose vector was read;
    ``vectors`` float32 (n, d) with those rows filled (the others zero), None when none was found; ``runs``: the
    run keys the rows were read from."""

    found: np.ndarray
    vectors: np.ndarray | None
    runs: list[str]


def _insert_index(con: Any, key: str, space: str, items: Sequence[str], *, n: int) -> None:
    """Insert the item index rows of run ``key``: item ``items[i]`` is row ``i`` (an item that occurs twice: its
    first row). Inside the caller's transaction."""
    if len(items) != n:
        raise CacheError(f"the item index of run {key[:12]} names {len(items)} items for {n} rows")
    con.execute(
        """INSERT INTO item_vectors SELECT ?, h, ?, min(r) FROM
           (SELECT unnest(?::VARCHAR[]) AS h, unnest(?::INTEGER[]) AS r) GROUP BY h""",
        [space, key, list(items), list(range(n))],
    )


def _host_tag() -> str:
    """This host's name as it appears in temporary file names (no dots)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _writer_alive(path: Path) -> bool:
    """Whether the writer of the temporary vector file ``path`` (named by :meth:`Store._tmp_name`) may still be
    running: its process on this host still exists, or (a writer on another host, or a name of another form) the
    file is younger than :attr:`Store.GC_GRACE_SECONDS`."""
    parts = path.name.lstrip(".").split(".")
    if len(parts) == 6 and parts[3].isdigit():
        if parts[2] == _host_tag():
            try:
                os.kill(int(parts[3]), 0)
            except ProcessLookupError:
                return False
            except OSError:  # exists, but another user's
                return True
            return True
    try:
        return time.time() - path.stat().st_mtime < VectorStore.GC_GRACE_SECONDS
    except FileNotFoundError:
        return True  # gone already: nothing to remove

