"""The neighbour view: the nearest neighbours of sample items under several candidates, side by side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from embedselect.errors import CandidateError, ConfigError
from embedselect.config import RankConfig, Runtime


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
        }

    def to_text(self, width: int = 60) -> str:
        def short(t: str) -> str:
            t = " ".join("".join(ch for ch in str(t) if ch.isprintable() or ch.isspace()).split())
            return t if len(t) <= width else t[: width - 1] + "…"

        lines = []
        for s, (i, it) in enumerate(zip(self.ids, self.items)):
            lines.append(f"item {i}: {short(it)}")
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


def _rows_of_ids(ref: Any, ids: Sequence[Any]) -> list[int]:
    """The positions of the items ``ids`` (their 1-based row numbers in the data file, or ``--id-column``'s values:
    the ids every output shows) in ``ref``.

    Raises:
        ConfigError: naming the ids that are no item of the data, and what ids are.
    """
    where = {str(i): r for r, i in enumerate(ref.ids)}
    missing = [str(i) for i in ids if str(i) not in where]
    if missing:
        first, last = str(ref.ids[0]), str(ref.ids[-1])
        raise ConfigError(f"--rows: {', '.join(missing[:5])} {'is' if len(missing) == 1 else 'are'} not the id of "
                          f"an item of the data ({len(ref)} items, ids {first} … {last}): ids are the 1-based row "
                          "numbers of the data file, or the --id-column values")
    return [where[str(i)] for i in ids]


def neighbours_view(
    data: Any,
    candidates: Any,
    *,
    sample: int = 5,
    ids: Sequence[Any] | None = None,
    k: int = 5,
    agreement_k: int = 10,
    near_duplicate_threshold: float | None = None,
    config: RankConfig | None = None,
    runtime: Runtime | None = None,
) -> NeighbourView:
    """For ``sample`` seeded items of ``data`` (or the given ``ids``: the items' ids, their 1-based row numbers in the
    data file or the ``config.id_column`` values, as every output shows them and the CLI's ``--rows`` takes them;
    one way to name items, since positions in the loaded data move with a sub-sample or dropped duplicates), their
    ``k`` nearest other items under each candidate (cosine, exact FAISS search; vectors from the cache), the
    mutual k-NN agreement of the candidates over all items, and, with ``near_duplicate_threshold``, near-duplicate counts per candidate
    (``near_duplicate_keep``: the keep-mask under the *first* candidate, for dropping them).

    ``config``: the data settings (``column``, ``max_items``, ``seed``, ``on_error``, ``drop_duplicates``), the
    seed of the sample and the load ``policy`` of a :class:`~embedselect.config.RankConfig`; ``runtime``: where it
    runs (cache, device, batch size, token, progress).

    Memory: every candidate's (n, d) matrix is held at once (as in :func:`embedselect.select`).
    """
    from embedselect.pipeline.context import load_reference_data
    from embedselect.pipeline.embedding import embed_reference
    from embedselect.metrics.neighbours import mutual_knn_agreement
    from embedselect.nn.knn import build_index as faiss_index
    from embedselect.nn.knn import knn, near_duplicates, prepare, search_index
    from embedselect.nn.device import auto_device
    from embedselect.store import Store

    config, runtime = config or RankConfig(), runtime or Runtime()
    if config.labels is not None:
        raise ConfigError("the neighbour view reads no labels: drop labels from the config")
    seed, device = config.seed, runtime.device
    store = Store.open(runtime.cache_dir)
    ref = load_reference_data(data, config)
    n = len(ref)
    if n < 2:
        raise ConfigError("looking at neighbours needs at least 2 items")
    if ids is not None:
        rows = _rows_of_ids(ref, ids)
    else:
        rng = np.random.default_rng(seed)
        rows = sorted(int(r) for r in rng.choice(n, size=min(int(sample), n), replace=False))
    k = max(1, min(int(k), n - 1))
    outcomes = embed_reference(ref, candidates, store=store, config=config, runtime=runtime, keep_vectors=True)
    ok = {o.result.name: o.vectors for o in outcomes if o.result.ok}
    failed = {o.result.name: f"{o.result.error_type}: {o.result.error}" for o in outcomes if not o.result.ok}
    if not ok:
        raise CandidateError("no candidate could be embedded: " + "; ".join(f"{a}: {b}" for a, b in failed.items()))
    view = NeighbourView(
        names=list(ok), rows=rows, ids=[str(ref.ids[r]) for r in rows], items=[str(ref.items[r]) for r in rows],
        neighbours={}, all_ids=[str(i) for i in ref.ids], all_items=[str(i) for i in ref.items], failed=failed,
        modality=ref.modality,
    )
    for nm, vecs in ok.items():
        x = prepare(vecs, "cosine")
        sc, found = search_index(faiss_index(x, metric="cosine", prepared=True, device=auto_device(device)), x[rows],
                                 k, prepared=True,
                                 self_ids=np.asarray(rows, dtype=np.int64))
        view.neighbours[nm] = [[(int(j), float(v)) for j, v in zip(irow, srow) if j >= 0]
                               for irow, srow in zip(found, sc)]
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
