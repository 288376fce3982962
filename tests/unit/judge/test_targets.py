"""Per-SKU target files, the loader's validation, selection, overrides and the `targets` CLI.

Expected numbers are typed from the public sources each target's `source` names, not read back from the loader.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from validation.cli import main
from validation.errors import TargetError, UnknownSkuError
from validation.targets import known_skus, load_targets, normalize_partition, select_sku
from validation.targets.loader import DATA_DIR, list_skus

ALL_SKUS = ("h100", "h200", "mi250x", "mi300x", "mi300x-hf", "mi300x-vf", "mi308x", "mi325x")

GOOD_FILE = """\
schema_version: 1
sku: demo
vendor: "0x1002"
selection:
  pci_device_ids: ["0x1234"]
  gpu_count: 8
  source: test selection
metrics:
  gemm_fp16_rand_tflops:
    value: 100
    unit: TFLOPS
    tolerance: 0.05
    source: test source
"""


def _write(tmp_path: Path, text: str, name: str = "demo.yaml") -> Path:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


# --- the shipped data ------------------------------------------------------------------------


def test_the_shipped_skus_are_the_five_files_and_their_variants():
    assert known_skus() == ALL_SKUS


@pytest.mark.parametrize("sku", ALL_SKUS)
def test_every_sku_loads_in_every_partition_and_every_target_has_a_source(sku):
    entry = next(e for e in list_skus() if e.name == sku)
    for partition in (None, *entry.partitions):
        for gpus in (None, 1, 4, 8):
            profile = load_targets(sku, gpu_count=gpus, partition=partition)
            assert profile.targets, f"{sku} has no targets"
            for t in profile.targets.values():
                assert t.source.strip(), f"{sku} {t.metric}: empty source"
                assert 0 <= t.tolerance < 1


def test_no_plain_yaml_scalar_is_cut_short_by_a_hash_comment():
    # regression: "source: ROCm/rocm-systems PR #2934 ..." loaded as "ROCm/rocm-systems PR"
    plain_with_hash = re.compile(r"^\s*(source|note|description): [^'\"|>].* #")
    for path in DATA_DIR.glob("*.yaml"):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not plain_with_hash.match(line), f"{path.name}:{no}: quote this value: {line.strip()}"
    assert "2003.45" in load_targets("mi308x").get("hbm_roofline_gb_s").source
    assert "4287.31" in load_targets("mi325x").get("hbm_roofline_gb_s").source


def test_mi300x_bf16_rand_gemm_target_is_581_with_floor_551_95():
    t = load_targets("mi300x").get("gemm_bf16_rand_tflops")
    assert (t.value, t.unit, t.tolerance) == (581, "TFLOPS", 0.05)
    assert t.threshold == pytest.approx(551.95)
    assert "gst_single.conf" in t.source


def test_mi300x_gst_targets_match_the_rvs_table():
    p = load_targets("mi300x")
    expected = {"gemm_fp8_rand_tflops": 1215, "gemm_fp8_trig_tflops": 981, "gemm_fp16_rand_tflops": 639,
                "gemm_fp16_trig_tflops": 523, "gemm_bf16_trig_tflops": 552, "gemm_fp32_tflops": 100,
                "gemm_fp64_tflops": 70}
    assert {m: p.get(m).value for m in expected} == expected
    assert p.get("gemm_fp64_tflops").threshold == pytest.approx(66.5)


def test_mi300x_rccl_allreduce_8_gpus_is_304_amd_and_314_azure():
    p = load_targets("mi300x", gpu_count=8)
    assert p.get("allreduce_busbw_8g_gb_s").value == 304
    assert p.get("allreduce_busbw_16g_gb_s").value == 314
    assert "598bea2" in p.get("allreduce_busbw_16g_gb_s").source


def test_rccl_busbw_is_record_only_for_a_gpu_count_without_a_published_number():
    t = load_targets("mi300x", gpu_count=4).get("allreduce_busbw_8g_gb_s")
    assert t.record_only
    assert "rccl#1270" in t.source.lower()


def test_transferbench_healthcheck_limits_are_45_91_and_42():
    p = load_targets("mi300x")
    assert p.get("tb_cpu_to_gpu_gb_s").value == 45
    assert p.get("tb_gpu_to_cpu_gb_s").value == 45
    assert p.get("tb_bidir_gb_s").value == 91
    assert p.get("xgmi_pair_gb_s").value == 42
    assert "LIMIT_A2A" in p.get("xgmi_pair_gb_s").source


def test_azure_bandwidth_limits_carry_the_1_05_warn_band():
    p = load_targets("mi300x")
    cpu = p.get("rbt_cpu_gpu_gb_s")
    assert (cpu.value, cpu.warn, cpu.warn_line) == (48, 0.05, pytest.approx(50.4))
    assert p.get("rbt_gpu_gpu_gb_s").value == 44


def test_babelstream_mb_s_are_stored_as_gb_s():
    p = load_targets("mi300x")
    assert p.get("babelstream_copy_gb_s").value == pytest.approx(4177.285)
    assert p.get("babelstream_triad_gb_s").value == pytest.approx(3885.301)
    assert "MB/s ÷ 1000" in p.get("babelstream_copy_gb_s").note


def test_rocblas_fp32_acceptance_is_94_1_tflops():
    assert load_targets("mi300x").get("rocblas_sgemm_4000_tflops").value == pytest.approx(94.1)


def test_error_counters_must_equal_zero():
    p = load_targets("mi300x")
    counters = ("ecc_uncorrectable_count", "ecc_correctable_count", "xgmi_error_count",
                "collective_wrong_count")
    for metric in counters:
        assert (p.get(metric).value, p.get(metric).direction) == (0, "equal"), metric


def test_iet_power_target_is_750_w_with_rvs_tolerance_0_01():
    t = load_targets("mi300x").get("iet_power_w")
    assert (t.value, t.tolerance) == (750, 0.01)
    assert t.threshold == pytest.approx(742.5)


def test_cpx_partition_makes_gemm_record_only_as_rvs_target_stress_0():
    t = load_targets("mi300x", partition="CPX/NPS4").get("gemm_fp8_rand_tflops")
    assert t.record_only
    assert "target_stress: 0" in t.source


def test_mi308x_is_an_xgmi_mesh_without_a_published_xgmi_bandwidth():
    p = load_targets("mi308x", gpu_count=8)
    assert (p.get("topology_link_type").threshold, p.get("topology_hops").threshold) == ("XGMI", 1)
    assert not p.get("xgmi_error_count").record_only
    assert p.get("xgmi_pair_gb_s").record_only and p.get("xgmi_pair_gb_s").value is None
    assert p.get("allreduce_busbw_8g_gb_s").record_only
    assert p.get("pci_device_id").value == "0x74a2"


def test_mi308x_gemm_and_power_come_from_its_own_rvs_confs():
    p = load_targets("mi308x")
    assert p.get("gemm_bf16_rand_tflops").threshold == pytest.approx(174.364 * 0.95)
    assert "rvs/conf/MI308X/gst_single.conf" in p.get("gemm_fp8_trig_tflops").source
    assert p.get("gemm_fp64_tflops").record_only and p.get("gemm_fp64_tflops").value is None
    assert p.get("iet_power_w").threshold == pytest.approx(617.5)
    assert p.get("idle_temperature_max_c").record_only


def test_uncertain_sources_keep_the_word_uncertain():
    p = load_targets("mi300x")
    assert "UNCERTAIN" in p.get("tb_a2a_gb_s").source
    assert "UNCERTAIN" in load_targets("mi300x-hf").get("pci_device_id").source
    assert "UNCERTAIN" in load_targets("h100").get("dcgm_memory_bandwidth").source


def test_h100_and_h200_dcgm_and_azure_numbers():
    h100, h200 = load_targets("h100", gpu_count=8), load_targets("h200", gpu_count=8)
    assert h100.get("dcgm_sm_stress_gflops").value == 29250
    assert h200.get("dcgm_sm_stress_gflops").value == 37500
    assert h100.get("allreduce_busbw_16g_gb_s").value == 460
    assert h200.get("allreduce_busbw_16g_gb_s").value == 431
    assert h100.get("nvbandwidth_p2p_gb_s").value == 335


def test_declared_gpu_count_becomes_the_gpu_count_target():
    t = load_targets("mi300x", gpu_count=4).get("gpu_count")
    assert (t.value, t.direction, t.record_only) == (4, "equal", False)
    assert "declared" in t.source


# --- selection -------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "vendor", "sku"), [
    ("0x74a1", "0x1002", "mi300x"),
    ("74A1", "0x1002", "mi300x"),
    ("1002:74b5", "0x1002", "mi300x-vf"),
    ("0x74bd", "0x1002", "mi300x-hf"),
    ("0x74a2", "0x1002", "mi308x"),
    ("0x74a5", "0x1002", "mi325x"),
    ("0x740c", "0x1002", "mi250x"),
    ("0x2330", "0x10de", "h100"),
    ("10de:2335", "0x1002", "h200"),
])
def test_select_sku_by_pci_device_id(device, vendor, sku):
    assert select_sku(device, 8, None, vendor) == sku


def test_select_sku_accepts_a_known_partition_in_rocm_smi_spelling():
    assert select_sku("0x74a1", 64, "NPS4, CPX") == "mi300x"


def test_select_sku_rejects_a_partition_without_targets():
    with pytest.raises(UnknownSkuError, match=r"no target set for partition 'QPX/NPS1'.*SPX/NPS1"):
        select_sku("0x74a1", 8, "QPX/NPS1")


def test_unknown_device_id_lists_known_skus_and_says_what_to_do():
    with pytest.raises(UnknownSkuError) as exc:
        select_sku("0x7448", 8, None)
    message = str(exc.value)
    assert "1002:7448" in message
    for sku in ALL_SKUS:
        assert sku in message
    assert "validation_target_sku" in message
    assert "<sku>.yaml" in message


def test_nvidia_device_id_under_amd_vendor_is_unknown():
    with pytest.raises(UnknownSkuError):
        select_sku("0x2330", 8, None, "0x1002")


def test_unknown_sku_name_lists_known_skus():
    with pytest.raises(UnknownSkuError, match="known SKUs: h100"):
        load_targets("mi999")


def test_partition_spellings_normalize_to_compute_slash_memory():
    assert normalize_partition("nps4/cpx") == "CPX/NPS4"
    assert normalize_partition("NPS1, SPX") == "SPX/NPS1"
    with pytest.raises(TargetError, match="cannot read 'XYZ'"):
        normalize_partition("XYZ/NPS1")


# --- overrides -------------------------------------------------------------------------------


def test_override_without_source_is_rejected():
    with pytest.raises(TargetError, match=r"overrides.xgmi_pair_gb_s: .*changes value.*no source"):
        load_targets("mi300x", overrides={"xgmi_pair_gb_s": {"value": 40}})


def test_override_with_source_replaces_value_and_keeps_the_old_one_in_the_note():
    p = load_targets("mi300x", overrides={
        "xgmi_pair_gb_s": {"value": 46.5, "source": "site baseline 2026-11 node gpu07"}})
    t = p.get("xgmi_pair_gb_s")
    assert (t.value, t.source) == (46.5, "site baseline 2026-11 node gpu07")
    assert "42" in t.note and "LIMIT_A2A" in t.note
    assert p.overridden == ("xgmi_pair_gb_s",)


def test_override_may_add_a_warn_band_without_a_new_source():
    t = load_targets("mi300x", overrides={"xgmi_pair_gb_s": {"warn": 0.1}}).get("xgmi_pair_gb_s")
    assert t.warn == 0.1
    assert "LIMIT_A2A" in t.source


def test_override_cannot_change_the_unit():
    with pytest.raises(TargetError, match="cannot change unit"):
        load_targets("mi300x", overrides={"xgmi_pair_gb_s": {"unit": "MB/s", "value": 42000, "source": "x"}})


def test_override_with_unknown_field_is_rejected():
    with pytest.raises(TargetError, match=r"unknown key.*threshold"):
        load_targets("mi300x", overrides={"xgmi_pair_gb_s": {"threshold": 40, "source": "x"}})


# --- validation of data files ----------------------------------------------------------------


def test_a_minimal_valid_file_loads(tmp_path):
    p = load_targets("demo", data_dir=_write(tmp_path, GOOD_FILE))
    assert p.get("gemm_fp16_rand_tflops").threshold == pytest.approx(95.0)


@pytest.mark.parametrize(("edit", "message"), [
    (("    source: test source\n", ""), r"demo.yaml: metrics.gemm_fp16_rand_tflops: missing 'source'"),
    (("    tolerance: 0.05\n", "    tolerance: 1.5\n"),
     r"gemm_fp16_rand_tflops.*tolerance: 1.5 is outside \[0, 1\)"),
    (("    unit: TFLOPS\n", "    unit: TFLOPS\n    colour: red\n"),
     r"metrics.gemm_fp16_rand_tflops: unknown key\(s\) colour"),
    (("    tolerance: 0.05\n", "    tolerance: 0.05\n    warn: 0.05\n    record_only: true\n"),
     r"warn band \(0.05\) needs a threshold"),
    (("    value: 100\n", ""), r"gemm_fp16_rand_tflops.*no value"),
    (("    value: 100\n", "    value: 100\n    value: 101\n"), r"duplicate key 'value'"),
    (("sku: demo\n", "sku: other\n"), r"sku 'other' must match the file name 'demo'"),
    (("metrics:\n", "extra: 1\nmetrics:\n"), r"demo.yaml: unknown key\(s\) extra"),
])
def test_bad_file_fails_at_load_time_naming_file_and_key(tmp_path, edit, message):
    old, new = edit
    assert old in GOOD_FILE
    data_dir = _write(tmp_path, GOOD_FILE.replace(old, new, 1))
    with pytest.raises(TargetError, match=message):
        load_targets("demo", data_dir=data_dir)


def test_variant_that_moves_a_threshold_needs_its_own_source(tmp_path):
    text = GOOD_FILE + """\
