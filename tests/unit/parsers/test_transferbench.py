"""TransferBench p2p parser on the MI300X docs example, an MI250X-class run and a weak-link variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import transferbench
from validation.records import LinkBandwidth

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MI300X = FIXTURES / "real" / "transferbench" / "mi300x-x8-transferbench-docs-presets-p2p.txt"
MI250X = FIXTURES / "real" / "transferbench" / "mi250x-likely-gpu-cluster-networking-p2p-4M.txt"
A2A = FIXTURES / "real" / "transferbench" / "mi300x-x8-rocm-blogs-rccl-xgmi-a2a-64M-8cu.txt"
WEAK = FIXTURES / "derived" / "transferbench" / "mi300x-x8-p2p-weak-gpu2-to-gpu5.txt"

ENDPOINTS = ("cpu0", "cpu1", *(f"gpu{i}" for i in range(8)))


def _link(result: transferbench.TransferBenchResult, src: str, dst: str) -> float:
    return next(link.gb_s for link in result.unidirectional.links if (link.src, link.dst) == (src, dst))


def test_mi300x_settings_and_size():
    r = transferbench.parse(MI300X.read_text())
    assert r.command == "TransferBench p2p"
    assert r.version is None  # the docs excerpt starts at the [P2P Related] block
    assert r.bytes_per_direction == 268435456
    assert len(r.settings) == 9
    by_name = {s.name: s for s in r.settings}
    assert by_name["NUM_GPU_SE"].value == "304" and by_name["NUM_GPU_SE"].section == "P2P Related"
    assert by_name["USE_GPU_DMA"].description == "Using GPU-GFX as GPU executor"
    assert r.truncated is False


def test_mi300x_unidirectional_matrix_is_100_directed_links():
    uni = transferbench.parse(MI300X.read_text()).unidirectional
    assert uni.endpoints == ENDPOINTS
    assert uni.executor == "GFX"
    assert len(uni.links) == 100 and uni.missing == ()
    assert uni.links[0] == LinkBandwidth(src="cpu0", dst="cpu0", gb_s=37.62)
    r = transferbench.parse(MI300X.read_text())
    assert _link(r, "cpu0", "gpu0") == 39.44
    assert _link(r, "cpu1", "gpu7") == 39.56
    assert _link(r, "gpu0", "gpu0") == 1618.87
    assert _link(r, "gpu3", "gpu1") == 49.02
    assert _link(r, "gpu7", "cpu1") == 55.34
    assert [(a.kind, a.gb_s) for a in uni.averages] == [("CPU->CPU", 37.94), ("CPU->GPU", 33.67),
                                                        ("GPU->CPU", 55.25), ("GPU->GPU", 48.65)]


def test_mi300x_bidirectional_cells_keep_forward_reverse_and_total():
    bi = transferbench.parse(MI300X.read_text()).bidirectional
    assert bi.endpoints == ENDPOINTS
    assert len(bi.cells) == 100
    cell = next(c for c in bi.cells if (c.src, c.dst) == ("gpu4", "cpu1"))
    assert (cell.forward_gb_s, cell.reverse_gb_s, cell.total_gb_s) == (54.85, 34.45, 89.30)
    diag = next(c for c in bi.cells if (c.src, c.dst) == ("gpu5", "gpu5"))
    assert (diag.forward_gb_s, diag.reverse_gb_s, diag.total_gb_s) == (None, None, None)
    assert [a.gb_s for a in bi.averages] == [35.83, 37.51, 36.98, 46.28]


def test_mi250x_v150_layout_with_blank_lines_and_snip():
    r = transferbench.parse(MI250X.read_text())
    assert r.version == "1.50"
    assert r.bytes_per_direction == 4194304
    assert r.truncated is True
    assert [s.name for s in r.settings] == ["ALWAYS_VALIDATE"]
    assert r.settings[0].section == "Common"
    assert _link(r, "gpu0", "gpu1") == 64.58
    assert _link(r, "gpu6", "gpu0") == 47.58
    assert _link(r, "cpu1", "cpu1") == 19.62
    assert r.unidirectional.averages[3].gb_s == 37.74
    cell = next(c for c in r.bidirectional.cells if (c.src, c.dst) == ("gpu0", "gpu1"))
    assert (cell.forward_gb_s, cell.reverse_gb_s, cell.total_gb_s) == (62.40, 65.21, 127.61)
    cpu = next(c for c in r.bidirectional.cells if (c.src, c.dst) == ("cpu1", "cpu0"))
    assert cpu.forward_gb_s == 12.85
    assert [a.gb_s for a in r.bidirectional.averages] == [15.29, 19.72, 19.39, 36.17]


def test_weak_link_variant_carries_the_halved_pair_only():
    weak = transferbench.parse(WEAK.read_text())
    real = transferbench.parse(MI300X.read_text())
    assert _link(weak, "gpu2", "gpu5") == 24.17
    assert _link(weak, "gpu5", "gpu2") == 48.51
    changed = [(a.src, a.dst) for a, b in zip(weak.unidirectional.links, real.unidirectional.links, strict=True)
               if a != b]
    assert changed == [("gpu2", "gpu5")]


def test_na_in_unidirectional_matrix_goes_to_missing():
    lines = MI300X.read_text().splitlines()
    lines[16] = lines[16].replace("55.36     55.25", "  N/A     55.25")
    r = transferbench.parse("\n".join(lines))
    assert r.unidirectional.missing == (("gpu0", "cpu0"),)
    assert len(r.unidirectional.links) == 99


def test_unknown_result_line_is_refused_with_hint():
    with pytest.raises(ParseError) as err:
        transferbench.parse("TransferBench v1.66\nTest 1:\n Executor: GPU 00 |  123.4 GB/s\n")
    assert err.value.tool == "transferbench" and err.value.line_no == 3
    assert "healthcheck" in (err.value.hint or "")


def test_row_with_missing_cell_raises():
    lines = MI300X.read_text().splitlines()
    lines[17] = lines[17].rsplit(" ", 1)[0]
    with pytest.raises(ParseError) as err:
        transferbench.parse("\n".join(lines))
    assert err.value.line_no == 18 and "9 cells for 10 columns" in str(err.value)


@pytest.mark.parametrize("garbage", ["", "nothing to see\n", "Bytes Per Direction 4\n"],
                         ids=["empty", "prose", "no-matrix"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        transferbench.parse(garbage)


def test_argv_builds_preset_command_lines():
    assert transferbench.argv() == ["TransferBench", "p2p"]
    assert transferbench.argv("/opt/rocm/bin/TransferBench", preset="a2a", bytes_per_transfer="256M") == [
        "/opt/rocm/bin/TransferBench", "a2a", "256M"]


@pytest.mark.parametrize("kwargs", [{"preset": "p3p"}, {"bytes_per_transfer": "1T"}, {"bytes_per_transfer": "0"}],
                         ids=["preset", "unit", "zero"])
def test_argv_rejects_unknown_preset_and_sizes(kwargs):
    with pytest.raises(ValueError):
        transferbench.argv(**kwargs)


def test_long_malformed_averages_header_is_refused_quickly():
    # The averages-header pattern once had a nested quantifier; this line would have hung it.
    text = MI300X.read_text() + "A->" + "AAAA->" * 40 + "A!\n"
    with pytest.raises(ParseError) as err:
        transferbench.parse(text)
    assert err.value.line_no == 61


def test_a2a_header_settings_and_benchmark_title():
    r = transferbench.parse(A2A.read_text())
    assert r.command == "./TransferBench a2a 64M 8"
    assert r.version == "1.60.00"
    assert len(r.settings) == 36
    assert [s.name for s in r.settings if s.section == "AllToAll Related"] == [
        "A2A_DIRECT", "A2A_LOCAL", "A2A_MODE", "NUM_GPU_DEVICES", "NUM_QUEUE_PAIRS", "NUM_SUB_EXEC",
        "USE_DMA_EXEC", "USE_FINE_GRAIN", "USE_REMOTE_READ"]
    assert next(s.value for s in r.settings if s.name == "CLOSEST_NIC") == "auto"
    assert r.benchmark == "GPU-GFX All-To-All benchmark"
    assert r.notes == ("Copying 67108864 bytes between directly connected pairs of GPUs using 8 CUs (56 Transfers)",)
    assert r.unidirectional is None and r.bidirectional is None and r.truncated is False


def test_a2a_test_has_8_executors_and_56_transfers():
    (test,) = transferbench.parse(A2A.read_text()).tests
    assert test.number == 1
    assert [e.executor for e in test.executors] == [f"gpu{i}" for i in range(8)]
    gpu3 = test.executors[3]
    assert (gpu3.gb_s, gpu3.duration_ms, gpu3.bytes, gpu3.sum_gb_s) == (315.094, 1.491, 469762048, 326.649)
    assert len(test.transfers) == 56 and [t.index for t in test.transfers] == list(range(56))
    t24 = test.transfers[24]
    assert (t24.gb_s, t24.duration_ms, t24.bytes) == (45.142, 1.487, 67108864)
    assert (t24.src, t24.executor, t24.dst, t24.sub_executors) == ("F3", "G003:008", "F4", 8)
    assert t24.link == LinkBandwidth(src="gpu3", dst="gpu4", gb_s=45.142)
    agg = test.aggregate
    assert (agg.gb_s, agg.duration_ms, agg.bytes, agg.overhead_ms) == (1937.924, 1.939, 3758096384, 0.447)


def test_a2a_summary_matrix_is_56_directed_links():
    r = transferbench.parse(A2A.read_text())
    summary = r.summary
    assert summary.bytes_per_transfer == 67108864
    assert summary.endpoints == tuple(f"gpu{i}" for i in range(8))
    assert len(summary.links) == 56
    assert summary.missing == tuple((f"gpu{i}", f"gpu{i}") for i in range(8))
    weakest = min(summary.links, key=lambda link: link.gb_s)
    assert weakest == LinkBandwidth(src="gpu7", dst="gpu0", gb_s=45.095)
    assert summary.rows[0] == transferbench.SummaryRow(src="gpu0", total_gb_s=326.317, actual_gb_s=316.469)
    assert summary.rows[7].actual_gb_s == 315.664
    assert [f.gb_s for f in summary.column_totals][:3] == [326.350, 325.359, 324.955]
    assert summary.rtotal_trailing_gb_s == (2606.891, 315.664, 319.297)
    assert [(f.label, f.gb_s) for f in r.figures] == [("Average bandwidth (GPU Timed)", 46.552),
                                                     ("Aggregate bandwidth (GPU Timed)", 2606.891),
                                                     ("Aggregate bandwidth (CPU Timed)", 1937.924)]


def test_a2a_transfer_rows_agree_with_the_summary_cells():
    r = transferbench.parse(A2A.read_text())
    cells = {(link.src, link.dst): link.gb_s for link in r.summary.links}
    assert {(t.link.src, t.link.dst): t.gb_s for t in r.tests[0].transfers} == cells


def test_transfer_with_unknown_memory_letter_raises():
    text = A2A.read_text().replace("F0 -> G000:008 -> F1", "Q0 -> G000:008 -> F1")
    with pytest.raises(ParseError) as err:
        transferbench.parse(text)
    assert err.value.line_no == 49 and "memory" in str(err.value)


def test_config_file_tests_with_comments_null_memory_and_broadcast():
    # Lines as TransferBench prints them for its examples/example.cfg (comments echoed with "##").
    text = (
        "TransferBench v1.62.00\n"
        '## "Memset" by GPU 0 to GPU 0 memory\n'
        "Test 4:\n"
        " Executor: GPU 00 | 1487.329 GB/s |    0.180 ms |    268435456 bytes | 1493.789 GB/s (sum)\n"
        "     Transfer 00  | 1493.789 GB/s |    0.180 ms |    268435456 bytes | N -> G000:032 -> G0\n"
        " Aggregate (CPU)  |  698.995 GB/s |    0.384 ms |    268435456 bytes | Overhead: 0.204 ms\n"
        "## Broadcast from GPU 0 to GPU 0 and GPU 1\n"
        "Test 6:\n"
        " Executor: GPU 00 |   58.313 GB/s |    4.603 ms |    268435456 bytes | 58.327  GB/s (sum)\n"
        "     Transfer 00  |   58.327 GB/s |    4.602 ms |    268435456 bytes | G0 -> G000:016 -> G0G1\n"
        " Aggregate (CPU)  |   56.768 GB/s |    4.729 ms |    268435456 bytes | Overhead: 0.125 ms\n")
    r = transferbench.parse(text)
    assert r.notes == ('"Memset" by GPU 0 to GPU 0 memory', "Broadcast from GPU 0 to GPU 0 and GPU 1")
    memset, broadcast = r.tests
    assert (memset.number, broadcast.number) == (4, 6)
    t = memset.transfers[0]
    assert t.src_devices == () and t.dst_devices == ("gpu0",) and t.sub_executors == 32 and t.link is None
    b = broadcast.transfers[0]
    assert b.dst_devices == ("gpu0", "gpu1") and b.link is None and b.gb_s == 58.327
    assert broadcast.executors[0].sum_gb_s == 58.327
