"""What `rocm-fleet validate` prints for failing checks (issue 44: the demo printed about 90 lines of pytest
tracebacks, whole `spec = {...}` dumps among them, and 34 SKIPPED lines for six failures it expects): one line
per failure, in the command's own table with its check and code (the message under it); `--debug` brings
pytest's tracebacks and skip reasons back. The real suite on this machine, which has no AMD GPU: its GPU checks fail as
on a lab host."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SPEC = "validation_gpu_vendor: amd\nvalidation_gpu_count: 8\n"


def validate(tmp_path: Path, *extra: str) -> str:
    (tmp_path / "spec.yml").write_text(SPEC)
    proc = subprocess.run([sys.executable, "-m", "validation", *extra, "validate", "--hosts", "local://", "--tier",
                           "smoke", "--spec", str(tmp_path / "spec.yml"), "--results", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout


def test_each_failure_is_one_line_and_no_traceback_or_skip_reason_is_printed(tmp_path: Path) -> None:
    out = validate(tmp_path)
    counted = int(re.search(r"(\d+) failed", out).group(1))  # type: ignore[union-attr]
    lines = [line for line in out.splitlines() if re.match(r"  \S+: FAIL \S+ RF-[A-Z0-9-]+", line)]
    assert counted and len(lines) == counted, out[-3000:]
    assert "Traceback" not in out and "spec = {" not in out and "def test_" not in out, out[-3000:]
    assert "SKIPPED [" not in out and "= FAILURES =" not in out and "FAILED " not in out, out[-3000:]


def test_debug_prints_the_tracebacks_and_skip_reasons(tmp_path: Path) -> None:
    out = validate(tmp_path, "--debug")
    assert "= FAILURES =" in out and "CheckFailure" in out and "SKIPPED [" in out, out[-3000:]
