"""The cache: one DuckDB database for everything queryable, plus one ``.npy`` file per embedding run.

Layout under the cache root (``--cache-dir`` > ``$EMBEDSELECT_CACHE_DIR`` > the user cache directory)::

    embedselect.duckdb          tables: datasets, models, embedding_runs, failures, metric_results,
                                rankings, pair_cache (+ the hub catalogue tables, see store/catalog.py)
    vectors/ab/<run_key>.npy    float32 (n, d) embedding matrices, one per run
    locks/<run_key>.lock        per-run lock files: one process computes a run, others wait and read it
    digests/ab/<id>.json        sha256 of big files of local model folders (embedselect/candidates/digests.py)
    .lock                       inter-process lock file

Why ``.npy`` files beside DuckDB, rather than DuckDB arrays or FAISS indexes: the vectors are only ever read
whole (every metric needs the full n×d matrix), never searched; ``.npy`` is that matrix with a 128-byte header,
memory-mappable, readable by numpy/torch/FAISS (``IndexFlat.add(np.load(...))``) without embedselect, and can be
written atomically with ``os.replace``. DuckDB arrays would put 100–300 MB per run into a single-writer
database file that does not shrink when runs are removed, and every cache read would be a query. FAISS flat index
files are the same bytes as ``.npy`` with a heavier dependency and no memory-mapping from numpy.

Consistency protocol (crash-safe at any point, tested with ``kill -9``):

1. the vector file is written to a temporary name in the same folder, fsync'd and hashed (outside the lock);
2. then, in one critical section under the inter-process lock, the ``embedding_runs`` row with the file's sha256
   and size is inserted, the file is renamed into place, and the transaction is committed.

A crash before the commit leaves at most an orphan file, which is never read (no row points at it) and is
overwritten or swept by :meth:`Store.gc`. ``cache rm`` (:meth:`Store.delete_runs`) and :meth:`Store.gc` read the
rows and remove the files in one critical section too, so neither can delete a file whose row is about to be
committed. A row whose file is missing or fails its checksum is reported, deleted and recomputed:
a half-written entry is never read back as valid.

Read-only caches: a cache root (or database file) this user cannot write, or any cache with
``EMBEDSELECT_CACHE_READONLY=1``, is opened read-only (a shared, pre-filled cache): DuckDB in read-only mode, no lock
file, cached runs and metric results are served, bookkeeping (last-used times, failures, rankings, caches of metric
results) is skipped, and work that must be stored (new embeddings, ``cache rm`` / ``gc``) raises
:class:`~embedselect.errors.StoreReadOnlyError` (exit 6).

Concurrency: every database access happens inside the inter-process file lock, held only for that transaction or
read, so long embedding work never blocks other processes: writes hold it exclusively, reads shared (readers in
several processes at once; see :mod:`embedselect.store.db`). A process that cannot get the lock within
``lock_timeout`` seconds (``$EMBEDSELECT_LOCK_TIMEOUT``, default 120) gets :class:`StoreLockedError`. The schema is
versioned and migrated on open (:mod:`embedselect.store.schema`).
"""

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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from embedselect.arrays import check_embeddings
from embedselect.errors import CacheCorruptError, ConfigError, StoreError, StoreReadOnlyError
from embedselect.store.db import Database
from embedselect.store.queries import StoreQueries
from embedselect.store.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)

DB_NAME = "embedselect.duckdb"
RUN_KEY_VERSION = 1
"""Part of every run key: bump it only to invalidate every cached embedding (not with the database schema)."""
_RUN_KEY_RE = re.compile(r"^[0-9a-f]{64}$")
_IN_CHUNK = 1000
"""Keys per query of :meth:`Store.get_many` (a bounded ``IN`` list)."""


