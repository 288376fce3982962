"""Acceptance tier: a burn-in on every GPU at once with telemetry gates (needs a GPU, hours).

One bf16 matmul worker per GPU runs for `validation_burnin_seconds` (default 600) while a
sampler polls amd-smi / rocm-smi / nvidia-smi every `validation_burnin_sample_interval_s`
(default 5). The burn-in runs once per node (module fixture); each test then judges one gate for
every GPU and records every measurement, so the node's results hold the whole picture even when
a gate fails. Targets come from the SKU profile (`burnin_*` metrics); record-only gates are
recorded with their reason. The node's acceptance summary (measurements, verdicts per GPU,
serials and VBIOS) is recorded as the `acceptance_summary` measurement.

Like the portable probes it runs inside the node's own pytest (`--hosts=local://`, which is how
playbooks/acceptance.yml runs it). docs/acceptance.md describes the gates and their sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from validation.checks.outcome import CheckFailure, expect
from validation.judge import Verdict
from validation.records import FAILING

pytestmark = [pytest.mark.acceptance, pytest.mark.gpu]

DEFAULT_BURNIN_S = 600.0
DEFAULT_SAMPLE_INTERVAL_S = 5.0
BAD = FAILING


@dataclass(frozen=True, slots=True, kw_only=True)
class Acceptance:
    run: Any                     # burnin.AcceptanceRun
    verdicts: tuple[Verdict, ...]
    summary: dict[str, Any]
    inventory: tuple[Any, ...]   # telemetry.GpuInventory
    inventory_error: str | None


@pytest.fixture(scope="module")
def acceptance(host: Any, spec: dict, targets: Any) -> Acceptance:
    if host.backend.NAME != "local":
        pytest.skip("the burn-in runs on the node itself: use --hosts=local:// (playbooks/acceptance.yml does)")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed on this node; the burn-in needs it")
    from validation.probes import burnin, telemetry, torch_probes

    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU (torch.cuda.is_available() is false); the presence checks say why")
    seconds = float(spec.get("validation_burnin_seconds") or DEFAULT_BURNIN_S)
    interval = float(spec.get("validation_burnin_sample_interval_s") or DEFAULT_SAMPLE_INTERVAL_S)
    config = burnin.BurninConfig(duration_s=seconds, check_interval_s=min(burnin.DEFAULT_CHECK_INTERVAL_S,
                                                                          max(seconds / 10, 1.0)))
    source = telemetry.detect_source()
    run = burnin.run_acceptance(torch_probes.gpu_devices(), config, source=source, interval_s=interval)
    inventory, inventory_error = telemetry.read_inventory(source)
    verdicts = tuple(burnin.acceptance_verdicts(run, targets))
    summary = burnin.acceptance_summary(run, verdicts, inventory, inventory_error)
    return Acceptance(run=run, verdicts=verdicts, summary=summary, inventory=tuple(inventory),
                      inventory_error=inventory_error)


def gate(acceptance: Acceptance, record: Any, *metrics: str) -> None:
    """Record every verdict of these metrics (one per GPU) and fail on the bad ones, naming the GPUs."""
    from validation.probes import burnin, telemetry

    verdicts = [v for v in acceptance.verdicts if v.metric in metrics]
    for v in verdicts:
        unit, higher = burnin.METRIC_UNITS.get(v.metric, (v.unit, True))
        record(v.metric, v.subject, v.measured if isinstance(v.measured, (int, float)) else None, unit,
               higher_is_better=higher, status=v.status.value, reason=v.reason, code=v.code or None)
    run = acceptance.run
    if any(m in telemetry.TELEMETRY_GATES for m in metrics):
        usable = [s for s in run.snapshots if s.samples]
        first_error = next((s.error for s in run.snapshots if s.error), None)
        expect(run.source is not None and usable, "RF-BURNIN-NO-TELEMETRY",
               f"no telemetry during the burn-in (tool: {run.source or 'none found'}; "
               f"{len(run.snapshots)} polls; first error: {first_error})")
    bad = [v for v in verdicts if v.status in BAD]
    if bad:
        raise CheckFailure(bad[0].code or "RF-NOT-REPORTED", "; ".join(v.reason for v in bad), bad[0].hint)


def test_burnin_ran_on_every_declared_gpu_without_device_errors(acceptance: Acceptance, spec: dict,
                                                                record: Any) -> None:
    """The burn-in ran on every declared GPU for its full time without a device error."""
    run, summary = acceptance.run, acceptance.summary
    record("acceptance_summary", "node", None, "", status=summary["verdict"], summary=summary)
    declared = spec.get("validation_gpu_count")
    gpus = run.burnin.gpus
    expect(declared is None or len(gpus) == int(declared), "RF-GPU-MISSING",
           f"the burn-in ran on {len(gpus)} GPUs, the spec declares {declared}")
    hung = [g.label for g in gpus if g.timed_out]
    expect(not hung, "RF-TIMEOUT", f"burn-in worker(s) did not finish: {', '.join(hung)}")
    broken = [f"{g.label}: {g.error}" for g in gpus if g.error]
    expect(not broken, "RF-BURNIN-GPU-ERROR", "; ".join(broken))


def test_every_gpu_computes_correct_results_under_sustained_load(acceptance: Acceptance, record: Any) -> None:
    """Every GPU computes correct results under sustained load."""
    gate(acceptance, record, "burnin_wrong_results_count")


def test_gpu_temperature_under_load_stays_below_the_limit(acceptance: Acceptance, record: Any) -> None:
    """Every GPU stays below its temperature limit under load."""
    gate(acceptance, record, "burnin_temperature_max_c")


def test_gpu_power_under_load_stays_within_the_board_limit(acceptance: Acceptance, record: Any) -> None:
    """Every GPU stays within its board power limit under load."""
    gate(acceptance, record, "burnin_power_max_w")


def test_no_uncorrectable_ecc_error_appears_during_the_burnin(acceptance: Acceptance, record: Any) -> None:
    """No uncorrectable ECC error appears during the burn-in."""
    gate(acceptance, record, "burnin_ecc_uncorrectable_delta")


def test_correctable_ecc_errors_during_the_burnin_stay_within_the_threshold(acceptance: Acceptance,
                                                                            record: Any) -> None:
    """Correctable ECC errors during the burn-in stay within the allowed count."""
    gate(acceptance, record, "burnin_ecc_correctable_delta")


def test_clocks_are_not_throttled_beyond_the_allowed_share_of_the_time(acceptance: Acceptance,
                                                                       record: Any) -> None:
    """No GPU's clocks are throttled for more than the allowed share of the burn-in."""
    gate(acceptance, record, "burnin_throttled_fraction")


def test_throughput_holds_from_the_first_to_the_last_window(acceptance: Acceptance, record: Any) -> None:
    """Every GPU's throughput holds from the first to the last window of the burn-in."""
    gate(acceptance, record, "burnin_bf16_tflops", "burnin_sustained_ratio")


def test_serials_and_vbios_are_recorded_for_every_gpu(acceptance: Acceptance, record: Any) -> None:
    """Every GPU's serial number and VBIOS version are recorded."""
    for item in acceptance.inventory:
        record("gpu_identity", f"gpu{item.gpu}", None, "", status="pass", serial=item.serial,
               vbios_version=item.vbios_version, bus_id=item.bus_id, **item.extra)
    expect(acceptance.inventory, "RF-TOOL-FAILED",
           f"serial numbers and VBIOS versions could not be read: {acceptance.inventory_error}")
    missing = [f"gpu{i.gpu}" for i in acceptance.inventory if not i.serial or not i.vbios_version]
    expect(not missing, "RF-TOOL-FAILED", f"serial or VBIOS not reported for {', '.join(missing)}")
