"""The lab's dmesg stand-in (tests/integration/standins/dmesg_standin.py), run for real with a fake real dmesg,
a fake /proc/uptime and state files under a fake /run and /var/lib: its injected lines are the fixtures' real
lines (tests/fixtures/real/dmesg/, SOURCES.md there), re-stamped, and they parse with validation.parsers.dmesg
into the hardware-error kind the health mode and validate judge; transient ones go with /run, recurring ones
come back, stamped anew, on every call.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from validation import ras
from validation.parsers import dmesg

ROOT = Path(__file__).resolve().parents[3]
STANDIN = ROOT / "tests" / "integration" / "standins" / "dmesg_standin.py"
FIXTURES = ROOT / "tests" / "fixtures" / "real" / "dmesg"
REAL_LOG = "[19060.145332] systemd-journald[26]: Received client request to flush runtime journal."


@pytest.fixture
def box(tmp_path: Path) -> dict[str, str]:
    """A fake real dmesg (prints one line, its arguments on stderr; exits 3 for --fail), /proc/uptime, /run
    and /var/lib."""
    real = tmp_path / "real-dmesg"
    real.write_text(f"#!/bin/sh\necho \"$*\" >&2\n[ \"$1\" = --fail ] && exit 3\necho '{REAL_LOG}'\n")
    real.chmod(0o755)
    (tmp_path / "uptime").write_text("20000.50 39000.00\n")
    return {**os.environ, "DMESG_STANDIN_REAL": str(real), "DMESG_STANDIN_UPTIME": str(tmp_path / "uptime"),
            "DMESG_STANDIN_TRANSIENT": str(tmp_path / "run" / "rocm-fleet-standin" / "dmesg.json"),
            "DMESG_STANDIN_RECURRING": str(tmp_path / "var-lib" / "rocm-fleet-standin" / "dmesg.json"),
            "DMESG_STANDIN_NOW": "1796590000.25"}


def call(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(STANDIN), *args], capture_output=True, text=True, env=env,
                          timeout=30, check=False)


def uptime(env: dict[str, str], seconds: float) -> None:
    Path(env["DMESG_STANDIN_UPTIME"]).write_text(f"{seconds:.2f} 1.00\n")


def load_standin():
    import importlib.util
    spec = importlib.util.spec_from_file_location("dmesg_standin", STANDIN)
    module = importlib.util.module_from_spec(spec)            # type: ignore[arg-type]
    spec.loader.exec_module(module)                           # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("kind, fixture", [
    ("aer-fatal", "radeon-fury-nano-rocm-issue32-dmesg-aer-uncorrected-fatal-root-port.txt"),
    ("mce", "sandy-bridge-rasdaemon-issue155-dmesg-tail-mce-machine-check-events.txt"),
])
def test_the_injected_lines_are_the_fixtures_real_lines_at_their_real_offsets(kind: str, fixture: str) -> None:
    real = [(float(m[1]), m[2]) for line in (FIXTURES / fixture).read_text().splitlines()
            if (m := re.fullmatch(r"\[\s*(\d+\.\d+)\] (.*)", line))]        # byte for byte, trailing spaces kept
    lines = load_standin().KINDS[kind]
    start = next(i for i, (_, text) in enumerate(real) if text == lines[0][2])
    for (offset, _, text), (seconds, real_text) in zip(lines, real[start:], strict=True):
        assert text == real_text
        assert offset == pytest.approx(seconds - real[start][0], abs=1e-6)


def test_transient_aer_prints_the_real_log_then_the_line_at_the_injection_and_parses_as_fatal(
        box: dict[str, str]) -> None:
    injected = call(box, "--standin-inject", "transient")
    assert injected.returncode == 0, injected.stderr
    assert json.loads(injected.stdout)["seconds"] == 20000.5
    uptime(box, 20042.0)
    out = call(box)
    assert out.returncode == 0 and out.stderr == "\n"                # the real dmesg ran, with no arguments
    lines = out.stdout.splitlines()
    assert lines[0] == REAL_LOG
    assert lines[1] == "[20000.500000] pcieport 0000:00:1c.4: AER: Uncorrected (Fatal) error received: id=00e4"
    assert lines[-1] == "[20001.508771] pcieport 0000:00:1c.4: AER: Device recovery failed"
    errors = dmesg.hardware_errors(dmesg.parse(out.stdout))
    assert [(e.kind, e.bdf, e.line.seconds) for e in errors] == [(dmesg.AER_FATAL, "0000:00:1c.4", 20000.5)]
    found = ras.kernel_findings(errors, nonfatal_fail=True)
    assert [f.code for f in found] == ["RF-PCIE-AER-FATAL"]
    assert call(box).stdout == out.stdout                            # the same report, call after call


def test_a_transient_injection_is_gone_with_run_and_a_recurring_one_is_stamped_anew_on_every_call(
        box: dict[str, str]) -> None:
    call(box, "--standin-inject", "transient")
    Path(box["DMESG_STANDIN_TRANSIENT"]).unlink()                    # the reboot's fresh tmpfs on /run
    assert dmesg.hardware_errors(dmesg.parse(call(box).stdout)) == ()
    call(box, "--standin-inject", "recurring")
    seen = []
    for now in (20010.0, 20020.25):
        uptime(box, now)
        errors = dmesg.hardware_errors(dmesg.parse(call(box).stdout))
        assert [e.kind for e in errors] == [dmesg.AER_FATAL]
        seen.append(errors[0].line.seconds)
    assert seen == [20010.0, 20020.25]
    assert Path(box["DMESG_STANDIN_RECURRING"]).is_file()            # under /var/lib: kept across the reboot
    call(box, "--standin-clear")
    assert call(box).stdout.splitlines() == [REAL_LOG]


def test_time_formats_levels_and_facilities_are_honoured(box: dict[str, str]) -> None:
    call(box, "--standin-inject", "transient", "--standin-kind", "aer-fatal")
    iso = call(box, "--time-format=iso")
    assert iso.stderr == "--time-format=iso\n"                       # passed through to the real dmesg
    stamped = [line for line in iso.stdout.splitlines() if "AER: Uncorrected (Fatal)" in line]
    assert len(stamped) == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d pcieport 0000:00:1c.4: AER: "
                        r"Uncorrected \(Fatal\) error received: id=00e4", stamped[0]), stamped[0]
    ctime = dmesg.parse(call(box, "-T").stdout.split("\n", 1)[1])
    assert ctime.form == "wallclock" and [e.kind for e in dmesg.hardware_errors(ctime)] == [dmesg.AER_FATAL]
    assert call(box, "-t").stdout.splitlines()[1] == \
        "pcieport 0000:00:1c.4: AER: Uncorrected (Fatal) error received: id=00e4"
    err_only = call(box, "--level=err,crit,alert,emerg").stdout.splitlines()
    assert len(err_only) == 1 + 5 and "Device recovery failed" not in err_only[-1]
    assert call(box, "-l", "info").stdout.count("AER-aware") == 2
    assert call(box, "--facility=daemon").stdout.splitlines() == [REAL_LOG]


def test_the_real_dmesgs_failure_is_its_answer_and_unreproduced_forms_run_it_alone(box: dict[str, str]) -> None:
    call(box, "--standin-inject", "recurring")
    failed = call(box, "--fail")
    assert failed.returncode == 3 and failed.stdout == ""
    for alone in (["--json"], ["-x"], ["--time-format=reltime"], ["-w"]):
        out = call(box, *alone)
        assert out.stdout.splitlines() == [REAL_LOG], alone
    assert call(box, "--standin-inject", "sometimes").returncode == 2
