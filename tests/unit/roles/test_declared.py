"""validation/declared.py: the one reading of the inventory that the roles and the checks share."""

from __future__ import annotations

import yaml

from validation import declared
from validation.spec import ROLES_DIR

TUNING_DEFAULTS = yaml.safe_load((ROLES_DIR / "node_tuning" / "defaults" / "main.yml").read_text())


def test_amd_publishes_x_y_0_under_x_y() -> None:
    assert [declared.repo_dir(v) for v in ("7.0.0", "6.2.4", "6.4", "7.0.2")] == ["7.0", "6.2.4", "6.4", "7.0.2"]


def test_bare_rocm_packages_pin_the_release_and_explicit_versions_stay() -> None:
    items = ["rocm", {"name": "rocm-core"}, {"name": "hipcc", "version": "1.1.1*"}, {"name": "any", "version": ""}]
    assert declared.rocm_packages(items, "6.2.4") == [
        {"name": "rocm", "version": "6.2.4*"}, {"name": "rocm-core", "version": "6.2.4*"},
        {"name": "hipcc", "version": "1.1.1*"}, {"name": "any", "version": ""}]
    assert [declared.apt_spec(p) for p in declared.rocm_packages(items, "6.2.4")] == [
        "rocm=6.2.4*", "rocm-core=6.2.4*", "hipcc=1.1.1*", "any"]
    assert declared.dnf_spec({"name": "rocm", "version": "6.2.4*"}) == "rocm-6.2.4*"


def test_a_version_matches_its_pin_as_apt_reads_it_whole_and_literal_but_for_the_star() -> None:
    """One rule for the role's check after the install, its decision to run apt, and the validation check
    (which used fnmatch, where '?' and '[' are special; the role used a prefix match, where 6.2.4 matched 6.2.40)."""
    assert declared.version_matches("6.2.4.60204-139~22.04", "6.2.4*")
    assert declared.version_matches("5.7.1+dfsg-1", "5.7.1+dfsg-1")
    assert not declared.version_matches("5.7.1+dfsg-10", "5.7.1+dfsg-1")     # whole version, not a prefix
    assert not declared.version_matches("5.7.11", "5.7.1?")                  # '?' is itself
    assert not declared.version_matches("6.4.0.60400-47~22.04", "6.2.4*")
    assert declared.version_matches("anything", "")                          # '' is any version
    wanted = [{"name": "rocminfo", "version": "6.2.4*"}, {"name": "hipcc", "version": "1.0"},
              {"name": "rocm-core", "version": "6.2.4*"}]
    installed = {"rocminfo": "6.2.4.60204-139~22.04", "rocm-core": "6.4.0.60400-47~22.04"}
    assert declared.packages_to_install(wanted, installed) == wanted[1:]
    assert declared.packages_to_install(wanted[:1], installed) == []


def test_tool_packages_carry_amds_release_number() -> None:
    assert declared.rocm_build("6.2.4") == "60204" and declared.rocm_build("7.0") == "70000"
    assert declared.tool_packages(["rocblas-clients"], "6.2.4") == [
        {"name": "rocblas-clients", "version": "*.60204-*"}]


def test_the_default_tuning_plan_is_amds_mi300x_guide_on_an_amd_cpu() -> None:
    plan = declared.tuning_plan(TUNING_DEFAULTS, ["0", "AuthenticAMD", "AMD EPYC 9654 96-Core Processor"])
    assert plan == {"vendor": "amd", "cmdline": ["pci=realloc=off", "iommu=pt", "amd_iommu=on"],
                    "thp": {}, "sysctl": {"kernel.numa_balancing": "0"}}
    assert declared.tuning_plan(TUNING_DEFAULTS, "vendor_id : GenuineIntel")["cmdline"][-1] == "intel_iommu=on"
    assert "amd_iommu=on" not in declared.tuning_plan(TUNING_DEFAULTS, "ARM")["cmdline"]


def test_keep_leaves_a_setting_out_and_sysctl_whitespace_reads_as_the_kernel_prints_it() -> None:
    state = {**TUNING_DEFAULTS, "node_tuning_pci_realloc": "keep", "node_tuning_iommu": "keep",
             "node_tuning_vendor_iommu": "off", "node_tuning_numa_balancing": "keep",
             "node_tuning_thp_enabled": "always", "node_tuning_cmdline_thp": "always",
             "node_tuning_modprobe_blacklist": ["ast", "nouveau"],
             "node_tuning_sysctl_extra": [{"name": "net.ipv4.ip_local_port_range", "value": "1024\t65000"}]}
    assert declared.tuning_cmdline(state, "amd") == ["modprobe.blacklist=ast,nouveau", "transparent_hugepage=always"]
    assert declared.tuning_thp(state) == {"enabled": "always"}
    assert declared.tuning_sysctls(state) == {"net.ipv4.ip_local_port_range": "1024 65000"}
    assert declared.sysctl_path("net.ipv4.ip_local_port_range") == "/proc/sys/net/ipv4/ip_local_port_range"


def test_the_record_keeps_the_first_value_seen_and_never_a_later_hand_made_change() -> None:
    plan = {"thp": {"enabled": "never"}, "sysctl": {"kernel.numa_balancing": "0"}}
    paths = declared.runtime_paths(plan, {})
    assert paths == [f"{declared.THP_DIR}/enabled", "/proc/sys/kernel/numa_balancing"]
    now = declared.runtime_now({paths[0]: "[always] madvise never\n", paths[1]: "1\n"}, plan, {})
    assert now == {"thp": {"enabled": "always", "defrag": ""}, "sysctl": {"kernel.numa_balancing": "1"}}
    first = declared.tuning_record({}, plan, now, [2, 3], ["0", "1"])
    assert first == {"thp": {"enabled": "always"}, "sysctl": {"kernel.numa_balancing": "1"},
                     "cpuidle_disabled_before": [3]}
    later = declared.runtime_now({paths[0]: "always madvise [never]\n", paths[1]: "0\n"}, plan, first)
    assert declared.tuning_record(first, plan, later, [2, 3], ["1", "1"]) == first


def test_the_reading_covers_what_the_record_would_put_back_and_reads_values_as_the_kernel_prints_them() -> None:
    plan = {"thp": {}, "sysctl": {}}
    record = {"thp": {"defrag": "madvise"}, "sysctl": {"net.ipv4.ip_local_port_range": "1024 65000"}}
    paths = declared.runtime_paths(plan, record)
    assert paths == [f"{declared.THP_DIR}/defrag", "/proc/sys/net/ipv4/ip_local_port_range"]
    now = declared.runtime_now({paths[0]: "always defer [madvise] never\n", paths[1]: "1024\t65000\n"}, plan, record)
    assert now["thp"]["defrag"] == "madvise" and now["sysctl"] == {"net.ipv4.ip_local_port_range": "1024 65000"}


def test_the_record_leaves_out_what_the_host_does_not_have() -> None:
    plan = {"thp": {"defrag": "never"}, "sysctl": {"vm.nonexistent": "1"}}
    now = declared.runtime_now({}, plan, {})
    assert now == {"thp": {"defrag": "", "enabled": ""}, "sysctl": {}}
    assert declared.tuning_record({}, plan, now, [], []) == {"thp": {}, "sysctl": {}}
