"""Candidate specs: every accepted form and the errors, catalogs, local revision hashes, backend inference."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from embedselect.models.candidates import (
    BASELINES,
    Candidate,
    ResolvedCandidate,
    available_catalogs,
    infer_backend,
    infer_modality,
    local_dir_revision,
    parse_candidates,
    read_catalog,
    resolve_candidate,
)
from embedselect.errors import CandidateError, CandidateSpecError, ConfigError
from embedselect.models.policy import LoadPolicy
from embedselect._util.kinds import BASELINE_VERSION

REPO = Path(__file__).resolve().parents[1]


def test_import_is_cheap():
    import subprocess

    code = "import sys, embedselect.models.candidates; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_hub_ids_and_revisions():
    a, b, c = parse_candidates("sentence-transformers/all-MiniLM-L6-v2, BAAI/bge-small-en-v1.5@main ,org/m@0123abcd")
    assert (a.kind, a.ref, a.revision, a.backend, a.name) == (
        "hub", "sentence-transformers/all-MiniLM-L6-v2", None, None, "sentence-transformers/all-MiniLM-L6-v2")
    assert (b.ref, b.revision, b.name) == ("BAAI/bge-small-en-v1.5", "main", "BAAI/bge-small-en-v1.5@main")
    assert c.revision == "0123abcd" and c.spec == "org/m@0123abcd"
    u, h = parse_candidates(["https://huggingface.co/BAAI/bge-small-en-v1.5/", "hf:org/m@v2"])
    assert (u.kind, u.ref, h.ref, h.revision) == ("hub", "BAAI/bge-small-en-v1.5", "org/m", "v2")


def test_revisions_that_would_become_paths_are_refused():
    for spec in ("org/m@../../etc", "org/m@a/../b", "org/m@.git", "org/m@main/", "org/m@x.lock"):
        with pytest.raises(CandidateSpecError, match="bad revision"):
            parse_candidates(spec)
    (c,) = parse_candidates("org/m@refs/pr/3")
    assert c.revision == "refs/pr/3"


def test_options_and_backend_in_spec():
    (c,) = parse_candidates("org/m?pooling=cls&max_length=128&normalize=true&backend=transformers")
    assert c.backend == "transformers"
    assert dict(c.options) == {"pooling": "cls", "max_length": 128, "normalize": True}
    assert c.name == "org/m?max_length=128&normalize=true&pooling=cls"
    hash(c)  # frozen options: usable as dict keys
    (d,) = parse_candidates([Candidate(spec="x", kind="hub", ref="org/m", options={"pooling": "cls"})])
    assert d.options == {"pooling": "cls"} and d.name == "org/m?pooling=cls"
    with pytest.raises(CandidateSpecError, match="key=value"):
        parse_candidates("org/m?pooling")
    with pytest.raises(CandidateSpecError, match="backend"):
        parse_candidates("org/m?backend=onnx")


def test_baselines_every_form():
    cs = parse_candidates(["tfidf-svd", "baseline:random-projection", "tfidf-svd?dim=64"], modality="text")
    assert [c.kind for c in cs] == ["baseline"] * 3
    assert [c.ref for c in cs] == ["tfidf-svd", "random-projection", "tfidf-svd"]
    assert cs[2].options == {"dim": 64} and cs[2].name == "tfidf-svd?dim=64"
    assert all(c.modality == "text" for c in cs)
    (p,) = parse_candidates("pixel-pca", modality="image")
    assert p.backend == "pixel-pca"
    with pytest.raises(CandidateSpecError, match="unknown baseline"):
        parse_candidates("baseline:word2vec")
    with pytest.raises(CandidateSpecError, match="not image"):
        parse_candidates("tfidf-svd", modality="image")
    with pytest.raises(CandidateSpecError, match="not text"):
        parse_candidates("pixel-pca", modality="text")


def test_local_directories(tmp_path, monkeypatch):
    d = tmp_path / "my-model"
    d.mkdir()
    (c,) = parse_candidates(str(d))
    assert (c.kind, c.ref, c.name) == ("local", str(d.resolve()), "my-model")
    monkeypatch.chdir(tmp_path)
    (r,) = parse_candidates("my-model")  # relative existing directory wins over a bare word error
    assert r.kind == "local" and r.ref == str(d.resolve())
    (f,) = parse_candidates("local:./my-model")
    assert f.ref == str(d.resolve())
    # an "org/name" that exists as a relative directory is the directory
    (tmp_path / "org" / "name").mkdir(parents=True)
    (o,) = parse_candidates("org/name")
    assert o.kind == "local"
    # two folders with the same basename stay distinct
    (tmp_path / "other" / "my-model").mkdir(parents=True)
    two = parse_candidates([str(d), str(tmp_path / "other" / "my-model")])
    assert len(two) == 2 and len({c.name for c in two}) == 2
    with pytest.raises(CandidateSpecError, match="does not exist"):
        parse_candidates("./missing-model")
    with pytest.raises(CandidateSpecError, match="does not exist"):
        parse_candidates("local:nothing-here")


def test_invalid_specs_name_the_accepted_forms():
    for bad in ["", "  ,  ", "justaword", "org//name", "a/b/c", "org/na me", "org/m@bad rev", "-org/m"]:
        with pytest.raises(CandidateSpecError, match="accepted forms|revision|empty"):
            parse_candidates(bad)
    with pytest.raises(CandidateSpecError):
        parse_candidates([3])
    with pytest.raises(ConfigError):
        parse_candidates("tfidf-svd", modality="audio")


def test_a_name_over_80_characters_is_said_to_be_too_long():
    """A candidate named with 83 characters was refused with "write NAME=SPEC with a non-empty name and spec": the
    name was not empty; its length was the reason, and the message did not say so."""
    name = "a-very-long-candidate-name-for-a-fine-tuned-multilingual-retrieval-model-v2-2026-11"
    with pytest.raises(CandidateSpecError) as info:
        parse_candidates(f"{name}=tfidf-svd")
    assert f"its name has {len(name)} characters; give it a name of at most 80" in str(info.value)
    assert [c.name for c in parse_candidates(f"{name[:80]}=tfidf-svd")] == [name[:80]]
    with pytest.raises(CandidateSpecError, match="non-empty name and spec"):
        parse_candidates(" =tfidf-svd")


def test_duplicates_are_removed_in_order():
    cs = parse_candidates("org/a, tfidf-svd, org/a, org/b, tfidf-svd")
    assert [c.name for c in cs] == ["org/a", "tfidf-svd", "org/b"]


def test_catalogs_shipped_and_valid():
    assert {"text", "image"} <= set(available_catalogs())
    for name in ("text", "image"):
        doc = read_catalog(REPO / "catalog" / f"{name}.yaml")
        hub = [e for e in doc["models"] if "id" in e]
        assert 8 <= len(hub) <= 15
        for e in hub:
            assert {"id", "backend", "params_m", "license", "notes", "remote_code"} <= set(e)
        assert {e["baseline"] for e in doc["models"] if "baseline" in e}
    text = parse_candidates("catalog:text", modality="text")
    names = [c.name for c in text]
    assert "sentence-transformers/all-MiniLM-L6-v2" in names and "tfidf-svd" in names
    assert all(c.modality == "text" for c in text)
    e5 = next(c for c in text if c.ref == "intfloat/e5-small-v2")
    assert e5.options["prompt"].startswith("query:") and e5.backend == "sentence-transformers"
    nomic = next(c for c in text if c.ref == "nomic-ai/nomic-embed-text-v1.5")
    assert "REMOTE CODE" in nomic.notes
    image = parse_candidates("catalog:image", modality="image")
    assert any(c.backend == "timm" for c in image) and any(c.ref == "facebook/dinov2-small" for c in image)
    # a text catalog filtered for image data keeps only entries that embed images
    assert parse_candidates("catalog:text", modality="image") == []
    with pytest.raises(CandidateSpecError, match="known catalogs"):
        parse_candidates("catalog:audio")


def test_packaged_catalog_copy_matches_source():
    """The wheel ships embedselect/catalog/*.yaml; it must equal the top-level catalog/ files."""
    for name in ("text", "image"):
        src = (REPO / "catalog" / f"{name}.yaml").read_bytes()
        assert (REPO / "embedselect" / "catalog" / f"{name}.yaml").read_bytes() == src, (
            f"run: cp catalog/{name}.yaml embedselect/catalog/")


def test_catalog_file_path_and_schema_errors(tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("schema: 1\nmodality: text\nmodels:\n  - id: org/m\n    revision: v2\n    options: {pooling: cls}\n"
                    "  - baseline: tfidf-svd\n")
    cs = parse_candidates(f"catalog:{good}")
    assert [(c.ref, c.revision) for c in cs] == [("org/m", "v2"), ("tfidf-svd", None)]
    assert cs[0].options == {"pooling": "cls"} and cs[0].name == "org/m@v2"
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "team.yaml").write_text(good.read_text())
    assert len(parse_candidates("catalog:team", catalog_dir=tmp_path / "cat")) == 2
    for body, msg in [
        ("models: 3\n", "models"),
        ("models:\n  - {id: org/m, baseline: tfidf-svd, modality: text}\n", "exactly one"),
        ("models:\n  - {id: org/m}\n", "modality"),
        ("modality: text\nmodels:\n  - {baseline: glove}\n", "unknown baseline"),
        ("schema: 2\nmodels: []\n", "schema"),
        ("models: [\n", "YAML"),
    ]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)
        with pytest.raises(CandidateSpecError, match=msg):
            parse_candidates(f"catalog:{bad}")


def test_a_catalog_entry_is_one_model_and_its_revision_is_checked_when_read(tmp_path):
    """A catalog entry naming a catalog (itself, here) is refused with the entry named, instead of recursing until
    RecursionError; a catalog's revision passes the same revision rule as a spec's ``@revision``."""
    loop = tmp_path / "loop.yaml"
    loop.write_text(f"modality: text\nmodels:\n  - id: catalog:{loop}\n")
    with pytest.raises(CandidateSpecError, match=r"entry 0: cannot understand candidate 'catalog:"):
        parse_candidates(f"catalog:{loop}")
    bad_rev = tmp_path / "rev.yaml"
    bad_rev.write_text("modality: text\nmodels:\n  - {id: org/m, revision: ../../../etc}\n")
    with pytest.raises(CandidateSpecError, match=r"entry 0: bad revision '\.\./\.\./\.\./etc'"):
        parse_candidates(f"catalog:{bad_rev}")


# --- resolution -------------------------------------------------------------------------------------
def test_baseline_resolution():
    from embedselect import __version__

    (c,) = parse_candidates("random-projection", modality="image")
    rc = resolve_candidate(c, policy=LoadPolicy())
    assert isinstance(rc, ResolvedCandidate)
    assert (rc.model_id, rc.backend, rc.modality, rc.local_dir) == ("baseline:random-projection",
                                                                    "random-projection", "image", None)
    assert rc.revision == f"builtin-{__version__}-v{BASELINE_VERSION}"


def test_local_revision_hash_tracks_content(tmp_path):
    d = tmp_path / "m"
    (d / "sub").mkdir(parents=True)
    (d / "config.json").write_text('{"model_type": "bert"}')
    (d / "sub" / "w.bin").write_bytes(b"\x00" * 10)
    r1 = local_dir_revision(d)
    assert len(r1) == 64 and r1 == local_dir_revision(d)
    (d / "sub" / "w.bin").write_bytes(b"\x01" * 10)  # same size, new bytes
    os.utime(d / "sub" / "w.bin", ns=(1, 1))  # even with an old mtime the (size, mtime) key changes
    r2 = local_dir_revision(d)
    assert r2 != r1
    (d / "sub" / "w.bin").rename(d / "sub" / "w2.bin")  # a renamed file is a different model folder
    assert local_dir_revision(d) not in (r1, r2)
    (d / ".git").mkdir()
    (d / ".git" / "HEAD").write_text("ref")
    r3 = local_dir_revision(d)
    (d / ".git" / "HEAD").write_text("other")
    assert local_dir_revision(d) == r3  # VCS metadata is not part of the model
    other = tmp_path / "copy"
    import shutil

    shutil.copytree(d, other)
    assert local_dir_revision(other) == r3  # content-addressed: the location does not matter


def test_backend_and_modality_inference(tmp_path):
    st = tmp_path / "st"
    st.mkdir()
    (st / "modules.json").write_text("[]")
    (st / "config.json").write_text('{"model_type": "bert"}')
    assert infer_backend(st) == "sentence-transformers" and infer_modality(st, "sentence-transformers") == "text"
    tm = tmp_path / "timm"
    tm.mkdir()
    (tm / "config.json").write_text(json.dumps({"architecture": "resnet50", "num_classes": 1000,
                                                "pretrained_cfg": {"input_size": [3, 224, 224]}}))
    assert infer_backend(tm) == "timm" and infer_modality(tm, "timm") == "image"
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text('{"model_type": "dinov2"}')
    (hf / "preprocessor_config.json").write_text("{}")
    assert infer_backend(hf) == "transformers" and infer_modality(hf, "transformers") == "image"
    clip = tmp_path / "clip"
    clip.mkdir()
    (clip / "config.json").write_text('{"model_type": "clip", "text_config": {}, "vision_config": {}}')
    assert infer_modality(clip, "transformers", "text") == "text"
    assert infer_modality(clip, "transformers", "image") == "image"
    with pytest.raises(CandidateSpecError, match="embeds image"):
        infer_modality(hf, "transformers", "text")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "readme.txt").write_text("hi")
    with pytest.raises(CandidateError, match="backend"):
        infer_backend(junk)


def test_one_json_reader_for_model_folders(tmp_path):
    """embedselect.models.layout.read_json: None for a missing file, the document otherwise, and ModelFileError naming the
    file for bad JSON, bad UTF-8 or a folder; candidate resolution and the backends' policy check read through it."""
    from embedselect.models.backends.loader import check_local_files
    from embedselect.errors import ModelFileError
    from embedselect.models.layout import read_json

    assert read_json(tmp_path / "missing.json") is None
    (tmp_path / "ok.json").write_text('{"a": [1, 2]}')
    assert read_json(tmp_path / "ok.json") == {"a": [1, 2]}
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "latin1.json").write_bytes(b'{"a": "\xe9"}')
    (tmp_path / "dir.json").mkdir()
    for name, why in [("bad.json", "not valid JSON"), ("latin1.json", "not UTF-8"), ("dir.json", "cannot be read")]:
        with pytest.raises(ModelFileError, match=why) as info:
            read_json(tmp_path / name)
        assert str(tmp_path / name) in str(info.value)
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"x")
    (model / "config.json").write_text("{oops")
    with pytest.raises(ModelFileError, match="config.json is not valid JSON"):
        infer_backend(model)
    with pytest.raises(ModelFileError, match="config.json is not valid JSON"):  # was read as "no custom code"
        check_local_files(model, "transformers", LoadPolicy(), "m")


def test_local_resolution_uses_explicit_backend(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "bert"}')
    (d / "tokenizer.json").write_text("{}")
    (c,) = parse_candidates(f"{d}?backend=transformers&pooling=cls", modality="text")
    rc = resolve_candidate(c, policy=LoadPolicy())
    assert (rc.model_id, rc.backend, rc.modality, rc.local_dir) == (f"local:{d.resolve()}", "transformers", "text",
                                                                    d.resolve())
    assert rc.revision == local_dir_revision(d)


def test_hub_resolution_goes_through_fetch_model(tmp_path, monkeypatch):
    """The hub path calls embedselect.models.hub.fetch_model with the candidate's revision/backend and the policy."""
    import embedselect.models.hub as hub

    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "modules.json").write_text("[]")
    calls = {}

    def fake_fetch(repo_id, *, revision=None, backend=None, policy=None, token=None, **kw):
        calls.update(repo_id=repo_id, revision=revision, backend=backend, policy=policy, token=token)
        return hub.FetchedModel(repo_id=repo_id, revision="a" * 40, local_dir=snap, library="sentence-transformers",
                                pipeline_tag=None, files=("modules.json",), backend="sentence-transformers")

    monkeypatch.setattr(hub, "fetch_model", fake_fetch)
    (c,) = parse_candidates("org/m@v1", modality="text")
    pol = LoadPolicy(allow_pickle=True)
    rc = resolve_candidate(c, policy=pol, token="tok")
    assert calls == {"repo_id": "org/m", "revision": "v1", "backend": None, "policy": pol, "token": "tok"}
    assert (rc.model_id, rc.revision, rc.backend, rc.modality, rc.local_dir) == (
        "org/m", "a" * 40, "sentence-transformers", "text", snap)


def test_baseline_names_match_implementations():
    from embedselect.models.backends.baselines import BASELINE_CLASSES

    assert set(BASELINES) == set(BASELINE_CLASSES)
    for name, cls in BASELINE_CLASSES.items():
        assert cls.backend == name
