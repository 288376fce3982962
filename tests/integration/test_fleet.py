"""Fleet workflows on four lab hosts (issue 6): validate all at once, a rolling upgrade that stops
at its failure budget, a node whose suite cannot start, a follower stopped on a node that stays up,
and a host that stops answering mid-run or while its suite is installed.

This module builds its own four-host lab (the session lab has two), provisions it with site.yml,
and removes it at the end, also on failure. Order matters and is the file order: the upgrade
leaves hosts on different versions and the last test stops one host.

    ROCM_FLEET_FLEET_LAB_NAME       lab name (default rfflt-<checkout key>)
    ROCM_FLEET_FLEET_LAB_PORT_BASE  SSH port base (default: free ports)

The hosts have no GPU, so every run here passes validation_node_no_gpu; what is proven is the
fan-out, the gates, the hooks and the bookkeeping, on real hosts over real SSH with real packages.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_run import ROOT, playbook, playbook_acting, provisioned_lab

from validation.lab import Lab, default_lab_name

NAME = os.environ.get("ROCM_FLEET_FLEET_LAB_NAME") or default_lab_name("rfflt")
_BASE = os.environ.get("ROCM_FLEET_FLEET_LAB_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
INVENTORY = ROOT / "inventories" / "lab" / f"{NAME}.yml"     # inside inventories/lab: group_vars apply
RESULTS = ROOT / "results"

# Debian's HIP packages pin the 6.1.2 runtime and sid's 7.2.4 set has none: these hosts carry the
# two packages that exist in both releases, so one of them can move between the two.
BASE = {"rocm_packages": ["rocminfo", "rocm-smi"], "validation_node_no_gpu": True}
NEW = {**BASE, "rocm_version": "7.2.4", "rocm_repo_graphics": "absent",
       "rocm_packages": ["rocminfo", {"name": "rocm-smi", "version": "6.4.1*"}],
       "rocm_repo_compat_extra": [   # the lab's own qualification of sid's 7.2 user space on trixie
           {"kind": "driver", "driver": "inbox", "rocm": ["7.2"], "os": ["debian-13"],
            "source": "rocm-fleet lab: Debian sid rocminfo 7.2.4 on trixie, upgrade rehearsal"},
           {"kind": "os", "rocm": "7.2", "os": ["debian-13"],
            "source": "rocm-fleet lab: Debian sid rocminfo 7.2.4 on trixie, upgrade rehearsal"}]}

# The injected failure: an apt hook that breaks rocminfo as soon as a 7.x rocminfo is installed,
# i.e. only by the upgrade, and only on the host that carries the hook.
BREAK_ON_UPGRADE = ("DPkg::Post-Invoke {\"if dpkg-query -W -f='${Version}' rocminfo 2>/dev/null | grep -q '^7'; "
                    "then chmod a-x /usr/bin/rocminfo; fi\";};\n")


# The second injected failure: apt refuses to install a 7.x rocminfo at all (dpkg never runs), so
# the upgrade itself fails, not the validation after it.
REFUSE_UPGRADE = ("DPkg::Pre-Install-Pkgs {\"if grep -q '/rocminfo_7'; then echo 'refused by the lab hook' >&2; "
                  "exit 1; fi\";};\n")


@pytest.fixture(scope="module")
def fleet() -> Iterator[Lab]:
    with provisioned_lab(NAME, 4, port_base=PORT_BASE, inventory=INVENTORY, extra=BASE) as lab:
        yield lab


def hosts(lab: Lab) -> list[str]:
    return [h.name for h in lab.info.hosts]


def version(lab: Lab, host: str, package: str) -> str:
    return lab.run(host, ["dpkg-query", "-W", "-f", "${Version}", package]).stdout


def test_validate_runs_on_every_host_at_once_and_aggregates(fleet: Lab) -> None:
    one = playbook(INVENTORY, "validate.yml", "--limit", hosts(fleet)[0],
                   extra={**BASE, "rocm_fleet_run_name": f"{NAME}-one"})
    assert one.rc == 0, one.output[-5000:]
    four = playbook(INVENTORY, "validate.yml", extra={**BASE, "rocm_fleet_run_name": f"{NAME}-four"})
    assert four.rc == 0, four.output[-5000:]
    docs = sorted((RESULTS / f"{NAME}-four").glob(f"{NAME}-*.json"))
    assert [d.stem for d in docs] == hosts(fleet)
    assert all(json.loads(d.read_text())["complete"] for d in docs)
    assert (RESULTS / f"{NAME}-one" / f"{hosts(fleet)[0]}.json").exists()
    assert not (RESULTS / f"{NAME}-one" / f"{hosts(fleet)[1]}.json").exists()   # --limit is honoured
    # the declared state is written where it differs only: the first host has it from the run before
    written = four.task_hosts("validation_node : Write the declared state the checks compare against")
    assert written == set(hosts(fleet)[1:]), written
    report = (RESULTS / f"{NAME}-four" / "fleet.md").read_text()
    assert "4 nodes" in report, report
    print(f"validate.yml: 1 host {one.seconds:.0f} s, 4 hosts {four.seconds:.0f} s")


def test_a_node_whose_suite_cannot_start_is_named_with_the_suites_own_reason_at_once(fleet: Lab) -> None:
    """The run's job exits at once (a file takes the place of its results directory): the follower's
    first answer is the job's exit and stderr, so the play names the node with the suite's own line
    instead of waiting 120 s for a progress file that never comes."""
    h1 = hosts(fleet)[0]
    run_id = f"{NAME}-cannot-start"
    fleet.run(h1, ["sh", "-c", f"mkdir -p /var/lib/rocm-fleet/results && touch /var/lib/rocm-fleet/results/{run_id}"])
    run = playbook(INVENTORY, "validate.yml", "--limit", h1, extra={**BASE, "rocm_fleet_run_name": run_id})
    assert run.rc != 0, run.output[-5000:]
    assert f"the suite on {h1} exited 2 and wrote no results document" in run.output, run.output[-5000:]
    assert "File exists" in run.output and "(item=exited 2)" in run.output, run.output[-5000:]
    assert "waiting for the run to start" not in run.output, run.output[-5000:]
    # the only node failed, and the fleet report was written all the same and says why; the node is failed
    report = (RESULTS / run_id / "fleet.md").read_text()
    assert "RF-NODE-NO-RESULTS" in report and "exited 2 and wrote no results document" in report, report
    assert re.search(rf"{h1}\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=1", run.output), run.output[-3000:]


def test_rolling_upgrade_stops_at_the_failure_budget_and_leaves_the_failing_host_drained(fleet: Lab) -> None:
    """Batches [1, 2, 1] with a 25 % budget: batch 1 passes; in batch 2 one of two hosts fails its
    post-upgrade validation (50 % > 25 %), so the rollout stops and batch 3 is never touched."""
    h1, h2, h3, h4 = hosts(fleet)
    hooks = RESULTS / f"{NAME}-hooks.log"
    hooks.parent.mkdir(exist_ok=True)
    hooks.unlink(missing_ok=True)
    fleet.run(h3, ["sh", "-c", "printf '%s' \"$1\" > /etc/apt/apt.conf.d/99-break-on-upgrade", "-",
                   BREAK_ON_UPGRADE])
    run_id = f"{NAME}-upgrade"
    upgrade = playbook(INVENTORY, "upgrade.yml", extra={
        **NEW, "rocm_fleet_run_name": run_id,
        "rocm_fleet_upgrade_serial": [1, 2, 1], "rocm_fleet_upgrade_max_fail_percentage": 25,
        "node_drain_method": "command",
        "node_drain_command": ["sh", "-c", f"echo drain {{{{ inventory_hostname }}}} >> {hooks}"],
        "node_drain_undrain_command": ["sh", "-c", f"echo undrain {{{{ inventory_hostname }}}} >> {hooks}"],
        "node_drain_idle_command": ["true"]},
        timeout_s=2400)
    assert upgrade.rc != 0, upgrade.output[-5000:]
    calls = hooks.read_text().splitlines()
    assert calls == [f"drain {h1}", f"undrain {h1}", f"drain {h2}", f"drain {h3}", f"undrain {h2}"] or \
        calls == [f"drain {h1}", f"undrain {h1}", f"drain {h3}", f"drain {h2}", f"undrain {h2}"], calls

    for host in (h1, h2, h3):                              # upgraded and held at the new version
        assert version(fleet, host, "rocminfo").startswith("7.2.4"), host
        assert "rocminfo" in fleet.run(host, ["apt-mark", "showhold"]).stdout.split()
    for host in (h1, h2):                                  # back in service
        assert fleet.run(host, ["test", "-e", "/var/lib/rocm-fleet/drain.json"]).returncode != 0
    drained = json.loads(fleet.run(h3, ["cat", "/var/lib/rocm-fleet/drain.json"]).stdout)
    assert drained["state"] == "drained" and run_id in drained["reason"]
    assert version(fleet, h4, "rocminfo").startswith("6.1.2")    # never reached
    assert fleet.run(h4, ["test", "-e", "/var/lib/rocm-fleet/drain.json"]).returncode != 0
    assert not (RESULTS / run_id / "before" / f"{h4}.json").exists()

    rollout = {h: json.loads((RESULTS / run_id / "rollout" / f"{h}.json").read_text()) for h in (h1, h2, h3)}
    assert rollout[h1]["state"] == rollout[h2]["state"] == "in service"
    assert rollout[h3]["state"] == "drained" and rollout[h3]["after_passed"] is False
    assert rollout[h3]["from"]["rocm_version"] == "6.1.2" and rollout[h3]["to"]["rocm_version"] == "7.2.4"
    after = json.loads((RESULTS / run_id / "after" / f"{h3}.json").read_text())
    failed = [c["name"] for c in after["checks"] if c["status"] == "fail"]
    assert "test_rocminfo_is_installed" in failed, failed
    baseline = json.loads((RESULTS / run_id / "before" / f"{h3}.json").read_text())
    assert all(c["status"] != "fail" for c in baseline["checks"]), "baseline judged against the applied state"
    cli = str(Path(sys.executable).parent / "rocm-fleet")
    compare = subprocess.run([cli, "compare", str(RESULTS / run_id / "before"), str(RESULTS / run_id / "after"),
                              "--node", h1], capture_output=True, text=True, timeout=120, check=False)
    assert compare.returncode == 0, compare.stdout + compare.stderr
    print(f"upgrade.yml: {upgrade.seconds:.0f} s for batches [1, 2] before it stopped")


def test_an_install_failure_leaves_that_host_drained_and_recorded_while_its_batch_finishes(fleet: Lab) -> None:
    """One batch of [host 1, host 4]: host 1 is already on 7.2.4 (upgrade is a no-op, it validates and
    goes back in service); on host 4 apt refuses the 7.x rocminfo, so rocm's install task fails. Host 4
    is caught, recorded with the failed step and left drained; host 1's undrain and record still happen."""
    h1, _, _, h4 = hosts(fleet)
    hooks = RESULTS / f"{NAME}-hooks-install.log"
    hooks.unlink(missing_ok=True)
    hook = "/etc/apt/apt.conf.d/99-refuse-upgrade"
    fleet.run(h4, ["sh", "-c", "printf '%s' \"$1\" > " + hook, "-", REFUSE_UPGRADE])
    run_id = f"{NAME}-upgrade-install"
    try:
        upgrade = playbook(INVENTORY, "upgrade.yml", "--limit", f"{h1},{h4}", extra={
            **NEW, "rocm_fleet_run_name": run_id, "rocm_fleet_upgrade_serial": 2,
            "node_drain_method": "command",
            "node_drain_command": ["sh", "-c", f"echo drain {{{{ inventory_hostname }}}} >> {hooks}"],
            "node_drain_undrain_command": ["sh", "-c", f"echo undrain {{{{ inventory_hostname }}}} >> {hooks}"],
            "node_drain_idle_command": ["true"]},
            timeout_s=2400)
    finally:
        fleet.run(h4, ["rm", "-f", hook])
    assert upgrade.rc != 0, upgrade.output[-5000:]
    assert f"{h4} stays drained with its new pins: the upgrade failed at " in upgrade.output, upgrade.output[-4000:]
    assert sorted(hooks.read_text().splitlines()) == sorted([f"drain {h1}", f"drain {h4}", f"undrain {h1}"])
    rollout = {h: json.loads((RESULTS / run_id / "rollout" / f"{h}.json").read_text()) for h in (h1, h4)}
    assert rollout[h1]["state"] == "in service" and rollout[h1]["failed_step"] == ""
    assert rollout[h4]["state"] == "drained" and rollout[h4]["after_passed"] is None
    assert rollout[h4]["failed_step"], rollout[h4]
    assert "refused by the lab hook" in rollout[h4]["error"], rollout[h4]
    assert version(fleet, h4, "rocminfo").startswith("6.1.2")       # nothing was installed
    drained = json.loads(fleet.run(h4, ["cat", "/var/lib/rocm-fleet/drain.json"]).stdout)
    assert drained["state"] == "drained" and run_id in drained["reason"]
    assert fleet.run(h1, ["test", "-e", "/var/lib/rocm-fleet/drain.json"]).returncode != 0
    print(f"upgrade.yml, install failure on one of two: {upgrade.seconds:.0f} s; "
          f"{h4} failed at {rollout[h4]['failed_step']!r}: {rollout[h4]['error'][:200]}")


