"""Issue 20, "Nothing lost": the nightly job, publishing and the index never move, replace or delete what the tool
did not create; published files follow the umask; leftovers of dead runs are cleaned; untrusted text loses its
control and bidi characters in every published format. Every writer goes through :mod:`embedselect._fs.guard`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from embedselect._fs import guard as fsguard
from embedselect.errors import ConfigError, SearchIndexError
from embedselect.nightly import load_config, outputs, run_night
from embedselect.ranking.result import CandidateResult, Ranking

TEXTS = [f"the {a} {b} sat on the {c}" for a in ("cat", "dog", "man", "child") for b in ("red", "blue", "old")
         for c in ("mat", "tree", "car")]
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ``root`` (links not followed) -> (kind, bytes or link target, mode)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p.relative_to(root))] = ("link", os.readlink(p), None)
            elif stat.S_ISDIR(st.st_mode):
                out[str(p.relative_to(root))] = ("dir", None, stat.S_IMODE(st.st_mode))
            else:
                out[str(p.relative_to(root))] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _fake(names: list[str], *, source: str = "/data/tickets.csv") -> Ranking:
    cands = [CandidateResult(name=n, spec=n, model_id=f"org/{i}", revision="a" * 40, scores={"task_prior": 1.0 - i / 10},
                             ranks={"task_prior": i + 1}, combined_score=1.0 - i / 10, rank=i + 1, dim=8)
             for i, n in enumerate(names)]
    return Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank",
                   dataset={"source": source, "n": 36, "modality": "text", "fingerprint": "f" * 64},
                   settings={"seed": 0}, versions={"embedselect": "0.1.0"}, ranking_id="r" * 32,
                   created_at="2026-11-23T00:00:00+00:00")


def _board(ranking: Ranking) -> list[dict]:
    return [{"rank": c.rank, "name": c.name, "model_id": c.model_id, "revision": c.revision, "why": "pinned",
             "prev_rank": None, "delta": None, "combined_score": c.combined_score, "scores": dict(c.scores)}
            for c in ranking.ok]


def _summary(run_id: str) -> dict:
    return {"run_id": run_id, "started_at": "2026-11-25T00:00:00+00:00", "status": "ok"}


def _config(tmp_path: Path, **over) -> Path:
    import pandas as pd

    (tmp_path / "data").mkdir(exist_ok=True)
    pd.DataFrame({"text": TEXTS}).to_csv(tmp_path / "data" / "texts.csv", index=False)
    cfg = {"data": {"path": "data/texts.csv", "column": "text"}, "crawl": {"limit": 5}, "keep_top": 2,
           "pinned": ["tfidf-svd?dim=4", "random-projection?dim=8"], "output": "./site", "cache": "./cache",
           "metrics": ["task_prior"], "budget_minutes": 10}
    cfg.update(over)
    (tmp_path / "nightly.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "nightly.yaml"


# --- the night never takes what is not its own -------------------------------------------------------------
HOSTILE = {
    "a user's folder with files": lambda t: _users_folder(t),
    "the cache folder": lambda t: "./cache",
    "the config's folder": lambda t: str(t),
    "the data file's folder": lambda t: "./data",
    "empty": lambda t: "",
    "dot": lambda t: ".",
    "a user's link elsewhere": lambda t: _users_link(t),
}


def _users_folder(t: Path) -> str:
    (t / "mine").mkdir()
    (t / "mine" / "thesis.tex").write_text("years of work")
    (t / "mine" / "sub").mkdir()
    (t / "mine" / "sub" / "notes.txt").write_text("more")
    return "./mine"


def _users_link(t: Path) -> str:
    (t / "elsewhere").mkdir()
    (t / "elsewhere" / "index.html").write_text("my own site")
    (t / "site-link").symlink_to(t / "elsewhere")
    return "./site-link"


@pytest.mark.fault
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_night_pointed_at_a_hostile_folder_exits_2_and_keeps_every_file(hub, tmp_path, monkeypatch, case):
    from embedselect.cli import main

    work = tmp_path / "work"
    work.mkdir()
    (work / "cache").mkdir()
    (work / "cache" / "keep.me").write_text("a cache file")
    output = HOSTILE[case](work)
    conf = _config(work, output=output)
    before = snapshot(tmp_path)
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError, match="output"):
        run_night(load_config(conf))
    assert main(["nightly", "--config", str(conf)]) == 2
    assert snapshot(tmp_path) == before


@pytest.mark.fault
@pytest.mark.parametrize("output", ["/", "~", "./cache/site"])
def test_root_home_and_inside_the_store_are_configuration_errors(tmp_path, output):
    conf = _config(tmp_path, output=output)
    with pytest.raises(ConfigError, match=r"(?s)invalid nightly configuration.*output: "):
        load_config(conf)


@pytest.mark.fault
def test_an_unwritable_output_is_found_before_any_work(hub, tmp_path, monkeypatch):
    """``output`` under a file (a read-only place even for root): refused before the store is opened or any model
    embedded; with permissions, for a non-root user, too."""
    import embedselect.nightly.executors.local as local

    (tmp_path / "afile").write_text("x")
    conf = load_config(_config(tmp_path, output="./afile/site"))
    monkeypatch.setattr(local.LocalExecutor, "embed", lambda *a, **k: pytest.fail("embedding began"))
    with pytest.raises(ConfigError, match="output"):
        run_night(conf)
    assert not (tmp_path / "cache").exists()
    if os.geteuid() != 0:
        (tmp_path / "ro").mkdir()
        os.chmod(tmp_path / "ro", 0o555)
        with pytest.raises(ConfigError, match="not writable"):
            run_night(load_config(_config(tmp_path, output="./ro/site")))


@pytest.mark.fault
def test_publish_takes_over_only_empty_or_its_own_folders_and_cleans_dead_runs_leftovers(tmp_path, monkeypatch):
    """Case 2 at the publish step (the folder appeared after the check), and a killed publish's stray link and
    partial folder, cleaned by the next night; a user's look-alike names are kept."""
    ranking = _fake(["a", "b"])
    site = tmp_path / "site"
    site.mkdir()
    (site / "mine.txt").write_text("mine")
    with pytest.raises(ConfigError, match="did not create"):
        outputs.publish(site, "20261125T000000Z-aaaaaa", ranking, _board(ranking), _summary("20261125T000000Z-aaaaaa"))
    assert (site / "mine.txt").read_text() == "mine" and not site.is_symlink()
    (site / "mine.txt").unlink()  # now empty: taken over
    first = outputs.publish(site, "20261125T000000Z-aaaaaa", ranking, _board(ranking),
                            _summary("20261125T000000Z-aaaaaa"))
    assert site.is_symlink() and site.resolve() == first.resolve()
    versions = tmp_path / ".site.versions"
    # leftovers of killed runs: a stray link of a dead pid, a dead partial folder
    dead = f".site.link-h{fsguard._HOST}-p{_dead_pid()}-r000000"
    (tmp_path / dead).symlink_to(os.path.relpath(first, tmp_path))
    partial = versions / f".20261125T000002Z-cccccc.partial-h{fsguard._HOST}-p{_dead_pid()}-r000000"
    partial.mkdir()
    (tmp_path / ".site.link-notes").write_text("a user's file with a look-alike name")
    outputs.publish(site, "20261125T000003Z-dddddd", ranking, _board(ranking), _summary("20261125T000003Z-dddddd"))
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [".site.link-notes", ".site.versions", "site"], left
    assert not partial.exists()
    # the published files follow the umask
    mode = stat.S_IMODE((site / "leaderboard.md").stat().st_mode)
    assert mode == 0o666 & ~fsguard.umask(), oct(mode)


