"""Acceptance reports: one Markdown page per node (identity, verdict, every failure, the burn-in
and telemetry measurements) and one for the batch. Built from the same results documents as
every other report; what a vendor hand-over needs is the identity next to the verdict."""

from __future__ import annotations

import json
from typing import Any

from validation.records import FAILING
from validation.report.load import node_status
from validation.report.markdown import node_cell

IDENTITY = (("system", "system_product"), ("BIOS", "bios_version"), ("kernel", "kernel"),
            ("ROCm", "rocm_version"), ("amdgpu driver", "amdgpu_driver_version"),
            ("NVIDIA driver", "nvidia_driver"), ("declared SKU", "declared_sku"))


def verdict(node: dict[str, Any]) -> str:
    if node.get("missing"):
        return "NOT RUN"
    status = node_status(node)
    if not node.get("complete") or status in FAILING:
        return "REJECT"
    return "ACCEPT"


def gpu_serials(node: dict[str, Any]) -> list[str]:
    """ASIC serials from `amd-smi static --asic --json`, or NVIDIA serials, as recorded."""
    prov = node.get("provenance", {})
    serials: list[str] = []
    raw = prov.get("gpu_asic")
    if raw:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = []
        for gpu in doc if isinstance(doc, list) else doc.get("gpu_data", []) if isinstance(doc, dict) else []:
            serial = (gpu.get("asic") or {}).get("asic_serial") if isinstance(gpu, dict) else None
            if serial:
                serials.append(str(serial))
    if not serials and prov.get("gpu_serials"):
        serials = [s.strip() for s in str(prov["gpu_serials"]).splitlines() if s.strip()]
    return serials


def _cell(value: Any) -> str:
    return node_cell(value, empty="—")


def node_markdown(node: dict[str, Any]) -> str:
    prov = node.get("provenance", {})
    lines = [f"# Acceptance: {node['host']} — {verdict(node)}", "",
             f"Run {_cell(node.get('started_at'))} → {_cell(node.get('finished_at'))}, tier {_cell(node.get('tier'))}, "
             f"complete: {'yes' if node.get('complete') else 'no'}.", "", "| identity | value |", "|---|---|"]
    lines += [f"| {label} | {_cell(prov.get(key))} |" for label, key in IDENTITY]
    serials = gpu_serials(node)
    lines += [f"| GPUs on the PCI bus | {len(prov.get('gpus_on_pci_bus') or [])} |",
              f"| GPU serials | {_cell(', '.join(serials))} |",
              f"| GPU firmware recorded | {'yes' if prov.get('gpu_firmware') else 'no'} |", ""]
    failures = [c for c in node.get("checks", []) if c["status"] in FAILING]
    lines += ["## Failures", ""]
    lines += [f"- **{_cell(c['name'])}** `{node_cell(c.get('code'))}` {node_cell(c.get('message'))} — what to do: "
              f"{node_cell(c.get('hint'))}" for c in failures] or ["None."]
    lines += ["", "## Measurements", "", "| metric | subject | value | unit | verdict |", "|---|---|---|---|---|"]
    lines += [f"| {_cell(m['metric'])} | {_cell(m.get('subject', 'node'))} | {_cell(m.get('value'))} | "
              f"{_cell(m.get('unit'))} | {node_cell(m.get('status'))} |" for m in node.get("measurements", [])]
    return "\n".join(lines) + "\n"


def batch_markdown(nodes: list[dict[str, Any]]) -> str:
    accepted = sum(verdict(n) == "ACCEPT" for n in nodes)
    lines = ["# Acceptance: batch", "", f"{accepted} of {len(nodes)} nodes accepted.", "",
             "| node | verdict | GPUs | serials | BIOS | failures |", "|---|---|---|---|---|---|"]
    for node in nodes:
        prov = node.get("provenance", {})
        codes = sorted({c.get("code") or c["name"] for c in node.get("checks", [])
                        if c["status"] in FAILING})
        lines.append(f"| {node['host']} | {verdict(node)} | {len(prov.get('gpus_on_pci_bus') or [])} | "
                     f"{len(gpu_serials(node))} | {_cell(prov.get('bios_version'))} | {_cell(', '.join(codes))} |")
    return "\n".join(lines) + "\n"
