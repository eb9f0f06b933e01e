"""Reference data: load the user's texts or images, validate them, fingerprint them, sub-sample them.

The one entry point is :class:`ReferenceData` (build it with :meth:`ReferenceData.load` or one of the
``from_*`` classmethods). Loading goes through the same steps for every source:

1. read the raw rows (CSV / TSV / JSONL / JSON / Parquet / plain text, a list of texts, a folder or list of
   images);
2. decode each item strictly (texts: UTF-8, a BOM is fine; images: PIL open + full decode) — undecodable
   items fail the load (``on_error="fail"``, a :class:`~embedselect.errors.DecodeError` that gives counts and
   row ids) or are dropped and counted (``on_error="skip"``);
3. drop empty / whitespace-only texts (counted, not an error unless nothing remains);
4. optionally drop exact duplicates (``dedupe=True``; duplicates are counted either way);
5. seeded sub-sampling to ``max_items`` (without replacement, original order kept);
6. a sha256 content fingerprint over the exact items used.

:meth:`ReferenceData.drop_duplicates` removes exact or near duplicates from loaded data afterwards (the
fingerprint is then recomputed over the rows that remain, so cached vectors of the full data are never reused).

Item ids are stable strings: for files, the 1-based data row number (header not counted; for ``.txt`` and
``.jsonl`` files this is the line number); for a list of texts or a DataFrame, the 0-based position; for images,
the path relative to the folder (POSIX separators).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from embedselect.data_readers import (  # noqa: F401 - IMAGE_SUFFIXES / TEXT_FORMATS are re-exported
    IMAGE_SUFFIXES,
    TEXT_FORMATS,
    BadItem,
    ImageInvalid,
    check_common,
    check_text_column,
    choose_column,
    decode_image,
    decode_message,
    detect_format,
    fingerprint,
    frame_options,
    id_key,
    is_missing,
    is_textlike,
    labels_array,
    missing_column_message,
    only,
    parse_untyped_labels,
    read_bytes,
    read_jsonl,
    read_ragged_csv,
    to_text,
)
from embedselect.errors import (
    ColumnNotFoundError,
    ConfigError,
    DataError,
    DataFileNotFoundError,
    DecodeError,
    EmptyDataError,
    TooFewItemsError,
    UnsupportedFormatError,
)
from embedselect.image_labels import image_labels, image_load_options

__all__ = ["ReferenceData", "LoadReport", "sample_path", "IMAGE_SUFFIXES", "TEXT_FORMATS"]

_MAX_EXAMPLES = 10  # skipped items listed in the report

DUPLICATE_RULES = ("exact", "near")
"""Rules of :meth:`ReferenceData.drop_duplicates` (``select(..., drop_duplicates=...)``)."""
NEAR_DUPLICATE_THRESHOLD = 0.95
"""Default cosine threshold of the ``"near"`` rule."""

OnError = Literal["fail", "skip"]


@dataclass(frozen=True)
class LoadReport:
    """What happened while loading.

    Attributes:
        n_total: rows / files found in the source.
        n_used: items kept in the final :class:`ReferenceData` (after skipping, dedupe and sampling).
        n_skipped_empty: empty or whitespace-only texts dropped (missing cells count as empty).
        n_skipped_undecodable: items dropped because they could not be decoded (``on_error="skip"``).
        n_duplicates: valid items that are exact duplicates of an earlier one (text equality, or equal image
            bytes), counted before sub-sampling. Removed only when ``deduped`` is true.
        n_distinct: distinct items among the ``n_used`` items kept (after dedupe and sampling); None in reports
            written before it was counted.
        skipped_examples: the first few dropped items, as ``{"id": ..., "reason": ...}`` dicts.
        sampled: whether seeded sub-sampling to ``max_items`` happened.
        deduped: whether duplicates were removed (``dedupe=True`` or :meth:`ReferenceData.drop_duplicates`).
        duplicates_dropped: the rule that removed them: ``"exact"`` or ``"near"`` (``None``: none removed).
        n_dropped_duplicates: items removed by that rule (``n_used`` counts what remains).
        near_duplicate_threshold: the cosine threshold of ``"near"`` (``None`` otherwise).
    """

    n_total: int
    n_used: int
    n_skipped_empty: int = 0
    n_skipped_undecodable: int = 0
    n_duplicates: int = 0
    skipped_examples: tuple[dict[str, str], ...] = ()
    sampled: bool = False
    deduped: bool = False
    duplicates_dropped: str | None = None
    n_dropped_duplicates: int = 0
    near_duplicate_threshold: float | None = None
    n_distinct: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable copy."""
        d = dataclasses.asdict(self)
        d["skipped_examples"] = [dict(e) for e in self.skipped_examples]
        return d


