"""The remediation policy (validation/remediate.py) and the Slurm reasons it uses (validation/slurm.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from validation import remediate, slurm
from validation.errors import RocmFleetError

NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)


def attempt(number: int, hours_ago: float, codes: tuple[str, ...], result: str = "failed",
            codes_after: tuple[str, ...] = ()) -> remediate.Attempt:
    return remediate.Attempt(number=number, run_id=f"r{number}", started=NOW - dt.timedelta(hours=hours_ago),
                             codes=codes, result=result, codes_after=codes_after, rebooted=True)


def before(codes: tuple[str, ...], attempts: list[remediate.Attempt], k: int = 2, window: float = 24) -> remediate.Plan:
    return remediate.plan_before(codes, attempts, now=NOW, max_attempts=k, window_hours=window)


def test_codes_are_read_from_a_health_reason_also_with_flap_text_after_the_prefix() -> None:
    reason = "rocm-fleet health: RF-GPU-BUSY; RF-TUNING-THP failed 3 consecutive runs RF-GPU-BUSY"
    assert remediate.codes_in(reason) == ("RF-GPU-BUSY", "RF-TUNING-THP")
    assert remediate.codes_in("disk swap, ticket 4711") == ()


def test_a_leftover_process_gets_a_reboot_as_the_first_attempt() -> None:
    plan = before(("RF-GPU-BUSY",), [])
    assert (plan.action, plan.attempt) == ("reboot", 1)
    assert "process left holding a GPU" in plan.why


def test_wrong_results_are_held_without_a_reboot() -> None:
    plan = before(("RF-GPU-BUSY", "RF-PROBE-WRONG-RESULT"), [])
    assert plan.action == "hold" and plan.why.startswith("RF-PROBE-WRONG-RESULT: a probe computed wrong results")


def test_pending_bad_pages_get_the_reboot_that_retires_them_and_are_held_when_they_come_back() -> None:
    # RF-BAD-PAGES' hint: pending pages are retired at the next driver load; no MI300X threshold is published
    assert before(("RF-BAD-PAGES",), []).action == "reboot"
    first = attempt(1, 1, ("RF-BAD-PAGES",), result="pending")
    after = remediate.plan_after(first, False, ("RF-BAD-PAGES",), [first], now=NOW, max_attempts=3, window_hours=24)
    assert after.action == "hold"


def test_a_fatal_cper_gets_one_reboot_and_is_held_when_it_comes_back() -> None:
    assert before(("RF-CPER-FATAL",), []).action == "reboot"
    first = attempt(1, 1, ("RF-CPER-FATAL",), result="pending")
    after = remediate.plan_after(first, False, ("RF-CPER-FATAL",), [first], now=NOW, max_attempts=3, window_hours=24)
    assert after.action == "hold" and "repeated after a reboot" in after.why
    # resumed after the reboot, drained again for it later the same day: held at once, no second reboot
    passed = attempt(1, 5, ("RF-CPER-FATAL",), result="passed")
    assert before(("RF-CPER-FATAL",), [passed], k=3).action == "hold"


def test_a_gpu_missing_before_and_after_the_reboot_is_held_even_with_attempts_left() -> None:
    first = attempt(1, 0.1, ("RF-GPU-MISSING",), result="pending")
    plan = remediate.plan_after(first, False, ("RF-GPU-MISSING",), [first], now=NOW, max_attempts=5, window_hours=24)
    assert plan.action == "hold" and plan.codes == ("RF-GPU-MISSING",)


def test_attempts_in_the_window_count_and_older_ones_are_forgotten() -> None:
    recent = [attempt(1, 2, ("RF-GPU-BUSY",), "passed"), attempt(2, 1, ("RF-GPU-BUSY",))]
    held = before(("RF-GPU-BUSY",), recent, k=2)
    assert held.action == "hold" and held.why == "2 remediation attempt(s) in the last 24 h did not fix it"
    old = [attempt(1, 30, ("RF-GPU-BUSY",)), attempt(2, 25, ("RF-GPU-BUSY",))]
    assert (before(("RF-GPU-BUSY",), old, k=2).action, before(("RF-GPU-BUSY",), old, k=2).attempt) == ("reboot", 1)


def test_a_failed_attempt_with_attempts_left_waits_for_the_next_run_and_the_last_one_holds() -> None:
    first = attempt(1, 0.1, ("RF-CONFIG-PACKAGE-HOLD",), result="pending")
    retry = remediate.plan_after(first, False, ("RF-CONFIG-PACKAGE-HOLD",), [first], now=NOW, max_attempts=2,
                                 window_hours=24)
    assert (retry.action, retry.why) == ("retry", "attempt 1/2 failed; the next run tries again")
    held = remediate.plan_after(first, False, ("RF-CONFIG-PACKAGE-HOLD",), [first], now=NOW, max_attempts=1,
                                window_hours=24)
    assert held.action == "hold" and held.codes == ("RF-CONFIG-PACKAGE-HOLD",)


def test_a_pass_after_the_reboot_resumes() -> None:
    first = attempt(1, 0.1, ("RF-GPU-BUSY",), result="pending")
    assert remediate.plan_after(first, True, (), [first], now=NOW, max_attempts=1, window_hours=24).action == "resume"


def test_a_code_missing_from_the_table_is_worth_a_reboot() -> None:
    assert remediate.classify("RF-SOMETHING-NEW")[0] == remediate.REBOOT
    assert before(("RF-SOMETHING-NEW",), []).action == "reboot"


@pytest.mark.parametrize(("attempts", "window"), [(0, 24), (-1, 24), (True, 24), ("2", 24), (2, 0), (2, -3)])
def test_limits_that_cannot_work_are_refused(attempts: object, window: object) -> None:
    with pytest.raises(RocmFleetError, match=r"rocm_fleet_remediate_(max_attempts|window_hours)"):
        remediate.check_limits(attempts, window)


@pytest.mark.parametrize("reason", ["rocm-fleet: needs physical action: RF-BAD-PAGES (retired pages ...)",
                                    "rocm-fleet remediate: attempt 1/2 for RF-GPU-BUSY"])
@pytest.mark.parametrize("passed", [True, False])
def test_the_health_mode_never_resumes_nor_redrains_a_node_remediation_holds(reason: str, passed: bool) -> None:
    node = slurm.SlurmNode(name="n1", states=frozenset({"IDLE", "DRAIN"}), reason=reason)
    assert not node.drained_by_health
    assert slurm.decide(passed, node, "RF-GPU-BUSY") is None


def test_the_remediation_reasons_are_one_argument_with_a_known_prefix() -> None:
    argv = slurm.reason_argv("n1", slurm.PHYSICAL_PREFIX, "RF-BAD-PAGES\n(halt) " + "x" * 400)
    assert argv[-1].startswith("Reason=rocm-fleet: needs physical action: RF-BAD-PAGES (halt)") and "\n" not in argv[-1]
    assert len(argv[-1]) == len("Reason=") + slurm.REASON_MAX
    with pytest.raises(RocmFleetError, match="prefixes"):
        slurm.reason_argv("n1", "maintenance: ", "x")
    held = slurm.SlurmNode(name="n1", states=frozenset({"IDLE", "DRAIN"}), reason=argv[-1].removeprefix("Reason="))
    assert held.needs_physical_action and not held.drained_by_remediation
