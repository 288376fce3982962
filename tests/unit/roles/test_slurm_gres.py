"""What Slurm is told about a node's GPUs (validation/slurm_gres.py, roles/slurm_gres through its filters) and the
check that proves Slurm took it (validation/checks/test_scheduler.py), on real `scontrol show node` outputs
(tests/fixtures/real/scontrol/SOURCES.md). The lab proof on real Slurm: tests/integration/test_slurm.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from role_filters import filters

from validation import slurm_gres, spec
from validation.checks import test_scheduler
from validation.checks.outcome import CheckFailure
from validation.errors import RocmFleetError

ROOT = Path(__file__).resolve().parents[3]
SCONTROL = ROOT / "tests" / "fixtures" / "real" / "scontrol"
LAB_CONF = """ClusterName=rocmfleetlab
SlurmctldHost=lab-1(127.0.0.1)
SelectType=select/cons_tres
NodeName=lab-1 NodeAddr=127.0.0.1 Port=17881 CPUs=2 State=UNKNOWN
NodeName=lab-2 NodeAddr=127.0.0.1 Port=17882 CPUs=2 State=UNKNOWN
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@pytest.mark.parametrize(("fixture", "gpus"), [
    ("twcc-gn0101-hackmd-guide-show-node-idle-drain-node-switch-17.11.txt", 8),
    ("rtx6000ada-x8-yokota-t8-status-note-show-node-down-not-responding.txt", 8),          # gpu:8(S:0-1)
    ("huji-cs-slurm-scripts-get-nodes-t-show-node-alloc-drain-idle-17.11.txt", 8),        # gpu:m60:8
    ("h100pcie-x6-ryotaro49-blog-show-node-idle-drain-kill-task-failed-22.05.txt", 6),    # gpu:...:6,mps:...:600
    ("unige-bamboo-gpu009-hpc-community-show-node-idle-drain-health-25.11.txt", 4),      # ...,VramPerGpu:...
    ("gentoo-cu201-jxliu-blog-show-node-idle-drain-low-realmemory-20.11.txt", 0),         # Gres=(null)
])
def test_the_gpus_slurm_offers_are_read_from_real_show_node_outputs(fixture: str, gpus: int) -> None:
    assert slurm_gres.gpu_count(slurm_gres.shown_gres((SCONTROL / fixture).read_text())) == gpus


def test_gres_conf_lists_each_render_node_in_minor_order_or_asks_rsmi() -> None:
    files = slurm_gres.render_nodes(["/dev/dri/renderD129", "/dev/dri/card0", "/dev/dri/renderD1000",
                                     "/dev/dri/renderD128", "/dev/renderD130"])
    assert files == ["/dev/dri/renderD128", "/dev/dri/renderD129", "/dev/dri/renderD1000"]
    text = slurm_gres.gres_conf(files, "files", "mi300x")
    assert text.splitlines()[1:] == ["AutoDetect=off", "Name=gpu Type=mi300x File=/dev/dri/renderD128",
                                     "Name=gpu Type=mi300x File=/dev/dri/renderD129",
                                     "Name=gpu Type=mi300x File=/dev/dri/renderD1000"]
    assert slurm_gres.gres_conf(files, "rsmi").splitlines()[1:] == ["AutoDetect=rsmi"]
    with pytest.raises(RocmFleetError, match="slurm_gres_detect 'nvml': files or rsmi"):
        slurm_gres.gres_conf(files, "nvml")
    with pytest.raises(RocmFleetError, match="slurm_gres_type"):
        slurm_gres.gres_value(8, "mi300x x")


def test_slurm_conf_gets_the_gpu_nodes_gres_once_and_gpu_in_gres_types() -> None:
    once = slurm_gres.slurm_conf_with_gres(LAB_CONF, {"lab-2": "gpu:64"})
    assert "NodeName=lab-2 NodeAddr=127.0.0.1 Port=17882 CPUs=2 State=UNKNOWN Gres=gpu:64" in once
    assert "NodeName=lab-1 NodeAddr=127.0.0.1 Port=17881 CPUs=2 State=UNKNOWN\n" in once
    assert once.count("GresTypes=gpu\n") == 1
    assert slurm_gres.slurm_conf_with_gres(once, {"lab-2": "gpu:64"}) == once            # idempotent
    back = slurm_gres.slurm_conf_with_gres(once, {"lab-2": "gpu:8"})
    assert "Gres=gpu:8" in back and "gpu:64" not in back
    assert "GresTypes=mps,gpu\n" in slurm_gres.slurm_conf_with_gres("GresTypes=mps\n" + LAB_CONF, {"lab-2": "gpu:8"})


