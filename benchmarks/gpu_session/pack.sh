#!/usr/bin/env bash
# Builds .devcarry/ (git-ignored through .git/info/exclude): everything benchmarks/gpu.py and the GPU tests
# need on a lent GPU machine that has torch (CUDA 13) but no network and takes at most 64 MiB per call.
#   bash benchmarks/gpu_session/pack.sh [MINILM_DIR MPNET_DIR]     # then run.sh there (see README.md)
# What travels (about 46 MB): embedselect's pinned dependencies the image lacks or has older (versions read from
# this checkout's .venv), faiss-gpu 1.15.1 with only its sm_90 code (strip_fatbin.py), the CUDA 12 runtime, the
# source of a cuBLAS 12 -> 13 forwarder (shim.c), and the two e2e models' configs and tokenizers without weights.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd); py=$root/.venv/bin/python
out=$root/.devcarry; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
grep -qsx '/.devcarry/' "$root/.git/info/exclude" || { mkdir -p "$root/.git/info"; echo '/.devcarry/' >> "$root/.git/info/exclude"; }
pins=$("$py" -c "import importlib.metadata as m
print(' '.join(f'{p}=={m.version(p)}' for p in ['duckdb', 'huggingface_hub', 'httpx2', 'httpcore2', 'truststore',
    'sentence-transformers', 'transformers', 'anybadge', 'platformdirs', 'pydantic', 'pydantic_core',
    'typing-inspection', 'annotated-types']))")
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$work/whl" $pins faiss-gpu==1.15.1 'nvidia-cuda-runtime-cu12>=12.6,<13'
mkdir -p "$work/site" "$work/cu12"
for w in "$work"/whl/*.whl; do
    case $w in
        *nvidia_cuda_runtime*) unzip -q -j "$w" 'nvidia/cuda_runtime/lib/libcudart.so.12' -d "$work/cu12" ;;
        *) unzip -q -o "$w" -d "$work/site" ;;
    esac
done
(cd "$root" && "$py" -m benchmarks.gpu_session.strip_fatbin "$work/site/faiss/libfaiss.so" "$work/libfaiss.so")
mv "$work/libfaiss.so" "$work/site/faiss/libfaiss.so"
rm -rf "$out" && mkdir -p "$out/models"
tar cf - -C "$work" site cu12 | xz -6 -T0 > "$out/payload.tar.xz"
minilm=${1:-$(cd "$root" && "$py" -c "from benchmarks.validity import minilm_dir; print(minilm_dir())")}
mpnet=${2:-$(cd "$root" && "$py" -c "from benchmarks.validity import mpnet_dir; print(mpnet_dir())")}
for pair in "minilm:$minilm" "mpnet:$mpnet"; do
    name=${pair%%:*}; src=${pair#*:}; mkdir -p "$out/models/$name"
    (cd "$src" && find . -type f ! -name '*.safetensors' ! -name '*.bin' ! -name README.md ! -name .gitattributes \
        ! -name data_config.json -exec cp --parents {} "$out/models/$name/" \;)
done
cp "$here"/shim.c "$here"/shim.map "$here"/mkmodels.py "$here"/run.sh "$out/"
du -sh "$out"
