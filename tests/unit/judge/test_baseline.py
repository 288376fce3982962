"""Site baselines made from the lent H200's eight idle quick-tier runs, applied to the run measured
while a second process loaded the GPU (tests/fixtures/real/results/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from derived_results import idle_runs, load, renamed

from validation import baseline
from validation.cli import main
from validation.judge import judge_value
from validation.records import Status
from validation.targets import load_targets

RESULTS = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "results" / "h200"


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    return idle_runs()


def test_unprovisioned_nodes_are_not_accepted_unless_only_host_checks_failed(runs: list[dict]) -> None:
    with pytest.raises(baseline.BaselineError, match=r"0 accepted node\(s\).*10 failing checks \(RF-ENV-PROFILE"):
        baseline.make_baseline(runs)
    doc = baseline.make_baseline(runs, gpu_checks_only=True, name="h200-idle")
    assert doc["made_from"]["nodes"] == [f"h200-idle-{i}" for i in range(1, 9)]
    assert doc["made_from"]["software"]["nvidia_driver"] == ["580.159.04"]
    assert len(doc["metrics"]) == 34 and doc["skipped"] == {}


def test_floors_are_a_low_quantile_less_a_margin_that_widens_with_scatter(runs: list[dict]) -> None:
    m = baseline.make_baseline(runs, gpu_checks_only=True)["metrics"]
    copy = m["torch_device_copy_gb_s"]       # eight values 4267.2 .. 4270.0 GB/s: tight, so 5 %
    assert copy["direction"] == "higher_is_better" and copy["tolerance"] == 0.05
    assert 4267 < copy["value"] < 4269 and copy["nodes"] == 8
    eager = m["resnet50_fp16_eager_b32_images_s"]   # launch-bound: 4510 .. 8400 images/s between runs
    assert eager["tolerance"] > 0.5
    latency = m["resnet50_bf16_graph_b32_latency_p50_ms"]
    assert latency["direction"] == "lower_is_better" and "95th percentile" in latency["source"]


def test_the_busy_run_fails_against_it_and_the_idle_runs_do_not(runs: list[dict]) -> None:
    doc = baseline.make_baseline(runs, gpu_checks_only=True, name="h200-idle")
    overrides, notes = baseline.overrides(doc, load_targets("h200", gpu_count=1))
    assert notes == [] and "torch_matmul_bf16_tflops" in overrides
    profile = load_targets("h200", gpu_count=1, overrides=overrides)

    def judged(run: dict) -> dict[str, Status]:
        return {e["metric"]: judge_value(e["metric"], e["subject"], e["value"], profile).status
                for e in run["measurements"] if e["metric"] in overrides and isinstance(e["value"], (int, float))}

    assert all(s is not Status.FAIL for run in runs for s in judged(run).values())
    busy = judged(load(RESULTS / "h200-busy-allowed.json"))
    assert busy["torch_matmul_bf16_tflops"] is Status.FAIL      # 318.0 TFLOPS < floor 632.2
    assert busy["torch_device_copy_gb_s"] is Status.FAIL        # 1916.5 GB/s < floor 4054.3
    assert sum(s is Status.FAIL for s in busy.values()) == 21


def test_a_node_on_other_software_is_told_in_every_source(runs: list[dict]) -> None:
    doc = baseline.make_baseline(runs, gpu_checks_only=True, name="h200-idle")
    overrides, notes = baseline.overrides(doc, load_targets("h200", gpu_count=1),
                                          node_facts={"nvidia_driver": "590.10.01"})
    assert "nvidia_driver 590.10.01 (baseline: 580.159.04)" in overrides["torch_matmul_bf16_tflops"]["source"]
    assert any("made on other software" in n for n in notes)


def test_a_stricter_published_target_is_kept_and_another_sku_gets_nothing(runs: list[dict]) -> None:
    doc = baseline.make_baseline(runs, gpu_checks_only=True)
    doc["metrics"]["torch_h2d_gb_s"]["value"] = 30.0           # a baseline laxer than Azure NHC's 48 GB/s
    overrides, notes = baseline.overrides(doc, load_targets("h200", gpu_count=1))
    assert "torch_h2d_gb_s" not in overrides and any(n.startswith("torch_h2d_gb_s: the published") for n in notes)
    nothing, why = baseline.overrides(doc, load_targets("mi300x"))
    assert nothing == {} and "made on h200 nodes; not applied to a mi300x node" in why[0]


def test_cli_writes_a_file_validate_and_judge_accept_and_refuses_bad_input(tmp_path: Path, capsys) -> None:
    dirs = []
    for i, run in enumerate(idle_runs(), 1):
        d = tmp_path / f"run{i}"
        d.mkdir()
        (d / f"{run['host']}.json").write_text(json.dumps(run))
        dirs.append(str(d))
    out = tmp_path / "base.yml"
    assert main(["baseline", "create", *dirs, "-o", str(out), "--gpu-checks-only"]) == 0
    assert "34 metrics from 8 accepted h200 nodes" in capsys.readouterr().out
    assert baseline.read(out)["kind"] == baseline.KIND
    assert main(["baseline", "show", str(out)]) == 0
    assert main(["baseline", "create", *dirs, "-o", str(out)]) == 2                  # none accepted
    assert main(["baseline", "create", dirs[0], dirs[0], "-o", str(out), "--gpu-checks-only"]) == 2   # a node twice
    (tmp_path / "junk.yml").write_text(yaml.safe_dump({"metrics": {}}))
    assert main(["baseline", "show", str(tmp_path / "junk.yml")]) == 2
    err = capsys.readouterr().err
    assert "not a rocm-fleet site baseline" in err and "Traceback" not in err


def test_busy_and_invalid_numbers_never_enter_a_baseline(runs: list[dict]) -> None:
    poisoned = [renamed(r, r["host"]) for r in runs]
    for entry in poisoned[0]["measurements"]:
        if entry["metric"] == "torch_matmul_bf16_tflops":
            entry["value"], entry["valid"] = 1.0, False
    m = baseline.make_baseline(poisoned, gpu_checks_only=True)["metrics"]["torch_matmul_bf16_tflops"]
    assert m["values"] == 7 and m["value"] > 600