@pytest.mark.fault
def test_published_files_follow_the_umask_and_keep_an_existing_files_mode(tmp_path):
    from embedselect.cli.common import write_atomic
    from embedselect.publish import write_badges

    old = os.umask(0o022)
    try:
        write_badges(_fake(["a", "b"]), tmp_path / "badges")
        modes = {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "badges").iterdir()}
        assert modes == {0o644}, [oct(m) for m in modes]
        readme = tmp_path / "README.md"
        readme.write_text("# card\n")
        os.chmod(readme, 0o640)
        write_atomic(readme, "# new card\n")  # what `card --out` / `leaderboard --out` / `report --out` use
        assert stat.S_IMODE(readme.stat().st_mode) == 0o640 and readme.read_text() == "# new card\n"
        write_atomic(tmp_path / "new.md", "x")
        assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o644
    finally:
        os.umask(old)


# --- model cards ----------------------------------------------------------------------------------------------
@pytest.mark.fault
def test_a_card_with_a_byte_order_mark_keeps_its_one_front_matter(tmp_path):
    from embedselect.publish import update_card

    text = "\ufeff---\nlicense: mit\ntags:\n- authors-tag\n---\n# My model\n\nThe authors' text.\n"
    out = update_card(text, _fake(["a", "b"]), "a")
    assert out.count("\n---\n") == 1 and out.startswith("---\n"), out[:200]
    meta = yaml.safe_load(out.split("---\n")[1])
    assert meta["license"] == "mit" and meta["tags"] == ["authors-tag"] and meta["model-index"]
    assert "The authors' text." in out


