"""A declared C-state that the CPU does not have: the check skips naming the driver's states, and
node_tuning's filter says the same sentence.

No machine here has cpuidle, so the KVM guest's listing is built from the kernel source
(tests/fixtures/derived/cpuidle/SOURCES.md) and the host below is a stand-in that answers from it:
the real thing (a haltpoll VM) cannot exist on this machine. The lab test in
tests/integration/test_newcomer.py runs the same check and role on a real host over a sysfs tree
with these states.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest
from recorded_host import FIXTURES, RecordedFile

from validation import cstates
from validation.checks import test_node_tuning as tuning_checks
from validation.checks.outcome import CheckFailure

ROOT = Path(__file__).resolve().parents[3]
HALTPOLL = (FIXTURES / "derived" / "cpuidle" / "kvm-guest-haltpoll-listing.txt").read_text()


@dataclass
class _Out:
    rc: int
    stdout: str
    stderr: str = ""


class CpuidleHost:
    """Answers the check's two commands: the state listing, and the per-CPU `disable` switches
    (state index -> 'cpu0:1' style lines; a state the listing lacks reads as grep's error)."""

    def __init__(self, listing: str, switches: dict[int, dict[int, str]]) -> None:
        self.listing, self.switches = listing, switches

    def file(self, path: str) -> RecordedFile:
        return RecordedFile(path == tuning_checks.CPUIDLE_DIR)

    def run(self, command: str, *args: str) -> _Out:
        if command == cstates.LISTING:
            return _Out(0, self.listing)
        state = int(args[0])
        if state not in self.switches:
            return _Out(2, "", f"grep: /sys/devices/system/cpu/cpu0/cpuidle/state{state}/disable: "
                               "No such file or directory")
        return _Out(0, "".join(f"/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}/disable:{value}\n"
                               for cpu, value in self.switches[state].items()))


def _spec(states: list[int]) -> dict:
    return {"node_tuning_state": "present", "node_tuning_cpuidle_disabled_states": states}


def test_the_haltpoll_listing_reads_as_driver_and_two_states() -> None:
    offered = cstates.parse_listing(HALTPOLL)
    assert offered.driver == "haltpoll"
    assert offered.states == ((0, "POLL"), (1, "haltpoll idle"))
    assert cstates.absent([2], offered) == [2]
    assert cstates.absent_message([1], offered) == ""


def test_a_declared_state_the_cpu_lacks_is_a_skip_that_lists_the_drivers_states() -> None:
    host = CpuidleHost(HALTPOLL, {0: {0: "0", 1: "0"}, 1: {0: "0", 1: "0"}})
    with pytest.raises(pytest.skip.Exception) as skipped:
        tuning_checks.test_cpu_idle_states_are_disabled(host, _spec([2]))
    assert str(skipped.value) == ("declared state 2 does not exist on this CPU: cpuidle driver haltpoll offers "
                                  "states 0 (POLL), 1 (haltpoll idle); nothing to disable there "
                                  "(node_tuning_cpuidle_disabled_states names cpuidle state indices)")


def test_the_states_that_exist_are_still_checked_before_the_skip() -> None:
    enabled_on_cpu1 = CpuidleHost(HALTPOLL, {1: {0: "1", 1: "0"}})
    with pytest.raises(CheckFailure, match=r"state1: expected disabled on every CPU, found enabled on cpu1"):
        tuning_checks.test_cpu_idle_states_are_disabled(enabled_on_cpu1, _spec([1, 2]))
    disabled = CpuidleHost(HALTPOLL, {1: {0: "1", 1: "1"}})
    with pytest.raises(pytest.skip.Exception, match="declared state 2 does not exist"):
        tuning_checks.test_cpu_idle_states_are_disabled(disabled, _spec([1, 2]))


def test_a_state_the_cpu_has_is_judged_as_before() -> None:
    bare_metal = ("/sys/devices/system/cpu/cpuidle/current_driver:acpi_idle\n"
                  + "".join(f"/sys/devices/system/cpu/cpu0/cpuidle/state{i}/name:{n}\n"
                            for i, n in enumerate(["POLL", "C1", "C2", "C3"])))
    # disabled everywhere: passes
    tuning_checks.test_cpu_idle_states_are_disabled(CpuidleHost(bare_metal, {2: {0: "1", 1: "1"}}), _spec([2]))
    with pytest.raises(CheckFailure, match="state2: expected disabled on every CPU, found enabled on cpu0"):
        tuning_checks.test_cpu_idle_states_are_disabled(CpuidleHost(bare_metal, {2: {0: "0", 1: "1"}}), _spec([2]))


def test_the_role_says_the_same_sentence_as_the_check() -> None:
    path = ROOT / "plugins" / "filter" / "rocm_fleet.py"
    spec = importlib.util.spec_from_file_location("rocm_fleet_filters", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    role_filter = module.FilterModule().filters()["cstates_absent"]
    host = CpuidleHost(HALTPOLL, {})
    with pytest.raises(pytest.skip.Exception) as skipped:
        tuning_checks.test_cpu_idle_states_are_disabled(host, _spec([2]))
    assert role_filter(HALTPOLL, [2]) == str(skipped.value)
    assert role_filter(HALTPOLL, [1]) == ""


def test_the_role_reads_the_listing_files_by_glob_and_says_the_same_sentence() -> None:
    """node_tuning reads the listing's files with rocm_fleet.fleet.read_paths (one module run) and
    passes their text by path: the same sentence as from LISTING's own output."""
    import fnmatch

    path = ROOT / "plugins" / "filter" / "rocm_fleet.py"
    spec = importlib.util.spec_from_file_location("rocm_fleet_filters", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    filters = module.FilterModule().filters()
    globs = filters["cpuidle_globs"]([2])
    read = {}
    for line in HALTPOLL.splitlines():
        file, _, text = line.partition(":")
        assert any(fnmatch.fnmatch(file, pattern) for pattern in globs), file
        read[file] = text + "\n"
    # a switch file and the record are read too and must not count as states
    read["/sys/devices/system/cpu/cpu0/cpuidle/state1/disable"] = "0\n"
    read["/etc/ansible/facts.d/rocm_fleet_tuning.fact"] = '{"thp": {}}\n'
    assert filters["cstates_absent"](read, [2]) == filters["cstates_absent"](HALTPOLL, [2]) != ""
    assert filters["cstates_absent"](read, [1]) == ""
    assert globs[-1] == "/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state2/disable"
