"""Per-node state of one measuring run: were its GPUs busy, and what was measured on them.

The idle pre-flight (test_gpu_idle.py) fills it; the plugin skips every measuring check of a node
whose GPUs are busy unless the operator allowed it (`--rf-allow-busy`, which marks each number
`measured_while_busy`); the post-flight marks the numbers of a GPU that became busy during the
run `valid: false`; the sibling check reads the numbers. Measurement entries are shared with the
node's results document, so a mark lands in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from validation.idle import names_gpu
from validation.results.node import NodeResults

# The checks that look at the GPUs' activity or at the numbers, rather than measure.
PREFLIGHT = "test_gpus_are_idle_before_measuring"
SIBLINGS = "test_every_gpu_and_link_keeps_up_with_its_siblings"
POSTFLIGHT = "test_gpus_stayed_idle_while_measuring"
ORDER = {PREFLIGHT: 0, SIBLINGS: 2, POSTFLIGHT: 3}          # everything else: 1
MEASURING_TIERS = ("quick", "acceptance")


@dataclass(slots=True)
class NodeMeasuring:
    node: str
    allow_busy: bool
    results: NodeResults | None = None
    checked: bool = False                                     # the pre-flight read the GPUs
    unreadable: str = ""                                      # why the pre-flight could not read them
    busy: dict[str, str] = field(default_factory=dict)       # "gpu0" -> why, found before measuring
    measurements: list[dict[str, Any]] = field(default_factory=list)

    def skip_reason(self) -> str | None:
        """Why a measuring check must not run on this node now, or None."""
        if not self.busy or self.allow_busy:
            return None
        gpus = ", ".join(sorted(self.busy))
        return (f"not measured: {gpus} busy with someone else's work (RF-GPU-BUSY, see "
                f"{PREFLIGHT}); pass --allow-busy to measure anyway")

    def add(self, entry: dict[str, Any]) -> None:
        """A new measurement of this run: flagged when taken on a GPU found busy, then kept."""
        if self.busy and self.allow_busy and not entry["metric"].startswith("idle_") \
                and names_gpu(str(entry.get("subject", "")), self.busy):
            entry["measured_while_busy"] = True
        self.measurements.append(entry)
        if self.results is not None:
            self.results.add_measurement(entry)

    def mark(self, gpus: dict[str, str], *, invalid: bool) -> int:
        """Mark this run's numbers taken on `gpus` (subject -> why): invalid, or measured while busy.
        Returns how many numbers were marked."""
        count = 0
        for entry in self.measurements:
            if entry["metric"].startswith("idle_") or entry.get("value") is None:
                continue
            if names_gpu(str(entry.get("subject", "")), gpus):
                if invalid:
                    entry["valid"] = False
                    entry["invalid_reason"] = "; ".join(sorted(set(gpus.values())))[:500]
                else:
                    entry["measured_while_busy"] = True
                count += 1
        if count and self.results is not None:
            self.results.write()
        return count