def test_acceptance_writes_a_report_per_node_and_for_the_batch(fleet: Lab) -> None:
    """The acceptance playbook over the four hosts as the upgrade left them (no GPU: the GPU checks
    skip, the burn-in skips). Hosts 1-3 now run ROCm 7.2.4 while BASE declares 6.1.2, so every
    host is REJECTED for configuration drift, named with codes; host 4 is on 6.1.2."""
    run_id = f"{NAME}-acceptance"
    run = playbook(INVENTORY, "acceptance.yml", extra={**BASE, "rocm_fleet_run_name": run_id,
                                                        "validation_burnin_seconds": 5})
    assert run.rc != 0, run.output[-5000:]
    batch = (RESULTS / run_id / "acceptance.md").read_text()
    assert "0 of 4 nodes accepted" in batch or "1 of 4 nodes accepted" in batch, batch
    for host in hosts(fleet):
        page = (RESULTS / run_id / f"acceptance-{host}.md").read_text()
        assert page.startswith(f"# Acceptance: {host} — "), page[:200]
        assert "| BIOS |" in page and "| kernel |" in page
    assert "RF-CONFIG-ROCM-VERSION" in (RESULTS / run_id / f"acceptance-{hosts(fleet)[0]}.md").read_text()
    print(f"acceptance.yml on 4 hosts: {run.seconds:.0f} s")


