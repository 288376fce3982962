"""The scheduler offers the GPUs the node lists (smoke tier): where slurmd runs on the node and Slurm offers
it GPU GRES at all, `scontrol show node` reports `Gres=gpu[:TYPE]:N` with N the declared GPU count as the
partition mode makes it (validation/spec.py:with_partition_counts; CPX: 8 per MI300X). roles/slurm_gres
writes what Slurm reads; this proves Slurm took it. The node's Slurm name is its short host name, as slurmd
takes it by default.

Spec variables: validation_gpu_count (and amdgpu_partition_compute/_memory through the spec).
"""

from __future__ import annotations

from typing import Any

import pytest

from validation import slurm, slurm_gres
from validation.checks.outcome import expect
from validation.checks.tools import run_tool
from validation.errors import RocmFleetError

pytestmark = [pytest.mark.smoke]


def test_slurm_offers_the_gpus_the_node_lists(host: Any, spec: dict) -> None:
    """scontrol shows this node's Gres=gpu count equal to the GPUs it lists."""
    declared = spec.get("validation_gpu_count")
    if not declared:
        pytest.skip("spec declares no GPUs")
    if not host.exists("scontrol") or not host.service("slurmd").is_running:
        pytest.skip("no slurmd runs on this node: no scheduler to offer its GPUs")
    name = host.run("hostname -s").stdout.strip()
    try:
        slurm.check_node(name)                 # a host name is hostile too: no option, no shell word
    except RocmFleetError as exc:
        pytest.skip(str(exc))
    shown = run_tool(host, f"scontrol --oneliner show node {name}", timeout_s=20)
    if shown.rc != 0:
        pytest.skip(f"Slurm knows no node {name!r} ({(shown.stderr or shown.stdout).strip()[:120]}): "
                    "its NodeName differs from the host name")
    gres = slurm_gres.shown_gres(shown.stdout)
    offered = slurm_gres.gpu_count(gres)
    if not offered:
        # a site may schedule whole nodes without GPU GRES: nothing offered is nothing to judge, not a pass
        pytest.skip(f"Slurm offers {name} no GPU GRES (Gres={gres or '(null)'}): it schedules the node without "
                    "them; roles/slurm_gres declares them")
    mode = spec.get("validation_partition") or ""
    expect(offered == int(declared), "RF-SLURM-GRES",
           f"Slurm offers {name} Gres={gres or '(null)'}, the node lists {declared} GPUs"
           + (f" in {mode}" if mode else "") + f" ({spec.get('validation_physical_gpu_count') or declared} held)")
