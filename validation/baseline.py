"""Site baselines: per-metric floors made from a site's own accepted nodes, applied as target overrides.

`make_baseline` turns results documents into a baseline document; `overrides` turns a baseline
into `validation_target_overrides` entries for one node's profile. Pure: documents in, documents
out (validation/commands/baseline.py reads and writes the files).

A metric's floor is a low quantile of the accepted values (a high one for latencies) with a
margin: value = p05, tolerance = margin, so the pass line is p05 × (1 − margin). The margin is
at least 5 %, SuperBench's threshold for "below baseline", and widens to the metric's own scatter
across the accepted nodes and the probe's measured spread, exactly as validation/peers.py allows a
gap between peers: a metric that varies 30 % between healthy runs (eager-mode ResNet-50 at batch
32 on the H200) cannot fail a healthy node at 5 %. A published target stays in force where it is
stricter: a baseline can raise the bar for a site, never lower the vendor's. Each entry's source
names the baseline, its node count, dates and software, and a node running other ROCm / driver /
firmware versions than the baseline was made on has that named in every verdict judged against it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from validation.errors import RocmFleetError
from validation.peers import MIN_PEERS, Member, allowed_gap, family_of, sku_of, usable
from validation.records import FAILING
from validation.targets.model import HIGHER_IS_BETTER, LOWER_IS_BETTER, TargetProfile

KIND = "rocm-fleet-site-baseline"
SCHEMA_VERSION = 1
DEFAULT_QUANTILE = 0.05
DEFAULT_MARGIN = 0.05
# Provenance facts a baseline remembers and compares with the node under test.
SOFTWARE = ("rocm_version", "amdgpu_driver_version", "nvidia_driver", "gpu_firmware", "rocm_fleet_version")
COMPARED_FACTS = tuple(k for k in SOFTWARE if k != "rocm_fleet_version")   # compared with the node under test
MAX_FILE_BYTES = 16 << 20


class BaselineError(RocmFleetError):
    """A baseline cannot be made from these results, or a baseline file is not usable."""


def eligible(doc: Mapping[str, Any], *, gpu_checks_only: bool = False) -> str | None:
    """None when the node's run may feed a baseline, else why not."""
    if doc.get("missing"):
        return "delivered no results"
    if not doc.get("complete"):
        return "its run did not finish"
    if (doc.get("provenance") or {}).get("allow_busy"):
        return "it was measured with --allow-busy"
    failed = [c for c in doc.get("checks", []) if c.get("status") in FAILING
              and (c.get("needs_gpu") or not gpu_checks_only)]
    if failed:
        names = ", ".join(sorted({str(c.get("code") or c.get("name")) for c in failed})[:5])
        return f"{len(failed)} failing check{'s' if len(failed) > 1 else ''} ({names})"
    return None


