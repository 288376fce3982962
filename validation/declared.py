"""What the inventory's variables mean, coded once.

The roles call these functions through plugins/filter/rocm_fleet.py and the checks call them directly, so a
rule (which repository directory a ROCm version lives in, which package version a bare name pins,
which kernel parameters, THP modes and sysctls a node_tuning declaration asks for) has one home.
Every function takes declared values (role defaults overlaid with the host's inventory, see
`validation.spec.declared_state`) and facts, and returns plain data that Jinja can use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# Where the kernel exposes what node_tuning manages (the role reads and writes these; the checks read them).
THP_DIR = "/sys/kernel/mm/transparent_hugepage"
SYSCTL_DIR = "/proc/sys"
KEEP = "keep"  # a node_tuning value that leaves the host's own setting alone


# --- repositories and packages ----------------------------------------------------------------

def repo_dir(version: str) -> str:
    """AMD publishes x.y.0 under x.y: '7.0.0' -> '7.0', '6.2.4' -> '6.2.4'."""
    parts = str(version).split(".")
    return ".".join(parts[:2]) if len(parts) == 3 and parts[2] == "0" else str(version)


def rocm_build(rocm_version: str) -> str:
    """'6.2.4' -> '60204', '7.0' -> '70000': the number AMD puts into its packages' versions."""
    parts = [int(p) for p in str(rocm_version).split(".")] + [0, 0]
    return f"{parts[0]}{parts[1]:02d}{parts[2]:02d}"


def _entries(items: Iterable[Any], default: str) -> list[dict[str, str]]:
    out = []
    for item in items:
        if isinstance(item, Mapping):
            version = item.get("version", default)
            out.append({"name": str(item.get("name")), "version": "" if version is None else str(version)})
        else:
            out.append({"name": str(item), "version": default})
    return out


def rocm_packages(items: Iterable[Any], rocm_version: str) -> list[dict[str, str]]:
    """rocm_packages entries -> [{name, version}]: a bare name is pinned to '<rocm_version>*'.

    apt's version pins understand '*' but not bracket classes, so the pattern stays a plain prefix glob.
    """
    return _entries(items, f"{rocm_version}*")


def tool_packages(items: Iterable[Any], rocm_version: str) -> list[dict[str, str]]:
    """validation_tools entries -> [{name, version}]: a bare name gets AMD's per-release pattern
    '*.<NNNNN>-*' (AMD numbers each package <own version>.<ROCm release>-<build>, e.g. rocblas-clients
    4.2.4.60204-139~22.04); an explicit version '' means any version."""
    return _entries(items, f"*.{rocm_build(rocm_version)}-*")


def version_matches(version: str, pattern: str) -> bool:
    """Whether an installed version is the declared pattern as apt and dnf read a pin: '*' matches anything,
    every other character only itself ('+', '.', '~' included), the whole version; '' is any version."""
    if not pattern:
        return True
    return re.fullmatch(".*".join(map(re.escape, str(pattern).split("*"))), str(version)) is not None


def packages_to_install(wanted: Iterable[Mapping[str, str]], installed: Mapping[str, str]) -> list[dict[str, str]]:
    """The declared {name, version} entries that are not installed ({name: version}) at a matching version."""
    return [dict(item) for item in wanted
            if item["name"] not in installed or not version_matches(installed[item["name"]], item.get("version", ""))]


def apt_spec(item: Mapping[str, str]) -> str:
    """{name, version} -> 'name=version' (apt), or the bare name when any version will do."""
    return f"{item['name']}={item['version']}" if item.get("version") else item["name"]


def dnf_spec(item: Mapping[str, str]) -> str:
    """{name, version} -> 'name-version' (dnf), or the bare name when any version will do."""
    return f"{item['name']}-{item['version']}" if item.get("version") else item["name"]


# --- host tuning --------------------------------------------------------------------------------

def cpu_vendor(processor: Iterable[str] | str) -> str:
    """'amd', 'intel' or 'other' from Ansible's ansible_processor list or /proc/cpuinfo text."""
    text = processor if isinstance(processor, str) else " ".join(str(p) for p in processor)
    if "AuthenticAMD" in text:
        return "amd"
    return "intel" if "GenuineIntel" in text else "other"


def tuning_cmdline(state: Mapping[str, Any], vendor: str) -> list[str]:
    """The kernel parameters node_tuning adds, in the order the role writes them."""
    params = []
    if str(state["node_tuning_pci_realloc"]) != KEEP:
        params.append(f"pci=realloc={state['node_tuning_pci_realloc']}")
    if str(state["node_tuning_iommu"]) != KEEP:
        params.append(f"iommu={state['node_tuning_iommu']}")
    if state["node_tuning_vendor_iommu"] == "auto" and vendor in ("amd", "intel"):
        params.append(f"{vendor}_iommu=on")
    if state["node_tuning_modprobe_blacklist"]:
        params.append("modprobe.blacklist=" + ",".join(str(m) for m in state["node_tuning_modprobe_blacklist"]))
    if str(state["node_tuning_cmdline_thp"]) != KEEP:
        params.append(f"transparent_hugepage={state['node_tuning_cmdline_thp']}")
    return params


