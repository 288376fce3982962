"""The health mode's Prometheus textfile, for node_exporter's textfile collector (render only).

One gauge per check (0 pass/skip, 1 warn, 2 fail, 3 timeout, 4 error) labelled with its failure
code, the node's verdict, when the run ended, how long it took, and whether the health mode has
the node drained. Names follow Prometheus' conventions (base units, `_seconds`, `_timestamp_seconds`).
"""

from __future__ import annotations

from typing import Any

from validation.report.fleet_text import STATUS_VALUE, label


def textfile(doc: dict[str, Any], *, ok: bool, duration_s: float, finished_at: float, drained: bool) -> str:
    node = label(doc["host"])
    lines = ["# HELP rocm_fleet_health_check_status Health check status: 0 pass or skip, 1 warn, 2 fail, "
             "3 timeout, 4 error",
             "# TYPE rocm_fleet_health_check_status gauge"]
    for check in doc["checks"]:
        lines.append(f'rocm_fleet_health_check_status{{node="{node}",check="{label(check["id"])}",'
                     f'code="{label(check.get("code") or "")}"}} {STATUS_VALUE.get(check["status"], 4)}')
    lines += ["# HELP rocm_fleet_health_ok 1 when every health check passed or was skipped with its reason",
              "# TYPE rocm_fleet_health_ok gauge", f'rocm_fleet_health_ok{{node="{node}"}} {int(ok)}',
              "# HELP rocm_fleet_health_last_run_timestamp_seconds When the last health run ended (Unix time)",
              "# TYPE rocm_fleet_health_last_run_timestamp_seconds gauge",
              f'rocm_fleet_health_last_run_timestamp_seconds{{node="{node}"}} {finished_at:.3f}',
              "# HELP rocm_fleet_health_duration_seconds How long the last health run took",
              "# TYPE rocm_fleet_health_duration_seconds gauge",
              f'rocm_fleet_health_duration_seconds{{node="{node}"}} {duration_s:.3f}',
              "# HELP rocm_fleet_health_drained 1 when the health mode has drained the node in Slurm",
              "# TYPE rocm_fleet_health_drained gauge", f'rocm_fleet_health_drained{{node="{node}"}} {int(drained)}']
    return "\n".join(lines) + "\n"
