"""Close-match suggestions for a misspelt name (a file, a column, a metric, a metric option, a baseline): the one
rule for which known name a typo is taken for."""

from __future__ import annotations

import difflib
from typing import Iterable


def close_match(word: str, choices: Iterable[str]) -> str | None:
    """The known name in ``choices`` closest to ``word`` (:func:`difflib.get_close_matches`, its default similarity
    of 0.6 or more), or None when none is that close."""
    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return near[0] if near else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'sufficiency'?)"`` for the close match of ``word`` among ``choices``, ``""`` when none is
    close: to append to an error's sentence about ``word``."""
    near = close_match(word, choices)
    return f" (did you mean {near!r}?)" if near is not None else ""
