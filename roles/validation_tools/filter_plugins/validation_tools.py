"""Package-spec filters for roles/validation_tools: entries -> {name, version pattern}.

The rule (a bare name gets AMD's per-release pattern '*.<NNNNN>-*') lives in validation/declared.py;
this file only adapts it to Jinja.
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
        return {"rocm_fleet_tools_wanted": declared.tool_packages, "rocm_fleet_tools_apt_spec": declared.apt_spec,
                "rocm_fleet_tools_dnf_spec": declared.dnf_spec, "rocm_fleet_rocm_build": declared.rocm_build}
