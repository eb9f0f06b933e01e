"""Issue 20, "Nothing lost", replayed with new hostile cases of the same kinds: a marker alone (forged, or copied
with ``cp -r`` along with a user's files) never lets the tool take a folder; a file a user adds to a published site
or an index is never deleted; the store never lies inside what a night replaces or prunes; single-file outputs are
never written through a link nor into the cache; badges never replace a user's file; ``cache gc`` / ``rm`` remove
only the store's own vector files, never through a link; the cache is never the home or root folder.

Every case snapshots the user's files (paths, bytes, modes, link targets) before and after: nothing of theirs may
change. Each failed on the code before the mechanism in :mod:`embedselect._fs.guard` (an inventory in the marker)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from embedselect._fs import guard as fsguard
from embedselect.errors import ConfigError
from embedselect.nightly import outputs
from tests.test_nothing_lost import TEXTS, _board, _fake, _summary, snapshot

RUNS = [f"20261125T00000{i}Z-aaaaa{i}" for i in range(6)]


def _publish(site: Path, i: int) -> Path:
    ranking = _fake(["a", "b"])
    return outputs.publish(site, RUNS[i], ranking, _board(ranking), _summary(RUNS[i]))


# --- the nightly output ---------------------------------------------------------------------------------------
@pytest.mark.fault
def test_a_file_a_user_adds_to_the_published_site_is_never_pruned(tmp_path):
    """``echo example.org > site/CNAME`` (GitHub Pages) lands in the current version folder through the link: the
    nights after keep that version (with a warning) instead of pruning it with the user's file."""
    site = tmp_path / "site"
    _publish(site, 0)
    (site / "CNAME").write_text("example.org\n")
    (site / "badges" / "mine.svg").write_text("<svg>my own badge</svg>")
    before = {k: v for k, v in snapshot(tmp_path).items() if "CNAME" in k or "mine.svg" in k}
    for i in (1, 2, 3):
        _publish(site, i)
    after = snapshot(tmp_path)
    assert all(after.get(k) == v for k, v in before.items()), sorted(before)
    versions = sorted(p.name for p in (tmp_path / ".site.versions").iterdir() if not p.name.startswith("."))
    assert versions == [RUNS[0], RUNS[2], RUNS[3]], versions  # the user's version kept, the other old one pruned


def _forged(t: Path) -> Path:
    (t / "mine").mkdir()
    (t / "mine" / "thesis.tex").write_text("years of work")
    (t / "mine" / fsguard.MARKER).write_text(json.dumps({"tool": "embedselect", "kind": "nightly-version"}))
    return t / "mine"


def _copied_site(t: Path) -> Path:
    """The documented ``cp -rL site public`` (the marker comes along), then the user's own page added."""
    _publish(t / "site", 0)
    shutil.copytree(t / "site", t / "public", symlinks=False, copy_function=shutil.copy)
    (t / "public" / "index.html").write_text("<h1>my page</h1>")
    return t / "public"


def _marker_listing_others(t: Path) -> Path:
    """A real folder the tool once owned, to which the user added a sub-folder of their own."""
    (t / "old").mkdir()
    (t / "old" / "a.txt").write_text("ours")
    fsguard.mark_owned(t / "old", "nightly-version")
    (t / "old" / "photos").mkdir()
    (t / "old" / "photos" / "1.jpg").write_bytes(b"\xff\xd8 a photo")
    return t / "old"


MARKED = {"a forged marker": _forged, "a copy of the site with a user's page": _copied_site,
          "an owned folder a user added to": _marker_listing_others}


@pytest.mark.fault
@pytest.mark.parametrize("case", list(MARKED))
def test_a_marker_alone_never_lets_the_night_take_a_users_folder(tmp_path, case):
    target = MARKED[case](tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="did not write there|did not create"):
        outputs.check_outputs(target, cache=tmp_path / "cache", data=None, config_dir=None)
    with pytest.raises(ConfigError, match="did not write there|did not create"):
        _publish(target, 1)
    assert snapshot(tmp_path) == before


