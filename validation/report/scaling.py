"""Scaling tables from recorded results: per-GPU throughput by GPU count, efficiency, slow GPUs.

Reads the measurements that validation/checks/test_model_probes.py records with a `scaling`
object ({"workload", "n_gpus", "kind"}, kind one of solo, per_gpu, efficiency, slowdown). It
only arranges what was recorded: the efficiency and the slowdown verdicts come from the check.
"""

from __future__ import annotations

from typing import Any

_KINDS = ("solo", "per_gpu", "efficiency", "slowdown")


def scaling_tables(node: dict[str, Any]) -> list[dict[str, Any]]:
    """One table per workload: a row for the solo runs, then one per N, GPUs as columns.

    Row: {"label", "n_gpus", "cells": {gpu: measurement}, "efficiency": measurement | None,
    "reason": str | None}. "slow" lists the reasons of the WARN slowdown entries.
    """
    by_workload: dict[str, list[dict[str, Any]]] = {}
    for m in node.get("measurements", []):
        tag = m.get("scaling")
        if isinstance(tag, dict) and tag.get("kind") in _KINDS and tag.get("workload"):
            by_workload.setdefault(str(tag["workload"]), []).append(m)
    tables = []
    for workload, entries in sorted(by_workload.items()):
        rows: dict[tuple[int, str], dict[str, Any]] = {}
        unit = ""
        gpus: set[str] = set()
        slow = []
        for m in entries:
            kind, n = m["scaling"]["kind"], m["scaling"].get("n_gpus")
            if kind == "slowdown":
                if m.get("status") == "warn" and m.get("reason"):
                    slow.append(str(m["reason"]))
                continue
            key = (0, "alone") if kind == "solo" else (int(n), f"{n} together")
            row = rows.setdefault(key, {"label": key[1], "n_gpus": None if kind == "solo" else n, "cells": {},
                                        "efficiency": None, "reason": None})
            if kind == "efficiency":
                row["efficiency"] = m if m.get("value") is not None else None
                row["reason"] = None if m.get("value") is not None else m.get("reason")
            else:
                row["cells"][str(m["subject"])] = m
                gpus.add(str(m["subject"]))
                unit = unit or str(m.get("unit", ""))
        columns: list[str] = sorted(gpus, key=_gpu_order)
        tables.append({"workload": workload, "unit": unit, "gpus": columns,
                       "rows": [rows[k] for k in sorted(rows)], "slow": slow})
    return tables


def row_aggregate(row: dict[str, Any]) -> float | None:
    """Sum of the row's per-GPU figures as recorded (None when one is missing)."""
    if row["efficiency"] is not None and row["efficiency"].get("aggregate") is not None:
        return float(row["efficiency"]["aggregate"])
    values = [c.get("value") for c in row["cells"].values()]
    if not values or any(v is None for v in values):
        return None
    return float(sum(values))


def render_scaling_text(nodes: list[dict[str, Any]]) -> str:
    """The terminal form: one block per node and workload; empty when nothing was recorded."""
    blocks = []
    for node in nodes:
        for t in scaling_tables(node):
            head = f"{'':<12}" + "".join(f"{g:>10}" for g in t["gpus"]) + f"{'aggregate':>12}{'efficiency':>12}"
            lines = [f"scaling {node['host']} {t['workload']} ({t['unit']} per GPU)", head]
            for row in t["rows"]:
                if row["reason"] and not row["cells"]:
                    lines.append(f"{row['label']:<12}skipped: {row['reason']}")
                    continue
                cells = "".join(f"{_num(row['cells'].get(g, {}).get('value')):>10}" for g in t["gpus"])
                eff = row["efficiency"]["value"] if row["efficiency"] else None
                eff_text = "" if row["n_gpus"] is None and eff is None else (
                    "—" if eff is None else f"{eff:.1f}%")
                lines.append(f"{row['label']:<12}{cells}{_num(row_aggregate(row)) if row['n_gpus'] else '':>12}"
                             f"{eff_text:>12}")
            lines += [f"  SLOW {reason}" for reason in t["slow"]]
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def _gpu_order(name: str) -> tuple[str, int]:
    stem = name.rstrip("0123456789")
    return stem, int(name[len(stem):] or 0)
