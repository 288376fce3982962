"""The burn-in code path on CPU at tiny sizes (about a second each): correctness checks, a wrong
result named by its worker, windows, a hung and a failing worker, and the acceptance summary.

Wrong results are injected through burnin's test hook (`inject`, called on the result tensor
just before each comparison); real runs pass none. Telemetry for the acceptance tests replays
the real H200 burn-in outputs (tests/fixtures/real/nvidia-smi/SOURCES.md).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from validation.probes import burnin, telemetry  # noqa: E402
from validation.records import Status  # noqa: E402
from validation.runner import RawRun  # noqa: E402
from validation.targets import load_targets  # noqa: E402

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvidia-smi"
TINY = burnin.BurninConfig(duration_s=0.6, size=32, windows=3, check_interval_s=0.1, batch_target_s=0.01)


def corrupt(worker: int, at_check: int) -> burnin.Inject:
    def inject(position: int, check: int, result: torch.Tensor) -> None:
        if position == worker and check == at_check:
            result[3, 5] += 1
    return inject


def test_clean_burnin_checks_every_worker_and_finds_nothing_wrong():
    report = burnin.run_burnin(["cpu", "cpu"], TINY)
    assert [g.label for g in report.gpus] == ["cpu0", "cpu1"]
    for g in report.gpus:
        assert g.error is None and not g.timed_out
        assert len(g.checks) >= 3 and all(c.wrong_elements == 0 for c in g.checks)
        assert g.wrong_results == 0 and g.reference_ok
        assert g.iterations > 0 and g.tflops is not None and g.tflops > 0


def test_a_corrupted_result_is_counted_on_the_worker_that_produced_it():
    report = burnin.run_burnin(["cpu", "cpu"], TINY, inject=corrupt(worker=1, at_check=1))
    clean, bad = report.gpus
    assert clean.wrong_results == 0
    assert bad.wrong_results == 1
    assert [c.wrong_elements for c in bad.checks][:3] == [0, 1, 0]   # the next matmul overwrites it


def test_a_wrong_result_fails_the_gate_and_names_the_gpu():
    report = burnin.run_burnin(["cpu", "cpu"], TINY, inject=corrupt(worker=0, at_check=2))
    run = burnin.AcceptanceRun(burnin=report, source=None, interval_s=1.0, before=None, after=None, snapshots=(),
                               telemetry={}, smi_index={"cpu0": 0, "cpu1": 1})
    wrong = [v for v in burnin.acceptance_verdicts(run, load_targets("mi300x"))
             if v.metric == "burnin_wrong_results_count"]
    assert [(v.subject, v.status) for v in wrong] == [("cpu0", Status.FAIL), ("cpu1", Status.PASS)]
    assert wrong[0].code == "RF-BURNIN-WRONG-RESULT" and "cpu0" in wrong[0].reason


def test_throughput_is_recorded_per_window_covering_the_whole_run():
    (g,) = burnin.run_burnin(["cpu"], TINY).gpus
    assert 2 <= len(g.windows) <= 3
    assert g.windows[0].start_s == 0.0 and g.windows[-1].end_s == pytest.approx(g.seconds, abs=0.01)
    assert sum(w.iterations for w in g.windows) == g.iterations
    if g.windows[0].tflops > 0:
        assert g.sustained_ratio == pytest.approx(g.windows[-1].tflops / g.windows[0].tflops, rel=1e-5)
    else:               # a loaded machine can finish no batch in a 0.2 s window: no ratio, never a division by 0
        assert g.sustained_ratio is None


def test_a_first_result_off_the_float64_reference_counts_as_wrong():
    g = burnin.GpuBurnin(label="gpu2", index=2, device="cuda:2", name="x", bus_id=None, m=64, dtype="bf16",
                         iterations=1, seconds=1.0, tflops=1.0, windows=(), checks=(),
                         reference_rel_err=0.5, reference_tolerance=0.01)
    assert not g.reference_ok and g.wrong_results == 1


def test_a_worker_that_raises_is_reported_with_its_error_and_the_others_finish():
    def boom(position: int, check: int, result: torch.Tensor) -> None:
        if position == 1:
            raise RuntimeError("HIP error: an illegal memory access was encountered")

    report = burnin.run_burnin(["cpu", "cpu"], TINY, inject=boom)
    ok, failed = report.gpus
    assert ok.error is None and ok.wrong_results == 0
    assert failed.error == "RuntimeError: HIP error: an illegal memory access was encountered"
    assert failed.wrong_results is None


def test_a_hung_worker_is_a_timeout_not_a_failure():
    config = burnin.BurninConfig(duration_s=0.3, size=32, windows=1, check_interval_s=0.1, batch_target_s=0.01,
                                 grace_s=0.3)

    def hang(position: int, check: int, result: torch.Tensor) -> None:
        if position == 0 and check == 0:
            time.sleep(1.5)

    report = burnin.run_burnin(["cpu"], config, inject=hang)
    (g,) = report.gpus
    assert g.timed_out and "did not finish" in (g.error or "")
    assert report.seconds < 1.2
    run = burnin.AcceptanceRun(burnin=report, source=None, interval_s=1.0, before=None, after=None, snapshots=(),
                               telemetry={}, smi_index={"cpu0": 0})
    statuses = {v.metric: (v.status, v.code) for v in burnin.acceptance_verdicts(run, load_targets("h200"))}
    assert statuses["burnin_wrong_results_count"] == (Status.TIMEOUT, "RF-TIMEOUT")
    assert statuses["burnin_power_max_w"] == (Status.ERROR, "RF-NOT-REPORTED")


def test_gpus_are_matched_to_the_tools_index_by_pci_bus_id_first():
    g = burnin.GpuBurnin(label="gpu0", index=0, device="cuda:0", name="H200", bus_id="0000:00:06.0", m=8,
                         dtype="bf16", iterations=0, seconds=0.0, tflops=None, windows=(), checks=(),
                         reference_rel_err=None, reference_tolerance=0.01)
    other = burnin.GpuBurnin(label="gpu1", index=1, device="cuda:1", name="H200", bus_id=None, m=8, dtype="bf16",
                             iterations=0, seconds=0.0, tflops=None, windows=(), checks=(),
                             reference_rel_err=None, reference_tolerance=0.01)
    sample = telemetry.GpuSample(gpu=5, bus_id="00000000:00:06.0")
    snap = telemetry.Snapshot(t_s=0.0, seconds=0.1, samples=(sample,))
    assert burnin.match_gpus([g, other], [snap]) == {"gpu0": 5, "gpu1": 1}


def replay(argv: tuple[str, ...], timeout_s: float) -> RawRun:
    """The recorded H200 tool: the real fixture for the command asked."""
    line = " ".join(argv)
    path = REAL / ("h200-x1-rocm-fleet-burnin-clocks-event-reasons-load.txt" if "reasons" in line
                   else "h200-x1-rocm-fleet-burnin-query-gpu-load.txt")
    return RawRun(argv=tuple(argv), rc=0, stdout=path.read_text().split("\n", 1)[1], stderr="", seconds=0.01,
                  timed_out=False)


def test_acceptance_run_samples_telemetry_and_summarises_the_node():
    source = telemetry.NvidiaSmiSource(run=replay)
    run = burnin.run_acceptance(["cpu"], TINY, source=source, interval_s=0.1)
    assert run.before is not None and run.after is not None and len(run.snapshots) >= 3
    verdicts = burnin.acceptance_verdicts(run, load_targets("h200"))
    summary = burnin.acceptance_summary(run, verdicts)
    g = summary["gpus"]["cpu0"]
    assert summary["telemetry_source"] == "nvidia-smi" and summary["telemetry_errors"] == 0
    assert g["smi_index"] == 0 and g["telemetry"]["power_max_w"] == 689.36
    assert g["telemetry"]["power_capped_fraction"] == 1.0 and g["wrong_results"] == 0
    assert g["verdicts"]["burnin_temperature_max_c"]["status"] == "pass"
    assert g["verdict"] == "pass" and summary["verdict"] == "pass"


def test_a_worker_error_makes_the_node_summary_an_error():
    def boom(position: int, check: int, result: torch.Tensor) -> None:
        raise RuntimeError("out of memory")

    run = burnin.run_acceptance(["cpu"], TINY, source=telemetry.NvidiaSmiSource(run=replay), interval_s=0.2,
                                inject=boom)
    summary = burnin.acceptance_summary(run, burnin.acceptance_verdicts(run, load_targets("h200")))
    assert summary["verdict"] == "error" and summary["gpus"]["cpu0"]["error"] == "RuntimeError: out of memory"
