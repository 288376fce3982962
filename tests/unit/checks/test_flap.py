"""Flap control (validation/flap.py): sequences of health runs and what the policy wants done with the
node after each, the drain reason's words, overrides, and the policy table against the code table.

Expected reasons are typed from the rules in the module's docstring, not copied from its output.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from recorded_host import RecordedHost

from validation import flap, slurm
from validation.checks import test_health as checks
from validation.checks.outcome import CheckFailure
from validation.codes import CODES
from validation.errors import RocmFleetError
from validation.health_state import HealthState

BUSY = {"RF-GPU-BUSY": "left over on an idle node: pid 4242 python holding /dev/kfd"}


def runs(sequence: Sequence[dict[str, str]], overrides: dict[str, int] | None = None) -> list[flap.Decision]:
    """Feed one run per entry (its failing codes -> messages), keeping the history as the command does."""
    history = None
    out = []
    for i, failures in enumerate(sequence):
        decision = flap.step(history, failures, at=f"2025-01-01T00:{i:02d}:00+00:00", overrides=overrides)
        history = decision.history
        out.append(decision)
    return out


def test_a_single_transient_failure_does_not_drain() -> None:
    first, second = runs([BUSY, {}])
    assert first.wanted == "resume" and first.reason == "" and first.drain == {}
    assert [c.waiting() for c in first.waiting] == ["RF-GPU-BUSY failing 1 of 3 before drain"]
    assert second.wanted == "resume" and second.waiting == ()


def test_three_failing_runs_in_a_row_drain_and_say_so() -> None:
    decisions = runs([BUSY, BUSY, BUSY])
    assert [d.wanted for d in decisions] == ["resume", "resume", "drain"]
    assert [c.waiting() for c in decisions[1].waiting] == ["RF-GPU-BUSY failing 2 of 3 before drain"]
    assert decisions[2].reason == "RF-GPU-BUSY failed 3 consecutive runs"
    assert decisions[2].drain == {"RF-GPU-BUSY": "RF-GPU-BUSY failed 3 consecutive runs"}


def test_a_pass_between_failures_restarts_the_streak() -> None:
    decisions = runs([BUSY, BUSY, {}, BUSY, BUSY])
    assert [d.wanted for d in decisions] == ["resume"] * 5
    assert decisions[-1].codes[0].streak == 2


@pytest.mark.parametrize("code", ["RF-GPU-MISSING", "RF-PCIE-FATAL", "RF-XGMI-ERRORS", "RF-CPER-FATAL",
                                  "RF-BAD-PAGES", "RF-PCIE-AER-FATAL", "RF-MCE"])
def test_a_fatal_code_drains_at_once(code: str) -> None:
    (first,) = runs([{code: "..."}])
    assert first.wanted == "drain" and first.reason == f"{code} (fatal, at once)"


@pytest.mark.parametrize("code", ["RF-CPER-NONFATAL", "RF-BAD-PAGES-GREW", "RF-PCIE-AER", "RF-PCIE-REPLAY",
                                  "RF-GPU-THROTTLED", "RF-TUNING-THP", "RF-CONFIG-PACKAGE-HOLD"])
def test_codes_that_can_be_transient_wait_for_the_default_streak(code: str) -> None:
    decisions = runs([{code: "..."}] * flap.DEFAULT_DRAIN_AFTER)
    assert [d.wanted for d in decisions] == ["resume"] * (flap.DEFAULT_DRAIN_AFTER - 1) + ["drain"]


def test_fatal_codes_lead_the_reason_and_the_reason_fits_slurm() -> None:
    decisions = runs([BUSY, BUSY, BUSY | {"RF-CPER-FATAL": "fatal CPER record"}])
    assert decisions[-1].reason == "RF-CPER-FATAL (fatal, at once); RF-GPU-BUSY failed 3 consecutive runs"
    argv = slurm.drain_argv("gpu-node-07", decisions[-1].reason)
    assert argv[4] == ("Reason=rocm-fleet health: RF-CPER-FATAL (fatal, at once); RF-GPU-BUSY failed 3 "
                       "consecutive runs")


def test_ecc_growth_from_the_real_check_is_uncorrectable_and_drains_at_once(tmp_path: Path) -> None:
    spec = {"validation_gpu_count": 1, "validation_gpu_vendor": "amd"}
    first = HealthState(tmp_path, "node1")
    checks.test_gpu_error_counters_did_not_grow_since_the_last_health_run(
        RecordedHost({"amd-smi metric": "real/amd-smi/unknown-amdsmi-docs-ras-metric-ecc.txt"}, tools={"amd-smi"}),
        spec, lambda *a, **k: None, first)
    first.save()
    with pytest.raises(CheckFailure) as err:
        checks.test_gpu_error_counters_did_not_grow_since_the_last_health_run(
            RecordedHost({"amd-smi metric": "derived/amd-smi/unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt"},
                         tools={"amd-smi"}), spec, lambda *a, **k: None, HealthState(tmp_path, "node1"))
    (decision,) = runs([{err.value.code: err.value.message}])
    assert decision.wanted == "drain" and decision.reason == "RF-ECC (fatal, at once)"


def test_correctable_only_ecc_growth_waits_for_the_streak() -> None:
    message = "GPU error counters grew since the last health run: gpu0 ecc correctable 0 -> 4 (+4) " \
              "(correctable only: watch the rate; RMA if it keeps growing)"
    decisions = runs([{"RF-ECC": message}] * 3)
    assert [d.wanted for d in decisions] == ["resume", "resume", "drain"]
    assert decisions[-1].reason == "RF-ECC failed 3 consecutive runs"


def test_a_code_nobody_classified_drains_at_once_as_before_flap_control() -> None:
    (decision,) = runs([{"RF-NET-GID": "..."}])
    assert decision.wanted == "drain" and decision.reason == "RF-NET-GID failed 1 consecutive run"


def test_a_flapping_code_is_reported_and_drains_on_its_third_failing_spell() -> None:
    hot = {"RF-GPU-THROTTLED": "gpu3 clocks held down now by a thermal reason"}
    decisions = runs([hot, {}, hot, {}, hot])
    assert [d.wanted for d in decisions] == ["resume"] * 4 + ["drain"]
    assert decisions[2].flapping == ()                        # one return: not yet a pattern
    assert [c.code for c in decisions[4].flapping] == ["RF-GPU-THROTTLED"]
    assert decisions[4].reason == "RF-GPU-THROTTLED flapping (3 failing spells in 5 runs)"


def test_a_flapping_node_resumes_only_after_three_passes_in_a_row() -> None:
    hot = {"RF-GPU-THROTTLED": "..."}
    decisions = runs([hot, {}, hot, {}, hot, {}, {}, {}])
    assert [d.wanted for d in decisions[4:]] == ["drain", "keep", "keep", "resume"]
    assert decisions[5].drain == {"RF-GPU-THROTTLED": "RF-GPU-THROTTLED flapping (3 failing spells in 5 runs)"}
    assert decisions[5].reason == ""                          # kept as it is: Slurm's reason is not touched


def test_a_drained_code_that_is_not_flapping_resumes_on_its_first_pass() -> None:
    decisions = runs([{"RF-PCIE-FATAL": "FatalErr+ on 0000:0c:00.0"}, {}])
    assert [d.wanted for d in decisions] == ["drain", "resume"]
    assert decisions[1].drain == {} and decisions[1].history["drain"] == {}


@pytest.mark.parametrize("code", ["RF-PCIE-AER-FATAL", "RF-CPER-FATAL", "RF-MCE"])
def test_under_slurm_a_fatal_event_holds_the_node_until_someone_resumes_it(code: str) -> None:
    """The RAS checks judge events: the run after a fatal AER line passes because nothing new happened."""
    event = {code: "new hardware error reports in the kernel log since the last health run: ..."}
    first = flap.step(None, event, at="2025-01-01T00:00:00+00:00", drained=False)
    assert first.wanted == "drain" and first.reason == f"{code} (fatal, at once)"
    history = first.history
    for i in range(1, 4):                       # drained by the health mode, then remediation's reason
        quiet = flap.step(history, {}, at=f"2025-01-01T00:0{i}:00+00:00", drained=True)
        assert quiet.wanted == "keep" and quiet.reason == "" and quiet.drain == {code: f"{code} (fatal, at once)"}
        history = quiet.history
    # remediation rebooted it, it passed and was resumed: the policy forgets the hold
    back = flap.step(history, {}, at="2025-01-01T00:05:00+00:00", drained=False)
    assert back.wanted == "resume" and back.drain == {} and back.history["drain"] == {}
    again = flap.step(back.history, event, at="2025-01-01T00:06:00+00:00", drained=False)
    assert again.wanted == "drain"                                        # a new event drains it again


def test_under_slurm_a_streak_code_still_resumes_on_its_pass_and_a_persons_resume_ends_a_fatal_hold() -> None:
    decisions = [flap.step(None, BUSY, at="t0", overrides={"RF-GPU-BUSY": 1}, drained=False)]
    decisions.append(flap.step(decisions[0].history, {}, at="t1", drained=True))
    assert [d.wanted for d in decisions] == ["drain", "resume"]
    fatal = flap.step(None, {"RF-MCE": "..."}, at="t0", drained=False)
    held = flap.step(fatal.history, BUSY, at="t1", drained=True)
    assert held.wanted == "keep" and held.drain == {"RF-MCE": "RF-MCE (fatal, at once)"}
    resumed = flap.step(held.history, {}, at="t2", drained=False)      # a person resumed it by hand
    assert resumed.wanted == "resume" and resumed.history["drain"] == {}


def test_the_node_resumes_when_its_drain_codes_pass_even_while_another_code_is_below_its_streak() -> None:
    decisions = runs([{"RF-PCIE-FATAL": "..."}, BUSY])
    assert decisions[1].wanted == "resume"
    assert [c.waiting() for c in decisions[1].waiting] == ["RF-GPU-BUSY failing 1 of 3 before drain"]


def test_a_drain_keeps_its_words_while_it_lasts_and_a_new_code_joins_them() -> None:
    decisions = runs([BUSY, BUSY, BUSY, BUSY, BUSY | {"RF-MCE": "mce: [Hardware Error]"}])
    assert decisions[3].reason == "RF-GPU-BUSY failed 3 consecutive runs"      # not "4": Slurm is left alone
    assert decisions[3].codes[0].streak == 4
    assert decisions[4].reason == "RF-MCE (fatal, at once); RF-GPU-BUSY failed 3 consecutive runs"


def test_a_code_that_passed_a_whole_window_is_forgotten() -> None:
    decisions = runs([BUSY] + [{}] * flap.FLAP_WINDOW_RUNS)
    assert "RF-GPU-BUSY" in decisions[-2].history["codes"]
    assert decisions[-1].history == {"codes": {}, "drain": {}}


def test_the_history_records_first_and_last_seen_and_the_recent_runs() -> None:
    decisions = runs([BUSY, {}, BUSY, {}])
    kept = decisions[-1].history["codes"]["RF-GPU-BUSY"]
    assert kept == {"streak": 0, "passes": 1, "recent": "FPFP", "first_seen": "2025-01-01T00:00:00+00:00",
                    "last_seen": "2025-01-01T00:02:00+00:00"}


def test_an_override_changes_the_streak_both_ways() -> None:
    assert [d.wanted for d in runs([BUSY, BUSY], {"RF-GPU-BUSY": 2})] == ["resume", "drain"]
    fatal = runs([{"RF-PCIE-FATAL": "..."}] * 2, {"RF-PCIE-FATAL": 2})
    assert [d.wanted for d in fatal] == ["resume", "drain"]
    assert fatal[1].reason == "RF-PCIE-FATAL failed 2 consecutive runs"


def test_overrides_are_parsed_and_bad_ones_say_what_to_write() -> None:
    assert flap.parse_overrides(["RF-GPU-BUSY=2", " RF-CPER-NONFATAL=5 ", "RF-GPU-BUSY=2"]) == {
        "RF-GPU-BUSY": 2, "RF-CPER-NONFATAL": 5}
    for bad, said in [("RF-GPU-BUSY", "expected CODE=N"), ("RF-GPU-BUSY=two", "expected CODE=N"),
                      ("RF-GPU-BUSY=0", "0 is not a streak"), ("RF-GPU-BUSY=-1", "expected CODE=N"),
                      ("RF-NOPE=2", "not a failure code"), ("rf-gpu-busy=2", "expected CODE=N")]:
        with pytest.raises(RocmFleetError, match=said):
            flap.parse_overrides([bad])
    with pytest.raises(RocmFleetError, match="given twice"):
        flap.parse_overrides(["RF-GPU-BUSY=2", "RF-GPU-BUSY=3"])


@pytest.mark.parametrize("bad", ["RF-GPU-BUSY=zero", "RF-NOPE=2", "RF-GPU-BUSY=0"])
def test_the_command_refuses_a_bad_override_in_one_line_with_exit_2(bad: str, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "validation", "health", "--drain-after", bad, "--spec",
                          str(tmp_path / "spec.yml"), "--state-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("rocm-fleet: error: --drain-after") and "Traceback" not in run.stderr


def test_show_policy_prints_the_policy_with_the_overrides() -> None:
    run = subprocess.run([sys.executable, "-m", "validation", "health", "--show-policy", "--drain-after",
                          "RF-GPU-BUSY=2"], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    lines = {line.split()[0]: line.split()[1:3] for line in run.stdout.splitlines()[1:]}
    assert lines["RF-GPU-BUSY"] == ["2", "override"] and lines["RF-MCE"] == ["1", "fatal"]
    assert lines["RF-TUNING-THP"] == ["3", "streak"]


def test_every_code_in_the_policy_is_in_the_code_table() -> None:
    missing = sorted(set(flap.POLICY) - set(CODES))
    assert not missing, f"classified in validation/flap.py but not in validation/codes.py: {missing}"


def test_each_rule_says_why() -> None:
    assert all(rule.why and rule.drain_after >= 1 for rule in flap.POLICY.values())