def make_baseline(docs: Sequence[Mapping[str, Any]], *, quantile: float = DEFAULT_QUANTILE,
                  margin: float = DEFAULT_MARGIN, min_nodes: int = MIN_PEERS, gpu_checks_only: bool = False,
                  sku: str | None = None, name: str = "site baseline", now: str | None = None) -> dict[str, Any]:
    """A baseline document from the accepted nodes among `docs` (see module docstring)."""
    if not 0 < quantile < 0.5:
        raise BaselineError(f"quantile {quantile} must be between 0 and 0.5 (0.05 = the 5th percentile)")
    if not 0 <= margin < 1:
        raise BaselineError(f"margin {margin} must be a fraction in [0, 1) (0.05 = 5 %)")
    rejected = {str(d.get("host")): why for d in docs if (why := eligible(d, gpu_checks_only=gpu_checks_only))}
    accepted = [d for d in docs if str(d.get("host")) not in rejected]
    skus = sorted({sku_of(d) for d in accepted})
    if sku is not None:
        accepted = [d for d in accepted if sku_of(d) == sku]
    elif len(skus) > 1:
        raise BaselineError(f"the accepted nodes are of several SKUs ({', '.join(skus)}); make one baseline per "
                            "SKU with --sku")
    if len({d["host"] for d in accepted}) < min_nodes:
        why = "; ".join(f"{h}: {w}" for h, w in sorted(rejected.items())[:8])
        raise BaselineError(f"{len(accepted)} accepted node(s), a baseline needs at least {min_nodes}"
                            + (f"; not accepted: {why}" if why else ""))
    made_from = _made_from(accepted, now)
    values: dict[str, dict[str, Any]] = {}
    for doc in accepted:
        for e in doc.get("measurements") or ():
            family = family_of(e)
            if family is None or not usable(e):
                continue
            slot = values.setdefault(str(e["metric"]), {"unit": e.get("unit"), "higher": bool(
                e.get("higher_is_better", True)), "family": family, "members": [], "nodes": set()})
            spread = e.get("spread_pct")
            slot["members"].append(Member(node=str(doc["host"]), subject=str(e.get("subject", "node")),
                                          value=float(e["value"]), clean=True,
                                          spread_pct=float(spread) if isinstance(spread, (int, float)) else None))
            slot["nodes"].add(str(doc["host"]))
    metrics: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    label = (f"{name}: {len(made_from['nodes'])} accepted {made_from['sku']} nodes, {made_from['first']} .. "
             f"{made_from['last']}; {_software_text(made_from['software'])}")
    for metric, slot in sorted(values.items()):
        if len(slot["nodes"]) < min_nodes:
            skipped[metric] = f"measured on {len(slot['nodes'])} accepted node(s), fewer than {min_nodes}"
            continue
        vals = sorted(m.value for m in slot["members"])
        cut = _quantile(vals, quantile if slot["higher"] else 1 - quantile)
        which = f"{round((quantile if slot['higher'] else 1 - quantile) * 100):g}th percentile"
        gap = allowed_gap(slot["members"], slot["family"], floor=margin)
        why = "" if gap.allowed == margin else f" ({gap.why.replace(f'the floor {margin:.1%} set for this run', '')})"
        metrics[metric] = {
            "value": round(cut, 6), "unit": slot["unit"],
            "direction": HIGHER_IS_BETTER if slot["higher"] else LOWER_IS_BETTER,
            "tolerance": round(gap.allowed, 4), "record_only": False,
            "source": f"{label}: {which} of {len(vals)} values, margin {gap.allowed:.1%}{why}",
            "median": round(statistics.median(vals), 6), "values": len(vals), "nodes": len(slot["nodes"]),
        }
    if not metrics:
        raise BaselineError("no performance metric was measured on enough accepted nodes; run the quick tier "
                            f"on at least {min_nodes} nodes first")
    return {"schema_version": SCHEMA_VERSION, "kind": KIND, "name": name, "created_at": made_from["created_at"],
            "rule": {"quantile": quantile, "margin": margin, "min_nodes": min_nodes,
                     "accepted": "complete runs without a failing GPU check" if gpu_checks_only
                     else "complete runs without a failing check"},
            "made_from": {k: v for k, v in made_from.items() if k != "created_at"},
            "not_accepted": rejected, "metrics": metrics, "skipped": skipped}


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (the 'inclusive' method)."""
    if len(values) == 1:
        return values[0]
    pos = q * (len(values) - 1)
    low = int(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


def _made_from(docs: Sequence[Mapping[str, Any]], now: str | None) -> dict[str, Any]:
    dates = sorted(str(d.get("started_at") or "")[:10] for d in docs if d.get("started_at"))
    software: dict[str, list[str]] = {}
    for key in SOFTWARE:
        seen = sorted({_fact(d, key) for d in docs} - {""})
        if seen:
            software[key] = seen
    return {"created_at": now or dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "sku": ", ".join(sorted({sku_of(d) for d in docs})), "nodes": sorted(str(d["host"]) for d in docs),
            "first": dates[0] if dates else "unknown", "last": dates[-1] if dates else "unknown",
            "software": software}


def _fact(doc: Mapping[str, Any], key: str) -> str:
    value = (doc.get("provenance") or {}).get(key)
    if value is None:
        return ""
    text = str(value).strip()
    # firmware lists are long JSON: compared through a digest, never printed
    return text if len(text) <= 80 else f"sha:{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _software_text(software: Mapping[str, Sequence[str]]) -> str:
    names = {"rocm_version": "ROCm", "amdgpu_driver_version": "amdgpu", "nvidia_driver": "NVIDIA driver",
             "rocm_fleet_version": "rocm-fleet"}
    parts = [f"{names.get(k, k)} {', '.join(v)}" for k, v in software.items() if k != "gpu_firmware"]
    return "; ".join(parts) or "software versions not recorded"


def read(path: Path) -> dict[str, Any]:
    """Read and check a baseline file (YAML or JSON)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise BaselineError(f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB; is it a baseline?")
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path} is not YAML or JSON: {exc}") from exc
    return check_document(doc, str(path))


