"""Kernel logs from real machines (tests/fixtures/real/dmesg/SOURCES.md): the GPU error lines the
health mode counts, their timestamps, and every recorded format. Expected values typed from the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import dmesg

DMESG = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "dmesg"


def parse(name: str) -> dmesg.DmesgRecord:
    return dmesg.parse((DMESG / name).read_text())


def test_xid_48_63_94_each_count_with_their_seconds_since_boot() -> None:
    record = parse("nvidia-dgx-x8-uncorrectable-error-runbook-dmesg-grep-xid48-63-94.txt")
    assert record.command_line == "dmesg  | grep Xid" and record.form == "monotonic"
    errors = dmesg.gpu_errors(record)
    assert [e.seconds for e in errors] == [430954.509105, 430954.532443, 430954.533994]
    assert "An uncorrectable double bit error (DBE)" in errors[0].text


def test_a_gpu_fallen_off_the_bus_counts_although_it_has_no_xid() -> None:
    record = parse("l40s-nvsentinel-issue155-dmesg-fallen-off-bus-no-xid-570.txt")
    assert len(record.lines) == 3        # the two indented continuation lines belong to the first message
    errors = dmesg.gpu_errors(record)
    assert errors[0].seconds == 1843.308145 and "fallen off the bus" in errors[0].text
    assert [e.seconds for e in errors] == [1843.308145, 1843.439662]      # and the failed probe; not the load line


def test_mi300x_uncorrectable_athub_error_and_aca_banks_are_gpu_errors() -> None:
    errors = dmesg.gpu_errors(parse("mi300x-x8-rocm-issue4021-c16-athub-ue-aca-padded-timestamps.txt"))
    assert errors[0].seconds == 8390.785329
    assert errors[0].text.startswith("amdgpu 0000:68:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT)")


def test_dmesg_T_wall_clock_and_journal_lines_have_no_seconds_since_boot() -> None:
    wall = parse("mi300x-x8-rocm-issue2494-c15-dmesg-T-interleaved-gfxhub0-retry-fault.txt")
    assert wall.form == "wallclock" and all(line.seconds is None and line.when for line in wall.lines)
    journal = parse("nvidia-ikllama-issue425-journal-xid31-mmu-fault-segfault.txt")
    assert journal.form == "journal"
    (xid,) = dmesg.gpu_errors(journal)
    assert xid.source == "kernel" and xid.when == "May 15 08:57:36"
    assert "): 31, pid=80798, name=llama-server" in xid.text


def test_healthy_driver_lines_are_not_errors_in_a_full_log_but_are_in_an_errors_only_log() -> None:
    line = "[    5.000000] amdgpu 0000:05:00.0: amdgpu: SMU is initialized successfully!\n"
    assert dmesg.gpu_errors(dmesg.parse(line)) == ()
    assert len(dmesg.gpu_errors(dmesg.parse(line), errors_only_log=True)) == 1     # from dmesg --level=err,...


def test_every_recorded_kernel_log_parses() -> None:
    files = sorted(DMESG.glob("*.txt"))
    assert len(files) >= 28
    for path in files:
        assert dmesg.parse(path.read_text()).lines, path.name


def test_two_formats_in_one_text_are_refused() -> None:
    with pytest.raises(ParseError, match="several kernel log formats"):
        dmesg.parse("[    1.000000] a\n[Tue Mar  4 10:00:00 2025] b\n")
