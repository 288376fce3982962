"""Multi-node all_reduce bus bandwidth targets, by SKU, node count and GPUs per node. Pure.

Only numbers a public source (named in each row) publishes for a node count
are thresholds; every other combination is record-only: measured and reported, never judged.
The SKU data files in validation/targets/data/ hold single-node targets; multi-node numbers
depend on the network as much as on the GPU, so they live here, keyed by node count.
"""

from __future__ import annotations

from dataclasses import dataclass

from validation.targets.model import EQUAL, Target

GIB = 1 << 30
METRIC = "multinode_allreduce_busbw_gb_s"
WRONG_METRIC = "collective_wrong_count"
IN_PLACE = "in_place"
OUT_OF_PLACE = "out_of_place"


@dataclass(frozen=True, slots=True, kw_only=True)
class MultinodeTarget:
    """Which rccl-tests number is judged (size and half of the row) and against what."""

    target: Target
    size_bytes: int
    place: str            # in_place | out_of_place
    nodes: int
    gpus_per_node: int


# (sku, nodes, gpus per node) -> (value GB/s, size, place, source)
_PUBLISHED: dict[tuple[str, int, int], tuple[float, int, str, str]] = {
    ("mi300x", 2, 8): (
        304, 8 * GIB, IN_PLACE,
        "AMD system acceptance network validation, "
        "https://github.com/ROCm/system-acceptance-docs/blob/23e73127/docs/network/validation.md "
        "(RCCL all_reduce 2 nodes, 16 GPUs, >= 304 GB/s); CVS's expected 330 GB/s @ 8 GiB 'for 2 node "
        "cluster' (https://github.com/ROCm/cvs/blob/dddd9143/cvs/input/config_file/rccl/rccl_config.json) "
        "is the same order"),
    ("mi300x", 4, 8): (
        316, 8 * GIB, OUT_OF_PLACE,
        "CVS's older config, https://github.com/ROCm/cvs/blob/c74430cd/input/health/mi300_config.json "
        "(4 nodes all_reduce out-of-place 316 GB/s @ 8 GiB)"),
}

WRONG_TARGET = Target(
    metric=WRONG_METRIC, value=0, unit="count", direction=EQUAL,
    source="CVS RCCL schema, https://github.com/ROCm/cvs/blob/dddd9143/cvs/schema/rccl.py (any non-zero "
           "rccl-tests #wrong is 'SEVERE DATA CORRUPTION')")


def multinode_target(sku: str, nodes: int, gpus_per_node: int) -> MultinodeTarget:
    """The target for an all_reduce over `nodes` x `gpus_per_node` GPUs of `sku`; record-only when none."""
    key = (sku.lower(), nodes, gpus_per_node)
    if key in _PUBLISHED:
        value, size, place, source = _PUBLISHED[key]
        target = Target(metric=METRIC, value=value, unit="GB/s", source=source)
        return MultinodeTarget(target=target, size_bytes=size, place=place, nodes=nodes,
                               gpus_per_node=gpus_per_node)
    known = ", ".join(f"{s} {n}x{g}" for s, n, g in sorted(_PUBLISHED))
    target = Target(metric=METRIC, value=None, unit="GB/s", record_only=True,
                    source=f"no published multi-node number for {sku} at {nodes} nodes x {gpus_per_node} GPUs "
                           f"(published: {known}; each published row names its source in "
                           f"validation/multinode/targets.py)")
    return MultinodeTarget(target=target, size_bytes=8 * GIB, place=IN_PLACE, nodes=nodes,
                           gpus_per_node=gpus_per_node)