def slow_tier(lab: Lab, host: str, seconds: int) -> None:
    """Make the tier on `host` take `seconds` longer: a command the smoke tier runs (apt-mark, for the
    held packages) sleeps first. /usr/local/bin comes first on the tier's PATH; removed by the lab's end."""
    script = f"#!/bin/sh\nsleep {seconds}\nexec /usr/bin/apt-mark \"$@\"\n"
    target = "/usr/local/bin/apt-mark"
    done = lab.run(host, ["sh", "-c", f"printf '%s' '{script}' > {target} && chmod 755 {target}"])
    assert done.returncode == 0, done.stderr


def follower_pids(lab: Lab, host: str, run_id: str) -> list[str]:
    found = lab.run(host, ["pgrep", "-f", f"progress /var/lib/rocm-fleet/results/{run_id} "])
    return found.stdout.split()


def test_a_node_found_out_of_date_runs_its_tier_while_the_others_run_theirs(fleet: Lab) -> None:
    """Each node goes at its own pace (strategy free): h4, whose declared state must be written again,
    has written it, run its tier and delivered its results while the other three are still running theirs."""
    h1, h2, h3, h4 = hosts(fleet)
    run_id = f"{NAME}-own-pace"
    # (the upgrade tests left the hosts on other ROCm versions than BASE declares: the runs here fail those
    # checks, and what is asserted is who ran what and when, and that every node delivered its results)
    playbook(INVENTORY, "validate.yml", extra={**BASE, "rocm_fleet_run_name": f"{run_id}-current"}, timeout_s=1500)
    for host in (h1, h2, h3):
        slow_tier(fleet, host, 20)
    fleet.run(h4, ["chmod", "600", "/etc/rocm-fleet/spec.yml"])
    try:
        run = playbook(INVENTORY, "validate.yml", extra={**BASE, "rocm_fleet_run_name": run_id}, timeout_s=600)
    finally:
        for host in (h1, h2, h3):
            fleet.run(host, ["rm", "-f", "/usr/local/bin/apt-mark"])
    assert all(json.loads((RESULTS / run_id / f"{h}.json").read_text())["complete"] for h in hosts(fleet))
    assert run.task_hosts("validation_node : Write the declared state the checks compare against") == {h4}
    finished = [line.split("]")[0].split("[")[-1] for line in run.output.splitlines()
                if line.startswith("ok: [") and re.search(r"\(item=exited \d+, finished", line)]
    assert finished.index(h4) < min(finished.index(h) for h in (h1, h2, h3)), finished


