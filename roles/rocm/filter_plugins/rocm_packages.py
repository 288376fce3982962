"""Package-spec filters for roles/rocm: entries -> {name, version pattern} -> apt/dnf argument.

The rule lives in validation/declared.py, which the checks also use; this file only adapts it to Jinja.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from validation import declared
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from validation import declared


class FilterModule:
    def filters(self) -> dict:
        return {"rocm_fleet_apt_spec": declared.apt_spec, "rocm_fleet_dnf_spec": declared.dnf_spec,
                "rocm_fleet_wanted": declared.rocm_packages}
