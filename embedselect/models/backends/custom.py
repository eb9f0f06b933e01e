"""Candidates the user brings: an embedder object of their own (:class:`ObjectEmbedder`, the
:class:`~embedselect.models.backends.base.Embedder` around it) and precomputed vectors (:func:`precomputed_vectors`).

An embedder object is anything with ``encode(items, batch_size=...)`` returning an array-like of shape (n, d) (a
``SentenceTransformer`` instance is one), or a plain callable ``items -> array``. Its output is checked like every
backend's (:func:`~embedselect._util.arrays.check_embeddings`: one row per item, 2-D, real, finite), and a wrong
result is an :class:`~embedselect.errors.EmbedderOutputError` naming the candidate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embedselect._util.arrays import check_embeddings, nonfinite_rows
from embedselect.errors import EmbedderOutputError, PrecomputedVectorsError

DEFAULT_BATCH_SIZE = 32
"""Items per ``encode`` call of a user's embedder when the run sets no batch size."""


class ObjectEmbedder:
    """The :class:`~embedselect.models.backends.base.Embedder` of a user's embedder object.

    Attributes:
        name: the candidate's name (every error names it).
        backend: ``"embedder"``.
        modality: the data's modality (the object is trusted to take these items).
        device: ``"user"``: the object runs wherever it was put.
    """

    backend = "embedder"
    device = "user"

    def __init__(self, obj: Any, *, name: str, modality: str, revision: str | None) -> None:
        self.obj, self.name, self.modality, self.revision = obj, name, modality, revision

    def settings(self) -> dict[str, Any]:
        """The object's class (module and qualified name) and the revision the user gave (None: none)."""
        cls = type(self.obj)
        return {"embedder": f"{cls.__module__}.{cls.__qualname__}", "revision": self.revision}

    def embed(self, items: Sequence[Any], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """float32 (len(items), d): ``encode`` (or the call) on ``batch_size`` items at a time, rows in order.

        Raises:
            EmbedderOutputError: the object raised, or returned something that is not an (n, d) array of finite real
                numbers with one row per item, or a batch of another width than the first (the embedding stops at
                the batch at fault); the message names the candidate.
        """
        items = list(items)
        size = int(batch_size or DEFAULT_BATCH_SIZE)
        parts: list[np.ndarray] = []
        for i in range(0, len(items), size):
            part = self._encode_batch(items[i:i + size], size, progress, start=i, total=len(items))
            if parts and part.shape[1] != parts[0].shape[1]:  # stop here: the result could not be used
                raise EmbedderOutputError(
                    f"candidate {self.name!r}: its embedder returned vectors of different widths: "
                    f"{part.shape[1]}-wide vectors for items {i + 1}-{i + len(part)} of {len(items)}, but "
                    f"{parts[0].shape[1]}-wide vectors for the items before (the embedding stopped at that batch); "
                    "it must return one width for every item")
            parts.append(part)
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(parts, axis=0))

    def _encode_batch(self, batch: list[Any], size: int, progress: bool, *, start: int, total: int) -> np.ndarray:
        """The object's output for ``batch``, items ``start`` .. ``start + len(batch) - 1`` of the ``total`` embedded,
        checked: one row of finite real numbers per item (a NaN row stops the embedding at this batch, and the
        message says which items it counted)."""
        encode = getattr(self.obj, "encode", None)
        try:
            if callable(encode):
                if _is_sentence_transformer(self.obj):
                    out = encode(batch, batch_size=size, convert_to_numpy=True, show_progress_bar=progress)
                else:
                    out = encode(batch, batch_size=size)
            else:
                out = self.obj(batch)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - the user's code: any failure is this candidate's
            raise EmbedderOutputError(f"candidate {self.name!r}: its embedder raised {type(exc).__name__}: {exc}") \
                from exc
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().float().cpu().numpy()
        arr = check_embeddings(out, what=f"the output of candidate {self.name!r}'s embedder", n=len(batch),
                               finite=False, error=EmbedderOutputError,
                               hint="; its embedder must return numbers float32 can hold (rescale them)")
        bad = nonfinite_rows(arr)
        if bad:
            rows, stop = (f"{bad} of the {total} rows", "") if len(batch) == total else (
                f"{bad} of the {len(batch)} rows for items {start + 1}-{start + len(batch)} of {total}",
                " (the embedding stopped at that batch)")
            raise EmbedderOutputError(f"the output of candidate {self.name!r}'s embedder: {rows} hold non-finite values "
                                      f"(NaN or inf){stop}; its embedder must return finite numbers for every item")
        return arr


