"""Queries over stored rankings: load one by id, the latest for a dataset, and the previous ranking of the
same dataset and candidate set (for leaderboard history).

Reads only; the ``rankings`` table is written by :meth:`embedselect.store.Store.save_ranking`.
"""

from __future__ import annotations

import json

from embedselect.errors import StoreError
from embedselect.ranking import Ranking
from embedselect.store import Store


class RankingNotFoundError(StoreError):
    """No stored ranking matches the id or dataset fingerprint given."""


def _rows(store: Store, sql: str, params: list) -> list[tuple]:
    with store.read() as con:
        return con.execute(sql, params).fetchall()


def get_ranking(store: Store, ranking_id: str) -> Ranking:
    """The stored ranking with this id, or a unique id prefix (at least 4 characters)."""
    if len(ranking_id) < 4:
        raise RankingNotFoundError(f"ranking id {ranking_id!r} is too short; give at least 4 characters")
    rows = _rows(store, "SELECT ranking_id, result FROM rankings WHERE ranking_id LIKE ? || '%'", [ranking_id])
    exact = [r for r in rows if r[0] == ranking_id]
    rows = exact or rows
    if not rows:
        raise RankingNotFoundError(f"no stored ranking with id {ranking_id!r}; see `embedselect leaderboard --list`")
    if len(rows) > 1:
        raise RankingNotFoundError(f"ranking id prefix {ranking_id!r} is ambiguous ({len(rows)} matches); give more")
    return _load(rows[0][1], rows[0][0])


def _load(result: str, ranking_id: str) -> Ranking:
    r = Ranking.from_dict(json.loads(result))
    r.ranking_id = r.ranking_id or ranking_id
    return r


def latest_ranking(store: Store, fingerprint: str | None = None) -> Ranking:
    """The newest stored ranking (of the dataset whose fingerprint starts with ``fingerprint``, if given)."""
    sql = "SELECT ranking_id, result FROM rankings"
    params: list = []
    if fingerprint:
        sql += " WHERE fingerprint LIKE ? || '%'"
        params.append(fingerprint)
    rows = _rows(store, sql + " ORDER BY created_at DESC, ranking_id DESC LIMIT 1", params)
    if not rows:
        where = f" for dataset {fingerprint!r}" if fingerprint else ""
        raise RankingNotFoundError(f"no stored ranking{where}; run `embedselect rank` first")
    return _load(rows[0][1], rows[0][0])


def list_rankings(store: Store, fingerprint: str | None = None) -> list[dict]:
    """Stored rankings, newest first: id, created_at, fingerprint, metrics, n_candidates."""
    sql = "SELECT ranking_id, CAST(created_at AS VARCHAR), fingerprint, metrics, n_candidates FROM rankings"
    params: list = []
    if fingerprint:
        sql += " WHERE fingerprint LIKE ? || '%'"
        params.append(fingerprint)
    rows = _rows(store, sql + " ORDER BY created_at DESC, ranking_id DESC", params)
    keys = ("ranking_id", "created_at", "fingerprint", "metrics", "n_candidates")
    return [dict(zip(keys, r)) for r in rows]


def _candidate_set(r: Ranking) -> frozenset[str]:
    return frozenset(c.spec or c.name for c in r.candidates)


def previous_ranking(store: Store, ranking: Ranking, *, same_candidates: bool = True) -> Ranking | None:
    """The newest stored ranking of the same dataset (fingerprint) and metrics created before ``ranking``,
    with the same candidate set when ``same_candidates`` (else any overlapping set); None if there is none."""
    fp = ranking.dataset.get("fingerprint")
    if not fp:
        return None
    rows = _rows(
        store,
        # Only rankings stored before this one (when this one is stored; else every other one).
        "SELECT ranking_id, result FROM rankings WHERE fingerprint = ? AND ranking_id <> ? AND created_at <= "
        "COALESCE((SELECT created_at FROM rankings WHERE ranking_id = ?), created_at) "
        "ORDER BY created_at DESC, ranking_id DESC",
        [fp, ranking.ranking_id, ranking.ranking_id],
    )
    mine = _candidate_set(ranking)
    for rid, result in rows:
        other = _load(result, rid)
        if other.metrics != ranking.metrics:
            continue
        if same_candidates and _candidate_set(other) != mine:
            continue
        if not same_candidates and not (_candidate_set(other) & mine):
            continue
        return other
    return None
