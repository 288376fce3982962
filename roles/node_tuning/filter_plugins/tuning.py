"""Filters for roles/node_tuning: the tuning plan, the run-time reading and the record.

The rules live in validation/declared.py, which the node-tuning checks also use; this file only
adapts them to Jinja, so the role and the suite cannot disagree about what a declaration means.
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
        return {"rocm_fleet_tuning_plan": declared.tuning_plan,
                "rocm_fleet_tuning_paths": declared.runtime_paths,
                "rocm_fleet_tuning_now": declared.runtime_now,
                "rocm_fleet_tuning_record": declared.tuning_record,
                "rocm_fleet_sysctl_path": declared.sysctl_path,
                "rocm_fleet_thp_path": declared.thp_path}
