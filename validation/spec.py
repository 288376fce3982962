"""The node's declared state, read from the same variables the roles use.

With `--hosts=ansible://GROUP` the spec is the role defaults overlaid with the host's inventory
variables; on a node (`--hosts=local://`) it is the spec file that playbooks/validate.yml writes
from the host's resolved variables (`--rf-spec`), or that `rocm-fleet spec -i INVENTORY HOST`
prints. There is no second copy of the desired state: `declared_state` is the one rule for what
such a file holds.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from validation.errors import RocmFleetError
from validation.partition_counts import logical_gpus

ROLES_DIR = Path(__file__).resolve().parents[1] / "roles"
# The roles whose variables declare a node, in the order their defaults are merged, and the variable
# names a spec file carries. They are also the provisioning roles, in the order the playbooks apply
# them: the one list of them (the playbooks read it through the rocm_fleet.fleet.roles_for filter).
SPEC_ROLES = ("rocm_repo", "amdgpu_driver", "rocm", "amdgpu_partition", "node_tuning", "gpu_access", "env_profiles")
PLAYBOOK_ROLES = {
    "site": SPEC_ROLES,                 # site.yml applies them all; preflight.yml checks them all first
    "upgrade": SPEC_ROLES[:3],          # upgrade.yml moves the repository, the driver and ROCm only
}
SPEC_VARIABLE = re.compile(r"^(rocm|amdgpu_driver|amdgpu_partition|node_tuning|gpu_access|env_profiles|validation)_")
# Not the node's state: the validation_node role's own knobs, and the playbooks' run bookkeeping
# (rocm_fleet_run_id, rocm_fleet_wheelhouse, ... set on every node by validate.yml).
NOT_SPEC = re.compile(r"^(validation_node|rocm_fleet)_")


def roles_for(playbook: str) -> list[str]:
    """The provisioning roles `playbook` applies, in order."""
    try:
        return list(PLAYBOOK_ROLES[playbook])
    except KeyError:
        raise RocmFleetError(f"no role list for playbook {playbook!r}; known: {', '.join(PLAYBOOK_ROLES)}") from None


def _roles_dir_or_refuse(roles_dir: Path) -> Path:
    if not roles_dir.is_dir():
        raise RocmFleetError(f"{roles_dir} is missing; run rocm-fleet from a checkout of the repository "
                             "(the roles' defaults are part of every spec), or give a complete spec file "
                             "(`rocm-fleet spec -i INVENTORY HOST` writes one)")
    return roles_dir


def spec_role_defaults(roles_dir: Path = ROLES_DIR) -> list[dict[str, Any]]:
    """The defaults of SPEC_ROLES, in that order, as plain YAML (not templated, as the role reads them)."""
    roles_dir = _roles_dir_or_refuse(roles_dir)
    out = []
    for role in SPEC_ROLES:
        path = roles_dir / role / "defaults" / "main.yml"
        if not path.is_file():
            raise RocmFleetError(f"{path} is missing; the checkout is incomplete")
        out.append(yaml.safe_load(path.read_text()) or {})
    return out


def role_defaults(roles_dir: Path = ROLES_DIR) -> dict[str, Any]:
    """Every role's defaults merged (roles in name order): what a play sees before the inventory."""
    merged: dict[str, Any] = {}
    for defaults in sorted(_roles_dir_or_refuse(roles_dir).glob("*/defaults/main.yml")):
        merged.update(yaml.safe_load(defaults.read_text()) or {})
    return merged


