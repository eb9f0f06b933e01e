"""Answers to `ask`'s questions given for another data set: `rank --answers` and `ask --out` refuse them with an
error naming the row (exit 3), and leave the cache database and the questions file as they were."""

from __future__ import annotations

import shutil

import pytest

import embedselect
from embedselect.cli import main

from testkit.tinymodels import make_dark_light_photos

POOL = ["pixel-pca", "random-projection"]


@pytest.mark.fault
def test_answers_about_another_folder_of_images_with_the_same_names_are_refused(tmp_path, capsys):
    photos, other = make_dark_light_photos(tmp_path / "photos", 0), make_dark_light_photos(tmp_path / "other", 1)
    cache = tmp_path / "cache"
    out = tmp_path / "q.csv"
    df = embedselect.ask(photos, POOL, n=6, out=out, cache_dir=cache, metrics=["alpha_req"])
    df["answer"] = ["a"] * len(df)
    out.write_text(df.to_csv(index=False))
    # the same images elsewhere (the folder copied or moved): the ids decide, the answers are read
    copy = tmp_path / "copy"
    shutil.copytree(photos, copy)
    r = embedselect.select(copy, POOL, metrics=["alpha_req"], cache_dir=cache, answers=out, save=False)
    assert r.answers["n_answered"] == len(df)
    embedselect.select(other, POOL, metrics=["alpha_req"], cache_dir=cache)  # a stored ranking of the other folder
    db = cache / "embedselect.duckdb"
    before, file_before = db.read_bytes(), out.read_bytes()
    for argv in (["rank", str(other), "-m", ",".join(POOL), "--metrics", "alpha_req", "--answers", str(out)],
                 ["ask", str(other), "-m", ",".join(POOL), "-n", "6", "--out", str(out)]):
        code = main(argv + ["--cache-dir", str(cache), "-q"])
        err = capsys.readouterr().err
        assert code == 3, (argv[0], err)
        assert "row 1" in err and "another data set" in err and "image" in err, err
        assert db.read_bytes() == before and out.read_bytes() == file_before
