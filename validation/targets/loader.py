"""Load per-SKU target profiles from validation/targets/data/<sku>.yaml.

A data file holds one SKU's base metrics, optional `variants` (other selectable SKUs that differ
in a few metrics, e.g. mi308x inside mi300x.yaml) and optional `partitions` (compute/memory
partition modes). A profile is built in this order, each step a partial overlay of the last:

    base metric -> variant -> by_gpu_count[N] -> partition -> declared gpu_count -> overrides

Everything is checked when a file is read: unknown keys, missing sources, tolerance outside
[0, 1), a warn band without a threshold and duplicate YAML keys raise TargetError naming the
file and the key. Any overlay that moves a threshold (value, tolerance, direction, record_only)
must carry its own `source`.
"""

from __future__ import annotations

import copy
import functools
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from validation.errors import TargetError, UnknownSkuError
from validation.targets.model import DIRECTIONS, EQUAL, Target, TargetProfile
from validation.targets.partition import matching_modes, normalize_partition

log = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"
COMMON_FILE = Path(__file__).resolve().parent / "common.yaml"   # metrics every SKU has unless it overrides them
SCHEMA_VERSION = 1
INVENTORY_VARIABLE = "validation_target_sku"

_FILE_KEYS = frozenset({"schema_version", "sku", "vendor", "description", "selection",
                        "default_partition", "partitions", "metrics", "variants", "anchors"})
_SELECTION_KEYS = frozenset({"pci_device_ids", "gpu_count", "source"})
_VARIANT_KEYS = frozenset({"description", "selection", "metrics"})
_PARTITION_KEYS = frozenset({"source", "applies_to", "metrics"})
_TARGET_FIELDS = frozenset({"value", "unit", "tolerance", "warn", "direction", "source",
                            "record_only", "note"})
_METRIC_KEYS = _TARGET_FIELDS | {"by_gpu_count"}
# Changing any of these moves the pass/fail line, so the change must say where it comes from.
_THRESHOLD_FIELDS = frozenset({"value", "tolerance", "direction", "record_only"})


@dataclass(frozen=True, slots=True, kw_only=True)
class SkuEntry:
    """One selectable SKU name (a file's base or one of its variants), for listing and selection."""

    name: str
    sku: str
    variant: str | None
    vendor: str
    description: str
    pci_device_ids: tuple[str, ...]
    gpu_count: int | None
    partitions: tuple[str, ...]
    default_partition: str | None
    source_file: str


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster


class _StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader that rejects duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# ---------------------------------------------------------------------------------------------
# public API


def known_skus(*, data_dir: Path | None = None) -> tuple[str, ...]:
    """Every selectable SKU name (bases and variants), sorted."""
    return tuple(sorted(e.name for e in list_skus(data_dir=data_dir)))


