"""Generate a synthetic N-node results set in the real per-node schema, for aggregation benchmarks.

The documents are written by validation.results.node.NodeResults (the writer the checks use),
so the schema is the real one. The VALUES ARE SYNTHETIC: random draws around round numbers,
labelled `synthetic` in every document's provenance. They measure our aggregation speed only;
they are not GPU measurements and must never be read as such.

    python bench/gen_fleet_results.py OUT_DIR --nodes 1000 [--seed 7] [--slow-node node0042]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from validation.results.node import NodeResults

# metric, unit, higher_is_better, centre, relative spread, subjects per node
METRICS = (
    ("gemm_bf16_tflops", "TFLOPS", True, 600.0, 0.01, [f"gpu{i}" for i in range(8)]),
    ("hbm_triad_gb_s", "GB/s", True, 4000.0, 0.01, [f"gpu{i}" for i in range(8)]),
    ("h2d_gb_s", "GB/s", True, 50.0, 0.02, [f"gpu{i}" for i in range(8)]),
    ("xgmi_pair_gb_s", "GB/s", True, 48.0, 0.02, [f"gpu{i}->gpu{j}" for i in range(8) for j in range(8) if i != j]),
    ("rccl_allreduce_busbw_gb_s", "GB/s", True, 320.0, 0.01, ["node"]),
)
CHECKS = ("test_rocm_stack.py::test_rocm_packages_are_held", "test_gpu_presence.py::test_amdgpu_driver_is_loaded",
          "test_node_tuning.py::test_numa_balancing_is_disabled")


def generate(out: Path, nodes: int, seed: int, slow_node: str | None) -> None:
    rng = random.Random(seed)
    for n in range(nodes):
        host = f"node{n:04d}"
        results = NodeResults.__new__(NodeResults)   # build in memory, write once: faster than per-entry writes
        NodeResults.__init__(results, out, host, tier="quick", argv=["bench/gen_fleet_results.py"])
        results.doc["provenance"] = {"synthetic": True, "generator": "bench/gen_fleet_results.py", "seed": seed}
        results.doc["checks"] = [{"id": c, "name": c.split("::")[1], "tier": "smoke", "needs_gpu": False,
                                  "status": "pass", "code": None, "message": "", "hint": None, "duration_s": 0.1}
                                 for c in CHECKS]
        for metric, unit, higher, centre, spread, subjects in METRICS:
            for subject in subjects:
                value = rng.gauss(centre, centre * spread)
                if host == slow_node and subject == "gpu3":
                    value *= 0.8
                results.doc["measurements"].append({"metric": metric, "subject": subject, "value": round(value, 3),
                                                    "unit": unit, "higher_is_better": higher, "status": "pass"})
        results.finish()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--slow-node", default="node0042", help="node whose gpu3 runs 20%% slow (planted outlier)")
    args = parser.parse_args()
    generate(args.out, args.nodes, args.seed, args.slow_node)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