def tuning_thp(state: Mapping[str, Any]) -> dict[str, str]:
    """THP knob -> mode to set at run time ('enabled', 'defrag'), leaving out those declared 'keep'."""
    return {knob: str(state[f"node_tuning_thp_{knob}"]) for knob in ("enabled", "defrag")
            if str(state[f"node_tuning_thp_{knob}"]) != KEEP}


def tuning_sysctls(state: Mapping[str, Any]) -> dict[str, str]:
    """sysctl name -> value, kernel.numa_balancing first; whitespace in a value is normalised as the
    kernel prints it back (a tab-separated `net.ipv4.ip_local_port_range` reads '1 2')."""
    out = {}
    if str(state["node_tuning_numa_balancing"]) != KEEP:
        out["kernel.numa_balancing"] = str(state["node_tuning_numa_balancing"])
    for item in state.get("node_tuning_sysctl_extra") or []:
        out[str(item["name"])] = sysctl_value(item["value"])
    return out


def sysctl_path(name: str) -> str:
    """'kernel.numa_balancing' -> '/proc/sys/kernel/numa_balancing'."""
    return f"{SYSCTL_DIR}/{name.replace('.', '/')}"


def thp_path(knob: str) -> str:
    """'enabled' -> '/sys/kernel/mm/transparent_hugepage/enabled'."""
    return f"{THP_DIR}/{knob}"


def sysctl_value(text: str) -> str:
    """A sysctl value as the kernel prints it back, whitespace runs read as one space ('1\t2' -> '1 2')."""
    return " ".join(str(text).split())


def tuning_plan(state: Mapping[str, Any], processor: Iterable[str] | str) -> dict[str, Any]:
    """Everything node_tuning manages on a host with this CPU: {vendor, cmdline, thp, sysctl}."""
    vendor = cpu_vendor(processor)
    return {"vendor": vendor, "cmdline": tuning_cmdline(state, vendor), "thp": tuning_thp(state),
            "sysctl": tuning_sysctls(state)}


def thp_mode(text: str) -> str:
    """The selected THP mode, the word in brackets: 'always [madvise] never' -> 'madvise' ('' if none)."""
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else ""


def runtime_paths(plan: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    """The THP and sysctl files to read: what the plan sets and what the record would put back."""
    knobs = dict.fromkeys([*plan["thp"], *(record.get("thp") or {})])
    names = dict.fromkeys([*plan["sysctl"], *(record.get("sysctl") or {})])
    return [thp_path(k) for k in knobs] + [sysctl_path(n) for n in names]


def runtime_now(contents: Mapping[str, str], plan: Mapping[str, Any],
                record: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """What the host runs now, from the text of the `runtime_paths` files by path: {thp: {knob: mode},
    sysctl: {name: value}}. A file the kernel does not have is left out of sysctl; a THP knob it
    does not have reads ''."""
    knobs = dict.fromkeys([*plan["thp"], *(record.get("thp") or {}), "enabled", "defrag"])
    names = dict.fromkeys([*plan["sysctl"], *(record.get("sysctl") or {})])
    return {"thp": {k: thp_mode(contents.get(thp_path(k), "")) for k in knobs},
            "sysctl": {n: sysctl_value(contents[sysctl_path(n)]) for n in names if sysctl_path(n) in contents}}


def tuning_record(previous: Mapping[str, Any], plan: Mapping[str, Any], now: Mapping[str, Any],
                  cpuidle_states: Iterable[int], cpuidle_disabled: Iterable[str]) -> dict[str, Any]:
    """The record of what the host had before node_tuning first changed it, brought up to date.

    `now` is `runtime_now`'s reading, `cpuidle_disabled` what the disable files of `cpuidle_states`
    read now. The first value seen for a setting is kept until `state: absent` puts it back; later
    runs never overwrite it, so a hand-made change in between is not mistaken for the original.
    """
    record = dict(previous)
    thp = dict(previous.get("thp") or {})
    for knob in plan["thp"]:
        mode = now["thp"].get(knob, "")
        if knob not in thp and mode:
            thp[knob] = mode
    sysctl = dict(previous.get("sysctl") or {})
    for name in plan["sysctl"]:
        found = now["sysctl"].get(name)
        if name not in sysctl and found is not None:
            sysctl[name] = found
    record.update(thp=thp, sysctl=sysctl)
    read = list(cpuidle_disabled)
    if "cpuidle_disabled_before" not in previous and read:
        record["cpuidle_disabled_before"] = [state for state, value in zip(cpuidle_states, read, strict=False)
                                             if str(value).strip() == "1"]
    return record


# The variables that pick GPUs by index: ROCR for all ROCm user space, HIP and CUDA for HIP, GPU_DEVICE_ORDINAL
# for ROCclr (https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html).
VISIBLE_DEVICES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


def visible_devices_problems(env: Mapping[str, Any], listed: int, where: str) -> list[str]:
    """Indices in the visible-device variables of `env` that the node does not list (0..listed-1; a partition
    mode changes the count). UUIDs are not judged; listed 0 (no count declared): nothing is."""
    found = []
    for name in VISIBLE_DEVICES:
        value = env.get(name)
        if not listed or value in (None, ""):
            continue
        beyond = [t.strip() for t in str(value).split(",") if t.strip().isdigit() and int(t.strip()) >= listed]
        if beyond:
            found.append(f"{where} {name}={value}: the node lists GPUs 0-{listed - 1} (validation_gpu_count as "
                         f"its partition mode makes it), not {', '.join(beyond)}")
    return found
