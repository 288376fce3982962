#!/usr/bin/env bash
# What nvidia-smi shows on the lent H200 when idle, when another process loads it, and when our own
# process holds a CUDA context; reproduces the reset_peak_memory_stats crash of the quick tier (issue 14)
# and times the quick tier. Run on the device machine from the repository root; writes $OUT/explore.log.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site
Q='nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_bus_id,gpu_uuid --format=csv'
G='nvidia-smi --query-gpu=index,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks_event_reasons.active,pstate --format=csv'
views() {  # $1 = label
  for c in "$Q" "$G" "nvidia-smi" "nvidia-smi -q -d UTILIZATION,MEMORY,CLOCK,PERFORMANCE,PIDS"; do
    echo "=== [$1] \$ $c"; $c 2>&1; echo "rc=$?"
  done
}
{
echo "### uname: $(uname -a)"; echo "### pid ns: $(readlink /proc/self/ns/pid)"; nvidia-smi -L
views idle
for i in 1 2 3; do $G --format=csv,noheader; sleep 0.3; done
cat > /tmp/load.py <<'PY'
import os, time, torch
print("load pid", os.getpid(), flush=True)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + float(os.environ.get("LOAD_S", "30"))
while time.time() < end:
    for _ in range(20): a @ b
    torch.cuda.synchronize()
PY
LOAD_S=25 python3 /tmp/load.py & lp=$!
sleep 8
echo "### background load shell pid $lp"
views busy
for i in 1 2 3; do $G --format=csv,noheader; sleep 0.3; done
wait $lp
echo "### own context"
python3 - <<'PY'
import os, subprocess, torch
x = torch.ones(1, device="cuda")
print("own pid", os.getpid(), "NSpid", [l for l in open("/proc/self/status") if l.startswith("NSpid")])
print(subprocess.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv".split(), capture_output=True, text=True).stdout)
print(subprocess.run("nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv".split(), capture_output=True, text=True).stdout)
print("reserved MiB", torch.cuda.memory_reserved() / 2**20)
PY
echo "### crash repro"
python3 -c 'import torch; torch.cuda.reset_peak_memory_stats(torch.device("cuda")); print("cuda ok")' 2>&1 | tail -2
python3 -c 'import torch; torch.cuda.reset_peak_memory_stats(torch.device("cuda:0")); print("cuda:0 ok")' 2>&1 | tail -2
python3 -c 'import torch; torch.cuda.init(); torch.cuda.reset_peak_memory_stats(torch.device("cuda")); print("init then ok")' 2>&1 | tail -2
echo "### quick tier, HEAD as landed (timing)"
printf 'validation_gpu_vendor: nvidia\nvalidation_gpu_count: 1\nvalidation_target_sku: h200\n' > /tmp/spec.yml
start=$SECONDS
python3 -m validation validate --hosts local:// --spec /tmp/spec.yml --tier quick --results $OUT/suite --node-name h200-x1 2>&1 | tail -40
echo "quick tier wall: $((SECONDS - start)) s"
} > $OUT/explore.log 2>&1
tail -c 3000 $OUT/explore.log
