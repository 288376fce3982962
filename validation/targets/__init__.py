"""Per-SKU targets: data/<sku>.yaml, each number with its source; see docs/targets.md."""

from validation.targets.loader import known_skus, list_skus, load_targets
from validation.targets.model import EQUAL, HIGHER_IS_BETTER, LOWER_IS_BETTER, Target, TargetProfile
from validation.targets.partition import normalize_partition
from validation.targets.select import select_sku

__all__ = [
    "EQUAL",
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "Target",
    "TargetProfile",
    "known_skus",
    "list_skus",
    "load_targets",
    "normalize_partition",
    "select_sku",
]
