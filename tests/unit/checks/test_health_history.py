"""Issue 39 item 10: the health mode's memory (`<state-dir>/<node>.json`) under two runs at once, a wrong
shape and an unreadable file. At d11d023 two runs publishing at once failed one of them, a flap history of
the wrong shape made every later run exit 2 (so the node could never drain), and an unreadable file was
silently reset, after which a node still failing was resumed.

The checks run for real on this machine (as in test_health_mode.py): THP is whatever this kernel says and
the spec declares it or the other value. Slurm is the stand-in scontrol of tests/helpers/slurm_standin.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path

import pytest
from slurm_standin import StandinSlurm, install

from validation import flap
from validation.cli import main
from validation.commands import health as command
from validation.health_state import HealthState

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
BASE = ("node_tuning_thp_defrag: keep\nnode_tuning_numa_balancing: keep\nnode_tuning_pci_realloc: keep\n"
        "node_tuning_iommu: keep\nnode_tuning_vendor_iommu: keep\nnode_tuning_modprobe_blacklist: []\n"
        "node_tuning_cmdline_thp: keep\nrocm_version: '6.1.2'\nrocm_packages: []\n")
HELD = "rocm-fleet health: RF-TUNING-THP failed 3 consecutive runs"


def write_spec(path: Path, *, drifted: bool) -> Path:
    """The spec declares THP as this kernel has it, or (drifted) the other value: RF-TUNING-THP fails."""
    if not THP.exists():
        pytest.skip("this kernel has no transparent hugepages")
    now = THP.read_text().split("[")[1].split("]")[0]
    other = "never" if now != "never" else "always"
    path.write_text(BASE + f"node_tuning_thp_enabled: {other if drifted else now}\n")
    return path


def health(capsys: pytest.CaptureFixture[str], spec: Path, state: Path, *extra: str,
           as_json: bool = True) -> tuple[int, dict, str, str]:
    code = main(["health", "--spec", str(spec), "--state-dir", str(state), "--node-name", "node1", *extra,
                 *(["--json"] if as_json else [])])
    out = capsys.readouterr()
    return code, json.loads(out.out) if as_json and out.out.startswith("{") else {}, out.out, out.err


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandinSlurm:
    return install(tmp_path, monkeypatch)


SLURM = ("--slurm", "--slurm-node", "node1")


def test_two_runs_at_once_take_turns_and_both_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The first run holds its checks open until a second run's checks start beside it (3 s at most): at
    d11d023 they did, and raced on `last` and on the history; now the second waits for the first."""
    spec = write_spec(tmp_path / "spec.yml", drifted=True)
    state = tmp_path / "state"
    real_run = command.subprocess.run
    guard = threading.Lock()
    calls: list[int] = []
    inside: list[int] = []
    overlapped: list[int] = []
    second_started = threading.Event()

    def checks(cmd: list[str], **kwargs: object) -> object:
        with guard:
            calls.append(len(calls) + 1)
            me = calls[-1]
            if inside:
                overlapped.append(me)
            inside.append(me)
            if me == 2:
                second_started.set()
        if me == 1:
            second_started.wait(timeout=3)
        try:
            return real_run(cmd, **kwargs)
        finally:
            with guard:
                inside.remove(me)

    monkeypatch.setattr(command.subprocess, "run", checks)
    codes: dict[str, int] = {}
    argv = ["health", "--spec", str(spec), "--state-dir", str(state), "--node-name", "node1"]
    first = threading.Thread(target=lambda: codes.__setitem__("first", main(argv)))
    second = threading.Thread(target=lambda: codes.__setitem__("second", main(argv)))
    first.start()
    for _ in range(600):
        if calls:
            break
        time.sleep(0.05)
    second.start()
    first.join(timeout=180)
    second.join(timeout=180)
    capsys.readouterr()
    assert overlapped == [], "a second run's checks started while the first run held the node's state"
    assert codes == {"first": 1, "second": 1}
    memory = json.loads((state / "node1.json").read_text())
    assert memory["flap"]["codes"]["RF-TUNING-THP"]["streak"] == 2          # one run after the other, both kept
    assert json.loads((state / "last" / "node1.json").read_text())["complete"]
    assert not list(state.glob(".run-*")) and not list(state.glob(".old-*"))