def default_cache_dir() -> Path:
    """The cache root: ``$EMBEDSELECT_CACHE_DIR`` if set, else the platform's user cache directory."""
    env = os.environ.get("EMBEDSELECT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("embedselect"))


def _now() -> datetime:
    return datetime.now(timezone.utc)


def run_key(
    *, model_id: str, revision: str, backend: str, options: Mapping[str, Any], fingerprint: str, precision: str
) -> str:
    """Content key of an embedding run: sha256 over everything that changes the vectors.

    ``options`` are the user-chosen backend options (pooling, max_length, dim, ...), ``precision`` is "fp32"
    or "fp16". Device is *not* part of the key for fp32 runs (CPU and GPU fp32 vectors agree to ~1e-6). A local
    folder (``model_id`` ``"local:<path>"``) is keyed by its content (``revision``), not its path: a copy shares it.
    """
    payload = json.dumps(
        {
            "v": RUN_KEY_VERSION,
            "model_id": "local" if model_id.startswith("local:") else model_id,
            "revision": revision,
            "backend": backend,
            "options": dict(sorted((str(k), options[k]) for k in options)),
            "fingerprint": fingerprint,
            "precision": precision,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class RunRecord:
    """One row of ``embedding_runs``."""

    run_key: str
    model_id: str
    revision: str
    backend: str
    settings: dict[str, Any]
    fingerprint: str
    n: int
    dim: int
    dtype: str
    device: str | None
    seconds: float | None
    vector_file: str
    sha256: str
    bytes: int


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class Store(Database, StoreQueries):
    """Handle on one cache root. Cheap to create; opens DuckDB only inside :meth:`read` / :meth:`write`
    (creating or migrating the schema on first use, see :mod:`embedselect.store.schema`); connections and locks are
    :mod:`embedselect.store.db`'s."""

    def __init__(self, root: Path, *, lock_timeout: float | None = None, read_only: bool | None = None) -> None:
        self.root = Path(root)
        self.db_path = self.root / DB_NAME
        self.vectors_dir = self.root / "vectors"
        if lock_timeout is None:
            lock_timeout = float(os.environ.get("EMBEDSELECT_LOCK_TIMEOUT", "120"))
        self.lock_timeout = lock_timeout
        self._init_db()
        self.read_only = _read_only(self.root, self.db_path) if read_only is None else bool(read_only)
        """Opened read-only (see the module docstring): serves what it holds, stores nothing."""
        if self.read_only:
            if not self.db_path.is_file():
                raise StoreReadOnlyError(
                    f"the cache at {self.root} is read-only and holds no database ({DB_NAME}); use a writable "
                    "--cache-dir or EMBEDSELECT_CACHE_DIR"
                )
            return  # no lock file (it cannot be created); readers of a read-only cache need none
        try:
            self.vectors_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the cache directory {self.root}: {exc}. Choose another with --cache-dir or "
                "EMBEDSELECT_CACHE_DIR."
            ) from exc
        import filelock

        self._file_lock = filelock.FileLock(str(self.root / ".lock"))

    @classmethod
    def open(cls, root: str | Path | None = None, *, lock_timeout: float | None = None,
             read_only: bool | None = None) -> "Store":
        """Open (creating if needed) the cache at ``root`` (default: :func:`default_cache_dir`).

        ``read_only``: None (default) opens it read-only when this user cannot write it or
        ``EMBEDSELECT_CACHE_READONLY=1``; True / False force it.

        Raises:
            StoreError: the cache directory cannot be created.
            StoreReadOnlyError: the cache is read-only and has no database.
        """
        root = Path(root).expanduser() if root is not None else default_cache_dir()
        return cls(root, lock_timeout=lock_timeout, read_only=read_only)

    # --- datasets and models ----------------------------------------------------------------------
    def record_dataset(self, *, fingerprint: str, modality: str, n_items: int, source: str, summary: dict) -> None:
        if not self.can_record("the data set"):
            return
        now = _now()
        with self.write() as con:
            con.execute(
                """INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (fingerprint) DO UPDATE SET last_used = excluded.last_used""",
                [fingerprint, modality, n_items, source, json.dumps(summary, default=str), now, now],
            )

    def record_model(
        self, *, model_id: str, revision: str, backend: str, modality: str, spec: str, local_dir: str | None
    ) -> None:
        if not self.can_record("the model"):
            return
        now = _now()
        with self.write() as con:
            con.execute(
                """INSERT INTO models VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (model_id, revision, backend) DO UPDATE SET last_used = excluded.last_used""",
                [model_id, revision, backend, modality, spec, local_dir, now, now],
            )

    def record_failure(
        self,
        *,
        spec: str,
        stage: str,
        error_type: str,
        message: str,
        model_id: str | None = None,
        revision: str | None = None,
        fingerprint: str | None = None,
    ) -> None:
        """Record why a candidate failed. ``message`` must already be free of secrets.

        Best effort: when the record cannot be written (a full disk, a cache that went away), a warning says so
        and the run goes on; the failure itself is still in the result.
        """
        if not self.can_record("the failure"):
            return
        import duckdb

        try:
            with self.write() as con:
                con.execute(
                    "INSERT INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [_now(), spec, model_id, revision, stage, error_type, message, fingerprint],
                )
        except (OSError, duckdb.Error, StoreError) as exc:
            log.warning("could not record the failure of %s in the cache at %s (%s); it is only in this result",
                        spec, self.root, exc)

    # --- embedding runs ---------------------------------------------------------------------------
    def _vector_path(self, key: str) -> Path:
        if not _RUN_KEY_RE.match(key):
            raise StoreError(f"invalid run key {key!r}")
        return self.vectors_dir / key[:2] / f"{key}.npy"

    def get_run(self, key: str) -> RunRecord | None:
        """The run's record, or None if it is not cached."""
        with self.read() as con:
            row = con.execute(
                """SELECT run_key, model_id, revision, backend, settings, fingerprint, n, dim, dtype, device,
                          seconds, vector_file, sha256, bytes FROM embedding_runs WHERE run_key = ?""",
                [key],
            ).fetchone()
        if row is None:
            return None
        key_, model_id, revision, backend, settings, fp, n, dim, dtype, device, seconds, vfile, sha, size = row
        return RunRecord(key_, model_id, revision, backend, json.loads(settings), fp, n, dim, dtype, device, seconds,
                         vfile, sha, size)  # fmt: skip

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
                                     error=StoreError)  # fmt: skip
                    if arr.dtype != np.float32:
                        raise StoreError(f"the file holds {arr.dtype}, not float32")
                except StoreError as exc:
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
    ) -> RunRecord:
        """Durably store an embedding matrix (float32, shape (n, d)) and its run record.

        The file is fully written and fsync'd before the row that makes it visible is committed.
        """
        from embedselect.version import __version__

        self.require_writable(f"store the embeddings of {model_id}")
        vectors = np.ascontiguousarray(check_embeddings(
            vectors, what=f"the embeddings of {model_id} (not cached)", min_rows=1, error=StoreError, hint=""))
        path = self._vector_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp_name(path)
        try:
            with open(tmp, "wb") as f:
                np.save(f, vectors, allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:  # a full disk, a quota: no partial file is left behind, nothing stored is touched
            tmp.unlink(missing_ok=True)
            raise StoreError(
                f"could not write the embeddings of {model_id} to the cache at {self.root}: {exc.strerror or exc}; "
                "free disk space or choose another cache (--cache-dir / EMBEDSELECT_CACHE_DIR)"
            ) from exc
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
            with self.write() as con:
                con.execute(
                    """INSERT OR REPLACE INTO embedding_runs VALUES
                       (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [
                        rec.run_key, rec.model_id, rec.revision, rec.backend,
                        json.dumps(rec.settings, sort_keys=True, default=str), rec.fingerprint, rec.n, rec.dim,
                        rec.dtype, rec.device, rec.seconds, rec.vector_file, rec.sha256, rec.bytes, __version__,
                        _now(),
                    ],
                )  # fmt: skip
                os.replace(tmp, path)
                _fsync_dir(path.parent)
        finally:
            tmp.unlink(missing_ok=True)  # only still there when the row or the rename failed
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
        import filelock

        self._vector_path(key)  # validates the key
        locks = self.root / "locks"
        locks.mkdir(exist_ok=True)
        lock = filelock.FileLock(str(locks / f"{key}.lock"))
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            log.warning("%s: another embedselect process is computing these embeddings in the cache at %s; waiting "
                        "for it, then reading its result", what or key[:12], self.root)  # fmt: skip
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def list_runs(self):
        """All cached embedding runs as a pandas DataFrame (newest first)."""
        return self.query_df(
            """SELECT run_key, model_id, revision, backend, fingerprint, n, dim, device, seconds, bytes, created_at
               FROM embedding_runs ORDER BY created_at DESC"""
        )

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
            with self.write() as con:
                rows = con.execute(
                    f"SELECT run_key, vector_file, sha256 FROM embedding_runs WHERE run_key IN ({marks})", list(keys)
                ).fetchall()
                if only_if_sha256 is not None:
                    rows = [r for r in rows if r[0] not in only_if_sha256 or only_if_sha256[r[0]] == r[2]]
                if rows:
                    con.execute(f"DELETE FROM embedding_runs WHERE run_key IN ({','.join('?' * len(rows))})",
                                [r[0] for r in rows])  # fmt: skip
            for _, rel, _sha in rows:
                with contextlib.suppress(FileNotFoundError):
                    (self.root / rel).unlink()
        return len(rows)

    def find_runs(self, *, model: str | None = None, fingerprint: str | None = None) -> list[str]:
        """Run keys matching a model id (substring, case-insensitive) and/or a data fingerprint prefix."""
        sql = "SELECT run_key FROM embedding_runs WHERE 1=1"
        params: list[Any] = []
        if model:
            sql += " AND strpos(lower(model_id), lower(?)) > 0"
            params.append(model)
        if fingerprint:
            sql += " AND starts_with(fingerprint, ?)"
            params.append(fingerprint)
        with self.read() as con:
            return [r[0] for r in con.execute(sql, params).fetchall()]

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
            known = {r[0] for r in con.execute("SELECT vector_file FROM embedding_runs").fetchall()}
            for path in self.vectors_dir.glob("*/*"):
                rel = str(path.relative_to(self.root))
                if rel in known:
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

    # --- rankings ---------------------------------------------------------------------------------
    def save_ranking(self, ranking_id: str, ranking_json: dict[str, Any], metric_rows: list[dict[str, Any]]) -> None:
        """Store a ranking (its full JSON) and its per-candidate metric rows, in one transaction."""
        if not self.can_record("the ranking"):
            return
        now = _now()
        with self.write() as con:
            con.execute(
                "INSERT OR REPLACE INTO rankings VALUES (?, ?, ?, ?, ?, ?)",
                [
                    ranking_id,
                    now,
                    ranking_json["dataset"]["fingerprint"],
                    ",".join(ranking_json["metrics"]),
                    len(ranking_json["candidates"]),
                    json.dumps(ranking_json, default=str),
                ],
            )
            con.execute("DELETE FROM metric_results WHERE ranking_id = ?", [ranking_id])
            if metric_rows:
                con.executemany(
                    "INSERT INTO metric_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [[
                        ranking_id, r["metric"], r["candidate"], r.get("model_id"), r.get("revision"),
                        r.get("run_key"), r.get("score"), r.get("rank"), json.dumps(r.get("columns", {})), now,
                    ] for r in metric_rows],
                )  # fmt: skip

    def list_rankings(self, *, fingerprint: str | None = None, limit: int | None = None):
        """Stored rankings, newest first: DataFrame with ranking_id, created_at, fingerprint, metrics,
        n_candidates. ``fingerprint`` may be a prefix of the data fingerprint."""
        sql = "SELECT ranking_id, created_at, fingerprint, metrics, n_candidates FROM rankings"
        params: list[Any] = []
        if fingerprint:
            sql += " WHERE starts_with(fingerprint, ?)"
            params.append(fingerprint)
        sql += " ORDER BY created_at DESC, ranking_id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return self.query_df(sql, params)

    def get_ranking(self, ranking_id: str) -> dict[str, Any] | None:
        """The stored JSON of ranking ``ranking_id`` (a unique prefix is enough), or None."""
        with self.read() as con:
            rows = con.execute(
                "SELECT ranking_id, result FROM rankings WHERE starts_with(ranking_id, ?) LIMIT 2", [ranking_id]
            ).fetchall()
        if len(rows) > 1:
            raise ConfigError(f"ranking id {ranking_id!r} is ambiguous: give more characters of it")
        return json.loads(rows[0][1]) if rows else None

    # --- whole metric results, keyed by the metric, its options and the runs it read ---------------
    def get_metric_result(self, key: str) -> dict[str, Any] | None:
        with self.read() as con:
            row = con.execute("SELECT value FROM metric_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def put_metric_result(self, key: str, metric: str, value: dict[str, Any]) -> None:
        if not self.can_record("the metric result"):
            return
        with self.write() as con:
            con.execute(
                "INSERT OR REPLACE INTO metric_cache VALUES (?, ?, ?, ?)",
                [key, metric, json.dumps(value, default=str), _now()],
            )

    # --- pair cache (PairCache protocol of embedselect.metrics.base) -------------------------------
    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Cached pair results of ``keys`` (the ones not cached are absent), read in chunks of :data:`_IN_CHUNK`
        keys so that no query binds an unbounded list."""
        if not keys:
            return {}
        uniq = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        with self.read() as con:
            for i in range(0, len(uniq), _IN_CHUNK):
                part = uniq[i:i + _IN_CHUNK]
                rows = con.execute(
                    f"SELECT key, value FROM pair_cache WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                out.update((k, json.loads(v)) for k, v in rows)
        return out

    def put_many(self, items: Mapping[str, dict[str, Any]]) -> None:
        """Store pair results, all in one transaction and one batched statement."""
        if not self.can_record("the pair results"):
            return
        if not items:
            return
        now = _now()
        with self.write() as con:
            con.executemany("INSERT OR REPLACE INTO pair_cache VALUES (?, ?, ?)",
                            [[k, json.dumps(v), now] for k, v in items.items()])  # fmt: skip


def _read_only(root: Path, db_path: Path) -> bool:
    """Whether the cache at ``root`` must be opened read-only: ``EMBEDSELECT_CACHE_READONLY`` is set to 1 / true /
    yes, or the existing root folder or database file is not writable by this user."""
    if os.environ.get("EMBEDSELECT_CACHE_READONLY", "").strip().lower() in ("1", "true", "yes"):
        return True
    if root.is_dir() and not os.access(root, os.W_OK | os.X_OK):
        return True
    return db_path.is_file() and not os.access(db_path, os.W_OK)


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
        return time.time() - path.stat().st_mtime < Store.GC_GRACE_SECONDS
    except FileNotFoundError:
        return True  # gone already: nothing to remove


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


__all__ = ["Store", "RunRecord", "run_key", "default_cache_dir", "CacheCorruptError", "SCHEMA_VERSION"]
