"""The pure judge: boundaries, directions, record-only, missing values, links, dips, codes.

Thresholds are typed by hand from the public sources the targets cite (MI300X bf16 rand 581 × 0.95 = 551.95,
RVS gst_single.conf; TransferBench LIMIT_A2A 42 GB/s; Azure rocm-bandwidth-test 48 GB/s with a warn band
up to 50.4 GB/s).
"""

from __future__ import annotations

import pytest

from validation import judge
from validation.judge import (
    CODES,
    aggregate,
    all_pairs,
    judge_count,
    judge_links,
    judge_no_dip,
    judge_target,
    judge_timeout,
    judge_value,
)
from validation.records import LinkBandwidth, Status
from validation.targets import Target, load_targets

GIB = 1 << 30


@pytest.fixture(scope="module")
def mi300x():
    return load_targets("mi300x", gpu_count=8)


# --- higher is better ------------------------------------------------------------------------


def test_gemm_just_below_the_floor_fails_with_code_and_hint(mi300x):
    v = judge_value("gemm_bf16_rand_tflops", "gpu3", 551.9, mi300x)
    assert v.status is Status.FAIL
    assert v.code == "RF-GEMM-LOW"
    assert v.hint == CODES["RF-GEMM-LOW"]
    assert v.reason.startswith("gpu3 gemm_bf16_rand_tflops 551.9 TFLOPS < floor 551.95 TFLOPS (RVS ")
    assert (v.measured, v.unit) == (551.9, "TFLOPS")


def test_gemm_exactly_at_the_floor_passes(mi300x):
    assert judge_value("gemm_bf16_rand_tflops", "gpu3", 551.95, mi300x).status is Status.PASS


def test_measurement_inside_the_azure_warn_band_warns(mi300x):
    v = judge_value("rbt_cpu_gpu_gb_s", "cpu0 -> gpu1", 49.0, mi300x)
    assert v.status is Status.WARN
    assert "< warn line 50.4 GB/s" in v.reason
    assert v.code == "RF-BW-HOST-LOW"


def test_measurement_above_the_warn_band_passes(mi300x):
    v = judge_value("rbt_cpu_gpu_gb_s", "cpu0 -> gpu1", 50.4, mi300x)
    assert (v.status, v.code, v.hint) == (Status.PASS, "", "")


def test_measurement_below_the_azure_floor_fails(mi300x):
    assert judge_value("rbt_cpu_gpu_gb_s", "cpu0 -> gpu1", 47.9, mi300x).status is Status.FAIL


# --- lower is better and equality ------------------------------------------------------------


def test_idle_temperature_above_85_fails_and_at_85_passes(mi300x):
    hot = judge_value("gpu_temperature_idle_c", "gpu0", 86.0, mi300x)
    assert hot.status is Status.FAIL
    assert hot.code == "RF-TEMP-HIGH"
    assert "> ceiling 85.0 °C" in hot.reason
    assert judge_value("gpu_temperature_idle_c", "gpu0", 85.0, mi300x).status is Status.PASS


def test_lower_is_better_warn_band_sits_below_the_ceiling():
    t = Target(metric="latency_us", value=10.0, unit="us", warn=0.1, direction="lower_is_better",
               source="test")
    assert judge_target(t, "gpu0", 9.5).status is Status.WARN
    assert judge_target(t, "gpu0", 8.9).status is Status.PASS
    assert judge_target(t, "gpu0", 10.1).status is Status.FAIL


def test_one_ecc_error_fails_and_zero_passes(mi300x):
    bad = judge_count("ecc_uncorrectable_count", "gpu6", 1, mi300x)
    assert (bad.status, bad.code) == (Status.FAIL, "RF-ECC")
    assert "gpu6 ecc_uncorrectable_count 1 count != expected 0 count (SuperBench rule" in bad.reason
    assert judge_count("ecc_uncorrectable_count", "gpu6", 0, mi300x).status is Status.PASS


def test_rccl_wrong_count_above_zero_is_data_corruption(mi300x):
    v = judge_count("collective_wrong_count", "all_reduce 8 GiB", 3, mi300x)
    assert (v.status, v.code) == (Status.FAIL, "RF-RCCL-WRONG")


def test_seven_of_eight_gpus_is_a_missing_gpu(mi300x):
    v = judge_count("gpu_count", "node07", 7, mi300x)
    assert (v.status, v.code) == (Status.FAIL, "RF-GPU-MISSING")


def test_pci_device_id_compares_as_an_id_not_as_text(mi300x):
    assert judge_value("pci_device_id", "gpu0", "1002:74A1", mi300x).status is Status.PASS
    wrong = judge_value("pci_device_id", "gpu0", "0x74b5", mi300x)
    assert (wrong.status, wrong.code) == (Status.FAIL, "RF-SKU-MISMATCH")


