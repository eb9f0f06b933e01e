"""A checkpoint that does not hold all of its model's weights fails to load, and one that holds weights never
trained is ranked with a warning (models/backends/weights.py): transformers would fill the missing ones at random, an
untrained one is random throughout, and random models can be ranked first."""

from __future__ import annotations

import pytest

from embedselect.errors import ModelLoadError
from embedselect.models.backends import load_embedder
from embedselect.models.backends.weights import LOADED_FLAG, missing_weights
from embedselect.models.candidates import parse_candidates, resolve_candidate
from embedselect.models.policy import LoadPolicy
from testkit import tinymodels as tm

pytestmark = pytest.mark.usefixtures("one_thread")


def _load(spec: str):
    (c,) = parse_candidates(spec, modality="text")
    return load_embedder(resolve_candidate(c, policy=LoadPolicy()), device="cpu", policy=LoadPolicy())


@pytest.mark.fault
@pytest.mark.parametrize("backend", ["", "?backend=transformers"])
def test_a_checkpoint_without_some_weights_is_a_model_load_error(tmp_path, backend):
    d = tm.make_tiny_sentence_transformer(tmp_path / "st")
    gone = tm.drop_checkpoint_weights(d, "encoder.layer.1.")
    assert len(gone) == 16
    with pytest.raises(ModelLoadError) as err:
        _load(f"{d}{backend}")
    msg = str(err.value)
    assert "16 weight tensor(s)" in msg and "encoder.layer.1." in msg and "and 13 more" in msg
    assert "random" in msg and "config.json" in msg


def test_a_complete_checkpoint_and_one_without_its_pooler_load(tmp_path):
    d = tm.make_tiny_sentence_transformer(tmp_path / "st")
    st = _load(str(d))
    # the flag the check reads is set by this transformers: without it the check would find nothing, silently
    params = list(st.model[0].auto_model.parameters())
    assert params and all(getattr(p, LOADED_FLAG, False) for p in params)
    assert missing_weights(st.model) == []
    tm.drop_checkpoint_weights(d, "pooler.")
    assert _load(str(d)).embed(["a cat", "a dog"]).shape == (2, 32)
    assert _load(f"{d}?backend=transformers&pooling=mean").embed(["a cat"]).shape == (1, 32)


@pytest.mark.fault
def test_a_missing_pooler_is_an_error_when_the_pooler_is_read(tmp_path):
    d = tm.make_tiny_transformers_text(tmp_path / "hf")
    tm.drop_checkpoint_weights(d, "pooler.")
    with pytest.raises(ModelLoadError, match=r"2 weight tensor\(s\).*pooler\.dense"):
        _load(f"{d}?backend=transformers&pooling=pooler")


def test_a_model_not_loaded_by_from_pretrained_is_not_flagged():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=16))
    assert missing_weights(model) == []


def test_a_checkpoint_saved_with_a_task_head_loads_without_transformers_report(tmp_path):
    """Loading a model saved with a task head (``BertForMaskedLM``) into ``AutoModel`` made transformers print its
    loading report, a table of the head's unexpected tensors and the missing pooler, on every run; it is printed
    only with ``-v`` now. (A fresh process each: the CLI's logging is set up once per process.)"""
    import os
    import subprocess
    import sys

    from transformers import AutoConfig, BertForMaskedLM

    d = tm.make_tiny_transformers_text(tmp_path / "mlm")
    tm.as_trained(BertForMaskedLM(AutoConfig.from_pretrained(d)), 0).save_pretrained(d, safe_serialization=True)
    data = tmp_path / "t.csv"
    data.write_text("text\nthe cat sat\na dog runs\nmoney in the bank\n", encoding="utf-8")
    for verbose, cache in (([], "c1"), (["-v"], "c2")):
        out = subprocess.run([sys.executable, "-m", "embedselect", "embed", str(data), "--models",
                              f"{d}?backend=transformers", "--cache-dir", str(tmp_path / cache), *verbose],
                             capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert ("LOAD REPORT" in out.stderr) == bool(verbose), out.stderr[-2000:]


def _untrained_copy(d):
    """Overwrite the folder's weights with its architecture's initial ones (a checkpoint saved before training)."""
    from transformers import AutoConfig, AutoModel

    AutoModel.from_config(AutoConfig.from_pretrained(d)).save_pretrained(d, safe_serialization=True)
    return d


@pytest.mark.fault
@pytest.mark.parametrize("backend", ["", "?backend=transformers"])
def test_an_untrained_checkpoint_is_ranked_with_a_warning(tmp_path, caplog, backend):
    trained = tm.make_tiny_sentence_transformer(tmp_path / "trained")
    with caplog.at_level("WARNING", logger="embedselect"):
        _load(f"{trained}{backend}")
    assert "untrained" not in caplog.text
    d = _untrained_copy(tm.make_tiny_sentence_transformer(tmp_path / "st"))
    with caplog.at_level("WARNING", logger="embedselect"):
        assert _load(f"{d}{backend}").embed(["a cat"]).shape == (1, 32)
    msg = caplog.text
    assert str(d) in msg and "5 normalisation layer(s)" in msg and "looks untrained" in msg
    assert "validate" in msg and "ask" in msg


@pytest.mark.fault
def test_an_untrained_timm_checkpoint_is_ranked_with_a_warning(tmp_path, caplog):
    import timm
    from safetensors.torch import load_file, save_file

    d = tm.make_tiny_timm(tmp_path / "vit")
    fresh = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=32, patch_size=8,
                              embed_dim=32, depth=2, num_heads=2).state_dict()
    saved = load_file(d / "model.safetensors")
    assert saved.keys() == fresh.keys()
    save_file({k: v.contiguous() for k, v in fresh.items()}, str(d / "model.safetensors"), metadata={"format": "pt"})
    with caplog.at_level("WARNING", logger="embedselect"):
        _load_image(str(d))
    assert "every one of its 5 normalisation layer(s)" in caplog.text and "looks untrained" in caplog.text


