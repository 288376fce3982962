"""Stand-ins for a node's GPU tools whose views change over time, for the real suite on a machine
without a GPU (tests/unit/checks/test_watch_fault_matrix.py).

`install(bin_dir, schedule)` writes `amd-smi` and `hipblaslt-bench` stand-ins into bin_dir. Every
view they print is a recorded real output or a documented derived variant of one
(tests/fixtures/*/amd-smi/SOURCES.md, tests/fixtures/real/hipblaslt-bench/SOURCES.md); which one
depends on the moment and on the schedule file (JSON, rewritten by the test while the run goes on):

- {"busy": [[FROM, TO], ...]}: between those epoch seconds `amd-smi process` lists someone else's
  processes (the real two-process view: TransferBench pid 420157 and rvs pid 420315 on GPU 0);
  otherwise the real "No running processes detected" view;
- {"throttled": [[FROM, TO], ...]}: `amd-smi metric` shows THROTTLE_STATUS: THROTTLED (the
  derived throttled view) instead of the derived idle one;
- {"gemm_s": S}: hipblaslt-bench takes S seconds before it prints the real MI300X output;
- {"on_gemm": {"N": {"busy": S, "throttled": S}}}: the N-th hipblaslt-bench call (from 1) puts a
  busy or throttled span of S seconds from its own start into the schedule (S < 0: to the end of the
  run), so a load arrives at a known moment of the run whatever the machine's speed.

Nothing else about the suite is stood in: pytest, the plugin, the checks, the watcher's sampler and
the results document are the real thing. Calls the stand-ins do not know exit 2, as a missing
view would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VIEWS = {
    "metric-idle": FIXTURES / "derived/amd-smi/mi300x-rocm-blogs-amd-smi-overview-metric-idle.txt",
    "metric-throttled": FIXTURES / "derived/amd-smi/mi300x-rocm-blogs-amd-smi-overview-metric-throttled.txt",
    "process-idle": FIXTURES / "real/amd-smi/mi300a-x4-rocm-issue4411-process-none-6.3.1.txt",
    "process-busy": FIXTURES / "real/amd-smi/unknown-amdsmi-changelog-6.2.0-process-json-two-procs.txt",
    "gemm": FIXTURES / "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt",
}
FOREIGN = {420157: "TransferBench", 420315: "rvs"}

AMD_SMI = f"""#!{sys.executable}
import json, sys, time
views = {json.dumps({k: str(v) for k, v in VIEWS.items()})}
schedule = json.load(open(SCHEDULE_PATH))
now = time.time()
def during(key):
    return any(a <= now <= b for a, b in schedule.get(key, []))
def show(name):
    lines = open(views[name]).read().splitlines()
    print("\\n".join(lines[1:] if lines and lines[0].startswith("$") else lines))
args = sys.argv[1:]
if args[:1] == ["metric"]:
    show("metric-throttled" if during("throttled") else "metric-idle")
elif args[:1] == ["process"]:
    show("process-busy" if during("busy") else "process-idle")
else:
    print("stand-in amd-smi: not recorded: " + " ".join(args), file=sys.stderr)
    sys.exit(2)
"""

HIPBLASLT = f"""#!{sys.executable}
import fcntl, json, os, sys, time
with open(SCHEDULE_PATH + ".lock", "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    schedule = json.load(open(SCHEDULE_PATH))
    schedule["gemm_calls"] = n = schedule.get("gemm_calls", 0) + 1
    now = time.time()
    for key, seconds in (schedule.get("on_gemm") or {{}}).get(str(n), {{}}).items():
        schedule.setdefault(key, []).append([now, now + seconds if seconds >= 0 else now + 1e6])
    with open(SCHEDULE_PATH + ".tmp", "w") as out:
        json.dump(schedule, out)
    os.replace(SCHEDULE_PATH + ".tmp", SCHEDULE_PATH)
time.sleep(float(schedule.get("gemm_s", 1.0)))
print(open({str(VIEWS["gemm"])!r}).read(), end="")
"""


def install(bin_dir: Path, schedule: Path) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    if not schedule.exists():
        schedule.write_text("{}")
    for name, text in (("amd-smi", AMD_SMI), ("hipblaslt-bench", HIPBLASLT)):
        tool = bin_dir / name
        tool.write_text(text.replace("SCHEDULE_PATH", repr(str(schedule))))
        tool.chmod(0o755)


def set_schedule(schedule: Path, **entries: object) -> None:
    """Rewrite the schedule at once (the stand-ins read it on every call)."""
    tmp = schedule.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries))
    tmp.replace(schedule)