def test_check_mode_says_what_a_run_would_bring_up_to_date_and_changes_nothing(fleet: Lab) -> None:
    """validate.yml --check after the run above (every node current): h1 is made to carry another
    wheelhouse's suite, h2 a declared state of another mode; the check names both, runs no tier,
    writes no results and leaves both nodes as they were."""
    h1, h2, h3, _ = hosts(fleet)
    record = "/opt/rocm-fleet/venv/rocm-fleet-wheelhouse"
    fleet.run(h1, ["sh", "-c", f"echo 0ther > {record}"])
    fleet.run(h2, ["chmod", "600", "/etc/rocm-fleet/spec.yml"])
    run_id = f"{NAME}-check"
    run = playbook(INVENTORY, "validate.yml", "--check", "--limit", f"{h1},{h2},{h3}",
                   extra={**BASE, "rocm_fleet_run_name": run_id})
    assert run.rc == 0, run.output[-5000:]
    checked = "validation_node : Check whether the node is current"
    assert run.task_hosts(checked) == {h1, h2, h3}, run.output[-5000:]
    assert f"changed: [{h1}]" in run.output and f"changed: [{h2}]" in run.output and f"ok: [{h3}]" in run.output
    assert "a run would first install the suite: installed from 0ther" in run.output, run.output[-5000:]
    assert "a run would first write the declared state" in run.output
    assert "current: a run starts the tier at once" in run.output
    assert not run.task_hosts("validation_node : Start the validation tier on the node")
    assert not (RESULTS / run_id).exists() or not list((RESULTS / run_id).glob("*.json"))
    assert fleet.run(h1, ["cat", record]).stdout.strip() == "0ther"
    assert fleet.run(h2, ["stat", "-c", "%a", "/etc/rocm-fleet/spec.yml"]).stdout.strip() == "600"
    # and a run does what the check said, no more
    run = playbook(INVENTORY, "validate.yml", "--limit", f"{h1},{h2},{h3}",
                   extra={**BASE, "rocm_fleet_run_name": f"{run_id}-run"})
    assert all(json.loads((RESULTS / f"{run_id}-run" / f"{h}.json").read_text())["complete"] for h in (h1, h2, h3))
    assert run.task_hosts("validation_node : Record the wheelhouse the suite was installed from") == {h1}
    assert run.task_hosts("validation_node : Write the declared state the checks compare against") == {h2}


