"""The validated, fingerprinted reference items (:class:`ReferenceData`): checks, summaries and the entry points
that load them (:mod:`embedselect.data.loaders`) or drop their duplicates (:mod:`embedselect.data.duplicates`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from embedselect._util.arrays import is_missing
from embedselect.data.duplicates import without_duplicates
from embedselect.data.items import ReferenceItems
from embedselect.data.loaders import OnError, load_file, load_frame, load_image_files, load_texts
from embedselect.data.load_report import NEAR_DUPLICATE_THRESHOLD
from embedselect.data.readers import only
from embedselect.errors import ConfigError, DataError, EmptyDataError, TooFewItemsError
from embedselect.data.image_labels import image_load_options


def path_modality(path: str | os.PathLike[str]) -> str:
    """What :meth:`ReferenceData.load` reads a path as, without reading it: ``"image"`` for a folder (of images),
    else ``"text"`` (a data file). The nightly configuration checks its pinned baselines with it."""
    return "image" if Path(path).expanduser().is_dir() else "text"


@dataclass(frozen=True, eq=False, repr=False)
class ReferenceData(ReferenceItems):
    """Validated, fingerprinted reference items. Build it with :meth:`load` or a ``from_*`` classmethod.

    Attributes:
        modality: ``"text"`` or ``"image"``.
        items: the texts (``str``), or absolute image paths (:class:`pathlib.Path`), in final order.
        labels: ``None``, or a read-only array of shape ``(n,)`` aligned with ``items``: ``int64`` when every
            label is an integer, else ``object`` (``str`` / ``int`` values, ``None`` for a missing label —
            items with a missing label are kept).
        ids: stable item ids, one per item (see :mod:`embedselect.data`): row numbers, an image's relative path,
            or the values of the table's ``id_column``.
        id_column: the table column the ids come from (``id_column=`` / ``--id-column``), or None.
        fingerprint: sha256 hex over the modality and the exact items used (UTF-8 text bytes, or image file
            bytes — not paths), plus ``max_items`` and ``seed`` when sampling happened. Labels are not
            included.
        source: human-readable origin (a file path, ``"<list of 120 texts>"``).
        report: a :class:`LoadReport`.
    """

    # ------------------------------------------------------------------ basics
    def __repr__(self) -> str:
        lab = "" if self.labels is None else ", labelled"
        return (
            f"ReferenceData({self.modality}, n={len(self)}{lab}, source={self.source!r}, "
            f"fingerprint={self.fingerprint[:12]})"
        )

    def source_positions(self) -> list[int] | None:
        """Each item's 0-based row in the source (texts, whatever their ids: row numbers or an id column's values);
        None for images (their ids are paths, not rows)."""
        return None if self._positions is None else list(self._positions)

    def require(self, n_min: int, *, purpose: str, alternative: str | None = None) -> None:
        """Raise :class:`~embedselect.errors.TooFewItemsError` when fewer than ``n_min`` items are loaded.

        Args:
            n_min: the number of items ``purpose`` needs.
            purpose: what needs them, e.g. ``"the task_prior metric (64 probe tasks, 5-fold)"``.
            alternative: the last of the fixes the message lists, a way to do without ``purpose`` (e.g. "leave
                sufficiency out: ..."); None: only the fixes to the data.
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
        if alternative:
            hints.append(f"or {alternative}")
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

    def skipped_note(self) -> str | None:
        """A sentence saying how many items the loader left out (``on_error="skip"``: undecodable or empty) and the
        first of them with the reason, or None when it left out none."""
        r = self.report
        n = r.n_skipped_empty + r.n_skipped_undecodable
        if not n:
            return None
        unit = "images" if self.modality == "image" else "items"
        named = [f"{'' if self.modality == 'image' else 'item '}{e['id']} ({e['reason']})" for e in r.skipped_examples]
        more = f" and {n - len(named)} more" if n > len(named) else ""
        return (f"{n} of the {r.n_total} {unit} were left out (--on-error skip): {'; '.join(named)}{more}; the "
                "ranking is of the others")

    def to_dict(self) -> dict[str, Any]:
        """JSON summary for ranking metadata: source, modality, n, fingerprint, has_labels, sampling, report."""
        return {
            "source": self.source,
            "modality": self.modality,
            "n": len(self),
            "fingerprint": self.fingerprint,
            "has_labels": self.labels is not None,
            **({"id_column": self.id_column} if self.id_column is not None else {}),
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
                similarity >= ``threshold`` (FAISS k-NN, :func:`embedselect.nn.knn.near_duplicates`):
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
        return without_duplicates(self, rule, threshold=threshold, k=k, seed=seed)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def load(cls, obj: Any, **kw: Any) -> "ReferenceData":
        """Build reference data from whatever the user handed in.

        Dispatch: a :class:`ReferenceData` is returned as is (keyword arguments are ignored); a ``str`` /
        :class:`~pathlib.Path` naming a folder -> :meth:`from_images`, a file -> :meth:`from_file`; a
        ``pandas.DataFrame`` -> its ``column`` (and ``label_column``, or ``labels`` aligned with the rows; ``id_column``
        as for :meth:`from_file`, else the 0-based positions are the ids); a
        ``pandas.Series``, numpy array or list/tuple of ``str`` -> :meth:`from_texts`; a list/tuple of
        :class:`~pathlib.Path` -> :meth:`from_images`.

        Keyword arguments that are ``None`` and do not apply to the chosen loader are dropped, so a caller
        can always pass ``column=..., label_column=..., max_items=..., seed=..., on_error=...``.

        Raises:
            ConfigError: an argument that does not apply (e.g. ``column="text"`` with a list of texts), or an
                object of an unsupported type.
            DataFileNotFoundError: a path that does not exist.
        """
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, (str, os.PathLike)):
            path = Path(obj).expanduser()
            if path_modality(path) == "image":
                if kw.get("id_column") is not None:
                    raise ConfigError(f"{str(path)!r} is a folder of images: their ids are the files' paths relative to "
                                      f"it, and there is no id column; drop id_column={kw['id_column']!r} / --id-column")
                return cls.from_images(path, **only(image_load_options(kw), cls.from_images, "a folder of images"))
            return cls.from_file(path, **only(kw, cls.from_file, "a data file"))
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is a dependency
            pd = None
        if pd is not None and isinstance(obj, pd.DataFrame):
            return load_frame(cls, obj, kw)
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
        id_column: str | None = None,
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
            id_column: a column whose values are the items' ids (tables; None: the 1-based data row numbers). The
                values are read as text (stripped of surrounding white space; a whole number, also one pandas stores
                as a float, without a decimal point); every used row needs one, and no id may repeat. A row skipped
                as empty or undecodable is named in the load report by its id, or ``"row N"`` when it has none.

        Raises:
            DataFileNotFoundError, UnsupportedFormatError, ColumnNotFoundError, DecodeError, EmptyDataError,
            IdColumnError (a missing, repeated or non-whole-number id), ConfigError (bad arguments; ``id_column``
            for a plain-text file or the text or label column).
        """
        return load_file(cls, path, column=column, label_column=label_column, max_items=max_items, seed=seed,
                         on_error=on_error, dedupe=dedupe, format=format, id_column=id_column)

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
        return load_texts(cls, texts, labels=labels, max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe,
                          source=source)

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
                files (for a folder: with the sorted files). See :func:`embedselect.data.image_labels.image_labels`.
            max_items, seed, on_error, dedupe: as in :meth:`from_file` (duplicates = identical file bytes).
            recursive: also look in sub-folders.

        Ids are POSIX paths relative to the folder (for a list: relative to the deepest common folder).
        """
        return load_image_files(cls, folder_or_paths, labels=labels, max_items=max_items, seed=seed,
                                on_error=on_error, recursive=recursive, dedupe=dedupe)
