#!/usr/bin/env bash
# On the lent GPU machine, from the repository root, with .devcarry carried (built by pack.sh):
#   bash .devcarry/run.sh setup tests faiss faiss_scale moments     # first call: about 3 min on an H200
#   bash .devcarry/run.sh setup e2e 1000000                         # next call, on the same warm machine
# Results go to $OUT (the device tool's folder that comes back). setup is skipped when already done.
set -u
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
S=/tmp/devsite
# TOKENIZERS_PARALLELISM is left unset as a user has it (the 2026-11-26 run set it false: see docs/archive/benchmarks-diary.md §6)
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export PYTHONPATH=$PWD:$S/site:$S/nvns
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
find_lib() { python3 -c "import sys, glob, os
for d in sys.path:
    if os.path.isdir(d):
        for p in sorted(glob.glob(d + '/nvidia/**/$1*', recursive=True)): print(p); raise SystemExit"; }
setup() {
    [ -f $S/ready ] && return
    mkdir -p $S && tar xJf .devcarry/payload.tar.xz -C $S
    local cub cur; cub=$(find_lib libcublas.so.13); cur=$(find_lib libcurand.so.10); echo "cuBLAS 13: $cub; cuRAND: $cur"
    mkdir -p $S/nvns/nvidia/cuda_runtime/lib $S/nvns/nvidia/cublas/lib $S/nvns/nvidia/curand/lib
    cp $S/cu12/libcudart.so.12 $S/nvns/nvidia/cuda_runtime/lib/
    gcc -shared -fPIC -O2 -DCUBLAS13="\"$cub\"" -Wl,--version-script=.devcarry/shim.map -Wl,-soname,libcublas.so.12 \
        .devcarry/shim.c -o $S/nvns/nvidia/cublas/lib/libcublas.so.12 -ldl
    echo 'void shim_lt(void) {}' > $S/lt.c
    gcc -shared -fPIC -Wl,-soname,libcublasLt.so.12 $S/lt.c -o $S/nvns/nvidia/cublas/lib/libcublasLt.so.12
    ln -sf "$cur" $S/nvns/nvidia/curand/lib/libcurand.so.10
    python3 .devcarry/mkmodels.py $S/models
    python3 -c "import faiss; from embedselect.nn import device as d; print('faiss', faiss.__version__, 'GPU kernels run:', d.faiss_has_gpu())" \
        | tee $OUT/smoke.txt && touch $S/ready
}
while [ $# -gt 0 ]; do
    step=$1; shift; el "$step"
    case $step in
        setup) setup ;;
        tests) timeout 180 python3 -m pytest -q -p no:cacheprovider tests/test_nn_gpu.py tests/test_knife_gpu.py -rs 2>&1 | tail -12 | tee $OUT/pytest_gpu.txt ;;
        faiss|faiss_scale) timeout 240 python3 -m benchmarks.gpu --sections $step --out $OUT/$step.json --markdown $OUT/$step.md 2>&1 | grep -E "^\||^faiss" ;;
        moments) timeout 120 python3 -m benchmarks.gpu --sections moments,sufficiency --out $OUT/moments.json 2>&1 | grep "^|" ;;
        e2e) n=$1; shift
             python3 -m benchmarks.gpu --sections e2e --n "$n" --st-models $S/models/minilm,$S/models/mpnet \
                 --out $OUT/e2e.json --markdown $OUT/e2e.md 2>&1 | grep -E "^e2e|^\| e2e|Error" ;;
        *) echo "unknown step $step"; exit 2 ;;
    esac
done
el done
