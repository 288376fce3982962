"""The health mode's Prometheus textfile, for node_exporter's textfile collector (render only).

One gauge per check (0 pass/skip, 1 warn, 2 fail, 3 timeout, 4 error) labelled with its failure
code, the node's verdict, when the run ended, how long it took, whether the health mode has
the node drained, whether its memory was read whole, and per failure code with a history its flap state
(validation/flap.py): consecutive failing runs, the streak that drains, and whether it is flapping. Names
follow Prometheus' conventions (base units, `_seconds`, `_timestamp_seconds`).

A `code` label only ever carries a failure code (RF-...): a failing check without one of its own carries
the code it counts under in the flap policy (flap.code_of: RF-CHECK-FAILED), never its test id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from validation.flap import CodeStatus, is_code
from validation.report.fleet_text import STATUS_VALUE, check_labels, label


def textfile(doc: dict[str, Any], *, ok: bool, duration_s: float, finished_at: float, drained: bool,
             codes: Sequence[CodeStatus] = (), history_ok: bool = True, held: bool | None = None) -> str:
    """`held`: Slurm holds the node for physical action (remediation gave up on it); None where the run does
    not ask Slurm (no series then)."""
    node = label(doc["host"])
    lines = ["# HELP rocm_fleet_health_check_status Health check status: 0 pass or skip (the status label tells them "
             "apart), 1 warn, 2 fail, 3 timeout, 4 error",
             "# TYPE rocm_fleet_health_check_status gauge"]
    for check in doc["checks"]:
        lines.append(f'rocm_fleet_health_check_status{{node="{node}",{check_labels(check)}}} '
                     f'{STATUS_VALUE.get(check["status"], 4)}')
    lines += ["# HELP rocm_fleet_health_ok 1 when every health check passed or was skipped with its reason",
              "# TYPE rocm_fleet_health_ok gauge", f'rocm_fleet_health_ok{{node="{node}"}} {int(ok)}',
              "# HELP rocm_fleet_health_last_run_timestamp_seconds When the last health run ended (Unix time)",
              "# TYPE rocm_fleet_health_last_run_timestamp_seconds gauge",
              f'rocm_fleet_health_last_run_timestamp_seconds{{node="{node}"}} {finished_at:.3f}',
              "# HELP rocm_fleet_health_duration_seconds How long the last health run took",
              "# TYPE rocm_fleet_health_duration_seconds gauge",
              f'rocm_fleet_health_duration_seconds{{node="{node}"}} {duration_s:.3f}',
              "# HELP rocm_fleet_health_drained 1 when the health mode has drained the node in Slurm",
              "# TYPE rocm_fleet_health_drained gauge", f'rocm_fleet_health_drained{{node="{node}"}} {int(drained)}',
              "# HELP rocm_fleet_health_history_ok 1 when the node's health memory was read whole (0: unreadable or "
              "a part unknown; the run's stderr says which)",
              "# TYPE rocm_fleet_health_history_ok gauge",
              f'rocm_fleet_health_history_ok{{node="{node}"}} {int(history_ok)}']
    if held is not None:
        lines += ["# HELP rocm_fleet_health_held_for_physical_action 1 when Slurm holds the node for physical action "
                  "(remediation gave up on it: docs/remediate.md)",
                  "# TYPE rocm_fleet_health_held_for_physical_action gauge",
                  f'rocm_fleet_health_held_for_physical_action{{node="{node}"}} {int(held)}']
    families = (
        ("rocm_fleet_health_failing_runs", "Consecutive failing health runs of a failure code (0 once it passes)",
         lambda c: c.streak),
        ("rocm_fleet_health_drain_after_runs", "Consecutive failing runs after which a failure code drains the node",
         lambda c: c.drain_after),
        ("rocm_fleet_health_flapping", "1 when a failure code went fail, pass, fail repeatedly within the recent "
         "runs (validation/flap.py)", lambda c: int(c.flapping)),
    )
    coded = [c for c in codes if is_code(c.code)]
    for name, help_text, value in families if coded else ():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f'{name}{{node="{node}",code="{label(c.code)}"}} {value(c)}' for c in coded]
    return "\n".join(lines) + "\n"
