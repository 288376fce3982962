"""ib_write_bw (perftest) parser on AMD's recorded bidirectional RoCE run (ROCm/gpu-cluster-networking docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation import parsers
from validation.errors import ParseError
from validation.parsers.ib_write_bw import BwRow, parse

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "ib_write_bw" / \
    "amd-gpu-cluster-networking-d2d-bidir-roce.txt"


def test_banner_gives_device_link_type_gid_index_mtu_and_direction() -> None:
    r = parse(REAL.read_text())
    assert (r.device, r.link_type, r.gid_index, r.mtu_bytes, r.qps) == ("<RDMA-NIC-2>", "Ethernet", 3, 4096, 1)
    assert (r.transport_type, r.connection_type) == ("IB", "RC")
    assert r.test == "RDMA_Write Bidirectional BW Test" and r.bidirectional
    assert r.unit_reported == "Gb/sec"
    assert r.command is not None and r.command.startswith("(ib_write_bw -b -a -d <RDMA-NIC-1> --report_gbits")


def test_every_size_row_is_read_with_gb_s_kept_as_printed() -> None:
    r = parse(REAL.read_text())
    assert len(r.rows) == 23
    assert r.rows[0] == BwRow(size_bytes=2, iterations=5000, bw_peak_gb_s=0.142947, bw_average_gb_s=0.012281,
                              msg_rate_mpps=0.767588)
    assert r.rows[11] == BwRow(size_bytes=4096, iterations=5000, bw_peak_gb_s=188.76, bw_average_gb_s=188.56,
                               msg_rate_mpps=5.754307)
    assert (r.largest.size_bytes, r.largest.bw_average_gb_s) == (8388608, 204.59)


def test_mb_per_sec_tables_are_converted_from_mib_per_second_to_gb_s() -> None:
    # The same table as if run without --report_gbits: perftest's MB is 2^20 bytes.
    r = parse(REAL.read_text().replace("[Gb/sec]", "[MB/sec]"))
    assert r.unit_reported == "MB/sec"
    assert r.largest.bw_average_gb_s == pytest.approx(204.59 * 1048576 * 8 / 1e9)


def test_perftest_warnings_are_kept_not_refused() -> None:
    text = "WARNING: BW peak won't be measured in this run.\n" + REAL.read_text()
    assert parse(text).warnings == ("WARNING: BW peak won't be measured in this run.",)


def test_an_unknown_bandwidth_unit_is_refused_with_a_hint() -> None:
    with pytest.raises(ParseError, match="bandwidth unit 'KB/sec' not known") as info:
        parse(REAL.read_text().replace("[Gb/sec]", "[KB/sec]"))
    assert "--report_gbits" in (info.value.hint or "")


def test_an_unknown_line_is_refused_with_its_line_number() -> None:
    lines = REAL.read_text().splitlines()
    lines.insert(5, "   Something new    : 7")
    with pytest.raises(ParseError, match="line not understood") as info:
        parse("\n".join(lines))
    assert info.value.line_no == 6


def test_a_run_that_never_printed_rows_is_refused() -> None:
    banner = "\n".join(REAL.read_text().splitlines()[:23])
    with pytest.raises(ParseError, match="no result rows"):
        parse(banner)


def test_a_latency_table_is_not_taken_for_a_bandwidth_one() -> None:
    with pytest.raises(ParseError, match="line not understood"):
        parse(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2       20000          0.88\n")


def test_the_parser_is_registered_under_its_tool_name() -> None:
    assert "ib_write_bw" in parsers.tools()
    assert parsers.parse("ib_write_bw", REAL.read_text()).gid_index == 3
