"""playbooks/remediate.yml on lab hosts with real Slurm 24.11, real reboots and the real health mode:
a transient fault (a process left holding a device) goes drain -> reboot -> re-validate -> resume; a
persistent one (a released package hold, which a reboot keeps) goes drain -> reboot -> re-validate ->
"rocm-fleet: needs physical action" with its support bundle on the controller; an administrator's
drain is left alone throughout; bad input is refused before any change. A fatal PCIe AER report,
injected with the dmesg stand-in (tests/integration/standins/dmesg_standin.py): transient (under /run)
goes drain at once -> held through passing runs -> reboot -> re-validate -> resume; recurring (under
/var/lib) goes drain -> one reboot -> the report again -> held for physical action with the report in
its bundle's kernel log. A fatal CPER record and pages pending retirement, on the lab's GPU node (the
second host made to look like 8 x MI300X by tests/integration/standins/gpu_node/ and the amd-smi stand-in,
its spec declaring them): the transient CPER record goes drain at once -> reboot -> re-validate (smoke) ->
resume; the pending pages, kept across the reboot, go drain -> one reboot -> held with amd-smi's bad-pages
view in the bundle. These run last: the GPU node stays so until the lab is removed.

Its own lab (name rfrem-<checkout key>, free SSH ports, Slurm ports from cluster_lab.service_ports, inventory
inventories/lab/rfrem*.yml so that the lab's group_vars apply), removed at the end also on failure.
The faults are planted on the second host only: the first runs slurmctld, and scontrol needs it.
The hosts have no GPU, so their spec declares none (validation_gpu_count: null) and the tiers run
without the GPU checks: the verdict turns on configuration, the kernel log and processes holding a
device (a plain file at /dev/dri/renderD128, as in test_health.py).

    .venv/bin/pytest tests/integration/test_remediate.py -q -s      # -s prints the phase times
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shlex
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ansible_run import ROOT, run_playbook
from cluster_lab import cluster_inventory, service_ports
from waiting import wait_for

from validation.lab import Lab, default_lab_name

pytestmark = pytest.mark.lab

LAB = os.environ.get("ROCM_FLEET_REMEDIATE_LAB_NAME") or default_lab_name("rfrem")
_BASE = os.environ.get("ROCM_FLEET_REMEDIATE_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
HOSTS = [f"{LAB}-1", f"{LAB}-2"]
# The health mode's interval and timeout (the role wants 5 <= timeout < interval). Its runs take a few seconds
# on an idle lab host; beside another lab file on two cores a run's pytest took more than 8 s to start, the run
# was stopped, and its partial document (three skipped checks) was what the support bundle found as the node's
# last health run (seen 2026-12-07 with 10 s / 8 s, test_a_persistent_fault_...). 15 s / 12 s leaves room.
INTERVAL = 15
HEALTH_TIMEOUT_S = 12
RECORD = "/var/lib/rocm-fleet/remediate.json"
HEALTH_STATE_DIR = "/var/lib/rocm-fleet/health"         # roles/node_health: node_health_state_dir
ADMIN_REASON = "disk swap, ticket 4711"
# the lab's group_vars declare 8 GPUs and outrank the inventory's own vars: extra vars declare none
NO_GPU = {"rocm_fleet_hosts": "lab", "validation_gpu_count": None, "validation_node_no_gpu": True}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    """Two provisioned lab hosts with real Slurm and the health mode as its HealthCheckProgram."""
    work = tmp_path_factory.mktemp("remediate")
    inventories = ROOT / "inventories" / "lab"          # inside inventories/lab: group_vars apply
    the_lab = Lab(LAB, len(HOSTS), mirror=True, port_base=PORT_BASE, inventory_path=inventories / f"{LAB}.yml")
    with the_lab:
        inventory = cluster_inventory(the_lab, inventories / f"{LAB}-remediate.yml", {
            "node_health_interval_seconds": INTERVAL, "node_health_timeout_seconds": HEALTH_TIMEOUT_S,
            "node_reboot_timeout_seconds": 180, "validation_node_wheelhouse": str(work / "wheels")})
        try:
            build = subprocess.run([str(Path(sys.executable).parent / "pip"), "wheel", "--no-deps", "--quiet",
                                    "--wheel-dir", str(work / "wheels"), str(ROOT), "pytest-testinfra"],
                                   capture_output=True, text=True, timeout=600, check=False)
            assert build.returncode == 0, build.stderr[-2000:]
            site = run_playbook(inventory, ROOT / "playbooks" / "site.yml", "-e", "rocm_fleet_hosts=lab")
            assert site.rc == 0, site.output[-4000:]
            key = base64.b64encode(secrets.token_bytes(1024)).decode()
            playbook = Path(tempfile.mkdtemp(prefix="rfrem-")) / "slurm.yml"
            playbook.write_text(yaml.safe_dump([{"ansible.builtin.import_playbook":
                                                 str(ROOT / "tests" / "integration" / "playbooks" / "lab_slurm.yml")}]))
            slurm = run_playbook(inventory, playbook, "-e", json.dumps({"lab_slurm_munge_key_b64": key,
                                                                       "lab_slurm_port_base": service_ports(the_lab)}))
            assert slurm.rc == 0, slurm.output[-4000:]
            health = run_playbook(inventory, ROOT / "playbooks" / "health.yml", "-e",
                                  json.dumps({**NO_GPU, "node_health_method": "slurm"}))
            assert health.rc == 0, health.output[-4000:]
            yield the_lab, inventory
        finally:
            inventory.unlink(missing_ok=True)


def sh(lab: Lab, host: str, command: str) -> subprocess.CompletedProcess[str]:
    return lab.ssh(host, [command])


def remediate(inventory: Path, run_name: str, spec: dict | None = None, **extra: object):
    return run_playbook(inventory, ROOT / "playbooks" / "remediate.yml", "-e",
                        json.dumps({**(NO_GPU if spec is None else spec), "rocm_fleet_run_name": run_name, **extra}))


def node_state(lab: Lab, host: str) -> tuple[str, str]:
    out = sh(lab, HOSTS[0], shlex.join(["scontrol", "--oneliner", "show", "node", host])).stdout
    state = next((w.split("=", 1)[1] for w in out.split() if w.startswith("State=")), "?")
    reason = out.split("Reason=", 1)[1].rsplit(" [", 1)[0].strip() if "Reason=" in out else ""
    return state, reason


def boot_of(lab: Lab, host: str) -> str:
    return lab.run(host, ["cat", "/proc/1/stat"]).stdout.split()[21]        # PID 1's start time


def drained_for(lab: Lab, host: str, code: str) -> bool:
    state, reason = node_state(lab, host)
    return "DRAIN" in state and reason.startswith("rocm-fleet health: ") and code in reason


PHASES = ("install", "plan", "reboot", "health", "validation", "decision", "bundle")


def phases(record: dict) -> str:
    return ", ".join(f"{k} {record['seconds'][k]:.1f} s" for k in PHASES if k in record["seconds"])


def record_of(run_name: str, host: str) -> dict:
    return json.loads((ROOT / "results" / run_name / "remediate" / f"{host}.json").read_text())


def test_bad_limits_are_refused_in_one_line_before_any_change(lab: tuple[Lab, Path]) -> None:
    _, inventory = lab
    for extra, said in (({"rocm_fleet_remediate_max_attempts": 0}, "rocm_fleet_remediate_max_attempts is 0"),
                        ({"rocm_fleet_remediate_max_nodes": 0}, "rocm_fleet_remediate_max_nodes is 0"),
                        ({"rocm_fleet_remediate_max_attempts": -1}, "rocm_fleet_remediate_max_attempts is -1")):
        run = remediate(inventory, "rfrem-refused", **extra)
        assert run.rc != 0, run.output[-2000:]
        assert f"remediate.yml refused before any change: {said}, give a whole number >= 1" in run.output, \
            run.output[-2000:]
        assert "Read the node's state in Slurm" not in run.output and run.changed() == 0, run.output[-2000:]


def test_a_transient_fault_is_drained_rebooted_revalidated_and_resumed(lab: tuple[Lab, Path]) -> None:
    the_lab, inventory = lab
    admin, host = HOSTS
    sh(the_lab, admin, shlex.join(["scontrol", "update", f"NodeName={admin}", "State=DRAIN",
                                   f"Reason={ADMIN_REASON}"]))
    try:
        sh(the_lab, host, "mkdir -p /dev/dri && : > /dev/dri/renderD128")
        holder = "setsid sh -c 'exec 3</dev/dri/renderD128; exec sleep 3600' >/dev/null 2>&1 < /dev/null & echo $!"
        pid = sh(the_lab, host, holder).stdout.strip()
        planted = time.monotonic()
        wait_for(f"{host} drained for RF-GPU-BUSY", lambda: drained_for(the_lab, host, "RF-GPU-BUSY"))
        drained_after = time.monotonic() - planted
        boots = {h: boot_of(the_lab, h) for h in HOSTS}
        started = time.monotonic()
        run = remediate(inventory, "rfrem-transient", rocm_fleet_remediate_max_attempts=2,
                        rocm_fleet_remediate_max_nodes=1)
        took = time.monotonic() - started
        assert run.rc == 0, run.output[-5000:]
        assert boot_of(the_lab, host) != boots[host], "PID 1 has the same start time: the node did not reboot"
        assert boot_of(the_lab, admin) == boots[admin], "the administrator's node was rebooted"
        assert sh(the_lab, host, f"kill -0 {pid}").returncode != 0, "the planted process survived the reboot"
        state, reason = node_state(the_lab, host)
        assert "DRAIN" not in state and "IDLE" in state, (state, reason)
        state, reason = node_state(the_lab, admin)
        assert "DRAIN" in state and reason == ADMIN_REASON, (state, reason)
        record = record_of("rfrem-transient", host)
        assert record["action"] == "resume" and record["rebooted"] and record["passed"], record
        assert record["plan"]["codes"] == ["RF-GPU-BUSY"] and record["plan"]["attempt"] == 1, record
        on_node = json.loads(sh(the_lab, host, f"cat {RECORD}").stdout)
        assert [(a["number"], a["result"], a["codes"]) for a in on_node["attempts"]] == [(1, "passed", ["RF-GPU-BUSY"])]
        assert [e["event"] for e in on_node["events"]] == ["remediating", "resumed"], on_node["events"]
        assert not (ROOT / "results" / "rfrem-transient" / "remediate" / f"{admin}.json").exists()
        print(f"\ntransient fault (leftover device holder) on {host}: drained by the health mode after "
              f"{drained_after:.0f} s; remediate.yml {took:.0f} s: "
              + phases(record) + "; resumed")
    finally:
        sh(the_lab, admin, shlex.join(["scontrol", "update", f"NodeName={admin}", "State=RESUME"]))


def test_a_persistent_fault_ends_held_for_physical_action_with_its_bundle(lab: tuple[Lab, Path]) -> None:
    the_lab, inventory = lab
    host = HOSTS[1]
    try:
        sh(the_lab, host, "apt-mark unhold rocminfo")          # kept across the reboot: a persistent fault
        planted = time.monotonic()
        wait_for(f"{host} drained for RF-CONFIG-PACKAGE-HOLD",
                 lambda: drained_for(the_lab, host, "RF-CONFIG-PACKAGE-HOLD"))
        drained_after = time.monotonic() - planted
        boot = boot_of(the_lab, host)
        started = time.monotonic()
        # K=2 per 24 h: the transient fault's attempt counts, so this is attempt 2 of 2
        run = remediate(inventory, "rfrem-persistent", rocm_fleet_remediate_max_attempts=2)
        took = time.monotonic() - started
        assert run.rc != 0, run.output[-4000:]
        assert boot_of(the_lab, host) != boot, "the node was not rebooted"
        state, reason = node_state(the_lab, host)
        assert "DRAIN" in state and reason.startswith("rocm-fleet: needs physical action: RF-CONFIG-PACKAGE-HOLD"), \
            (state, reason)
        assert f"{host} stays drained: rocm-fleet: needs physical action: RF-CONFIG-PACKAGE-HOLD" in run.output
        record = record_of("rfrem-persistent", host)
        assert record["plan"]["attempt"] == 2 and record["action"] == "hold" and record["passed"] is False, record
        bundle = ROOT / "results" / "rfrem-persistent" / "bundles" / f"{host}.tar.gz"
        assert record["bundle"] == str(bundle)
        assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
        check_bundle(bundle, host)
        print(f"\npersistent fault (package hold released) on {host}: drained by the health mode after "
              f"{drained_after:.0f} s; remediate.yml {took:.0f} s: "
              + phases(record) + f"; held: {reason}")

        # Held: a later run leaves it alone (no reboot), and so does the health mode once the fault is gone.
        boot = boot_of(the_lab, host)
        again = remediate(inventory, "rfrem-held", rocm_fleet_remediate_max_attempts=2)
        assert again.rc == 0, again.output[-3000:]
        assert "held for physical action, left alone" in again.output
        sh(the_lab, host, "apt-mark hold rocminfo")
        time.sleep(INTERVAL * 2.5)                  # two passing health runs
        state, reason = node_state(the_lab, host)
        assert "DRAIN" in state and reason.startswith("rocm-fleet: needs physical action: "), (state, reason)
        assert boot_of(the_lab, host) == boot
    finally:
        sh(the_lab, host, "apt-mark hold rocminfo")
        sh(the_lab, HOSTS[0], shlex.join(["scontrol", "update", f"NodeName={host}", "State=RESUME"]))


def check_bundle(bundle: Path, host: str) -> None:
    with tarfile.open(bundle) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers()}
        top = {m.name.split("/", 1)[0] for m in tar.getmembers()}
        assert len(top) == 1 and next(iter(top)).startswith(f"rocm-fleet-bundle-{host}-"), top
        assert all(m.isfile() and not m.name.startswith("/") and ".." not in m.name for m in members.values())
        read = {name: tar.extractfile(m).read() for name, m in members.items()}   # type: ignore[union-attr]
    manifest = json.loads(read["manifest.json"])
    files = {f["name"]: f for f in manifest["files"]}
    assert manifest["node"] == host and "needs physical action" in manifest["summary"]["reason"]
    for name in ("kernel/dmesg.txt", "versions/dpkg.txt", "versions/os-release", "versions/uname.txt",
                 "versions/rocminfo.txt", "remediation/record.json", f"health/last/{host}.json", "slurm/node.txt"):
        assert name in read, f"{name} is not in the bundle: {sorted(read)}"
        assert files[name]["sha256"] == hashlib.sha256(read[name]).hexdigest()
        assert files[name]["size"] == len(read[name])
        assert files[name]["time"], files[name]
    assert files["versions/dpkg.txt"]["command"][0] == "dpkg-query" and files["versions/dpkg.txt"]["rc"] == 0
    assert b"rocminfo 6.1.2" in read["versions/dpkg.txt"]
    for tool_view in ("amd-smi/static.json", "amd-smi/metric.json", "amd-smi/bad-pages.json", "amd-smi/ras-cper.txt"):
        assert files[tool_view]["status"] == "absent" and "amd-smi is not installed" in files[tool_view]["reason"]
    record = json.loads(read["remediation/record.json"])
    assert [a["result"] for a in record["attempts"]] == ["passed", "failed"], record["attempts"]
    assert "RF-CONFIG-PACKAGE-HOLD" in record["attempts"][1]["codes_after"], record["attempts"]
    assert record["events"][-1]["event"] == "held", record["events"]
    assert any(n.startswith("results/") and n.endswith(f"{host}.json") for n in read), sorted(read)
    assert b"RF-CONFIG-PACKAGE-HOLD" in read[f"health/last/{host}.json"]
    assert b"needs physical action" in read["slurm/node.txt"]


# --- PCIe AER (issue 33): the lab's dmesg stand-in prints a real fatal AER report after the real log ---------

STANDIN = ROOT / "tests" / "integration" / "standins" / "dmesg_standin.py"
AER_LINE = "pcieport 0000:00:1c.4: AER: Uncorrected (Fatal) error received: id=00e4"
AER_REASON = "rocm-fleet health: RF-PCIE-AER-FATAL (fatal, at once)"


@pytest.fixture
def aer_node(lab: tuple[Lab, Path]) -> Iterator[str]:
    """The second host with the dmesg stand-in as /usr/local/bin/dmesg and a fresh remediation record (the
    earlier tests' attempts moved aside, the documented way), all undone afterwards."""
    the_lab, _ = lab
    host = HOSTS[1]
    payload = base64.b64encode(STANDIN.read_bytes()).decode()
    put = sh(the_lab, host, f"echo {payload} | base64 -d > /usr/local/bin/dmesg && chmod 0755 /usr/local/bin/dmesg"
                            f" && mv -f {RECORD} {RECORD}.before-aer 2>/dev/null; command -v dmesg")
    assert put.stdout.strip() == "/usr/local/bin/dmesg", (put.stdout, put.stderr)
    # the health runner (Slurm's HealthCheckProgram) sets its own PATH: /usr/local/bin comes before /usr/bin
    runner_path = sh(the_lab, host, "sed -n 's/^PATH=//p' /usr/local/sbin/rocm-fleet-health").stdout.strip().split(":")
    assert runner_path.index("/usr/local/bin") < runner_path.index("/usr/bin"), runner_path
    assert sh(the_lab, host, "findmnt -n -o FSTYPE /run").stdout.strip() == "tmpfs"
    try:
        yield host
    finally:
        # under the health mode's own lock (validation/commands/health.py: state_lock): a run that read the line
        # before it was cleared and ended after the resume drained the node again as fatal (CI, 2026-12-07: the
        # next fixture found IDLE+DRAIN RF-PCIE-AER-FATAL)
        undo = (f"dmesg --standin-clear; rm -f /usr/local/bin/dmesg; mv -f {RECORD} {RECORD}.aer; "
                + shlex.join(["scontrol", "update", f"NodeName={host}", "State=RESUME"]) + "; exit 0")
        held = ["flock", "--timeout", "120", "--conflict-exit-code", "75", f"{HEALTH_STATE_DIR}/.lock"]
        out = sh(the_lab, host, shlex.join([*held, "sh", "-c", undo]))
        assert out.returncode == 0, f"the health mode's lock was not free within 120 s: {out.stdout} {out.stderr}"


def inject_aer(the_lab: Lab, host: str, mode: str) -> float:
    out = sh(the_lab, host, f"dmesg --standin-inject {mode}")
    assert out.returncode == 0, out.stderr
    seen = sh(the_lab, host, "timeout 30 dmesg | tail -n 10").stdout
    assert AER_LINE in seen, seen
    return time.monotonic()


def drained_for_aer_and_held(the_lab: Lab, host: str, planted: float) -> float:
    wait_for(f"{host} drained for RF-PCIE-AER-FATAL", lambda: drained_for(the_lab, host, "RF-PCIE-AER-FATAL"))
    drained_after = time.monotonic() - planted
    # a fatal event holds the node: the next runs see no *new* line, pass, and must not resume it
    time.sleep(INTERVAL * 2.5)
    state, reason = node_state(the_lab, host)
    assert "DRAIN" in state and reason == AER_REASON, (state, reason)
    return drained_after


def started_at(the_lab: Lab, host: str) -> float:
    """When the host's PID 1 started, in seconds since the epoch (the lab's reboot restarts it)."""
    btime = next(int(line.split()[1]) for line in sh(the_lab, host, "cat /proc/stat").stdout.splitlines()
                 if line.startswith("btime "))
    ticks = int(sh(the_lab, host, "getconf CLK_TCK").stdout)
    return btime + int(boot_of(the_lab, host)) / ticks


def test_a_transient_pcie_aer_fatal_error_mid_job_waits_for_the_job_then_is_rebooted_away_and_resumed(
        lab: tuple[Lab, Path], aer_node: str) -> None:
    """Issue 39: the health mode drains a node mid-job (a fatal code drains at once, whatever runs there)
    and a drain lets the job finish (State=MIXED+DRAIN); at d11d023 remediate.yml rebooted it under the
    job. A real sbatch job runs on the node: the first run leaves it with one line, the second waits for the
    job to end and only then reboots it."""
    the_lab, inventory = lab
    host, submit = aer_node, HOSTS[0]
    sh(the_lab, host, "rm -f /var/tmp/rfrem-job-end")
    job = sh(the_lab, submit, shlex.join(["sbatch", "--parsable", f"--nodelist={host}", "--time=5",
                                          "--job-name=user-job", "--output=/dev/null", "--wrap",
                                          "sleep 100; date +%s.%N > /var/tmp/rfrem-job-end"])).stdout.strip()
    try:
        wait_for(f"job {job} running on {host}",
                 lambda: node_state(the_lab, host)[0].startswith(("ALLOCATED", "MIXED")), timeout_s=60, every_s=1)
        planted = inject_aer(the_lab, host, "transient")   # under /run: the reboot's fresh tmpfs clears it
        drained_after = drained_for_aer_and_held(the_lab, host, planted)
        state, _ = node_state(the_lab, host)
        assert "DRAIN" in state and state.split("+")[0] in ("ALLOCATED", "MIXED"), state   # draining, the job on
        boot = boot_of(the_lab, host)
        skipped = remediate(inventory, "rfrem-aer-busy", rocm_fleet_remediate_max_attempts=2)
        assert skipped.rc == 0, skipped.output[-5000:]
        assert boot_of(the_lab, host) == boot, "the node was rebooted under a running job"
        assert f"{host}: not remediated now: Slurm shows it " in skipped.output, skipped.output[-4000:]
        busy = record_of("rfrem-aer-busy", host)
        assert busy["action"] == "busy" and not busy["rebooted"], busy
        assert busy["plan"]["why"].endswith(f"1 job(s) run there: {job} (root, RUNNING): not rebooted while a job "
                                            "runs"), busy["plan"]
        assert node_state(the_lab, host)[1] == AER_REASON                 # left to the next run, unchanged
        squeue = sh(the_lab, submit, shlex.join(["squeue", "--noheader", "--format=%A|%T|%u", f"--jobs={job}"]))
        assert squeue.stdout.strip() == f"{job}|RUNNING|root", squeue.stdout

        started = time.monotonic()
        run = remediate(inventory, "rfrem-aer-transient", rocm_fleet_remediate_max_attempts=2,
                        rocm_fleet_remediate_job_wait_seconds=240, rocm_fleet_remediate_job_poll_seconds=5)
        took = time.monotonic() - started
        assert run.rc == 0, run.output[-5000:]
        assert boot_of(the_lab, host) != boot, "PID 1 has the same start time: the node did not reboot"
        ended = float(sh(the_lab, host, "cat /var/tmp/rfrem-job-end").stdout)   # the job ran to its end
        rebooted = started_at(the_lab, host)
        assert rebooted >= ended - 1, f"rebooted at {rebooted:.1f}, the job ended at {ended:.1f}"
    finally:
        sh(the_lab, submit, shlex.join(["scancel", job]))
    assert sh(the_lab, host, "test -e /run/rocm-fleet-standin/dmesg.json").returncode != 0, "/run kept the injection"
    assert AER_LINE not in sh(the_lab, host, "timeout 30 dmesg").stdout
    state, reason = node_state(the_lab, host)
    assert "DRAIN" not in state and "IDLE" in state, (state, reason)
    record = record_of("rfrem-aer-transient", host)
    assert record["action"] == "resume" and record["rebooted"] and record["passed"], record
    assert record["plan"]["codes"] == ["RF-PCIE-AER-FATAL"] and record["plan"]["attempt"] == 1, record
    on_node = json.loads(sh(the_lab, host, f"cat {RECORD}").stdout)
    assert [(a["number"], a["result"], a["codes"]) for a in on_node["attempts"]] == \
        [(1, "passed", ["RF-PCIE-AER-FATAL"])]
    time.sleep(INTERVAL * 1.5)                 # the health mode, in service again, forgot the hold: no drain
    state, reason = node_state(the_lab, host)
    assert "DRAIN" not in state, (state, reason)
    print(f"\ntransient PCIe AER fatal mid-job on {host}: drained by the health mode after {drained_after:.0f}"
          f" s (held through two passing runs); remediate.yml skipped it while job {job} ran, then waited for the "
          f"job ({rebooted - ended:.0f} s from its end to the reboot); remediate.yml {took:.0f} s: "
          + phases(record) + "; resumed")


def test_a_recurring_pcie_aer_fatal_error_gets_one_reboot_then_is_held_with_the_line_in_its_bundle(
        lab: tuple[Lab, Path], aer_node: str) -> None:
    the_lab, inventory = lab
    host = aer_node
    planted = inject_aer(the_lab, host, "recurring")       # under /var/lib: a link that keeps reporting
    drained_after = drained_for_aer_and_held(the_lab, host, planted)
    boot = boot_of(the_lab, host)
    started = time.monotonic()
    # K=3: the hold below is the policy's "once" class (the same fatal code after a reboot), not the count
    run = remediate(inventory, "rfrem-aer-recurring", rocm_fleet_remediate_max_attempts=3)
    took = time.monotonic() - started
    assert run.rc != 0, run.output[-4000:]
    assert boot_of(the_lab, host) != boot, "the node was not rebooted"
    state, reason = node_state(the_lab, host)
    assert "DRAIN" in state and reason.startswith("rocm-fleet: needs physical action: RF-PCIE-AER-FATAL"), \
        (state, reason)
    assert "an uncorrectable PCIe error repeated after a reboot" in reason, reason
    record = record_of("rfrem-aer-recurring", host)
    assert record["plan"]["attempt"] == 1 and record["action"] == "hold" and record["passed"] is False, record
    bundle = ROOT / "results" / "rfrem-aer-recurring" / "bundles" / f"{host}.tar.gz"
    assert record["bundle"] == str(bundle) and stat.S_IMODE(bundle.stat().st_mode) == 0o600
    with tarfile.open(bundle) as tar:
        read = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    files = {f["name"]: f for f in json.loads(read["manifest.json"])["files"]}
    kernel = files["kernel/dmesg.txt"]
    assert kernel["command"] == ["dmesg", "--time-format=iso"] and kernel["rc"] == 0 and kernel["status"] == "ok"
    assert kernel["sha256"] == hashlib.sha256(read["kernel/dmesg.txt"]).hexdigest()
    aer = [line for line in read["kernel/dmesg.txt"].decode().splitlines() if AER_LINE in line]
    assert aer and all(line[:4].isdigit() and line[10] == "T" for line in aer), aer      # ISO stamps, as asked
    assert b"RF-PCIE-AER-FATAL" in read[f"health/last/{host}.json"]
    attempts = json.loads(read["remediation/record.json"])["attempts"]
    assert [(a["result"], a["codes_after"]) for a in attempts] == [("failed", ["RF-PCIE-AER-FATAL"])], attempts
    print(f"\nrecurring PCIe AER fatal on {host}: drained by the health mode after {drained_after:.0f}"
          f" s (held through two runs); remediate.yml {took:.0f} s: " + phases(record) + f"; held: {reason}; "
          f"bundle kernel/dmesg.txt: {aer[-1]}")


# --- CPER and bad pages (issue 33): the lab's GPU node, with the amd-smi stand-in's RAS views ------------------

STANDINS = ROOT / "tests" / "integration" / "standins"
REAL = ROOT / "tests" / "fixtures" / "real"
STANDIN_DATA = "/usr/local/share/rocm-fleet-standin"
AMD_SMI_STATE = "/var/lib/rocm-fleet-standin/amd-smi.json"
# the lab's group_vars declare 8 GPUs (vendor amd); the GPU node stands in for 8 x MI300X
GPU_SPEC = {"rocm_fleet_hosts": "lab", "validation_target_sku": "mi300x", "rocm_fleet_remediate_tier": "smoke"}
GPU_NODE_UNIT = """[Unit]
Description=rocm-fleet lab: stand in for 8 x MI300X (tests/integration/standins/gpu_node/setup.sh)
DefaultDependencies=no
After=local-fs.target
Before=slurmd.service rocm-fleet-health.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/libexec/rocm-fleet-standin/gpu-node-setup

[Install]
WantedBy=multi-user.target
"""


def put(the_lab: Lab, host: str, path: str, data: bytes, mode: str = "0755") -> None:
    payload = base64.b64encode(data).decode()
    out = sh(the_lab, host, f"mkdir -p {shlex.quote(str(Path(path).parent))} && echo {payload} | base64 -d > "
                            f"{shlex.quote(path)} && chmod {mode} {shlex.quote(path)}")
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def gpu_node(lab: tuple[Lab, Path]) -> Iterator[str]:
    """The second host as the lab's GPU node, at every boot, with the health mode's spec declaring its GPUs."""
    the_lab, inventory = lab
    host = HOSTS[1]
    put(the_lab, host, "/usr/local/bin/amd-smi", (STANDINS / "amd_smi_standin.py").read_bytes())
    for tool in ("rocminfo", "rocm-smi", "lspci"):
        put(the_lab, host, f"/usr/local/bin/{tool}", (STANDINS / "gpu_node" / tool).read_bytes())
    put(the_lab, host, "/usr/local/libexec/rocm-fleet-standin/gpu-node-setup",
        (STANDINS / "gpu_node" / "setup.sh").read_bytes())
    for fixture in ("amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt",
                    "amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-topology.txt",
                    "amd-smi/mi300x-rocm-blogs-amd-smi-overview-firmware.txt",
                    "rocminfo/mi300x-augmxnt-mi300-testing-00-system-info.txt",
                    "rocm-smi/mi300x-augmxnt-vllm-collect-env-showtopo.txt"):
        put(the_lab, host, f"{STANDIN_DATA}/{Path(fixture).name}", (REAL / fixture).read_bytes(), "0644")
    put(the_lab, host, "/etc/systemd/system/rocm-fleet-standin-gpu-node.service", GPU_NODE_UNIT.encode(), "0644")
    up = sh(the_lab, host, "systemctl daemon-reload && systemctl enable --now rocm-fleet-standin-gpu-node.service"
                           f" && mv -f {RECORD} {RECORD}.before-gpu-node 2>/dev/null; "
                           "test -d /sys/module/amdgpu && test -e /dev/kfd && amd-smi version")
    assert up.returncode == 0 and "standin" in up.stdout, (up.stdout, up.stderr)
    health = run_playbook(inventory, ROOT / "playbooks" / "health.yml", "--limit", host, "-e",
                          json.dumps({**GPU_SPEC, "node_health_method": "slurm"}))
    assert health.rc == 0, health.output[-4000:]
    time.sleep(INTERVAL * 1.5)                  # a health run with the GPUs declared records their counts
    state, reason = node_state(the_lab, host)
    assert "DRAIN" not in state, f"the GPU node does not pass the health mode: {state} {reason}"
    try:
        yield host
    finally:
        sh(the_lab, host, f"rm -f {AMD_SMI_STATE}")
        sh(the_lab, HOSTS[0], shlex.join(["scontrol", "update", f"NodeName={host}", "State=RESUME"]))


def inject_ras(the_lab: Lab, host: str, state: dict) -> float:
    put(the_lab, host, AMD_SMI_STATE, json.dumps(state).encode(), "0644")
    return time.monotonic()


def held_at_once(the_lab: Lab, host: str, code: str, planted: float) -> float:
    wait_for(f"{host} drained for {code}", lambda: drained_for(the_lab, host, code))
    drained_after = time.monotonic() - planted
    time.sleep(INTERVAL * 1.5)                  # a fatal code holds the node through the next, passing run
    state, reason = node_state(the_lab, host)
    assert "DRAIN" in state and reason == f"rocm-fleet health: {code} (fatal, at once)", (state, reason)
    return drained_after


def test_a_transient_fatal_cper_record_is_drained_at_once_rebooted_away_revalidated_and_resumed(
        lab: tuple[Lab, Path], gpu_node: str) -> None:
    the_lab, inventory = lab
    host = gpu_node
    # transient: the stand-in forgets the record at the next boot, as a GPU whose fault a reset cleared
    planted = inject_ras(the_lab, host, {"cper_fatal": 1, "afids": [30], "transient": True})
    drained_after = held_at_once(the_lab, host, "RF-CPER-FATAL", planted)
    boot = boot_of(the_lab, host)
    started = time.monotonic()
    run = remediate(inventory, "rfrem-cper-transient", GPU_SPEC, rocm_fleet_remediate_max_attempts=2)
    took = time.monotonic() - started
    assert run.rc == 0, run.output[-5000:]
    assert boot_of(the_lab, host) != boot, "PID 1 has the same start time: the node did not reboot"
    assert sh(the_lab, host, "test -d /sys/module/amdgpu && test -e /dev/kfd").returncode == 0, \
        "the GPU node did not come back after the reboot"
    state, reason = node_state(the_lab, host)
    assert "DRAIN" not in state and "IDLE" in state, (state, reason)
    record = record_of("rfrem-cper-transient", host)
    assert record["action"] == "resume" and record["rebooted"] and record["passed"], record
    assert record["plan"]["codes"] == ["RF-CPER-FATAL"] and record["plan"]["attempt"] == 1, record
    smoke = json.loads((ROOT / "results" / "rfrem-cper-transient" / f"{host}.json").read_text())
    gpu_checks = [c for c in smoke["checks"] if c.get("needs_gpu")]
    assert smoke["tier"] == "smoke" and any(c["name"] == "test_no_gpu_has_a_fatal_cper_record" and
                                             c["status"] == "pass" for c in gpu_checks), gpu_checks
    assert not [c for c in gpu_checks if c["status"] in ("fail", "error")], gpu_checks
    print(f"\ntransient fatal CPER record on {host}: drained by the health mode after {drained_after:.0f} s (held"
          f" through a passing run); remediate.yml {took:.0f} s: " + phases(record) + f"; resumed; the smoke tier "
          f"ran {len(gpu_checks)} GPU checks on the GPU node, none failed")


def test_pages_pending_retirement_that_a_reboot_keeps_end_held_with_amd_smis_view_in_the_bundle(
        lab: tuple[Lab, Path], gpu_node: str) -> None:
    the_lab, inventory = lab
    host = gpu_node
    # persistent: the pages stay pending across the reboot (the driver did not retire them when it loaded)
    planted = inject_ras(the_lab, host, {"bad_pages_pending": 3, "bad_pages_retired": 1, "bad_pages_gpu": 5})
    drained_after = held_at_once(the_lab, host, "RF-BAD-PAGES", planted)
    boot = boot_of(the_lab, host)
    started = time.monotonic()
    # K=3: the hold is RF-BAD-PAGES's own class (one reboot, the code's hint), not the count of attempts
    run = remediate(inventory, "rfrem-bad-pages", GPU_SPEC, rocm_fleet_remediate_max_attempts=3)
    took = time.monotonic() - started
    assert run.rc != 0, run.output[-4000:]
    assert boot_of(the_lab, host) != boot, "the node was not rebooted"
    state, reason = node_state(the_lab, host)
    assert "DRAIN" in state and reason.startswith("rocm-fleet: needs physical action: RF-BAD-PAGES"), (state, reason)
    record = record_of("rfrem-bad-pages", host)
    assert record["action"] == "hold" and record["passed"] is False, record
    bundle = ROOT / "results" / "rfrem-bad-pages" / "bundles" / f"{host}.tar.gz"
    assert record["bundle"] == str(bundle) and stat.S_IMODE(bundle.stat().st_mode) == 0o600
    with tarfile.open(bundle) as tar:
        read = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    files = {f["name"]: f for f in json.loads(read["manifest.json"])["files"]}
    pages = files["amd-smi/bad-pages.json"]
    assert pages["command"][:2] == ["amd-smi", "bad-pages"] and pages["rc"] == 0, pages
    assert pages["sha256"] == hashlib.sha256(read["amd-smi/bad-pages.json"]).hexdigest()
    view = read["amd-smi/bad-pages.json"].decode()
    assert "GPU: 5" in view and view.count("STATUS: PENDING") == 3, view
    assert b"RF-BAD-PAGES" in read[f"health/last/{host}.json"]
    assert b"AMD Instinct MI300X" in read["versions/rocminfo.txt"]
    attempts = json.loads(read["remediation/record.json"])["attempts"]
    assert [(a["result"], a["codes_after"]) for a in attempts][-1] == ("failed", ["RF-BAD-PAGES"]), attempts
    print(f"\npages pending retirement on {host} (kept across the reboot): drained by the health mode after "
          f"{drained_after:.0f} s; remediate.yml {took:.0f} s: " + phases(record) + f"; held: {reason}; bundle "
          f"amd-smi/bad-pages.json shows gpu5's {view.count('STATUS: PENDING')} pending pages")
