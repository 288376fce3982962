"""Telemetry sources, the sampler and the gate logic, on real tool outputs.

Real: tests/fixtures/real/{amd-smi,rocm-smi,nvidia-smi}/SOURCES.md (the H200 burn-in outputs
were captured by bench/h200_burnin.py on the lent H200). Derived: tests/fixtures/derived/
{amd-smi,nvidia-smi}/SOURCES.md, each one edited value. Expected numbers are read off the files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from validation.errors import ParseError, ProbeError
from validation.probes import telemetry
from validation.records import Status
from validation.runner import RawRun
from validation.targets import load_targets

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real"
DERIVED = FIXTURES / "derived"
H200_LOAD = REAL / "nvidia-smi" / "h200-x1-rocm-fleet-burnin-query-gpu-load.txt"
H200_END = REAL / "nvidia-smi" / "h200-x1-rocm-fleet-burnin-query-gpu-end.txt"
H200_REASONS = REAL / "nvidia-smi" / "h200-x1-rocm-fleet-burnin-clocks-event-reasons-load.txt"
MI300X_METRIC = REAL / "amd-smi" / "mi300x-rocm-blogs-amd-smi-overview-metric.txt"
ECC = REAL / "amd-smi" / "unknown-amdsmi-docs-ras-metric-ecc.txt"
ECC_UE1 = DERIVED / "amd-smi" / "unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt"
NV_DERIVED = DERIVED / "nvidia-smi"


def text(path: Path) -> str:
    return path.read_text()


def nvidia(path: Path, reasons: Path | None = H200_REASONS) -> tuple[telemetry.GpuSample, ...]:
    throttle = telemetry.parse_nvidia_throttle_csv(text(reasons)) if reasons else None
    return telemetry.parse_nvidia_smi_csv(text(path), telemetry.NVIDIA_FIELDS, throttle)


def snap(t_s: float, samples: tuple[telemetry.GpuSample, ...]) -> telemetry.Snapshot:
    return telemetry.Snapshot(t_s=t_s, seconds=0.05, samples=samples)


# --- parsing ---------------------------------------------------------------------------------


def test_h200_load_sample_reads_temperature_power_clocks_and_ecc():
    (s,) = nvidia(H200_LOAD)
    assert (s.gpu, s.bus_id) == (0, "00000000:00:06.0")
    assert (s.temperature_c, s.temperature_memory_c) == (69.0, 49.0)
    assert (s.power_w, s.power_cap_w) == (689.36, 700.0)
    assert (s.gfx_clock_mhz, s.mem_clock_mhz, s.util_pct) == (1515.0, 3201.0, 100.0)
    assert (s.ecc_correctable, s.ecc_uncorrectable) == (0, 0)


def test_h200_power_cap_bit_is_power_capped_not_throttled():
    (s,) = nvidia(H200_LOAD)
    assert s.throttle_status == "0x0000000000000004"
    assert s.power_capped is True and s.throttled is False


def test_hw_thermal_slowdown_bit_counts_as_throttled():
    (s,) = nvidia(H200_LOAD, NV_DERIVED / "h200-x1-burnin-clocks-event-reasons-hw-thermal.txt")
    assert s.throttled is True and s.power_capped is True


def test_nvidia_sample_without_a_throttle_query_leaves_throttling_unknown():
    (s,) = nvidia(H200_LOAD, None)
    assert s.throttled is None and s.power_capped is None


def test_throttle_query_rejects_a_row_that_is_not_index_and_mask():
    with pytest.raises(ParseError, match="index, mask"):
        telemetry.parse_nvidia_throttle_csv("0, 0x4, extra\n")


def test_mi300x_amd_smi_metric_reads_power_clock_activity_and_throttle_status():
    (s,) = telemetry.parse_amd_smi_metric(text(MI300X_METRIC))
    assert (s.gpu, s.power_w, s.gfx_clock_mhz, s.util_pct) == (0, 234.0, 2102.0, 100.0)
    assert s.throttle_status == "UNTHROTTLED" and s.throttled is False
    assert s.temperature_c is None      # the blog cut the output before TEMPERATURE


def test_amd_smi_throttled_status_marks_the_sample_throttled():
    throttled = DERIVED / "amd-smi" / "mi300x-rocm-blogs-amd-smi-overview-metric-throttled.txt"
    (s,) = telemetry.parse_amd_smi_metric(text(throttled))
    assert s.throttled is True and s.throttle_status == "THROTTLED"


def test_amd_smi_power_json_reads_power_and_throttle_status():
    power_json = REAL / "amd-smi" / "unknown-amdsmi-changelog-6.1.0-metric-power-json.txt"
    (s,) = telemetry.parse_amd_smi_metric(text(power_json))
    assert s.power_w == 10.0 and s.throttled is False


def test_amd_smi_7x_metric_falls_back_to_edge_temperature_and_unknown_throttle():
    (s,) = telemetry.parse_amd_smi_metric(text(REAL / "amd-smi" / "ryzen-ai-apu-blog-metric-7x.txt"))
    assert (s.temperature_c, s.temperature_edge_c, s.temperature_hotspot_c) == (28.0, 28.0, None)
    assert s.throttled is None and (s.ecc_correctable, s.ecc_uncorrectable, s.ecc_deferred) == (0, 0, 0)


def test_rocm_smi_json_reads_junction_edge_memory_power_and_current_clocks():
    samples = telemetry.parse_rocm_smi_json(text(REAL / "rocm-smi" / "mi100-x6-telegraf-testdata-rocm571-json.txt"))
    assert len(samples) == 6
    s = samples[0]
    assert (s.temperature_c, s.temperature_edge_c, s.temperature_memory_c) == (34.0, 31.0, 30.0)
    assert (s.power_w, s.power_cap_w, s.gfx_clock_mhz, s.mem_clock_mhz) == (39.0, 290.0, 300.0, 1200.0)
    assert s.ecc_uncorrectable is None and s.throttled is None


def test_bus_ids_of_nvidia_smi_and_torch_spelling_normalize_alike():
    assert telemetry.normalize_bus_id("00000000:00:06.0") == telemetry.normalize_bus_id("0000:00:06.0")
    assert telemetry.normalize_bus_id("not a bus id") is None


# --- sources and the sampler -----------------------------------------------------------------


class Replay:
    """A recorded tool: returns the real fixture text for a matching command line."""

    def __init__(self, outputs: dict[str, str], *, fail: Sequence[str] = (), hang: bool = False) -> None:
        self.outputs, self.fail, self.hang = outputs, fail, hang
        self.calls: list[str] = []

    def __call__(self, argv: Sequence[str], timeout_s: float) -> RawRun:
        line = " ".join(argv)
        self.calls.append(line)
        if self.hang:
            return RawRun(argv=tuple(argv), rc=None, stdout="", stderr="", seconds=timeout_s, timed_out=True)
        if any(f in line for f in self.fail):
            return RawRun(argv=tuple(argv), rc=2, stdout="", stderr="unknown field", seconds=0.01, timed_out=False)
        stdout = next(v for k, v in self.outputs.items() if k in line)
        return RawRun(argv=tuple(argv), rc=0, stdout=stdout, stderr="", seconds=0.01, timed_out=False)


def body(path: Path) -> str:
    """The fixture without its `$ command` line: what the tool printed."""
    return text(path).split("\n", 1)[1]


def h200_replay(**kw: object) -> Replay:
    return Replay({"clocks_event_reasons": body(H200_REASONS), "clocks_throttle_reasons": body(H200_REASONS),
                   "temperature.gpu": body(H200_LOAD)}, **kw)  # type: ignore[arg-type]


def test_nvidia_source_falls_back_to_the_old_throttle_field_name_once():
    replay = h200_replay(fail=["clocks_event_reasons"])
    source = telemetry.NvidiaSmiSource(run=replay)
    source.read(10)
    (s,) = source.read(10)
    assert s.power_capped is True
    assert sum("clocks_event_reasons" in c for c in replay.calls) == 1   # not asked again after failing
    assert sum("clocks_throttle_reasons" in c for c in replay.calls) == 2


def test_detect_source_prefers_amd_smi_then_rocm_smi_then_nvidia_smi():
    assert isinstance(telemetry.detect_source(lambda t: t if t != "amd-smi" else None), telemetry.RocmSmiSource)
    assert isinstance(telemetry.detect_source(lambda t: t), telemetry.AmdSmiSource)
    assert telemetry.detect_source(lambda t: None) is None


def test_a_hung_tool_becomes_a_snapshot_with_an_error_not_an_exception():
    snap_ = telemetry.read_once(telemetry.NvidiaSmiSource(run=h200_replay(hang=True)), 1.0, 5)
    assert snap_.samples == () and "ran past 5 s" in (snap_.error or "")


def test_sampler_polls_until_stopped_and_keeps_every_snapshot():
    seen: list[telemetry.Snapshot] = []
    sampler = telemetry.Sampler(telemetry.NvidiaSmiSource(run=h200_replay()), interval_s=0.05,
                                on_snapshot=seen.append).start()
    time.sleep(0.3)
    snaps = sampler.stop()
    assert len(snaps) >= 3 and snaps == tuple(seen)
    assert all(s.samples[0].power_w == 689.36 and s.error is None for s in snaps)
    assert [s.t_s for s in snaps] == sorted(s.t_s for s in snaps)


class Broken(telemetry.Source):
    name = "broken"

    def read(self, timeout_s: float) -> tuple[telemetry.GpuSample, ...]:
        raise ProbeError("cannot start 'broken'")


def test_sampler_survives_a_tool_that_cannot_start():
    sampler = telemetry.Sampler(Broken(), interval_s=0.05).start()
    time.sleep(0.12)
    snaps = sampler.stop()
    assert snaps and all(s.error == "broken: cannot start 'broken'" for s in snaps)


# --- summaries and gates ----------------------------------------------------------------------


def h200_run(load: Path = H200_LOAD, end: Path = H200_END, reasons: Path = H200_REASONS):
    """Before = the real end sample (idle-ish), load samples, after = `end`: a two-sample run."""
    before = snap(0.0, nvidia(H200_END))
    during = [snap(2.0, nvidia(load, reasons)), snap(4.0, nvidia(H200_END, reasons))]
    after = snap(6.0, nvidia(end))
    return telemetry.summarize(during, before, after)


def test_summary_of_real_h200_samples_takes_maxima_and_power_capped_share():
    t = h200_run()[0]
    assert (t.samples, t.temperature_max_c, t.temperature_memory_max_c) == (2, 71.0, 57.0)
    assert (t.power_max_w, t.power_cap_w) == (689.36, 700.0)
    assert t.power_mean_w == pytest.approx((689.36 + 678.77) / 2)
    assert (t.gfx_clock_min_mhz, t.throttled_fraction, t.power_capped_fraction) == (1515.0, 0.0, 1.0)
    assert (t.ecc_uncorrectable_delta, t.ecc_correctable_delta) == (0, 0)


def judge(values: dict[str, float | int | None], sku: str = "h200") -> dict[str, object]:
    verdicts = telemetry.judge_gates({"gpu0": values}, load_targets(sku))
    return {v.metric: v for v in verdicts}


def test_real_h200_burnin_passes_every_judged_gate():
    verdicts = judge(telemetry.gate_values(h200_run()[0]))
    assert {m: v.status for m, v in verdicts.items()} == {
        "burnin_temperature_max_c": Status.PASS, "burnin_power_max_w": Status.PASS,
        "burnin_ecc_uncorrectable_delta": Status.PASS, "burnin_ecc_correctable_delta": Status.PASS,
        "burnin_throttled_fraction": Status.SKIP}


def test_overheating_gpu_fails_the_temperature_gate_with_its_code():
    run = h200_run(load=NV_DERIVED / "h200-x1-burnin-query-gpu-load-temp-91.txt")
    v = judge(telemetry.gate_values(run[0]))
    t = v["burnin_temperature_max_c"]
    assert t.status is Status.FAIL and t.code == "RF-BURNIN-TEMP-HIGH"
    assert "gpu0" in t.reason and "91" in t.reason and "87" in t.reason  # H200 max operating temp


def test_power_above_700_w_fails_the_power_gate():
    run = h200_run(load=NV_DERIVED / "h200-x1-burnin-query-gpu-load-power-712.txt")
    v = judge(telemetry.gate_values(run[0]))
    assert v["burnin_power_max_w"].status is Status.FAIL
    assert v["burnin_power_max_w"].code == "RF-BURNIN-POWER-HIGH"


def test_one_new_uncorrectable_ecc_error_fails_and_correctable_ones_fail_their_own_gate():
    run = h200_run(end=NV_DERIVED / "h200-x1-burnin-query-gpu-end-ecc-uncorrected-1.txt")
    ue = judge(telemetry.gate_values(run[0]))
    assert ue["burnin_ecc_uncorrectable_delta"].status is Status.FAIL
    assert ue["burnin_ecc_uncorrectable_delta"].code == "RF-BURNIN-ECC-UNCORRECTABLE"
    assert ue["burnin_ecc_correctable_delta"].status is Status.PASS
    ce = judge(telemetry.gate_values(h200_run(end=NV_DERIVED / "h200-x1-burnin-query-gpu-end-ecc-corrected-2.txt")[0]))
    assert ce["burnin_ecc_correctable_delta"].status is Status.FAIL
    assert ce["burnin_ecc_correctable_delta"].measured == 2
    assert ce["burnin_ecc_correctable_delta"].code == "RF-BURNIN-ECC-CORRECTABLE"


def test_hw_thermal_samples_give_the_throttled_share_recorded_without_a_published_limit():
    t = h200_run(reasons=NV_DERIVED / "h200-x1-burnin-clocks-event-reasons-hw-thermal.txt")[0]
    assert t.throttled_fraction == 1.0
    v = judge(telemetry.gate_values(t))["burnin_throttled_fraction"]
    assert v.status is Status.SKIP and v.measured == 1.0


def test_amd_uncorrectable_ecc_from_before_to_after_fails_on_mi300x():
    before = snap(0.0, telemetry.parse_amd_smi_metric(text(ECC)))
    after = snap(9.0, telemetry.parse_amd_smi_metric(text(ECC_UE1)))
    during = [snap(3.0, telemetry.parse_amd_smi_metric(text(MI300X_METRIC)))]
    t = telemetry.summarize(during, before, after)[0]
    assert (t.ecc_uncorrectable_before, t.ecc_uncorrectable_after, t.ecc_uncorrectable_delta) == (0, 1, 1)
    v = judge(telemetry.gate_values(t), "mi300x")
    assert v["burnin_ecc_uncorrectable_delta"].status is Status.FAIL
    assert v["burnin_power_max_w"].status is Status.PASS          # 234 W <= 750 W
    assert v["burnin_temperature_max_c"].status is Status.SKIP    # record only on MI300X, and not reported here


def test_a_counter_that_goes_backwards_gives_no_delta_and_an_error_verdict():
    t = telemetry.summarize([], snap(0.0, telemetry.parse_amd_smi_metric(text(ECC_UE1))),
                            snap(5.0, telemetry.parse_amd_smi_metric(text(ECC))))[0]
    assert t.ecc_uncorrectable_delta is None and any("went backwards" in n for n in t.notes)
    v = judge(telemetry.gate_values(t), "mi300x")["burnin_ecc_uncorrectable_delta"]
    assert v.status is Status.ERROR and v.code == "RF-NOT-REPORTED"


def test_without_before_and_after_readings_the_first_and_last_load_samples_stand_in():
    during = [snap(1.0, telemetry.parse_amd_smi_metric(text(ECC))),
              snap(2.0, telemetry.parse_amd_smi_metric(text(ECC_UE1)))]
    t = telemetry.summarize(during)[0]
    assert t.ecc_uncorrectable_delta == 1 and len(t.notes) == 6   # 3 counters x (before, after)


def test_a_gate_the_source_did_not_report_is_an_error_not_a_pass():
    v = judge(telemetry.gate_values(telemetry.summarize([snap(1.0, (telemetry.GpuSample(gpu=0),))])[0]))
    assert v["burnin_temperature_max_c"].status is Status.ERROR
    assert v["burnin_power_max_w"].code == "RF-NOT-REPORTED"


def test_inventory_from_rocm_smi_json_has_serial_and_vbios():
    inv = telemetry.inventory_from_rocm_smi(text(REAL / "rocm-smi" / "mi100-x6-telegraf-testdata-rocm571-json.txt"))
    assert (inv[0].vbios_version, inv[0].bus_id) == ("113-D3430400-037", "0000:1E:00.0")


def test_inventory_from_nvidia_smi_csv_has_serial_vbios_and_bus():
    inv = telemetry.inventory_from_nvidia_smi(text(REAL / "nvidia-smi" / "h100-ml-engineering-query-gpu-vbios-csv.txt"))
    assert [i.vbios_version for i in inv] == ["96.00.89.00.01", "96.00.89.00.01"]
    assert inv[1].bus_id == "00000000:8B:00.0"
