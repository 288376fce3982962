"""Filters for roles/rocm_repo: compatibility check, key fingerprints, repository paths.

The logic lives in the validation package (validation/compat.py, validation/openpgp.py,
validation/declared.py) so the roles and the validation suite share one implementation; this file
only adapts it to Jinja.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from validation import compat, declared, openpgp
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from validation import compat, declared, openpgp


def compat_problems(combo: dict, extra_rows: list | None = None) -> list[str]:
    """Reasons the declared combination is unsupported (empty when supported)."""
    data = compat.load(extra_rows=extra_rows or [])
    found = compat.problems(data, compat.Combination(
        rocm_version=str(combo["rocm_version"]),
        driver_version=str(combo["driver_version"]),
        os_id=str(combo["os_id"]),
        kernel=str(combo.get("kernel", "")),
    ))
    if found:
        found.append("supported: " + compat.supported_summary(data))
    return found


def trusted_key(material: str, pinned: list[str]) -> dict:
    """{'armored': what to write, 'fingerprints': [...], 'problem': ''}, or the reason to refuse in 'problem'.

    Every key in the downloaded material must be pinned; the text to write is rebuilt from the
    verified keys (trusted_keys in validation/openpgp.py), never the download itself.
    """
    try:
        armored = openpgp.trusted_keys(material, pinned)
    except openpgp.KeyError_ as exc:
        return {"armored": "", "fingerprints": [], "problem": str(exc)}
    return {"armored": armored, "fingerprints": openpgp.fingerprints(armored), "problem": ""}


def normalize_fingerprints(values: list[str]) -> list[str]:
    return [openpgp.normalize(v) for v in values]


class FilterModule:
    def filters(self) -> dict:
        return {
            "rocm_fleet_compat_problems": compat_problems,
            "rocm_fleet_trusted_key": trusted_key,
            "rocm_fleet_normalize_fingerprints": normalize_fingerprints,
            "rocm_fleet_repo_dir": declared.repo_dir,
        }