# --- missing, record-only, timeout, unknown metric -------------------------------------------


def test_missing_measurement_is_error_not_reported_never_pass(mi300x):
    v = judge_value("xgmi_pair_gb_s", "gpu1 -> gpu2", None, mi300x)
    assert (v.status, v.code) == (Status.ERROR, "RF-NOT-REPORTED")
    assert "not reported" in v.reason


def test_nan_measurement_is_an_error(mi300x):
    assert judge_value("xgmi_pair_gb_s", "gpu1 -> gpu2", float("nan"), mi300x).status is Status.ERROR


def test_record_only_target_skips_and_keeps_the_measured_value(mi300x):
    v = judge_value("tb_a2a_gb_s", "gpu0", 12.5, mi300x)
    assert v.status is Status.SKIP
    assert v.measured == 12.5
    assert v.reason.startswith("record only: gpu0 tb_a2a_gb_s 12.5 GB/s; no threshold (")
    assert "UNCERTAIN" in v.reason


def test_partition_mode_gemm_is_recorded_not_judged():
    cpx = load_targets("mi300x", partition="CPX/NPS4")
    v = judge_value("gemm_fp8_rand_tflops", "gpu12", 150.0, cpx)
    assert (v.status, v.measured) == (Status.SKIP, 150.0)


def test_metric_without_a_target_is_an_error_naming_the_profile(mi300x):
    v = judge_value("kernel_launch_us", "gpu0", 5.0, mi300x)
    assert (v.status, v.code) == (Status.ERROR, "RF-NO-TARGET")
    assert "mi300x" in v.reason


def test_timeout_is_its_own_status(mi300x):
    v = judge_timeout("allreduce_busbw_8g_gb_s", "node07", 600, mi300x)
    assert (v.status, v.code) == (Status.TIMEOUT, "RF-TIMEOUT")
    assert "600.0 s" in v.reason


# --- per-link matrices -----------------------------------------------------------------------


def _full_matrix(gb_s: float) -> list[LinkBandwidth]:
    gpus = [f"gpu{i}" for i in range(8)]
    return [LinkBandwidth(src=a, dst=b, gb_s=gb_s) for a in gpus for b in gpus]


def test_one_weak_link_among_56_pairs_is_the_only_fail_and_is_named(mi300x):
    links = [LinkBandwidth(src=link.src, dst=link.dst, gb_s=31.0 if (link.src, link.dst) == ("gpu5", "gpu2")
                           else link.gb_s) for link in _full_matrix(48.9)]
    verdicts = judge_links(links, "xgmi_pair_gb_s", mi300x)
    assert len(verdicts) == 56  # the 8 self-links of the matrix are not pairs
    failed = [v for v in verdicts if v.status is not Status.PASS]
    assert len(failed) == 1
    assert failed[0].subject == "gpu5 -> gpu2"
    assert failed[0].code == "RF-BW-XGMI-LOW"
    assert failed[0].reason == ("gpu5 -> gpu2 xgmi_pair_gb_s 31.0 GB/s < floor 42.0 GB/s (TransferBench "
                                "healthcheck LIMIT_A2A, https://github.com/ROCm/TransferBench/blob/788840d0/"
                                "src/TransferBench.cpp RunHealthCheck ((int)(45×0.95) = 42 GB/s per GPU "
                                "pair, all-to-all, 8 CUs, 64 MiB, fine-grained memory))")
    assert aggregate(verdicts) is Status.FAIL


def test_a_pair_never_measured_is_reported_as_missing(mi300x):
    links = [link for link in _full_matrix(48.9) if link.src != "gpu7"]
    pairs = all_pairs(f"gpu{i}" for i in range(8))
    verdicts = judge_links(links, "xgmi_pair_gb_s", mi300x, expected_pairs=pairs)
    assert len(pairs) == 56
    missing = [v for v in verdicts if v.status is Status.ERROR]
    assert len(missing) == 7
    assert {v.subject for v in missing} == {f"gpu7 -> gpu{i}" for i in range(7)}


def test_a_pair_measured_twice_is_judged_on_the_worse_reading(mi300x):
    links = [LinkBandwidth(src="gpu0", dst="gpu1", gb_s=48.0),
             LinkBandwidth(src="gpu0", dst="gpu1", gb_s=40.0)]
    (v,) = judge_links(links, "xgmi_pair_gb_s", mi300x)
    assert (v.status, v.measured) == (Status.FAIL, 40.0)


# --- dips as sizes grow ----------------------------------------------------------------------


REFERENCE = (8 * GIB, 16 * GIB)  # the sizes the mi300x profile has all_reduce bus-bandwidth targets at


