"""The default combination per kind of data (embedselect.pipeline.defaults): images are ranked with their own
weights, method and sufficiency estimator, texts with the registry's; a user's weights and options still win."""

from __future__ import annotations

import pytest

from embedselect import select
from embedselect.cli import main
from embedselect.pipeline import defaults
from tests.test_image_labels import make_photos

IMAGE_POOL = ["pixel-pca", "pixel-pca?dim=8", "random-projection", "random-projection?dim=32"]


def test_user_options_sit_over_the_modality_defaults_option_by_option():
    assert defaults.metric_options(None, "image") == {"sufficiency": {"estimator": "gaussian"},
                                                      "task_prior": {"tasks": "clusters", "leave_self_out": True,
                                                                     "cluster_restarts": 32}}
    mine = {"sufficiency": {"estimator": "knife", "targets": "all"}, "task_prior": {"tau": 0.2}}
    got = defaults.metric_options(mine, "image")
    assert got == {"sufficiency": {"estimator": "knife", "targets": "all"},
                   "task_prior": {"tasks": "clusters", "leave_self_out": True, "cluster_restarts": 32, "tau": 0.2}}
    assert defaults.metric_options(None, "text") == {} and mine["sufficiency"] == {"estimator": "knife", "targets": "all"}
    assert defaults.default_weight("rankme", "image") == 0.5 and defaults.default_weight("rankme", "text") == 0.0
    from embedselect.metrics.base import get_spec

    assert defaults.default_weight("alpha_req", "image") == get_spec("alpha_req").weight  # not in the image table
    assert (defaults.default_method("image"), defaults.default_method("text")) == ("mean-rank", "mean-rank")


def test_a_folder_of_images_is_ranked_with_the_image_defaults(tmp_path):
    photos = make_photos(tmp_path / "photos", n_per_class=30)
    r = select(photos, IMAGE_POOL, cache_dir=tmp_path / "c")
    assert r.combine == "mean-rank"
    assert r.settings["metric_options"]["sufficiency"]["estimator"] == "gaussian"
    assert r.details["task_prior"]["prior"] == "central"
    assert r.details["task_prior"]["tasks"] == "clusters" and r.details["task_prior"]["n_classes"] == [4, 8]  # 60 items
    assert r.details["task_prior"]["n_tasks"] == 2 * 32  # 32 partitions per class count (§4r)
    w = r.settings["combined_weights"]
    assert w == {"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.5, "rankme": 0.5, "modularity": 0.5}  # §4q
    # the user's choice wins: their estimator and weight, the rest from the image defaults
    mine = select(photos, IMAGE_POOL, cache_dir=tmp_path / "c", metric_options={"sufficiency": {"estimator": "knife"}},
                  weights={"rankme": 0.0})
    assert mine.settings["metric_options"]["sufficiency"]["estimator"] == "knife"
    assert mine.settings["combined_weights"]["rankme"] == 0.0 and mine.settings["combined_weights"]["nn_agreement"] == 0.5


def test_texts_keep_the_registry_defaults(tmp_path):
    texts = [f"{a} {b} {c}" for a in ("red", "blue", "green", "old", "new") for b in ("car", "house", "tree", "song")
             for c in ("today", "at night", "in the rain")]
    r = select(texts, ["tfidf-svd", "tfidf-svd?dim=8", "random-projection", "random-projection?dim=32"],
               cache_dir=tmp_path / "c")
    assert r.combine == "mean-rank" and "estimator" not in r.settings["metric_options"].get("sufficiency", {})
    assert r.settings["combined_weights"] == {"task_prior": 1.0, "sufficiency": 0.25, "nn_agreement": 0.0,
                                              "rankme": 0.0, "modularity": 0.0}  # docs/validity.md, "Protocol"
    assert r.details["task_prior"]["prior"] == "central" and r.details["task_prior"]["tasks"] == "sampled"


def test_the_metrics_command_lists_both_columns(capsys):
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("rankme"))
    assert row.split()[1:3] == ["0", "0.5"]
    assert "mean-rank for images" in out and '"estimator": "gaussian"' in out


@pytest.mark.parametrize("modality", ["text", "image"])
def test_every_default_metric_has_a_weight_for_each_modality(modality):
    from embedselect.metrics.base import DEFAULT_METRICS

    weights = {m: defaults.default_weight(m, modality) for m in DEFAULT_METRICS}
    assert weights["task_prior"] > 0 and weights["sufficiency"] > 0  # the mission's two signals are in every default


def test_no_left_out_of_the_score_note_for_a_metric_the_score_never_had(tmp_path):
    """RankMe cannot compare candidates that all have at least n - 1 dimensions and says it is "left out of the
    score"; with a weight of 0 (the user's here; the text default's too) that note would only confuse, but its column
    shows "-" for every candidate, which is said with the reason (it was said nowhere). Given a weight (the image
    default's 0.5), it is "left out of the score"."""
    photos = make_photos(tmp_path / "photos", n_per_class=30)  # 60 items; pixel-pca has 59 dimensions
    pool = ["pixel-pca", "random-projection", "random-projection?dim=128", "random-projection?dim=96"]
    r = select(photos, pool, cache_dir=tmp_path / "c", weights={"rankme": 0.0})
    assert "not_comparable" in r.details["rankme"]
    assert not any("left out of the score" in w for w in r.warnings)
    assert [w for w in r.warnings if w.startswith("rankme not scored (its column shows -): every candidate has at "
                                                  "least n - 1 = 59 dimensions")], r.warnings
    weighted = select(photos, pool, cache_dir=tmp_path / "c")
    assert any(w.startswith("rankme") and "left out of the score" in w for w in weighted.warnings)
