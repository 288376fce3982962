"""ROCm <-> amdgpu driver <-> OS <-> kernel compatibility, checked before anything changes.

The data lives in validation/data/rocm_compat.yml (every row with its source). roles/rocm_repo
calls `check()` through plugins/filter/rocm_fleet.py during preflight; the validation suite calls it for
the node's declared versions. Pure: no I/O beyond loading the data file.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from validation.errors import CompatibilityError

DATA_FILE = Path(__file__).resolve().parent / "data" / "rocm_compat.yml"
INBOX = "inbox"


@dataclass(frozen=True, slots=True, kw_only=True)
class Combination:
    """What a node declares: ROCm user space, driver, OS and running kernel."""

    rocm_version: str         # "6.2.4"
    driver_version: str       # "6.2.4", "30.10.1" or "inbox"
    os_id: str                # "ubuntu-22.04", "rhel-9.4", "debian-13"
    kernel: str = ""          # uname -r; empty when unknown


def release_line(version: str) -> str:
    """'6.2.4' -> '6.2'; '30.10.1' -> '30.10'; 'inbox' stays 'inbox'."""
    version = str(version).strip()
    if version == INBOX:
        return INBOX
    parts = version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise CompatibilityError(f"version {version!r} is not of the form X.Y[.Z]; "
                                 "write ROCm and driver versions like 6.2.4 or 30.10.1")
    return f"{parts[0]}.{parts[1]}"


def os_matches(row_os: str, os_id: str) -> bool:
    """'ubuntu-22.04' matches 'ubuntu-22.04' and 'ubuntu-22.04.5'; 'debian-13' matches 'debian-13'."""
    return os_id == row_os or os_id.startswith(row_os + ".")


def load(path: Path | None = None, extra_rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Load the compatibility data and append site rows (each must carry a source)."""
    data = yaml.safe_load((path or DATA_FILE).read_text())
    for row in [*data["drivers"], *data["os_support"]]:
        if not str(row.get("source", "")).strip():
            raise CompatibilityError(f"row {row} in {path or DATA_FILE} has no source")
    for row in extra_rows or []:
        kind = row.get("kind")
        if kind not in ("driver", "os") or not str(row.get("source", "")).strip():
            raise CompatibilityError(
                f"site compatibility row {row!r} needs kind: driver|os and a non-empty source "
                "saying who qualified the combination")
        if kind == "driver":
            data["drivers"].append({k: v for k, v in row.items() if k != "kind"})
        else:
            data["os_support"].append({k: v for k, v in row.items() if k != "kind"})
    return data


def problems(data: dict[str, Any], combo: Combination) -> list[str]:
    """Every reason the combination is unsupported; an empty list means supported."""
    found: list[str] = []
    rocm_line = release_line(combo.rocm_version)
    driver_line = release_line(combo.driver_version)

    driver_rows = [r for r in data["drivers"] if str(r["driver"]) == driver_line
                   and (not r.get("os") or any(os_matches(o, combo.os_id) for o in r["os"]))]
    if not driver_rows:
        known = sorted({str(r["driver"]) for r in data["drivers"]})
        found.append(f"amdgpu driver {combo.driver_version} (line {driver_line}) on {combo.os_id} "
                     f"is not in the compatibility data; known driver lines: {', '.join(known)}")
    elif not any(rocm_line in [str(v) for v in r["rocm"]] for r in driver_rows):
        supported = sorted({str(v) for r in driver_rows for v in r["rocm"]})
        found.append(f"ROCm {combo.rocm_version} is not supported by amdgpu driver {combo.driver_version}; "
                     f"that driver supports ROCm {', '.join(supported)}")

    os_rows = [r for r in data["os_support"] if str(r["rocm"]) == rocm_line]
    matching = [r for r in os_rows if any(os_matches(o, combo.os_id) for o in r["os"])]
    if not matching:
        listed = sorted({o for r in os_rows for o in r["os"]})
        found.append(f"ROCm {combo.rocm_version} is not supported on {combo.os_id}; "
                     f"supported: {', '.join(listed) or 'no OS listed for that release'}")
    elif combo.kernel:
        for row in matching:
            for os_key, patterns in (row.get("kernels_excluded") or {}).items():
                if os_matches(os_key, combo.os_id) and any(fnmatch.fnmatch(combo.kernel, p) for p in patterns):
                    found.append(f"kernel {combo.kernel} on {combo.os_id} is excluded for ROCm "
                                 f"{combo.rocm_version} (excluded: {', '.join(patterns)}; {row['source']})")
    return found


def supported_summary(data: dict[str, Any]) -> str:
    """One line per driver line: what it supports, for refusal messages."""
    return "; ".join(f"driver {r['driver']} -> ROCm {', '.join(map(str, r['rocm']))}"
                     + (f" on {', '.join(r['os'])}" if r.get("os") else "") for r in data["drivers"])


def check(combo: Combination, *, extra_rows: list[dict[str, Any]] | None = None) -> None:
    """Raise CompatibilityError listing every problem and what is supported."""
    data = load(extra_rows=extra_rows)
    found = problems(data, combo)
    if found:
        raise CompatibilityError("; ".join(found) + ". Supported: " + supported_summary(data))
