"""Every GPU and every link keeps up with its siblings on the same node.

A published target says what a GPU of this SKU should reach; the node's own GPUs say what this
node's GPUs do reach. After every other check of the run (the plugin orders this one last but
for the idle post-flight), each per-GPU and per-link number is compared with the node's robust
median: one GPU 20 % behind seven healthy ones fails with RF-SIBLING-GAP naming it, its value, the
median and the gap, even where no published number exists. The allowed gap and its basis are in
validation/peers.py. Numbers marked invalid or measured while the GPU was busy do not count.
"""

from __future__ import annotations

import pytest

from validation import peers
from validation.checks.measuring import NodeMeasuring
from validation.checks.outcome import fail_on_verdicts
from validation.records import Status

pytestmark = [pytest.mark.quick, pytest.mark.gpu]


def test_every_gpu_and_link_keeps_up_with_its_siblings(measuring_state: NodeMeasuring) -> None:
    """Every GPU and link is within the allowed gap of the node's other GPUs and links."""
    verdicts = peers.judge_siblings(measuring_state.node, measuring_state.measurements)
    measuring_state.note_siblings({v.metric for v in verdicts if v.status in (Status.PASS, Status.FAIL)},
                                  peers.usable)
    if not verdicts:
        pytest.skip("no per-GPU or per-link throughput or latency was measured in this run")
    fail_on_verdicts(verdicts)
    judged = [v for v in verdicts if v.status is Status.PASS]
    if not judged:
        pytest.skip(verdicts[0].reason + f" (and {len(verdicts) - 1} more metrics alike)"
                    if len(verdicts) > 1 else verdicts[0].reason)
