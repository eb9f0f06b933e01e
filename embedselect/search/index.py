"""A loaded search index (:class:`SearchIndex`): its checks, the embedding of queries, and the search itself."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from embedselect.errors import (
    ConfigError,
    DataFileNotFoundError,
    IndexMismatchError,
    SearchIndexError,
)
from embedselect._util.kinds import FITTED_BASELINES
from embedselect.config import LoadPolicy
from embedselect.search.manifest import (
    FIT_FILE,
    INDEX_FILE,
    MANIFEST,
    ROWS_FILE,
    IndexManifest,
    one_candidate,
    sha256_file,
)

log = logging.getLogger("embedselect.search")


@dataclass
class Hit:
    """One search result: ``rank`` (1 = nearest), ``row`` in the reference data, its ``id`` and ``item`` (text
    or image path), and ``score`` (cosine similarity for the default metric)."""

    rank: int
    row: int
    id: str
    item: str
    score: float


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
        id_column: str | None = None,
    ) -> "SearchIndex":
        """Open the index in ``directory`` and check it.

        Args:
            model: if given, the spec (or candidate name / model id) the index must have been built with.
            data: if given, the reference data it must have been built from (loaded like :func:`build_index`
                does, with ``column`` / ``id_column`` / ``max_items`` / ``seed``; default seed: the manifest's): the
                same items, and the same item ids.
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
            if verify and name in manifest.files and sha256_file(d / name) != manifest.files[name]:
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
            self.check_data(data, column=column, max_items=max_items, seed=seed, id_column=id_column)
        elif id_column is not None:
            raise ConfigError("id_column / --id-column is the id column of the data checked against the index; give "
                              "the data (--data) with it, or drop it (the index holds the ids it was built with)")
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
            cand = one_candidate(model, m.modality)
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
                   seed: int | None = None, id_column: str | None = None) -> None:
        """Raise :class:`IndexMismatchError` unless ``data`` has the fingerprint the index was built from and the
        same item ids (the fingerprint covers the items only: the same texts loaded with another ``id_column`` have
        other ids, which the index's hits must not name)."""
        from embedselect.pipeline.context import load_reference_data

        from embedselect.config import RankConfig

        seed = self.manifest.seed if seed is None else seed
        ref = load_reference_data(data, RankConfig(column=column, max_items=max_items, seed=seed, id_column=id_column))
        if ref.fingerprint != self.manifest.fingerprint:
            raise IndexMismatchError(
                f"the reference data changed: {ref.source} has fingerprint {ref.fingerprint[:12]} ({len(ref)} items), "
                f"the index in {self.directory} was built from {self.manifest.source} with fingerprint "
                f"{self.manifest.fingerprint[:12]} ({self.manifest.n} items); rebuild it with `embedselect index "
                "... --overwrite`"
            )
        if list(ref.ids) != self.ids:
            diff = next(i for i, (a, b) in enumerate(zip(ref.ids, self.ids)) if a != b)
            how = f"--id-column {id_column}" if id_column else "row numbers as ids (no --id-column)"
            raise IndexMismatchError(
                f"the index in {self.directory} holds the same items as {ref.source} but other item ids (item {diff + 1}: "
                f"{self.ids[diff][:40]!r} in the index, {ref.ids[diff][:40]!r} in the data with {how}); give the "
                "--id-column the index was built with, or rebuild it with `embedselect index ... --id-column NAME "
                "--overwrite`"
            )

    def _load_embedder(self, *, device: str | None, policy: LoadPolicy | None, token: str | None):
        from embedselect.models.backends.device import library_output
        from embedselect.models.backends.loader import load_embedder
        from embedselect.models.candidates import parse_candidates, resolve_candidate

        m = self.manifest
        policy = policy or LoadPolicy()
        cand = parse_candidates(m.spec, modality=m.modality)[0]
        if cand.kind == "hub":
            cand = dataclasses.replace(cand, revision=m.revision)
        with library_output():
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
        with library_output():
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
        from embedselect.nn.knn import search_index

        k = min(int(k), self.manifest.n)
        scores, ids = search_index(self.index, np.asarray(vectors, dtype=np.float32), k, metric=self.manifest.metric)
        return [
            [Hit(rank=r + 1, row=int(i), id=self.ids[i], item=self.items[i], score=float(s))
             for r, (s, i) in enumerate(zip(srow, irow)) if i >= 0]
            for srow, irow in zip(scores, ids)
        ]

    def search(self, queries: Any, k: int = 10, *, device: str | None = None, policy: LoadPolicy | None = None,
               token: str | None = None) -> list[list[Hit]]:
        """Embed ``queries`` (a text, an image path, or a list of them) with the index's model and return the
        ``k`` nearest items of each, nearest first. A query whose embedding is all zeros (no word of it in a
        TF-IDF model's vocabulary) is equally far from every item: a warning says its hits are arbitrary."""
        vectors = np.asarray(self.embed_queries(queries, device=device, policy=policy, token=token), dtype=np.float32)
        texts = [queries] if isinstance(queries, (str, Path)) else list(queries)
        for q, v in zip(texts, vectors):
            if not np.any(v):
                log.warning("the query %r embeds to a zero vector under %s (for a TF-IDF model: none of its words "
                            "occur in the indexed items): it is as near to every item, and its hits are arbitrary",
                            str(q)[:80], self.manifest.name)
        return self.search_vectors(vectors, k)


def search(directory: str | Path, queries: Any, k: int = 10, *, model: Any = None, **kw: Any) -> list[list[Hit]]:
    """Open the index in ``directory`` (checked against ``model`` when given) and search it: see
    :meth:`SearchIndex.search`."""
    return SearchIndex.load(directory, model=model).search(queries, k, **kw)
