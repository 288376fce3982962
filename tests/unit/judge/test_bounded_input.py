"""Bounded input (issue 15): an input over the limit is an error before it is read, an endless one is
cut at the limit, the limit is configurable; NVIDIA outputs are judged and `nvidia-smi:PATH` names
the tool, not a missing file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation import inputs
from validation.cli import main
from validation.errors import RocmFleetError

FIX = Path(__file__).resolve().parents[2] / "fixtures"
BLOG = FIX / "real/rccl-tests/mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_file_over_the_limit_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(BLOG.read_bytes() + b"#" * (2 << 20))
    rc, _, err = run(capsys, "judge", "--profile", "mi300x", "--max-input-mb", "1", f"rccl-tests:{big}")
    assert rc == 2
    assert err.startswith(f"rocm-fleet: error: {big}: 2.0 MiB, more than the input limit of 1 MiB")
    assert "--max-input-mb" in err and err.count("\n") == 1


def test_the_limit_comes_from_the_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(inputs.ENV_VARIABLE, "0.001")
    rc, _, err = run(capsys, "parse", "rccl-tests", str(BLOG))
    assert rc == 2 and "input limit of 0.001 MiB" in err


def test_an_endless_input_ends_in_an_error() -> None:
    with pytest.raises(inputs.InputTooLargeError, match="does not end within the limit"):
        inputs.read_bytes("/dev/zero", 1 << 20)


def test_a_bad_limit_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(inputs.ENV_VARIABLE, "lots")
    with pytest.raises(RocmFleetError, match="is not a number of MiB"):
        inputs.limit_bytes()


def test_a_large_file_must_name_its_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from validation.commands import judge

    monkeypatch.setattr(judge, "DETECT_LIMIT", 1000)
    rc, _, err = run(capsys, "judge", "--profile", "mi300x", str(BLOG))
    assert rc == 2 and "too large to recognise" in err and f"rccl-tests:{BLOG}" not in err


def test_a_long_debug_log_parses_in_one_pass(tmp_path: Path) -> None:
    """The collective parser streams: a run with 200 000 NCCL INFO lines between its rows parses to the
    same rows as the clean run (bench/large_input.py measures the 200 MB case)."""
    from validation.parsers import rccl_tests

    lines = BLOG.read_text().splitlines(keepends=True)
    noise = "host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" * 200_000
    noisy = "".join(lines[:14]) + noise + "".join(lines[14:])
    def table(text: str) -> list[tuple[int, float, float]]:
        return [(r.size_bytes, r.out_of_place.busbw_gb_s, r.in_place.busbw_gb_s) for r in rccl_tests.parse(text).rows]

    assert table(noisy) == table(BLOG.read_text())
    assert len(table(noisy)) == 32


# --- nvidia-smi ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path, sku, gpus, judged", [
    ("h100-sxm-x8-thamada-gls-nvidia-smi-a.txt", "h100", "8", "gpu_identity"),        # -q
    ("h200-x1-rocm-fleet-idle-table.txt", "h200", "1", "gpu_identity"),               # default view
    ("h200-x8-exp23-release-note-query-gpu-before-load.txt", "h200", "8", "vram_per_gpu_gb"),  # --query-gpu CSV
])
def test_nvidia_smi_views_are_judged_by_their_profile(capsys: pytest.CaptureFixture[str], path: str, sku: str,
                                                      gpus: str, judged: str) -> None:
    rc, out, _ = run(capsys, "judge", "--profile", sku, "--gpus", gpus, "--json",
                     f"nvidia-smi:{FIX / 'real/nvidia-smi' / path}")
    doc = json.loads(out)
    verdicts = doc["files"][0]["verdicts"]
    # the exp23 view was taken under load (7 GPUs at 100 %): WARN RF-GPU-BUSY, and nothing else that is not a pass
    busy = [v for v in verdicts if (v["status"], v["code"]) == ("warn", "RF-GPU-BUSY")]
    assert rc == 0 and doc["status"] == ("warn" if busy else "pass"), [
        v["reason"] for v in verdicts if v["status"] != "pass" and v not in busy]
    assert any(v["metric"] == judged and v["status"] == "pass" for v in verdicts)
    assert any(v["metric"] == "gpu_count" and v["status"] == "pass" and v["measured"] == int(gpus) for v in verdicts)


def test_an_elided_nvidia_smi_csv_never_passes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "judge", "--profile", "h100", "--json",
                     f"nvidia-smi:{FIX / 'real/nvidia-smi/h100-ml-engineering-query-gpu-vbios-csv.txt'}")
    assert rc == 1 and json.loads(out)["status"] == "error"


def test_an_h100_query_log_judged_as_h200_fails_identity_and_memory(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "judge", "--profile", "h200", "--json",
                     f"nvidia-smi:{FIX / 'real/nvidia-smi/h100-sxm-x8-thamada-gls-nvidia-smi-a.txt'}")
    bad = {(v["metric"], v["code"]) for v in json.loads(out)["files"][0]["verdicts"] if v["status"] == "fail"}
    assert rc == 1 and bad == {("gpu_identity", "RF-SKU-MISMATCH"), ("vram_per_gpu_gb", "RF-VRAM-LOW")}


def test_an_h100_default_view_reads_85_5_gb_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "judge", "--profile", "h100", "--gpus", "1", "--json",
                     f"nvidia-smi:{FIX / 'real/nvidia-smi/h100-k8s-gang-worker0-table-74gb-no-procs.txt'}")
    (vram,) = [v for v in json.loads(out)["files"][0]["verdicts"] if v["metric"] == "vram_per_gpu_gb"]
    assert rc == 0 and vram["measured"] == 85.52  # 81559 MiB x 2^20 / 10^9


def test_a_missing_nvidia_smi_file_is_named_as_such(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "judge", "--profile", "h100", "nvidia-smi:/nonexistent/smi.txt")
    assert rc == 2 and err.strip() == "rocm-fleet: error: /nonexistent/smi.txt: no such file; check the path"


def test_a_parsed_but_unjudged_tool_prefix_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "judge", "--profile", "h100", f"dkms-status:{BLOG}")
    assert rc == 2 and "dkms-status outputs are parsed" in err and "not judged" in err


def test_a_misspelled_tool_prefix_lists_the_tools(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "judge", "--profile", "h100", "nvidia_smi:whatever.txt")
    assert rc == 2 and "unknown tool 'nvidia_smi'" in err and "nvidia-smi" in err
