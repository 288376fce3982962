"""Per-rail NIC checks on a recorded real ibv_devinfo output (2 ConnectX-3 HCAs, port 1 up, port 2 down)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.multinode.rails import firmware_outliers, judge_rails, parse_ibv_devinfo
from validation.records import Status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "real" / "ibv-devinfo" / "mlx4-2hca-heioy-books-ibv-devinfo.txt"
OLD_FW = FIXTURES / "derived" / "ibv-devinfo" / "mlx4-2hca-heioy-books-ibv-devinfo-fw-2.40.7000-mlx4_0.txt"


def test_every_port_of_both_hcas_is_read_with_state_link_layer_mtu_and_firmware() -> None:
    ports = parse_ibv_devinfo(REAL.read_text())
    assert [(p.rail, p.state) for p in ports] == [
        ("mlx4_1:1", "PORT_ACTIVE"), ("mlx4_1:2", "PORT_DOWN"), ("mlx4_0:1", "PORT_ACTIVE"), ("mlx4_0:2", "PORT_DOWN")]
    assert {(p.link_layer, p.active_mtu, p.fw_ver) for p in ports} == {("InfiniBand", 4096, "2.42.5000")}


def test_declared_active_rails_pass_and_a_down_rail_fails_by_name() -> None:
    ports = parse_ibv_devinfo(REAL.read_text())
    verdicts = judge_rails("node07", ports, ["mlx4_1:1", "mlx4_0:1", "mlx4_1:2"])
    assert [v.status for v in verdicts] == [Status.PASS, Status.PASS, Status.FAIL]
    assert "node07 mlx4_1:2 rdma_port_state PORT_DOWN state != expected PORT_ACTIVE" in verdicts[2].reason


def test_a_declared_rail_the_node_does_not_have_is_not_reported_not_passed() -> None:
    (verdict,) = judge_rails("node07", parse_ibv_devinfo(REAL.read_text()), ["mlx5_0:1"])
    assert verdict.status == Status.ERROR and verdict.code == "RF-NOT-REPORTED"


def test_without_declared_rails_ports_are_only_recorded() -> None:
    verdicts = judge_rails("node07", parse_ibv_devinfo(REAL.read_text()), [])
    assert {v.status for v in verdicts} == {Status.SKIP}
    assert len(verdicts) == 4


def test_node_with_other_nic_firmware_than_the_fleet_is_named() -> None:
    real, old = parse_ibv_devinfo(REAL.read_text()), parse_ibv_devinfo(OLD_FW.read_text())
    assert firmware_outliers({"node01": real, "node02": real, "node03": old}) == {
        "node03": "NIC firmware mlx4_0 2.40.7000 differs from the fleet's 2.42.5000"}


def test_no_devices_is_an_empty_list_not_an_error() -> None:
    assert parse_ibv_devinfo("No IB devices found\n") == ()


def test_text_that_is_not_ibv_devinfo_is_refused() -> None:
    with pytest.raises(ParseError, match="line not understood before the first device"):
        parse_ibv_devinfo("rocminfo 6.1.2\nAgent 1\n")
