"""rccl-tests parser on real MI300X/MI325X outputs and their degraded variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import rccl_tests

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "rccl-tests"
DERIVED = FIXTURES / "derived" / "rccl-tests"
EIGHT = "mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt"
SIXTEEN = "mi300x-16gpu-2node-hisohara-ai-scripts-aac10-allreduce-rocm642.txt"
MULTI = "mi325x-hisohara-ai-scripts-aac11-allreduce-multi-grep.txt"


def _parse(path: Path) -> rccl_tests.CollectiveRun:
    return rccl_tests.parse(path.read_text())


def test_single_node_run_has_8_ranks_on_one_host_and_31_sizes():
    run = _parse(REAL / EIGHT)
    assert run.tool == "rccl-tests"
    assert run.ranks == 8 and run.nodes == 1
    assert [d.device for d in run.devices] == list(range(8))
    assert {d.name for d in run.devices} == {"AMD Instinct MI300X"}
    assert run.devices[0].group == 0 and run.devices[0].pid == 7085
    assert run.devices[7].bus_id == "0000:e5:00"
    assert run.devices[3].host == "1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"
    assert len(run.rows) == 31
    assert run.rows[0].size_bytes == 8 and run.rows[-1].size_bytes == 8589934592


def test_single_node_header_facts():
    run = _parse(REAL / EIGHT)
    assert run.command == ("mpirun -np 8 --mca pml ob1 --mca btl self,vader ./rccl-tests/build/all_reduce_perf "
                           "-b 8 -e 8G -f 2 -g 1")
    assert run.tests_version == "develop:a7809b3"
    assert (run.threads, run.gpus_per_process, run.min_bytes, run.max_bytes) == (1, 1, 8, 8589934592)
    assert (run.warmup_iters, run.iters, run.agg_iters, run.validation, run.graph) == (5, 20, 1, 1, 0)
    assert run.step == "2(factor)"
    assert run.library_version is None  # this older build prints no "RCCL version" line


def test_single_node_rows_carry_both_halves():
    run = _parse(REAL / EIGHT)
    row = next(r for r in run.rows if r.size_bytes == 16777216)
    assert (row.count, row.dtype, row.redop, row.root) == (4194304, "float", "sum", -1)
    assert row.out_of_place.time_us == 149.9
    assert row.out_of_place.algbw_gb_s == 111.92
    assert row.out_of_place.busbw_gb_s == 195.85
    assert row.out_of_place.wrong == 0
    assert row.in_place.time_us == 156.3
    assert row.in_place.busbw_gb_s == 187.83
    last = run.rows[-1]
    assert last.out_of_place.time_us == 47617 and last.in_place.busbw_gb_s == 315.91
    assert all(r.out_of_place.wrong == 0 and r.in_place.wrong == 0 for r in run.rows)


def test_single_node_closing_lines():
    run = _parse(REAL / EIGHT)
    assert run.avg_busbw_gb_s == 110.464
    assert run.out_of_bounds == 0 and run.out_of_bounds_ok is True
    assert run.complete is True
    assert run.truncated is True  # the "<snip>" line of the source


def test_two_node_run_maps_16_ranks_to_two_hosts_and_reads_rccl_versions():
    run = _parse(REAL / SIXTEEN)
    assert run.ranks == 16 and run.nodes == 2
    assert run.gpus_per_process == 1
    assert [d.host for d in run.devices] == ["gpu-53"] * 8 + ["gpu-56"] * 8
    assert run.devices[8].device == 0 and run.devices[8].pid == 366643
    assert run.devices[15].bus_id == "0000:e5:00.0"
    assert run.devices[0].group is None
    assert run.library_version == "2.22.3-HEAD:7d8d67c"
    assert run.hip_version == "6.4.43484-123eb5128"
    assert run.rocm_version == "6.4.2.0-120-e7d83f5"
    assert run.hostname == "gpu-53"
    assert run.library_path == "/shared/apps/ubuntu/opt/rocm-6.4.2/lib/librccl.so.1"
    assert run.tests_version == "develop:448c4c7"


def test_two_node_rows_and_average():
    run = _parse(REAL / SIXTEEN)
    assert len(run.rows) == 32
    assert run.max_bytes == 17179869184
    big = run.rows[-1]
    assert big.size_bytes == 17179869184 and big.count == 4294967296
    assert big.out_of_place.busbw_gb_s == 357.46 and big.in_place.busbw_gb_s == 357.41
    dip = next(r for r in run.rows if r.size_bytes == 1048576)
    assert dip.out_of_place.time_us == 414.8 and dip.out_of_place.busbw_gb_s == 4.74
    assert run.avg_busbw_gb_s == 92.3318


def test_rejects_grep_filtered_multi_run_log_with_hint():
    with pytest.raises(ParseError) as err:
        _parse(REAL / MULTI)
    assert err.value.tool == "rccl-tests"
    assert err.value.line_no == 2
    assert "grep-filtered log of 4 runs" in str(err.value)
    assert err.value.hint and "parse each run's own log" in err.value.hint


def test_filtered_log_reads_as_labelled_sections():
    sections = rccl_tests.parse_filtered((REAL / MULTI).read_text())
    assert [s.label for s in sections] == ["1-node", "2-node", "4-node", "8-node"]
    assert [len(s.rows) for s in sections] == [3, 3, 3, 3]
    assert sections[1].rows[2].size_bytes == 17179869184
    assert sections[1].rows[2].out_of_place.busbw_gb_s == 350.24
    assert sections[3].rows[0].in_place.time_us == 24588


def test_halved_bus_bandwidth_variant_is_carried_row_by_row():
    run = _parse(DERIVED / "mi300x-8gpu-aac8-allreduce-halved-busbw-1g-up.txt")
    by_size = {r.size_bytes: r for r in run.rows}
    assert by_size[536870912].out_of_place.busbw_gb_s == 310.37  # untouched
    assert by_size[1073741824].out_of_place.busbw_gb_s == 156.83
    assert by_size[8589934592].in_place.busbw_gb_s == 157.96
    assert by_size[8589934592].out_of_place.algbw_gb_s == 180.40


def test_wrong_count_of_one_is_kept_on_its_row():
    run = _parse(DERIVED / "mi300x-8gpu-aac8-allreduce-wrong1-256m.txt")
    wrong = [(r.size_bytes, r.out_of_place.wrong, r.in_place.wrong) for r in run.rows
             if r.out_of_place.wrong or r.in_place.wrong]
    assert wrong == [(268435456, 1, 0)]


def test_truncated_run_without_average_is_marked_incomplete():
    text = (REAL / EIGHT).read_text().split("# Errors with asterisks")[0]
    run = rccl_tests.parse(text)
    assert run.complete is False and run.avg_busbw_gb_s is None
    assert len(run.rows) == 31


def test_unknown_line_inside_the_table_names_line_and_expectation():
    lines = (REAL / EIGHT).read_text().splitlines()
    lines.insert(30, "segfault in rank 3")
    with pytest.raises(ParseError) as err:
        rccl_tests.parse("\n".join(lines))
    assert err.value.line_no == 31
    assert err.value.line == "segfault in rank 3"
    assert "result row" in (err.value.expected or "")


@pytest.mark.parametrize("garbage", ["", "   \n", "hello world\n", "\x00\x01\x02", "# nThread 1 nGpus 1\n"],
                         ids=["empty", "blank", "prose", "binary", "header-fragment"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        rccl_tests.parse(garbage)


def test_ansi_colour_codes_are_tolerated():
    text = (REAL / EIGHT).read_text().replace("# Avg bus bandwidth", "\x1b[32m# Avg bus bandwidth")
    assert rccl_tests.parse(text).avg_busbw_gb_s == 110.464


def test_na_and_asterisk_in_wrong_column():
    row = rccl_tests.parse(
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
        "   busbw #wrong\n"
        "           8             2     float     sum      -1    19.28    0.00    0.00    N/A    17.24    0.00"
        "    0.00     3*\n").rows[0]
    assert row.out_of_place.wrong is None and row.out_of_place.over_threshold is False
    assert row.in_place.wrong == 3 and row.in_place.over_threshold is True


def test_argv_builds_all_reduce_command_line():
    assert rccl_tests.argv(gpus=8) == ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "8",
                                       "-n", "20", "-w", "5", "-c", "1"]
    assert rccl_tests.argv("/opt/rccl-tests/all_gather_perf", gpus=1, max_bytes="8G", dtype="bfloat16",
                           op="sum", check=False)[-6:] == ["-c", "0", "-d", "bfloat16", "-o", "sum"]


@pytest.mark.parametrize("kwargs", [{"gpus": 0}, {"gpus": 8, "iters": 0}, {"gpus": 8, "step_factor": 1}],
                         ids=["no-gpus", "no-iters", "step-1"])
def test_argv_rejects_nonsense(kwargs):
    with pytest.raises(ValueError):
        rccl_tests.argv(**kwargs)


def test_argv_rejects_a_binary_that_is_not_a_collective_test():
    with pytest.raises(ValueError, match="all_reduce_perf"):
        rccl_tests.argv("rm", gpus=1)


BLOG = "mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt"


def test_complete_blog_run_reads_rocm_63_versions_and_32_sizes():
    run = _parse(REAL / BLOG)
    assert run.truncated is False and run.complete is True
    assert run.library_version == "2.22.3-develop:f5b15f2"
    assert run.hip_version == "6.3.42131-fa1d09cbd" and run.rocm_version == "6.3.0.0-39-ce2be3b"
    assert run.ranks == 8 and run.nodes == 1 and run.hostname == "host"
    assert [d.bus_id for d in run.devices][:3] == ["0000:0c:00.0", "0000:22:00.0", "0000:38:00.0"]
    assert len(run.rows) == 32
    assert run.avg_busbw_gb_s == 116.669


def test_blog_run_keeps_the_in_place_dip_at_4_mib():
    run = _parse(REAL / BLOG)
    row = next(r for r in run.rows if r.size_bytes == 4194304)
    assert row.out_of_place.busbw_gb_s == 141.91
    assert (row.in_place.time_us, row.in_place.algbw_gb_s, row.in_place.busbw_gb_s) == (129.0, 32.52, 56.92)
    assert run.rows[-1].size_bytes == 17179869184 and run.rows[-1].out_of_place.busbw_gb_s == 318.98


def test_two_runs_in_one_file_are_refused_with_hint():
    text = (REAL / EIGHT).read_text()
    with pytest.raises(ParseError) as err:
        rccl_tests.parse(text + text)
    assert err.value.line_no == 54
    assert "several runs" in (err.value.hint or "")


def test_library_version_line_without_colon_is_read():
    lines = (REAL / EIGHT).read_text().splitlines()
    lines.insert(14, "RCCL version 2.22.3-develop:f5b15f2")
    assert rccl_tests.parse("\n".join(lines)).library_version == "2.22.3-develop:f5b15f2"
