"""Use the winner: a FAISS index of the reference data under one candidate, and queries against it; and the
side-by-side neighbour view of several candidates.

``build_index(data, model, out=DIR)`` reads the candidate's vectors of ``data`` from the cache (embedding only
what is missing, through :func:`embedselect.api.embed`), and writes to ``DIR``::

    manifest.json   format, candidate (name, spec, model id, pinned revision, backend, options, seed), run key,
                    data fingerprint / modality / source, n, dim, metric, index type, versions, file sha256s
    index.faiss     the FAISS index (row i = reference item i); cosine: rows L2-normalised, inner product
    rows.jsonl      one JSON object per row: {"row": i, "id": item id, "item": text or image path}
    baseline.npz    only for a fitted baseline (tfidf-svd, pixel-pca): its fit on the reference data as numpy
                    arrays (no pickle), so that queries are embedded exactly as the items were, with no refit

``SearchIndex.load(DIR)`` checks every file against the manifest and, when asked, that the model and the data
are the ones it was built from (:class:`~embedselect.errors.IndexMismatchError` otherwise);
``SearchIndex.search(["query text"])`` embeds the queries with the same model at the same revision (refusing a
model whose files changed) and returns the nearest items.

This module is orchestration: it knows the store, the backends and the metrics, like :mod:`embedselect.api`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect.errors import (
    CandidateError,
    ConfigError,
    DataFileNotFoundError,
    IndexMismatchError,
    SearchIndexError,
)
from embedselect.kinds import FITTED_BASELINES
from embedselect.policy import LoadPolicy

log = logging.getLogger(__name__)

INDEX_FORMAT = 2
"""2: a fitted baseline's fit is saved in ``baseline.npz`` (format 1 refitted it on load)."""
MANIFEST = "manifest.json"
INDEX_FILE = "index.faiss"
ROWS_FILE = "rows.jsonl"
FIT_FILE = "baseline.npz"
FIT_CHECK_ROWS = 256
"""Rows on which a fitted baseline's saved fit is checked against the cached vectors when an index is built."""


