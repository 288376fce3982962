"""`rocm-fleet validate` refuses, before running anything, what cannot give a verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from validation.cli import main
from validation.commands.validate import marker_expr


def test_validating_a_node_without_its_declared_state_is_refused_in_one_line(tmp_path: Path) -> None:
    """Before: 41 ERRORs with tracebacks and exit 1. Now nothing runs: exit 2 and what to pass."""
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--tier", "smoke",
                           "--results", str(tmp_path / "r")], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and not (tmp_path / "r").exists()
    assert proc.stderr.count("\n") == 1 and "pass --spec FILE" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_spec_or_baseline_file_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["validate", "--hosts", "local://", "--spec", str(tmp_path / "none.yml")]) == 2
    spec = tmp_path / "spec.yml"
    spec.write_text("validation_gpu_count: 1\n")
    assert main(["validate", "--hosts", "local://", "--spec", str(spec), "--baseline", str(tmp_path / "b.yml")]) == 2
    err = capsys.readouterr().err
    assert "--spec" in err and "--baseline" in err and "no such file" in err




@pytest.mark.parametrize("tier", ["smoke", "quick", "acceptance"])
def test_no_gpu_leaves_out_every_gpu_check_of_the_tier(tier: str) -> None:
    """pytest's own marker-expression evaluator decides, as it does when selecting checks."""
    selected = Expression.compile(marker_expr(tier, no_gpu=True)).evaluate
    assert not selected({"smoke", "gpu"}.__contains__)
    assert not selected({"quick", "gpu"}.__contains__)
    assert selected({"smoke"}.__contains__)
    assert selected({"quick"}.__contains__) is (tier != "smoke")