def test_a_follower_stopped_on_a_node_that_stays_up_is_followed_again(fleet: Lab) -> None:
    """The follower is stopped by a signal while the node's tier runs (as at the start of a shutdown):
    the next window asks again over a new connection and, the node being up, follows the run to its end."""
    h3 = hosts(fleet)[2]
    run_id = f"{NAME}-follower-stopped"
    playbook(INVENTORY, "validate.yml", "--limit", h3, extra={**BASE, "rocm_fleet_run_name": f"{run_id}-current"},
             timeout_s=1500)
    slow_tier(fleet, h3, 30)
    stopped: list[str] = []

    def stop_the_follower() -> None:
        deadline = time.monotonic() + 25
        while not (pids := follower_pids(fleet, h3, run_id)) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pids:
            fleet.run(h3, ["kill", "-TERM", *pids])
            stopped.extend(pids)

    # (strategy free prints a task's banner with its first result: the start's comes back at once)
    try:
        run = playbook_acting(INVENTORY, "validate.yml", "--limit", h3,
                              extra={**BASE, "rocm_fleet_run_name": run_id},
                              when="TASK [validation_node : Start the validation tier", act=stop_the_follower,
                              timeout_s=600)
    finally:
        fleet.run(h3, ["rm", "-f", "/usr/local/bin/apt-mark"])
    assert stopped, f"no follower appeared on {h3} within 25 s of the start"
    assert "the follower was stopped (exit -15), asking the node again" in run.output, run.output[-5000:]
    assert f"could not follow the run on {h3}" not in run.output, run.output[-5000:]
    assert json.loads((RESULTS / run_id / f"{h3}.json").read_text())["complete"]


LOST_TIER_S = 300   # h4 stays stopped to the end of the file: no later run waits for this


