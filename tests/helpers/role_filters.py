"""The roles' Jinja filters as Ansible loads them: plugins/filter/rocm_fleet.py imported from its file (it is no
package module), so a test calls the very adapter a role calls."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def filters() -> dict[str, Any]:
    found = importlib.util.spec_from_file_location("rocm_fleet_filters", ROOT / "plugins" / "filter" / "rocm_fleet.py")
    assert found and found.loader
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module.FilterModule().filters()
