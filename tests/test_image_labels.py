"""Labels for a folder of images: from sub-folder names or from a CSV of path,label, on the CLI and in the API."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from embedselect import select
from embedselect.cli import main
from embedselect.data import ReferenceData
from embedselect.errors import DataError, DataFileNotFoundError

MODELS = "pixel-pca,random-projection"


def make_photos(root, n_per_class: int = 12, classes=("cat", "dog")):
    """``root/<class>/<i>.png``: small images whose colour depends on the class (so a probe can learn it)."""
    rng = np.random.default_rng(0)
    for c, name in enumerate(classes):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(n_per_class):
            arr = rng.integers(0, 60, size=(16, 16, 3), dtype=np.uint8)
            arr[..., c] += 150
            Image.fromarray(arr).save(root / name / f"{i:02d}.png")
    return root


def write_csv(path, rows, header=("path", "label")):
    lines = ([",".join(header)] if header else []) + [f"{p},{label}" for p, label in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_folder_labels_from_the_api_and_the_loader(tmp_path):
    photos = make_photos(tmp_path / "photos")
    ref = ReferenceData.load(photos, label_column="folder")  # what select(labels="folder") hands on
    assert ref.labels.tolist() == [i.split("/")[0] for i in ref.ids] and set(ref.labels) == {"cat", "dog"}
    r = select(photos, MODELS, labels="folder", cache_dir=tmp_path / "c", metrics=["task_prior"])
    assert r.validation is not None and r.dataset["has_labels"]
    assert any(k.startswith("labels.") for k in r.candidates[0].columns)


def test_csv_labels_relative_absolute_and_without_header(tmp_path):
    photos = make_photos(tmp_path / "photos", n_per_class=3)
    ids = ReferenceData.from_images(photos).ids
    want = ["odd" if k % 2 else "even" for k in range(len(ids))]
    # relative to the image folder, with a header in another order
    csv1 = write_csv(tmp_path / "a.csv", [(lab, i) for i, lab in zip(ids, want)], header=("label", "file"))
    assert ReferenceData.from_images(photos, labels=csv1).labels.tolist() == want
    # relative to the CSV file's folder ("photos/cat/00.png"), no header, and a Path for labels
    csv2 = write_csv(tmp_path / "b.csv", [(f"photos/{i}", lab) for i, lab in zip(ids, want)], header=None)
    assert ReferenceData.from_images(photos, labels=csv2).labels.tolist() == want
    # absolute paths, integer labels, one image left unlabelled with an empty label
    rows = [(str(photos / i), k % 3) for k, i in enumerate(ids)]
    rows[0] = (rows[0][0], "")
    ref = ReferenceData.load(photos, label_column=str(write_csv(tmp_path / "c.csv", rows)))
    assert ref.labels.tolist() == [None] + [k % 3 for k in range(1, len(ids))]


def test_cli_validate_takes_folder_and_csv_labels(tmp_path, capsys):
    photos = make_photos(tmp_path / "photos")
    ids = ReferenceData.from_images(photos).ids
    csv = write_csv(tmp_path / "labels.csv", [(i, i.split("/")[0]) for i in ids])
    results = []
    for labels in ("folder", str(csv)):
        code = main(["validate", str(photos), "--labels", labels, "--models", MODELS, "--metrics", "task_prior",
                     "--cache-dir", str(tmp_path / "c"), "--json", "-q"])
        assert code == 0
        results.append(json.loads(capsys.readouterr().out))
    assert all(r["validation"] is not None for r in results)
    assert results[0]["validation"]["table"] == results[1]["validation"]["table"]  # the same labels either way
    assert main(["rank", str(photos), "--labels", "folder", "--models", MODELS, "--metrics", "task_prior",
                 "--cache-dir", str(tmp_path / "c"), "-q"]) == 0  # rank's --labels adds the same check


@pytest.mark.fault
def test_bad_image_labels_are_typed_errors_that_say_what_to_fix(tmp_path, capsys):
    photos = make_photos(tmp_path / "photos", n_per_class=3)
    ids = list(ReferenceData.from_images(photos).ids)
    rows = [(i, "x") for i in ids]
    with pytest.raises(DataError, match=r"1 of its 7 paths match no image.*'cat/99.png'"):
        ReferenceData.from_images(photos, labels=write_csv(tmp_path / "a.csv", rows + [("cat/99.png", "x")]))
    with pytest.raises(DataError, match=r"2 of the 6 images have no row.*'dog/01.png'.*empty label"):
        ReferenceData.from_images(photos, labels=write_csv(tmp_path / "b.csv", rows[:4]))
    with pytest.raises(DataError, match=r"two different labels: cat/00.png \(rows 2 and 8\)"):
        ReferenceData.from_images(photos, labels=write_csv(tmp_path / "c.csv", rows + [("cat/00.png", "y")]))
    (tmp_path / "d.csv").write_text("path,label\ncat/00.png\n")
    with pytest.raises(DataError, match="row.s. 2 have fewer than two fields"):
        ReferenceData.from_images(photos, labels=tmp_path / "d.csv")
    with pytest.raises(DataFileNotFoundError, match="'folder' .*CSV"):
        ReferenceData.from_images(photos, labels="folders")  # a typo of the keyword: no such file
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in ids[:2]:
        (flat / i.replace("/", "-")).write_bytes((photos / i).read_bytes())
    with pytest.raises(DataError, match="no image is in a sub-folder"):
        ReferenceData.from_images(flat, labels="folder")
    # on the command line: exit 3 (data), one line naming the file and the fix
    code = main(["validate", str(photos), "--labels", str(tmp_path / "a.csv"), "--models", MODELS,
                 "--cache-dir", str(tmp_path / "c"), "-q"])
    err = capsys.readouterr().err
    assert code == 3 and "match no image" in err and "cat/99.png" in err
