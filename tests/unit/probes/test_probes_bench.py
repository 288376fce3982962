"""bench/h200_probes.py --tiny: the measurement script runs on CPU and writes JSON + Markdown."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from validation.runner import run

with warnings.catch_warnings():
    # torch's CPU wheel warns at import when numpy is absent; the probes do not use numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str]:
    out = tmp_path_factory.mktemp("bench")
    argv = [
        sys.executable,
        "-m",
        "bench.h200_probes",
        "--tiny",
        "--skip-hip",
        "--skip-allreduce",
        "--json",
        str(out / "probes.json"),
        "--markdown",
        str(out / "probes.md"),
    ]
    raw = run(argv, 300, cwd=ROOT)
    assert not raw.timed_out, raw.stderr[-2000:]
    doc = json.loads((out / "probes.json").read_text())
    return raw.rc or 0, doc, (out / "probes.md").read_text()


def test_tiny_run_exits_zero_with_every_self_check_ok(tiny_run: tuple[int, dict, str]) -> None:
    rc, doc, _ = tiny_run
    assert rc == 0
    assert doc["rows"], "no rows measured"
    assert {r["check"] for r in doc["rows"]} == {"ok"}


def test_json_names_the_device_plan_and_multicast_settings(tiny_run: tuple[int, dict, str]) -> None:
    _, doc, _ = tiny_run
    assert (doc["schema_version"], doc["kind"]) == (1, "rocm-fleet-probe-bench")
    assert doc["device"]["backend"] == "cpu"
    assert doc["plan"]["matmul_size"] == 64
    assert doc["env"] == {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def test_rows_carry_median_ceiling_ratio_and_spread(tiny_run: tuple[int, dict, str]) -> None:
    _, doc, _ = tiny_run
    probes = [r["probe"] for r in doc["rows"]]
    assert "matmul bf16 64^3" in probes
    assert "device copy 1 MiB (read+write)" in probes
    assert "conv2d tiny_3x3 fp16 fwd+bwd" in probes
    for row in doc["rows"]:
        assert row["median"] > 0 and row["ceiling"] > 0
        assert row["ratio"] == pytest.approx(row["median"] / row["ceiling"])
        assert row["spread_pct"] >= 0


def test_cpu_run_lists_the_gpu_only_probes_as_skipped(tiny_run: tuple[int, dict, str]) -> None:
    _, doc, md = tiny_run
    assert {s["probe"] for s in doc["skips"]} == {"pinned_copy", "peer_copy"}
    assert "## Skipped" in md


def test_markdown_has_the_table_header_and_one_line_per_row(tiny_run: tuple[int, dict, str]) -> None:
    _, doc, md = tiny_run
    assert "| probe | subject | unit | probe median | ceiling (best) | ratio | spread % |" in md
    table = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| probe ")]
    assert len(table) == len(doc["rows"])