def test_a_run_that_cannot_get_the_state_waits_its_bound_then_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yml"
    spec.write_text("validation_gpu_count: null\nrocm_packages: []\n")
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(command, "LOCK_SLACK_S", 0)
    with (state / command.LOCK).open("w") as held:       # another run holds the node's state
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        code, _, _, err = health(capsys, spec, state, "--timeout", "1", as_json=False)
        waited = time.monotonic() - started
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("rocm-fleet: error: another `rocm-fleet health` run holds") and "1 s" in err
    assert 1 <= waited < 30
    assert sorted(p.name for p in state.iterdir()) == [command.LOCK]     # no results, no state, no run directory


@pytest.mark.parametrize("flap_part", [[1, 2], "x"], ids=["list", "string"])      # the two examples
def test_a_history_of_the_wrong_shape_is_reported_and_the_node_still_drains(
        flap_part: object, tmp_path: Path, slurm: StandinSlurm, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path / "spec.yml", drifted=True)
    state = tmp_path / "state"
    state.mkdir()
    (state / "node1.json").write_text(json.dumps({"version": 1, "flap": flap_part}))
    code, summary, _, err = health(capsys, spec, state, *SLURM, "--drain-after", "RF-TUNING-THP=1")
    assert code == 1, err
    assert summary["history"]["readable"] is True
    assert summary["history"]["problems"] and all("flap" in p for p in summary["history"]["problems"])
    assert slurm.node()["state"] == "IDLE+DRAIN"
    assert slurm.node()["reason"] == "rocm-fleet health: RF-TUNING-THP failed 1 consecutive run"
    kept = json.loads((state / "node1.json").read_text())["flap"]
    assert kept["codes"]["RF-TUNING-THP"]["streak"] == 1 and kept["codes"]["RF-TUNING-THP"]["recent"] == "F"
    again, summary, _, _ = health(capsys, spec, state, *SLURM, "--drain-after", "RF-TUNING-THP=1")
    assert again == 1 and summary["history"]["problems"] == []          # written whole: read whole


@pytest.mark.parametrize("flap_part", [
    [1, 2],
    "x",
    {"codes": [1], "drain": {}},
    {"codes": {"RF-TUNING-THP": {"streak": "many", "passes": 0, "recent": 5}}, "drain": {}},
    {"codes": {"RF-TUNING-THP": {"streak": 2, "passes": 0, "recent": "FX", "first_seen": "t0", "last_seen": None}}},
    {"codes": {"RF-TUNING-THP": 3}, "drain": {}},
    {"codes": {}, "drain": ["RF-TUNING-THP"]},
    {"codes": {}, "drain": {"RF-TUNING-THP": 3}},
], ids=["list", "string", "codes-a-list", "record-wrong-types", "recent-not-pf", "record-a-number", "drain-a-list",
        "drain-words-a-number"])
@pytest.mark.parametrize("drained", [True, False, None])
def test_every_wrong_shaped_part_is_said_and_the_policy_still_decides(flap_part: object, drained: bool | None) -> None:
    """Wrong shapes straight into the policy (validation/flap.py): at d11d023 `step` raised on most of them
    (AttributeError, ValueError, TypeError; on the drain's only while the node was drained or without Slurm)
    and took a record with a number for a field or a bad `recent` as it was."""
    history = flap.read_history(flap_part)
    assert history.problems and all(p.startswith("flap") for p in history.problems)
    decision = flap.step(history.as_dict(), {"RF-TUNING-THP": "THP drifted"}, at="t1", overrides={"RF-TUNING-THP": 1},
                         drained=drained)
    assert decision.wanted == "drain" and decision.reason == "RF-TUNING-THP failed 1 consecutive run"
    assert flap.read_history(decision.history).problems == ()


def test_an_unknown_drain_is_read_back_from_slurms_reason() -> None:
    assert flap.read_history({"codes": {}, "drain": "x"}).drain is None
    assert flap.held_from_reason("RF-ECC (fatal, at once); RF-GPU-BUSY failed 3 consecutive runs; RF-TUNING-TH") == {
        "RF-ECC": "RF-ECC (fatal, at once)", "RF-GPU-BUSY": "RF-GPU-BUSY failed 3 consecutive runs"}
    assert flap.held_from_reason("disk swap, ticket 4711") == {}


