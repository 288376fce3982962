"""Whether a job runs on a node (validation/occupancy.py), as the reboot, reload and upgrade paths ask it:
Slurm from real `scontrol show node` outputs (tests/fixtures/real/scontrol/SOURCES.md) with squeue in the
format validation/slurm.py asks for; the lab runs both for real (tests/integration/test_remediate.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from validation import occupancy, slurm
from validation.errors import RocmFleetError

SCONTROL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "scontrol"
MIXED_DRAIN = (SCONTROL / "bih-hpc-med0304-faq-show-node-mixed-drain-psu-20.02.txt").read_text()
IDLE_DRAIN = (SCONTROL / "unige-bamboo-gpu010-hpc-community-show-node-idle-drain-health-25.11.txt").read_text()


def slurm_out(shown: str, *jobs: str) -> str:
    return f"{shown}\n{occupancy.SQUEUE_MARK}\n" + "".join(f"{j}\n" for j in jobs)


def test_a_drained_node_whose_job_still_runs_is_occupied() -> None:
    """A drain lets the running jobs finish: MIXED+DRAIN is not idle, even when squeue shows nothing
    (a user other than root may not see other users' jobs with PrivateData=jobs)."""
    why = occupancy.why_occupied("slurm", "med0304", 0, slurm_out(MIXED_DRAIN))
    assert why == "Slurm shows it DRAIN+MIXED"


def test_an_idle_drained_node_with_a_job_in_squeue_is_occupied_and_one_without_is_free() -> None:
    assert occupancy.why_occupied("slurm", "gpu010", 0, slurm_out(IDLE_DRAIN)) == ""
    why = occupancy.why_occupied("slurm", "gpu010", 0, slurm_out(IDLE_DRAIN, "81|COMPLETING|alice", "82|PENDING|bob"))
    assert why == "1 job(s) run there: 81 (alice, COMPLETING)"       # a pending job holds nothing yet


def test_what_cannot_be_read_counts_as_occupied() -> None:
    assert occupancy.why_occupied("slurm", "gpu010", 1, "", "slurm_load_node error: Unable to contact slurm "
                                  "controller").startswith("cannot tell whether a job runs on gpu010 (slurm: exit 1: "
                                                           "slurm_load_node error")
    assert occupancy.why_occupied("slurm", "gpu010", None, "").startswith("cannot tell")
    assert "printed no squeue part" in occupancy.why_occupied("slurm", "gpu010", 0, IDLE_DRAIN)
    assert "not JOBID|STATE|USER" in occupancy.why_occupied("slurm", "gpu010", 0, slurm_out(IDLE_DRAIN, "81 R a"))


def test_the_slurm_probe_quotes_a_checked_name_and_asks_for_every_users_jobs() -> None:
    argv = occupancy.probe_argv("slurm", "gpu1")
    assert argv[:2] == ["sh", "-c"] and "squeue --all" in argv[2] and "--nodelist=gpu1" in argv[2]
    assert "--states=CONFIGURING,RUNNING,COMPLETING,SUSPENDED" in argv[2]
    for hostile in ("gpu1; reboot", "-h", "$(id)", "a b"):
        with pytest.raises(RocmFleetError):
            occupancy.probe_argv("slurm", hostile)


def test_the_slurm_probe_runs_as_one_shell_command(tmp_path: Path) -> None:
    """The probe is one task per poll: both reads in one sh run, the squeue part after the mark."""
    for name, text in (("scontrol", f"cat <<'X'\n{IDLE_DRAIN}X\n"), ("squeue", "echo '7|RUNNING|alice'\n")):
        (tmp_path / name).write_text(f"#!/bin/sh\n{text}")
        (tmp_path / name).chmod(0o755)
    done = subprocess.run(occupancy.probe_argv("slurm", "gpu010"), capture_output=True, text=True, check=False,
                          env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert occupancy.why_occupied("slurm", "gpu010", done.returncode, done.stdout) == \
        "1 job(s) run there: 7 (alice, RUNNING)"


def test_the_operators_command_says_idle_busy_or_cannot_tell() -> None:
    assert occupancy.probe_argv("command", "n", ["/usr/local/bin/idle", "--node", "n"]) == \
        ["/usr/local/bin/idle", "--node", "n"]
    with pytest.raises(RocmFleetError, match="needs node_drain_idle_command"):
        occupancy.probe_argv("command", "n", [])
    assert occupancy.why_occupied("command", "n", 0, "") == ""
    assert occupancy.why_occupied("command", "n", 1, "job 12 of alice\nmore\n") == "job 12 of alice"
    assert occupancy.why_occupied("command", "n", 3, "", "boom").startswith("cannot tell")


def test_no_scheduler_has_nothing_to_ask_and_an_unknown_method_is_refused() -> None:
    assert occupancy.probe_argv("none", "n") == [] and occupancy.why_occupied("none", "n", None, "") == ""
    with pytest.raises(RocmFleetError, match="give one of none, slurm, kubernetes, command"):
        occupancy.probe_argv("lsf", "n")


def test_kubernetes_counts_the_pods_a_drain_would_evict() -> None:
    """Not a captured output (no cluster here): a PodList in the shape of the Kubernetes API reference,
    with the two kinds of pod `kubectl drain` leaves on a node by design."""
    def pod(name: str, phase: str = "Running", owner: str | None = None, mirror: bool = False) -> dict:
        meta: dict = {"name": name, "namespace": "ml"}
        if owner:
            meta["ownerReferences"] = [{"kind": owner, "name": "x"}]
        if mirror:
            meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
        return {"metadata": meta, "status": {"phase": phase}}
    left = [pod("exporter", owner="DaemonSet"), pod("static", mirror=True), pod("done", phase="Succeeded")]
    assert occupancy.why_occupied("kubernetes", "n", 0, json.dumps({"items": left})) == ""
    busy = json.dumps({"items": [*left, pod("train-0", owner="StatefulSet"), pod("bare", phase="Pending")]})
    assert occupancy.why_occupied("kubernetes", "n", 0, busy) == "2 pod(s) run there: ml/train-0, ml/bare"
    assert occupancy.why_occupied("kubernetes", "n", 0, "error").startswith("cannot tell")


def test_slurm_states_that_hold_a_node() -> None:
    for state, allocated in (("IDLE+DRAIN", False), ("MIXED", True), ("ALLOCATED+DRAIN", True),
                             ("IDLE+COMPLETING", True), ("DOWN+NOT_RESPONDING", False)):
        node = slurm.parse_show_node(f"NodeName=n State={state}", "n")
        assert node.allocated is allocated, state


def test_a_long_reason_is_cut_between_words_never_inside_a_code() -> None:
    """At d11d023 the 200-character cut could leave 'RF-VRAM' of RF-VRAM-LOW, which remediation then read
    as another code (a reboot instead of a hold for physical action)."""
    codes = " ".join(f"RF-CODE-{i:02d}" for i in range(15)) + " RF-VRAM-LOW RF-CU-COUNT"
    argv = slurm.reason_argv("gpu1", slurm.REASON_PREFIX, codes)
    reason = argv[-1].removeprefix("Reason=")
    assert len(reason) <= slurm.REASON_MAX and reason.startswith(slurm.REASON_PREFIX)
    assert all(word in codes.split() for word in reason.removeprefix(slurm.REASON_PREFIX).split())
    assert slurm.drain_argv("gpu1", codes)[-1] == argv[-1]
