"""Typed errors. Every error embedselect raises on purpose derives from :class:`EmbedselectError`.

Each message says what went wrong *and what to do about it*. The CLI maps the classes to exit codes
(:data:`EXIT_CODES`) so that a pipeline can act on them.
"""

from __future__ import annotations

from typing import Any

# The one table of CLI exit codes: README.md's "Exit codes" line and each error class's ``exit_code`` come from here
# (tests/test_exit_codes.py checks both).
EXIT_CODES: dict[str, int] = {
    "ok": 0,
    "error": 1,
    "usage": 2,
    "data": 3,
    "candidate": 4,
    "hub": 5,
    "cache": 6,
    "metric": 7,
    "partial": 8,  # ranking produced, but some candidates failed (`rank --strict`)
    "locked": 9,  # `nightly`: another run holds the lock
    "empty": 10,  # `nightly`: the night produced nothing
    "fail_on": 11,  # `rank --fail-on CODES`: a named condition holds (the ranking was still written)
    "degraded": 12,  # `nightly`: the night ranked and published, but a part of it failed (the crawl)
    "interrupted": 130,  # Ctrl-C: 128 + SIGINT
    "terminated": 143,  # SIGTERM (a scheduler, `kill`, a container stopping): 128 + SIGTERM
    "broken_pipe": 141,  # stdout was closed before the output was written (`... | head -1`): 128 + SIGPIPE, quietly
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the CLI's handler where the command is: a scheduler, ``kill`` or a stopping container ends
    a command the way Ctrl-C does, so what a command keeps on Ctrl-C is kept (an embedding's chunk, the answers
    given, locks released) before it exits with ``EXIT_CODES["terminated"]``. Without it SIGTERM ended the process
    at once, as SIGKILL does. The Python API installs no handler."""


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """An error of ``cls`` with ``args`` and the attributes ``state``. A class whose ``__init__`` needs keyword
    arguments (``TooFewItemsError``, ``UnsafeModelError``) is made without calling it; their values are in
    ``state``."""
    try:
        exc = cls(*args)
    except TypeError:  # required keyword-only arguments: not called
        exc = BaseException.__new__(cls, *args)
        exc.args = args
    exc.__dict__.update(state)
    return exc


class EmbedselectError(Exception):
    """Base class of all embedselect errors.

    Every one pickles with its message and its attributes (``TooFewItemsError.needed``, ``HubError.status_code``,
    ...): the Ray executor sends errors from its workers to the driver.
    """

    exit_code: int = EXIT_CODES["error"]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


# --- input data -------------------------------------------------------------------------------
class DataError(EmbedselectError, ValueError):
    """The reference data cannot be used as given."""

    exit_code = EXIT_CODES["data"]


class DataFileNotFoundError(DataError, FileNotFoundError):
    """The data file or folder does not exist."""


class ColumnNotFoundError(DataError, KeyError):
    """The requested column is not in the table."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EmptyDataError(DataError):
    """No usable items are left after loading and validation."""


class TooFewItemsError(DataError):
    """Fewer items than a metric needs."""

    def __init__(self, message: str, *, needed: int, got: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.got = got


class DecodeError(DataError):
    """Items could not be decoded (bad text encoding, unreadable image) and ``on_error='fail'``."""


class UnsupportedFormatError(DataError):
    """The file type is not one embedselect can read."""


class IdColumnError(DataError):
    """The id column (``id_column=`` / ``--id-column``) cannot give the items their ids: a used row without an id, a
    value that is not text or a whole number, or the same id on several rows. The message names the rows."""


class AnswersError(DataError):
    """A file of answered questions (``embedselect ask``) cannot be used with this data: not a questions file, a
    malformed row, an item id the data does not have, a text that differs from the data's (answers to another data
    set) or an answer other than ``a``, ``b`` or ``skip``. The message names the row; nothing stored is touched."""

    def __init__(self, message: str, *, row: int | None = None) -> None:
        super().__init__(message)
        self.row = row


# --- configuration / usage --------------------------------------------------------------------
class ConfigError(EmbedselectError, ValueError):
    """An option or argument is invalid."""

    exit_code = EXIT_CODES["usage"]


class UnknownMetricError(ConfigError):
    """A metric name that embedselect does not know."""


class EnvironmentVariableError(ConfigError):
    """An ``EMBEDSELECT_*`` environment variable has a value embedselect cannot use.

    Attributes:
        variable: the variable's name, e.g. ``"EMBEDSELECT_LOCK_TIMEOUT"``.
        accepted: the form of value it accepts, e.g. ``"a number of seconds >= 0, e.g. 120 or 2.5"``.
    """

    def __init__(self, message: str, *, variable: str, accepted: str) -> None:
        super().__init__(message)
        self.variable = variable
        self.accepted = accepted


class RankingFormatError(ConfigError):
    """A ranking file (``Ranking.from_json`` / ``from_dict``) cannot be read: not JSON, not a ranking, or a format this
    embedselect does not read (newer: upgrade; older than it reads: re-run the ranking)."""


class MissingExtraError(ConfigError, ImportError):
    """An optional part of embedselect is not installed. The message names the command that installs it
    (``pip install 'embedselect[EXTRA]'``); :attr:`extra` is the extra's name."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


class OutputWriteError(ConfigError):
    """An output file the user named (``--out``, ``--html``, ``report --out``) could not be written: the disk or
    the quota is full, the file system is read-only, a device refused the bytes (``/dev/full``). The message names
    the file and the reason; a regular file is written under a temporary name and renamed, so it is left as it was.
    Exit 2, like an output place found unwritable before the run."""


# --- candidates / models ----------------------------------------------------------------------
class CandidateError(EmbedselectError):
    """A candidate model cannot be resolved, fetched, or loaded."""

    exit_code = EXIT_CODES["candidate"]


class CandidateSpecError(CandidateError, ValueError):
    """A candidate string is neither a hub id, a local directory, a baseline nor a catalog name."""


class ModelLoadError(CandidateError):
    """The model was found but could not be loaded or run."""


class ModelFileError(ModelLoadError):
    """A file of a model folder (``config.json``, ``modules.json``, ...) exists but cannot be read: not UTF-8 JSON,
    or not readable. The message names the file; the folder is damaged (re-download or re-save the model)."""


class UnsafeModelError(CandidateError):
    """Loading the model would need something the safety policy forbids (remote code, pickle weights,
    a size over the cap, a gated repo). The message names the option that allows it."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.revision: str | None = None  # the commit refused (set by the fetch that refused it)


class AdapterOnlyError(CandidateError):
    """A hub repo holds a PEFT adapter (``adapter_config.json``) without the weights of the model it adapts, which
    embedselect does not fetch by a name the adapter records: :attr:`base_model` is the ``base_model_name_or_path``
    of its ``adapter_config.json`` when that is a hub model id, else None. The message says to rank the base model,
    or to merge the adapter and rank or upload the merged model. Exit code 4 (``candidate``)."""

    def __init__(self, message: str, *, base_model: str | None = None) -> None:
        super().__init__(message)
        self.base_model = base_model


class AllCandidatesFailedError(CandidateError):
    """No candidate could be embedded; nothing to rank (nothing stored). :attr:`failed` the names of the candidates,
    as :class:`CandidatesFailedError`'s, :attr:`reasons` candidate name -> why it failed (``"ModelLoadError: ..."``).
    Exit code 4 (``candidate``)."""

    def __init__(self, message: str, *, failed: list[str] | None = None,
                 reasons: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.failed = list(failed or [])
        self.reasons = dict(reasons or {})


class CandidatesFailedError(CandidateError):
    """``select(..., strict=True)``: some candidates failed, the others were ranked. :attr:`ranking` is that ranking
    (stored like any other), :attr:`failed` the names of the failed candidates. Exit code 8 (``partial``)."""

    exit_code = EXIT_CODES["partial"]

    def __init__(self, message: str, *, ranking: object, failed: list[str]) -> None:
        super().__init__(message)
        self.ranking = ranking
        self.failed = failed


# --- hub ----------------------------------------------------------------------------------------
class HubError(EmbedselectError):
    """The model hub answered with an error or could not be reached.

    Attributes (as huggingface_hub's ``HfHubHTTPError`` carries them; None when not known):
        status_code: the HTTP status of the hub's answer (None: no answer, e.g. a timeout).
        request_id: the hub's request id (``X-Request-Id``), to quote to the hub's support.
        repo_id: the repository the request was about.
    """

    exit_code = EXIT_CODES["hub"]

    def __init__(self, message: str, *, status_code: int | None = None, request_id: str | None = None,
                 repo_id: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.request_id = request_id
        self.repo_id = repo_id


# --- cache --------------------------------------------------------------------------------------
class CacheError(EmbedselectError):
    """The cache (``--cache-dir``, ``$EMBEDSELECT_CACHE_DIR``: its database and its vector files) cannot be used.

    A cached vector file that fails its size, checksum or shape check is not an error: it is discarded with a warning
    and recomputed."""

    exit_code = EXIT_CODES["cache"]


class CacheLockedError(CacheError):
    """Another process holds the cache database and did not release it within the wait time."""


class CacheReadOnlyError(CacheError):
    """The cache is read-only (not writable by this user, or ``EMBEDSELECT_CACHE_READONLY=1``) and something had to
    be stored in it (new embeddings, a removal). Cached work is still served from it."""


class CacheDatabaseCorruptError(CacheError):
    """The cache database file is damaged (truncated, overwritten): it cannot be read. The message names the file
    and the recovery (move it aside; the next run starts a new database and recomputes the embeddings)."""


def cache_error_names() -> frozenset[str]:
    """The names of :class:`CacheError` and its subclasses: a failed candidate's ``error_type`` that says the cache
    could not be used (read-only, a full disk, a file-size limit, damaged, locked)."""
    names, todo = set(), [CacheError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo += cls.__subclasses__()
    return frozenset(names)


# --- search index (embedselect index / search) -------------------------------------------------
class SearchIndexError(CacheError):
    """A search index directory cannot be used (missing, unreadable, or written by a newer embedselect)."""


class IndexMismatchError(SearchIndexError):
    """A search index does not belong to what it is used with: another model or model revision, changed
    reference data, or files that no longer match its manifest. The message says what to rebuild."""


# --- metrics ------------------------------------------------------------------------------------
class MetricError(EmbedselectError):
    """A metric cannot be computed on the given embeddings."""

    exit_code = EXIT_CODES["metric"]


# --- nightly ------------------------------------------------------------------------------------
class NightlyLockedError(EmbedselectError):
    """Another nightly run holds the lock of this store; this one did nothing."""

    exit_code = EXIT_CODES["locked"]


class NightlyEmptyError(EmbedselectError):
    """The nightly run produced nothing (no candidate could be ranked); the published outputs were kept."""

    exit_code = EXIT_CODES["empty"]
    summary: dict[str, Any] | None = None  # the night's summary, set by the nightly run that raises it


class EmbedderOutputError(ModelLoadError):
    """A user's embedder object (a candidate given as an object or a callable) raised, or returned something other
    than one finite row of numbers per item; the message names the candidate."""


class PrecomputedVectorsError(CandidateError):
    """Precomputed vectors of a candidate do not fit the data: items without a vector, vectors of different widths,
    non-finite rows, or a file that cannot be read; the message names the candidate and the rows."""


class EmbeddingAPIError(ModelLoadError):
    """A hosted embedding API (a candidate ``openai:MODEL``) failed: no key in the environment, an HTTP error (after
    the retries for 429 and 5xx), or a server that cannot be reached. The message names the candidate and never holds
    the key (a server's error body is quoted redacted). :attr:`status` is the HTTP status, when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EmbeddingAPITimeoutError(EmbeddingAPIError):
    """A request to a hosted embedding API took longer than its total time-out (``?timeout=``)."""


class EmbeddingAPIBudgetError(EmbeddingAPIError):
    """The next request to a hosted embedding API would take the tokens used over ``?max_tokens_total=`` (or the
    server counted more than the budget); nothing more is sent."""


class EmbeddingAPIResponseError(EmbeddingAPIError):
    """A hosted embedding API's answer cannot be used: not JSON (cut off), rows missing, ``index`` fields that skip
    or repeat a row, vectors of another width than the others or than ``?dimensions=``, or not finite."""


class ModelTimeoutError(CandidateError):
    """A model took longer than the configured per-model time limit; it is skipped."""


__all__ = [
    "AdapterOnlyError",
    "AllCandidatesFailedError",
    "AnswersError",
    "CacheDatabaseCorruptError",
    "CacheError",
    "CacheLockedError",
    "CacheReadOnlyError",
    "CandidateError",
    "CandidateSpecError",
    "CandidatesFailedError",
    "ColumnNotFoundError",
    "ConfigError",
    "DataError",
    "DataFileNotFoundError",
    "DecodeError",
    "EXIT_CODES",
    "EmbedderOutputError",
    "EmbeddingAPIBudgetError",
    "EmbeddingAPIError",
    "EmbeddingAPIResponseError",
    "EmbeddingAPITimeoutError",
    "EmbedselectError",
    "EmptyDataError",
    "EnvironmentVariableError",
    "HubError",
    "IdColumnError",
    "IndexMismatchError",
    "MetricError",
    "MissingExtraError",
    "ModelFileError",
    "ModelLoadError",
    "ModelTimeoutError",
    "NightlyEmptyError",
    "NightlyLockedError",
    "OutputWriteError",
    "PrecomputedVectorsError",
    "RankingFormatError",
    "SearchIndexError",
    "Terminated",
    "TooFewItemsError",
    "UnknownMetricError",
    "UnsafeModelError",
    "UnsupportedFormatError",
    "cache_error_names",
]