@pytest.mark.parametrize(("content", "mode"), [
    pytest.param(b'{"version": 1, "flap": {"co', None, id="cut-json"),
    pytest.param(b"\xff\xfe\x00", None, id="not-text"),
    pytest.param(b"[1, 2]\n", None, id="not-an-object"),
    pytest.param(b'{"version": 7}\n', None, id="another-version"),
    pytest.param(b'{"version": 1}\n', 0o000, id="no-permission",
                 marks=pytest.mark.skipif(os.geteuid() == 0, reason="root reads a 0000 file")),
])
def test_an_unreadable_state_file_is_said_and_never_written_over(content: bytes, mode: int | None,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "node1.json").write_bytes(content)
    if mode is not None:
        (tmp_path / "node1.json").chmod(mode)
    memory = HealthState(tmp_path, "node1")          # what the checks' plugin and the command both read
    assert memory.unreadable and memory.get("flap") is None
    memory.set("kernel_log", {"boot_id": "b", "seconds": 1.0, "count": 0})
    memory.save()
    (aside,) = tmp_path.glob("node1.json.unreadable-*")
    aside.chmod(0o600)
    assert aside.read_bytes() == content
    assert json.loads((tmp_path / "node1.json").read_text())["kernel_log"]["count"] == 0


def test_an_unreadable_history_keeps_a_drained_node_drained_while_it_fails(
        tmp_path: Path, slurm: StandinSlurm, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path / "spec.yml", drifted=True)
    state = tmp_path / "state"
    state.mkdir()
    content = b'{"version": 1, "flap": {"co'
    (state / "node1.json").write_bytes(content)
    slurm.set_node("IDLE+DRAIN", HELD)
    code, _, out, err = health(capsys, spec, state, *SLURM, as_json=False)
    assert code == 1, err                                               # its checks are still reported
    assert out.startswith("health node1: FAIL RF-TUNING-THP (") and "health history unreadable" in out
    assert slurm.updates == [], "the node was resumed or re-drained on an unreadable history"
    aside = list(state.glob("node1.json.unreadable-*"))
    assert len(aside) == 1, sorted(p.name for p in state.iterdir())
    assert aside[0].read_bytes() == content                             # kept for a person, never overwritten
    # still failing on the next run: the drain's codes come from Slurm's reason, so it is not resumed
    code, summary, _, _ = health(capsys, spec, state, *SLURM)
    assert code == 1 and summary["history"]["readable"] is True and slurm.updates == []
    assert summary["flap"]["wanted"] == "keep"
    # THP as declared again: the code that drained the node passes, the health mode resumes it
    write_spec(spec, drifted=False)
    code, summary, _, _ = health(capsys, spec, state, *SLURM)
    assert code == 0 and slurm.updates == [["update", "NodeName=node1", "State=RESUME"]]


def test_an_unreadable_history_neither_resumes_nor_drains_on_that_run(tmp_path: Path, slurm: StandinSlurm,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    spec = write_spec(tmp_path / "spec.yml", drifted=False)
    (state / "node1.json").write_text("{")
    slurm.set_node("IDLE+DRAIN", HELD)                   # passing now, drained by the health mode
    code, summary, _, _ = health(capsys, spec, state, *SLURM)
    assert code == 0 and slurm.updates == [] and summary["slurm"]["action"] is None
    assert summary["history"]["readable"] is False and summary["slurm"]["drained"] is True
    (state / "node1.json").write_text("{")
    slurm.set_node("IDLE")                               # in service, a code that drains at once fails now
    write_spec(spec, drifted=True)
    code, summary, _, _ = health(capsys, spec, state, *SLURM, "--drain-after", "RF-TUNING-THP=1")
    assert code == 1 and slurm.updates == [] and summary["history"]["readable"] is False
    code, summary, _, _ = health(capsys, spec, state, *SLURM, "--drain-after", "RF-TUNING-THP=1")
    assert code == 1 and slurm.node()["state"] == "IDLE+DRAIN"        # read whole again: the policy acts
