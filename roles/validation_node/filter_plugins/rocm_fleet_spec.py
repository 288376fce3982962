"""Filter for roles/validation_node: the node's declared state, as `rocm-fleet spec` computes it.

The rule (which role defaults, which variables, what is left out) lives in
validation/spec.py so the role, `rocm-fleet spec` and the checks share one implementation;
this file only adapts it to Jinja.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

try:
    from validation import spec
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from validation import spec


def rocm_fleet_declared_state(roles_dir: str, host_vars: dict, overrides: dict | None = None) -> dict[str, Any]:
    """The declaring roles' defaults (read from `roles_dir` on the controller) overlaid with the host's
    state-declaring variables, then `overrides`."""
    return spec.declared_state(spec.spec_role_defaults(Path(roles_dir)), host_vars, overrides)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"rocm_fleet_declared_state": rocm_fleet_declared_state}
