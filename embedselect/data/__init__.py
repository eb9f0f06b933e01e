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
the path relative to the folder (POSIX separators). A table's ``id_column`` (``--id-column``) gives its own ids
instead: the column's values as text (:func:`~embedselect.data.ids.ids_from_column`), unique, one per used row.
"""

from embedselect.data.duplicates import duplicate_mask
from embedselect.data.loaders import OnError
from embedselect.data.reference import ReferenceData
from embedselect.data.load_report import DUPLICATE_RULES, NEAR_DUPLICATE_THRESHOLD, LoadReport, dropped_duplicates_note
from embedselect.data.samples import sample_path
from embedselect.data.readers import IMAGE_SUFFIXES, TEXT_FORMATS

__all__ = [
    "ReferenceData", "LoadReport", "sample_path", "IMAGE_SUFFIXES", "TEXT_FORMATS", "dropped_duplicates_note",
    "duplicate_mask", "DUPLICATE_RULES", "NEAR_DUPLICATE_THRESHOLD", "OnError",
]
