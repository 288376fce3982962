"""RVS parser on the real MI300X result excerpts of AMD's system-acceptance docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import rvs
from validation.records import LinkBandwidth

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "rvs"


def _parse(name: str) -> rvs.RvsResult:
    return rvs.parse((REAL / f"mi300x-system-acceptance-docs-{name}.txt").read_text())


def test_gst_single_reads_gflops_and_target_met():
    r = _parse("gst-single")
    assert r.command == "rvs -c ${RVS_CONF}/MI300X/gst_single.conf"
    assert r.actions == (rvs.Action(name="gst-1215Tflops-4K4K8K-rand-fp8", module="gst"),)
    assert r.gpu_ids == (28851,)
    assert [s.gflops for s in r.gst] == [1539705, 1640057, 1687129]
    final = r.gst[-1]
    assert (final.target_gflops, final.met) == (1215000, True)
    assert r.gst[0].target_gflops is None and r.gst[0].met is None
    assert [e.text for e in r.events] == ["Start of GPU ramp up", "End of GPU ramp up"]
    assert r.truncated is True


def test_gst_ext_timestamp_padding_is_tolerated():
    r = _parse("gst-ext")
    assert r.actions[0].name == "gst-1000Tflops-8KB-fp8_r-false"
    assert [(s.gflops, s.target_gflops, s.met) for s in r.gst] == [(1235406, None, None), (1238206, 1000000, True)]


def test_iet_power_and_per_gpu_passes_are_trusted():
    r = _parse("iet-single")
    assert [a.name for a in r.actions] == ["iet-620W-1K-rand-dgemm", "iet-wait-750W-28K-rand-dgemm"]
    assert {a.module for a in r.actions} == {"iet"}
    assert [(p.gpu_id, p.power_w) for p in r.power] == [(28851, 127.0), (23018, 123.0)]
    assert [(p.gpu_id, p.passed, p.trustworthy, p.module) for p in r.passes] == [
        (29122, True, True, "iet"), (23018, True, True, "iet"), (28851, True, True, "iet")]
    assert r.gpu_ids == (28851, 23018, 29122)


def test_gm_violation_counts():
    r = _parse("gm-single")
    assert [(v.gpu_id, v.metric, v.count) for v in r.violations] == [
        (28851, "temp", 0), (28851, "clock", 0), (28851, "mem_clock", 0), (28851, "fan", 0), (28851, "power", 0)]
    assert r.violations[0].action == "metrics_monitor"


def test_gpup_properties_and_io_link():
    props = _parse("gpup-props").properties
    assert [(p.name, p.value, p.io_link) for p in props] == [
        ("cpu_cores_count", "0", None), ("simd_count", "1216", None), ("num_xcc", "8", None),
        ("max_engine_clk_ccompute", "3250", None)]
    link = {p.name: p.value for p in _parse("gpup-iolink").properties}
    assert len(link) == 12
    assert (link["type"], link["node_from"], link["weight"], link["max_bandwidth"]) == ("2", "2", "20", "64000")
    assert {p.io_link for p in _parse("gpup-iolink").properties} == {0}


def test_mem_bandwidth_lines_from_grep():
    r = _parse("mem-bandwidth-grep")
    assert len(r.mem) == 8
    assert r.mem[0].test == 11 and r.mem[0].action == "action_1"
    assert r.mem[0].gb_s == 2003.017090 and r.mem[0].elapsedtime_as_printed == 6390.423828
    assert r.mem[7].gb_s == 1994.768433
    assert min(m.gb_s for m in r.mem) == 1994.768433


def test_pbqt_bandwidth_keeps_measured_numbers_and_gpu_identities():
    r = _parse("pbqt-bandwidth")
    assert [(p.index, p.total) for p in r.peer_bandwidth] == [(1, 56), (2, 56), (3, 56)]
    first = r.peer_bandwidth[0]
    assert first.src == rvs.RvsGpu(node=2, gpu_id=28851, bdf="0000:05:00.0")
    assert first.dst == rvs.RvsGpu(node=3, gpu_id=23018, bdf="0000:26:00.0")
    assert first.bidirectional is False and first.gb_s == 48.962 and first.duration_s == 1.462462
    assert r.peer_bandwidth[2].gb_s == 48.577 and r.peer_bandwidth[2].dst.gpu_id == 22683
    assert first.link == LinkBandwidth(src="node2", dst="node3", gb_s=48.962)
    assert r.passes == ()  # no pass line is invented for bandwidth modules


def test_pbqt_peers_distance():
    r = _parse("pbqt-peers")
    assert [(d.src_gpu.gpu_id, d.dst.gpu_id, d.peers, d.distance, d.link_type, d.link_distance)
            for d in r.distances] == [(28851, 23018, True, 15, "xGMI", 15), (28851, 29122, True, 15, "xGMI", 15)]


def test_pebb_bandwidth_lines_with_elided_tails():
    r = _parse("pebb-bandwidth")
    assert [(b.index, b.total, b.cpu, b.gpu.node, b.gb_s) for b in r.pcie_bandwidth] == [
        (1, 16, 0, 2, 56.298), (2, 16, 1, 2, 55.664), (16, 16, 1, 9, 56.334)]
    assert all(b.d2h and not b.h2d and b.duration_s is None for b in r.pcie_bandwidth)
    assert r.pcie_bandwidth[2].gpu.bdf == "0000:e5:00.0"
    assert r.truncated is True


def test_pebb_distance_covers_8_gpus_from_both_cpus():
    r = _parse("pebb-distance")
    assert len(r.distances) == 16
    assert r.gpu_ids == (28851, 23018, 29122, 22683, 53458, 63883, 53667, 63738)
    near = {(d.src_cpu, d.dst.node) for d in r.distances if d.distance == 20}
    assert near == {(0, 2), (0, 3), (0, 4), (0, 5), (1, 6), (1, 7), (1, 8), (1, 9)}
    assert {d.link_type for d in r.distances} == {"PCIe"}


def test_peqt_results():
    r = _parse("peqt")
    assert [(p.action, p.passed) for p in r.peqt] == [("pcie_act_1", True), ("pcie_act_17", True)]
    assert [a.module for a in r.actions] == ["peqt", None]  # the second action's module line was elided


def test_bandwidth_module_pass_is_marked_untrustworthy():
    text = ("[RESULT] [1.0] Action name :p2p-unidir\n[RESULT] [1.1] Module name :pbqt\n"
            "[RESULT] [1.2] [p2p-unidir] pass: TRUE\n")
    (p,) = rvs.parse(text).passes
    assert p.passed is True and p.trustworthy is False and p.module == "pbqt"


def test_unknown_result_line_raises_naming_it():
    text = (REAL / "mi300x-system-acceptance-docs-gm-single.txt").read_text() + \
        "[RESULT] [209228.4] [metrics_monitor] gm 28851 unplugged\n"
    with pytest.raises(ParseError) as err:
        rvs.parse(text)
    assert err.value.tool == "rvs" and err.value.line_no == 8


@pytest.mark.parametrize("garbage", ["", "rvs: command not found\n", "[INFO  ] [1.0] starting\n"],
                         ids=["empty", "not-found", "info-only"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        rvs.parse(garbage)


def test_argv_builds_config_run():
    assert rvs.argv(config="/opt/rocm/share/rocm-validation-suite/conf/MI300X/gst_single.conf", log_file="gst.txt") == [
        "rvs", "-c", "/opt/rocm/share/rocm-validation-suite/conf/MI300X/gst_single.conf", "-l", "gst.txt"]
    assert rvs.argv(config="pebb.conf", debug_level=3)[-2:] == ["-d", "3"]


@pytest.mark.parametrize("kwargs", [{"config": "gst.yaml"}, {"config": "gst.conf", "debug_level": 9}],
                         ids=["not-conf", "debug"])
def test_argv_rejects_bad_requests(kwargs):
    with pytest.raises(ValueError):
        rvs.argv(**kwargs)


@pytest.mark.parametrize("line", [
    "[RESULT] [1.0] [gst-x] [GPU:: 28851] GFLOPS 1.2.3",
    "[RESULT] [1.0] [iet-x] [GPU:: 28851] Power(W) 1..0",
], ids=["gflops", "power"])
def test_malformed_numbers_raise_parse_error_not_value_error(line):
    with pytest.raises(ParseError) as err:
        rvs.parse(line + "\n")
    assert err.value.line_no == 1