def declared_state(defaults: Sequence[Mapping[str, Any]], host_vars: Mapping[str, Any],
                   overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec of one host: the role defaults, overlaid (shallowly, like Ansible's `combine`) with the
    host's variables that declare node state (SPEC_VARIABLE, less NOT_SPEC), then with `overrides`."""
    merged: dict[str, Any] = {}
    for layer in defaults:
        merged.update(layer)
    merged.update({k: v for k, v in host_vars.items() if SPEC_VARIABLE.match(k) and not NOT_SPEC.match(k)})
    merged.update(overrides or {})
    return with_partition_counts(merged)


def with_partition_counts(state: dict[str, Any]) -> dict[str, Any]:
    """A node with declared partition modes lists more GPUs than it holds: `validation_gpu_count` becomes the
    count it lists (CPX: 8 per MI300X), `validation_physical_gpu_count` keeps the GPUs it holds (the inventory's
    count, which selects the SKU), and `validation_partition` defaults to the declared modes (the targets for
    that mode). Applying it again to its own result changes nothing."""
    compute = str(state.get("amdgpu_partition_compute") or "").upper()
    memory = str(state.get("amdgpu_partition_memory") or "").upper()
    count = state.get("validation_gpu_count")
    if not compute or not memory or count in (None, ""):
        return state
    physical = int(state.get("validation_physical_gpu_count") or count)
    state["validation_physical_gpu_count"] = physical
    state["validation_gpu_count"] = logical_gpus(str(state.get("validation_target_sku") or ""), physical,
                                                 compute)
    if not state.get("validation_partition"):
        state["validation_partition"] = f"{compute}/{memory}"
    return state


def render_spec(state: Mapping[str, Any]) -> str:
    """YAML text byte for byte as the role writes it (`to_nice_yaml(sort_keys=true)`)."""
    from ansible.plugins.filter.core import to_nice_yaml  # the role's own filter, so the bytes agree

    return to_nice_yaml(dict(state), sort_keys=True)


def inventory_host_vars(inventory: Path, hosts: Sequence[str] = (),
                        extra_vars: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Host -> its templated variables (inventory, group_vars, host_vars; extra_vars on top, as `-e`
    does), read with Ansible's own inventory code. No hosts: every host of the inventory."""
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    if not inventory.exists():
        raise RocmFleetError(f"inventory {inventory}: no such file or directory")
    loader = DataLoader()
    manager = InventoryManager(loader=loader, sources=[str(inventory)])
    known = sorted(h.name for h in manager.get_hosts())
    if not known:
        raise RocmFleetError(f"inventory {inventory} lists no hosts (is it an Ansible inventory?)")
    missing = [h for h in hosts if h not in known]
    if missing:
        raise RocmFleetError(f"inventory {inventory} has no host {', '.join(missing)}; it lists "
                             f"{', '.join(known[:12])}{' ...' if len(known) > 12 else ''}")
    variables = VariableManager(loader=loader, inventory=manager)
    out = {}
    for name in hosts or known:
        host_vars = {**variables.get_vars(host=manager.get_host(name), include_hostvars=False),
                     **(extra_vars or {})}
        templar = Templar(loader=loader, variables=host_vars)
        try:
            out[name] = {k: templar.template(v) for k, v in host_vars.items() if SPEC_VARIABLE.match(k)}
        except AnsibleError as exc:
            raise RocmFleetError(f"{name}: a variable in {inventory} cannot be templated: {exc}") from exc
    return out


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


class DeclaredState(dict[str, Any]):
    """A node's declared state. Reading a variable it does not hold (a hand-written, partial spec file
    where no roles/ are beside the suite) fails with how to write a whole one, not a bare KeyError."""

    def __missing__(self, name: str) -> Any:
        raise RocmFleetError(f"the spec does not declare {name}; write the node's whole spec with "
                             "`rocm-fleet spec -i INVENTORY HOST` (it includes the roles' defaults)")


def checks_spec(variables: Mapping[str, Any], roles_dir: Path = ROLES_DIR) -> DeclaredState:
    """What the checks compare a node with: its variables (a spec file, or the inventory's with
    --hosts=ansible://) by the same rule as `rocm-fleet spec`. Where the suite runs from an installed
    wheel (on a node, no roles/ beside it) the spec file is taken as it is: validate.yml and
    `rocm-fleet spec` write it whole, defaults included."""
    if not roles_dir.is_dir():
        return DeclaredState(variables)
    return DeclaredState(declared_state(spec_role_defaults(roles_dir), variables))


@functools.cache
def argument_options(roles_dir: Path = ROLES_DIR) -> dict[str, dict[str, Any]]:
    """Variable -> its option in the argument spec of its owner: a role's meta/argument_specs.yml (entry
    point main) or playbooks/argument_specs.yml."""
    owners = [*sorted(roles_dir.glob("*/meta/argument_specs.yml")),
              roles_dir.parent / "playbooks" / "argument_specs.yml"]
    options: dict[str, dict[str, Any]] = {}
    for path in owners:
        for name, option in _main_options(path).items():
            options.setdefault(name, option)
    return options


def _main_options(path: Path) -> dict[str, Any]:
    """The options of an argument_specs.yml's entry point main ({} where there is no such file)."""
    if not path.is_file():
        return {}
    main = ((yaml.safe_load(path.read_text()) or {}).get("argument_specs") or {}).get("main") or {}
    return main.get("options") or {}


def required_options(roles: Iterable[str], roles_dir: Path = ROLES_DIR) -> dict[str, str]:
    """Variable -> the role whose argument spec (entry point main) requires it, for `roles`."""
    required: dict[str, str] = {}
    for role in roles:
        for name, option in _main_options(roles_dir / role / "meta" / "argument_specs.yml").items():
            if (option or {}).get("required"):
                required.setdefault(name, role)
    return required


def declared_problems(variables: Mapping[str, Any], roles_dir: Path = ROLES_DIR, *,
                      required_by: Iterable[str] = ()) -> list[str]:
    """One line per declared variable whose value its owner's argument spec refuses (a type, a choice, a
    nested option), by Ansible's own validator, as the role would at its start: `spec`, `validate` and
    the playbooks' preflight refuse the node's variables before anything reads them. A value still to be
    templated is left to the role; where no roles/ is beside the suite (an installed wheel on a node)
    there is nothing to check against, and validate.yml's role checked them on the controller. A checkout
    run on a GPU node without ansible-core (nodes install the suite --no-deps) has no validator: the roles
    check the same specs when they converge.

    With `required_by` (the roles a playbook is about to apply) a variable that one of their specs requires
    and `variables` lacks is a problem too: the playbooks' preflight checks the declared variables here once
    per host instead of through each role's own argument-spec task (a task per role and host)."""
    if not roles_dir.is_dir():
        return []
    try:
        from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    except ImportError:
        return []

    options = argument_options(roles_dir)
    given = {name: value for name, value in variables.items() if name in options and not _templated(value)}
    spec = {name: {k: v for k, v in options[name].items() if k not in ("required", "description")}
            for name in given}
    problems = [str(error) for error in ArgumentSpecValidator(spec).validate(given).errors]
    problems += [f"{name} is required by the role {role} (roles/{role}/meta/argument_specs.yml); declare it"
                 for name, role in required_options(required_by, roles_dir).items() if variables.get(name) is None]
    return sorted(problems)


def refuse_undeclarable(by_host: Mapping[str, Mapping[str, Any]], roles_dir: Path = ROLES_DIR) -> None:
    """RocmFleetError with one line per bad field ("HOST: what the spec refuses") when any host's
    variables fail their owners' argument specs; nothing when all pass."""
    lines = [f"{host}: {problem}" for host, variables in by_host.items()
             for problem in declared_problems(variables, roles_dir)]
    if lines:
        raise RocmFleetError("declared variables that their roles' argument specs refuse (fix them in the "
                             "inventory):\n" + "\n".join(lines))


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def gpu_vendor(spec: Mapping[str, Any]) -> str:
    """The declared GPU vendor: validation_gpu_vendor, amd when the node does not say."""
    return str(spec.get("validation_gpu_vendor") or "amd")