def test_a_host_that_stops_answering_mid_run_is_reported_unreachable(fleet: Lab) -> None:
    h1, h2, h3, h4 = hosts(fleet)
    run_id = f"{NAME}-unreachable"
    # The tests before changed what the hosts declare: one run first brings every node up to date, so that
    # below the start runs the tier at once (a node lost while it is being brought up to date is one that
    # delivered nothing, as a node lost during its install). Then h4's tier is made to take LOST_TIER_S, so
    # it is surely running when h4 is stopped, however loaded the machine: the follow's banner is printed
    # with its first result (strategy free), when the other three hosts' tiers have ended. The run must end
    # well before that tier would have: it did not wait for it. (The bound is the tier's length, not a
    # guess at how fast the machine is: it was 60 s, which a loaded 2-core machine may need for the run itself.)
    playbook(INVENTORY, "validate.yml", extra={**BASE, "rocm_fleet_run_name": f"{run_id}-current"}, timeout_s=1500)
    slow_tier(fleet, h4, LOST_TIER_S)
    follow = "Follow the node's run and collect its results"
    run = playbook_acting(INVENTORY, "validate.yml", extra={**BASE, "rocm_fleet_run_name": run_id},
                          when=f"TASK [validation_node : {follow}]", act=lambda: fleet.stop(h4), timeout_s=1500)
    assert run.rc != 0, run.output[-5000:]
    assert "out of date" not in run.output, run.output[-5000:]
    assert follow in run.output and f"fatal: [{h4}]: UNREACHABLE!" in run.output, run.output[-3000:]
    for host in (h1, h2, h3):
        doc = json.loads((RESULTS / run_id / f"{host}.json").read_text())
        assert doc["complete"], host
    report = (RESULTS / run_id / "fleet.md").read_text()
    assert "RF-NODE-UNREACHABLE" in report and h4 in report, report
    assert run.seconds < LOST_TIER_S, f"the play waited for the lost host's tier ({run.seconds:.0f} s)"
    print(f"validate.yml with one host lost: {run.seconds:.0f} s")


def test_a_host_lost_while_its_suite_is_installed_is_reported_unreachable_with_the_step(fleet: Lab) -> None:
    """Ansible rescues no host that stops answering: h3, stopped while its suite is being installed again,
    leaves the play during the install. The fleet report names it unreachable and says where it was lost
    (before: RF-NODE-NO-RESULTS with no reason). Stopping a node (systemd's orderly shutdown) either drops
    the connection under the step (the host leaves the play: the role named the step before it) or kills
    the step's command first (the step fails; the role's rescue finds the node gone): either is
    unreachable, with the step."""
    _, h2, h3, _ = hosts(fleet)   # (h4 was stopped by the test before)
    run_id = f"{NAME}-lost-in-install"
    marker = "/run/rf-venv-started"      # on the node
    # the venv is made again (removed below) by `python3 -m venv`, found on PATH: /usr/local/bin comes first
    script = f'#!/bin/sh\ncase "$*" in *"-m venv"*) touch {marker}; sleep 120;; esac\nexec /usr/bin/python3 "$@"\n'
    planted = fleet.run(h3, ["sh", "-c", f"printf '%s' '{script}' > /usr/local/bin/python3 && chmod 755 "
                                         f"/usr/local/bin/python3 && rm -rf /opt/rocm-fleet/venv {marker}"])
    assert planted.returncode == 0, planted.stderr
    stopped: list[bool] = []

    def stop_during_the_install() -> None:
        deadline = time.monotonic() + 120
        while fleet.run(h3, ["test", "-e", marker]).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        stopped.append(fleet.run(h3, ["test", "-e", marker]).returncode == 0)
        fleet.stop(h3)

    # (strategy free prints a task's banner with its first result: the start's comes back at once)
    run = playbook_acting(INVENTORY, "validate.yml", "--limit", f"{h2},{h3}",
                          extra={**BASE, "rocm_fleet_run_name": run_id},
                          when="TASK [validation_node : Start the validation tier", act=stop_during_the_install,
                          timeout_s=600)
    assert stopped == [True], f"the venv's creation never started on {h3}: {run.output[-3000:]}"
    assert run.rc != 0, run.output[-5000:]
    assert json.loads((RESULTS / run_id / f"{h2}.json").read_text())["complete"]
    rows = [line for line in (RESULTS / run_id / "fleet.md").read_text().splitlines() if "RF-NODE-" in line]
    assert len(rows) == 1 and h3 in rows[0] and "RF-NODE-UNREACHABLE" in rows[0], rows
    left = "lost while installing the suite or writing its declared state" in rows[0]
    failed = "Create the virtual environment" in rows[0]
    assert left or failed, rows[0]
    print(f"{h3} stopped during its install: {'left the play' if left else 'the step failed, the node was gone'}"
          f" ({run.seconds:.0f} s)")
