"""Loading reference data: read a file, a list of texts, a DataFrame or images; decode, count, dedupe, sub-sample
and fingerprint them into a :class:`~embedselect.data.ReferenceData`."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence, TypeVar

import numpy as np

from embedselect._util.suggest import close_match
from embedselect.data.duplicates import duplicate_mask
from embedselect.data.ids import check_id_column, ids_from_column
from embedselect.data.items import ReferenceItems
from embedselect.data.load_report import LoadReport
from embedselect.data.readers import (
    IMAGE_SUFFIXES,
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
    is_textlike,
    labels_array,
    missing_column_message,
    only,
    parse_untyped_labels,
    read_bytes,
    parse_json,
    read_jsonl,
    read_ragged_csv,
    to_text,
)
from embedselect.errors import (
    ColumnNotFoundError,
    ConfigError,
    DataFileNotFoundError,
    DecodeError,
    EmptyDataError,
    UnsupportedFormatError,
)
from embedselect.data.image_labels import image_labels
from embedselect._fs.inside import real_inside

R = TypeVar("R", bound=ReferenceItems)
"""The reference data class being built (:class:`~embedselect.data.ReferenceData`)."""

_MAX_EXAMPLES = 10  # skipped items listed in the report

OnError = Literal["fail", "skip"]

log = logging.getLogger("embedselect.data")


def load_frame(cls: type[R], obj: Any, kw: dict[str, Any]) -> R:
    """:meth:`ReferenceData.load` of a ``pandas.DataFrame``: its ``column`` (and ``label_column``, or ``labels``
    aligned with the rows)."""
    kw = dict(kw)
    column, label_column = kw.pop("column", None), kw.pop("label_column", None)
    id_column = kw.pop("id_column", None)
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
    return _from_frame(cls, obj, column=column, label_column=label_column, id_column=id_column, source=source,
                       first_id=0, **kw)


def load_file(
    cls: type[R],
    path: str | os.PathLike,
    *,
    column: str | None,
    label_column: str | None,
    max_items: int | None,
    seed: int,
    on_error: OnError,
    dedupe: bool,
    format: str | None,
    id_column: str | None = None,
) -> R:
    """:meth:`ReferenceData.from_file`: texts from a CSV / TSV / JSONL / JSON / Parquet / plain-text file."""
    check_common(max_items, seed, on_error)
    path = Path(path).expanduser()
    if not path.exists():
        hint = ""
        if path.parent.is_dir():
            near = close_match(path.name, [p.name for p in path.parent.iterdir()])
            if near:
                hint = f" Did you mean {str(path.parent / near)!r}?"
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
    if fmt == "txt" and id_column is not None:
        raise ConfigError(
            f"{str(path)!r} is a plain-text file and has no id column (its ids are the line numbers); drop "
            f"id_column={id_column!r} / --id-column, or use a CSV/JSONL file with an id column"
        )
    source = str(path.resolve())
    if fmt == "txt":
        raw = read_bytes(path, gz)
        lines = raw.splitlines()
        if lines and lines[0].startswith(b"\xef\xbb\xbf"):
            lines[0] = lines[0][3:]
        values: list[Any] = list(lines)
        ids = [str(i + 1) for i in range(len(values))]
        return _build_text(cls, values, ids, None, source=source, max_items=max_items, seed=seed,
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
        return _from_frame(cls, frame, column=column, label_column=label_column, id_column=id_column,
                           source=source, max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe,
                           untyped_labels=True)
    if fmt == "parquet":
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types for broken files
            raise DecodeError(f"{source} could not be read as Parquet: {exc}") from exc
        return _from_frame(cls, frame, column=column, label_column=label_column, id_column=id_column,
                           source=source, max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe)
    if fmt == "jsonl":
        records, bad = read_jsonl(read_bytes(path, gz))
        return _from_records(cls, records, bad, column=column, label_column=label_column, id_column=id_column,
                             source=source, max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe)
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
        doc = parse_json(text)
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
    return _from_records(cls, records, [], column=column, label_column=label_column, id_column=id_column,
                         source=source, max_items=max_items, seed=seed, on_error=on_error, dedupe=dedupe)


def load_texts(
    cls: type[R],
    texts: Sequence[str] | Iterable[str],
    *,
    labels: Sequence[Any] | None,
    max_items: int | None,
    seed: int,
    on_error: OnError,
    dedupe: bool,
    source: str | None,
) -> R:
    """:meth:`ReferenceData.from_texts`: reference data from in-memory texts."""
    check_common(max_items, seed, on_error)
    values = list(texts)
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(values):
            raise ConfigError(f"labels has {len(labels)} entries but there are {len(values)} texts; align them")
    return _build_text(cls, values, [str(i) for i in range(len(values))], labels,
                       source=source or f"<list of {len(values)} texts>", max_items=max_items, seed=seed,
                       on_error=on_error, dedupe=dedupe)


def load_image_files(
    cls: type[R],
    folder_or_paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    labels: Sequence[Any] | Literal["folder"] | str | os.PathLike | None,
    max_items: int | None,
    seed: int,
    on_error: OnError,
    recursive: bool,
    dedupe: bool,
) -> R:
    """:meth:`ReferenceData.from_images`: reference data from a folder or a list of image files."""
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
        found = [p for p in walker if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES]
        paths = sorted((p for p in found if real_inside(p, root)), key=lambda p: p.relative_to(root).as_posix())
        outside = sorted(p.relative_to(root).as_posix() for p in found if not real_inside(p, root))
        if outside:  # a link in the folder is not an image of the folder: its target is never read
            log.warning("%d link(s) in %s lead out of the folder and were not followed (e.g. %s)", len(outside),
                        root, ", ".join(outside[:3]))
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
    return _finish(
        cls, modality="image", items=[paths[i] for i in keep], ids=[ids[i] for i in keep],
        labels=None if label_list is None else [label_list[i] for i in keep], digests=hashes,
        n_total=len(paths), n_empty=0, skipped=[(i, "image", r) for i, r in bad], source=source,
        max_items=max_items, seed=seed, dedupe=dedupe,
    )


def _from_frame(cls: type[R], frame: Any, *, column: str | None, label_column: str | None, id_column: str | None,
                source: str, untyped_labels: bool = False, first_id: int = 1, **kw: Any) -> R:
    columns = [str(c) for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    if label_column is not None and label_column not in columns:
        raise ColumnNotFoundError(missing_column_message("label column", label_column, columns, source, []))
    if id_column is not None:
        check_id_column(id_column, columns, column=column, label_column=label_column, source=source)
    textlike = [c for c in columns if c not in (label_column, id_column) and is_textlike(frame[c].tolist())]
    if column is None:
        column = choose_column(columns, textlike, source, frame)
    elif column not in columns:
        raise ColumnNotFoundError(missing_column_message("column", column, columns, source, textlike))
    values = frame[column].tolist()
    check_text_column(column, values, source, textlike)
    labels = frame[label_column].tolist() if label_column is not None else None
    if labels is not None and untyped_labels:
        labels = parse_untyped_labels(labels)
    rows = [str(i + first_id) for i in range(len(values))]
    id_values = None if id_column is None else (id_column, frame[id_column].tolist())
    return _build_text(cls, values, rows, labels, source=source, id_values=id_values, **kw)


def _from_records(cls: type[R], records: list[tuple[str, Any]], bad: list[tuple[str, str, str]], *,
                  column: str | None, label_column: str | None, id_column: str | None, source: str,
                  **kw: Any) -> R:
    """``records``: (row number, parsed JSON value) pairs; ``bad``: (row number, category, reason) of unparseable
    lines."""
    dicts = [r for _, r in records if isinstance(r, dict)]
    n_rows = len(records) + len(bad)
    if not dicts:
        # A list of plain strings: each is one item.
        named = column or label_column or id_column
        if named is not None:
            raise ColumnNotFoundError(
                f"{source} holds plain JSON values, not objects, so it has no column {named!r}; "
                "drop --column / --labels / --id-column"
            )
    else:
        columns: list[str] = []
        for r in dicts:
            for k in r:
                if k not in columns:
                    columns.append(k)
        if label_column is not None and label_column not in columns:
            raise ColumnNotFoundError(missing_column_message("label column", label_column, columns, source, []))
        if id_column is not None:
            check_id_column(id_column, columns, column=column, label_column=label_column, source=source)
        textlike = [
            c for c in columns if c not in (label_column, id_column) and is_textlike([r.get(c) for r in dicts])
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
    ids: list[Any] = []
    for i, r in rows:
        ids.append(r if isinstance(r, BadItem) else r.get(id_column) if isinstance(r, dict) and id_column else None)
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
    id_values = None if id_column is None else (id_column, ids)
    return _build_text(cls, all_values, order, labels, source=source, id_values=id_values, **kw)


def _build_text(cls: type[R], values: list[Any], rows: list[str], labels: list[Any] | None, *, source: str,
                max_items: int | None, seed: int, on_error: OnError, dedupe: bool,
                id_values: tuple[str, list[Any]] | None = None) -> R:
    """Decode, validate and finish text rows. ``values``: raw cells (str, bytes, None/NaN, numbers, BadItem);
    ``rows``: each row's number (the items' ids unless ``id_values``, the id column's name and its raw cells, gives
    them: :func:`~embedselect.data.ids.ids_from_column`). Undecodable rows are named by row number; in the load
    report a skipped row is named by its id, or ``"row N"`` when the id column gives it none."""
    keep: list[int] = []
    texts: list[str] = []
    digests: list[bytes] = []
    bad: list[tuple[int, str, str]] = []
    empty: list[tuple[int, str, str]] = []
    for i, v in enumerate(values):
        text, problem = to_text(v)
        if problem is not None:
            bad.append((i, problem[0], problem[1]))
            continue
        if text is None or not text.strip():
            empty.append((i, "empty", "empty or whitespace-only"))
            continue
        keep.append(i)
        texts.append(text)
        digests.append(text.encode("utf-8"))
    if bad and on_error == "fail":
        raise DecodeError(decode_message(len(values), [(rows[i], c, r) for i, c, r in bad], unit="rows"))
    ids: list[str] = list(rows)
    if id_values is not None:
        used = [False] * len(values)
        for i in keep:
            used[i] = True
        read = ids_from_column(id_values[0], id_values[1], rows, used, source)
        ids = [f"row {rows[i]}" if x is None else x for i, x in enumerate(read)]
    skipped = [(ids[i], c, r) for i, c, r in sorted(bad + empty)]
    return _finish(
        cls, modality="text", items=texts, ids=[ids[i] for i in keep],
        labels=None if labels is None else [labels[i] for i in keep], digests=digests,
        n_total=len(values), n_empty=len(empty), skipped=skipped, source=source, max_items=max_items,
        seed=seed, dedupe=dedupe, n_bad=len(bad), positions=keep,
        id_column=None if id_values is None else id_values[0],
    )


def _finish(cls: type[R], *, modality: str, items: list[Any], ids: list[str], labels: list[Any] | None,
            digests: list[bytes], n_total: int, n_empty: int, skipped: list[tuple[str, str, str]], source: str,
            max_items: int | None, seed: int, dedupe: bool, n_bad: int | None = None,
            positions: list[int] | None = None, id_column: str | None = None) -> R:
    """Dedupe, sample, fingerprint. ``digests[i]``: exact bytes (texts) or sha256 digest (images) of item i;
    ``positions[i]``: item i's 0-based row in the source (texts; None for images)."""
    n_bad = len(skipped) - n_empty if n_bad is None else n_bad
    dup_mask = duplicate_mask(digests)
    n_dup = int(sum(dup_mask))
    if dedupe and n_dup:
        sel = [i for i, dup in enumerate(dup_mask) if not dup]
        items, ids, digests = [items[i] for i in sel], [ids[i] for i in sel], [digests[i] for i in sel]
        labels = None if labels is None else [labels[i] for i in sel]
        positions = None if positions is None else [positions[i] for i in sel]
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
        positions = None if positions is None else [positions[i] for i in sel]
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
        report=report, _sample_settings=settings, id_column=id_column,
        _positions=None if positions is None else tuple(positions),
    )
