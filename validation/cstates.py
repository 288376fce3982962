"""CPU idle (C-) states: what a host's cpuidle driver offers, and what a declared list means there.

roles/node_tuning (filter `rocm_fleet.fleet.cstates_absent`) and the check test_cpu_idle_states_are_disabled
read the same listing through these functions, so the role and the check say the same words about
a declared state that the CPU does not have. Kernel drivers differ in how many states they offer:
intel_idle and acpi_idle on bare metal usually 3 or more, the haltpoll driver of KVM guests
(cloud VMs) only 0 (POLL) and 1 ("haltpoll idle"); see the kernel's drivers/cpuidle/cpuidle-haltpoll.c.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CPUIDLE = "/sys/devices/system/cpu/cpuidle"
CPU0 = "/sys/devices/system/cpu/cpu0/cpuidle"
# `grep -H .` prints "path:content" for the driver and every state's name, one line each.
LISTING = f"grep -H . {CPUIDLE}/current_driver {CPU0}/state[0-9]*/name"
# The same files as globs, for roles/node_tuning's one read of the host (rocm_fleet.fleet.read_paths).
LISTING_GLOBS = (f"{CPUIDLE}/current_driver", f"{CPU0}/state[0-9]*/name")
_STATE = re.compile(r"/state(\d+)/name:(.*)$")
_DRIVER = re.compile(r"/current_driver:(.*)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Offered:
    driver: str | None                   # "intel_idle", "acpi_idle", "haltpoll", ...; None when unreadable
    states: tuple[tuple[int, str], ...]  # (index, name), by index

    @property
    def indices(self) -> frozenset[int]:
        return frozenset(index for index, _ in self.states)

    def describe(self) -> str:
        """"cpuidle driver haltpoll offers states 0 (POLL), 1 (haltpoll idle)"."""
        states = ", ".join(f"{index} ({name})" for index, name in self.states) or "none"
        return f"cpuidle driver {self.driver or 'unknown'} offers states {states}"


def parse_listing(text: str) -> Offered:
    """The output of LISTING (lines of other files, errors and blanks are passed over)."""
    driver, states = None, {}
    for line in text.splitlines():
        if match := _STATE.search(line):
            states[int(match[1])] = match[2].strip()
        elif match := _DRIVER.search(line):
            driver = match[1].strip() or None
    return Offered(driver=driver, states=tuple(sorted(states.items())))


def listing_of(contents: Mapping[str, str]) -> str:
    """LISTING's output rebuilt from files read by path (other files are passed over by parse_listing)."""
    return "".join(f"{path}:{text.strip()}\n" for path, text in contents.items() if text.strip())


def switch_glob(state: int | str) -> str:
    """The disable switch of one idle state on every CPU."""
    return f"/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state{int(state)}/disable"


def absent(declared: Iterable[int | str], offered: Offered) -> list[int]:
    """Declared state indices that the driver does not offer, in order."""
    return sorted({int(s) for s in declared} - offered.indices)


def absent_message(declared: Iterable[int | str], offered: Offered) -> str:
    """'' when every declared state exists; otherwise one sentence naming the missing ones and the
    driver's states, for the role's output and the check's SKIP reason."""
    missing = absent(declared, offered)
    if not missing:
        return ""
    noun, verb = ("state", "does") if len(missing) == 1 else ("states", "do")
    return (f"declared {noun} {', '.join(map(str, missing))} {verb} not exist on this CPU: {offered.describe()}; "
            "nothing to disable there (node_tuning_cpuidle_disabled_states names cpuidle state indices)")
