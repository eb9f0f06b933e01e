"""Label-free detection of derived copies: a candidate that is a coordinate-wise function of another's vectors.

Quantising an embedding (float16, int8, binary sign bits) or keeping its first k dimensions (Matryoshka-style
truncation) maps each coordinate of the parent's vector to the same coordinate of the copy by a monotone
function (up to the copy's row re-normalisation). By the data processing inequality such a copy cannot carry
more information about any labelling of the items than its parent, so a ranking that puts it above its parent
is wrong in expectation, however the label-free scores came out (docs/validity.md, "Copies below their parents").

A *variant* is not a copy: another pooling (CLS / mean / max), another input resolution or another layer of the
same model computes new features from the input; it can be better than the default (a max-pooled EfficientNet was
the most accurate candidate of a photo pool) and is ranked on its own.

One variant is declared a copy by its spec alone (:func:`truncated_inputs`): the same model and revision with the
same options but a shorter ``max_length``. It reads the first tokens of what its parent reads, so it sees nothing
its parent does not (issue 23 item 3). Its vectors are not a function of the parent's, so this is a declared order,
not the data processing inequality; on the validity benchmark's 11 text sets (tuned probe, 200-300 items) MiniLM
and mpnet at 8 tokens are below the full model in 15 of 22 cases, equal in 5 and above it in 2, by one item
(docs/validity.md, "Copies below their parents").

The test, for a pair (parent P with d_P dimensions, copy C with d_C ≤ d_P), on at most ``max_items`` rows:

1. what the specs say, when given (``origins``): two candidates of the same model and revision whose vector options
   differ in anything but ``dtype`` (and ``dim``) are variants, never copies; when they differ only in ``dtype``, the
   lower precision is the candidate copy (still checked by 3);
2. a cheap screen: the median over j < d_C of ``|Spearman(C_j, P_j)|`` is at least ``threshold`` (0.8: sign bits
   of a Gaussian coordinate keep √3/2 ≈ 0.87; coordinates of independently trained models, or a PCA, give ≈ 0);
3. the strict test: C_j is a monotone *function* of P_j: the median over columns of the R² of the isotonic
   regression of C_j on P_j is at least ``fit_threshold`` (0.97), as they are or both row-normalised (the better). Rows where both are
   exactly 0 are left out of each column (ReLU features are 0 on most images for most channels: shared zeros
   made a max-pooled and an average-pooled EfficientNet look like copies, |Spearman| 0.998). Measured on the
   bundled texts (all-MiniLM-L6-v2) and 300 digits (EfficientNet-Lite0): int8 0.9999 / 0.997, float16 1.0, sign bits
   1.0, first 64 / 16 of 384 dimensions 0.997 / 0.983; CLS vs mean pooling 0.69, ``max_length=8`` 0.64, max vs
   average pooling 0.92, 160 vs 224 px 0.29;
4. the direction: C has fewer dimensions ("truncated"), or the same number and a coarser resolution
   ("quantized"): values that need fewer mantissa bits (float16, bfloat16, integer levels, signs), or at most half
   as many distinct values per coordinate. Two equal-width candidates of the same resolution are neither.

A static model distilled from a teacher (model2vec) is not a coordinate-wise function of the teacher's vectors
(its dimensions are a PCA of token embeddings), so the vectors cannot show it; its model card says it
(:mod:`embedselect.models.candidates.card`), and :func:`declared_copies` turns what cards declare into the same pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.stats import rankdata

from embedselect.metrics.kernels import as_matrix
from embedselect._util.kinds import REDUCTION_OPTIONS

THRESHOLD = 0.8
"""Median per-coordinate |Spearman| at or above which a pair is tested further (the screen)."""
FIT_THRESHOLD = 0.97
"""Median per-coordinate isotonic R² at or above which the copy is a function of its parent (the strict test)."""
DISTINCT_RATIO = 0.5
"""A same-width copy without coarser floats must have at most this fraction of its parent's distinct values."""
MAX_ITEMS = 2000
MAX_COLUMNS = 256
"""Columns used by the strict test (a seeded subset above this)."""
MIN_ROWS = 10
"""Rows (not both exactly 0) a column needs to count in the strict test."""
PRECISION_OPTIONS = frozenset({"dtype"})
"""Vector options that change only the numeric precision: a candidate that differs from another of the same model
and revision only in these is a quantised copy candidate, not a variant."""
INPUT_LENGTH_OPTIONS = frozenset({"max_length"})
"""The vector option whose shorter value makes a declared copy: the input cut to fewer tokens (:func:`truncated_inputs`)."""
WIDTH_OPTIONS = frozenset({"dim", "truncate_dim"})
"""Vector options that keep fewer dimensions of the same vectors: left to the statistical test."""
_DTYPE_BITS = {"float64": 52, "float32": 23, "fp32": 23, "float16": 10, "fp16": 10, "half": 10, "bfloat16": 7,
               "bf16": 7, "int8": 7, "uint8": 8, "binary": 0, "ubinary": 0}


