"""The cache: one DuckDB database for everything queryable, plus one ``.npy`` file per embedding run.

Layout under the cache root (``--cache-dir`` > ``$EMBEDSELECT_CACHE_DIR`` > the user cache directory)::

    embedselect.duckdb          tables: datasets, models, embedding_runs, item_vectors, failures, metric_results,
                                rankings, pair_cache (+ the hub models tables, see store/hub_models.py)
    vectors/ab/<run_key>.npy    float32 (n, d) embedding matrices, one per run
    locks/<run_key>.lock        per-run lock files: one process computes a run, others wait and read it
    locks/metric-<key>.lock     per-metric-result lock files: the same for a metric's result (store/worklock.py)
    digests/ab/<id>.json        sha256 of big files of local model folders (embedselect/models/candidates/digests.py)
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
   and size and the run's item index rows (``item_vectors``: item content -> row of this file, in the run's vector
   space) are inserted, the file is renamed into place, and the transaction is committed.

A run whose own key is not stored takes the vectors of the items earlier runs of its vector space hold
(:meth:`Store.stored_items`) and embeds only the others (docs/cache.md, "Embedding only what is new").

A crash before the commit leaves at most an orphan file, which is never read (no row points at it) and is
overwritten or swept by :meth:`Store.gc`. ``cache rm`` (:meth:`Store.delete_runs`) and :meth:`Store.gc` read the
rows and remove the files in one critical section too, so neither can delete a file whose row is about to be
committed. A row whose file is missing or fails its checksum is reported, deleted and recomputed:
a half-written entry is never read back as valid.

Read-only caches: a cache root (or database file) this user cannot write, or any cache with
``EMBEDSELECT_CACHE_READONLY=1``, is opened read-only (a shared, pre-filled cache): DuckDB in read-only mode, no lock
file, cached runs and metric results are served, bookkeeping (last-used times, failures, rankings, caches of metric
results) is skipped, and work that must be stored (new embeddings, ``cache rm`` / ``gc``) raises
:class:`~embedselect.errors.CacheReadOnlyError` (exit 6).

Concurrency: every database access happens inside the inter-process file lock, held only for that transaction or
read, so long embedding work never blocks other processes: writes hold it exclusively, reads shared (readers in
several processes at once; see :mod:`embedselect.store.db`). A process that cannot get the lock within
``lock_timeout`` seconds (``$EMBEDSELECT_LOCK_TIMEOUT``, default 120) gets :class:`CacheLockedError`. The schema is
versioned and migrated on open (:mod:`embedselect.store.schema`).

Modules: :mod:`~embedselect.store.keys` (run keys, :class:`RunRecord`, the cache root),
:mod:`~embedselect.store.vectors` (vector files and the protocol above), :mod:`~embedselect.store.records` (data
sets, models, failures, rankings, metric results, pair cache), :mod:`~embedselect.store.queries`,
:mod:`~embedselect.store.db` (connections, locks), :mod:`~embedselect.store.schema` (tables, migrations);
:class:`Store` composes them.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from embedselect.errors import CacheError, CacheReadOnlyError, ConfigError
from embedselect.store.dbfile import is_own_database
from embedselect.store.keys import DB_NAME, RUN_KEY_VERSION, RunRecord, default_cache_dir, item_key, run_key, space_key
from embedselect.store.queries import StoreQueries
from embedselect.store.records import RecordStore
from embedselect.store.schema import SCHEMA_VERSION
from embedselect.store.vectors import VectorStore


class Store(VectorStore, RecordStore, StoreQueries):
    """Handle on one cache root. Cheap to create; opens DuckDB only for each transaction or read (creating or
    migrating the schema on first use, see :mod:`embedselect.store.schema`); connections and locks are
    :mod:`embedselect.store.db`'s, and no SQL leaves the store.

    The public methods, by concern:

    - **Opening and writability**: :meth:`open`; :meth:`require_writable` (raise when a read-only cache must store
      something), :meth:`read_only_error` (that error, without raising), :meth:`can_record` (whether bookkeeping
      can be stored); attributes ``root``, ``db_path``,
      ``vectors_dir``, ``read_only``, ``lock_timeout``.
    - **Embedding runs** (one ``.npy`` file and one row each): :meth:`get_run`, :meth:`load_vectors`,
      :meth:`save_run`, :meth:`run_lock` (one process computes a run key), :meth:`has_run`, :meth:`find_runs`,
      :meth:`list_runs`, :meth:`delete_runs`, :meth:`drop_covered_chunks` (the partial runs of a long embedding
      that whole runs now hold), :meth:`gc`.
    - **The item index** (vectors per item content, reused across data sets): :meth:`stored_items`,
      :meth:`needs_index`, :meth:`index_run`.
    - **Data sets and models seen**: :meth:`record_dataset`, :meth:`record_model`, :meth:`model_rows`.
    - **Failures**: :meth:`failure_rows` (recorded through :func:`embedselect.store.failures.record_failure`, the one
      place that records them).
    - **Rankings**: :meth:`save_ranking`, :meth:`get_ranking`, :meth:`latest_ranking`, :meth:`list_rankings`.
    - **Metric results and the pair cache**: :meth:`get_metric_result`, :meth:`put_metric_result`,
      :meth:`metric_lock` (one process computes a result), :meth:`sweep_locks` (``cache gc``'s lock files),
      :meth:`get_many`, :meth:`put_many`, :meth:`count_pairs`.
    - **Reading by SQL**: :meth:`query_df` (a read-only query, a pandas DataFrame).

    The hub models tables and the nightly history are module functions over a Store
    (:mod:`~embedselect.store.hub_models`, :mod:`~embedselect.store.nightly`). The connection methods (``_write``,
    ``_read``) are the store's own."""

    def __init__(self, root: Path, *, lock_timeout: float | None = None, read_only: bool | None = None) -> None:
        self.root = Path(root)
        _check_root(self.root)
        self.db_path = self.root / DB_NAME
        self.vectors_dir = self.root / "vectors"
        if lock_timeout is None:
            from embedselect._util import env

            lock_timeout = env.lock_timeout()
        self.lock_timeout = _check_lock_timeout(lock_timeout)
        self._init_db()
        self.read_only = _read_only(self.root, self.db_path) if read_only is None else bool(read_only)
        """Opened read-only (see the module docstring): serves what it holds, stores nothing."""
        if self.read_only:
            if not self.db_path.is_file():
                raise CacheReadOnlyError(
                    f"the cache at {self.root} is read-only and holds no database ({DB_NAME}); use a writable "
                    "--cache-dir or EMBEDSELECT_CACHE_DIR"
                )
            return  # no lock file (it cannot be created); readers of a read-only cache need none
        try:
            _claim_root(self.root, self.db_path)
            self.vectors_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cannot create the cache directory {self.root}: {exc}. Choose another with --cache-dir or "
                "EMBEDSELECT_CACHE_DIR."
            ) from exc
        import filelock

        from embedselect._fs.guard import own_file

        self._file_lock = filelock.FileLock(str(own_file(self.root / ".lock", what="the cache's lock file", error=CacheError)))

    @classmethod
    def open(cls, root: str | Path | None = None, *, lock_timeout: float | None = None,
             read_only: bool | None = None) -> "Store":
        """Open (creating if needed) the cache at ``root`` (default: :func:`default_cache_dir`).

        ``read_only``: None (default) opens it read-only when this user cannot write it or
        ``EMBEDSELECT_CACHE_READONLY=1``; True / False force it.

        Raises:
            CacheError: the cache directory cannot be created.
            CacheReadOnlyError: the cache is read-only and has no database.
        """
        root = Path(root).expanduser() if root is not None else default_cache_dir()
        return cls(root, lock_timeout=lock_timeout, read_only=read_only)