@pytest.mark.fault
@pytest.mark.parametrize("where", ["the current version", "the versions folder", "the data in the current version"])
def test_a_store_inside_what_the_night_replaces_or_prunes_is_refused(tmp_path, where):
    """``cache: ./site/cache`` after a first night: the cache would be created inside the current version folder
    (through the link) and pruned with it a night later, its history lost; likewise inside ``.site.versions``, and
    a data file the user keeps in ``site/``."""
    site = tmp_path / "site"
    _publish(site, 0)
    store = {"the current version": site / "store",
             "the versions folder": tmp_path / ".site.versions" / "store"}.get(where, tmp_path / "store")
    data = None
    if where == "the data in the current version":
        data = site / "texts.csv"
        data.write_text("text\nthe user's data\n")
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="cache|data"):
        outputs.check_outputs(site, cache=store, data=data, config_dir=None)
    assert snapshot(tmp_path) == before


# --- the search index -----------------------------------------------------------------------------------------
def _web_app(t: Path) -> Path:
    (t / "app").mkdir()
    (t / "app" / "manifest.json").write_text('{"name": "my web app", "start_url": "/"}')
    (t / "app" / "index.html").write_text("<html>my app</html>")
    return t / "app"


def _notes_in_index(t: Path) -> Path:
    from embedselect.search import build_index

    build_index(TEXTS, "random-projection?dim=8", out=t / "idx")
    (t / "idx" / "NOTES.md").write_text("what this index is for")
    return t / "idx"


def _link_to_index(t: Path) -> Path:
    from embedselect.search import build_index

    build_index(TEXTS, "random-projection?dim=8", out=t / "elsewhere" / "idx")
    (t / "lnk").symlink_to(t / "elsewhere" / "idx")
    return t / "lnk"


INDEX_CASES = {"a web app with a manifest.json": _web_app, "a file added to an index": _notes_in_index,
               "a link to an index": _link_to_index}


@pytest.mark.fault
@pytest.mark.parametrize("case", list(INDEX_CASES))
def test_index_overwrite_never_takes_a_folder_or_link_that_is_not_wholly_its_own(tmp_path, cache_dir, case):
    from embedselect.search import build_index

    out = INDEX_CASES[case](tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError, match="--out"):
        build_index(TEXTS, "random-projection?dim=8", out=out, overwrite=True)
    assert snapshot(tmp_path) == before


def test_an_index_folder_without_the_tools_marker_is_never_replaced(tmp_path, cache_dir):
    """An index folder whose marker is gone (a copy, or a user's folder laid out like one) is not the tool's:
    ``overwrite`` refuses it and leaves every file as it was."""
    from embedselect.search import build_index

    out = tmp_path / "idx"
    build_index(TEXTS, "random-projection?dim=8", out=out)
    (out / fsguard.MARKER).unlink()
    before = snapshot(tmp_path / "idx")
    with pytest.raises(ConfigError, match="did not create"):
        build_index(TEXTS, "random-projection?dim=8", out=out, overwrite=True)
    assert snapshot(tmp_path / "idx") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "idx"]


# --- publishing -----------------------------------------------------------------------------------------------
def _cli(monkeypatch, argv: list[str]) -> int:
    import embedselect.cli.publish as cli_publish
    from embedselect.cli import main

    monkeypatch.setattr(cli_publish, "_ranking", lambda args: (None, _fake(["a", "b"])))
    return main(argv)


FILE_COMMANDS = {"report": ["report"], "card": ["card", "--candidate", "a"], "leaderboard": ["leaderboard"]}


@pytest.mark.fault
@pytest.mark.parametrize("command", list(FILE_COMMANDS))
@pytest.mark.parametrize("target", ["a link to the user's file", "the cache's database"])
def test_single_file_outputs_never_replace_a_link_nor_write_into_the_cache(tmp_path, monkeypatch, command, target):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "README.md").write_text("# the user's own readme\n")
    (tmp_path / "README.md").symlink_to("real/README.md")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "embedselect.duckdb").write_bytes(b"DUCK a database")
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    out = "README.md" if target.startswith("a link") else "cache/embedselect.duckdb"
    before = snapshot(tmp_path)
    assert _cli(monkeypatch, [*FILE_COMMANDS[command], "--out", out]) == 2
    assert snapshot(tmp_path) == before


@pytest.mark.fault
@pytest.mark.parametrize("case", ["a user's badges.md", "a user's badge with our name", "the home folder",
                                  "inside the cache"])