@dataclass(frozen=True)
class DerivedCopy:
    """``copy`` is a coordinate-wise function of ``parent``'s vectors.

    Attributes:
        copy, parent: candidate names.
        relation: ``"truncated"`` (fewer dimensions) or ``"quantized"`` (same width, coarser values); a copy its
            card declares (:func:`declared_copies`): ``"distilled"`` or ``"quantized"``; a shorter ``max_length`` of
            the same model (:func:`truncated_inputs`): ``"truncated-input"``.
        median_abs_spearman: median over the copy's coordinates of |Spearman(copy_j, parent_j)|, in [0, 1] (NaN
            when declared).
        monotone_fit: median over the copy's coordinates of the isotonic R² of copy_j on parent_j (rows not both
            exactly 0), in [0, 1] (NaN when declared).
    """

    copy: str
    parent: str
    relation: str
    median_abs_spearman: float
    monotone_fit: float = float("nan")

    declared: bool = False
    """True when the copy's model card (:func:`declared_copies`) or its spec (:func:`truncated_inputs`) says so: no
    vector test was made."""

    def to_dict(self) -> dict[str, Any]:
        def num(v: float) -> float | None:
            return round(v, 4) if np.isfinite(v) else None

        return {"copy": self.copy, "parent": self.parent, "relation": self.relation,
                "median_abs_spearman": num(self.median_abs_spearman), "monotone_fit": num(self.monotone_fit),
                "declared": self.declared}


def _column_ranks(x: np.ndarray) -> np.ndarray:
    """Per-column average ranks, centred and scaled to unit norm (float64 (n, d)); constant columns are 0."""
    r = rankdata(x, axis=0).astype(np.float64)
    r -= r.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(r, axis=0, keepdims=True)
    return np.divide(r, norms, out=np.zeros_like(r), where=norms > 0)


def _distinct_per_column(x: np.ndarray) -> float:
    """Median number of distinct values per column (a quantised embedding has few)."""
    xs = np.sort(x, axis=0)
    return float(np.median(1 + np.count_nonzero(np.diff(xs, axis=0), axis=0)))


