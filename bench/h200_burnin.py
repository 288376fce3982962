"""Burn-in with telemetry gates on a lent GPU, through the suite's own functions.

Run from the repository root (PyTorch and PyYAML needed; nvidia-smi / amd-smi for telemetry):

    python3 -m bench.h200_burnin --out "$OUT"                    # 60 s on every GPU, H200 targets
    python3 -m bench.h200_burnin --cpu-smoke --out /tmp/burnin   # 2 s on two CPU workers, tiny size

It runs validation.probes.burnin.run_acceptance (one bf16 matmul worker per GPU, correctness
checks against each GPU's reference result, throughput per time window) with the telemetry
sampler polling every --interval seconds, judges the gates against the SKU's targets, and
writes into --out: burnin.json (summary, every snapshot, the burn-in records), and the raw
stdout of the telemetry tool at the first snapshot taken under load and at the end
(telemetry-<tool>-*.txt, each starting with its `$ command` line, ready to become fixtures).
A short table is printed last. Exit code 0 when the run finished (whatever the verdicts), 2 when
it could not run.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from validation import runner
from validation.errors import ProbeError
from validation.judge import Verdict
from validation.probes import burnin, telemetry, torch_probes
from validation.records import to_jsonable
from validation.targets import load_targets

log = logging.getLogger("bench.h200_burnin")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m bench.h200_burnin", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="directory for burnin.json and raw telemetry")
    p.add_argument("--seconds", type=float, default=60.0, help="timed load per GPU (default 60)")
    p.add_argument("--size", type=int, default=burnin.DEFAULT_SIZE, help="matmul size n (n x n x n)")
    p.add_argument("--windows", type=int, default=6, help="throughput windows over the run (default 6)")
    p.add_argument("--check-interval", type=float, default=10.0, help="seconds between correctness checks")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between telemetry polls")
    p.add_argument("--sku", default="h200", help="target profile for the gates (default h200)")
    p.add_argument("--gpus", type=int, nargs="*", help="GPU indices (default: all)")
    p.add_argument("--cpu-smoke", action="store_true", help="2 s on two CPU workers at size 128 (no GPU needed)")
    p.add_argument("--inject-wrong", type=int, default=None, metavar="WORKER",
                   help="test hook: corrupt one element of this worker's result at its second check")
    return p.parse_args(argv)


def _inject_for(worker: int | None) -> burnin.Inject | None:
    if worker is None:
        return None

    def inject(position: int, check: int, result: torch.Tensor) -> None:
        if position == worker and check == 1:
            result.view(-1)[0] += 1
    return inject


def _table(summary: dict[str, Any]) -> str:
    head = ("gpu", "TFLOPS", "first", "last", "ratio", "wrong", "temp max C", "power max W", "throttled",
            "ECC ce/ue", "verdict")
    rows = [head]
    for label, g in summary["gpus"].items():
        t = g["telemetry"] or {}
        throttled = t.get("throttled_fraction")
        rows.append((
            label, _f(g["tflops"], 1), _f(g["tflops_first_window"], 1), _f(g["tflops_last_window"], 1),
            _f(g["sustained_ratio"], 3), str(g["wrong_results"]), _f(t.get("temperature_max_c"), 0),
            _f(t.get("power_max_w"), 0), "-" if throttled is None else f"{throttled:.0%}",
            f"{t.get('ecc_correctable_delta', '-')}/{t.get('ecc_uncorrectable_delta', '-')}", g["verdict"],
        ))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.append(f"node verdict: {summary['verdict']}  (telemetry: {summary['telemetry_source']}, "
                 f"{summary['telemetry_snapshots']} snapshots, {summary['telemetry_errors']} errors)")
    return "\n".join(lines)


def _f(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _failures(verdicts: Sequence[Verdict]) -> list[str]:
    return [f"{v.status.value.upper()} {v.code} {v.reason}" for v in verdicts
            if v.status.value in ("fail", "error", "timeout", "warn")]


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.cpu_smoke:
        devices: list[torch.device] = [torch.device("cpu"), torch.device("cpu")]
        config = burnin.BurninConfig(duration_s=2.0, size=128, windows=4, check_interval_s=0.5,
                                     batch_target_s=0.05)
        interval = 0.5
    else:
        if not torch.cuda.is_available():
            print("h200_burnin: error: PyTorch sees no GPU; use --cpu-smoke for a CPU run", file=sys.stderr)
            return 2
        all_gpus = torch_probes.gpu_devices()
        devices = [all_gpus[i] for i in args.gpus] if args.gpus else list(all_gpus)
        config = burnin.BurninConfig(duration_s=args.seconds, size=args.size, windows=args.windows,
                                     check_interval_s=args.check_interval)
        interval = args.interval
    source = telemetry.detect_source()
    raw_saved: dict[str, dict[str, str]] = {}

    def keep_first_under_load(snap: telemetry.Snapshot) -> None:
        if source is not None and snap.samples and "load" not in raw_saved and snap.t_s >= interval:
            raw_saved["load"] = dict(source.last_raw)

    run = burnin.run_acceptance(devices, config, source=source, interval_s=interval,
                                inject=_inject_for(args.inject_wrong), on_snapshot=keep_first_under_load)
    if source is not None:
        raw_saved["end"] = dict(source.last_raw)
    inventory, inventory_error = telemetry.read_inventory(source)
    profile = load_targets(args.sku)
    verdicts = burnin.acceptance_verdicts(run, profile)
    summary = burnin.acceptance_summary(run, verdicts, inventory, inventory_error)
    doc = {
        "schema_version": 1,
        "kind": "bench.h200_burnin",
        "argv": list(argv if argv is not None else sys.argv[1:]),
        "torch_version": torch.__version__,
        "runtime_version": torch.version.hip or torch.version.cuda,
        "sku": profile.name,
        "tool_version": _tool_version(source),
        "summary": summary,
        "inventory": to_jsonable(inventory),
        "burnin": to_jsonable(run.burnin),
        "before": telemetry.snapshot_to_json(run.before) if run.before else None,
        "after": telemetry.snapshot_to_json(run.after) if run.after else None,
        "snapshots": [telemetry.snapshot_to_json(s) for s in run.snapshots],
    }
    (args.out / "burnin.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    for when, outputs in raw_saved.items():
        for i, (command, stdout) in enumerate(sorted(outputs.items())):
            name = f"telemetry-{source.name if source else 'none'}-{when}-{i}.txt"
            (args.out / name).write_text(f"$ {command}\n{stdout}")
    for line in _failures(verdicts):
        print(line)
    print(_table(summary))
    return 0


def _tool_version(source: telemetry.Source | None) -> str | None:
    """The driver / tool version line, for the record (None when it cannot be read)."""
    if source is None:
        return None
    argv = (("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
            if isinstance(source, telemetry.NvidiaSmiSource) else (source.name, "version"))
    try:
        raw = runner.run(argv, 30)
    except ProbeError:
        return None
    return raw.stdout.strip().splitlines()[0] if raw.ok and raw.stdout.strip() else None


if __name__ == "__main__":
    sys.exit(main())
