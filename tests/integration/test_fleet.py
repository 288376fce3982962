"""Fleet workflows on four lab hosts (issue 6): validate all at once, a rolling upgrade that stops
at its failure budget, a node whose suite cannot start, and a host that stops answering mid-run.

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
import subprocess
import sys
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
        "node_drain_undrain_command": ["sh", "-c", f"echo undrain {{{{ inventory_hostname }}}} >> {hooks}"]},
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
            "node_drain_undrain_command": ["sh", "-c", f"echo undrain {{{{ inventory_hostname }}}} >> {hooks}"]},
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


def test_a_host_that_stops_answering_mid_run_is_reported_unreachable(fleet: Lab) -> None:
    h1, h2, h3, h4 = hosts(fleet)
    run_id = f"{NAME}-unreachable"
    # The tests before changed what the hosts declare: one run first brings every node up to date, so that
    # below the start runs the tier at once and the first follow is the tier's (a node lost while it is
    # being brought up to date is one that delivered nothing, as a node lost during its install).
    playbook(INVENTORY, "validate.yml", extra={**BASE, "rocm_fleet_run_name": f"{run_id}-current"}, timeout_s=1500)
    # the tier is running everywhere: take one host away
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
    print(f"validate.yml with one host lost: {run.seconds:.0f} s")