def _mantissa_bits(x: np.ndarray) -> float:
    """Median over columns of the float32 mantissa bits the column's values need (0 to 23): 23 for computed
    floats, 10 for float16 values, 7 for bfloat16 or int8 levels, 0 for signs and powers of two."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0x7FFFFF)
    low = bits & (~bits + np.uint32(1))  # lowest set bit of the fraction (0 when the fraction is 0)
    used = np.where(bits == 0, 0, 23 - np.log2(np.maximum(low, 1)).astype(np.int64))
    return float(np.median(used.max(axis=0))) if used.size else 23.0


def _row_normalised(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def monotone_fit(copy: np.ndarray, parent: np.ndarray, *, max_columns: int = MAX_COLUMNS, seed: int = 0,
                 normalise: bool = True) -> float:
    """Median over columns j of the R² of the isotonic regression of ``copy[:, j]`` on ``parent[:, j]``.

    Both are row-normalised first when ``normalise`` (a copy may be re-normalised after truncating or quantising;
    a copy quantised with an offset per coordinate, as int8 is, is compared as it is). In each column the
    rows where both are exactly 0 are left out, values of ``parent`` that tie are fitted by their mean ``copy``, and
    the direction (increasing or decreasing) is the sign of the correlation. Columns with fewer than
    :data:`MIN_ROWS` such rows, or a constant copy, are skipped.

    Args:
        copy: float (n, d_C); parent: float (n, d_P) with d_P ≥ d_C (its first d_C columns are used).
        max_columns: columns used (a seeded subset above this).
        seed: seeds the subset.

    Returns:
        R² in [0, 1] (1: the copy is exactly a monotone function of the parent, coordinate by coordinate); NaN when
        no column qualifies.
    """
    from sklearn.isotonic import isotonic_regression

    c, p = np.asarray(copy, dtype=np.float64), np.asarray(parent, dtype=np.float64)[:, : np.shape(copy)[1]]
    if normalise:
        c, p = _row_normalised(c), _row_normalised(p)
    cols = np.arange(c.shape[1])
    if len(cols) > max_columns:
        cols = np.sort(np.random.default_rng([seed, 37]).choice(len(cols), size=max_columns, replace=False))
    r2 = []
    for j in cols:
        keep = ~((c[:, j] == 0) & (p[:, j] == 0))
        x, y = p[keep, j], c[keep, j]
        if len(y) < MIN_ROWS or np.ptp(y) == 0:
            continue
        ux, inv = np.unique(x, return_inverse=True)
        w = np.bincount(inv).astype(np.float64)
        mean_y = np.bincount(inv, weights=y) / w
        increasing = len(ux) < 2 or np.corrcoef(x, y)[0, 1] >= 0
        fitted = isotonic_regression(mean_y, sample_weight=w, increasing=bool(increasing))
        sst = float(((y - y.mean()) ** 2).sum())
        r2.append(1.0 - float(((y - fitted[inv]) ** 2).sum()) / sst)
    return float(np.median(r2)) if r2 else float("nan")


def _differing_options(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> set[str]:
    """The names of the vector options whose values differ between two specs (a missing option is None)."""
    a, b = dict(a or {}), dict(b or {})
    return {k for k in set(a) | set(b) if a.get(k) != b.get(k)}


def spec_relation(a: Any, b: Any) -> str | None:
    """What two candidates' specs say about them: ``"variant"`` (same model and revision, vector options that differ
    in anything but precision or width), ``"precision"`` (they differ only in ``dtype``), or None (different models,
    or only the width differs: the vectors decide).

    Args:
        a, b: ``(model_id, revision, vector options)`` of each candidate.
    """
    (ma, ra, oa), (mb, rb, ob) = a, b
    if ma != mb or ra != rb:
        return None
    differ = _differing_options(oa, ob)
    if not differ:
        return "variant"  # the same vectors: neither is the copy of the other
    if differ <= PRECISION_OPTIONS:
        return "precision"
    if differ <= WIDTH_OPTIONS:
        return None
    return "variant"


def _declared_bits(options: Mapping[str, Any] | None) -> int | None:
    return _DTYPE_BITS.get(str(dict(options or {}).get("dtype", "float32")).lower())


def derived_copies(
    embeddings: Mapping[str, Any], *, threshold: float = THRESHOLD, fit_threshold: float = FIT_THRESHOLD,
    max_items: int = MAX_ITEMS, seed: int = 0, origins: Mapping[str, Any] | None = None,
) -> list[DerivedCopy]:
    """Every (copy, parent) pair among ``embeddings`` (name -> (n, d_k) array, the same n items in the same order).

    Args:
        embeddings: candidate name -> float array (n, d_k).
        threshold: minimum median per-coordinate |Spearman| of the screen (see module docstring).
        fit_threshold: minimum median per-coordinate isotonic R² (:func:`monotone_fit`) of the strict test.
        max_items: rows used (a seeded subsample above this).
        seed: seeds the subsample.
        origins: optional candidate name -> ``(model_id, revision, vector options)``: what the specs say
            (:func:`spec_relation`); variants of one model are then never copies, whatever their vectors.

    Returns:
        the pairs found, sorted by (parent, copy). A copy with several parents (e.g. a truncation of a
        quantisation) is listed once per parent.
    """
    names = list(embeddings)
    if len(names) < 2:
        return []
    mats = {k: as_matrix(embeddings[k], f"embeddings[{k!r}]") for k in names}
    n = next(iter(mats.values())).shape[0]
    rows = np.sort(np.random.default_rng([seed, 31]).choice(n, size=max_items, replace=False)) if n > max_items \
        else np.arange(n)
    sub = {k: np.asarray(v[rows], dtype=np.float64) for k, v in mats.items()}
    ranks = {k: _column_ranks(v) for k, v in sub.items()}
    distinct = {k: _distinct_per_column(v) for k, v in sub.items()}
    bits = {k: _mantissa_bits(mats[k][rows]) for k in names}
    origins = origins or {}
    out = []
    for p in names:
        for c in names:
            dp, dc = sub[p].shape[1], sub[c].shape[1]
            if p == c or dc > dp:
                continue
            declared = spec_relation(origins[c], origins[p]) if c in origins and p in origins else None
            if declared == "variant":
                continue  # another pooling, truncation, resolution or layer of the same model: not a copy
            if declared == "precision":
                bc, bp = _declared_bits(origins[c][2]), _declared_bits(origins[p][2])
                coarser = bc is not None and bp is not None and bc < bp if bc != bp else bits[c] < bits[p]
            else:
                coarser = bits[c] < bits[p] or distinct[c] <= DISTINCT_RATIO * distinct[p]
            if dc == dp and not coarser:
                continue  # same width: only a coarser (quantised) candidate can be the copy
            rho = np.abs(np.einsum("ij,ij->j", ranks[c], ranks[p][:, :dc]))
            med = float(np.median(rho))
            if med < threshold:
                continue
            fit = max(monotone_fit(sub[c], sub[p], seed=seed), monotone_fit(sub[c], sub[p], seed=seed, normalise=False))
            if fit >= fit_threshold:
                out.append(DerivedCopy(c, p, "truncated" if dc < dp else "quantized", med, fit))
    return sorted(out, key=lambda d: (d.parent, d.copy))


def truncated_inputs(origins: Mapping[str, Any]) -> list[DerivedCopy]:
    """The (copy, parent) pairs the specs declare by input length: ``copy`` is the same model and revision as
    ``parent`` with the same vector options except a shorter ``max_length`` (tokens). A parent without
    ``max_length`` reads the model's own maximum, which counts as longer than any value a copy sets.

    Args:
        origins: candidate name -> ``(model_id, revision, vector options)`` (as :func:`derived_copies`).

    Returns:
        the pairs, relation ``"truncated-input"``, ``declared=True``, sorted by (parent, copy); a chain
        (8 < 64 < the model's own) gives every shorter-longer pair.
    """
    out = []
    for c, (mc, rc, oc) in origins.items():
        oc = dict(oc or {})
        if oc.get("max_length") is None:
            continue
        for p, (mp, rp, op) in origins.items():
            if p == c or (mp, rp) != (mc, rc) or _differing_options(oc, op) != INPUT_LENGTH_OPTIONS:
                continue
            op = dict(op or {})
            if op.get("max_length") is None or int(op["max_length"]) > int(oc["max_length"]):
                out.append(DerivedCopy(c, p, "truncated-input", float("nan"), float("nan"), declared=True))
    return sorted(out, key=lambda d: (d.parent, d.copy))


_PRECISION_ORDER = {None: 0, "float32": 0, "int8": 1, "binary": 2}


def declared_reductions(origins: Mapping[str, Any]) -> list[DerivedCopy]:
    """The (copy, parent) pairs the specs declare by ``?truncate_dim=`` / ``?precision=``: ``copy`` is the same
    model and revision as ``parent`` with the same vector options except these, keeping no more dimensions (a parent
    without ``truncate_dim`` keeps all) and no finer precision (float < int8 < binary), and differing in at least
    one. Its vectors are computed from the parent's, so by the data processing inequality it carries no more about
    any labelling of the items than its parent.

    Args:
        origins: candidate name -> ``(model_id, revision, vector options)`` (as :func:`derived_copies`).

    Returns:
        the pairs, relation ``"truncated"`` (fewer dimensions) or ``"quantized"`` (the same width, coarser),
        ``declared=True``, sorted by (parent, copy).
    """
    def width(o: Mapping[str, Any]) -> float:
        return float(o["truncate_dim"]) if o.get("truncate_dim") is not None else float("inf")

    def coarseness(o: Mapping[str, Any]) -> int:
        return _PRECISION_ORDER.get(str(o.get("precision")).lower() if o.get("precision") is not None else None, 0)

    out = []
    for c, (mc, rc, oc) in origins.items():
        oc = dict(oc or {})
        for p, (mp, rp, op) in origins.items():
            op = dict(op or {})
            if p == c or (mp, rp) != (mc, rc) or not _differing_options(oc, op) <= REDUCTION_OPTIONS:
                continue
            if width(oc) <= width(op) and coarseness(oc) >= coarseness(op) and \
                    (width(oc), coarseness(oc)) != (width(op), coarseness(op)):
                relation = "truncated" if width(oc) < width(op) else "quantized"
                out.append(DerivedCopy(c, p, relation, float("nan"), float("nan"), declared=True))
    return sorted(out, key=lambda d: (d.parent, d.copy))


def _name_keys(base: str) -> tuple[str, str]:
    """A ``base_model`` entry as (the whole name, its last path part), lower case: ``org/name``, a folder path."""
    full = base.strip().rstrip("/\\").lower()
    return full, full.replace("\\", "/").rsplit("/", 1)[-1]


def declared_copies(declared: Mapping[str, Any], identities: Mapping[str, tuple[str, Sequence[str], bool]],
                    relations: frozenset[str] = frozenset({"distilled", "quantized"})) -> list[DerivedCopy]:
    """The (copy, parent) pairs that model cards declare: a candidate whose card names a ``base_model`` in the
    pool and a copy relation (a model2vec distillation, a quantisation) is a copy of that model as the pool has it
    with its own settings (a variant of the parent with other vector options is not the parent).

    A ``base_model`` matches a candidate when its whole name or its last path part is one of the candidate's
    aliases (:func:`embedselect.models.candidates.card.model_aliases`); whole-name matches win; names that match candidates
    of more than one model are ambiguous and give no pair.

    Args:
        declared: candidate name -> :class:`~embedselect.models.candidates.card.CardOrigin` (``base_models``,
            ``relation``), for the candidates whose card says something.
        identities: candidate name -> (model id, lower-case aliases, True when it runs with the model's own
            settings, no vector options), for every candidate of the pool.
        relations: the card relations that make a copy.

    Returns:
        the pairs, sorted by (parent, copy), with ``declared=True``.
    """
    out = []
    for c, origin in declared.items():
        if origin is None or origin.relation not in relations or c not in identities:
            continue
        own_model = identities[c][0]
        others = {p: ident for p, ident in identities.items() if p != c and ident[0] != own_model}
        for base in origin.base_models:
            full, last = _name_keys(base)
            exact = [p for p, ident in others.items() if full in ident[1]]
            found = exact or [p for p, ident in others.items() if last in ident[1]]
            parents = [p for p in found if others[p][2]]
            if len({others[p][0] for p in parents}) != 1:
                continue  # nothing in the pool, or ambiguous
            out += [DerivedCopy(c, p, origin.relation, float("nan"), float("nan"), declared=True) for p in parents]
    unique = {(d.copy, d.parent): d for d in out}
    return sorted(unique.values(), key=lambda d: (d.parent, d.copy))


def pool_copies(embeddings: Mapping[str, Any], *, seed: int = 0, origins: Mapping[str, Any] | None = None,
                cards: Mapping[str, Any] | None = None,
                identities: Mapping[str, tuple[str, Sequence[str], bool]] | None = None) -> list[DerivedCopy]:
    """Every (copy, parent) pair of a pool: the copies its vectors show (:func:`derived_copies` with ``embeddings``,
    ``seed`` and ``origins``), then the copies the specs declare by input length (:func:`truncated_inputs`, the
    ``origins`` of the embedded candidates) and by ``truncate_dim`` / ``precision`` (:func:`declared_reductions`) and the copies the model cards declare (:func:`declared_copies` with
    ``cards`` and ``identities``), each pair once."""
    embedded = {k: v for k, v in (origins or {}).items() if k in embeddings}
    reductions = declared_reductions(embedded)  # what the spec declares wins over what the vectors show
    declared = {(d.copy, d.parent) for d in reductions}
    found = [d for d in derived_copies(embeddings, seed=seed, origins=origins) if (d.copy, d.parent) not in declared]
    found += reductions
    seen = {(d.copy, d.parent) for d in found}
    by_spec = truncated_inputs(embedded)
    for d in by_spec + declared_copies(cards or {}, identities or {}):
        if (d.copy, d.parent) not in seen:
            seen.add((d.copy, d.parent))
            found.append(d)
    return found


__all__ = ["FIT_THRESHOLD", "THRESHOLD", "DerivedCopy", "declared_copies", "declared_reductions", "derived_copies",
           "monotone_fit",
           "pool_copies", "spec_relation", "truncated_inputs"]