def list_skus(*, data_dir: Path | None = None) -> tuple[SkuEntry, ...]:
    """One entry per selectable SKU name, validating every data file on the way."""
    entries: list[SkuEntry] = []
    for path in _data_files(data_dir):
        raw = _read_file(path)
        entries.append(_entry(raw, None, path))
        for variant in raw.get("variants") or {}:
            entries.append(_entry(raw, variant, path))
    names = [e.name for e in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise TargetError(f"SKU names defined twice across {data_dir or DATA_DIR}: {', '.join(duplicates)}; "
                          "rename one variant")
    return tuple(sorted(entries, key=lambda e: e.name))


def load_targets(
    sku: str,
    *,
    gpu_count: int | None = None,
    partition: str | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    data_dir: Path | None = None,
) -> TargetProfile:
    """The target profile for `sku` (a name from `known_skus()`, case-insensitive).

    gpu_count: the node's declared GPU count; None uses the file's nominal count. It picks the
        `by_gpu_count` values of count-dependent metrics and becomes the gpu_count target.
    partition: "COMPUTE/MEMORY" in any spelling ("CPX/NPS4", "NPS1, SPX"); None = the default mode.
    overrides: metric -> partial target fields from inventory group/host vars. A change to value,
        tolerance, direction or record_only must carry its own `source`; a new metric must be
        complete.
    """
    entries = {e.name: e for e in list_skus(data_dir=data_dir)}
    wanted = sku.strip().lower()
    if wanted not in entries:
        raise UnknownSkuError(_unknown_sku_message(f"no target profile named {sku!r}", entries.values(),
                                                   data_dir))
    entry = entries[wanted]
    path = Path(entry.source_file)
    raw = _read_file(path)
    where = str(path)

    if gpu_count is not None and (isinstance(gpu_count, bool) or not isinstance(gpu_count, int)
                                  or gpu_count < 1):
        raise TargetError(f"{where}: gpu_count {gpu_count!r} must be a positive integer")
    count = gpu_count if gpu_count is not None else entry.gpu_count
    mode = _resolve_partition(partition, entry, where)

    metrics = _compose(raw, entry.variant, count, mode, where)
    if gpu_count is not None and "gpu_count" in metrics:
        metrics["gpu_count"] = _declared_gpu_count(metrics["gpu_count"], gpu_count)

    overridden: list[str] = []
    for name, partial in (overrides or {}).items():
        if not isinstance(partial, Mapping):
            raise TargetError(f"overrides.{name}: expected a mapping of target fields, got {partial!r}")
        metrics[name] = _override(metrics.get(name), dict(partial), f"overrides.{name}")
        overridden.append(name)

    if overridden:
        log.debug("%s: inventory overrides applied to %s", entry.name, ", ".join(overridden))
    targets = {name: _build_target(name, spec, f"{where}: metric {name}") for name, spec in metrics.items()}
    return TargetProfile(
        sku=entry.sku, variant=entry.variant, gpu_count=count, partition=mode, targets=targets,
        vendor=entry.vendor, description=entry.description, pci_device_ids=entry.pci_device_ids,
        source_file=entry.source_file, overridden=tuple(overridden))


def unknown_sku_message(what: str, *, data_dir: Path | None = None) -> str:
    """The message an UnknownSkuError carries: what failed, the known SKUs, and what to do."""
    return _unknown_sku_message(what, list_skus(data_dir=data_dir), data_dir)


# ---------------------------------------------------------------------------------------------
# reading and validating files


def _data_files(data_dir: Path | None) -> list[Path]:
    directory = data_dir or DATA_DIR
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise TargetError(f"no target files (*.yaml) in {directory}; the package data is missing")
    return files


def _read_file(path: Path) -> dict[str, Any]:
    """The validated contents of one data file (memoised on the file's size and mtime)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise TargetError(f"{path}: cannot read target file: {exc}") from exc
    return copy.deepcopy(_read_file_cached(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _read_file_cached(path_text: str, _mtime_ns: int, _size: int) -> dict[str, Any]:
    path = Path(path_text)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        raise TargetError(f"{path}: not valid YAML: {exc}; fix the file") from exc
    except OSError as exc:
        raise TargetError(f"{path}: cannot read target file: {exc}") from exc
    where = str(path)
    if not isinstance(raw, dict):
        raise TargetError(f"{where}: expected a mapping at the top level")
    _check_keys(raw, _FILE_KEYS, where)
    for key in ("schema_version", "sku", "vendor", "selection", "metrics"):
        if key not in raw:
            raise TargetError(f"{where}: missing required key {key!r}")
    if raw["schema_version"] != SCHEMA_VERSION:
        raise TargetError(f"{where}: schema_version {raw['schema_version']!r} is not supported; "
                          f"this rocm-fleet reads schema_version {SCHEMA_VERSION}")
    if raw["sku"] != path.stem:
        raise TargetError(f"{where}: sku {raw['sku']!r} must match the file name {path.stem!r}")
    raw["vendor"] = _norm_hex(raw["vendor"], f"{where}: vendor")
    _check_selection(raw["selection"], f"{where}: selection")
    if not isinstance(raw["metrics"], dict) or not raw["metrics"]:
        raise TargetError(f"{where}: metrics must be a non-empty mapping")
    for name, spec in raw["metrics"].items():
        _check_metric_spec(name, spec, f"{where}: metrics.{name}", complete=True)

    partitions = raw.get("partitions") or {}
    if not isinstance(partitions, dict):
        raise TargetError(f"{where}: partitions must be a mapping of COMPUTE/MEMORY -> settings")
    canonical: dict[str, Any] = {}
    for mode, spec in partitions.items():
        key = normalize_partition(str(mode))
        if key != mode:
            raise TargetError(f"{where}: partitions.{mode}: write the mode as {key!r}")
        if not isinstance(spec, dict):
            raise TargetError(f"{where}: partitions.{mode}: expected a mapping")
        _check_keys(spec, _PARTITION_KEYS, f"{where}: partitions.{mode}")
        _require_source(spec, f"{where}: partitions.{mode}")
        for name, partial in (spec.get("metrics") or {}).items():
            _check_metric_spec(name, partial, f"{where}: partitions.{mode}.metrics.{name}",
                               complete=name not in raw["metrics"])
        canonical[key] = spec
    raw["partitions"] = canonical
    default = raw.get("default_partition")
    if default is not None and default not in canonical:
        raise TargetError(f"{where}: default_partition {default!r} is not one of partitions "
                          f"({', '.join(canonical) or 'none'})")

    variants = raw.get("variants") or {}
    if not isinstance(variants, dict):
        raise TargetError(f"{where}: variants must be a mapping of name -> settings")
    for name, spec in variants.items():
        vwhere = f"{where}: variants.{name}"
        if not isinstance(spec, dict):
            raise TargetError(f"{vwhere}: expected a mapping")
        if name != str(name).lower():
            raise TargetError(f"{vwhere}: variant names are lower case")
        _check_keys(spec, _VARIANT_KEYS, vwhere)
        if "selection" not in spec:
            raise TargetError(f"{vwhere}: missing required key 'selection'")
        _check_selection(spec["selection"], f"{vwhere}.selection")
        for metric, partial in (spec.get("metrics") or {}).items():
            _check_metric_spec(metric, partial, f"{vwhere}.metrics.{metric}",
                               complete=metric not in raw["metrics"])
    for mode, spec in canonical.items():
        for applies in spec.get("applies_to") or ():
            if applies != raw["sku"] and applies not in variants:
                raise TargetError(f"{where}: partitions.{mode}.applies_to names unknown SKU {applies!r}")
    # Build every combination once so a bad overlay fails now, not on the node that needs it.
    _validate_combinations(raw, path)
    return raw


def _validate_combinations(raw: dict[str, Any], path: Path) -> None:
    where = str(path)
    for variant in [None, *(raw.get("variants") or {})]:
        entry = _entry(raw, variant, path)
        counts = {entry.gpu_count}
        for spec in raw["metrics"].values():
            counts.update((spec.get("by_gpu_count") or {}).keys())
        for mode in (None, *entry.partitions):
            for count in counts:
                for name, spec in _compose(raw, variant, count, mode, where).items():
                    _build_target(name, spec, f"{where}: metric {name} ({variant or raw['sku']}, "
                                              f"gpu_count {count}, partition {mode})")


def _compose(raw: Mapping[str, Any], variant: str | None, count: int | None, mode: str | None,
             where: str) -> dict[str, dict[str, Any]]:
    """common -> base -> variant -> by_gpu_count[count] -> partition, as plain target-field dicts."""
    metrics: dict[str, dict[str, Any]] = {name: dict(spec) for name, spec in _common_metrics().items()}
    metrics.update({name: dict(spec) for name, spec in raw["metrics"].items()})
    if variant is not None:
        for name, partial in (raw["variants"][variant].get("metrics") or {}).items():
            metrics[name] = _overlay(metrics.get(name), partial,
                                     f"{where}: variants.{variant}.metrics.{name}")
    for name, spec in metrics.items():
        table = spec.pop("by_gpu_count", None) or {}
        if count is not None and count in table:
            metrics[name] = _overlay(spec, table[count], f"{where}: metrics.{name}.by_gpu_count.{count}")
    if mode is not None:
        for name, partial in (raw["partitions"][mode].get("metrics") or {}).items():
            metrics[name] = _overlay(metrics.get(name), partial, f"{where}: partitions.{mode}.metrics.{name}")
    return metrics


@functools.cache
def _common_metrics() -> dict[str, dict[str, Any]]:
    """The metrics of validation/targets/common.yaml, validated like a SKU file's."""
    where = str(COMMON_FILE)
    try:
        raw = yaml.load(COMMON_FILE.read_text(encoding="utf-8"), Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise TargetError(f"{where}: cannot read the common targets: {exc}; the package data is damaged") from exc
    if not isinstance(raw, dict) or raw.get("schema_version") != SCHEMA_VERSION or not isinstance(
            raw.get("metrics"), dict):
        raise TargetError(f"{where}: expected schema_version {SCHEMA_VERSION} and a metrics mapping")
    _check_keys(raw, frozenset({"schema_version", "metrics"}), where)
    for name, spec in raw["metrics"].items():
        _check_metric_spec(name, spec, f"{where}: metrics.{name}", complete=True)
    return raw["metrics"]


def _check_keys(mapping: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in mapping if k not in allowed)
    if unknown:
        raise TargetError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                          f"allowed: {', '.join(sorted(allowed))}")


def _require_source(spec: Mapping[str, Any], where: str) -> None:
    source = spec.get("source")
    if not isinstance(source, str) or not source.strip():
        raise TargetError(f"{where}: missing 'source' (who published the number, file/URL, which statistic)")


def _check_selection(selection: Any, where: str) -> None:
    if not isinstance(selection, dict):
        raise TargetError(f"{where}: expected a mapping")
    _check_keys(selection, _SELECTION_KEYS, where)
    _require_source(selection, where)
    ids = selection.get("pci_device_ids")
    if not isinstance(ids, list) or not ids:
        raise TargetError(f"{where}.pci_device_ids: expected a non-empty list of ids such as '0x74a1'")
    selection["pci_device_ids"] = [_norm_hex(i, f"{where}.pci_device_ids") for i in ids]
    count = selection.get("gpu_count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise TargetError(f"{where}.gpu_count: {count!r} must be a positive integer or null")


def _check_metric_spec(name: Any, spec: Any, where: str, *, complete: bool) -> None:
    if not isinstance(name, str) or not name or name != name.lower() or " " in name:
        raise TargetError(f"{where}: metric names are lower_snake_case strings")
    if not isinstance(spec, dict):
        raise TargetError(f"{where}: expected a mapping of target fields")
    _check_keys(spec, _METRIC_KEYS, where)
    if complete:
        for key in ("unit", "source"):
            if key not in spec:
                raise TargetError(f"{where}: missing {key!r}")
    elif _THRESHOLD_FIELDS & spec.keys():
        _require_source(spec, where + f" (changes {', '.join(sorted(_THRESHOLD_FIELDS & spec.keys()))})")
    table = spec.get("by_gpu_count")
    if table is not None:
        if not isinstance(table, dict):
            raise TargetError(f"{where}.by_gpu_count: expected a mapping of GPU count -> partial target")
        for count, partial in table.items():
            cwhere = f"{where}.by_gpu_count.{count}"
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise TargetError(f"{cwhere}: GPU counts are positive integers")
            if not isinstance(partial, dict):
                raise TargetError(f"{cwhere}: expected a mapping of target fields")
            _check_keys(partial, _TARGET_FIELDS, cwhere)
            _require_source(partial, cwhere)


def _overlay(base: Mapping[str, Any] | None, partial: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Merge a partial over a metric spec. A partial for an unknown metric must be complete."""
    if base is None:
        merged = dict(partial)
        for key in ("unit", "source"):
            if key not in merged:
                raise TargetError(f"{where}: a new metric needs {key!r}")
        return merged
    merged = dict(base)
    if "source" in partial and "note" not in partial:
        merged.pop("note", None)  # the old note explained the old source
    merged.update(partial)
    return merged


def _override(base: Mapping[str, Any] | None, partial: dict[str, Any], where: str) -> dict[str, Any]:
    """An inventory override: like an overlay, plus its own provenance rules."""
    _check_keys(partial, _TARGET_FIELDS, where)
    if base is None:
        for key in ("value", "unit", "source"):
            if key not in partial:
                raise TargetError(f"{where}: the profile has no such metric, so the override must be "
                                  f"complete; missing {key!r}")
        return partial
    if "unit" in partial and partial["unit"] != base.get("unit"):
        raise TargetError(f"{where}: cannot change unit {base.get('unit')!r} to {partial['unit']!r}; "
                          f"give the value in {base.get('unit')}")
    moved = sorted(k for k in _THRESHOLD_FIELDS & partial.keys() if partial[k] != base.get(k))
    if moved:
        source = partial.get("source")
        if not isinstance(source, str) or not source.strip() or source == base.get("source"):
            raise TargetError(
                f"{where}: the override changes {', '.join(moved)} but carries no source of its own; "
                "add source: '<who measured it, where, when>' (e.g. 'site baseline 2026-11 node gpu07')")
    merged = dict(base)
    merged.update(partial)
    if moved:
        old = f"{base.get('value')} {base.get('unit')}"
        previous = f"Overrides the file's target {old} ({base.get('source')})."
        merged["note"] = " ".join(x for x in (partial.get("note", ""), previous) if x)
    return merged


def _declared_gpu_count(spec: Mapping[str, Any], gpu_count: int) -> dict[str, Any]:
    if spec.get("value") == gpu_count and not spec.get("record_only"):
        return dict(spec)
    merged = dict(spec)
    merged.update(value=gpu_count, record_only=False, direction=EQUAL,
                  source=f"declared gpu_count {gpu_count} (inventory / --gpus)",
                  note=f"The data file says {spec.get('value')} ({spec.get('source')}).")
    return merged


def _build_target(name: str, spec: Mapping[str, Any], where: str) -> Target:
    _check_keys(spec, _TARGET_FIELDS, where)
    _require_source(spec, where)
    unit = spec.get("unit")
    if not isinstance(unit, str) or not unit.strip():
        raise TargetError(f"{where}: unit must be a non-empty string")
    direction = spec.get("direction", "higher_is_better")
    if direction not in DIRECTIONS:
        raise TargetError(f"{where}: direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    record_only = spec.get("record_only", False)
    if not isinstance(record_only, bool):
        raise TargetError(f"{where}: record_only must be true or false")
    tolerance = _fraction(spec.get("tolerance", 0.0), f"{where}: tolerance")
    warn = _fraction(spec.get("warn", 0.0), f"{where}: warn")
    value = spec.get("value")
    if isinstance(value, bool) or not (value is None or isinstance(value, (int, float, str))):
        raise TargetError(f"{where}: value {value!r} must be a number, a string id, or null")
    if isinstance(value, float) and not math.isfinite(value):
        raise TargetError(f"{where}: value {value!r} is not finite")
    if isinstance(value, str) and direction != EQUAL:
        raise TargetError(f"{where}: a string value ({value!r}) needs direction: equal")
    if not record_only and value is None:
        raise TargetError(f"{where}: no value; give one or set record_only: true with a source saying why")
    if warn and (record_only or value is None):
        raise TargetError(f"{where}: a warn band ({warn}) needs a threshold, but the metric is record-only")
    if direction == EQUAL and (tolerance or warn):
        raise TargetError(f"{where}: direction equal takes no tolerance or warn band")
    note = spec.get("note", "")
    if not isinstance(note, str):
        raise TargetError(f"{where}: note must be a string")
    return Target(metric=name, value=value, unit=unit.strip(), tolerance=tolerance, warn=warn,
                  direction=direction, source=" ".join(spec["source"].split()), record_only=record_only,
                  note=" ".join(note.split()))


def _fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < 1):
        raise TargetError(f"{where}: {value!r} is outside [0, 1); write a fraction (0.05 = 5%)")
    return float(value)


def _norm_hex(value: Any, where: str) -> str:
    text = str(value).strip().lower()
    if ":" in text:  # "1002:74a1" -> device part
        text = text.split(":")[-1]
    text = text.removeprefix("0x")
    try:
        number = int(text, 16)
    except ValueError:
        raise TargetError(f"{where}: {value!r} is not a hexadecimal PCI id such as '0x74a1'") from None
    return f"0x{number:04x}"


# ---------------------------------------------------------------------------------------------
# entries, partitions, messages


def _entry(raw: Mapping[str, Any], variant: str | None, path: Path) -> SkuEntry:
    spec = raw if variant is None else raw["variants"][variant]
    selection = spec["selection"]
    name = raw["sku"] if variant is None else variant
    default = raw.get("default_partition")
    partitions = tuple(mode for mode, p in (raw.get("partitions") or {}).items()
                       if not p.get("applies_to") or name in p["applies_to"])
    return SkuEntry(name=name, sku=raw["sku"], variant=variant, vendor=raw["vendor"],
                    description=" ".join(str(spec.get("description", raw.get("description", ""))).split()),
                    pci_device_ids=tuple(selection["pci_device_ids"]), gpu_count=selection.get("gpu_count"),
                    partitions=partitions, default_partition=default if default in partitions else None,
                    source_file=str(path))


def _resolve_partition(partition: str | None, entry: SkuEntry, where: str) -> str | None:
    if partition is None:
        return entry.default_partition
    if not entry.partitions:
        raise TargetError(f"{where}: {entry.name} has no partition modes, but partition {partition!r} was "
                          "requested; drop --partition or add a partitions entry with a source")
    matches = matching_modes(entry.partitions, partition)
    if len(matches) != 1:
        raise UnknownSkuError(
            f"{where}: no single target set for {entry.name} in partition {partition!r}; known modes: "
            f"{', '.join(entry.partitions)}. Add a partitions entry (with a source) to {Path(where).name} "
            f"or set {INVENTORY_VARIABLE} / the partition in the inventory.")
    return matches[0]


def _unknown_sku_message(what: str, entries: Any, data_dir: Path | None) -> str:
    known = ", ".join(
        f"{e.name} ({e.vendor[2:]}:{'/'.join(i[2:] for i in e.pci_device_ids)})"
        for e in sorted(entries, key=lambda e: e.name))
    directory = data_dir or DATA_DIR
    return (f"{what}; known SKUs: {known}. Add {directory}/<sku>.yaml (or a variant in an existing file) "
            f"with selection.pci_device_ids and sourced targets, or set {INVENTORY_VARIABLE} for this "
            "host/group to one of the known SKUs.")
