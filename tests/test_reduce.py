"""Smaller vectors of one model (issue 44, item 5): ``?truncate_dim=N`` (Matryoshka) and ``?precision=int8|binary``
(sentence-transformers' quantisation) as variants of a model: computed from the model's own vectors (the model runs
once for the parent and its variants), declared copies of their parent, never ranked above it."""

from __future__ import annotations

import numpy as np
import pytest

import embedselect
from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import CandidateSpecError
from embedselect.metrics.copies import declared_reductions, pool_copies
from embedselect.models.backends.reduce import Reduction, bytes_per_vector, reduction_of
from embedselect.models.candidates import parse_candidates
from embedselect.ranking.result import Ranking
from embedselect.store import Store
from testkit import tinymodels as tm

SAMPLE = sample_path("texts")

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tm.make_tiny_sentence_transformer(tmp_path_factory.mktemp("st") / "st")


def _vectors(n: int = 50, d: int = 24, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_truncation_keeps_the_first_dimensions_renormalised():
    x = _vectors()
    out, ranges = Reduction(truncate_dim=8).apply(x, name="t")
    expected = x[:, :8] / np.linalg.norm(x[:, :8], axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert out.dtype == np.float32 and ranges is None
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    zero = np.zeros((2, 24), dtype=np.float32)
    assert not np.isnan(Reduction(truncate_dim=4).apply(zero, name="t")[0]).any()


def test_quantisation_is_sentence_transformers_quantize_embeddings():
    from sentence_transformers.util.quantization import quantize_embeddings

    x = _vectors(200)
    codes, ranges = Reduction(precision="int8").apply(x, name="q")
    np.testing.assert_array_equal(codes, quantize_embeddings(x, precision="int8").astype(np.float32))
    # the queries use the items' ranges (as calibration_embeddings= would)
    queries = _vectors(7, seed=1)
    q_codes, _ = Reduction(precision="int8").apply(queries, name="q", ranges=ranges)
    np.testing.assert_array_equal(q_codes, quantize_embeddings(queries, precision="int8", calibration_embeddings=x)
                                  .astype(np.float32))
    signs, _ = Reduction(precision="binary").apply(x, name="b")
    bits = np.unpackbits(quantize_embeddings(x, precision="ubinary"), axis=1)[:, :x.shape[1]]
    np.testing.assert_array_equal(signs, bits * 2.0 - 1.0)
    # truncation first, then quantisation, as sentence-transformers' encode(truncate_dim=) + quantize_embeddings
    both, _ = Reduction(truncate_dim=16, precision="int8").apply(x, name="tq")
    cut = x[:, :16] / np.linalg.norm(x[:, :16], axis=1, keepdims=True)
    np.testing.assert_array_equal(both, quantize_embeddings(cut, precision="int8").astype(np.float32))
    assert (bytes_per_vector(16, {"precision": "int8"}), bytes_per_vector(16, {"precision": "binary"}),
            bytes_per_vector(16, {})) == (16, 2, 64)


@pytest.mark.fault
def test_reduction_options_that_cannot_work_are_refused(tmp_path):
    for spec, needle in [("tfidf-svd?truncate_dim=0", "truncate_dim"), ("tfidf-svd?truncate_dim=2.5", "whole"),
                         ("tfidf-svd?precision=int4", "int8, binary")]:
        with pytest.raises(CandidateSpecError, match=needle):
            parse_candidates(spec)
    from embedselect.config import RankConfig
    from embedselect.errors import ConfigError
    from embedselect.search import build_index

    with pytest.raises(ConfigError, match="variant of its model"):  # an index's queries are embedded by the model
        build_index(SAMPLE, "tfidf-svd?truncate_dim=8", out=tmp_path / "ix", config=RankConfig(column="text"))
    assert not (tmp_path / "ix").exists()
    with pytest.raises(CandidateSpecError, match="vectors are 24 wide"):
        Reduction(truncate_dim=25).apply(_vectors(), name="t")
    assert reduction_of({"precision": "float32"}, name="x") is None


def test_the_specs_declare_which_variant_is_a_copy_of_which():
    origins = {
        "full": ("m", "r", {}),
        "t16": ("m", "r", {"truncate_dim": 16}),
        "int8": ("m", "r", {"precision": "int8"}),
        "t16b": ("m", "r", {"truncate_dim": 16, "precision": "binary"}),
        "cls": ("m", "r", {"pooling": "cls"}),  # another pooling: a variant, nobody's copy
        "other": ("n", "r", {"truncate_dim": 8}),  # another model
    }
    pairs = {(d.copy, d.parent): d.relation for d in declared_reductions(origins)}
    assert pairs == {("t16", "full"): "truncated", ("int8", "full"): "quantized", ("t16b", "full"): "truncated",
                     ("t16b", "t16"): "quantized", ("t16b", "int8"): "truncated"}
    assert all(d.declared for d in declared_reductions(origins))
    # in a pool the declared pair replaces what the vectors show of the same pair
    x = _vectors(60, 32)
    emb = {"full": x, "t16": Reduction(truncate_dim=16).apply(x, name="t")[0]}
    found = pool_copies(emb, origins={k: origins[k] for k in emb})
    assert [(d.copy, d.parent, d.declared) for d in found] == [("t16", "full", True)]


def test_variants_rank_in_one_pool_below_their_parent_and_the_model_runs_once(tiny, cache_dir):
    cands = [f"full={tiny}", f"t16={tiny}?truncate_dim=16", f"bin={tiny}?precision=binary",
             f"t8q={tiny}?truncate_dim=8&precision=int8", "tfidf-svd"]
    r = embedselect.select(SAMPLE, cands, column="text", metrics=["task_prior"])
    assert all(c.ok for c in r), [c.failure_note for c in r]
    assert (r["full"].dim, r["t16"].dim, r["bin"].dim, r["t8q"].dim) == (32, 16, 32, 8)
    assert len({r[n].run_key for n in ("full", "t16", "bin", "t8q")}) == 4
    # one stored embedding run of the model: the variants were computed from it
    runs = Store.open(cache_dir).list_runs()
    assert (runs["model_id"] == r["full"].model_id).sum() == 1
    assert r["t16"].cached or r["bin"].cached or r["t8q"].cached
    pairs = {(p["copy"], p["parent"]) for p in r.details["copies"]["pairs"]}
    assert {("t16", "full"), ("bin", "full"), ("t8q", "full"), ("t8q", "t16")} <= pairs
    for copy, parent in pairs:
        assert r[copy].rank > r[parent].rank, (copy, parent)
    said = [w.message for w in r.warnings_with("copy-below-parent")]
    assert not said or all("of the same model" in m for m in said)
    assert all("?precision=binary of the same model" in m for m in said if m.startswith("bin "))
    # cost beside quality (item 6): bytes per vector as deployed, the model's parameters, its measured speed
    assert [r[n].bytes_per_vector for n in ("full", "t16", "bin", "t8q")] == [128, 64, 4, 8]
    from safetensors.numpy import load_file

    n_params = sum(a.size for p in tiny.rglob("*.safetensors") for a in load_file(str(p)).values())
    assert r["full"].parameters == n_params > 0 and r["t8q"].parameters == n_params
    assert r["full"].items_per_second > 0 and r["tfidf-svd"].parameters is None
    df = r.to_pandas()
    assert df.loc["bin", "bytes_per_vector"] == 4 and df.loc["full", "parameters"] == n_params
    assert df.loc["full", "items_per_second"] == pytest.approx(r["full"].items_per_second)
    from embedselect.cli.format import format_table

    table = format_table(r)
    assert "bytes/vec" in table.splitlines()[0] and "params" in table.splitlines()[0]
    assert Ranking.from_json(r.to_json())["t8q"].bytes_per_vector == 8
    from embedselect.publish.report import to_html, to_markdown

    head, _, *lines = to_markdown(r).splitlines()
    assert "| bytes/vec | items/s | params |" in head
    cells = [v.strip() for v in next(x for x in lines if x.split("|")[2].strip() == "bin").split("|")]
    assert cells[5:7] == ["32", "4"]  # dim, bytes per vector
    page = to_html(r, plots=False)
    assert "<th>bytes/vec</th>" in page and "<th>params</th>" in page


def test_cli_ranks_a_truncated_variant(tiny, tmp_path, capsys):
    code = main(["rank", str(SAMPLE), "-c", "text", "-m", f"full={tiny},t8={tiny}?truncate_dim=8,tfidf-svd",
                 "--metrics", "task_prior", "--json", "-q", "--cache-dir", str(tmp_path / "c")])
    assert code == 0
    r = Ranking.from_json(capsys.readouterr().out)
    assert r["t8"].dim == 8 and r["t8"].rank > r["full"].rank


def test_a_variant_that_scores_above_its_parent_is_ranked_below_it_and_says_why(cache_dir):
    r = embedselect.select(SAMPLE, ["tfidf-svd", "tfidf-svd?truncate_dim=16", "random-projection"], column="text",
                           metrics=["task_prior"])
    variant = "tfidf-svd?truncate_dim=16"
    assert r[variant].scores["task_prior"] > r["tfidf-svd"].scores["task_prior"]  # the label-free score prefers it
    assert r[variant].rank > r["tfidf-svd"].rank  # the declared copy is ranked below its parent all the same
    (w,) = r.warnings_with("copy-below-parent")
    assert w.message.startswith(f"{variant} is a truncated copy of tfidf-svd (?truncate_dim=16 of the same model)")
