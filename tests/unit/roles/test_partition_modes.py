"""The partition rules (validation/targets/partition_modes.py) as the amdgpu_partition role reads them through its
filters: which combinations a SKU runs, how many GPUs each mode lists, and the order of the changes, from a
real `amd-smi static --partition` view (tests/fixtures/real/amd-smi/SOURCES.md) and from the lab's stand-in,
which prints the same layout for any mode (tests/integration/standins/amd_smi_standin.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from role_filters import filters

from validation import parsers, spec
from validation.targets import partition_modes

ROOT = Path(__file__).resolve().parents[3]
REAL = (ROOT / "tests" / "fixtures" / "real" / "amd-smi"
        / "mi300x-x8-amdgpu-docs-quick-start-static-partition-cpx-nps1-6.4.0.txt")
STANDIN = ROOT / "tests" / "integration" / "standins" / "amd_smi_standin.py"


def standin_view(tmp: Path, compute: str, memory: str) -> str:
    state = tmp / "amd-smi.json"
    state.write_text(json.dumps({"compute_partition": compute, "memory_partition": memory}))
    return subprocess.run([sys.executable, str(STANDIN), "static", "--partition"], capture_output=True, text=True,
                          check=True, timeout=30, env={**os.environ, "AMD_SMI_STANDIN_STATE": str(state)}).stdout


def test_the_real_view_reads_as_cpx_nps1_on_each_gpus_primary_partition_only() -> None:
    record = parsers.parse("amd-smi", REAL.read_text())
    primaries = [(g.index, g.compute_partition, g.memory_partition) for g in record.gpus if g.partition_id == 0]
    assert primaries == [(0, "CPX", "NPS1"), (8, "CPX", "NPS1")]
    assert {(g.compute_partition, g.memory_partition) for g in record.gpus if g.partition_id} == {(None, None)}
    # the published view is an excerpt ("..."): the role refuses to plan from a view cut short
    assert "cut short" in filters()["partition_plan"](REAL.read_text(), "CPX", "NPS4")["problem"]


@pytest.mark.parametrize(("compute", "memory"), [("SPX", "NPS1"), ("DPX", "NPS1"), ("DPX", "NPS2"), ("QPX", "NPS1"),
                                                 ("QPX", "NPS4"), ("CPX", "NPS1"), ("CPX", "NPS4")])
def test_every_combination_the_driver_takes_is_allowed_on_mi300x(compute: str, memory: str) -> None:
    assert filters()["partition_problems"](compute, memory, "MI300X") == []


@pytest.mark.parametrize(("compute", "memory", "sku", "said"), [
    ("SPX", "NPS4", "mi300x", "mi300x cannot run SPX with NPS4"),
    ("SPX", "NPS2", "mi300x", "mi300x cannot run SPX with NPS2"),
    ("DPX", "NPS4", "mi300x", "mi300x cannot run DPX with NPS4"),
    ("QPX", "NPS2", "mi325x", "mi325x cannot run QPX with NPS2"),
    ("TPX", "NPS1", "mi300x", "mi300x has no compute partition TPX"),
    ("CPX", "NPS8", "mi300x", "mi300x cannot run CPX with NPS8"),
    ("XPX", "NPS1", "mi300x", "amdgpu_partition_compute 'XPX' is none of SPX, DPX, TPX, QPX, CPX"),
    ("CPX", "", "mi300x", "declare both"),
    ("", "NPS4", "mi300x", "declare both"),
    ("CPX", "NPS4", "h200", "partition modes cannot be set on h200"),
    ("CPX", "NPS4", "mi300x-vf", "partition modes cannot be set on mi300x-vf"),
    ("CPX", "NPS4", "", "partition modes cannot be set on an undeclared SKU"),
])
def test_what_the_sku_does_not_run_is_refused_with_the_reason(compute: str, memory: str, sku: str, said: str) -> None:
    found = filters()["partition_problems"](compute, memory, sku)
    assert len(found) == 1 and said in found[0], found


def test_nothing_declared_is_nothing_to_refuse() -> None:
    assert filters()["partition_problems"]("", "", "") == []


@pytest.mark.parametrize(("now", "wanted", "steps"), [
    (("SPX", "NPS1"), ("CPX", "NPS4"), [("memory", "NPS4", True)]),                    # the reload picks CPX
    (("SPX", "NPS1"), ("QPX", "NPS4"), [("memory", "NPS4", True), ("compute", "QPX", False)]),
    (("CPX", "NPS4"), ("SPX", "NPS1"), [("memory", "NPS1", True)]),                     # memory first, going back
    (("CPX", "NPS4"), ("CPX", "NPS1"), [("memory", "NPS1", True), ("compute", "CPX", False)]),
    (("SPX", "NPS1"), ("DPX", "NPS1"), [("compute", "DPX", False)]),                     # compute alone: no reload
    (("CPX", "NPS4"), ("CPX", "NPS4"), []),
])
def test_the_changes_come_in_the_drivers_order(tmp_path: Path, now: tuple[str, str], wanted: tuple[str, str],
                                               steps: list[tuple[str, str, bool]]) -> None:
    plan = filters()["partition_plan"](standin_view(tmp_path, *now), *wanted)
    assert plan["problem"] == "" and len(plan["current"]) == 8
    assert [(s["kind"], s["mode"], s["reload"]) for s in plan["steps"]] == steps


def test_gpus_that_disagree_are_all_set() -> None:
    mixed = [{"compute": "CPX", "memory": "NPS4"}, {"compute": "SPX", "memory": "NPS1"}]
    assert [s.as_dict() for s in partition_modes.plan(mixed, "CPX", "NPS4")] == \
        [{"kind": "memory", "mode": "NPS4", "reload": True}]


@pytest.mark.parametrize(("compute", "listed"), [("", 8), ("SPX", 8), ("DPX", 16), ("QPX", 32), ("CPX", 64)])
def test_an_8_gpu_mi300x_lists_the_gpus_its_compute_mode_makes(tmp_path: Path, compute: str, listed: int) -> None:
    assert partition_modes.logical_gpus("mi300x", 8, compute) == listed
    if compute:
        view = standin_view(tmp_path, compute, "NPS1" if compute != "DPX" else "NPS2")
        assert len(parsers.parse("amd-smi", view).gpus) == listed


def test_the_spec_carries_the_partition_variables_and_the_role_is_provisioned_after_rocm() -> None:
    assert spec.SPEC_VARIABLE.match("amdgpu_partition_compute") and spec.SPEC_VARIABLE.match("amdgpu_partition_memory")
    assert spec.SPEC_VARIABLE.match("amdgpu_partition_reload_ok")
    roles = spec.roles_for("site")
    assert roles.index("rocm") < roles.index("amdgpu_partition") < roles.index("node_tuning")


def test_a_declared_mode_makes_the_spec_count_the_gpus_the_node_lists_and_keeps_the_ones_it_holds() -> None:
    state = spec.declared_state([{"validation_gpu_count": 8}], {
        "validation_target_sku": "mi300x", "amdgpu_partition_compute": "CPX", "amdgpu_partition_memory": "NPS4"})
    assert (state["validation_gpu_count"], state["validation_physical_gpu_count"], state["validation_partition"]) \
        == (64, 8, "CPX/NPS4")
    assert spec.declared_state([], state) == state                     # a spec file read again: no second multiply
    qpx = spec.declared_state([state], {"amdgpu_partition_compute": "QPX"})
    assert (qpx["validation_gpu_count"], qpx["validation_partition"]) == (32, "CPX/NPS4")  # a declared partition wins
    plain = spec.declared_state([{"validation_gpu_count": 8}], {"validation_target_sku": "mi300x"})
    assert plain["validation_gpu_count"] == 8 and "validation_physical_gpu_count" not in plain


def test_rccl_runs_one_rank_per_gpu_the_node_lists() -> None:
    from validation.multinode.inventory import ranks_per_node

    cpx = {"validation_gpu_count": 8, "validation_target_sku": "mi300x", "amdgpu_partition_compute": "CPX",
           "amdgpu_partition_memory": "NPS4"}
    assert ranks_per_node({**cpx, "mpi_launcher_ranks_per_node": 0}) == 64
    assert ranks_per_node({**cpx, "mpi_launcher_ranks_per_node": 4}) == 4          # a declared count wins
    assert ranks_per_node({"validation_gpu_count": 8, "mpi_launcher_ranks_per_node": 0}) == 8
    assert ranks_per_node({"mpi_launcher_ranks_per_node": 0}) == 8


class PartitionHost:
    """A node whose `amd-smi static --partition` prints `view` (MOCK: no AMD GPU here; the view is the real
    one or the lab stand-in's, which prints the real layout)."""

    def __init__(self, view: str) -> None:
        self.view = view

    def run(self, command: str) -> object:
        return type("Out", (), {"rc": 0, "stdout": self.view, "stderr": ""})()


def test_the_check_fails_a_node_that_came_back_in_another_mode_naming_each_gpu(tmp_path: Path) -> None:
    from validation.checks import test_gpu_health
    from validation.checks.outcome import CheckFailure

    declared = {"amdgpu_partition_compute": "CPX", "amdgpu_partition_memory": "NPS4"}
    test_gpu_health.test_gpus_run_the_declared_partition_modes(
        PartitionHost(standin_view(tmp_path, "CPX", "NPS4")), 64, declared)
    with pytest.raises(CheckFailure, match=r"declared CPX/NPS4: gpu0 runs SPX/NPS1; gpu1 runs SPX/NPS1;") as failed:
        test_gpu_health.test_gpus_run_the_declared_partition_modes(
            PartitionHost(standin_view(tmp_path, "SPX", "NPS1")), 64, declared)
    assert failed.value.code == "RF-PARTITION-MISMATCH"
    with pytest.raises(CheckFailure, match="declared CPX/NPS4: gpu0 runs CPX/NPS1; gpu8 runs CPX/NPS1") as real:
        test_gpu_health.test_gpus_run_the_declared_partition_modes(PartitionHost(REAL.read_text()), 64, declared)
    assert real.value.code == "RF-PARTITION-MISMATCH"
    with pytest.raises(CheckFailure, match="cut short") as cut:          # the real excerpt, declared as it runs
        test_gpu_health.test_gpus_run_the_declared_partition_modes(
            PartitionHost(REAL.read_text()), 64, {"amdgpu_partition_compute": "CPX", "amdgpu_partition_memory": "NPS1"})
    assert cut.value.code == "RF-INCOMPLETE-OUTPUT"
    with pytest.raises(pytest.skip.Exception, match="declares no partition modes"):
        test_gpu_health.test_gpus_run_the_declared_partition_modes(PartitionHost(""), 8, {})


def test_visible_device_lists_must_name_gpus_the_mode_lists() -> None:
    problems = filters()["visible_devices_problems"]
    cpx = spec.with_partition_counts({"validation_gpu_count": 8, "validation_target_sku": "mi300x",
                                      "amdgpu_partition_compute": "CPX", "amdgpu_partition_memory": "NPS4"})
    listed = filters()["listed_gpu_count"](cpx)
    assert problems({"ROCR_VISIBLE_DEVICES": "0,63"}, {}, listed) == []               # 64 listed in CPX
    said = problems({"HIP_VISIBLE_DEVICES": "0,8"}, {"rccl-half": {"ROCR_VISIBLE_DEVICES": "4,5,6,7,8,9"}}, 8)
    assert said == ["the login environment HIP_VISIBLE_DEVICES=0,8: the node lists GPUs 0-7 (validation_gpu_count "
                    "as its partition mode makes it), not 8",
                    "profile rccl-half ROCR_VISIBLE_DEVICES=4,5,6,7,8,9: the node lists GPUs 0-7 (validation_gpu_count "
                    "as its partition mode makes it), not 8, 9"]
    assert problems({"ROCR_VISIBLE_DEVICES": "GPU-4f2a,12"}, {}, 0) == []               # no count declared


MODES = [(c, m) for c, ms in partition_modes.SETTABLE["mi300x"].items() for m in ms]


@pytest.mark.parametrize("start", MODES)
def test_the_boot_script_reaches_every_declared_mode_in_plans_order(tmp_path: Path, start: tuple[str, str]) -> None:
    """rocm-fleet-partition.service's script, run for real (sh) against the amd-smi and modprobe stand-ins from each
    mode the GPUs may come up in, to each mode that may be declared: it ends in the declared mode with the steps
    plan() gives, in its order (MOCK: the stand-ins, no AMD GPU here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "amd-smi").write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    (bin_dir / "modprobe").write_bytes((STANDIN.parent / "gpu_node" / "modprobe").read_bytes())
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "AMD_SMI_STANDIN_STATE": str(tmp_path / "amd-smi.json"), "AMD_SMI_STANDIN_DRI": str(tmp_path / "none")}
    for wanted in MODES:
        (tmp_path / "amd-smi.json").write_text(json.dumps({"compute_partition": start[0],
                                                           "memory_partition": start[1]}))
        steps = partition_modes.plan([{"compute": start[0], "memory": start[1]}], *wanted)
        script = tmp_path / "rocm-fleet-partition"
        script.write_text(partition_modes.boot_script(*wanted))
        run = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=60, env=env, check=False)
        assert run.returncode == 0, (start, wanted, run.stdout, run.stderr)
        state = json.loads((tmp_path / "amd-smi.json").read_text())
        assert (state["compute_partition"], state["memory_partition"]) == wanted
        said = [line.split(": ", 1)[1].split(" partition")[0] for line in run.stdout.splitlines()
                if " partition " in line and "->" in line]
        assert said == [s.kind for s in steps], (start, wanted, run.stdout)


def test_the_boot_script_refuses_what_is_not_a_mode() -> None:
    with pytest.raises(ValueError, match="is not a compute/memory partition mode"):
        partition_modes.boot_script("CPX; reboot", "NPS4")
