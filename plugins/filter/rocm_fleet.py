"""The roles' Jinja filters: thin adapters over the validation package, which the checks also use.

Every rule (which repository directory a ROCm version lives in, what a tuning declaration asks for,
which keys are trusted, how the node's declared state is assembled) is coded once in `validation/`;
a filter here only passes Jinja's values to it. Roles call them by FQCN (`rocm_fleet.fleet.repo_dir`):
installed as the collection this is its plugins/filter/, and from a checkout ansible.cfg's
collections_path finds the checkout itself through collections/ansible_collections/rocm_fleet/fleet.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The package shipped beside these filters, never another installed copy: the roles and the rules they
# call come from one checkout or one collection. (Path.resolve: the checkout's collections/ link.)
_HERE = str(Path(__file__).resolve().parents[2])
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from validation import (  # noqa: E402
    adduser,
    compat,
    cstates,
    declared,
    occupancy,
    openpgp,
    parsers,
    recap,
    remediate,
    slurm,
    slurm_gres,
    spec,
)
from validation.errors import ParseError  # noqa: E402
from validation.multinode import cluster_ssh  # noqa: E402
from validation.multinode.model import ClusterError  # noqa: E402
from validation.results import collect  # noqa: E402
from validation.targets import partition_modes  # noqa: E402

# --- every role ---------------------------------------------------------------------------------

def declared_problems(variables: Mapping[str, Any], required_by: list[str] | None = None) -> list[str]:
    """What the argument specs of the roles that own them refuse in `variables` (a host's hostvars):
    validation/spec.py:declared_problems, as `rocm-fleet spec` and `validate` check them; with
    `required_by`, also what those roles' specs require and the host lacks."""
    options = spec.argument_options()
    return spec.declared_problems({name: variables[name] for name in options if name in variables},
                                  required_by=required_by or ())


# --- rocm_repo ----------------------------------------------------------------------------------

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


# --- amdgpu_partition ---------------------------------------------------------------------------

def partition_problems(compute: str, memory: str, sku: str) -> list[str]:
    """Why the declared compute/memory partition modes cannot be set on `sku` (empty: they can, or none is
    declared): validation/targets/partition_modes.py, the driver's own combinations."""
    return partition_modes.problems(str(sku or "").lower(), str(compute or "").upper(), str(memory or "").upper())


def partition_plan(static_partition: str, compute: str, memory: str) -> dict[str, Any]:
    """From `amd-smi static --partition`'s text: {'current': [{'gpu', 'compute', 'memory'}] of each GPU's primary
    partition, 'steps': [{'kind', 'mode', 'reload'}] in the order the driver takes them, 'problem': why the
    view cannot be read ('' when it can)}."""
    try:
        record = parsers.parse("amd-smi", static_partition)
    except ParseError as exc:
        return {"current": [], "steps": [], "problem": f"amd-smi static --partition not understood: {exc}"}
    if getattr(record, "truncated", False):
        return {"current": [], "steps": [], "problem": "amd-smi static --partition output is cut short"}
    current = [{"gpu": g.index, "compute": g.compute_partition or "", "memory": g.memory_partition or ""}
               for g in record.partition_primaries]
    if not current:
        return {"current": [], "steps": [], "problem": "amd-smi static --partition lists no GPU with a partition mode"}
    steps = partition_modes.plan(current, str(compute or "").upper(), str(memory or "").upper())
    return {"current": current, "steps": [step.as_dict() for step in steps], "problem": ""}


def listed_gpu_count(host_vars: Mapping[str, Any]) -> int:
    """The GPUs a node lists: validation_gpu_count as its declared partition mode makes it
    (validation/spec.py:with_partition_counts; CPX: 8 per MI300X); 0 where it declares none."""
    keys = ("validation_gpu_count", "validation_physical_gpu_count", "validation_target_sku",
            "amdgpu_partition_compute", "amdgpu_partition_memory")
    state = spec.with_partition_counts({k: host_vars[k] for k in keys if k in host_vars})
    return int(state.get("validation_gpu_count") or 0)


# --- env_profiles -------------------------------------------------------------------------------

def visible_devices_problems(login_env: Mapping[str, Any], profiles: Mapping[str, Any], listed: int) -> list[str]:
    """GPU indices in the login environment's and each opt-in profile's visible-device variables that the node
    does not list (validation/declared.py:visible_devices_problems; `listed` from listed_gpu_count)."""
    found = declared.visible_devices_problems(login_env, int(listed), "the login environment")
    for name, env in sorted((profiles or {}).items()):
        found += declared.visible_devices_problems(env or {}, int(listed), f"profile {name}")
    return found


# --- slurm_gres ----------------------------------------------------------------------------------

def slurm_play_gres(play_hosts: list[str], hostvars: Mapping[str, Any], gres_type: str = "") -> dict[str, str]:
    """Slurm node name -> `gpu[:TYPE]:N` for every host of the play that lists GPUs (its slurm_gres_node, else
    its short inventory name)."""
    out = {}
    for host in play_hosts:
        hv = hostvars[host]
        count = listed_gpu_count(hv)
        if count > 0:
            name = str(hv.get("slurm_gres_node") or hv.get("inventory_hostname_short") or host.split(".")[0])
            out[slurm.check_node(name)] = slurm_gres.gres_value(count, gres_type)
    return out


def slurm_gres_conf(paths: list[str], detect: str, gres_type: str = "") -> str:
    """gres.conf for a node whose render nodes are `paths` (validation/slurm_gres.py:gres_conf)."""
    return slurm_gres.gres_conf(slurm_gres.render_nodes(paths), detect, gres_type)


def partition_boot_script(compute: str, memory: str) -> str:
    """The script rocm-fleet-partition.service runs at boot (validation/targets/partition_modes.py:boot_script)."""
    return partition_modes.boot_script(str(compute).upper(), str(memory).upper())


# --- node_tuning --------------------------------------------------------------------------------

def cstates_absent(listing: str | dict, wanted: list) -> str:
    """'' when the driver offers every declared state, else the sentence that names what is missing
    (the check test_cpu_idle_states_are_disabled says the same). `listing` is LISTING's output or the
    files read by path."""
    text = listing if isinstance(listing, str) else cstates.listing_of(listing)
    return cstates.absent_message(wanted, cstates.parse_listing(text or ""))


def cpuidle_globs(states: list) -> list[str]:
    """What node_tuning reads of the CPU idle states: the driver, its states' names, the declared states' switches."""
    return [*cstates.LISTING_GLOBS, *(cstates.switch_glob(state) for state in states)]


def files_declared(files: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, list]:
    """A role's files ({name: {path, content}}) and whether each is declared ({name: true to write it, false
    to remove it, none to leave it alone}) -> rocm_fleet.fleet.files' `files` and `absent`."""
    return {"files": [files[name] for name, wanted in declared.items() if wanted is True],
            "absent": [files[name]["path"] for name, wanted in declared.items() if wanted is False]}


# --- playbooks ----------------------------------------------------------------------------------

def roles_for(playbook: str) -> list[str]:
    """The provisioning roles a playbook applies, in order (validation/spec.py holds the one list)."""
    return spec.roles_for(str(playbook))


# --- validation_node ----------------------------------------------------------------------------

def declared_state(roles_dir: str, host_vars: dict, overrides: dict | None = None) -> dict[str, Any]:
    """The declaring roles' defaults (read from `roles_dir` on the controller) overlaid with the host's
    state-declaring variables, then `overrides`: the rule `rocm-fleet spec` and the checks use."""
    return spec.declared_state(spec.spec_role_defaults(Path(roles_dir)), host_vars, overrides)


# --- mpi_launcher -------------------------------------------------------------------------------

def own_addresses(reach_host: str, ipv4: list | None, ipv6: list | None) -> list[str]:
    return cluster_ssh.own_addresses(str(reach_host), ipv4 or [], ipv6 or [])


def sources_problem(sources: list) -> str:
    """'' when the from= list is usable, else why not."""
    try:
        cluster_ssh.check_sources(sources)
    except ClusterError as exc:
        return str(exc)
    return ""


def authorized_key(public_key: str, sources: list) -> str:
    return cluster_ssh.authorized_key_line(public_key, sources)


def settings_problems(values: dict) -> list[str]:
    return cluster_ssh.settings_problems(**values)


# --- self_converge --------------------------------------------------------------------------------

def play_recap(output: str, host: str) -> dict[str, int]:
    """`host`'s counts in the last PLAY RECAP of an ansible-playbook output (empty when it has none)."""
    return recap.counts(output).get(host, {})


def play_failures(output: str) -> list[str]:
    """The reasons of the failed tasks in an ansible-playbook output, one line each."""
    return recap.failures(output)


# --- playbooks/remediate.yml ---------------------------------------------------------------------

def slurm_node_state(output: str, node: str) -> dict[str, Any]:
    """A node's Slurm state from `scontrol --oneliner show node NODE` (validation/slurm.py): drained,
    its reason, whether rocm-fleet drained it (the health mode, or a remediation attempt cut short),
    whether it is held for physical action, and the failure codes in the reason."""
    state = slurm.parse_show_node(output, node)
    return {"node": node, "states": sorted(state.states), "reason": state.reason or "", "drained": state.drained,
            "drained_by_project": state.drained_by_health or state.drained_by_remediation,
            "needs_physical_action": state.needs_physical_action,
            "codes": list(remediate.codes_in(state.reason or ""))}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "compat_problems": compat_problems,
            "trusted_key": trusted_key,
            "normalize_fingerprints": normalize_fingerprints,
            "repo_dir": declared.repo_dir,
            "rocm_packages": declared.rocm_packages,
            "tool_packages": declared.tool_packages,
            "rocm_build": declared.rocm_build,
            "apt_spec": declared.apt_spec,
            "dnf_spec": declared.dnf_spec,
            "version_matches": declared.version_matches,
            "packages_to_install": declared.packages_to_install,
            "partition_problems": partition_problems,
            "partition_plan": partition_plan,
            "partition_boot_script": partition_boot_script,
            "listed_gpu_count": listed_gpu_count,
            "visible_devices_problems": visible_devices_problems,
            "slurm_gres_conf": slurm_gres_conf,
            "slurm_play_gres": slurm_play_gres,
            "slurm_render_nodes": slurm_gres.render_nodes,
            "slurm_gres_value": slurm_gres.gres_value,
            "slurm_conf_with_gres": slurm_gres.slurm_conf_with_gres,
            "tuning_plan": declared.tuning_plan,
            "tuning_paths": declared.runtime_paths,
            "tuning_now": declared.runtime_now,
            "tuning_record": declared.tuning_record,
            "sysctl_path": declared.sysctl_path,
            "thp_path": declared.thp_path,
            "cstates_absent": cstates_absent,
            "cpuidle_globs": cpuidle_globs,
            "files_declared": files_declared,
            "cpuidle_switch_glob": cstates.switch_glob,
            "adduser_conf": adduser.with_settings,
            "declared_state": declared_state,
            "declared_problems": declared_problems,
            "roles_for": roles_for,
            "play_recap": play_recap,
            "play_failures": play_failures,
            "slurm_node_state": slurm_node_state,
            "node_jobs_argv": occupancy.probe_argv,
            "node_jobs_why": occupancy.why_occupied,
            "node_stale": collect.stale,
            "cluster_own_addresses": own_addresses,
            "cluster_sources_problem": sources_problem,
            "cluster_authorized_key": authorized_key,
            "cluster_settings_problems": settings_problems,
        }
