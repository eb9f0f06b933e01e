"""Building a search index: its candidate (``best``: from the stored ranking), vectors, baseline fit and folder."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from embedselect.errors import CandidateError, ConfigError, SearchIndexError
from embedselect._util.kinds import FITTED_BASELINES
from embedselect.config import LoadPolicy, RankConfig, Runtime
from embedselect.search.index import SearchIndex
from embedselect.search.manifest import (
    FIT_CHECK_ROWS,
    FIT_FILE,
    INDEX_FILE,
    MANIFEST,
    ROWS_FILE,
    IndexManifest,
    one_candidate,
    sha256_file,
)

log = logging.getLogger("embedselect.search")  # the search's logger, as before the split


# --- choosing the candidate ------------------------------------------------------------------------------
def best_candidate(store, fingerprint: str) -> tuple[Any, int]:
    """The top-ranked candidate of the newest ranking stored for the data ``fingerprint``.

    Returns:
        ``(Candidate, seed)``: the candidate pinned to the revision that was ranked, and the ranking's seed.

    Raises:
        ConfigError: no ranking of these data is stored (run ``embedselect rank`` first).
    """
    ranking = store.latest_ranking(fingerprint)
    if ranking is None:
        raise ConfigError(
            f"--model best: no ranking of these data (fingerprint {fingerprint[:12]}) is in the cache "
            f"{store.root}; run `embedselect rank` on the same data (same --max-items) first, or name the model"
        )
    return _top_of(ranking)


def _top_of(ranking: dict[str, Any]) -> tuple[Any, int]:
    """The candidate ``--model best`` indexes: the stored ranking's first row, or, when that row is not a pick (a
    built-in baseline, or a checkpoint its ``untrained-checkpoint`` notes name), its first row that is neither; a
    warning says so, and names the leaders when the ranking did not decide."""
    from embedselect.models.candidates import parse_candidates

    ok = [c for c in ranking["candidates"] if c.get("status", "ok") == "ok" and c.get("rank") is not None]
    if not ok:
        raise ConfigError("--model best: the stored ranking of these data has no ranked candidate; name the model")
    from embedselect._util.kinds import kind_of_model_id

    ok.sort(key=lambda c: c["rank"])
    top = ok[0]
    untrained = {n for w in ranking.get("warnings") or [] if isinstance(w, dict)
                 and w.get("code") == "untrained-checkpoint" for n in w.get("candidates") or []}
    picks = [c for c in ok if kind_of_model_id(c.get("model_id")) != "baseline" and c["name"] not in untrained]
    if picks and picks[0] is not top:  # the ranking itself says such a first row "is not a pick"
        what = ("looks like an untrained checkpoint" if top["name"] in untrained else
                "is a built-in baseline (it measures what the models add)")
        log.warning("--model best: %s is first in the ranking of these data, but it %s, and is not a pick: indexing "
                    "the first candidate that is neither untrained nor a baseline, %s", top["name"], what,
                    picks[0]["name"])
        top = picks[0]
    if ranking.get("decided") is False:
        log.warning("--model best: the ranking of these data named no clear winner (leaders: %s); indexing %s; "
                    "name another with --model NAME", ", ".join(ranking.get("leaders") or []), top["name"])
    cand = parse_candidates(top["spec"], modality=ranking["dataset"].get("modality"))[0]
    cand = dataclasses.replace(cand, name=top["name"])
    if cand.kind == "hub" and top.get("revision"):
        cand = dataclasses.replace(cand, revision=top["revision"])
    return cand, int(ranking.get("settings", {}).get("seed", 0) or 0)


def _best_of_stored(store: Any, data: Any, ref: Any, config: RankConfig) -> tuple[Any, int, Any]:
    """``(candidate, seed, reference data)`` for ``model="best"``: the top of the newest ranking of ``ref``'s data.

    With ``max_items`` the sub-sample depends on the seed: when no ranking of the sample drawn with ``config.seed``
    is stored, the newest ranking of the same source, ``max_items`` and ``drop_duplicates`` made with another seed
    is used, and the data are sampled again with its seed (the fingerprints must then agree).

    Raises:
        ConfigError: no ranking of these data is stored.
    """
    from embedselect.pipeline.context import load_reference_data

    ranking = store.latest_ranking(ref.fingerprint)
    if ranking is None and config.max_items is not None and len(ref) >= config.max_items:
        for row in store.list_rankings().itertuples():
            if row.fingerprint == ref.fingerprint:
                continue
            other = store.get_ranking(row.ranking_id) or {}
            st = other.get("settings") or {}
            if ((other.get("dataset") or {}).get("source") != ref.source or st.get("max_items") != config.max_items
                    or st.get("drop_duplicates") != config.drop_duplicates or st.get("seed") == config.seed):
                continue
            again = load_reference_data(data, config.replace(seed=int(st.get("seed") or 0)))
            if again.fingerprint == row.fingerprint:
                log.info("--model best: the ranking of %s sampled with seed %s", ref.source, st.get("seed"))
                ref, ranking = again, other
                break
    if ranking is None:
        best_candidate(store, ref.fingerprint)  # raises its ConfigError
    cand, seed = _top_of(ranking)
    return cand, seed, ref


# --- building ----------------------------------------------------------------------------------------------
def build_index(
    data: Any,
    model: Any,
    *,
    out: str | Path,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
    metric: str = "cosine",
    exact: bool | None = None,
    overwrite: bool = False,
) -> "SearchIndex":
    """Write a FAISS index of ``data`` under ``model`` to the folder ``out`` (see the module docstring).

    Args:
        data: as for :func:`embedselect.select` (a file, a folder of images, a list of texts, a ReferenceData).
        model: a candidate spec or :class:`~embedselect.models.candidates.Candidate`, or ``"best"``: the top candidate
            of the newest ranking of the same data in the cache (its revision and seed are reused; with
            ``max_items``, a ranking of a sub-sample drawn with another seed is found too).
        out: the index folder; created; an existing index there is replaced only with ``overwrite``.
        config: the data settings (``column``, ``id_column``, ``max_items``, ``seed``, ``on_error``, ``drop_duplicates``) and the
            load ``policy`` of a :class:`~embedselect.config.RankConfig` (default ``RankConfig()``); ``seed``
            seeds the sub-sample and the baselines (for ``"best"``: the ranking's seed).
        runtime: ``cache_dir``, ``device`` (embedding, and where the FAISS index is built: ``cuda`` uses every
            visible GPU, sharded; the index is written for the CPU either way; the manifest's ``index_device`` says
            which was used), ``batch_size``, ``token`` and ``progress``.
        metric: ``cosine`` (default), ``ip`` or ``l2``; exact: see :func:`embedselect.nn.knn.knn`.

    Returns:
        the loaded :class:`SearchIndex`.

    Raises:
        ConfigError: ``out`` holds other files, or an index without ``overwrite``; no ranking for ``"best"``; a
            config with labels; a ``?truncate_dim=`` / ``?precision=`` variant (an index holds a model's own
            vectors, which its queries can be embedded to).
        CandidateError: the model could not be embedded.
        DataError: the data cannot be loaded.
    """
    import faiss

    from embedselect.version import __version__
    from embedselect.pipeline.context import load_reference_data
    from embedselect.pipeline.embedding import embed_reference
    from embedselect._util.kinds import REDUCTION_OPTIONS
    from embedselect.nn.knn import build_index as faiss_index
    from embedselect.nn.knn import index_device, is_exact, to_cpu
    from embedselect.nn.device import auto_device
    from embedselect.store import Store, default_cache_dir

    config, runtime = config or RankConfig(), runtime or Runtime()
    if config.labels is not None:
        raise ConfigError("an index reads no labels: drop labels from the config")
    out = _check_out(out, runtime.cache_dir or default_cache_dir(), overwrite=overwrite)  # before any work
    store = Store.open(runtime.cache_dir)
    ref = load_reference_data(data, config)
    if isinstance(model, str) and model.strip().lower() == "best":
        cand, seed, ref = _best_of_stored(store, data, ref, config)
        config = config.replace(seed=seed)
        log.info("best candidate of the stored ranking: %s", cand.name)
    else:
        cand = one_candidate(model, ref.modality)
    if cand.kind in ("api", "embedder") and not cand.revision:  # its vectors are kept for one run only
        fix = "add ?revision=NAME to its spec" if cand.kind == "api" else "give Candidate(..., revision=...)"
        raise ConfigError(f"{cand.name}: an index needs a model pinned to a revision, so that a query is embedded by "
                          f"the model that embedded the items; a {'hosted API' if cand.kind == 'api' else 'embedder'} "
                          f"without one may change behind its name: {fix}")
    reduced = sorted(k for k in REDUCTION_OPTIONS if cand.options.get(k) is not None)
    if reduced:
        raise ConfigError(f"{cand.name} is a {'/'.join('?' + k + '=' for k in reduced)} variant of its model: an index "
                          "holds a model's own vectors; index the model without these options")
    seed = config.seed
    [outcome] = embed_reference(ref, [cand], store=store, config=config, runtime=runtime, keep_vectors=True)
    res = outcome.result
    if not res.ok or outcome.vectors is None:
        raise CandidateError(f"{cand.name} could not be embedded: {res.error_type}: {res.error}")
    fit_state = _baseline_fit(cand, res, ref, outcome.vectors, seed=seed) if res.backend in FITTED_BASELINES else None
    index = faiss_index(outcome.vectors, metric=metric, exact=exact, device=auto_device(runtime.device))
    cpu_index = to_cpu(index)  # what is written (one copy back from the GPUs, shards merged)
    assert res.model_id and res.revision and res.backend and res.run_key, "an embedded result names its run"
    _write_index_folder(out, cpu_index, ref, fit_state, lambda files: IndexManifest(
        name=cand.name, spec=cand.spec, model_id=res.model_id, revision=res.revision, backend=res.backend,
        options=dict(cand.options), seed=seed, run_key=res.run_key, fingerprint=ref.fingerprint,
        modality=ref.modality, source=ref.source, n=int(index.ntotal), dim=int(index.d), metric=metric,
        index_type=type(cpu_index).__name__, exact=is_exact(index), index_device=index_device(index),
        versions={"embedselect": __version__, "faiss": faiss.__version__},
        created_at=datetime.now(timezone.utc).isoformat(), files=files,
    ))
    return SearchIndex.load(out)


def _check_out(out: str | Path, store: str | Path, *, overwrite: bool) -> Path:
    """``--out``: not ``.``, ``/``, home or inside the cache; a new or empty folder, or (with ``overwrite``) an index
    this tool wrote and nobody added to (:func:`embedselect._fs.guard.check_takeover`)."""
    from embedselect._fs import guard as fsguard

    path = fsguard.check_output_target(Path(out).expanduser(), what="--out", inside_forbidden={"cache": store})
    fsguard.check_takeover(path, what="--out", ours="an embedselect index", kinds=("index",))
    if path.is_dir() and not path.is_symlink() and any(path.iterdir()) and not overwrite:
        raise ConfigError(f"{path} already holds an index; pass overwrite=True (--overwrite) to replace it")
    return path


def _write_index_folder(out: Path, index: Any, ref: Any, fit_state: dict | None, manifest: Any) -> None:
    """Write the index files into a new folder and swap it in at ``out`` (:func:`embedselect._fs.guard.replace_folder`:
    a kill leaves the old index or the new one; a failed write is a :class:`SearchIndexError`, ``out`` untouched)."""
    import faiss

    from embedselect._fs import guard as fsguard

    def fill(tmp: Path) -> None:
        faiss.write_index(index, str(tmp / INDEX_FILE))
        if fit_state is not None:
            np.savez(tmp / FIT_FILE, **fit_state)
        with open(tmp / ROWS_FILE, "w", encoding="utf-8") as f:
            for i, (rid, item) in enumerate(zip(ref.ids, ref.items)):
                f.write(json.dumps({"row": i, "id": str(rid), "item": str(item)}, ensure_ascii=False) + "\n")
        files = {name: sha256_file(tmp / name) for name in (INDEX_FILE, ROWS_FILE, FIT_FILE) if (tmp / name).is_file()}
        fsguard.write_text(tmp / MANIFEST, json.dumps(manifest(files).to_dict(), indent=2, default=str) + "\n")
        SearchIndex.load(tmp)  # the new index must load before it replaces the old one

    fsguard.replace_folder(out, fill, error=SearchIndexError, what="the index", kind="index",
                           check=lambda: fsguard.check_takeover(out, what="--out", ours="an embedselect index",
                                                                kinds=("index",)))


def _baseline_fit(cand, res, ref, vectors: np.ndarray, *, seed: int) -> dict[str, np.ndarray]:
    """The ``fit_state`` of a fitted baseline (tfidf-svd, pixel-pca) on the reference items, checked to
    reproduce the indexed (cached) vectors on the first :data:`FIT_CHECK_ROWS` rows.

    Fitting is the baseline's whole cost (no model is run); it happens once, here, and never when searching.

    Raises:
        SearchIndexError: the fit does not reproduce the cached vectors (they came from another version).
    """
    from embedselect.models.backends.loader import load_embedder
    from embedselect.models.candidates import resolve_candidate

    rc = resolve_candidate(cand, policy=LoadPolicy())
    embedder = load_embedder(rc, seed=seed, fit_items=list(ref.items))
    rows = min(FIT_CHECK_ROWS, len(ref))
    again = np.asarray(embedder.embed(list(ref.items[:rows])), dtype=np.float32)
    if again.shape != (rows, vectors.shape[1]) or not np.allclose(again, vectors[:rows], rtol=1e-4, atol=1e-5):
        raise SearchIndexError(
            f"{cand.name}: fitting it on the reference data again does not reproduce its cached vectors (were they "
            f"made by another embedselect or scikit-learn version?); remove them with `embedselect cache rm --model "
            f"{rc.model_id}` and build the index again"
        )
    return getattr(embedder, "fit_state")()  # the fitted baselines have it (the Embedder protocol does not)