def test_badges_never_replace_a_users_file_nor_go_into_home_or_the_cache(tmp_path, monkeypatch, case):
    from embedselect.publish import badge_for

    home, docs = tmp_path / "home", tmp_path / "docs"
    home.mkdir()
    docs.mkdir()
    (docs / "other.txt").write_text("keep")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("EMBEDSELECT_CACHE_DIR", str(tmp_path / "cache"))
    out = {"the home folder": home, "inside the cache": tmp_path / "cache" / "badges"}.get(case, docs)
    if case == "a user's badges.md":
        (docs / "badges.md").write_text("# My badges, written by hand\n")
    if case == "a user's badge with our name":
        (docs / f"{badge_for(_fake(['a', 'b']), 'a').stem}.svg").write_text("<svg>my own drawing</svg>")
    before = snapshot(tmp_path)
    assert _cli(monkeypatch, ["badge", "--out", str(out)]) == 2
    assert snapshot(tmp_path) == before
    if case == "a user's badges.md":  # the badges' own files are replaced run after run
        (docs / "badges.md").unlink()
        assert _cli(monkeypatch, ["badge", "--out", str(docs)]) == 0
        assert _cli(monkeypatch, ["badge", "--out", str(docs)]) == 0
        assert (docs / "other.txt").read_text() == "keep"


# --- the cache ------------------------------------------------------------------------------------------------
@pytest.mark.fault
@pytest.mark.parametrize("case", ["a user's folder as the cache", "a link in vectors/"])
def test_cache_gc_and_rm_remove_only_the_stores_own_vector_files(tmp_path, monkeypatch, case):
    from embedselect.cli import main

    root = tmp_path / "proj"
    (root / "vectors" / "ab").mkdir(parents=True)
    (root / "vectors" / "run1").mkdir()
    np.save(root / "vectors" / "run1" / "weights.npy", np.ones(3))  # a user's project that has a vectors/ folder
    np.save(root / "vectors" / "ab" / "w.npy", np.ones(3))
    outside = tmp_path / "outside"
    outside.mkdir()
    key = "ab" + "c" * 62
    np.save(outside / f"{key}.npy", np.ones(3))
    np.save(outside / "precious.npy", np.ones(3))
    if case == "a link in vectors/":
        from embedselect.store import Store

        Store.open(root)
        os.symlink(outside, root / "vectors" / "zz")
        os.symlink(outside, root / "vectors" / "cd")
        os.symlink(outside / f"{key}.npy", root / "vectors" / "ab" / f"{key}.npy")
    before = {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("proj/embedselect.duckdb")}
    assert main(["cache", "gc", "--cache-dir", str(root)]) == 0
    assert main(["cache", "rm", "--all", "--cache-dir", str(root)]) == 0
    after = snapshot(tmp_path)
    assert all(after.get(k) == v for k, v in before.items() if not k.endswith((".lock", ".duckdb"))), case


@pytest.mark.fault
def test_the_cache_is_never_the_home_folder(tmp_path, monkeypatch):
    """``cache: ~`` / ``--cache-dir ~``: the cache's lock, pid file and ``vectors/`` would sit among the user's own
    files (``/`` is refused by the same rule; not run here, to keep the test harmless on older code)."""
    from embedselect.cli import main

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "nightly.pid").write_text("the user's file")
    before = snapshot(tmp_path)
    assert main(["cache", "gc", "--cache-dir", str(tmp_path)]) == 2
    assert snapshot(tmp_path) == before


@pytest.mark.fault
@pytest.mark.parametrize("case", ["a lock file of theirs", "a vectors folder of theirs", "a project folder",
                                  "another program's cache"])
