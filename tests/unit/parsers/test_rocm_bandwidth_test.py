"""rocm-bandwidth-test parser on real RocmBandwidthTest 2.6.0 outputs (-e, -A, -s/-d) and a weak-pair variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import rocm_bandwidth_test as rbt
from validation.records import LinkBandwidth

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "rocm-bandwidth-test"
WEAK = FIXTURES / "derived" / "rocm-bandwidth-test" / "mi250x-A-weak-pair-4-5.txt"


def _cell(matrix: rbt.Matrix, src: int, dst: int) -> float | None:
    return next(c.gb_s for c in matrix.cells if (c.src, c.dst) == (src, dst))


def test_device_list_has_two_cpus_and_eight_gpus():
    r = rbt.parse((REAL / "mi250x-likely-gpu-cluster-networking-e.txt").read_text())
    assert r.version == "2.6.0"
    assert r.command == "/opt/rocm/bin/rocm-bandwidth-test -e"
    assert [d.index for d in r.devices] == list(range(10))
    assert [d.kind for d in r.devices] == ["CPU"] * 2 + ["GPU"] * 8
    assert r.devices[0].name == "<CPU Name>" and r.devices[0].bdf is None
    assert r.devices[0].allocatable_kb == (1044325060,)
    assert r.devices[1].allocatable_kb == (1056868156,)
    gpu = r.devices[9]
    assert (gpu.name, gpu.bdf, gpu.uuid) == ("<GPU Name>", "XX:0.0", "GPU-0000")
    assert gpu.allocatable_kb == (67092480, 67092480)
    assert r.matrices == () and r.sweeps == ()


def test_bidirectional_matrix_keeps_na_as_none():
    r = rbt.parse((REAL / "mi250x-likely-gpu-cluster-networking-A.txt").read_text())
    assert r.truncated is True  # "<SNIP>" in the source
    (m,) = r.matrices
    assert m.kind == "bidirectional" and m.indices == tuple(range(10))
    assert len(m.cells) == 100
    assert _cell(m, 0, 0) is None and _cell(m, 0, 1) is None and _cell(m, 1, 0) is None
    assert _cell(m, 0, 2) == 47.703
    assert _cell(m, 2, 3) == 101.458
    assert _cell(m, 9, 8) == 100.908
    assert _cell(m, 8, 9) == 100.908
    assert sum(c.gb_s is None for c in m.cells) == 12  # 8 GPU diagonals + the 2x2 CPU block


def test_single_pair_sweep_has_20_sizes_from_1_kib_to_512_mib():
    r = rbt.parse((REAL / "mi250x-likely-gpu-cluster-networking-s0-d4.txt").read_text())
    (s,) = r.sweeps
    assert (s.kind, s.src, s.src_type, s.dst, s.dst_type) == ("unidirectional", 0, "CPU", 4, "GPU")
    assert len(s.samples) == 20
    first, last = s.samples[0], s.samples[-1]
    assert (first.size_bytes, first.avg_time_us, first.avg_bw_gb_s, first.min_time_us, first.peak_bw_gb_s) == (
        1024, 5.400, 0.190, 5.280, 0.194)
    assert last.size_bytes == 512 * 1024 * 1024
    assert (last.avg_time_us, last.avg_bw_gb_s, last.min_time_us, last.peak_bw_gb_s) == (
        18722.762, 28.675, 18722.482, 28.675)
    assert s.samples[10].size_bytes == 1 << 20 and s.samples[10].peak_bw_gb_s == 25.110


def test_weak_pair_variant_carries_both_directions_of_the_pair():
    (m,) = rbt.parse(WEAK.read_text()).matrices
    assert _cell(m, 4, 5) == 50.822 and _cell(m, 5, 4) == 50.822
    assert _cell(m, 4, 6) == 101.089 and _cell(m, 2, 3) == 101.458


def test_matrix_row_with_missing_cell_raises_naming_the_line():
    lines = (REAL / "mi250x-likely-gpu-cluster-networking-A.txt").read_text().splitlines()
    lines[10] = lines[10].rsplit(" ", 1)[0]
    with pytest.raises(ParseError) as err:
        rbt.parse("\n".join(lines))
    assert err.value.tool == "rocm-bandwidth-test" and err.value.line_no == 11
    assert "9 cells for 10 columns" in str(err.value)


@pytest.mark.parametrize("garbage", ["", "RocmBandwidthTest Version: 2.6.0\n", "Segmentation fault\n"],
                         ids=["empty", "banner-only", "crash"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        rbt.parse(garbage)


def test_argv_builds_pair_and_matrix_command_lines():
    assert rbt.argv(src=0, dst=4) == ["rocm-bandwidth-test", "-s", "0", "-d", "4"]
    assert rbt.argv(src=2, dst=3, bidirectional=True) == ["rocm-bandwidth-test", "-s", "2", "-d", "3", "-b"]
    assert rbt.argv(all_pairs="bi") == ["rocm-bandwidth-test", "-A"]
    assert rbt.argv(all_pairs="uni") == ["rocm-bandwidth-test", "-a"]


@pytest.mark.parametrize("kwargs", [{}, {"src": 0}, {"all_pairs": "x"}, {"all_pairs": "bi", "src": 1},
                                    {"src": -1, "dst": 2}], ids=["nothing", "src-only", "bad-mode", "both", "neg"])
def test_argv_rejects_incomplete_requests(kwargs):
    with pytest.raises(ValueError):
        rbt.argv(**kwargs)


def test_long_malformed_matrix_row_is_refused_without_backtracking_blowup():
    # Found by the fuzz test: a nested quantifier made this line take exponential time to reject.
    text = "Bidirectional copy peak bandwidth GB/s\nD/D 0 1\n0 " + "1" * 60 + "!\n"
    with pytest.raises(ParseError) as err:
        rbt.parse(text)
    assert err.value.line_no == 3


def test_matrix_cells_become_named_links_with_the_device_list():
    # -e and -A come from the same host in the same document (gpu-cluster-networking single-node-config).
    devices = rbt.parse((REAL / "mi250x-likely-gpu-cluster-networking-e.txt").read_text()).devices
    names = rbt.endpoint_names(devices)
    assert names[0] == "cpu0" and names[1] == "cpu1" and names[2] == "gpu0" and names[9] == "gpu7"
    (m,) = rbt.parse(WEAK.read_text()).matrices
    named = rbt.links(m, names)
    assert len(named) == 88
    assert LinkBandwidth(src="gpu2", dst="gpu3", gb_s=50.822) in named
    assert LinkBandwidth(src="cpu0", dst="gpu0", gb_s=47.703) in named


def test_links_without_device_names_raise():
    (m,) = rbt.parse(WEAK.read_text()).matrices
    with pytest.raises(ValueError, match="-e device list"):
        rbt.links(m, {0: "cpu0"})