@pytest.mark.fault
@pytest.mark.parametrize("front", ["---\nlicense: [mit\n---\n# x\n", "---\n- a\n- b\n---\n# x\n",
                                   "---\nlicense: mit\n# never closed\n"])
def test_a_card_with_invalid_front_matter_is_refused_and_left_untouched(tmp_path, monkeypatch, front):
    import embedselect.cli.publish as cli_publish
    from embedselect.cli import main
    from embedselect.publish import update_card

    with pytest.raises(ConfigError, match="front matter|metadata"):
        update_card(front, _fake(["a", "b"]), "a")
    card = tmp_path / "README.md"
    card.write_text(front)
    monkeypatch.setattr(cli_publish, "_ranking", lambda args: (None, _fake(["a", "b"])))
    assert main(["card", "--candidate", "a", "--card", str(card), "--out", str(card)]) == 2
    assert card.read_text() == front


# --- one sanitiser for untrusted text ---------------------------------------------------------------------
@pytest.mark.fault
def test_bidi_and_control_characters_never_reach_a_published_file(tmp_path):
    from embedselect.publish import leaderboard as lb
    from embedselect.publish import report, update_card, write_badges

    evil = f"acme/{RLO}txt.exe\x1b[31m\u2066x\u2069\u200b"
    ranking = _fake([evil, "b"], source=f"/data/{RLO}vsc.csv")
    site = tmp_path / "site"
    outputs.publish(site, "20261125T000000Z-aaaaaa", ranking, _board(ranking), _summary("20261125T000000Z-aaaaaa"))
    write_badges(ranking, tmp_path / "badges", dataset=f"my{RLO}data")
    texts = {p: p.read_text(encoding="utf-8") for p in [*site.rglob("*"), *(tmp_path / "badges").iterdir()]
             if p.is_file()}
    texts["card"] = update_card(None, ranking, evil)
    texts["lb.md"], texts["lb.html"] = lb.to_markdown(ranking), lb.to_html(ranking)
    texts["report.md"], texts["report.html"] = report.to_markdown(ranking), report.to_html(ranking, plots=False)
    for where, text in texts.items():
        bad = [f"U+{ord(c):04X}" for c in text if c in {RLO, "\x1b", "\u2066", "\u2069", "\u200b"}]
        assert not bad, (where, bad)
    assert "txt.exe" in (site / "leaderboard.md").read_text()  # the name is shown, its controls are not


# --- the search index -----------------------------------------------------------------------------------------
@pytest.mark.fault
def test_index_overwrite_killed_at_the_swap_keeps_an_index_and_stale_temp_folders_are_cleaned(tmp_path, cache_dir,
                                                                                             monkeypatch):
    from embedselect.search import SearchIndex, build_index

    out = tmp_path / "idx"
    build_index(TEXTS, "tfidf-svd?dim=4", out=out)
    first = (out / "manifest.json").read_bytes()
    # a dead run's temp folder, and a user's look-alike that must stay
    (tmp_path / f".idx.tmp-h{fsguard._HOST}-p{_dead_pid()}-r000000").mkdir()
    (tmp_path / ".idx.tmp-notes").mkdir()

    def killed(*a, **k):  # the process dies at its next rename
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        build_index(TEXTS, "tfidf-svd?dim=4", out=out, overwrite=True)  # vectors cached: the next rename is the index's
    monkeypatch.undo()
    SearchIndex.load(out)  # the old index or the new one, never neither
    assert (out / "manifest.json").is_file()
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".idx"))
    assert names == [".idx.tmp-notes"], names
    # the fallback without an atomic exchange: the old folder is put back
    monkeypatch.setattr(fsguard, "_exchange", None)
    real = os.replace

    failed = []

    def second_fails(a, b):  # the rename of the new folder onto `out` fails (the old one is aside by then)
        if Path(b) == out and not failed:
            failed.append(a)
            raise OSError(5, "Input/output error")
        return real(a, b)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(SearchIndexError):
        build_index(TEXTS, "tfidf-svd?dim=4", out=out, overwrite=True)
    monkeypatch.undo()
    assert failed and ".idx.tmp-h" in Path(failed[0]).name
    SearchIndex.load(out)
    assert (out / "manifest.json").read_bytes() == first  # both replacements failed: the first index stayed
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".idx")) == [".idx.tmp-notes"]