def test_a_folder_of_the_users_is_never_made_the_cache(tmp_path, case):
    """``--cache-dir`` naming a user's non-empty folder: the store put its database, ``vectors/`` and lock files among
    the user's files (and a night wrote its ``nightly.pid`` over theirs). Refused with a typed error before anything
    is written; the folder is byte for byte what it was."""
    from embedselect.cli import main

    folder = tmp_path / "work"
    folder.mkdir()
    if case == "a lock file of theirs":
        (folder / ".lock").write_text("the user's notes")
    elif case == "a vectors folder of theirs":
        (folder / "vectors").mkdir()
        (folder / "vectors" / "mine.npy").write_bytes(b"user data")
        (folder / "notes.txt").write_text("x")
    elif case == "a project folder":
        (folder / "README.md").write_text("my project")
    else:
        (folder / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# made by another tool\n")
    before = snapshot(folder)
    assert main(["cache", "gc", "--cache-dir", str(folder)]) == 2, case
    assert snapshot(folder) == before, case


def test_a_new_or_empty_folder_becomes_a_tagged_cache_and_an_older_cache_is_still_opened(tmp_path):
    """The claim's other side: a new folder and an empty one are tagged (CACHEDIR.TAG, which backup tools skip) and
    work; a cache made before the tag (its database present) is opened and tagged; a store's own leftovers from before
    its database existed (empty ``.lock``, ``vectors/``) are accepted."""
    from embedselect.store import CACHE_TAG, Store

    new, empty, old, early = (tmp_path / n for n in ("new", "empty", "old", "early"))
    empty.mkdir()
    for root in (new, empty):
        store = Store.open(root)
        assert (root / CACHE_TAG).read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
        assert store.gc() == 0
    Store.open(old).gc()
    (old / CACHE_TAG).unlink()
    (old / "user-notes.txt").write_text("kept")  # a cache with its database stays a cache whatever else sits there
    Store.open(old).gc()
    assert (old / CACHE_TAG).is_file() and (old / "user-notes.txt").read_text() == "kept"
    early.mkdir()
    (early / ".lock").touch()
    (early / "vectors").mkdir()
    Store.open(early).gc()
    assert (early / CACHE_TAG).is_file()


# --- inputs and outputs that are not what they claim to be ----------------------------------------------------
@pytest.mark.fault
@pytest.mark.parametrize("card", ["a folder", "a pipe"])
def test_a_card_input_that_is_not_a_regular_file_is_refused_at_once(tmp_path, monkeypatch, card):
    """``card --card DIR`` was an "unexpected IsADirectoryError" (exit 1); ``--card FIFO`` (or ``/dev/zero``) blocked
    or read forever. Now exit 2 before any work."""
    import threading

    path = tmp_path / "README"
    path.mkdir() if card == "a folder" else os.mkfifo(path)
    done: list[int] = []
    t = threading.Thread(target=lambda: done.append(_cli(monkeypatch, ["card", "--candidate", "a", "--card",
                                                                       str(path)])), daemon=True)
    t.start()
    t.join(timeout=20)
    if t.is_alive():  # unblock the reader of the pipe (old code) so that the thread can end
        with open(path, "w"):
            pass
    assert done == [2]


@pytest.mark.fault
def test_badge_out_at_an_existing_file_is_refused_and_left_as_it_is(tmp_path, monkeypatch):
    (tmp_path / "notes").write_text("a file, not a folder")
    before = snapshot(tmp_path)
    assert _cli(monkeypatch, ["badge", "--out", str(tmp_path / "notes")]) == 2
    assert snapshot(tmp_path) == before


@pytest.mark.fault
@pytest.mark.parametrize("folder", ["the home folder", "a folder without a model"])
def test_a_model_folder_that_holds_no_model_is_refused_before_any_file_is_read(tmp_path, monkeypatch, folder):
    """``-m ~`` (a typo) hashed every file of the home folder before saying no library loads it (43 s on a small
    home; hours on a real one); ``-m /`` walked the whole file system. The backend is told first, from two files."""
    from embedselect.models.candidates import digests, parse_candidates, resolve_candidate
    from embedselect.errors import CandidateError

    home = tmp_path / "home"
    (home / "photos").mkdir(parents=True)
    (home / "photos" / "big.raw").write_bytes(os.urandom(1 << 16))
    monkeypatch.setenv("HOME", str(home))
    read: list[str] = []
    monkeypatch.setattr(digests, "_hash_file", lambda p: read.append(str(p)) or "0" * 64)
    monkeypatch.setattr(digests, "_MEMORY", {})
    target = home if folder == "the home folder" else home / "photos"
    with pytest.raises(CandidateError):
        resolve_candidate(parse_candidates(str(target))[0])
    assert read == []


@pytest.mark.fault
def test_new_weights_behind_a_link_out_of_a_model_folder_are_not_served_from_the_cache(tmp_path, cache_dir):
    """``model.safetensors -> /shared/weights.safetensors``: the loader reads the file behind the link, so replacing
    it (a new fine-tune, same size) must give a new revision; the key used to count only the link's name and target,
    and the old vectors came back from the cache for the new weights."""
    import time

    import embedselect
    from testkit.tinymodels import make_tiny_sentence_transformer

    d = make_tiny_sentence_transformer(tmp_path / "model", seed=0)
    other = make_tiny_sentence_transformer(tmp_path / "v2", seed=7)
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.move(d / "model.safetensors", shared / "weights.safetensors")
    (d / "model.safetensors").symlink_to(shared / "weights.safetensors")
    [first] = embedselect.embed(TEXTS, [str(d)], cache_dir=cache_dir, keep_vectors=True)
    time.sleep(0.01)
    shutil.copyfile(other / "model.safetensors", shared / "weights.safetensors")  # the new fine-tune, same size
    [second] = embedselect.embed(TEXTS, [str(d)], cache_dir=cache_dir, keep_vectors=True)
    assert first.result.ok and second.result.ok
    assert not second.result.cached and not np.allclose(np.asarray(first.vectors), np.asarray(second.vectors))


@pytest.mark.fault
@pytest.mark.parametrize("case", ["a night at an index", "an index at a site's version"])
def test_a_night_never_takes_an_index_and_an_index_never_takes_a_site(tmp_path, cache_dir, case):
    """Both carry the tool's marker: ``output: ./idx`` (a typo) moved the user's FAISS index into the night's
    versions folder and pruned it a night later. A folder is taken over only by the writer of its own kind."""
    from embedselect.search import build_index

    if case == "a night at an index":
        build_index(TEXTS, "random-projection?dim=8", out=tmp_path / "idx")
        before = snapshot(tmp_path)
        with pytest.raises(ConfigError, match="holds embedselect's index"):
            outputs.check_outputs(tmp_path / "idx", cache=tmp_path / "cache", data=None, config_dir=None)
        with pytest.raises(ConfigError, match="holds embedselect's index"):
            _publish(tmp_path / "idx", 0)
    else:
        version = _publish(tmp_path / "site", 0)
        before = snapshot(tmp_path)
        with pytest.raises(ConfigError, match="holds embedselect's nightly-version"):
            build_index(TEXTS, "random-projection?dim=8", out=version, overwrite=True)
    assert snapshot(tmp_path) == before


@pytest.mark.fault
@pytest.mark.parametrize("name", ["nightly.pid", "nightly.lock", ".lock", "nightly run summary"])
def test_a_link_planted_in_the_store_is_never_written_through(tmp_path, name):
    """A link in the cache named like one of its own files, to a user's file: the night wrote its pid through
    ``nightly.pid`` (the user's thesis became ``7290``); a link at a lock file was an "unexpected OSError" (exit 1).
    Now the pid file is skipped with a warning, a linked lock file is a ``CacheError`` (exit 6) naming it, and the
    summaries, digests and ref files of the cache are written under unique names, never through a link."""
    from embedselect.cli import main
    from embedselect.errors import CacheError
    from embedselect.nightly.run import _save_summary, night_lock
    from embedselect.store import Store

    root = tmp_path / "store"
    store = Store.open(root)
    store.list_runs()
    thesis = tmp_path / "thesis.tex"
    thesis.write_text("years of work")
    target = {"nightly run summary": root / "nightly" / "runs" / ".r1.json.tmp"}.get(name, root / name)  # its old name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    target.symlink_to(thesis)
    before = snapshot(tmp_path)
    if name == "nightly.pid":
        with night_lock(root):
            pass
    elif name == "nightly.lock":
        with pytest.raises(CacheError, match="link"):
            with night_lock(root):
                pass
    elif name == ".lock":
        assert main(["cache", "ls", "--cache-dir", str(root)]) == 6
    else:
        _save_summary(store, {"run_id": "r1"})
        assert json.loads((root / "nightly" / "runs" / "r1.json").read_text()) == {"run_id": "r1"}
    assert thesis.read_text() == "years of work"
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before and "duckdb" not in k and "pid" not in k} == {
        k: v for k, v in before.items() if "duckdb" not in k and "pid" not in k}


def _claim(root: str) -> list[str]:
    from embedselect.store import Store

    Store.open(root)
    return sorted(os.listdir(root))


def test_processes_opening_one_new_cache_at_once_all_get_it(tmp_path):
    """Four processes opening the same new folder at the same moment: each sees the others' tag (written whole under
    a temporary name, then linked into place) as the cache's, none is refused, no temporary name is left."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    for i in range(3):
        root = str(tmp_path / f"c{i}")
        with ctx.Pool(4) as pool:
            seen = pool.map(_claim, [root] * 4)
        assert all("CACHEDIR.TAG" in s for s in seen)
        assert not [e for e in os.listdir(root) if e.endswith(".tmp")]