def _is_sentence_transformer(obj: Any) -> bool:
    return any(c.__name__ == "SentenceTransformer" and c.__module__.startswith("sentence_transformers")
               for c in type(obj).__mro__)


def precomputed_vectors(source: Any, *, name: str, ids: Sequence[str], positions: Sequence[int] | None,
                        n_source: int) -> np.ndarray:
    """A candidate's precomputed vectors of the run's items, float32 (len(ids), d), row i for item ``ids[i]``.

    Args:
        source: what :meth:`~embedselect.models.candidates.Candidate.from_vectors` kept: an array, a mapping
            id -> vector, or the :class:`~pathlib.Path` of a ``.npy`` / ``.parquet`` file.
        name: the candidate's name (for the messages).
        ids: the item ids of the run's data, in order.
        positions: each item's 0-based row in the data's source (None when the source has no row order, e.g. a
            folder of images).
        n_source: the number of rows of the data's source (before empty, undecodable or duplicate rows were
            dropped and before sampling).

    An array (or ``.npy``) with ``len(ids)`` rows is aligned with the items; one with ``n_source`` rows with the
    source's rows (``positions`` pick the items' rows). A mapping or Parquet file is looked up by item id.

    Raises:
        PrecomputedVectorsError: the file cannot be read or lacks ``id`` / ``vector`` columns; an array of another
            number of rows; items with no vector (the first few ids named); vectors that are not flat lists of real
            numbers, or of different widths; rows that are not finite (their ids named).
    """
    if isinstance(source, Path):
        source = _read_file(source, name, ids)
    if isinstance(source, Mapping):
        keyed = {str(k): v for k, v in source.items()}
        missing = [i for i in ids if i not in keyed]
        if missing:
            raise PrecomputedVectorsError(
                f"candidate {name!r}: {len(missing)} of {len(ids)} items have no vector (ids {_few(missing)}); "
                "give a vector for every item of the data (ids are the data's row numbers, 1-based for a file, or "
                "the values of its --id-column / id_column=)")
        rows = _flat_rows(keyed, ids, name)
        widths: dict[int, list[str]] = {}
        for i, r in zip(ids, rows):
            widths.setdefault(r.shape[0], []).append(i)
        if len(widths) > 1:
            common = max(widths, key=lambda w: len(widths[w]))
            odd = [i for w, group in widths.items() if w != common for i in group]
            raise PrecomputedVectorsError(
                f"candidate {name!r}: {len(odd)} vectors are not {common} wide like the others (ids {_few(odd)}); "
                "every vector must have the same width")
        arr = np.stack(rows) if rows else np.zeros((0, 0))
    else:
        arr = np.asarray(source)
        if arr.ndim != 2:
            raise PrecomputedVectorsError(f"candidate {name!r}: the vectors have shape {arr.shape}; give a 2-D "
                                          "array of shape (items, width)")
        if arr.shape[0] == len(ids):
            pass
        elif arr.shape[0] == n_source and positions is not None:
            arr = arr[np.asarray(positions, dtype=np.int64)]
        else:
            rows_of = f"{len(ids)} (one per item used)" + (
                f" or {n_source} (one per row of the data's source)" if positions is not None and n_source != len(ids)
                else "")
            raise PrecomputedVectorsError(f"candidate {name!r}: the vectors have {arr.shape[0]} rows, expected "
                                          f"{rows_of}; or key them by item id")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise PrecomputedVectorsError(f"candidate {name!r}: the vectors are {arr.dtype}, not real numbers")
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1)) if arr.size else np.zeros(0, dtype=np.int64)
    if bad.size:
        raise PrecomputedVectorsError(
            f"candidate {name!r}: {bad.size} of {len(ids)} vectors hold NaN or inf (ids {_few([ids[int(i)] for i in bad])}); "
            "fix or re-compute those rows")
    return check_embeddings(arr, what=f"the vectors of candidate {name!r}", n=len(ids),
                            error=PrecomputedVectorsError)