@dataclass
class IndexManifest:
    """What a search index was built from (``manifest.json``). ``files``: file name -> sha256 hex."""

    name: str
    spec: str
    model_id: str
    revision: str
    backend: str
    options: dict[str, Any]
    seed: int
    run_key: str
    fingerprint: str
    modality: str
    source: str
    n: int
    dim: int
    metric: str
    index_type: str
    exact: bool
    versions: dict[str, str]
    created_at: str
    files: dict[str, str] = field(default_factory=dict)
    format: int = INDEX_FORMAT
    index_device: str = "cpu"
    """Where the FAISS index was built: ``cpu``, ``cuda:N`` or ``cuda:0,1,… (sharded)`` (written to disk on CPU)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "IndexManifest":
        if int(d.get("format", 0)) > INDEX_FORMAT:
            raise SearchIndexError(f"this index was written by a newer embedselect (format {d.get('format')}); "
                                   "upgrade embedselect or rebuild the index")
        names = {f.name for f in dataclasses.fields(cls)}
        missing = names - set(d) - {"files", "format", "index_device"}
        if missing:
            raise SearchIndexError(f"manifest.json lacks {sorted(missing)}; rebuild the index with `embedselect index`")
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class Hit:
    """One search result: ``rank`` (1 = nearest), ``row`` in the reference data, its ``id`` and ``item`` (text
    or image path), and ``score`` (cosine similarity for the default metric)."""

    rank: int
    row: int
    id: str
    item: str
    score: float


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --- choosing the candidate ------------------------------------------------------------------------------
def best_candidate(store, fingerprint: str) -> tuple[Any, int]:
    """The top-ranked candidate of the newest ranking stored for the data ``fingerprint``.

    Returns:
        ``(Candidate, seed)``: the candidate pinned to the revision that was ranked, and the ranking's seed.

    Raises:
        ConfigError: no ranking of these data is stored (run ``embedselect rank`` first).
    """
    from embedselect.candidates import parse_candidates

    ranking = store.latest_ranking(fingerprint)
    if ranking is None:
        raise ConfigError(
            f"--model best: no ranking of these data (fingerprint {fingerprint[:12]}) is in the cache "
            f"{store.root}; run `embedselect rank` on the same data (same --max-items/--seed) first, or name the model"
        )
    ok = [c for c in ranking["candidates"] if c.get("status", "ok") == "ok" and c.get("rank") is not None]
    if not ok:
        raise ConfigError("--model best: the stored ranking of these data has no ranked candidate; name the model")
    top = min(ok, key=lambda c: c["rank"])
    cand = parse_candidates(top["spec"], modality=ranking["dataset"].get("modality"))[0]
    cand = dataclasses.replace(cand, name=top["name"])
    if cand.kind == "hub" and top.get("revision"):
        cand = dataclasses.replace(cand, revision=top["revision"])
    return cand, int(ranking.get("settings", {}).get("seed", 0) or 0)


def _one_candidate(model: Any, modality: str):
    from embedselect.candidates import Candidate, parse_candidates

    if isinstance(model, Candidate):
        return model
    cands = parse_candidates(model, modality=modality)
    if len(cands) != 1:
        raise ConfigError(f"an index is built for one model; {model!r} names {len(cands)}")
    return cands[0]


# --- building ----------------------------------------------------------------------------------------------
def build_index(
    data: Any,
    model: Any,
    *,
    out: str | Path,
    column: str | None = None,
    max_items: int | None = None,
    seed: int | None = None,
    on_error: str = "fail",
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    token: str | None = None,
    metric: str = "cosine",
    exact: bool | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> "SearchIndex":
    """Write a FAISS index of ``data`` under ``model`` to the folder ``out`` (see the module docstring).

    Args:
        data: as for :func:`embedselect.select` (a file, a folder of images, a list of texts, a ReferenceData).
        model: a candidate spec or :class:`~embedselect.candidates.Candidate`, or ``"best"``: the top candidate
            of the newest ranking of the same data in the cache (its revision and seed are reused).
        out: the index folder; created; an existing index there is replaced only with ``overwrite``.
        seed: root seed (sub-sampling, baselines); default 0, or the ranking's seed for ``"best"``.
        metric: ``cosine`` (default), ``ip`` or ``l2``; exact: see :func:`embedselect.nn.knn`.
        device: embedding device, and where the FAISS index is built (``cuda``: every visible GPU, sharded; the
            index is written for the CPU either way; the manifest's ``index_device`` says which was used).

    Returns:
        the loaded :class:`SearchIndex`.

    Raises:
        ConfigError: ``out`` holds other files, or an index without ``overwrite``; no ranking for ``"best"``.
        CandidateError: the model could not be embedded.
        DataError: the data cannot be loaded.
    """
    import faiss

    from embedselect.version import __version__
    from embedselect.pipeline.context import load_reference_data
    from embedselect.pipeline.embedding import embed_reference
    from embedselect.nn import build_index as faiss_index
    from embedselect.nn import index_device, is_exact, to_cpu
    from embedselect.nn_device import auto_device
    from embedselect.store import Store
    from embedselect.fsguard import check_output_target

    out = check_output_target(Path(out).expanduser(), what="--out")  # not ., /, home; writable: before any work
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not (out / MANIFEST).is_file():
            raise ConfigError(f"{out} exists and is not an embedselect index; choose a new or empty folder for --out")
        if not overwrite:
            raise ConfigError(f"{out} already holds an index; pass overwrite=True (--overwrite) to replace it")
    store = Store.open(cache_dir)
    ref = load_reference_data(data, column=column, labels=None, max_items=max_items, seed=seed or 0, on_error=on_error)
    if isinstance(model, str) and model.strip().lower() == "best":
        cand, ranked_seed = best_candidate(store, ref.fingerprint)
        seed = ranked_seed if seed is None else seed
        log.info("best candidate of the stored ranking: %s", cand.name)
    else:
        cand = _one_candidate(model, ref.modality)
    seed = 0 if seed is None else int(seed)
    [outcome] = embed_reference(ref, [cand], store=store, seed=seed, device=device, batch_size=batch_size,
                                policy=policy, token=token, progress=progress, keep_vectors=True)
    res = outcome.result
    if not res.ok or outcome.vectors is None:
        raise CandidateError(f"{cand.name} could not be embedded: {res.error_type}: {res.error}")
    fit_state = _baseline_fit(cand, res, ref, outcome.vectors, seed=seed) if res.backend in FITTED_BASELINES else None
    index = faiss_index(outcome.vectors, metric=metric, exact=exact, device=auto_device(device))
    cpu_index = to_cpu(index)  # what is written (one copy back from the GPUs, shards merged)
    assert res.model_id and res.revision and res.backend and res.run_key, "an embedded result names its run"
    _write_index_folder(out, cpu_index, ref, fit_state, lambda files: IndexManifest(
        name=cand.name, spec=cand.spec, model_id=res.model_id, revision=res.revision, backend=res.backend,
        options=dict(cand.options), seed=seed, run_key=res.run_key, fingerprint=ref.fingerprint,
        modality=ref.modality, source=ref.source, n=int(index.ntotal), dim=int(index.d), metric=metric,
        index_type=type(cpu_index).__name__, exact=is_exact(index), index_device=index_device(index),
        versions={"embedselect": __version__, "faiss": faiss.__version__},
        created_at=datetime.now(timezone.utc).isoformat(), files=files,
    ))  # fmt: skip
    return SearchIndex.load(out)


def _write_index_folder(out: Path, index: Any, ref: Any, fit_state: dict | None, manifest: Any) -> None:
    """Write the index files into a new folder and swap it in at ``out`` (:func:`embedselect.fsguard.replace_folder`:
    a kill leaves the old index or the new one; a failed write is a :class:`SearchIndexError`, ``out`` untouched)."""
    import faiss

    from embedselect import fsguard

    def fill(tmp: Path) -> None:
        faiss.write_index(index, str(tmp / INDEX_FILE))
        if fit_state is not None:
            np.savez(tmp / FIT_FILE, **fit_state)
        with open(tmp / ROWS_FILE, "w", encoding="utf-8") as f:
            for i, (rid, item) in enumerate(zip(ref.ids, ref.items)):
                f.write(json.dumps({"row": i, "id": str(rid), "item": str(item)}, ensure_ascii=False) + "\n")
        files = {name: _sha256(tmp / name) for name in (INDEX_FILE, ROWS_FILE, FIT_FILE) if (tmp / name).is_file()}
        fsguard.write_text(tmp / MANIFEST, json.dumps(manifest(files).to_dict(), indent=2, default=str) + "\n")
        SearchIndex.load(tmp)  # the new index must load before it replaces the old one

    fsguard.replace_folder(out, fill, error=SearchIndexError, what="the index", legacy_tmp=True)


def _baseline_fit(cand, res, ref, vectors: np.ndarray, *, seed: int) -> dict[str, np.ndarray]:
    """The ``fit_state`` of a fitted baseline (tfidf-svd, pixel-pca) on the reference items, checked to
    reproduce the indexed (cached) vectors on the first :data:`FIT_CHECK_ROWS` rows.

    Fitting is the baseline's whole cost (no model is run); it happens once, here, and never when searching.

    Raises:
        SearchIndexError: the fit does not reproduce the cached vectors (they came from another version).
    """
    from embedselect.backends.loader import load_embedder
    from embedselect.candidates import resolve_candidate

    rc = resolve_candidate(cand, policy=LoadPolicy())
    embedder = load_embedder(rc, seed=seed, fit_items=list(ref.items))
    rows = min(FIT_CHECK_ROWS, len(ref))
    again = np.asarray(embedder.embed(list(ref.items[:rows])), dtype=np.float32)
    if again.shape != (rows, vectors.shape[1]) or not np.allclose(again, vectors[:rows], rtol=1e-4, atol=1e-5):
        raise SearchIndexError(
            f"{cand.name}: fitting it on the reference data again does not reproduce its cached vectors (were they "
            f"made by another embedselect or scikit-learn version?); remove them with `embedselect cache rm --model "
            f"{cand.name}` and build the index again"
        )
    return getattr(embedder, "fit_state")()  # the fitted baselines have it (the Embedder protocol does not)


# --- loading and searching -------------------------------------------------------------------------------
class SearchIndex:
    """A loaded, checked search index. Build one with :func:`build_index`; open one with :meth:`load`.

    Attributes:
        directory: the index folder; manifest: its :class:`IndexManifest`; index: the ``faiss.Index``;
        ids / items: per row, the item id and the item (text, or image path as a string).
    """

    def __init__(self, directory: Path, manifest: IndexManifest, index: Any, ids: list[str], items: list[str]):
        self.directory = directory
        self.manifest = manifest
        self.index = index
        self.ids = ids
        self.items = items
        self._embedder: Any = None

    def __len__(self) -> int:
        return self.manifest.n

    def __repr__(self) -> str:
        m = self.manifest
        return f"SearchIndex({m.name!r}, n={m.n}, dim={m.dim}, metric={m.metric}, dir={str(self.directory)!r})"

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        model: Any = None,
        data: Any = None,
        column: str | None = None,
        max_items: int | None = None,
        seed: int | None = None,
        verify: bool = True,
    ) -> "SearchIndex":
        """Open the index in ``directory`` and check it.

        Args:
            model: if given, the spec (or candidate name / model id) the index must have been built with.
            data: if given, the reference data it must have been built from (loaded like :func:`build_index`
                does, with ``column`` / ``max_items`` / ``seed``; default seed: the manifest's).
            verify: check the files' sha256 against the manifest.

        Raises:
            SearchIndexError: no index there, or an unreadable one.
            IndexMismatchError: files changed since the index was written, another model, or changed data.
        """
        import faiss

        d = Path(directory).expanduser()
        mpath = d / MANIFEST
        if not mpath.is_file():
            raise SearchIndexError(f"{d} is not an embedselect index (no {MANIFEST}); build one with `embedselect index`")
        try:
            manifest = IndexManifest.from_dict(json.loads(mpath.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as exc:
            raise SearchIndexError(f"{mpath} is unreadable ({exc}); rebuild the index with `embedselect index`") from exc
        for name in (INDEX_FILE, ROWS_FILE, *([FIT_FILE] if FIT_FILE in manifest.files else [])):
            if not (d / name).is_file():
                raise SearchIndexError(f"{d / name} is missing; rebuild the index with `embedselect index`")
            if verify and name in manifest.files and _sha256(d / name) != manifest.files[name]:
                raise IndexMismatchError(
                    f"{d / name} changed since the index was written (checksum mismatch); rebuild it with "
                    "`embedselect index ... --overwrite`"
                )
        try:
            index = faiss.read_index(str(d / INDEX_FILE))
        except RuntimeError as exc:
            raise SearchIndexError(f"{d / INDEX_FILE} cannot be read by FAISS ({str(exc).splitlines()[0]})") from exc
        rows = [json.loads(line) for line in (d / ROWS_FILE).read_text(encoding="utf-8").splitlines() if line]
        if index.ntotal != manifest.n or index.d != manifest.dim or len(rows) != manifest.n:
            raise IndexMismatchError(
                f"{d}: the index holds {index.ntotal} vectors of dimension {index.d} and {len(rows)} rows, the "
                f"manifest says {manifest.n} x {manifest.dim}; rebuild the index"
            )
        self = cls(d, manifest, index, [str(r["id"]) for r in rows], [str(r["item"]) for r in rows])
        if model is not None:
            self.check_model(model)
        if data is not None:
            self.check_data(data, column=column, max_items=max_items, seed=seed)
        return self

    def check_model(self, model: Any) -> None:
        """Raise :class:`IndexMismatchError` unless ``model`` (a spec, candidate name, model id or Candidate)
        is the model this index was built with."""
        m = self.manifest
        given = getattr(model, "spec", model)
        given_s = str(given).strip()
        known = {m.spec, m.name, m.model_id}
        if given_s in known:
            return
        try:
            cand = _one_candidate(model, m.modality)
        except Exception:  # noqa: BLE001 - an unparsable spec simply does not match
            cand = None
        if cand is not None:
            ref = cand.ref if cand.kind == "hub" else (f"local:{cand.ref}" if cand.kind == "local" else f"baseline:{cand.ref}")
            same_rev = cand.revision in (None, m.revision)
            if ref == m.model_id and same_rev and dict(cand.options) == dict(m.options):
                return
        raise IndexMismatchError(
            f"the index in {self.directory} was built with {m.name} ({m.model_id}@{m.revision[:12]}), not {given_s!r}; "
            f"search it without --model, or build an index for {given_s!r} with `embedselect index`"
        )

    def check_data(self, data: Any, *, column: str | None = None, max_items: int | None = None,
                   seed: int | None = None) -> None:
        """Raise :class:`IndexMismatchError` unless ``data`` has the fingerprint the index was built from."""
        from embedselect.pipeline.context import load_reference_data

        seed = self.manifest.seed if seed is None else seed
        ref = load_reference_data(data, column=column, labels=None, max_items=max_items, seed=seed, on_error="fail")
        if ref.fingerprint != self.manifest.fingerprint:
            raise IndexMismatchError(
                f"the reference data changed: {ref.source} has fingerprint {ref.fingerprint[:12]} ({len(ref)} items), "
                f"the index in {self.directory} was built from {self.manifest.source} with fingerprint "
                f"{self.manifest.fingerprint[:12]} ({self.manifest.n} items); rebuild it with `embedselect index "
                "... --overwrite`"
            )

    def _load_embedder(self, *, device: str | None, policy: LoadPolicy | None, token: str | None):
        from embedselect.backends.device import library_progress
        from embedselect.backends.loader import load_embedder
        from embedselect.candidates import parse_candidates, resolve_candidate

        m = self.manifest
        policy = policy or LoadPolicy()
        cand = parse_candidates(m.spec, modality=m.modality)[0]
        if cand.kind == "hub":
            cand = dataclasses.replace(cand, revision=m.revision)
        with library_progress(False):
            rc = resolve_candidate(cand, policy=policy.for_model(cand.ref), token=token)
        if rc.model_id != m.model_id or rc.revision != m.revision:
            raise IndexMismatchError(
                f"the model changed since the index in {self.directory} was built: {m.spec} now resolves to "
                f"{rc.model_id}@{rc.revision[:12]}, the index holds vectors of {m.model_id}@{m.revision[:12]}; "
                "rebuild the index with `embedselect index ... --overwrite`"
            )
        state = None
        if rc.backend in FITTED_BASELINES:  # the fit saved with the index, never a refit
            if FIT_FILE not in m.files or not (self.directory / FIT_FILE).is_file():
                raise SearchIndexError(
                    f"the index in {self.directory} holds {m.name} vectors but not its fit ({FIT_FILE}; indexes "
                    "before format 2 lack it); rebuild it with `embedselect index ... --overwrite`"
                )
            with np.load(self.directory / FIT_FILE, allow_pickle=False) as npz:
                state = {k: npz[k] for k in npz.files}
        with library_progress(False):
            try:
                return load_embedder(rc, device=device, policy=policy.for_model(cand.ref), seed=m.seed,
                                     fit_state=state)
            except ConfigError as exc:
                if state is None:
                    raise
                raise SearchIndexError(f"{self.directory / FIT_FILE} does not fit {m.name}: {exc}; rebuild the "
                                       "index with `embedselect index ... --overwrite`") from exc

    def embed_queries(self, queries: Sequence[Any], *, device: str | None = None, policy: LoadPolicy | None = None,
                      token: str | None = None) -> np.ndarray:
        """Embed texts (or image paths, for an image index) with the index's model: float32 (m, dim)."""
        queries = [queries] if isinstance(queries, (str, Path)) else list(queries)
        if not queries:
            raise ConfigError("give at least one query")
        blank = [i for i, q in enumerate(queries) if isinstance(q, str) and not q.strip()]
        if blank:  # an empty text embeds to some vector all the same, and would get k meaningless hits
            nums = ", ".join(str(i + 1) for i in blank[:5])
            what = ("the query is" if len(queries) == 1 else f"query {nums} of {len(queries)} is" if len(blank) == 1
                    else f"queries {nums}{', ...' if len(blank) > 5 else ''} of {len(queries)} are")
            raise ConfigError(f"{what} empty: give the "
                              f"{'image path' if self.manifest.modality == 'image' else 'text'} to search for")
        if self.manifest.modality == "image":
            paths = [Path(q).expanduser() for q in queries]
            for p in paths:
                if not p.is_file():
                    raise DataFileNotFoundError(f"query image {p} does not exist; an image index is searched with "
                                                "image paths")
            queries = paths
        if self._embedder is None:
            self._embedder = self._load_embedder(device=device, policy=policy, token=token)
        vecs = np.asarray(self._embedder.embed(queries), dtype=np.float32)
        if vecs.shape != (len(queries), self.manifest.dim):
            raise IndexMismatchError(
                f"{self.manifest.name} now returns vectors of shape {vecs.shape[1:]}, the index holds dimension "
                f"{self.manifest.dim}; rebuild the index"
            )
        return vecs

    def search_vectors(self, vectors: Any, k: int = 10) -> list[list[Hit]]:
        """The ``k`` nearest indexed items of each query vector (m, dim), nearest first."""
        from embedselect.nn import search_index

        k = min(int(k), self.manifest.n)
        scores, ids = search_index(self.index, np.asarray(vectors, dtype=np.float32), k, metric=self.manifest.metric)
        return [
            [Hit(rank=r + 1, row=int(i), id=self.ids[i], item=self.items[i], score=float(s))
             for r, (s, i) in enumerate(zip(srow, irow)) if i >= 0]
            for srow, irow in zip(scores, ids)
        ]  # fmt: skip

    def search(self, queries: Any, k: int = 10, *, device: str | None = None, policy: LoadPolicy | None = None,
               token: str | None = None) -> list[list[Hit]]:
        """Embed ``queries`` (a text, an image path, or a list of them) with the index's model and return the
        ``k`` nearest items of each, nearest first."""
        return self.search_vectors(self.embed_queries(queries, device=device, policy=policy, token=token), k)


def search(directory: str | Path, queries: Any, k: int = 10, *, model: Any = None, **kw: Any) -> list[list[Hit]]:
    """Open the index in ``directory`` (checked against ``model`` when given) and search it: see
    :meth:`SearchIndex.search`."""
    return SearchIndex.load(directory, model=model).search(queries, k, **kw)


# --- look at the neighbours -------------------------------------------------------------------------------
@dataclass
class NeighbourView:
    """Nearest neighbours of a few sample items under each candidate, side by side (:func:`neighbours_view`).

    Attributes:
        names: candidate names (embedded successfully), in the order given.
        rows: the sample's row numbers in the reference data; ids / items: their ids and items (str).
        neighbours: name -> one list per sample row of ``(row, score)`` pairs, nearest first (score: cosine).
        agreement: mutual k-NN agreement matrix (:class:`~embedselect.metrics.neighbours.KnnAgreement`) over all
            items, or None with a single candidate; knn_communities: its Louvain communities.
        sufficiency_communities: the information-sufficiency communities of the newest stored ranking of the
            same data, when it has them (read from the store, not recomputed).
        near_duplicates: name -> :meth:`NearDuplicates.to_dict` when a threshold was given.
        failed: name -> error message of candidates that could not be embedded.
    """

    names: list[str]
    rows: list[int]
    ids: list[str]
    items: list[str]
    neighbours: dict[str, list[list[tuple[int, float]]]]
    all_ids: list[str] = field(repr=False, default_factory=list)
    all_items: list[str] = field(repr=False, default_factory=list)
    agreement: Any = None
    knn_communities: list[list[str]] | None = None
    sufficiency_communities: list[list[str]] | None = None
    near_duplicates: dict[str, dict[str, Any]] = field(default_factory=dict)
    near_duplicate_keep: Any = field(default=None, repr=False)
    failed: dict[str, str] = field(default_factory=dict)
    modality: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidates": self.names,
            "modality": self.modality,
            "sample": [
                {"row": r, "id": i, "item": it,
                 "neighbours": {nm: [{"row": int(j), "id": self.all_ids[j], "item": self.all_items[j],
                                      "score": float(sc)} for j, sc in self.neighbours[nm][s]]
                                for nm in self.names}}
                for s, (r, i, it) in enumerate(zip(self.rows, self.ids, self.items))
            ],
            "agreement": None if self.agreement is None else self.agreement.to_dict(),
            "knn_communities": self.knn_communities,
            "sufficiency_communities": self.sufficiency_communities,
            "near_duplicates": self.near_duplicates,
            "failed": self.failed,
        }  # fmt: skip

    def to_text(self, width: int = 60) -> str:
        def short(t: str) -> str:
            t = " ".join("".join(ch for ch in str(t) if ch.isprintable() or ch.isspace()).split())
            return t if len(t) <= width else t[: width - 1] + "…"

        lines = []
        for s, (r, i, it) in enumerate(zip(self.rows, self.ids, self.items)):
            lines.append(f"item {i} (row {r}): {short(it)}")
            for nm in self.names:
                lines.append(f"  {nm}:")
                for j, sc in self.neighbours[nm][s]:
                    lines.append(f"    {sc:6.3f}  {short(self.all_items[j])}")
            lines.append("")
        if self.agreement is not None:
            a = self.agreement
            lines.append(f"mutual {a.k}-NN agreement over {a.n} items (1 = same neighbours; chance ~{a.k / max(a.n - 1, 1):.3f}):")
            lines.append(a.to_frame().round(3).to_string())
            lines.append(f"k-NN communities: {self.knn_communities}")
            if self.sufficiency_communities is not None:
                lines.append(f"information-sufficiency communities (stored ranking): {self.sufficiency_communities}")
        for nm, nd in self.near_duplicates.items():
            lines.append(f"near-duplicates under {nm} (cosine >= {nd['threshold']}): {nd['n_pairs']} pairs in "
                         f"{nd['n_groups']} groups; dropping keeps {nd['n_items'] - nd['n_drop']} of {nd['n_items']}")
        for nm, err in self.failed.items():
            lines.append(f"{nm}: failed - {err}")
        return "\n".join(lines).rstrip() + "\n"

    def to_html(self) -> str:
        """A self-contained HTML section (every data and hub string escaped) that a report can include."""
        from html import escape as e

        parts = ['<section class="neighbours"><h2>Nearest neighbours by candidate</h2>']
        head = "".join(f"<th>{e(nm)}</th>" for nm in self.names)
        parts.append(f"<table><thead><tr><th>item</th>{head}</tr></thead><tbody>")
        for s, (i, it) in enumerate(zip(self.ids, self.items)):
            cells = "".join(
                "<td><ol>" + "".join(f"<li>{e(self.all_items[j])} <small>({sc:.3f})</small></li>"
                                     for j, sc in self.neighbours[nm][s]) + "</ol></td>"
                for nm in self.names
            )
            parts.append(f"<tr><th>{e(it)}<br><small>{e(i)}</small></th>{cells}</tr>")
        parts.append("</tbody></table>")
        if self.agreement is not None:
            a = self.agreement
            parts.append(f"<h3>Mutual {a.k}-NN agreement</h3><table><tr><th></th>{head}</tr>")
            for x, nm in enumerate(self.names):
                row = "".join(f"<td>{a.matrix[x, y]:.3f}</td>" for y in range(len(self.names)))
                parts.append(f"<tr><th>{e(nm)}</th>{row}</tr>")
            parts.append("</table>")
            parts.append(f"<p>k-NN communities: {e(str(self.knn_communities))}</p>")
            if self.sufficiency_communities is not None:
                parts.append(f"<p>Information-sufficiency communities: {e(str(self.sufficiency_communities))}</p>")
        parts.append("</section>")
        return "\n".join(parts)


def _stored_communities(store, fingerprint: str) -> list[list[str]] | None:
    ranking = store.latest_ranking(fingerprint)
    if ranking is None:
        return None
    comms = ranking.get("details", {}).get("sufficiency", {}).get("communities")
    return [list(map(str, c)) for c in comms] if comms else None


def neighbours_view(
    data: Any,
    candidates: Any,
    *,
    sample: int = 5,
    rows: Sequence[int] | None = None,
    k: int = 5,
    agreement_k: int = 10,
    near_duplicate_threshold: float | None = None,
    column: str | None = None,
    max_items: int | None = None,
    seed: int = 0,
    on_error: str = "fail",
    cache_dir: str | Path | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    policy: LoadPolicy | None = None,
    token: str | None = None,
    progress: bool = False,
) -> NeighbourView:
    """For ``sample`` seeded items of ``data`` (or the given ``rows``), their ``k`` nearest other items under
    each candidate (cosine, exact FAISS search; vectors from the cache), the mutual k-NN agreement of the
    candidates over all items, and, with ``near_duplicate_threshold``, near-duplicate counts per candidate
    (``near_duplicate_keep``: the keep-mask under the *first* candidate, for dropping them).

    Memory: every candidate's (n, d) matrix is held at once (as in :func:`embedselect.select`).
    """
    from embedselect.pipeline.context import load_reference_data
    from embedselect.pipeline.embedding import embed_reference
    from embedselect.metrics.neighbours import mutual_knn_agreement
    from embedselect.nn import build_index as faiss_index
    from embedselect.nn import knn, near_duplicates, prepare, search_index
    from embedselect.nn_device import auto_device
    from embedselect.store import Store

    store = Store.open(cache_dir)
    ref = load_reference_data(data, column=column, labels=None, max_items=max_items, seed=seed, on_error=on_error)
    n = len(ref)
    if n < 2:
        raise ConfigError("looking at neighbours needs at least 2 items")
    if rows is None:
        rng = np.random.default_rng(seed)
        rows = sorted(rng.choice(n, size=min(int(sample), n), replace=False).tolist())
    rows = [int(r) for r in rows]
    bad = [r for r in rows if not 0 <= r < n]
    if bad:
        raise ConfigError(f"rows {bad} are outside the data's {n} items")
    k = max(1, min(int(k), n - 1))
    outcomes = embed_reference(ref, candidates, store=store, seed=seed, device=device, batch_size=batch_size,
                               policy=policy, token=token, progress=progress, keep_vectors=True)
    ok = {o.result.name: o.vectors for o in outcomes if o.result.ok}
    failed = {o.result.name: f"{o.result.error_type}: {o.result.error}" for o in outcomes if not o.result.ok}
    if not ok:
        raise CandidateError("no candidate could be embedded: " + "; ".join(f"{a}: {b}" for a, b in failed.items()))
    view = NeighbourView(
        names=list(ok), rows=rows, ids=[str(ref.ids[r]) for r in rows], items=[str(ref.items[r]) for r in rows],
        neighbours={}, all_ids=[str(i) for i in ref.ids], all_items=[str(i) for i in ref.items], failed=failed,
        modality=ref.modality,
    )  # fmt: skip
    for nm, vecs in ok.items():
        x = prepare(vecs, "cosine")
        sc, ids = search_index(faiss_index(x, metric="cosine", prepared=True, device=auto_device(device)), x[rows],
                               k, prepared=True,
                               self_ids=np.asarray(rows, dtype=np.int64))
        view.neighbours[nm] = [[(int(j), float(v)) for j, v in zip(irow, srow) if j >= 0] for irow, srow in zip(ids, sc)]
    # one cosine k-NN graph per candidate, shared by the agreement and the near-duplicates
    ka = min(int(agreement_k), n - 1)
    need = max(ka if len(ok) > 1 else 0, min(10, n - 1) if near_duplicate_threshold is not None else 0)
    graphs = {nm: knn(vecs, need, device=auto_device(device)) for nm, vecs in ok.items()} if need else {}
    if len(ok) > 1:
        view.agreement = mutual_knn_agreement(ok, k=ka, graphs=graphs)
        view.knn_communities = view.agreement.communities(seed=seed)
        view.sufficiency_communities = _stored_communities(store, ref.fingerprint)
    if near_duplicate_threshold is not None:
        for i, (nm, vecs) in enumerate(ok.items()):
            nd = near_duplicates(vecs, threshold=near_duplicate_threshold, graph=graphs[nm])
            view.near_duplicates[nm] = nd.to_dict()
            if i == 0:
                view.near_duplicate_keep = nd.keep
    return view


__all__ = ["Hit", "IndexManifest", "NeighbourView", "SearchIndex", "best_candidate", "build_index",
           "neighbours_view", "search"]