def check_document(doc: Any, where: str) -> dict[str, Any]:
    """The baseline document, or BaselineError naming the file and the problem."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise BaselineError(f"{where} is not a rocm-fleet site baseline (no 'kind: {KIND}'); make one with "
                            "`rocm-fleet baseline create RESULTS_DIR... -o FILE`")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise BaselineError(f"{where}: schema_version {doc.get('schema_version')!r} is not supported; this "
                            f"rocm-fleet reads {SCHEMA_VERSION}")
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise BaselineError(f"{where}: no metrics")
    for metric, entry in metrics.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), (int, float)) or not entry.get("source"):
            raise BaselineError(f"{where}: metrics.{metric} needs a numeric value and a source")
    return doc


def mismatches(baseline: Mapping[str, Any], node_facts: Mapping[str, Any]) -> list[str]:
    """The software the node runs that the baseline was not made on ('rocm_version 7.0.2 (baseline: 6.4.1)')."""
    made = (baseline.get("made_from") or {}).get("software") or {}
    out = []
    for key in SOFTWARE:
        if key == "rocm_fleet_version" or key not in made:
            continue
        mine = _fact({"provenance": node_facts}, key)
        if mine and mine not in made[key]:
            shown = mine if not mine.startswith("sha:") else "a different set"
            theirs = ", ".join(v if not v.startswith("sha:") else "another set" for v in made[key])
            out.append(f"{key} {shown} (baseline: {theirs})")
    return out


def overrides(baseline: Mapping[str, Any], profile: TargetProfile, *,
              node_facts: Mapping[str, Any] | None = None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Target overrides for `profile` from the baseline, and notes on what was not applied or differs.

    A baseline of another SKU applies nothing. A metric whose published threshold is stricter keeps it."""
    notes: list[str] = []
    made = baseline.get("made_from") or {}
    sku = str(made.get("sku") or "")
    if sku and profile.name not in {s.strip() for s in sku.split(",")}:
        return {}, [f"baseline {baseline.get('name')!r} was made on {sku} nodes; not applied to a {profile.name} node"]
    differs = mismatches(baseline, node_facts or {})
    suffix = f"; made on other software than this node's: {'; '.join(differs)}" if differs else ""
    if differs:
        notes.append(f"baseline {baseline.get('name')!r} was made on other software: {'; '.join(differs)}")
    out: dict[str, dict[str, Any]] = {}
    for metric, entry in (baseline.get("metrics") or {}).items():
        fields = {k: entry[k] for k in ("value", "unit", "direction", "tolerance", "record_only") if k in entry}
        fields["source"] = f"{entry['source']}{suffix}"
        published = profile.get(metric)
        if published is not None and published.unit != fields.get("unit"):
            notes.append(f"{metric}: the baseline is in {fields.get('unit')}, the profile in {published.unit}; "
                         "not applied")
            continue
        if published is not None and _stricter(published, fields):
            notes.append(f"{metric}: the published target ({published.source[:60]}...) is stricter; kept")
            continue
        out[metric] = fields
    return out, notes


def _stricter(published: Any, fields: Mapping[str, Any]) -> bool:
    line = published.threshold
    if line is None or isinstance(line, str) or published.direction != fields.get("direction"):
        return False
    mine = float(fields["value"]) * (1 - float(fields.get("tolerance", 0))) if fields.get(
        "direction") == HIGHER_IS_BETTER else float(fields["value"]) * (1 + float(fields.get("tolerance", 0)))
    return line >= mine if fields.get("direction") == HIGHER_IS_BETTER else line <= mine


def merge(*layers: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Later layers win per metric (baseline, then the inventory's own overrides)."""
    out: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for metric, fields in (layer or {}).items():
            out[metric] = dict(fields)
    return out
