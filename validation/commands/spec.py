"""`rocm-fleet spec -i INVENTORY [HOST...]`: the declared state of a node, as a spec file for
`rocm-fleet validate --hosts local:// --spec FILE` (what playbooks/validate.yml writes on each node)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from validation.errors import RocmFleetError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spec", help="print a node's declared state from the inventory, for validate --spec",
                       description="Role defaults overlaid with the host's inventory variables (rocm_*, "
                       "amdgpu_driver_*, node_tuning_*, gpu_access_*, env_profiles_*, validation_*), "
                       "exactly as playbooks/validate.yml writes /etc/rocm-fleet/spec.yml. "
                       "Example: rocm-fleet spec -i inventories/prod gpu-node-01 > spec.yml")
    p.add_argument("-i", "--inventory", type=Path, required=True, help="Ansible inventory (file or directory)")
    p.add_argument("hosts", nargs="*", metavar="HOST",
                   help="inventory host name; several (or none: every host) give one file with a `hosts:` "
                   "mapping, which validate picks from with --node-name")
    p.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VARS",
                   help="variables that override the inventory, as with ansible-playbook -e: KEY=VALUE ..., "
                   "YAML/JSON, or @FILE")
    p.add_argument("--json", action="store_true", help="JSON instead of YAML")
    p.set_defaults(run=run)


def extra_vars(items: list[str]) -> dict[str, Any]:
    """-e values in Ansible's three forms: @file, a YAML/JSON mapping, or KEY=VALUE words."""
    out: dict[str, Any] = {}
    for item in items:
        if item.startswith("@"):
            path = Path(item[1:])
            if not path.is_file():
                raise RocmFleetError(f"-e {item}: no such file")
            data = yaml.safe_load(path.read_text())
        elif item.lstrip().startswith("{"):
            data = yaml.safe_load(item)
        elif "=" in item:
            from ansible.parsing.splitter import parse_kv  # Ansible's own reading: every value a string

            data = parse_kv(item)
        else:
            raise RocmFleetError(f"-e {item!r}: give KEY=VALUE words, a YAML/JSON mapping or @FILE")
        if not isinstance(data, dict):
            raise RocmFleetError(f"-e {item!r} is not a mapping of variables")
        out.update(data)
    return out


def run(args: argparse.Namespace) -> int:
    from validation.spec import (
        declared_state,
        inventory_host_vars,
        refuse_undeclarable,
        render_spec,
        spec_role_defaults,
    )

    defaults = spec_role_defaults()
    found = inventory_host_vars(args.inventory, args.hosts, extra_vars(args.extra_vars))
    refuse_undeclarable(found)
    specs = {host: declared_state(defaults, host_vars) for host, host_vars in found.items()}
    doc: dict[str, Any] = next(iter(specs.values())) if len(args.hosts) == 1 else {"hosts": specs}
    doc = json.loads(json.dumps(doc))    # hosts share their roles' defaults: plain YAML, no &id001 / *id001 aliases
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n" if args.json else render_spec(doc)
    print(text, end="")
    return 0