variants:
  demo-x:
    selection:
      pci_device_ids: ["0x1235"]
      source: test
    metrics:
      gemm_fp16_rand_tflops:
        value: 90
"""
    with pytest.raises(TargetError, match=r"variants.demo-x.metrics.gemm_fp16_rand_tflops.*missing 'source'"):
        load_targets("demo", data_dir=_write(tmp_path, text))


def test_shipped_files_copied_elsewhere_still_load(tmp_path):
    for path in DATA_DIR.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    assert known_skus(data_dir=tmp_path) == ALL_SKUS


# --- CLI -------------------------------------------------------------------------------------


def test_cli_targets_list_prints_every_sku(capsys):
    assert main(["targets", "list"]) == 0
    out = capsys.readouterr().out
    for sku in ALL_SKUS:
        assert sku in out


def test_cli_targets_show_json_starts_with_schema_version(capsys):
    assert main(["targets", "show", "mi300x", "--gpus", "8", "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert next(iter(doc)) == "schema_version"
    assert doc["targets"]["allreduce_busbw_8g_gb_s"]["threshold"] == 304
    assert doc["targets"]["gemm_bf16_rand_tflops"]["threshold"] == pytest.approx(551.95)


def test_cli_targets_show_table_has_rule_and_source(capsys):
    assert main(["targets", "show", "mi300x", "--partition", "CPX/NPS4"]) == 0
    out = capsys.readouterr().out
    assert "partition CPX/NPS4" in out
    line = next(row for row in out.splitlines() if row.startswith("gemm_fp8_rand_tflops"))
    assert "record only" in line


def test_cli_unknown_sku_exits_2_with_the_known_list(capsys):
    assert main(["targets", "show", "mi999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-fleet: error: no target profile named 'mi999'")
    assert "mi300x" in err