def test_a_busbw_dip_over_5_percent_between_the_reference_sizes_fails_naming_the_sizes(mi300x):
    series = [(2 * GIB, 300.0), (4 * GIB, 305.0), (8 * GIB, 310.0), (16 * GIB, 292.0)]
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", series, mi300x, reference_sizes=REFERENCE)
    assert (v.status, v.code) == (Status.FAIL, "RF-RCCL-DIP")
    assert "310.0 -> 292.0 GB/s from 8 GiB to 16 GiB (-5.8%, reference sizes)" in v.reason
    assert v.measured == pytest.approx(18 / 310, abs=1e-6)


def test_a_lasting_drop_under_10_percent_outside_the_reference_sizes_is_named_not_failed(mi300x):
    # the shape of a healthy two-node run at its largest sizes: 5.6 % below the peak and flat after it
    series = [(256 << 20, 300.0), (512 << 20, 333.07), (1 * GIB, 314.55), (2 * GIB, 313.87)]
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", series, mi300x, reference_sizes=REFERENCE)
    assert v.status is Status.PASS and not v.code
    assert "named not failed: 333.07 -> 314.55 GB/s from 512 MiB to 1 GiB (-5.6%)" in v.reason
    assert "no two reference sizes" in v.reason and "bw_dip_threshold=10.0" in v.reason


def test_a_lasting_drop_over_10_percent_outside_the_reference_sizes_fails(mi300x):
    series = [(256 << 20, 300.0), (512 << 20, 333.0), (1 * GIB, 296.0), (2 * GIB, 297.0)]
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", series, mi300x, reference_sizes=REFERENCE)
    assert (v.status, v.code) == (Status.FAIL, "RF-RCCL-DIP")
    assert "333.0 -> 296.0 GB/s from 512 MiB to 1 GiB (-11.1%)" in v.reason


def test_a_one_size_dip_the_next_size_recovers_from_passes_with_the_basis(mi300x):
    series = [(1 * GIB, 290.0), (2 * GIB, 300.0), (4 * GIB, 310.0), (8 * GIB, 280.0), (16 * GIB, 312.0)]
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", series, mi300x)
    assert v.status is Status.PASS
    assert "tolerated: 310.0 -> 280.0 GB/s from 4 GiB to 8 GiB, back to 312.0 GB/s at 16 GiB" in v.reason
    assert "rocm-blogs" in v.reason


def test_a_dip_at_the_last_size_cannot_be_recovered_and_fails_beyond_the_report_flag(mi300x):
    series = [(1 * GIB, 305.0), (2 * GIB, 310.0), (4 * GIB, 312.0), (8 * GIB, 280.0)]
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", series, mi300x, reference_sizes=REFERENCE)
    assert (v.status, v.code) == (Status.FAIL, "RF-RCCL-DIP")
    assert "(-10.3%)" in v.reason


def test_a_dip_of_4_percent_is_within_the_cvs_rule(mi300x):
    series = [(4 * GIB, 300.0), (8 * GIB, 288.0), (16 * GIB, 305.0)]
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", series, mi300x)
    assert v.status is Status.PASS


def test_a_single_size_cannot_be_checked_for_dips(mi300x):
    v = judge_no_dip("collective_busbw_dip_max_fraction", "all_reduce", [(8 * GIB, 300.0)], mi300x)
    assert (v.status, v.code) == (Status.ERROR, "RF-NOT-REPORTED")


# --- aggregation and the code table ----------------------------------------------------------


def test_aggregate_takes_the_worst_and_timeout_outranks_fail(mi300x):
    ok = judge_value("xgmi_pair_gb_s", "gpu0 -> gpu1", 48.9, mi300x)
    bad = judge_value("xgmi_pair_gb_s", "gpu0 -> gpu2", 30.0, mi300x)
    hung = judge_timeout("xgmi_pair_gb_s", "gpu0 -> gpu3", 60, mi300x)
    assert aggregate([ok, bad]) is Status.FAIL
    assert aggregate([ok, bad, hung]) is Status.TIMEOUT


def test_aggregate_of_nothing_is_error_not_pass():
    assert aggregate([]) is Status.ERROR


@pytest.mark.parametrize("sku", ["mi300x", "mi325x", "mi250x", "h100", "h200"])
def test_every_shipped_metric_maps_to_a_specific_failure_code(sku):
    generic = {"RF-BELOW-TARGET", "RF-ABOVE-TARGET", "RF-MISMATCH"}
    for metric, target in load_targets(sku).targets.items():
        code = judge.failure_code(metric, target)
        assert code in CODES, metric
        assert code not in generic, f"{sku} {metric} falls back to {code}"


def test_every_code_has_a_hint():
    assert all(hint.strip() for hint in CODES.values())
