#!/usr/bin/env bash
# Create .venv and install embedselect into it. Idempotent: re-running after a change to
# pyproject.toml or the constraints re-installs; otherwise it returns at once.
#
#   scripts/setup.sh [EXTRAS]      EXTRAS defaults to "models" (e.g. "dev", "dev,bench")
#
# Torch: on a machine where `nvidia-smi` sees a GPU, pip chooses torch (and torchvision) freely, so a
# CUDA build is installed. Everywhere else torch is pinned to the CPU build in constraints/cpu.txt
# and installed *first*, so that nothing later (timm -> torchvision, sentence-transformers) can pull a
# newer torch with several GB of CUDA packages. FAISS: faiss-cpu everywhere, replaced by the FAISS GPU build
# of the extra `gpu` (pyproject.toml) on a CUDA machine.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-models}"
py="${PYTHON:-python3}"
venv=".venv"
stamp="$venv/.embedselect-installed-$extras"

if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt constraints/cpu.txt ]; then
  exit 0
fi
pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "setup: CUDA GPU found; installing torch from the default index and FAISS with CUDA (extra gpu)" >&2
  "${pip[@]}" -e ".[$extras,gpu]"
  # faiss-cpu (a core dependency) and the GPU build both ship the `faiss` module: remove the CPU build and
  # reinstall the GPU build's files so that `import faiss` is the CUDA one. The requirement is read from the
  # extra itself, so a change of FAISS wheel is made in pyproject.toml alone.
  faiss_gpu=$("$venv/bin/python" -c 'import tomllib; print(next(r for r in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["gpu"] if r.startswith("faiss")))')
  "$venv/bin/python" -m pip uninstall -y -q faiss-cpu
  "${pip[@]}" --force-reinstall --no-deps "$faiss_gpu"
else
  echo "setup: no CUDA GPU; pinning the CPU torch build (constraints/cpu.txt)" >&2
  torch_pin=$(grep -E '^torch==' constraints/cpu.txt)
  "${pip[@]}" "$torch_pin"
  "${pip[@]}" -c constraints/cpu.txt -e ".[$extras]"
fi
# The browser tests (tests/test_report_browser.py) open the HTML report in Debian's chromium.
case ",$extras," in
  *,dev,*)
    if ! command -v chromium >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Debian's chromium for the browser tests" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
      else
        echo "setup: the browser tests need chromium: sudo apt-get install chromium" >&2
      fi
    fi
    ;;
esac
touch "$stamp"
