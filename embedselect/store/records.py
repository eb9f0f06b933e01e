"""Cache rows other than embedding runs: data sets, models, failures, rankings, metric results, the pair cache."""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any, Iterator, Mapping

from embedselect.errors import ConfigError, CacheError, cache_error_names
from embedselect.store.db import Database
from embedselect.store.keys import utc_now
from embedselect.store.worklock import sweep_locks, work_lock

log = logging.getLogger("embedselect.store")  # the store's logger, as before the split

_IN_CHUNK = 1000
"""Keys per query of :meth:`Store.get_many` (a bounded ``IN`` list)."""


class RecordStore(Database):
    """The bookkeeping half of :class:`embedselect.store.Store` (it inherits this): everything but vector files."""

    # --- datasets and models ----------------------------------------------------------------------
    def record_dataset(self, *, fingerprint: str, modality: str, n_items: int, source: str, summary: dict) -> None:
        if not self.can_record("the data set"):
            return
        now = utc_now()
        with self._write() as con:
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
        now = utc_now()
        with self._write() as con:
            con.execute(
                """INSERT INTO models VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (model_id, revision, backend) DO UPDATE SET last_used = excluded.last_used""",
                [model_id, revision, backend, modality, spec, local_dir, now, now],
            )

    def _record_failure(
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
        and the run goes on; the failure itself is still in the result. When the candidate itself failed because
        the cache refused a write, the log line is INFO: the refusal is already said.
        """
        if not self.can_record("the failure"):
            return
        import duckdb

        try:
            with self._write() as con:
                con.execute(
                    "INSERT INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [utc_now(), spec, model_id, revision, stage, error_type, message, fingerprint],
                )
        except (OSError, duckdb.Error, CacheError) as exc:
            # a candidate that failed because the cache refused a write: that refusal is already said (its row, or
            # the run's one CacheError), so this is for --verbose; otherwise it is news (a full disk beside a model's
            # own failure, which a night would plan again)
            level = logging.INFO if error_type in cache_error_names() else logging.WARNING
            log.log(level, "could not record the failure of %s in the cache at %s (%s); it is only in this result",
                    spec, self.root, exc)

    # --- rankings ---------------------------------------------------------------------------------
    def save_ranking(self, ranking_id: str, ranking_json: dict[str, Any], metric_rows: list[dict[str, Any]]) -> None:
        """Store a ranking (its full JSON) and its per-candidate metric rows, in one transaction."""
        if not self.can_record("the ranking"):
            return
        now = utc_now()
        with self._write() as con:
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
                )

    def list_rankings(self, *, fingerprint: str | None = None, limit: int | None = None):
        """Stored rankings, newest first: DataFrame with ranking_id, created_at, fingerprint, metrics,
        n_candidates, source (the data's path), first (the first row's name) and decided. ``fingerprint`` may be a
        prefix of the data fingerprint."""
        sql = ("SELECT ranking_id, created_at, fingerprint, metrics, n_candidates, "
               "json_extract_string(result, '$.dataset.source') AS source, "
               "json_extract_string(result, '$.candidates[0].name') AS first, "
               "json_extract_string(result, '$.decided') = 'true' AS decided FROM rankings")
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
        with self._read() as con:
            rows = con.execute(
                "SELECT ranking_id, result FROM rankings WHERE starts_with(ranking_id, ?) LIMIT 2", [ranking_id]
            ).fetchall()
        if len(rows) > 1:
            raise ConfigError(f"ranking id {ranking_id!r} is ambiguous: give more characters of it")
        return json.loads(rows[0][1]) if rows else None

    # --- whole metric results, keyed by the metric, its options and the runs it read ---------------
    def get_metric_result(self, key: str) -> dict[str, Any] | None:
        with self._read() as con:
            row = con.execute("SELECT value FROM metric_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    @contextlib.contextmanager
    def metric_lock(self, key: str, metric: str) -> Iterator[None]:
        """Hold the lock of metric result ``key`` (``locks/metric-<key>.lock``) while it is looked up and, if not
        cached, computed and stored: a second process (or thread) that needs the same result (the same metric,
        options and runs) waits here, then reads it instead of computing it again. The result is only a saving, so a
        lock file the cache cannot create (a read-only folder, a full disk) does not stop the metric: the block runs
        without the lock. A no-op on a read-only cache."""
        with contextlib.ExitStack() as held:
            if not self.read_only:
                try:
                    held.enter_context(work_lock(
                        self.root, f"metric-{key}", work=f"the result of metric {metric}",
                        waiting=f"metric {metric}: another embedselect process is computing this result for the same "
                                f"candidates in the cache at {self.root}"))
                except CacheError as exc:
                    log.info("metric %s: computed without its lock: %s", metric, exc)
            yield

    def sweep_locks(self) -> int:
        """Remove the per-work lock files (runs' and metric results', ``locks/``) that no process holds, and none the
        tool did not make (:func:`~embedselect.store.worklock.sweep_locks`); returns how many. ``cache gc`` calls it.

        Raises:
            CacheReadOnlyError: the cache is read-only.
        """
        self.require_writable("remove files")
        return sweep_locks(self.root)

    def put_metric_result(self, key: str, metric: str, value: dict[str, Any]) -> None:
        if not self.can_record("the metric result"):
            return
        with self._write() as con:
            con.execute(
                "INSERT OR REPLACE INTO metric_cache VALUES (?, ?, ?, ?)",
                [key, metric, json.dumps(value, default=str), utc_now()],
            )

    # --- pair cache (PairCache protocol of embedselect.metrics.base) -------------------------------
    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Cached pair results of ``keys`` (the ones not cached are absent), read in chunks of :data:`_IN_CHUNK`
        keys so that no query binds an unbounded list."""
        if not keys:
            return {}
        uniq = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        with self._read() as con:
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
        now = utc_now()
        with self._write() as con:
            con.executemany("INSERT OR REPLACE INTO pair_cache VALUES (?, ?, ?)",
                            [[k, json.dumps(v), now] for k, v in items.items()])