def _check_lock_timeout(seconds: float) -> float:
    """``seconds`` as a float when it is a finite number >= 0, else :class:`ConfigError`."""
    import math

    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"lock_timeout must be a finite number of seconds >= 0, got {seconds!r}")
    return float(seconds)


def _check_root(root: Path) -> None:
    """The cache needs a folder of its own: never ``/`` or the home folder (its lock, pid and ``vectors/`` files
    would sit among the user's own)."""
    real = Path(os.path.realpath(os.path.abspath(root.expanduser())))
    if real == Path(real.anchor) or real == Path(os.path.realpath(Path.home())):
        where = "the root folder" if real == Path(real.anchor) else "the home folder"
        raise ConfigError(f"the cache {root} is {where}; the cache needs a folder of its own, e.g. "
                          f"{Path.home() / '.cache' / 'embedselect'}: choose another {_WHERE_TO_CHOOSE}")


_WHERE_TO_CHOOSE = "--cache-dir, EMBEDSELECT_CACHE_DIR or the nightly cache:"
"""Where a user names the cache folder, as the messages about an unusable folder say it."""

CACHE_TAG = "CACHEDIR.TAG"
"""The file that marks a folder as an embedselect cache (the Cache Directory Tagging Specification, so backup tools
skip it too); written first, into a new or empty folder."""
_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# This file is a cache directory tag created by embedselect: this folder is its cache.\n"
             "# For information about cache directory tags, see https://bford.info/cachedir/\n")
