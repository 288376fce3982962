"""The node's declared state, read from the same variables the roles use.

With `--hosts=ansible://GROUP` the spec is the role defaults overlaid with the host's inventory
variables; on a node (`--hosts=local://`) it is the spec file that playbooks/validate.yml writes
from the host's resolved variables (`--rf-spec`). There is no second copy of the desired state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from validation.errors import RocmFleetError

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"


def role_defaults(roles_dir: Path = ROLES_DIR) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for defaults in sorted(roles_dir.glob("*/defaults/main.yml")):
        merged.update(yaml.safe_load(defaults.read_text()) or {})
    return merged


def load_spec_file(path: Path, host: str) -> dict[str, Any]:
    data = (json.loads if path.suffix == ".json" else yaml.safe_load)(path.read_text())
    if not isinstance(data, dict):
        raise RocmFleetError(f"spec file {path} must hold a mapping of variables")
    if isinstance(data.get("hosts"), dict):
        if host not in data["hosts"]:
            raise RocmFleetError(f"spec file {path} has no entry for host {host}; "
                                 f"it lists {', '.join(sorted(data['hosts']))}")
        return data["hosts"][host]
    return data


class Spec(dict):
    """Declared variables with attribute-style reading and a clear error for missing ones."""

    def need(self, name: str) -> Any:
        if name not in self:
            raise RocmFleetError(f"the spec for this host does not declare {name}; set it in the inventory")
        return self[name]
