"""RoCE version and GID per declared rail: the real probe script, run with sh.

No machine here has an RDMA device (the CI kernel is built without InfiniBand), so the sysfs
trees below are laid out by the test in a temporary directory, following the kernel's stable ABI
(Documentation/ABI/stable/sysfs-class-infiniband: gid_attrs/types/<index> holds "IB/RoCE v1" or
"RoCE v2"; reading an unpopulated index fails). The one real read is of this machine's own /sys,
which has no /sys/class/infiniband.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from validation.multinode.rail_gids import judge_gids, parse_probe, probe_argv
from validation.records import Status

V2_GID = "0000:0000:0000:0000:0000:ffff:0a00:0107"


def _port(root: Path, dev: str, port: int, *, link_layer: str = "Ethernet",
          gids: dict[int, tuple[str, str, str]] | None = None) -> None:
    base = root / "sys" / "class" / "infiniband" / dev / "ports" / str(port)
    for sub in ("gid_attrs/types", "gid_attrs/ndevs", "gids"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    (base / "link_layer").write_text(link_layer + "\n")
    for index, (gid_type, ndev, gid) in (gids or {}).items():
        (base / "gid_attrs" / "types" / str(index)).write_text(gid_type + "\n")
        (base / "gid_attrs" / "ndevs" / str(index)).write_text(ndev + "\n")
        (base / "gids" / str(index)).write_text(gid + "\n")


def _probe(root: Path | str, rails: list[str], index: int = 3) -> dict | None:
    out = subprocess.run(probe_argv(rails, index, sysfs_root=str(root)), capture_output=True, text=True,
                         check=True, timeout=30)
    return parse_probe(out.stdout)


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    _port(tmp_path, "rdma0", 1, gids={0: ("IB/RoCE v1", "ens1", "fe80:0000:0000:0000:0000:00ff:fe00:0107"),
                                      3: ("RoCE v2", "ens1", V2_GID)})
    _port(tmp_path, "rdma1", 1, gids={3: ("IB/RoCE v1", "ens2", V2_GID)})
    _port(tmp_path, "rdma2", 1)   # index 3 never populated: the netdev has no address
    _port(tmp_path, "mlx5_0", 1, link_layer="InfiniBand")
    return tmp_path


def test_roce_v2_at_the_declared_index_passes(sysfs: Path) -> None:
    gids = _probe(sysfs, ["rdma0:1"])
    assert gids["rdma0:1"].gid_type == "RoCE v2" and gids["rdma0:1"].netdev == "ens1"
    (verdict,) = judge_gids("node07", gids, ["rdma0:1"], gid_index=3)
    assert verdict.status == Status.PASS


def test_roce_v1_at_the_declared_index_fails_naming_node_rail_and_netdev(sysfs: Path) -> None:
    (verdict,) = judge_gids("node07", _probe(sysfs, ["rdma1"]), ["rdma1"], gid_index=3)
    assert (verdict.status, verdict.code) == (Status.FAIL, "RF-NET-GID")
    assert verdict.reason.startswith(f"node07 rdma1:1: GID index 3 ({V2_GID} on ens2) is 'IB/RoCE v1', "
                                     "expected 'RoCE v2'")


def test_an_empty_gid_index_fails_as_a_missing_address(sysfs: Path) -> None:
    (verdict,) = judge_gids("node07", _probe(sysfs, ["rdma2:1"]), ["rdma2:1"], gid_index=3)
    assert (verdict.status, verdict.code) == (Status.FAIL, "RF-NET-GID")
    assert "GID index 3 is empty" in verdict.reason


def test_another_index_than_the_populated_one_fails(sysfs: Path) -> None:
    (verdict,) = judge_gids("node07", _probe(sysfs, ["rdma0:1"], index=1), ["rdma0:1"], gid_index=1)
    assert (verdict.status, verdict.code) == (Status.FAIL, "RF-NET-GID")


def test_a_declared_rail_not_in_sysfs_fails_as_missing(sysfs: Path) -> None:
    (verdict,) = judge_gids("node07", _probe(sysfs, ["rdma7:1"]), ["rdma7:1"], gid_index=3)
    assert (verdict.status, verdict.code) == (Status.FAIL, "RF-NET-RAIL-DOWN")
    assert "no such device/port in sysfs" in verdict.reason


def test_an_infiniband_rail_is_recorded_not_judged_on_roce_version(sysfs: Path) -> None:
    (verdict,) = judge_gids("node07", _probe(sysfs, ["mlx5_0:1"]), ["mlx5_0:1"], gid_index=3)
    assert verdict.status == Status.SKIP and "RoCE version does not apply" in verdict.reason


def test_this_machine_has_no_rdma_device_and_every_declared_rail_fails() -> None:
    gids = _probe("", ["rdma0:1", "rdma1:1"])     # the real /sys of the machine running the tests
    if gids is not None:
        pytest.skip("this machine has RDMA devices")
    verdicts = judge_gids("ci", gids, ["rdma0:1", "rdma1:1"], gid_index=3)
    assert [(v.status, v.code) for v in verdicts] == [(Status.FAIL, "RF-NET-RAIL-DOWN")] * 2
    assert "the node has no RDMA device" in verdicts[0].reason


def test_bad_rails_and_indexes_are_refused_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="DEVICE"):
        probe_argv(["mlx5_0:one"], 3)
    with pytest.raises(ValueError, match="GID index"):
        probe_argv(["mlx5_0:1"], -1)
