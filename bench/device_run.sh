#!/usr/bin/env bash
# On the lent GPU machine, from the repository root: the suite's smoke + quick tiers with
# --hosts=local:// (portable probes, HIP kernel via nvcc, NVIDIA discovery), then the
# ceiling-vs-probe benchmark. Everything it writes lands in $OUT (at most 8 files).
# pytest-testinfra travels as a wheel in .whl/ (the machine has pytest but not testinfra).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/rf-out}
mkdir -p "$OUT/suite"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
gpus=$(nvidia-smi -L | grep -c '^GPU ')
cat > /tmp/spec.yml <<SPEC
validation_gpu_vendor: nvidia
validation_gpu_count: $gpus
validation_target_sku: h200
SPEC
{
  echo "== suite: smoke + quick tiers, --hosts=local:// =="
  time python3 -m validation validate --hosts local:// --spec /tmp/spec.yml --tier quick \
    --results "$OUT/suite" --node-name "h200-x$gpus"
  echo "== bench: ceilings and probes in one run =="
  time python3 -m bench.h200_probes --json "$OUT/h200.json" --markdown "$OUT/h200.md"
} > "$OUT/run.log" 2>&1
tail -40 "$OUT/run.log"
