"""What a run keeps in the cache only to save work later (the metrics' results and pairs, the ranking) and what the
cache could not keep of it. A write there that the cache refuses (a full disk, a file-size limit:
:class:`~embedselect.errors.CacheError`) does not end the run: the ranking computed is returned and printed, with one
``not-stored`` warning saying what was not kept and why. Pair results the cache refused are carried in memory for the
rest of the run (:attr:`Savings.carried`): a metric that reads them after (the nightly job's pairs estimated on Ray
workers, nn_agreement after the reference-point check) does not compute them again. The vectors are not a saving of this kind: a candidate
whose vectors cannot be stored fails (:mod:`embedselect.pipeline.embedding`)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from embedselect.errors import CacheError
from embedselect.ranking.result import RankingWarning

RANKING = "this ranking (leaderboard and history will not show it)"
"""What :func:`~embedselect.pipeline.conclude.rank_embedded` calls the ranking when the cache cannot store it."""


class Savings:
    """The writes of one run that are only a saving, each tried once; ``lost`` names those the cache refused, in
    order, and ``reason`` is the first refusal; ``carried`` holds the pair results the cache refused (key -> value),
    which the run's pair caches (:meth:`pairs`) still read."""

    def __init__(self) -> None:
        self.lost: list[str] = []
        self.reason: CacheError | None = None
        self.carried: dict[str, dict[str, Any]] = {}

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
        """``cache`` (a :class:`~embedselect.metrics.base.PairCache`, or None) as metric ``metric`` (or whoever
        computes its pairs for it) should use it: its writes go through :meth:`keep`, and what the cache refused is
        kept in :attr:`carried`, which its reads include."""
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
    """A pair cache whose writes are a saving (:meth:`Savings.keep`); it reads the cache's own values and those the
    cache refused in this run (:attr:`Savings.carried`)."""

    def __init__(self, cache: Any, savings: Savings, what: str) -> None:
        self._cache, self._savings, self._what = cache, savings, what

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        carried = self._savings.carried
        got = self._cache.get_many([k for k in keys if k not in carried])
        return {**got, **{k: carried[k] for k in keys if k in carried}}

    @property
    def carried(self) -> Mapping[str, dict[str, Any]]:
        """The pair results the cache refused in this run, held in memory (:attr:`Savings.carried`)."""
        return self._savings.carried

    def put_many(self, items: Mapping[str, dict[str, Any]]) -> None:
        def write() -> None:
            try:
                self._cache.put_many(items)
            except CacheError:
                self._savings.carried.update({k: dict(v) for k, v in items.items()})
                raise

        self._savings.keep(self._what, write)


__all__ = ["RANKING", "Savings"]
