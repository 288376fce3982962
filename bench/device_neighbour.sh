#!/usr/bin/env bash
# On the lent GPU machine, from the repository root (issue 41): what a run in its own PID namespace can see
# (bench/neighbour_facts.py), then the fault matrix's namespace cases (bench/gpu_fault_matrix.py namespace),
# then, with the time left, one plain idle run. Wheels for pytest-testinfra, jsonschema and nvidia-ml-py travel
# in .whl/. Everything lands in $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/rf-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site
nvidia-smi -L > "$OUT/card.txt"; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >> "$OUT/card.txt"
python3 -c "import torch; print('torch', torch.__version__)" >> "$OUT/card.txt" 2>&1
git rev-parse HEAD > "$OUT/head.txt" 2>/dev/null || true
timeout 170 python3 -m bench.neighbour_facts --out "$OUT/facts.json" > "$OUT/facts.log" 2>&1
echo "facts rc=$?"
timeout "${NS_TIMEOUT:-400}" python3 -m bench.gpu_fault_matrix namespace --out /tmp/ns > "$OUT/ns.log" 2>&1
echo "namespace rc=$?"
cp /tmp/ns/matrix-namespace.md /tmp/ns/matrix-namespace.json /tmp/ns/documents-namespace.tar.gz "$OUT/" 2>/dev/null
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
try:
    f = json.load(open(f"{out}/facts.json"))
    for k in ("idle", "load_outside", "load_inside"):
        print(k, json.dumps(f[k])[:700])
    for r in f["memory_drift"]:
        print("drift", r)
    for k, v in f["watcher_interference"].items():
        print("interference", k, {x: v.get(x) for x in ("median_gb_s", "min_gb_s", "below_85pct_of_median", "tool_seconds_median", "low_within_0.1s_of_a_tick")})
    tail = f["utilization_tail"]
    print("tail", [(r["t"], r["load_running"], r["view"]) for r in tail[::4]])
except Exception as exc:
    print("facts unreadable:", exc)
PY
cat "$OUT/matrix-namespace.md" 2>/dev/null || tail -30 "$OUT/ns.log"
python3 - <<'PY'
import glob, json
for path in sorted(glob.glob("/tmp/ns/runs/*/*.json")):
    if "progress-" in path:
        continue
    doc = json.load(open(path))
    w = doc.get("watch") or {}
    run = w.get("run") or {}
    fails = [(c["name"][:40], c.get("code")) for c in doc.get("checks", []) if c.get("status") in ("fail", "error") and c.get("needs_gpu")]
    print(path.split("/")[-2], "own_memory", w.get("own_memory"), "unaccounted_max", run.get("unaccounted_mib_max"),
          "unseen", run.get("unseen"), "gpu fails", fails[:6])
PY
