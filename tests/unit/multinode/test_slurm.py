"""Slurm node state from real `scontrol show node` outputs (tests/fixtures/real/scontrol/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation import slurm
from validation.errors import RocmFleetError

SCONTROL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "scontrol"


@pytest.mark.parametrize(("name", "node", "states", "reason", "drained"), [
    ("unige-bamboo-gpu010-hpc-community-show-node-idle-drain-health-25.11.txt", "gpu010", {"IDLE", "DRAIN"},
     "health_ps___blocked", True),
    ("bih-hpc-med0304-faq-show-node-mixed-drain-psu-20.02.txt", "med0304", {"MIXED", "DRAIN"},
     "deep power-off required for PSU", True),
    ("rtx6000ada-x8-yokota-t8-status-note-show-node-down-not-responding.txt", None, None, "Not responding", False),
])
def test_state_and_reason_of_real_nodes(name: str, node: str | None, states: set[str] | None, reason: str,
                                        drained: bool) -> None:
    text = (SCONTROL / name).read_text()
    found = slurm.parse_show_node(text, node or "x")
    if states is not None:
        assert found.states == states
    assert found.reason == reason and found.drained is drained
    assert not found.drained_by_health            # none of these was drained by the health mode


def test_a_drain_of_our_own_is_recognised() -> None:
    text = ("NodeName=rfhlt-2 State=IDLE+DRAIN Reason=rocm-fleet health: RF-CONFIG-PACKAGE-HOLD "
            "[root@2026-12-03T10:00:00]")
    node = slurm.parse_show_node(text, "rfhlt-2")
    assert node.drained_by_health and node.reason == "rocm-fleet health: RF-CONFIG-PACKAGE-HOLD"


def test_no_state_is_no_verdict() -> None:
    with pytest.raises(RocmFleetError, match="no State="):
        slurm.parse_show_node("Node gpu999 not found\n", "gpu999")
