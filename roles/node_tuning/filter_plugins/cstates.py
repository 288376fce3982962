"""Filters for roles/node_tuning: what the host's cpuidle driver offers against the declared states.

The logic lives in validation/cstates.py, which the check test_cpu_idle_states_are_disabled also
uses, so the role and the validation suite say the same about a state the CPU does not have.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from validation import cstates
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from validation import cstates


def cstates_absent(listing: str, declared: list) -> str:
    """'' when the driver offers every declared state, else the sentence that names what is missing."""
    return cstates.absent_message(declared, cstates.parse_listing(listing or ""))


class FilterModule:
    def filters(self) -> dict:
        return {"rocm_fleet_cstates_absent": cstates_absent}
