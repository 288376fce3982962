"""Per-rail NIC checks on a recorded real ibv_devinfo output (2 ConnectX-3 HCAs, port 1 up, port 2 down) and
on AMD's recorded ib_write_bw run (bidirectional RoCE, GID index 3, 204.59 Gb/s at 8 MiB) with derived variants."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.multinode.rails import (
    declared_gid_index,
    declared_rails,
    firmware_outliers,
    gid_index_outliers,
    judge_rail_bandwidth,
    judge_rails,
    no_devices,
    parse_ibv_devinfo,
    rail_bandwidths,
    rail_bw_target,
    rail_pair_argv,
    read_rail_outputs,
)
from validation.parsers.ib_write_bw import parse as parse_ib_write_bw
from validation.records import Status
from validation.runner import RawRun

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "ibv-devinfo" / "mlx4-2hca-heioy-books-ibv-devinfo.txt"
OLD_FW = FIXTURES / "derived" / "ibv-devinfo" / "mlx4-2hca-heioy-books-ibv-devinfo-fw-2.40.7000-mlx4_0.txt"
BW = FIXTURES / "real" / "ib_write_bw" / "amd-gpu-cluster-networking-d2d-bidir-roce.txt"
BW_SLOW = FIXTURES / "derived" / "ib_write_bw" / "amd-gpu-cluster-networking-d2d-bidir-roce-slow-8m.txt"
BW_GID1 = FIXTURES / "derived" / "ib_write_bw" / "amd-gpu-cluster-networking-d2d-bidir-roce-gid-index-1.txt"


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


def test_a_declared_rail_the_node_does_not_have_fails_as_a_missing_rail() -> None:
    (verdict,) = judge_rails("node07", parse_ibv_devinfo(REAL.read_text()), ["mlx5_0:1"])
    assert (verdict.status, verdict.code) == (Status.FAIL, "RF-NET-RAIL-DOWN")
    assert "node07 mlx5_0:1: declared rail not present (ibv_devinfo lists mlx4_0:1, mlx4_0:2" in verdict.reason


def test_a_node_without_any_rdma_device_fails_every_declared_rail() -> None:
    verdicts = judge_rails("node07", (), ["mlx5_0:1", "mlx5_1:1"])
    assert [(v.status, v.code) for v in verdicts] == [(Status.FAIL, "RF-NET-RAIL-DOWN")] * 2
    assert verdicts[1].reason == "node07 mlx5_1:1: declared rail not present (the node has no RDMA device)"


def test_no_device_outputs_of_ibv_devinfo_are_recognised() -> None:
    # stderr of rdma-core 44's ibv_devinfo (exit 255) on this project's CI machine, which has no RDMA support
    seen = RawRun(argv=("ibv_devinfo",), rc=255, stdout="", timed_out=False, seconds=0.01,
                  stderr="Failed to get IB devices list: Function not implemented\n")
    assert no_devices(seen)
    assert not no_devices(RawRun(argv=("ibv_devinfo",), rc=1, stdout="", stderr="Segmentation fault\n",
                                 timed_out=False, seconds=0.01))


@pytest.mark.parametrize(("option", "env", "want"), [
    ("mlx5_0:1,mlx5_1", {}, ["mlx5_0:1", "mlx5_1:1"]),
    ("", {"NCCL_IB_HCA": "=rdma0,rdma1:1"}, ["rdma0:1", "rdma1:1"]),
    ("", {"NCCL_IB_HCA": "rdma0, rdma1"}, ["rdma0:1", "rdma1:1"]),
    ("mlx5_3:1", {"NCCL_IB_HCA": "rdma0"}, ["mlx5_3:1"]),   # --rails wins over the inventory
    ("", {}, []),
])
def test_declared_rails_come_from_the_option_or_the_inventorys_nccl_ib_hca(option, env, want) -> None:
    assert declared_rails(option, env) == want


def test_an_nccl_ib_hca_exclusion_list_names_no_rails() -> None:
    with pytest.raises(ValueError, match="exclusion list"):
        declared_rails("", {"NCCL_IB_HCA": "^mlx5_4"})


def test_the_gid_index_comes_from_the_option_or_nccl_ib_gid_index() -> None:
    assert declared_gid_index(None, {"NCCL_IB_GID_INDEX": "3"}) == 3
    assert declared_gid_index(1, {"NCCL_IB_GID_INDEX": "3"}) == 1
    assert declared_gid_index(None, {}) is None
    with pytest.raises(ValueError, match="not a GID index"):
        declared_gid_index(None, {"NCCL_IB_GID_INDEX": "three"})


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


def _fleet(odd_node: str = "", odd_rail: str = "", odd: Path = BW) -> dict:
    real, other = parse_ib_write_bw(BW.read_text()), parse_ib_write_bw(odd.read_text())
    return {node: {rail: other if (node, rail) == (odd_node, odd_rail) else real
                   for rail in ("mlx5_0:1", "mlx5_1:1")} for node in ("node01", "node02", "node03")}


def test_rail_pair_argv_is_server_then_client_with_the_server_address_last() -> None:
    pair = rail_pair_argv("mlx5_3:1", "10.1.0.8", gid_index=3, size_bytes=8388608, duration_s=10)
    assert pair.server_argv == ("ib_write_bw", "-d", "mlx5_3", "-i", "1", "-x", "3", "--report_gbits", "-F",
                                "-s", "8388608", "-D", "10", "-q", "1", "-p", "18515")
    assert pair.client_argv == (*pair.server_argv, "10.1.0.8")
    assert pair.timeout_s == 42


def test_rail_pair_argv_leaves_out_the_gid_on_infiniband_and_adds_b_for_bidirectional() -> None:
    pair = rail_pair_argv("mlx5_0:2", "node08", size_bytes=65536, duration_s=5, qps=4, tcp_port=18600,
                          bidirectional=True)
    assert pair.client_argv == ("ib_write_bw", "-d", "mlx5_0", "-i", "2", "--report_gbits", "-F", "-s", "65536",
                                "-D", "5", "-q", "4", "-p", "18600", "-b", "node08")
    assert pair.timeout_s == 37


@pytest.mark.parametrize("rail", ["mlx5_0:x", ":1", ""])
def test_rail_pair_argv_refuses_a_rail_that_is_not_device_port(rail: str) -> None:
    with pytest.raises(ValueError, match="DEVICE"):
        rail_pair_argv(rail, "node08")


def test_without_a_declared_nic_speed_equal_rails_are_recorded_only() -> None:
    verdicts = judge_rail_bandwidth(rail_bandwidths(_fleet()))
    assert len(verdicts) == 6
    assert {v.status for v in verdicts} == {Status.SKIP}
    assert verdicts[0].subject == "node01 mlx5_0:1" and verdicts[0].measured == 204.59


def test_a_400g_nic_is_judged_against_amds_published_floor() -> None:
    assert rail_bw_target(nic_gbps=400, bidirectional=False).threshold == 390.0
    assert rail_bw_target(nic_gbps=400, bidirectional=True).threshold == 770.0
    assert rail_bw_target(nic_gbps=200, bidirectional=False).record_only
    (v, *_) = judge_rail_bandwidth(rail_bandwidths(_fleet()), nic_gbps=400)
    assert v.status == Status.FAIL and "node01 mlx5_0:1 ib_write_bw_avg_gb_s 204.59 Gb/s < floor 770.0 Gb/s" in v.reason


def test_one_slow_rail_is_named_against_its_node_peers_and_the_same_rail_elsewhere() -> None:
    verdicts = judge_rail_bandwidth(rail_bandwidths(_fleet("node02", "mlx5_1:1", BW_SLOW)))
    failed = [v for v in verdicts if v.status == Status.FAIL]
    assert [v.subject for v in failed] == ["node02 mlx5_1:1"]
    reason = failed[0].reason
    assert "170 Gb/s at 8388608 B is 16.9 % below the median 204.59 Gb/s of its peer rails on node02" in reason
    assert "16.9 % below the median 204.59 Gb/s of mlx5_1:1 on the other nodes" in failed[0].reason
    assert failed[0].code == "RF-NET-LOW" and failed[0].hint


def test_a_rail_within_the_peer_gap_is_not_flagged() -> None:
    verdicts = judge_rail_bandwidth(rail_bandwidths(_fleet("node02", "mlx5_1:1", BW_SLOW)), peer_gap=0.2)
    assert {v.status for v in verdicts} == {Status.SKIP}


def test_a_node_whose_rail_uses_another_gid_index_is_named() -> None:
    measured = rail_bandwidths(_fleet("node03", "mlx5_0:1", BW_GID1))
    assert gid_index_outliers(measured) == {
        "node03": "mlx5_0:1 GID index 1 differs from the fleet's common GID index 3"}


def test_against_a_declared_gid_index_every_other_rail_is_named() -> None:
    measured = rail_bandwidths(_fleet("node03", "mlx5_0:1", BW_GID1))
    out = gid_index_outliers(measured, declared=1)
    assert sorted(out) == ["node01", "node02", "node03"]
    assert out["node03"] == "mlx5_1:1 GID index 3 differs from the declared GID index 1"


def test_saved_outputs_are_read_per_node_and_rail(tmp_path: Path) -> None:
    (tmp_path / "node01").mkdir()
    (tmp_path / "node01" / "mlx5_0:1.txt").write_text(BW.read_text())
    (tmp_path / "node01" / "mlx5_1:1.txt").write_text(BW_SLOW.read_text())
    out = read_rail_outputs(tmp_path, ["node01", "node02"])
    assert list(out) == ["node01"]
    assert {rail: r.largest.bw_average_gb_s for rail, r in out["node01"].items()} == {
        "mlx5_0:1": 204.59, "mlx5_1:1": 170.0}