def test_slurm_conf_refuses_what_one_line_cannot_say() -> None:
    ranged = LAB_CONF.replace("NodeName=lab-2 ", "NodeName=lab-[2-4] ")
    with pytest.raises(RocmFleetError, match="defines lab-2 on one line with other nodes"):
        slurm_gres.slurm_conf_with_gres(ranged, {"lab-2": "gpu:8"})
    with pytest.raises(RocmFleetError, match=r"slurm\.conf has no NodeName line for gpu-9"):
        slurm_gres.slurm_conf_with_gres(LAB_CONF, {"gpu-9": "gpu:8"})


def test_the_play_gives_each_gpu_node_the_count_its_mode_makes() -> None:
    hostvars = {
        "lab-1": {"validation_gpu_count": 0, "inventory_hostname_short": "lab-1"},
        "lab-2": {"validation_gpu_count": 8, "validation_target_sku": "mi300x", "amdgpu_partition_compute": "CPX",
                  "amdgpu_partition_memory": "NPS4", "inventory_hostname_short": "lab-2"},
        "gpu-3.example.com": {"validation_gpu_count": 8, "inventory_hostname_short": "gpu-3",
                              "slurm_gres_node": "node3"},
    }
    assert filters()["slurm_play_gres"](list(hostvars), hostvars, "mi300x") == \
        {"lab-2": "gpu:mi300x:64", "node3": "gpu:mi300x:8"}
    assert filters()["listed_gpu_count"](hostvars["lab-2"]) == 64
    with pytest.raises(RocmFleetError, match="is not a Slurm node name"):
        filters()["slurm_play_gres"](["x"], {"x": {"validation_gpu_count": 8, "slurm_gres_node": "--all"}})


@dataclass
class SlurmHost:
    """A node as test_scheduler reads it; MOCK: no Slurm runs here (the lab proof has one)."""

    shown: str
    slurmd: bool = True
    ran: list[str] = field(default_factory=list)

    def exists(self, tool: str) -> bool:
        return tool == "scontrol"

    def service(self, name: str) -> object:
        return type("Service", (), {"is_running": self.slurmd})()

    def run(self, command: str) -> object:
        self.ran.append(command)
        out = "gn0101\n" if command == "hostname -s" else self.shown
        return type("Out", (), {"rc": 0, "stdout": out, "stderr": ""})()


def test_the_check_passes_when_slurm_offers_the_listed_gpus_and_fails_naming_both_counts() -> None:
    shown = (SCONTROL / "twcc-gn0101-hackmd-guide-show-node-idle-drain-node-switch-17.11.txt").read_text()
    host = SlurmHost(shown)
    test_scheduler.test_slurm_offers_the_gpus_the_node_lists(host, {"validation_gpu_count": 8})
    assert host.ran[-1] == "timeout 20 scontrol --oneliner show node gn0101"
    cpx = spec.with_partition_counts({"validation_gpu_count": 8, "validation_target_sku": "mi300x",
                                      "amdgpu_partition_compute": "CPX", "amdgpu_partition_memory": "NPS4"})
    with pytest.raises(CheckFailure, match=r"Slurm offers gn0101 Gres=gpu:8, the node lists 64 GPUs in CPX/NPS4 "
                                           r"\(8 held\)") as failed:
        test_scheduler.test_slurm_offers_the_gpus_the_node_lists(SlurmHost(shown), cpx)
    assert failed.value.code == "RF-SLURM-GRES"
    with pytest.raises(pytest.skip.Exception, match="no slurmd runs on this node"):
        test_scheduler.test_slurm_offers_the_gpus_the_node_lists(SlurmHost(shown, slurmd=False), cpx)
    null = (SCONTROL / "gentoo-cu201-jxliu-blog-show-node-idle-drain-low-realmemory-20.11.txt").read_text()
    with pytest.raises(pytest.skip.Exception, match=r"no GPU GRES \(Gres=\(null\)\)"):
        test_scheduler.test_slurm_offers_the_gpus_the_node_lists(SlurmHost(null), cpx)