_OWN_NAMES = frozenset({".lock", "vectors", "locks", "digests", "nightly", "nightly.lock"})
"""Names the store itself creates in its root besides the tag and the database (a cache made before the tag)."""
_TAG_TMP = re.compile(r"\.CACHEDIR\.TAG\.\d+\.\d+\.tmp")
"""The temporary name of a tag being written (by a process claiming the same new folder at the same moment)."""


def _claim_root(root: Path, db_path: Path) -> None:
    """Make sure the writable cache root is embedselect's own before anything is written there: a new or empty folder
    is tagged (:data:`CACHE_TAG`); a folder with the tag, or with a database of embedselect's schema
    (:func:`~embedselect.store.dbfile.is_own_database`), is a cache already (one made before the tag gets it); any other
    non-empty folder is refused (also one whose ``embedselect.duckdb`` is another program's database), so that the cache's files never go in among a user's (and a night never
    writes its ``nightly.pid`` over theirs). An older cache that never got its database holds only empty lock files and
    the store's own folders: it is claimed too.

    Raises:
        ConfigError: the folder holds files that are not embedselect's.
    """
    tag = root / CACHE_TAG
    if _tag_is_ours(root, tag):
        return
    root.mkdir(parents=True, exist_ok=True)
    own_db = db_path.is_file() and not db_path.is_symlink() and is_own_database(db_path)
    foreign = [] if own_db else [
        (f"{e} (a database without embedselect's schema)" if e == DB_NAME else e) for e in sorted(os.listdir(root))
        if not (e in _OWN_NAMES and _empty_or_own(root / e)) and not _TAG_TMP.fullmatch(e)
        and not (e == CACHE_TAG and _tag_is_ours(root, tag))]  # tagged by another process since the check above
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ConfigError(f"the folder {root} holds files that are not embedselect's ({shown}) and is not an "
                          "embedselect cache; the cache needs a folder of its own: give a new or empty folder as "
                          f"{_WHERE_TO_CHOOSE} (nothing was written there)")
    tmp = root / f".{CACHE_TAG}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.unlink(missing_ok=True)  # a leftover of this very process and thread (never opened through a link)
    try:  # written whole under a temporary name, then linked into place: the tag is never seen half-written
        with open(tmp, "x") as fh:
            fh.write(_TAG_TEXT)
        os.link(tmp, tag)
    except FileExistsError:  # another process or thread claimed the folder at the same moment
        pass
    finally:
        tmp.unlink(missing_ok=True)
    _tag_is_ours(root, tag)  # what won a race must be ours too


def _tag_is_ours(root: Path, tag: Path) -> bool:
    """Whether the folder ``root`` has embedselect's :data:`CACHE_TAG` ``tag`` (the specification's signature line,
    then embedselect's comment); False when it has none.

    Raises:
        ConfigError: the tag is a link or not a plain file, or another program's.
    """
    if tag.is_symlink() or (tag.exists() and not tag.is_file()):
        raise ConfigError(f"the cache folder {root} has a {CACHE_TAG} that is not a plain file; embedselect never writes "
                          f"through a link: remove it or choose another {_WHERE_TO_CHOOSE}")
    if not tag.is_file():
        return False
    head = tag.read_bytes()[:400]
    if head.startswith(_TAG_TEXT.encode()[:43]) and b"embedselect" in head:
        return True
    raise ConfigError(f"{root} is another program's cache ({tag} was not written by embedselect); choose a folder "
                      f"of embedselect's own with {_WHERE_TO_CHOOSE}")


def _empty_or_own(p: Path) -> bool:
    """An entry with one of the store's own names that holds no user data: a folder (not a link; the store's own
    code refuses foreign files inside it) or an empty regular file (a lock file)."""
    if p.is_symlink():
        return False
    return p.is_dir() or (p.is_file() and p.stat().st_size == 0)


def _read_only(root: Path, db_path: Path) -> bool:
    """Whether the cache at ``root`` must be opened read-only: ``EMBEDSELECT_CACHE_READONLY`` is set to 1 / true /
    yes, or the existing root folder or database file is not writable by this user."""
    from embedselect._util import env

    if env.cache_read_only():
        return True
    if root.is_dir() and not os.access(root, os.W_OK | os.X_OK):
        return True
    return db_path.is_file() and not os.access(db_path, os.W_OK)


__all__ = ["Store", "RunRecord", "run_key", "space_key", "item_key", "default_cache_dir", "SCHEMA_VERSION", "DB_NAME",
           "RUN_KEY_VERSION"]
