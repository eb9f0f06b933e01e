"""What a run keeps in the cache only to save work later (the metrics' results and pairs, the ranking) and what the
cache could not keep of it. A write there that the cache refuses (a full disk, a file-size limit:
:class:`~embedselect.errors.CacheError`) does not end the run: the ranking computed is returned and printed, with one
``not-stored`` warning saying what was not kept and why. The vectors are not a saving of this kind: a candidate
whose vectors cannot be stored fails (:mod:`embedselect.pipeline.embedding`)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from embedselect.errors import CacheError
from embedselect.ranking.result import RankingWarning

RANKING = "this ranking (leaderboard and history will not show it)"
"""What :func:`~embedselect.pipeline.conclude.rank_embedded` calls the ranking when the cache cannot store it."""


class Savings:
    """The writes of one run that are only a saving, each tried once; ``lost`` names those the cache refused, in
    order, and ``reason`` is the first refusal."""

    def __init__(self) -> None:
        self.lost: list[str] = []
        self.reason: CacheError | None = None

    def keep(self, what: str, write: Callable[[], Any]) -> None:
        """Call ``write``; a :class:`CacheError` it raises is noted under ``what`` (e.g. "the result of metric X")
        instead of raised."""
        try:
            write()
        except CacheError as exc:
            if what not in self.lost:
                self.lost.append(what)
            self.reason = self.reason or exc

    def pairs(self, cache: Any, metric: str) -> Any:
        """``cache`` (a :class:`~embedselect.metrics.base.PairCache`, or None) as metric ``metric`` should write to
        it: its writes go through :meth:`keep`."""
        return None if cache is None else _KeptPairs(cache, self, f"the pair results of metric {metric}")

    def warning(self) -> RankingWarning | None:
        """The one ``not-stored`` warning of what the cache could not keep, or None when it kept everything."""
        if self.reason is None:
            return None
        if self.lost == [RANKING]:
            return RankingWarning("not-stored", f"this ranking is not stored (leaderboard and history will not show "
                                  f"it): {self.reason}")
        saved = [w for w in self.lost if w != RANKING]
        again = f" (a later run computes {'it' if len(saved) == 1 else 'them'} again)"
        also = f", and {RANKING}" if RANKING in self.lost else ""
        return RankingWarning("not-stored", f"not stored in the cache: {', '.join(saved)}{again}{also}: "
                              f"{self.reason}")


class _KeptPairs:
    """A pair cache whose writes are a saving (:meth:`Savings.keep`); its reads are the cache's own."""

    def __init__(self, cache: Any, savings: Savings, what: str) -> None:
        self._cache, self._savings, self._what = cache, savings, what

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        return self._cache.get_many(keys)

    def put_many(self, items: Mapping[str, dict[str, Any]]) -> None:
        self._savings.keep(self._what, lambda: self._cache.put_many(items))


__all__ = ["RANKING", "Savings"]
