"""Read-only questions other layers ask the store (pairs counted, failures recorded, the latest ranking of some
data), so that no SQL on the store's tables lives outside the store. Mixed into :class:`~embedselect.store.Store`."""

from __future__ import annotations

import json
from typing import Any

from embedselect._util.kinds import PAIR_KEY_PREFIX


class StoreQueries:
    """Queries on the tables of :class:`~embedselect.store.Store` (needs its ``read()``)."""

    def count_pairs(self) -> int:
        """How many information-sufficiency pairs (directed, keys starting with
        :data:`~embedselect._util.kinds.PAIR_KEY_PREFIX`) the pair cache holds."""
        with self._read() as con:  # type: ignore[attr-defined]
            row = con.execute("SELECT count(*) FROM pair_cache WHERE starts_with(key, ?)", [PAIR_KEY_PREFIX]).fetchone()
        return int(row[0]) if row else 0

    def failure_rows(self) -> list[dict[str, Any]]:
        """Every recorded failure, oldest first: dicts with ``failed_at, spec, model_id, revision, stage,
        error_type, message, fingerprint`` (messages are already token-free)."""
        with self._read() as con:  # type: ignore[attr-defined]
            cur = con.execute(
                "SELECT failed_at, spec, model_id, revision, stage, error_type, message, fingerprint FROM failures "
                "ORDER BY failed_at"
            )
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def has_run(self, model_id: str, revision: str, fingerprint: str) -> bool:
        """Whether an embedding run of this model at this revision on the data ``fingerprint`` is recorded."""
        with self._read() as con:  # type: ignore[attr-defined]
            row = con.execute(
                "SELECT count(*) FROM embedding_runs WHERE model_id = ? AND revision = ? AND fingerprint = ?",
                [model_id, revision, fingerprint],
            ).fetchone()
        return bool(row and row[0])

    def model_rows(self) -> list[dict[str, Any]]:
        """Every recorded model: dicts with ``model_id, revision, backend, modality, spec``."""
        with self._read() as con:  # type: ignore[attr-defined]
            cur = con.execute("SELECT model_id, revision, backend, modality, spec FROM models")
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def latest_ranking(self, fingerprint: str) -> dict[str, Any] | None:
        """The JSON of the newest ranking stored for the data ``fingerprint`` (exact), or None."""
        with self._read() as con:  # type: ignore[attr-defined]
            row = con.execute(
                "SELECT result FROM rankings WHERE fingerprint = ? ORDER BY created_at DESC LIMIT 1", [fingerprint]
            ).fetchone()
        return json.loads(row[0]) if row else None