def _load_image(spec: str):
    (c,) = parse_candidates(spec, modality="image")
    return load_embedder(resolve_candidate(c, policy=LoadPolicy()), device="cpu", policy=LoadPolicy())


def test_untrained_norms_counts_only_when_every_norm_is_at_its_initial_values():
    import torch

    from embedselect.models.backends.weights import untrained_norms

    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.BatchNorm1d(4),
                              torch.nn.LayerNorm(4, elementwise_affine=False))
    assert untrained_norms(net) == 2  # the one without parameters is not counted
    with torch.no_grad():
        net[2].weight.zero_()  # a zero-initialised residual norm is still initial
    assert untrained_norms(net) == 2
    with torch.no_grad():
        net[1].bias[0] = 0.01  # one moved value: trained
    assert untrained_norms(net) == 0
    assert untrained_norms(torch.nn.Sequential(torch.nn.Embedding(5, 3))) == 0  # a static table has no norm
    assert untrained_norms(tm.as_trained(torch.nn.Sequential(torch.nn.LayerNorm(4)), 0)) == 0



@pytest.mark.fault
def test_an_untrained_checkpoint_is_a_note_of_the_ranking_also_when_its_vectors_come_from_the_cache(tmp_path, capsys):
    """The warning was said only when the model was loaded: a second rank that read its vectors from the cache said
    nothing, and no ranking (select()'s, the table's notes, the JSON, the HTML report) recorded it. The finding is
    stored with the run's record in the cache and is an ``untrained-checkpoint`` note of that candidate; it is
    still ranked."""
    import json

    import embedselect
    from embedselect import cli
    from embedselect.data import sample_path

    d = _untrained_copy(tm.make_tiny_sentence_transformer(tmp_path / "fresh"))
    trained = tm.make_tiny_sentence_transformer(tmp_path / "trained", seed=1)
    models = f"{d},{trained},tfidf-svd,random-projection"
    args = dict(column="text", max_items=60, metrics=["rankme", "nn_agreement"], cache_dir=tmp_path / "cache")
    first = embedselect.select(sample_path("texts"), models, **args)
    notes = [w for w in first.warnings if w.code == "untrained-checkpoint"]
    assert [w.candidates for w in notes] == [("fresh",)], first.warnings
    assert "5 normalisation layer(s)" in notes[0] and "looks untrained" in notes[0]
    assert first["fresh"].ok and first["fresh"].rank is not None and not first["fresh"].cached

    second = embedselect.select(sample_path("texts"), models, **args)  # every vector from the cache
    assert second["fresh"].cached and second["trained"].cached
    assert [w for w in second.warnings if w.code == "untrained-checkpoint"] == notes
    capsys.readouterr()
    html = tmp_path / "report.html"
    code = cli.main(["rank", str(sample_path("texts")), "--column", "text", "--max-items", "60", "--metrics",
                     "rankme,nn_agreement", "-m", models, "--cache-dir", str(tmp_path / "cache"), "--json",
                     "--html", str(html)])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert [w["candidates"] for w in doc["warnings"] if w["code"] == "untrained-checkpoint"] == [["fresh"]]
    assert all(c["cached"] for c in doc["candidates"] if c["name"] in ("fresh", "trained"))
    assert any(line.startswith("note: fresh: every one of its 5 normalisation layer(s)") for line in err.splitlines())
    assert "fresh: every one of its 5 normalisation layer(s)" in html.read_text(encoding="utf-8")


