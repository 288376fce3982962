"""What a reader needs first: verdicts per node, failures grouped by code with the nodes they hit,
what each node ran on, and which failures a lab host is expected to show. Render-only: statuses
come from the results documents, nothing is judged again here."""

from __future__ import annotations

from collections import Counter
from typing import Any

from validation.report.load import node_status
from validation.results import catalog

FAILING = ("fail", "error", "timeout")
STATUS_ORDER = ("error", "timeout", "fail", "warn", "pass", "skip")


def expected_on_lab_host(node: dict[str, Any], check: dict[str, Any]) -> bool:
    """A failing device check on a lab host (provenance lab_host: no GPU there): expected, not news."""
    return (check.get("status") in FAILING and bool(check.get("needs_gpu"))
            and bool((node.get("provenance") or {}).get("lab_host")))


def needs_action(node: dict[str, Any]) -> bool:
    """The node failed something a lab host does not explain, or did not finish."""
    return not node.get("complete") or any(
        c["status"] in FAILING and not expected_on_lab_host(node, c) for c in node["checks"])


def only_lab_failures(node: dict[str, Any]) -> bool:
    """A lab host whose every failure is a device check it is expected to fail."""
    return (bool((node.get("provenance") or {}).get("lab_host")) and not needs_action(node)
            and any(c["status"] in FAILING for c in node["checks"]))


def failure_groups(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (code, expected on a lab host): hint, nodes hit, checks that failed; most nodes first."""
    groups: dict[tuple[str, bool], dict[str, Any]] = {}
    for node in nodes:
        for check in node["checks"]:
            if check["status"] not in FAILING:
                continue
            expected = expected_on_lab_host(node, check)
            code = check.get("code") or check["status"].upper()
            group = groups.setdefault((code, expected), {"code": code, "expected": expected, "hint": "",
                                                         "nodes": set(), "checks": {}, "failures": 0})
            group["hint"] = group["hint"] or check.get("hint") or ""
            group["nodes"].add(node["host"])
            group["failures"] += 1
            key = catalog.check_key(check["id"], node["host"])
            group["checks"][key] = catalog.describe(key)
    out = [{**g, "nodes": sorted(g["nodes"]), "checks": sorted(g["checks"].items(), key=lambda kv: kv[1])}
           for g in groups.values()]
    return sorted(out, key=lambda g: (g["expected"], -len(g["nodes"]), g["code"]))


def overview(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts the report opens with."""
    verdicts = Counter(node_status(n) for n in nodes)
    checks = Counter(c["status"] for n in nodes for c in n["checks"])
    return {
        "nodes": len(nodes),
        "started": min((n["started_at"] for n in nodes if n.get("started_at")), default=None),
        "verdicts": [(s, verdicts[s]) for s in STATUS_ORDER if verdicts[s]],
        "checks": [(s, checks[s]) for s in STATUS_ORDER if checks[s]],
        "incomplete": [n["host"] for n in nodes if not n.get("complete")],
        "action": [n["host"] for n in nodes if needs_action(n)],
        "lab_only": [n["host"] for n in nodes if only_lab_failures(n)],
    }


def provenance(node: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) pairs of what the node ran on; facts the node did not report are left out."""
    p = node.get("provenance") or {}
    rows = [("OS", _os_name(p.get("os_release"))), ("kernel", p.get("kernel")),
            ("ROCm", p.get("rocm_version") or (f"rocminfo {p['rocminfo_package']}" if p.get("rocminfo_package")
                                               else None)),
            ("amdgpu driver", p.get("amdgpu_driver_version")), ("NVIDIA driver", p.get("nvidia_driver")),
            ("GPU firmware", _firmware(p.get("gpu_firmware"))), ("BIOS", p.get("bios_version")),
            ("system", p.get("system_product")), ("GPUs on the PCI bus", _pci(p.get("gpus_on_pci_bus"))),
            ("declared SKU", p.get("declared_sku")),
            ("lab host", f"yes (lab {p['lab_host']}): no GPU, device checks fail as expected"
             if p.get("lab_host") else None),
            ("rocm-fleet", p.get("rocm_fleet_version"))]
    return [(label, str(value)) for label, value in rows if value not in (None, "", [])]


def _os_name(os_release: str | None) -> str | None:
    for line in (os_release or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def _pci(gpus: list[dict[str, str]] | None) -> str | None:
    if gpus is None:
        return None
    if not gpus:
        return "none"
    kinds = Counter(f"{g.get('vendor')}:{g.get('device')}" for g in gpus)
    return ", ".join(f"{n} x {kind}" for kind, n in kinds.most_common())


def _firmware(text: str | None) -> str | None:
    """amd-smi firmware output, shortened: each block's version where every GPU agrees, else 'differs'."""
    if not text:
        return None
    from validation import parsers
    from validation.errors import ParseError

    try:
        per_gpu = [g.firmware for g in parsers.parse("amd-smi", text).gpus]
    except (ParseError, AttributeError):
        return "reported (see the node's JSON)"
    blocks = sorted({b for fw in per_gpu for b in fw})
    if not blocks:
        return "reported (see the node's JSON)"
    shown = [f"{b} {per_gpu[0].get(b)}" if len({fw.get(b) for fw in per_gpu}) == 1 else f"{b} differs between GPUs"
             for b in blocks]
    return f"{len(per_gpu)} GPU(s): " + ", ".join(shown)