@pytest.mark.fault
def test_a_full_disk_while_writing_an_index_is_a_typed_error_and_leaves_nothing(tmp_path, cache_dir, monkeypatch):
    import faiss

    from embedselect.search import build_index

    out = tmp_path / "idx"
    build_index(TEXTS, "tfidf-svd?dim=4", out=out)
    before = snapshot(tmp_path / "idx")
    real, big = faiss.write_index, faiss.IndexFlatIP(8)
    big.add(np.zeros((20_000, 8), dtype=np.float32))  # larger than stdio's buffer: FAISS sees the failed write
    monkeypatch.setattr(faiss, "write_index", lambda index, path: real(big, "/dev/full"))  # ENOSPC, in FAISS's words
    with pytest.raises(SearchIndexError, match="no space left on device.*was not changed"):
        build_index(TEXTS, "tfidf-svd?dim=4", out=out, overwrite=True)
    assert snapshot(tmp_path / "idx") == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.fault
@pytest.mark.parametrize("out", ["", "."])
def test_an_index_at_the_current_root_or_empty_folder_is_refused(tmp_path, cache_dir, monkeypatch, out):
    from embedselect.search import build_index

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="--out"):
        build_index(TEXTS, "tfidf-svd?dim=4", out=out)
    assert sorted(os.listdir(tmp_path)) == []


def test_the_guard_refuses_by_name_and_probes_writability(tmp_path, monkeypatch):
    """Unit checks of :func:`fsguard.check_output_target` and :func:`fsguard.check_takeover`."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    with pytest.raises(ConfigError, match="home folder"):
        fsguard.check_output_target(tmp_path / "home")
    with pytest.raises(ConfigError, match="contains the store"):
        fsguard.check_output_target(tmp_path, inside_forbidden={"store": tmp_path / "s"})
    assert fsguard.check_output_target(tmp_path / "a" / "site") == tmp_path / "a" / "site"  # the folder may be made
    assert not (tmp_path / "a").exists()
    (tmp_path / "owned").mkdir()
    (tmp_path / "owned" / "x").write_text("x")
    with pytest.raises(ConfigError, match="did not create"):
        fsguard.check_takeover(tmp_path / "owned")
    fsguard.mark_owned(tmp_path / "owned", "test")
    fsguard.check_takeover(tmp_path / "owned")
    assert json.loads((tmp_path / "owned" / fsguard.MARKER).read_text())["tool"] == "embedselect"


@pytest.mark.fault
@pytest.mark.slow
def test_index_overwrite_killed_at_random_instants_always_leaves_an_index(tmp_path, cache_dir):
    """SIGKILL a process that rebuilds the index with ``overwrite`` in a loop, at random instants: ``--out`` always
    holds a loadable index, and the next build removes the dead runs' temporary folders."""
    import random
    import signal
    import time

    from embedselect.search import SearchIndex, build_index

    out = tmp_path / "idx"
    build_index(TEXTS, "tfidf-svd?dim=4", out=out)
    child = ("import sys\nfrom embedselect.search import build_index\nwhile True:\n"
             f"    build_index({TEXTS!r}, 'tfidf-svd?dim=4', out=sys.argv[1], overwrite=True)\n")
    rng = random.Random(0)
    builds = 0
    for _ in range(6):
        p = subprocess.Popen([sys.executable, "-c", child, str(out)], stderr=subprocess.PIPE)
        time.sleep(rng.uniform(2.0, 5.0))
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert p.returncode == -signal.SIGKILL, p.stderr.read().decode()[-2000:]
        SearchIndex.load(out)  # the old index or a new one, never neither
        builds += 1
    build_index(TEXTS, "tfidf-svd?dim=4", out=out, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".idx")) == []
    assert builds == 6


def test_real_inside_follows_links_only_within_the_folder(tmp_path):
    """One rule for every reader of a given folder: an entry counts by its real path, and a link that leads out (to a
    file, a folder or the folder's parent) gives None; a link to a file inside gives that file."""
    from embedselect._fs.inside import real_inside

    root, out = tmp_path / "given", tmp_path / "elsewhere"
    (root / "sub").mkdir(parents=True)
    out.mkdir()
    (root / "sub" / "a.txt").write_text("a")
    (out / "secret.txt").write_text("s")
    (root / "in").symlink_to(root / "sub" / "a.txt")
    (root / "out").symlink_to(out / "secret.txt")
    (root / "up").symlink_to("..")
    (root / "dir-out").symlink_to(out, target_is_directory=True)
    assert real_inside(root / "in", root) == (root / "sub" / "a.txt").resolve()
    assert real_inside(root / "sub" / "a.txt", root) == (root / "sub" / "a.txt").resolve()
    assert real_inside(root, root) == root.resolve()
    for name in ("out", "up", "dir-out"):
        assert real_inside(root / name, root) is None, name
    assert real_inside(root / "dir-out" / "secret.txt", root) is None
