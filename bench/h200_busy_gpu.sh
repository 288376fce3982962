#!/usr/bin/env bash
# Issue 14 on the lent GPU, from the repository root: does the quick tier fail a busy GPU, and not a
# healthy one? Writes everything under $OUT (one tarball, since at most 8 files come back).
#   bash bench/h200_busy_gpu.sh idle N FIRST      N idle quick-tier runs, node names h200-idle-FIRST...
#   bash bench/h200_busy_gpu.sh final BASELINE    the sitting's closing run from HEAD: the quick tier idle,
#       then busy with --allow-busy --baseline BASELINE, the health mode timed (bench/health_bench.py),
#       and tests/gpu
#   bash bench/h200_busy_gpu.sh busy RUNS_TGZ...  unpack earlier idle runs, add idle runs up to IDLE_TOTAL
#                                                 (default 8), then:
#       (d) the idle runs judged as one batch (rocm-fleet report): no batch verdict may fail;
#       a site baseline from them (rocm-fleet baseline create --gpu-checks-only);
#       (b) the quick tier while a second process runs bf16 matmuls on the GPU: the pre-flight fails;
#       (c) the same with --allow-busy --baseline: the numbers alone fail against the baseline;
#       the GPU test of the ResNet-50 first-CUDA-call fix (tests/gpu).
# The machine has pytest but not testinfra: it travels as a wheel in .whl/ (carry it).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/rf-out}
work=/tmp/rf-issue14
mkdir -p "$OUT" "$work/runs"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site
gpus=$(nvidia-smi -L | grep -c '^GPU ')
printf 'validation_gpu_vendor: nvidia\nvalidation_gpu_count: %s\nvalidation_target_sku: h200\n' "$gpus" > "$work/spec.yml"
pack() {   # everything so far, so that a run stopped at its limit still brings its results back
  tar -C "$work" -czf "$OUT/issue14-$phase.tgz" runs $(cd "$work" && ls -d batch* baseline.yml gpu-tests.log \
    load.log run.log health-bench.* health 2>/dev/null)
}
quick() {  # NAME [extra validate args...]
  local name=$1; shift
  local start=$SECONDS
  python3 -m validation validate --hosts local:// --spec "$work/spec.yml" --tier quick \
    --results "$work/runs/$name" --node-name "$name" "$@" > "$work/runs/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - start)) s"
  pack
}
load() {  # seconds: a second process running bf16 8192^3 matmuls on GPU 0
  python3 - "$1" > "$work/load.log" 2>&1 <<'PY' &
import os, sys, time, torch
print("load pid", os.getpid(), flush=True)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20): a @ b
    torch.cuda.synchronize()
PY
  echo $!
}
phase=${1:-x}
budget=${BUDGET_S:-470}     # start no idle run after this many seconds (the device tool stops a command at 600)
{
case ${1:-} in
  idle)
    for i in $(seq "$3" $(($3 + $2 - 1))); do
      [ "$SECONDS" -lt "$budget" ] || { echo "time budget spent: stopping before h200-idle-$i"; break; }
      quick "h200-idle-$i"
    done
    ;;
  busy)
    shift
    for tgz in "$@"; do tar -C "$work" -xzf "$tgz" runs; done
    have=$(ls -d "$work"/runs/h200-idle-*/ 2>/dev/null | wc -l)
    for i in $(seq $((have + 1)) "${IDLE_TOTAL:-8}"); do quick "h200-idle-$i"; done
    dirs=$(ls -d "$work"/runs/h200-idle-*/ | tr '\n' ' ')
    echo "== (d) $(echo $dirs | wc -w) idle runs as one batch"
    mkdir -p "$work/batch"; for d in $dirs; do cp "$d"/h200-idle-*.json "$work/batch/"; done
    rm -f "$work"/batch/progress-*.json
    python3 -m validation report "$work/batch" --json > "$work/batch-report.json"; echo "report exit $?"
    python3 -m validation report "$work/batch" > "$work/batch-report.txt" 2>&1
    python3 -m validation baseline create $dirs -o "$work/baseline.yml" --name h200-idle-$(date -u +%F) \
      --gpu-checks-only; echo "baseline exit $?"
    echo "== (b) busy, default"
    pid=$(load 200); sleep 10; quick h200-busy; 
    echo "== (c) busy, --allow-busy --baseline"
    quick h200-busy-allowed --allow-busy --baseline "$work/baseline.yml"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "== GPU test of the ResNet-50 fix"
    python3 -m pytest -q -p no:cacheprovider tests/gpu -o addopts="" > "$work/gpu-tests.log" 2>&1; echo "tests/gpu exit $?"
    tail -3 "$work/gpu-tests.log"
    ;;
  final)
    cp "$2" "$work/baseline.yml"
    quick h200-final-idle
    echo "== busy, --allow-busy --baseline"
    pid=$(load 200); sleep 10; quick h200-final-busy --allow-busy --baseline "$work/baseline.yml"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "== health mode, timed"
    cp "$work/spec.yml" "$work/health-spec.yml"
    # the lent machine was never provisioned by the roles: leave its host tuning and packages undeclared,
    # so the health verdict turns on the GPU (presence, counters, kernel log, processes, throttle)
    printf '%s\n' 'node_tuning_thp_enabled: keep' 'node_tuning_thp_defrag: keep' 'node_tuning_numa_balancing: keep' \
      'node_tuning_pci_realloc: keep' 'node_tuning_iommu: keep' 'node_tuning_vendor_iommu: keep' \
      'node_tuning_modprobe_blacklist: []' 'node_tuning_cmdline_thp: keep' 'rocm_packages: []' \
      >> "$work/health-spec.yml"
    python3 -m bench.health_bench --spec "$work/health-spec.yml" --runs 5 --state-dir "$work/health" \
      --json "$work/health-bench.json" > "$work/health-bench.txt" 2>&1; echo "health bench exit $?"
    tail -25 "$work/health-bench.txt"
    echo "== GPU tests"
    python3 -m pytest -q -p no:cacheprovider tests/gpu -o addopts="" > "$work/gpu-tests.log" 2>&1; echo "tests/gpu exit $?"
    tail -3 "$work/gpu-tests.log"
    pack
    ;;
  *) echo "usage: $0 idle N FIRST | busy RUNS_TGZ... | final BASELINE" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=driver_version,name,power.limit --format=csv,noheader
} 2>&1 | tee "$work/run.log"
pack
