"""nccl-tests parser on real A100 outputs (older layout: `error` column, NCCL INFO lines inside the table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import nccl_tests

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nccl-tests"


def _parse(name: str) -> nccl_tests.CollectiveRun:
    return nccl_tests.parse((REAL / name).read_text())


def test_allreduce_reads_8_devices_in_one_process():
    run = _parse("a100-8gpu-superbench-testdata-nccl-allreduce.txt")
    assert run.tool == "nccl-tests"
    assert run.gpus_per_process == 8 and run.ranks == 8 and run.nodes == 1
    assert {d.pid for d in run.devices} == {112424}
    assert {d.name for d in run.devices} == {"A100-SXM4-40GB"}
    assert run.devices[5].device == 5 and run.devices[5].bus_id == "0x00" and run.devices[5].host == "localhost"
    assert (run.min_bytes, run.max_bytes, run.validation) == (1, 8589934592, 0)
    assert run.agg_iters is None and run.graph is None  # not printed by this version
    assert run.command is None  # no command line recorded


def test_allreduce_rows_error_column_is_na_and_not_a_count():
    run = _parse("a100-8gpu-superbench-testdata-nccl-allreduce.txt")
    assert run.error_column == "error"
    assert len(run.rows) == 34
    assert run.rows[0].size_bytes == 0 and run.rows[2].size_bytes == 4
    row = run.rows[-1]
    assert (row.size_bytes, row.count, row.dtype, row.redop, row.root) == (8589934592, 2147483648, "float", "sum",
                                                                           None)
    assert row.out_of_place.time_us == 63896 and row.out_of_place.algbw_gb_s == 134.44
    assert row.out_of_place.busbw_gb_s == 235.26 and row.in_place.busbw_gb_s == 235.03
    assert all(r.out_of_place.wrong is None and r.out_of_place.max_error is None for r in run.rows)
    assert run.avg_busbw_gb_s == 68.4048 and run.out_of_bounds == 0 and run.complete


def test_allgather_has_no_redop_column():
    run = _parse("a100-8gpu-superbench-testdata-nccl-allgather.txt")
    assert len(run.rows) == 34
    row = next(r for r in run.rows if r.size_bytes == 1073741824)
    assert row.redop is None and row.root is None and row.count == 33554432
    assert row.out_of_place.time_us == 4413.4 and row.in_place.algbw_gb_s == 252.12
    assert run.avg_busbw_gb_s == 58.2651


def test_alltoall_blank_redop_is_none():
    run = _parse("a100-8gpu-superbench-testdata-nccl-alltoall.txt")
    assert len(run.rows) == 34
    assert {d.pid for d in run.devices} == {167261}
    row = run.rows[5]
    assert (row.size_bytes, row.count, row.redop) == (32, 1, None)
    assert row.out_of_place.time_us == 89.00 and row.in_place.time_us == 85.13
    assert run.rows[-1].in_place.busbw_gb_s == 226.16
    assert run.avg_busbw_gb_s == 58.6481


def test_old_error_column_value_is_kept_as_max_error():
    header = (REAL / "a100-8gpu-superbench-testdata-nccl-allreduce.txt").read_text().splitlines()[:15]
    row = "     1048576        262144   float     sum    74.78   14.02   24.54  2e-07    76.17   13.77   24.09  0e+00"
    run = nccl_tests.parse("\n".join([*header, row]) + "\n")
    assert run.rows[0].out_of_place.max_error == 2e-07 and run.rows[0].out_of_place.wrong is None
    assert run.rows[0].in_place.max_error == 0.0


def test_row_with_too_few_columns_raises_with_line_number():
    lines = (REAL / "a100-8gpu-superbench-testdata-nccl-allreduce.txt").read_text().splitlines()
    lines[20] = "          16             4   float     sum    35.00    0.00"
    with pytest.raises(ParseError) as err:
        nccl_tests.parse("\n".join(lines))
    assert err.value.tool == "nccl-tests" and err.value.line_no == 21
    assert "wrong number of columns" in str(err.value)


def test_argv_builds_command_line():
    assert nccl_tests.argv("all_gather_perf", gpus=8, max_bytes="8G") == [
        "all_gather_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-n", "20", "-w", "5", "-c", "1"]
