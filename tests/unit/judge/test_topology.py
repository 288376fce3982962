"""Topology and NUMA-affinity judging (validation/topology.py) and its node check
(validation/checks/test_topology.py) on real tool outputs and documented derived variants.

Expected values are read off the fixtures by hand: the 8x MI300X `rocm-smi --showtopo` shows XGMI,
1 hop and weight 15 on all 56 ordered pairs with GPUs 0-3 on NUMA node 0 and 4-7 on node 1.

MOCK, said plainly (last section): no GPU exists here, so the check's testinfra `host` is a
stand-in that answers each command with a verbatim real output (or a derived variant). The CPU
topology there is a real 2-NUMA-node lscpu from another host (an H100 node), paired with the
MI300X output only to give the rule two CPU nodes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_host import RecordedHost

from validation import extract, topology
from validation.checks import test_topology as check
from validation.checks.outcome import CheckFailure
from validation.codes import CODES
from validation.parsers import amd_smi, lscpu, nvidia_smi_topo, rocm_smi
from validation.records import Status
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"
SHOWTOPO = "real/rocm-smi/mi300x-augmxnt-vllm-collect-env-showtopo.txt"
PCIE_PAIR = "derived/rocm-smi/mi300x-augmxnt-showtopo-gpu2-gpu5-pcie.txt"
GPU5_NODE0 = "derived/rocm-smi/mi300x-augmxnt-showtopo-gpu5-numa-node0.txt"
LSCPU_2NODES = "real/lscpu/h100-node-jdh4-job-data-2023-della-lscpu.txt"
LSCPU_1NODE = "real/lscpu/lab-kvm-1socket-lscpu.txt"
H100_TOPO = "real/nvidia-smi-topo/h100-x8-ml-engineering-network-topo-m.txt"
MI308X_SHOWTOPO = "real/rocm-smi/mi308x-x8-ms-swift-amd-support-showtopo.txt"
MI308X_PCIE_PAIR = "derived/rocm-smi/mi308x-ms-swift-showtopo-gpu2-gpu5-pcie.txt"
MI308X_TWO_HOPS = "derived/rocm-smi/mi308x-ms-swift-showtopo-gpu0-gpu7-two-hops.txt"


def rocm(path: str) -> topology.Topology:
    return topology.from_rocm_smi(rocm_smi.parse((FIX / path).read_text()))


def by_status(verdicts: list) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for v in verdicts:
        counts[(v.metric, v.status.value)] = counts.get((v.metric, v.status.value), 0) + 1
    return counts


@pytest.fixture(scope="module")
def mi300x():
    return load_targets("mi300x")


# --- links ---------------------------------------------------------------------------------


def test_real_mi300x_showtopo_passes_every_pair_and_records_the_weight(mi300x) -> None:
    verdicts = topology.judge_links(rocm(SHOWTOPO), mi300x, gpu_count=8)
    assert by_status(verdicts) == {("topology_link_type", "pass"): 56, ("topology_hops", "pass"): 56,
                                   ("topology_weight", "skip"): 56}
    weight = next(v for v in verdicts if v.metric == "topology_weight" and v.subject == "gpu3 -> gpu6")
    assert weight.measured == 15 and "record only" in weight.reason


def test_pair_over_pcie_fails_naming_both_directions_of_the_pair(mi300x) -> None:
    verdicts = topology.judge_links(rocm(PCIE_PAIR), mi300x, gpu_count=8)
    failed = [v for v in verdicts if v.status is Status.FAIL]
    assert [v.subject for v in failed] == ["gpu2 -> gpu5", "gpu5 -> gpu2"]
    assert failed[0].reason.startswith("gpu2 -> gpu5: PCIE, expected XGMI (")
    assert {v.code for v in failed} == {"RF-TOPO-LINK-TYPE"}
    assert failed[0].hint == CODES["RF-TOPO-LINK-TYPE"]
    assert by_status(verdicts)[("topology_hops", "pass")] == 56   # only the link type was edited


def test_real_amd_smi_topology_of_eight_mi300x_passes(mi300x) -> None:
    record = amd_smi.parse((FIX / "real/amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-topology.txt").read_text())
    verdicts = topology.judge_links(topology.from_amd_smi(record), mi300x, gpu_count=8)
    assert by_status(verdicts) == {("topology_link_type", "pass"): 56, ("topology_hops", "pass"): 56,
                                   ("topology_weight", "skip"): 56}


def test_truncated_amd_smi_topology_is_one_error_per_missing_table_not_a_pass(mi300x) -> None:
    # the blog output stops after the WEIGHT table ("[output truncated]"): no hops, no link types
    record = amd_smi.parse((FIX / "real/amd-smi/mi300x-rocm-blogs-amd-smi-overview-topology.txt").read_text())
    verdicts = topology.judge_links(topology.from_amd_smi(record), mi300x, gpu_count=8)
    errors = [v for v in verdicts if v.status is Status.ERROR]
    assert [(v.metric, v.code) for v in errors] == [("topology_link_type", "RF-NOT-REPORTED"),
                                                   ("topology_hops", "RF-NOT-REPORTED")]
    assert "truncated" in errors[0].reason


def test_a_declared_gpu_absent_from_the_topology_fails_every_pair_it_is_in(mi300x) -> None:
    verdicts = topology.judge_links(rocm(SHOWTOPO), mi300x, gpu_count=9)
    missing = [v for v in verdicts if v.code == "RF-TOPO-MISSING"]
    assert len(missing) == 16                                      # gpu8 with each of 8 others, both ways
    assert {v.status for v in missing} == {Status.FAIL}
    assert "gpu0 -> gpu8" in {v.subject for v in missing}


# issue 31: the mi308x profile expected PCIE (from a config comment) and failed all 56 links of this node
def test_real_mi308x_showtopo_passes_xgmi_and_one_hop_on_every_pair() -> None:
    verdicts = topology.judge_links(rocm(MI308X_SHOWTOPO), load_targets("mi308x"), gpu_count=8)
    assert by_status(verdicts) == {("topology_link_type", "pass"): 56, ("topology_hops", "pass"): 56,
                                   ("topology_weight", "skip"): 56}


@pytest.mark.parametrize("path, metric, code", [
    (MI308X_PCIE_PAIR, "topology_link_type", "RF-TOPO-LINK-TYPE"),
    (MI308X_TWO_HOPS, "topology_hops", "RF-TOPO-HOPS"),
], ids=["pcie-pair", "two-hops"])
def test_an_mi308x_pair_off_the_xgmi_mesh_fails_naming_both_directions(path: str, metric: str, code: str) -> None:
    verdicts = topology.judge_links(rocm(path), load_targets("mi308x"), gpu_count=8)
    failed = [v for v in verdicts if v.status is Status.FAIL]
    assert {v.metric for v in failed} == {metric} and {v.code for v in failed} == {code}
    assert len(failed) == 2 and failed[0].subject.split(" -> ")[::-1] == failed[1].subject.split(" -> ")
    assert "tests/fixtures/real/rocm-smi/mi308x-x8-ms-swift-amd-support-showtopo.txt" in failed[0].reason


def test_real_h100_topo_matches_nv18_and_an_a100_node_does_not() -> None:
    h100 = load_targets("h100")
    good = nvidia_smi_topo.parse((FIX / H100_TOPO).read_text())
    assert by_status(topology.judge_links(topology.from_nvidia_topo(good), h100, gpu_count=8)) == {
        ("topology_link_type", "pass"): 56}                        # nvidia-smi reports no hops or weight
    a100 = nvidia_smi_topo.parse((FIX / "real/nvidia-smi-topo/a100-x8-ml-engineering-network-topo-m.txt").read_text())
    bad = topology.judge_links(topology.from_nvidia_topo(a100), h100, gpu_count=8)
    assert len(bad) == 56 and {v.status for v in bad} == {Status.FAIL}
    assert bad[0].reason.startswith("gpu0 -> gpu1: NV12, expected NV18")


def test_mi325x_topology_is_recorded_not_judged() -> None:
    verdicts = topology.judge_links(rocm(PCIE_PAIR), load_targets("mi325x"), gpu_count=8)
    assert {v.status for v in verdicts} == {Status.SKIP}


def test_rocm_fleet_judge_path_adds_link_verdicts_to_the_gpu_count(mi300x) -> None:
    verdicts = extract.verdicts_for("rocm-smi", rocm_smi.parse((FIX / PCIE_PAIR).read_text()), mi300x)
    assert verdicts[0].metric == "gpu_count" and verdicts[0].status is Status.PASS
    assert [v.subject for v in verdicts if v.status is Status.FAIL] == ["gpu2 -> gpu5", "gpu5 -> gpu2"]


# --- NUMA ----------------------------------------------------------------------------------


def two_nodes() -> tuple[int, ...]:
    return lscpu.parse((FIX / LSCPU_2NODES).read_text()).cpu_numa_nodes


def test_real_mi300x_gpus_are_four_per_numa_node_on_a_two_node_host() -> None:
    verdicts = topology.judge_gpu_numa(rocm(SHOWTOPO).gpu_numa, cpu_nodes=two_nodes(), origin="rocm-smi")
    assert [(v.subject, v.measured, v.status) for v in verdicts] == [
        (f"gpu{i}", 0 if i < 4 else 1, Status.PASS) for i in range(8)]


def test_gpu_on_the_wrong_numa_node_fails_naming_that_gpu_only() -> None:
    verdicts = topology.judge_gpu_numa(rocm(GPU5_NODE0).gpu_numa, cpu_nodes=two_nodes(), origin="rocm-smi")
    failed = [v for v in verdicts if v.status is not Status.PASS]
    assert [(v.subject, v.code) for v in failed] == [("gpu5", "RF-NUMA-GPU")]
    assert failed[0].reason.startswith("gpu5: NUMA node 0 (rocm-smi), expected 1:")
    assert "node 0: 5, node 1: 3" in failed[0].reason


def test_declared_numa_map_wins_over_the_even_spread_rule() -> None:
    # MI210 blog host: GPU0..7 on NUMA nodes 3,2,1,0,7,6,5,4
    mi210 = rocm("real/rocm-smi/mi210-rocm-blogs-affinity-showtoponuma.txt").gpu_numa
    declared = {0: 3, 1: 2, 2: 1, 3: 0, 4: 7, 5: 6, 6: 5, 7: 4}
    assert {v.status for v in topology.judge_gpu_numa(mi210, declared=declared, cpu_nodes=range(8))} == {Status.PASS}
    wrong = topology.judge_gpu_numa(mi210, declared={**declared, 0: 0}, cpu_nodes=range(8), origin="rocm-smi")
    failed = [v for v in wrong if v.status is Status.FAIL]
    assert [v.subject for v in failed] == ["gpu0"]
    assert failed[0].reason == "gpu0: NUMA node 3 (rocm-smi), expected 0 (declared in validation_gpu_numa_nodes)"


def test_one_gpu_per_numa_node_passes_the_spread_rule_on_eight_nodes() -> None:
    mi210 = rocm("real/rocm-smi/mi210-rocm-blogs-affinity-showtoponuma.txt").gpu_numa
    assert {v.status for v in topology.judge_gpu_numa(mi210, cpu_nodes=range(8))} == {Status.PASS}


def test_gpus_on_nodes_without_cpus_fail() -> None:
    mi210 = rocm("real/rocm-smi/mi210-rocm-blogs-affinity-showtoponuma.txt").gpu_numa
    verdicts = topology.judge_gpu_numa(mi210, cpu_nodes=two_nodes())
    assert sorted(v.subject for v in verdicts if v.status is Status.FAIL) == ["gpu0", "gpu1", "gpu4", "gpu5",
                                                                              "gpu6", "gpu7"]


def test_single_numa_node_host_accepts_any_layout() -> None:
    one = lscpu.parse((FIX / LSCPU_1NODE).read_text()).cpu_numa_nodes
    assert {v.status for v in topology.judge_gpu_numa(rocm(GPU5_NODE0).gpu_numa, cpu_nodes=one)} == {Status.PASS}


def test_sysfs_minus_one_is_no_numa_node_and_fails_on_a_two_node_host() -> None:
    assert [topology.sysfs_numa_node(t) for t in ("1\n", "-1\n", "", None)] == [1, None, None, None]
    gpu_numa = {0: 0, 1: topology.sysfs_numa_node("-1\n")}
    verdicts = topology.judge_gpu_numa(gpu_numa, cpu_nodes=(0, 1), origin="sysfs")
    assert [(v.subject, v.status) for v in verdicts] == [("gpu0", Status.PASS), ("gpu1", Status.FAIL)]
    assert "no NUMA node reported (sysfs)" in verdicts[1].reason


def test_nic_on_the_wrong_node_fails_and_undeclared_nics_are_recorded() -> None:
    verdicts = topology.judge_nic_numa({"ib0": 0, "ib1": 1, "eno1": 0}, declared={"ib0": 1, "ib1": 1})
    assert [(v.subject, v.status) for v in verdicts] == [("eno1", Status.SKIP), ("ib0", Status.FAIL),
                                                         ("ib1", Status.PASS)]
    assert verdicts[1].code == "RF-NUMA-NIC" and verdicts[1].reason.startswith("ib0: NUMA node 0 (sysfs), expected 1")
    gone = topology.judge_nic_numa({}, declared={"ib3": 1})
    assert [(v.subject, v.status, v.code) for v in gone] == [("ib3", Status.FAIL, "RF-NUMA-NIC")]


# --- the node check with a stand-in host (see the module docstring) -------------------------


def recorder(store: list):
    def add(metric, subject, value, unit, **extra):
        store.append((metric, subject, value, extra.get("status")))
    return add


AMD = ("amd", 8)


def test_check_fails_the_pcie_pair_with_its_code_and_records_every_pair(mi300x) -> None:
    host = RecordedHost({"rocm-smi --showtopo": PCIE_PAIR}, tools={"rocm-smi"})
    store: list = []
    with pytest.raises(CheckFailure) as err:
        check.test_every_gpu_pair_is_linked_as_the_sku_expects(host, AMD, mi300x, recorder(store))
    assert err.value.code == "RF-TOPO-LINK-TYPE"
    assert err.value.message.startswith("gpu2 -> gpu5: PCIE, expected XGMI")
    assert len(store) == 168


def test_check_passes_the_real_amd_smi_topology_when_rocm_smi_is_absent(mi300x) -> None:
    host = RecordedHost({"amd-smi topology": "real/amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-topology.txt"},
                        tools={"amd-smi"})
    store: list = []
    check.test_every_gpu_pair_is_linked_as_the_sku_expects(host, AMD, mi300x, recorder(store))
    assert {s[3] for s in store} == {"pass", "skip"} and len(store) == 168


def test_check_names_the_gpu_on_the_wrong_numa_node() -> None:
    host = RecordedHost({"rocm-smi --showtopo": GPU5_NODE0, "lscpu": LSCPU_2NODES}, tools={"rocm-smi"})
    with pytest.raises(CheckFailure) as err:
        check.test_every_gpu_is_on_its_declared_or_balanced_numa_node(host, AMD, {}, recorder([]))
    assert err.value.code == "RF-NUMA-GPU"
    assert err.value.message.startswith("gpu5: NUMA node 0 (rocm-smi --showtopo), expected 1")


def test_check_reads_gpu_numa_from_sysfs_when_amd_smi_gives_none() -> None:
    bdfs = ["0000:0c:00.0", "0000:22:00.0"]            # the first two BDFs of the amd-smi topology fixture
    files = {f"/sys/bus/pci/devices/{b}/numa_node": n for b, n in zip(bdfs, ("0\n", "1\n"), strict=True)}
    host = RecordedHost({"amd-smi topology": "real/amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-topology.txt",
                         "lscpu": LSCPU_2NODES}, tools={"amd-smi"}, files=files,
                        pci="\n".join(f"{b} 0x030200 0x1002 0x74a1" for b in reversed(bdfs)))
    store: list = []
    check.test_every_gpu_is_on_its_declared_or_balanced_numa_node(host, ("amd", 2), {}, recorder(store))
    assert [(s[1], s[2], s[3]) for s in store] == [("gpu0", 0, "pass"), ("gpu1", 1, "pass")]


def test_check_on_nvidia_reads_topo_m_links_and_numa(mi300x) -> None:
    host = RecordedHost({"nvidia-smi topo -m": H100_TOPO, "lscpu": LSCPU_2NODES}, tools={"nvidia-smi"})
    store: list = []
    check.test_every_gpu_pair_is_linked_as_the_sku_expects(host, ("nvidia", 8), load_targets("h100"), recorder(store))
    check.test_every_gpu_is_on_its_declared_or_balanced_numa_node(host, ("nvidia", 8), {}, recorder(store))
    assert len(store) == 56 + 8 and {s[3] for s in store} == {"pass"}


def test_check_with_declared_nics_fails_the_misplaced_one() -> None:
    files = {"/sys/class/net/ib0/device/numa_node": "0\n", "/sys/class/net/ib1/device/numa_node": "1\n"}
    host = RecordedHost({"lscpu": LSCPU_2NODES}, tools=set(), files=files)
    with pytest.raises(CheckFailure) as err:
        check.test_every_declared_nic_is_on_its_numa_node(host, {"validation_nic_numa_nodes": {"ib0": 1, "ib1": 1}},
                                                          recorder([]))
    assert err.value.code == "RF-NUMA-NIC" and err.value.message.startswith("ib0: NUMA node 0")