@pytest.mark.fault
def test_an_untrained_checkpoint_first_is_not_a_decision(tmp_path, capsys):
    """Two untrained checkpoints agree with each other, and with nn_agreement alone combined the first of them led a
    ranking that said it was decided (rules 1 to 7 had nothing against it). An untrained checkpoint first makes the
    ranking undecided, with the best candidate that is neither untrained nor a reference point as a plausible best and
    the reason in select()'s warnings, the table, the JSON and the HTML report; the order stays."""
    import json

    import torch

    import embedselect
    from embedselect import cli
    from embedselect.data import sample_path
    from embedselect.ranking.combine import SETTLE

    torch.manual_seed(1)
    a = _untrained_copy(tm.make_tiny_sentence_transformer(tmp_path / "fresh1"))
    torch.manual_seed(2)
    b = _untrained_copy(tm.make_tiny_sentence_transformer(tmp_path / "fresh2", seed=2))
    trained = tm.make_tiny_sentence_transformer(tmp_path / "trained", seed=3)
    models = f"{a},{b},{trained},tfidf-svd,random-projection"
    r = embedselect.select(sample_path("texts"), models, column="text", max_items=60,
                           metrics=["rankme", "nn_agreement"], weights={"nn_agreement": 1.0, "rankme": 0.0},
                           cache_dir=tmp_path / "cache")
    order = [c.name for c in r.candidates]
    first = order[0]
    assert sorted(order[:2]) == ["fresh1", "fresh2"] and order[2] == "trained", order  # the untrained pair agree best
    assert not r.decided and r.leaders == [first, "trained"] and r.next_step == SETTLE
    (why,) = [w for w in r.warnings if w.code == "undecided"]
    assert f"{first} looks like an untrained checkpoint" in why and "trained is the first candidate that is neither " \
        "untrained nor a reference point" in why and why.candidates == (first, "trained")

    capsys.readouterr()
    html = tmp_path / "report.html"
    argv = ["rank", str(sample_path("texts")), "--column", "text", "--max-items", "60", "--metrics",
            "rankme,nn_agreement", "--weight", "nn_agreement=1", "--weight", "rankme=0", "-m", models,
            "--cache-dir", str(tmp_path / "cache")]
    assert cli.main([*argv, "--json", "--html", str(html)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decided"] is False and doc["leaders"] == [first, "trained"]
    assert [c["name"] for c in doc["candidates"]][:3] == order[:3]
    assert any(w["code"] == "undecided" and f"{first} looks like an untrained checkpoint" in w["message"]
               for w in doc["warnings"]), doc["warnings"]
    assert f"{first} looks like an untrained checkpoint" in html.read_text(encoding="utf-8")
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    table = out + err
    assert f"{first} looks like an untrained checkpoint" in table and SETTLE in table


def test_a_baseline_first_adds_a_trained_model_not_the_untrained_one_below_it(tmp_path, monkeypatch):
    """A built-in baseline first and an untrained checkpoint second: the ranking (rule 7 of decide()) named the
    untrained one as the plausible best beside the baseline. It names the first candidate that is neither untrained
    nor a reference point, as rule 8 does. The order is set by a registered metric that scores fixed values."""
    import embedselect
    from embedselect.data import sample_path
    from embedselect.metrics import base

    fresh = _untrained_copy(tm.make_tiny_sentence_transformer(tmp_path / "fresh"))
    t1 = tm.make_tiny_sentence_transformer(tmp_path / "trained1", seed=1)
    t2 = tm.make_tiny_sentence_transformer(tmp_path / "trained2", seed=2)
    fixed = {"random-projection": 4.0, "fresh": 3.0, "trained1": 2.0, "trained2": 1.0}

    def order(ctx):
        return base.MetricResult("fixed_order", {k: fixed[k] for k in ctx.embeddings})

    monkeypatch.setattr(base, "_SPECS", dict(base._SPECS))
    base.register_metric(base.MetricSpec("fixed_order", order, min_items=5, description="a fixed order"))
    r = embedselect.select(sample_path("texts"), f"random-projection,{fresh},{t1},{t2}", column="text",
                           max_items=40, metrics=["fixed_order"], cache_dir=tmp_path / "cache")
    assert [c.name for c in r.candidates] == ["random-projection", "fresh", "trained1", "trained2"]
    assert [w.candidates for w in r.warnings if w.code == "untrained-checkpoint"] == [("fresh",)]
    assert not r.decided and r.leaders == ["random-projection", "trained1"], r.undecided_reasons
    (why,) = r.undecided_reasons
    assert why.endswith("it is not a pick; trained1 is the first candidate that is neither untrained nor a "
                        "reference point"), why
