"""Typed target records: one `Target` per metric, grouped in a `TargetProfile` per SKU.

A target is a published number with its provenance, never a data-sheet peak. The threshold is
derived from it: for `higher_is_better` the floor is value × (1 − tolerance); for
`lower_is_better` the ceiling is value × (1 + tolerance); `equal` means exactly the value.
`warn` is a band on the passing side of the threshold: a measurement that clears the floor by
less than `warn` (a fraction of the floor, e.g. 0.05 = Azure NHC's expected..1.05×expected)
is WARN. A `record_only` target has no threshold: it is measured and reported, never judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HIGHER_IS_BETTER = "higher_is_better"
LOWER_IS_BETTER = "lower_is_better"
EQUAL = "equal"
DIRECTIONS = (HIGHER_IS_BETTER, LOWER_IS_BETTER, EQUAL)

# Rounding the derived thresholds keeps 581 × 0.95 at 551.95 instead of 551.9499999999999,
# so a measurement exactly at the published floor passes.
_THRESHOLD_DIGITS = 9


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One metric's target. `value` is a str only for `equal` identifiers (a PCI device id)."""

    metric: str
    value: float | str | None
    unit: str
    tolerance: float = 0.0
    warn: float = 0.0
    direction: str = HIGHER_IS_BETTER
    source: str
    record_only: bool = False
    note: str = ""

    @property
    def threshold(self) -> float | str | None:
        """The pass/fail line: floor, ceiling or the exact value; None when record-only."""
        if self.record_only or self.value is None:
            return None
        if isinstance(self.value, str) or self.direction == EQUAL:
            return self.value
        if self.direction == HIGHER_IS_BETTER:
            return round(self.value * (1 - self.tolerance), _THRESHOLD_DIGITS)
        return round(self.value * (1 + self.tolerance), _THRESHOLD_DIGITS)

    @property
    def warn_line(self) -> float | None:
        """Where the WARN band ends on the passing side; None without a warn band."""
        line = self.threshold
        if not self.warn or line is None or isinstance(line, str) or self.direction == EQUAL:
            return None
        if self.direction == HIGHER_IS_BETTER:
            return round(line * (1 + self.warn), _THRESHOLD_DIGITS)
        return round(line * (1 - self.warn), _THRESHOLD_DIGITS)


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetProfile:
    """The targets for one SKU (and variant), GPU count and partition mode.

    `sku` is the data file's SKU ("mi300x"); `variant` names a variant inside it ("mi308x")
    or is None for the base. `name` is what `select_sku` returns and `load_targets` accepts.
    `targets` maps metric name -> Target; treat it as read-only.
    """

    sku: str
    variant: str | None
    gpu_count: int | None
    partition: str | None
    targets: dict[str, Target]
    vendor: str = ""
    description: str = ""
    pci_device_ids: tuple[str, ...] = ()
    source_file: str = ""
    overridden: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.variant or self.sku

    def get(self, metric: str) -> Target | None:
        return self.targets.get(metric)

    def __contains__(self, metric: object) -> bool:
        return metric in self.targets
