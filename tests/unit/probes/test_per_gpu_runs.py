"""Per-GPU probes run on every GPU at once (issue 20): runner.run_each and runner.PerGpuRuns.

The commands here are `sh -c 'sleep ...'` stand-ins for hipblaslt-bench, BabelStream, MIOpenDriver:
this machine has no GPU, and what is tested is the running side by side (each GPU's process, its
own timeout and exit status, results kept by GPU), not the tools. The checks that use it are
validation/checks/test_native_probes.py's per-GPU checks; the real tools run on a lent GPU machine.
"""

from __future__ import annotations

import time

import pytest

from validation import runner
from validation.errors import ProbeError

GPUS = range(8)


def sleeper(seconds: float):
    return lambda gpu: (["sh", "-c", f'sleep {seconds}; echo "gpu $GPU_ID pid $$"'], {"GPU_ID": str(gpu)})


def test_eight_gpus_one_second_each_take_about_one_second_and_keep_their_own_output() -> None:
    command = sleeper(1.0)
    started = time.monotonic()
    runs = runner.run_each({g: command(g) for g in GPUS}, timeout_s=30)
    wall = time.monotonic() - started
    assert wall < 3.0, f"{wall:.1f} s: one GPU after another would take 8 s"
    assert sorted(runs) == list(GPUS)
    for gpu, run in runs.items():
        assert isinstance(run, runner.RawRun) and run.ok and run.seconds >= 1.0
        assert run.stdout.startswith(f"gpu {gpu} pid ")
    assert len({run.stdout for run in runs.values()}) == 8          # eight processes, one per GPU


def test_a_hanging_or_failing_gpu_leaves_the_others_alone() -> None:
    commands = {g: (["sh", "-c", "sleep 0.5; echo fine"], None) for g in GPUS}
    commands[2] = (["sh", "-c", "sleep 60"], None)
    commands[5] = (["sh", "-c", "echo broken >&2; exit 3"], None)
    commands[7] = (["no-such-tool-anywhere"], None)
    started = time.monotonic()
    runs = runner.run_each(commands, timeout_s=2)
    assert time.monotonic() - started < 10
    assert runs[2].timed_out and runs[2].rc is None
    assert runs[5].rc == 3 and runs[5].stderr.strip() == "broken"
    assert isinstance(runs[7], ProbeError) and "no-such-tool-anywhere" in str(runs[7])
    assert all(runs[g].ok and runs[g].stdout == "fine\n" for g in (0, 1, 3, 4, 6))


def test_nothing_to_run_runs_nothing() -> None:
    assert runner.run_each({}, timeout_s=1) == {}


def test_a_case_is_launched_once_for_all_gpus_by_its_first_check() -> None:
    launches: list[tuple[dict, float]] = []

    def launch(commands: dict, timeout_s: float) -> dict:
        launches.append((commands, timeout_s))
        return {g: runner.RawRun(argv=tuple(argv), rc=0, stdout=f"out {g}", stderr="", seconds=1.0, timed_out=False)
                for g, (argv, _) in commands.items()}

    runs = runner.PerGpuRuns(launch)
    command = sleeper(0)
    assert runs.get(("gemm", "fp16"), 3, range(4), command, 300).stdout == "out 3"   # any GPU may come first
    assert [runs.get(("gemm", "fp16"), g, range(4), command, 300).stdout for g in range(4)] == [
        "out 0", "out 1", "out 2", "out 3"]
    assert len(launches) == 1 and sorted(launches[0][0]) == [0, 1, 2, 3] and launches[0][1] == 300
    runs.get(("gemm", "bf16"), 0, range(4), command, 300)
    assert len(launches) == 2                                                          # a new case: a new launch


def test_a_gpu_whose_tool_could_not_start_raises_for_that_gpu_only() -> None:
    runs = runner.PerGpuRuns(lambda commands, timeout_s: {
        0: ProbeError("cannot start 'x'"),
        1: runner.RawRun(argv=("x",), rc=0, stdout="", stderr="", seconds=0.1, timed_out=False)})
    with pytest.raises(ProbeError):
        runs.get("case", 0, range(2), sleeper(0), 5)
    assert runs.get("case", 1, range(2), sleeper(0), 5).ok


def test_the_per_gpu_checks_share_one_launch_per_case_through_the_node_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """test_native_probes' per-GPU checks call the shared runner with their case, and judge their
    own GPU's run (the judging itself is tested with real tool outputs elsewhere)."""
    from validation.checks import test_native_probes as native

    judged: list[tuple[str, int | None, str]] = []
    monkeypatch.setattr(native.runner, "which", lambda tool, path=None: f"/usr/bin/{tool}")
    monkeypatch.setattr(native, "judge_run",
                        lambda tool, argv, raw, targets, record, gpu=None: judged.append((tool, gpu, raw.stdout)))
    launches: list[dict] = []

    def launch(commands: dict, timeout_s: float) -> dict:
        launches.append(commands)
        return {g: runner.RawRun(argv=tuple(a), rc=0, stdout=" ".join(a), stderr="", seconds=1.0, timed_out=False)
                for g, (a, _) in commands.items()}

    shared = runner.PerGpuRuns(launch)
    case = native.native_commands.GST_GEMM_CASES[0]

    def command(g: int) -> tuple[list[str], None]:
        return native.native_commands.gemm_argv(case, device=g), None

    for gpu in (2, 0, 1, 3):
        native.run_on_every_gpu_and_judge(case.tool, case.name, command, gpu, 4, shared, None, None)
    with pytest.raises(pytest.skip.Exception, match="spec declares 4 GPUs"):
        native.run_on_every_gpu_and_judge(case.tool, case.name, command, 5, 4, shared, None, None)
    assert len(launches) == 1 and sorted(launches[0]) == [0, 1, 2, 3]
    assert [gpu for _, gpu, _ in judged] == [2, 0, 1, 3]
    for _, gpu, out in judged:                       # each check judged its own GPU's run
        assert out == " ".join(native.native_commands.gemm_argv(case, device=gpu))