def keyed_vectors(pairs: Any, *, name: str, where: str = "") -> dict[str, Any]:
    """``pairs`` (item id, vector) as a mapping keyed by ``str(id)``, the form item ids take in a run.

    Raises:
        PrecomputedVectorsError: an id given more than once, also as another type (``1`` and ``"1"``): which vector
            is the item's cannot be told (the ids named; ``where`` says where they came from, e.g. " in v.parquet").
    """
    keyed: dict[str, Any] = {}
    seen: Counter[str] = Counter()
    for key, vector in pairs:
        keyed[str(key)] = vector
        seen[str(key)] += 1
    dup = sorted(k for k, count in seen.items() if count > 1)
    if dup:
        raise PrecomputedVectorsError(f"candidate {name!r}: ids {_few(dup)} appear more than once{where}; give one "
                                      "vector per item id")
    return keyed


def _flat_rows(keyed: Mapping[str, Any], ids: Sequence[str], name: str) -> list[np.ndarray]:
    """The vector of each id of ``ids`` as a 1-D float64 array.

    Raises:
        PrecomputedVectorsError: vectors that are not lists of real numbers (text, None, booleans) or not flat (a
            2 x 2 list was read as 4 numbers), their ids named.
    """
    rows: list[np.ndarray] = []
    kinds: dict[str, list[str]] = {}
    for i in ids:
        try:
            row = np.asarray(keyed[i])
        except (TypeError, ValueError):  # ragged lists
            row = np.asarray(None)
        if row.dtype.kind not in "iuf":
            kinds.setdefault("lists of numbers", []).append(i)
        elif row.ndim != 1:
            kinds.setdefault("flat lists of numbers", []).append(i)
        rows.append(row)
    if kinds:  # the first kind of fault found
        what, odd = next(iter(kinds.items()))
        raise PrecomputedVectorsError(f"candidate {name!r}: {len(odd)} of {len(ids)} vectors are not {what} (ids "
                                      f"{_few(odd)}); give each item one list of real numbers")
    return [r.astype(np.float64, copy=False) for r in rows]


def _few(ids: Sequence[str], k: int = 5) -> str:
    shown = ", ".join(repr(i) for i in ids[:k])
    return shown + (f" and {len(ids) - k} more" if len(ids) > k else "")


def _read_file(path: Path, name: str, ids: Sequence[str]) -> Any:
    """A ``.npy`` file as an array (memory-mapped, never unpickled); a ``.parquet`` file as a mapping id -> vector of
    the ids of ``ids`` that it holds. Only the ``id`` column of a Parquet file is read whole (its ids must not
    repeat); its vectors are read a batch at a time, and only the rows of those ids are converted, so a vector
    store's export of millions of items serves a sample of them (every vector as a Python list took many times the
    file's size: 4.4 GB for a 300 MB file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.suffix.lower() == ".npy":
            return np.load(path, allow_pickle=False, mmap_mode="r")
        columns = set(pq.read_schema(path).names)
        if not {"id", "vector"} <= columns:
            raise PrecomputedVectorsError(f"candidate {name!r}: the Parquet file {path} has columns "
                                          f"{sorted(columns)}; it needs 'id' (the item id) and 'vector' (a list of "
                                          "floats)")
        keys = [str(v) for v in pq.read_table(path, columns=["id"]).column("id").to_pylist()]
        row_of = keyed_vectors(zip(keys, range(len(keys))), name=name, where=f" in {path}")
        wanted = sorted((row_of[i], i) for i in ids if i in row_of)  # (file row, id), in file order
        by_id: dict[str, Any] = {}
        start, k = 0, 0
        for batch in pq.ParquetFile(path).iter_batches(columns=["vector"]):  # one batch of vectors in memory
            stop, take = start + batch.num_rows, []
            while k < len(wanted) and wanted[k][0] < stop:
                take.append(wanted[k])
                k += 1
            if take:
                picked = batch.column(0).take(pa.array([r - start for r, _ in take], type=pa.int64())).to_pylist()
                by_id.update(zip((i for _, i in take), picked))
            start = stop
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise PrecomputedVectorsError(f"candidate {name!r}: cannot read the vectors file {path}: {exc}") from None
    absent = [i for i in ids if i in by_id and by_id[i] is None]
    if absent:
        raise PrecomputedVectorsError(f"candidate {name!r}: ids {_few(absent)} have no vector in {path}")
    return by_id