def dropped_duplicates_note(dataset: Mapping[str, Any]) -> str | None:
    """The sentence a ranking's table and report show about duplicates dropped before ranking, from the ranking's
    ``dataset`` summary (:meth:`ReferenceData.to_dict`, stored rankings included); None when no rule removed any.

    Example: ``"12 near duplicates dropped before ranking (rule 'near': the same item, or cosine similarity >= 0.95
    of candidate-independent features); the scores use the 240 items left"``."""
    rep = dataset.get("report") or {}
    rule = rep.get("duplicates_dropped")
    if not rule:
        return None
    n_dropped = int(rep.get("n_dropped_duplicates") or 0)
    n_left = dataset.get("n", rep.get("n_used"))
    how = "the same item" if rule == "exact" else (
        "the same item, or cosine similarity >= "
        f"{float(rep.get('near_duplicate_threshold') or NEAR_DUPLICATE_THRESHOLD):g} of candidate-independent features")
    if n_dropped == 0:
        return f"no duplicates found (rule '{rule}': {how}); the scores use all {n_left} items"
    return (f"{n_dropped} {rule} duplicate{'s' if n_dropped != 1 else ''} dropped before ranking (rule '{rule}': "
            f"{how}); the scores use the {n_left} items left")


@dataclass(frozen=True, eq=False, repr=False)
class ReferenceData:
    """Validated, fingerprinted reference items. Build it with :meth:`load` or a ``from_*`` classmethod.

    Attributes:
        modality: ``"text"`` or ``"image"``.
        items: the texts (``str``), or absolute image paths (:class:`pathlib.Path`), in final order.
        labels: ``None``, or a read-only array of shape ``(n,)`` aligned with ``items``: ``int64`` when every
            label is an integer, else ``object`` (``str`` / ``int`` values, ``None`` for a missing label —
            items with a missing label are kept).
        ids: stable item ids, one per item (see the module docstring).
        fingerprint: sha256 hex over the modality and the exact items used (UTF-8 text bytes, or image file
            bytes — not paths), plus ``max_items`` and ``seed`` when sampling happened. Labels are not
            included.
        source: human-readable origin (a file path, ``"<list of 120 texts>"``).
        report: a :class:`LoadReport`.
    """

    modality: Literal["text", "image"]
    items: tuple[Any, ...]
    labels: np.ndarray | None
    ids: tuple[str, ...]
    fingerprint: str
    source: str
    report: LoadReport
    _sample_settings: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        lab = "" if self.labels is None else ", labelled"
        return (
            f"ReferenceData({self.modality}, n={len(self)}{lab}, source={self.source!r}, "
            f"fingerprint={self.fingerprint[:12]})"
        )

    def require(self, n_min: int, *, purpose: str) -> None:
        """Raise :class:`~embedselect.errors.TooFewItemsError` when fewer than ``n_min`` items are loaded.

        Args:
            n_min: the number of items ``purpose`` needs.
            purpose: what needs them, e.g. ``"the task_prior metric (64 probe tasks, 5-fold)"``.
        """
        n = len(self)
        if n >= n_min:
            return
        hints = []
        if self.report.sampled:
            hints.append(
                f"raise --max-items / max_items (now {self._sample_settings.get('max_items')}; "
                f"{self.report.n_total} rows are in the source)"
            )
        dropped = self.report.n_skipped_empty + self.report.n_skipped_undecodable + self.report.n_dropped_duplicates
        if dropped:
            hints.append(
                f"fix the {dropped} dropped items ({self.report.n_skipped_empty} empty, "
                f"{self.report.n_skipped_undecodable} undecodable"
                + (f", {self.report.n_dropped_duplicates} {self.report.duplicates_dropped} duplicates"
                   if self.report.n_dropped_duplicates else "")
                + ")"
            )
        hints.append(f"add at least {n_min - n} more items to the reference data")
        hints.append("or choose settings of the metric that need fewer items")
        raise TooFewItemsError(
            f"{purpose} needs at least {n_min} items, but the reference data ({self.source}) has {n}. "
            + "To fix: " + "; ".join(hints) + ".",
            needed=n_min,
            got=n,
        )

    def require_distinct(self) -> None:
        """Raise :class:`~embedselect.errors.DataError` when every item is the same: embeddings of one item say
        nothing about how candidates differ (every candidate gives one repeated vector)."""
        if self.report.n_distinct == 1 and len(self) > 1:
            raise DataError(
                f"all {len(self)} reference items are the same {self.modality} ({self.source}): every candidate would "
                f"embed one item {len(self)} times, which cannot tell candidates apart. Give at least 2 distinct "
                "items (a few hundred for a useful ranking)"
            )

    def duplicates_note(self) -> str | None:
        """A sentence saying how many of the items used are exact copies of an earlier item and what that does to
        the scores, or None when there are none (or they were removed with ``dedupe=True``)."""
        n_distinct = self.report.n_distinct
        if n_distinct is None or n_distinct >= len(self):
            return None
        copies = len(self) - n_distinct
        return (
            f"{copies} of the {len(self)} reference items are exact copies of an earlier item: every candidate "
            "embeds a copy exactly like its original, so copies inflate the agreement between candidates (the "
            "kernels task_prior compares, the sufficiency fits) and can sit on both sides of a held-out split; "
            "remove them with --drop-duplicates exact (select(..., drop_duplicates='exact'))"
        )

    def load_images(self, indices: Iterable[int] | None = None) -> list[Any]:
        """Open images as RGB ``PIL.Image.Image`` objects (fully loaded, files closed).

        Args:
            indices: positions in ``items`` (``None``: all items).

        Raises:
            ConfigError: the data are texts.
            DecodeError: a file changed or vanished since loading.
        """
        if self.modality != "image":
            raise ConfigError(f"load_images() needs image data; this reference data holds {self.modality}s")
        idx = range(len(self)) if indices is None else [int(i) for i in indices]
        out = []
        for i in idx:
            path = self.items[i]
            try:
                out.append(decode_image(path.read_bytes()).convert("RGB"))
            except OSError as exc:
                raise DecodeError(
                    f"image {self.ids[i]} ({path}) can no longer be read: {exc}. Was it changed or moved "
                    "after loading? Load the reference data again."
                ) from exc
            except ImageInvalid as exc:
                raise DecodeError(
                    f"image {self.ids[i]} ({path}) can no longer be decoded: {exc}. Load the reference data again."
                ) from exc
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON summary for ranking metadata: source, modality, n, fingerprint, has_labels, sampling, report."""
        return {
            "source": self.source,
            "modality": self.modality,
            "n": len(self),
            "fingerprint": self.fingerprint,
            "has_labels": self.labels is not None,
            "sampling": dict(self._sample_settings),
            "report": self.report.to_dict(),
        }

    # ------------------------------------------------------------------ duplicates
    def drop_duplicates(self, rule: str, *, threshold: float = NEAR_DUPLICATE_THRESHOLD, k: int = 10,
                        seed: int = 0) -> "ReferenceData":
        """A copy without duplicate items: of each group of duplicates the first (lowest row) is kept.

        Rules:
            ``"exact"``: equal items, as :attr:`LoadReport.n_duplicates` counts them (text equality, equal image
                bytes).
            ``"near"``: exact duplicates, then items whose cheap, candidate-independent features have cosine
                similarity >= ``threshold`` (FAISS k-NN, :func:`embedselect.nn.near_duplicates`):
                the same rows are dropped whichever candidates are ranked, and the choice favours none of them.
                Texts: hashed word unigrams and bigrams (lower-cased, punctuation ignored, l2-normalised counts,
                2**20 buckets); FAISS searches a seeded 128-d sparse random projection of them for pairs within
                0.05 of the threshold and the exact cosine of the sparse vectors decides. Images: 16×16
                grayscale thumbnails, each centred on its mean pixel, so the cosine is the thumbnails' pixel
                correlation. Cost: O(n·k) pairs, one exact (or, above 200 000 items, HNSW) k-NN search.

        Args:
            rule: ``"exact"`` or ``"near"``.
            threshold: cosine similarity in (0, 1] for ``"near"``.
            k: neighbours searched per item for ``"near"``.
            seed: seed of the random projection (``"near"``, texts).

        Returns:
            a new :class:`ReferenceData` whose ``fingerprint`` covers the kept items only, with
            ``report.duplicates_dropped`` / ``report.n_dropped_duplicates`` set (``self`` when nothing was
            dropped and the rule is already recorded).

        Raises:
            ConfigError: an unknown rule or a threshold outside (0, 1].
            DecodeError: an image changed or vanished since loading.
        """
        if rule not in DUPLICATE_RULES:
            raise ConfigError(f"drop_duplicates must be one of {', '.join(map(repr, DUPLICATE_RULES))} or None, "
                              f"got {rule!r}")
        if rule == "near" and not (0.0 < float(threshold) <= 1.0):
            raise ConfigError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
        digests = self._digests()
        keep = ~np.asarray(duplicate_mask(digests), dtype=bool)
        if rule == "near" and keep.sum() >= 2:
            rows = np.flatnonzero(keep)
            keep[rows[~self._near_duplicate_mask(rows, threshold=float(threshold), k=k, seed=seed)]] = False
        sel = np.flatnonzero(keep).tolist()
        labels = None if self.labels is None else [self.labels[i] for i in sel]
        items = [self.items[i] for i in sel]
        report = dataclasses.replace(
            self.report, n_used=len(sel), n_distinct=len(sel), deduped=True, duplicates_dropped=rule,
            n_dropped_duplicates=self.report.n_dropped_duplicates + len(self) - len(sel),
            near_duplicate_threshold=float(threshold) if rule == "near" else self.report.near_duplicate_threshold,
        )  # fmt: skip
        return ReferenceData(
            modality=self.modality, items=tuple(items), labels=labels_array(labels),
            ids=tuple(self.ids[i] for i in sel),
            fingerprint=fingerprint(self.modality, [digests[i] for i in sel], self._sample_settings),
            source=self.source, report=report, _sample_settings=dict(self._sample_settings),
        )  # fmt: skip

    def _digests(self) -> list[bytes]:
        """The bytes the fingerprint covers, per item: UTF-8 text, or the sha256 of the image file (read again)."""
        if self.modality == "text":
            return [t.encode("utf-8") for t in self.items]
        out = []
        for i, path in enumerate(self.items):
            try:
                out.append(hashlib.sha256(Path(path).read_bytes()).digest())
            except OSError as exc:
                raise DecodeError(f"image {self.ids[i]} ({path}) can no longer be read: {exc}. Load the reference "
                                  "data again.") from exc
        return out

    def _near_duplicate_mask(self, rows: np.ndarray, *, threshold: float, k: int, seed: int) -> np.ndarray:
        """bool (len(rows),): False for the items among ``rows`` that are near duplicates of an earlier one."""
        from embedselect.nn import near_duplicates

        if self.modality == "text":
            sparse, dense = _text_duplicate_features([self.items[i] for i in rows], seed=seed)

            def rescore(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                out = np.empty(len(a), dtype=np.float64)
                for s in range(0, len(a), 65536):  # exact sparse cosine, in blocks of pairs
                    sl = slice(s, s + 65536)
                    out[sl] = np.asarray(sparse[a[sl]].multiply(sparse[b[sl]]).sum(axis=1)).ravel()
                return out

            return near_duplicates(dense, threshold=threshold, k=k, rescore=rescore).keep
        return near_duplicates(self._thumbnails(rows), threshold=threshold, k=k).keep

    def _thumbnails(self, rows: np.ndarray, size: int = 16, block: int = 256) -> np.ndarray:
        """float32 (len(rows), size²): grayscale thumbnails of the images at ``rows``, each minus its mean."""
        from PIL import Image

        out = np.empty((len(rows), size * size), dtype=np.float32)
        for s in range(0, len(rows), block):
            for j, im in enumerate(self.load_images(rows[s:s + block])):
                px = np.asarray(im.convert("L").resize((size, size), Image.Resampling.BILINEAR), dtype=np.float32).ravel()
                out[s + j] = px - px.mean()
        return out

    # ------------------------------------------------------------------ constructors
    @classmethod
    def load(cls, obj: Any, **kw: Any) -> "ReferenceData":
        """Build reference data from whatever the user handed in.

        Dispatch: a :class:`ReferenceData` is returned as is (keyword arguments are ignored); a ``str`` /
        :class:`~pathlib.Path` naming a folder -> :meth:`from_images`, a file -> :meth:`from_file`; a
        ``pandas.DataFrame`` -> its ``column`` (and ``label_column``, or ``labels`` aligned with the rows); a
        ``pandas.Series``, numpy array or list/tuple of ``str`` -> :meth:`from_texts`; a list/tuple of
        :class:`~pathlib.Path` -> :meth:`from_images`.

        Keyword arguments that are ``None`` and do not apply to the chosen loader are dropped, so a caller
        can always pass ``column=..., label_column=..., max_items=..., seed=..., on_error=...``.

        Raises:
            ConfigError: an argument that does not apply (e.g. ``column="text"`` with a list of texts), or an
                object of an unsupported type.
            DataFileNotFoundError: a path that does not exist.
        """
        if isinstance(obj, ReferenceData):
            return obj
        if isinstance(obj, (str, os.PathLike)):
            path = Path(obj).expanduser()
            if path.is_dir():
                return cls.from_images(path, **only(image_load_options(kw), cls.from_images, "a folder of images"))
            return cls.from_file(path, **only(kw, cls.from_file, "a data file"))
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is a dependency
            pd = None
        if pd is not None and isinstance(obj, pd.DataFrame):
            kw = dict(kw)
            column, label_column = kw.pop("column", None), kw.pop("label_column", None)
            kw.pop("format", None)
            source = kw.pop("source", None) or f"<DataFrame of {len(obj)} rows>"
            labels = kw.pop("labels", None)
            if labels is not None:
                if label_column is not None:
                    raise ConfigError("give either labels (an array) or label_column (a column name), not both")
                labels = list(labels)
                if len(labels) != len(obj):
                    raise ConfigError(f"labels has {len(labels)} entries but the DataFrame has {len(obj)} rows")
                obj = obj.assign(**{"__labels__": labels})
                label_column = "__labels__"
            kw = {"max_items": None, "seed": 0, "on_error": "fail", "dedupe": False,
                  **only(kw, frame_options, "a DataFrame")}
            check_common(kw["max_items"], kw["seed"], kw["on_error"])
            return cls._from_frame(obj, column=column, label_column=label_column, source=source, first_id=0, **kw)
        if pd is not None and isinstance(obj, pd.Series):
            obj = obj.tolist()
        elif isinstance(obj, np.ndarray):
            obj = obj.tolist()
        if isinstance(obj, (list, tuple)):
            if not obj:
                raise EmptyDataError("the reference data is an empty list; pass at least one text or image path")
            if all(isinstance(x, Path) for x in obj):
                return cls.from_images(obj, **only(image_load_options(kw), cls.from_images, "a list of image paths"))
            if all(isinstance(x, (str, bytes)) or is_missing(x) for x in obj):
                return cls.from_texts(obj, **only(kw, cls.from_texts, "a list of texts"))
            raise ConfigError(
                "a list of reference items must hold only texts (str) or only image paths (pathlib.Path); "
                f"got {sorted({type(x).__name__ for x in obj})}"
            )
        raise ConfigError(
            f"cannot use an object of type {type(obj).__name__} as reference data; pass a file path, a folder of "
            "images, a list of texts, a list of image Paths, a pandas Series/DataFrame or a ReferenceData"
        )

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike,
        *,
        column: str | None = None,
        label_column: str | None = None,
        max_items: int | None = None,
        seed: int = 0,
        on_error: OnError = "fail",
        dedupe: bool = False,
        format: str | None = None,
    ) -> "ReferenceData":
        """Load texts from a CSV / TSV / JSONL / JSON / Parquet / plain-text file.

        Args:
            path: the file. The format comes from the suffix (see :data:`TEXT_FORMATS`; ``.gz`` allowed except
                for Parquet) unless ``format`` is given.
            column: the text column (tables). ``None``: the only text-like column; for ``.txt`` files each line is
                one item and ``column`` must be ``None``.
            label_column: optional label column; missing labels become ``None`` (the item is kept).
            max_items: seeded sub-sample size (``None``: keep all).
            seed: seed of the sub-sampling.
            on_error: ``"fail"`` (raise :class:`DecodeError`) or ``"skip"`` (drop and count) undecodable rows.
            dedupe: drop exact duplicate texts (first one kept).
            format: ``"csv"``, ``"tsv"``, ``"jsonl"``, ``"json"``, ``"parquet"`` or ``"txt"`` to override the suffix.

        Raises:
            DataFileNotFoundError, UnsupportedFormatError, ColumnNotFoundError, DecodeError, EmptyDataError,
            ConfigError (bad arguments).
        """
        check_common(max_items, seed, on_error)
        path = Path(path).expanduser()
        if not path.exists():
            hint = ""
            if path.parent.is_dir():
                near = difflib.get_close_matches(path.name, [p.name for p in path.parent.iterdir()], n=1)
                if near:
                    hint = f" Did you mean {str(path.parent / near[0])!r}?"
            raise DataFileNotFoundError(f"reference data file {str(path)!r} does not exist.{hint}")
        if path.is_dir():
            raise UnsupportedFormatError(
                f"{str(path)!r} is a folder; load a folder of images with ReferenceData.from_images (or "
                "ReferenceData.load / the CLI, which do it automatically), or name a data file"
            )
        fmt, gz = detect_format(path, format)
        if fmt == "txt" and column is not None:
            raise ConfigError(
                f"{str(path)!r} is a plain-text file (one item per line) and has no columns; drop column="
                f"{column!r} / --column, or use a CSV/JSONL file"
            )
        if fmt == "txt" and label_column is not None:
            raise ConfigError(
                f"{str(path)!r} is a plain-text file and has no label column; drop label_column= / --labels"
            )
        source = str(path.resolve())
        if fmt == "txt":
            raw = read_bytes(path, gz)
            lines = raw.splitlines()
            if lines and lines[0].startswith(b"\xef\xbb\xbf"):
                lines[0] = lines[0][3:]
            values: list[Any] = list(lines)
            ids = [str(i + 1) for i in range(len(values))]
            return cls._build_text(values, ids, None, source=source, max_items=max_items, seed=seed,
                                   on_error=on_error, dedupe=dedupe)
        if fmt in ("csv", "tsv"):
            import pandas as pd

            data = io.BytesIO(read_bytes(path, gz))
            sep = "," if fmt == "csv" else "\t"
            try:
                frame = pd.read_csv(
                    data, sep=sep, dtype=object, keep_default_na=False, encoding="utf-8-sig",
                    encoding_errors="surrogateescape",
                )
            except pd.errors.EmptyDataError as exc:
                raise EmptyDataError(f"{source} is empty (no header, no rows); add rows with a header line") from exc
            except (pd.errors.ParserError, ValueError) as exc:
                # a row with more fields than the header: re-read so that the row is named (or skipped)
                ragged = "fields in line" in str(exc)
                frame = read_ragged_csv(data.getvalue(), sep=sep, label_column=label_column) if ragged else None
                if frame is None:
                    raise DecodeError(
                        f"{source} could not be parsed as {fmt.upper()}: {exc}. Check the delimiter and quoting"
                        + (" (use format='tsv' / a .tsv suffix for tab-separated files)" if fmt == "csv" else "")
                    ) from exc
            return cls._from_frame(frame, column=column, label_column=label_column, source=source,
                                   max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe,
                                   untyped_labels=True)
        if fmt == "parquet":
            import pandas as pd

            try:
                frame = pd.read_parquet(path)
            except Exception as exc:  # pyarrow raises several unrelated types for broken files
                raise DecodeError(f"{source} could not be read as Parquet: {exc}") from exc
            return cls._from_frame(frame, column=column, label_column=label_column, source=source,
                                   max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe)
        if fmt == "jsonl":
            records, bad = read_jsonl(read_bytes(path, gz))
            return cls._from_records(records, bad, column=column, label_column=label_column, source=source,
                                     max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe)
        # json
        raw = read_bytes(path, gz)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DecodeError(
                f"{source} is not valid UTF-8 (byte {exc.start}); a .json file is parsed as a whole, so bad rows "
                "cannot be skipped one by one — re-encode it as UTF-8 or convert it to JSONL (one object per line)"
            ) from exc
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DecodeError(f"{source} is not valid JSON: {exc}; fix it or convert it to JSONL") from exc
        if isinstance(doc, dict) and doc and all(isinstance(v, list) for v in doc.values()):
            lengths = {len(v) for v in doc.values()}
            if len(lengths) != 1:
                raise DecodeError(f"{source}: the column lists have different lengths {sorted(lengths)}")
            keys = list(doc)
            doc = [dict(zip(keys, row)) for row in zip(*doc.values())]
        if not isinstance(doc, list):
            raise UnsupportedFormatError(
                f"{source} must hold a JSON list of objects or strings, or an object of equal-length column "
                f"lists; it holds a {type(doc).__name__}"
            )
        records = [(str(i + 1), rec) for i, rec in enumerate(doc)]
        return cls._from_records(records, [], column=column, label_column=label_column, source=source,
                                 max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe)

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str] | Iterable[str],
        *,
        labels: Sequence[Any] | None = None,
        max_items: int | None = None,
        seed: int = 0,
        on_error: OnError = "fail",
        dedupe: bool = False,
        source: str | None = None,
    ) -> "ReferenceData":
        """Reference data from in-memory texts (``str``; ``bytes`` are decoded as UTF-8; ``None`` / NaN are
        treated as empty). Ids are the 0-based list positions.

        Args:
            texts: the texts.
            labels: optional labels aligned with ``texts`` (``None`` / NaN entries = missing label).
            max_items, seed, on_error, dedupe: as in :meth:`from_file`.
            source: description for reports (default ``"<list of N texts>"``).
        """
        check_common(max_items, seed, on_error)
        values = list(texts)
        if labels is not None:
            labels = list(labels)
            if len(labels) != len(values):
                raise ConfigError(f"labels has {len(labels)} entries but there are {len(values)} texts; align them")
        return cls._build_text(values, [str(i) for i in range(len(values))], labels,
                               source=source or f"<list of {len(values)} texts>", max_items=max_items, seed=seed,
                               on_error=on_error, dedupe=dedupe)

    @classmethod
    def from_images(
        cls,
        folder_or_paths: str | os.PathLike | Sequence[str | os.PathLike],
        *,
        labels: Sequence[Any] | Literal["folder"] | str | os.PathLike | None = None,
        max_items: int | None = None,
        seed: int = 0,
        on_error: OnError = "fail",
        recursive: bool = True,
        dedupe: bool = False,
    ) -> "ReferenceData":
        """Reference data from a folder of images (``.jpg`` / ``.jpeg`` / ``.png`` / ``.webp``, case-insensitive)
        or a list of image paths. Every image is fully decoded with PIL to validate it.

        Args:
            folder_or_paths: a folder (files sorted by relative path) or a list of image files (order kept).
            labels: ``None``; ``"folder"`` — the first sub-folder below the root names the class (files directly in
                the root get ``None``); the path of a CSV file of ``path,label`` rows; or a sequence aligned with the
                files (for a folder: with the sorted files). See :func:`embedselect.image_labels.image_labels`.
            max_items, seed, on_error, dedupe: as in :meth:`from_file` (duplicates = identical file bytes).
            recursive: also look in sub-folders.

        Ids are POSIX paths relative to the folder (for a list: relative to the deepest common folder).
        """
        check_common(max_items, seed, on_error)
        if isinstance(folder_or_paths, (str, os.PathLike)):
            root = Path(folder_or_paths).expanduser()
            if not root.exists():
                raise DataFileNotFoundError(f"image folder {str(root)!r} does not exist")
            if not root.is_dir():
                raise UnsupportedFormatError(
                    f"{str(root)!r} is a file; pass a folder of images or a list of image paths"
                )
            root = root.resolve()
            walker = root.rglob("*") if recursive else root.glob("*")
            paths = sorted(
                (p for p in walker if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES),
                key=lambda p: p.relative_to(root).as_posix(),
            )
            if not paths:
                raise EmptyDataError(
                    f"no image files ({', '.join(IMAGE_SUFFIXES)}) in {str(root)!r}"
                    + ("" if recursive else " (sub-folders not searched: recursive=False)")
                )
            source = str(root)
        else:
            paths = [Path(p).expanduser().resolve() for p in folder_or_paths]
            if not paths:
                raise EmptyDataError("the list of image paths is empty")
            missing = [str(p) for p in paths if not p.is_file()]
            if missing:
                raise DataFileNotFoundError(
                    f"{len(missing)} of {len(paths)} image files do not exist: {', '.join(missing[:5])}"
                )
            root = Path(os.path.commonpath([str(p.parent) for p in paths]))
            source = f"<list of {len(paths)} images under {root}>"
        ids = [p.relative_to(root).as_posix() for p in paths]
        label_list = None if labels is None else image_labels(labels, root=root, ids=ids)

        keep: list[int] = []
        hashes: list[bytes] = []
        bad: list[tuple[str, str]] = []
        for i, p in enumerate(paths):
            try:
                data = p.read_bytes()
                decode_image(data)
            except OSError as exc:
                bad.append((ids[i], f"cannot be read ({exc.strerror or exc})"))
                continue
            except ImageInvalid as exc:
                bad.append((ids[i], str(exc)))
                continue
            keep.append(i)
            hashes.append(hashlib.sha256(data).digest())
        if bad and on_error == "fail":
            raise DecodeError(decode_message(len(paths), [(i, "image", r) for i, r in bad], unit="images"))
        return cls._finish(
            modality="image", items=[paths[i] for i in keep], ids=[ids[i] for i in keep],
            labels=None if label_list is None else [label_list[i] for i in keep], digests=hashes,
            n_total=len(paths), n_empty=0, skipped=[(i, "image", r) for i, r in bad], source=source,
            max_items=max_items, seed=seed, dedupe=dedupe,
        )

    # ------------------------------------------------------------------ internals
    @classmethod
    def _from_frame(cls, frame: Any, *, column: str | None, label_column: str | None, source: str,
                    untyped_labels: bool = False, first_id: int = 1, **kw: Any) -> "ReferenceData":
        columns = [str(c) for c in frame.columns]
        frame = frame.set_axis(columns, axis=1)
        if label_column is not None and label_column not in columns:
            raise ColumnNotFoundError(missing_column_message("label column", label_column, columns, source, []))
        textlike = [c for c in columns if c != label_column and is_textlike(frame[c].tolist())]
        if column is None:
            column = choose_column(columns, textlike, source, frame)
        elif column not in columns:
            raise ColumnNotFoundError(missing_column_message("column", column, columns, source, textlike))
        values = frame[column].tolist()
        check_text_column(column, values, source, textlike)
        labels = frame[label_column].tolist() if label_column is not None else None
        if labels is not None and untyped_labels:
            labels = parse_untyped_labels(labels)
        ids = [str(i + first_id) for i in range(len(values))]
        return cls._build_text(values, ids, labels, source=source, **kw)

    @classmethod
    def _from_records(cls, records: list[tuple[str, Any]], bad: list[tuple[str, str, str]], *, column: str | None,
                      label_column: str | None, source: str, **kw: Any) -> "ReferenceData":
        """``records``: (id, parsed JSON value) pairs; ``bad``: (id, category, reason) of unparseable lines."""
        dicts = [r for _, r in records if isinstance(r, dict)]
        n_rows = len(records) + len(bad)
        if not dicts:
            # A list of plain strings: each is one item.
            if column is not None or label_column is not None:
                raise ColumnNotFoundError(
                    f"{source} holds plain JSON values, not objects, so it has no column {column or label_column!r}; "
                    "drop --column / --labels"
                )
        else:
            columns: list[str] = []
            for r in dicts:
                for k in r:
                    if k not in columns:
                        columns.append(k)
            if label_column is not None and label_column not in columns:
                raise ColumnNotFoundError(missing_column_message("label column", label_column, columns, source, []))
            textlike = [
                c for c in columns if c != label_column and is_textlike([r.get(c) for r in dicts])
            ]
            if column is None:
                column = choose_column(columns, textlike, source, None, dicts=dicts)
            elif column not in columns:
                raise ColumnNotFoundError(missing_column_message("column", column, columns, source, textlike))
            check_text_column(column, [r.get(column) for r in dicts], source, textlike)
        rows: list[tuple[str, Any]] = records + [(i, BadItem(c, r)) for i, c, r in bad]
        rows.sort(key=lambda t: int(t[0]))
        all_values: list[Any] = []
        labels: list[Any] | None = None if (not dicts or label_column is None) else []
        for i, r in rows:
            if isinstance(r, BadItem) or not dicts or r is None:
                all_values.append(r)
            elif isinstance(r, dict):
                all_values.append(r.get(column))
            else:
                all_values.append(BadItem("type", f"a JSON {type(r).__name__}, not an object with {column!r}"))
            if labels is not None:
                labels.append(r.get(label_column) if isinstance(r, dict) else None)
        order = [i for i, _ in rows]
        assert len(all_values) == n_rows
        return cls._build_text(all_values, order, labels, source=source, **kw)

    @classmethod
    def _build_text(cls, values: list[Any], ids: list[str], labels: list[Any] | None, *, source: str,
                    max_items: int | None, seed: int, on_error: OnError, dedupe: bool) -> "ReferenceData":
        """Decode, validate and finish text rows. ``values``: raw cells (str, bytes, None/NaN, numbers, BadItem)."""
        keep: list[int] = []
        texts: list[str] = []
        digests: list[bytes] = []
        bad: list[tuple[str, str, str]] = []
        empty: list[tuple[str, str, str]] = []
        for i, v in enumerate(values):
            text, problem = to_text(v)
            if problem is not None:
                bad.append((ids[i], problem[0], problem[1]))
                continue
            if text is None or not text.strip():
                empty.append((ids[i], "empty", "empty or whitespace-only"))
                continue
            keep.append(i)
            texts.append(text)
            digests.append(text.encode("utf-8"))
        if bad and on_error == "fail":
            raise DecodeError(decode_message(len(values), bad, unit="rows"))
        skipped = sorted(bad + empty, key=lambda t: id_key(t[0]))
        return cls._finish(
            modality="text", items=texts, ids=[ids[i] for i in keep],
            labels=None if labels is None else [labels[i] for i in keep], digests=digests,
            n_total=len(values), n_empty=len(empty), skipped=skipped, source=source, max_items=max_items,
            seed=seed, dedupe=dedupe, n_bad=len(bad),
        )

    @classmethod
    def _finish(cls, *, modality: str, items: list[Any], ids: list[str], labels: list[Any] | None,
                digests: list[bytes], n_total: int, n_empty: int, skipped: list[tuple[str, str, str]], source: str,
                max_items: int | None, seed: int, dedupe: bool, n_bad: int | None = None) -> "ReferenceData":
        """Dedupe, sample, fingerprint. ``digests[i]``: exact bytes (texts) or sha256 digest (images) of item i."""
        n_bad = len(skipped) - n_empty if n_bad is None else n_bad
        dup_mask = duplicate_mask(digests)
        n_dup = int(sum(dup_mask))
        if dedupe and n_dup:
            sel = [i for i, dup in enumerate(dup_mask) if not dup]
            items, ids, digests = [items[i] for i in sel], [ids[i] for i in sel], [digests[i] for i in sel]
            labels = None if labels is None else [labels[i] for i in sel]
        if not items:
            parts = []
            if n_empty:
                parts.append(f"{n_empty} empty")
            if n_bad:
                parts.append(f"{n_bad} undecodable")
            what = f" ({', '.join(parts)} skipped)" if parts else ""
            raise EmptyDataError(
                f"no usable {modality} items in {source}: {n_total} found{what}; add non-empty, decodable items"
            )
        sampled = max_items is not None and len(items) > max_items
        settings: dict[str, Any] = {}
        if sampled and max_items is not None:
            rng = np.random.default_rng(seed)
            sel = np.sort(rng.choice(len(items), size=max_items, replace=False)).tolist()
            items, ids, digests = [items[i] for i in sel], [ids[i] for i in sel], [digests[i] for i in sel]
            labels = None if labels is None else [labels[i] for i in sel]
            settings = {"max_items": int(max_items), "seed": int(seed)}
        fp = fingerprint(modality, digests, settings)
        report = LoadReport(
            n_total=n_total, n_used=len(items), n_skipped_empty=n_empty, n_skipped_undecodable=n_bad,
            n_duplicates=n_dup, n_distinct=len(set(digests)),
            skipped_examples=tuple({"id": i, "reason": r} for i, _, r in skipped[:_MAX_EXAMPLES]),
            sampled=sampled, deduped=bool(dedupe),
            duplicates_dropped="exact" if dedupe else None, n_dropped_duplicates=n_dup if dedupe else 0,
        )
        return cls(
            modality=modality,  # type: ignore[arg-type]
            items=tuple(items), labels=labels_array(labels), ids=tuple(ids), fingerprint=fp, source=source,
            report=report, _sample_settings=settings,
        )


def duplicate_mask(digests: Sequence[bytes]) -> list[bool]:
    """True for each item whose digest (exact text bytes, or an image file's sha256) equals an earlier one's."""
    seen: set[bytes] = set()
    mask = []
    for d in digests:
        mask.append(d in seen)
        seen.add(d)
    return mask


def _text_duplicate_features(texts: list[str], *, seed: int, dim: int = 128):
    """Near-duplicate features of texts (see :meth:`ReferenceData.drop_duplicates`): the l2-normalised hashed
    word 1-2-gram counts (sparse CSR float32, (n, 2**20)) and their seeded sparse random projection (dense
    float32, (n, ``dim``)), whose cosines approximate the sparse ones."""
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.random_projection import SparseRandomProjection

    x = HashingVectorizer(ngram_range=(1, 2), n_features=2**20, alternate_sign=False, norm="l2",
                          dtype=np.float32).transform(texts).tocsr()
    proj = SparseRandomProjection(n_components=dim, dense_output=True, random_state=int(seed) % (2**32))
    return x, np.asarray(proj.fit_transform(x), dtype=np.float32)


def sample_path(name: str = "texts") -> Path:
    """Path of a bundled sample data set (offline demo).

    ``"texts"``: ``texts.csv`` with columns ``text,label`` — 240 short English sentences, 40 for each of six
    topics (sports, cooking, finance, technology, health, travel).

    Raises:
        ConfigError: an unknown sample name (the message lists the available ones).
    """
    folder = Path(__file__).with_name("samples")
    available = sorted(p.stem for p in folder.glob("*.csv"))
    path = folder / f"{name}.csv"
    if name not in available or not path.is_file():
        raise ConfigError(f"no bundled sample named {name!r}; available: {', '.join(available) or 'none'}")
    return path


