"""Nodes that converge themselves (playbooks/pull.yml, issue 20) on the session lab, over real SSH.

The controller installs a pinned bundle (this checkout's files and its ansible-core) on each node once,
then each node runs playbooks/site.yml over a local connection. Run after test_provision (file order),
the hosts are already converged by the controller: the nodes' own runs must then change nothing, which
is what shows that a node converging itself reaches the state site.yml declares. Run alone, the first
pull converges fresh hosts and the later checks hold the same.
"""

from __future__ import annotations

import re

import pytest
from ansible_run import PlaybookRun, converge_in_slices, playbook

from validation import recap

pytestmark = pytest.mark.lab
PREFIX = "/opt/rocm-fleet/pull"


@pytest.fixture(scope="module")
def pulled(lab, tmp_path_factory) -> tuple[PlaybookRun, PlaybookRun]:
    # The first pull is sharded (`rocm-fleet converge --pull`): its slices share one bundle build.
    first = converge_in_slices(lab.info.inventory, tmp_path_factory.mktemp("pull"), 2, pull=True)
    assert first.rc == 0, first.output[-6000:]
    second = playbook(lab.info.inventory, "pull.yml")
    return first, second


def test_a_sharded_pull_builds_one_bundle_and_names_every_host(lab, pulled) -> None:
    first, _ = pulled
    assert set(recap.counts(first.output)) >= {h.name for h in lab.info.hosts}
    assert "(pull.yml) in 2 slices" in first.output
    built = re.findall(r"TASK \[Find or build the bundle[^\n]*\n(changed|ok): ", first.output)
    assert len(built) == 2 and built.count("changed") <= 1, built     # two slices, at most one build


def test_a_repeat_pull_changes_nothing_and_installs_nothing(lab, pulled) -> None:
    _, second = pulled
    assert second.rc == 0, second.output[-6000:]
    assert second.changed() == 0, second.changed_tasks()
    assert "Copy the bundle" not in second.output          # the node's record matched: no install
    assert set(second.recap()) == {h.name for h in lab.info.hosts}


def test_the_node_ran_site_yml_itself_and_changed_nothing_on_a_repeat(lab, pulled) -> None:
    for host in lab.info.hosts:
        log = lab.run(host.name, ["cat", f"{PREFIX}/last-run.log"]).stdout
        counts = recap.counts(log)
        assert set(counts) == {host.name}, log[-2000:]                 # its own inventory: itself only
        assert counts[host.name]["changed"] == 0 and counts[host.name]["failed"] == 0, log[-3000:]
        assert counts[host.name]["ok"] > 50                               # the whole site.yml, not a stub
        assert "TASK [rocm_repo" in log and "TASK [node_tuning" in log
        mode = lab.run(host.name, ["stat", "-c", "%a %U", f"{PREFIX}/inventory.yml"]).stdout.split()
        assert mode == ["600", "root"]
        inventory = lab.run(host.name, ["cat", f"{PREFIX}/inventory.yml"]).stdout
        assert "ansible_connection: local" in inventory and "ansible_port" not in inventory
        assert "ansible_ssh_private_key_file" not in inventory


def test_the_controller_agrees_that_a_pulled_node_is_converged(lab, pulled) -> None:
    host = lab.info.hosts[0].name
    check = playbook(lab.info.inventory, "site.yml", "--check", "--limit", host)
    assert check.rc == 0, check.output[-5000:]
    assert check.changed() == 0, check.changed_tasks()


def test_the_command_a_slurm_job_runs_converges_the_node_in_place(lab, pulled) -> None:
    host = lab.info.hosts[-1].name
    run = lab.run(host, [f"{PREFIX}/converge"], timeout_s=900)
    assert run.returncode == 0, run.stdout[-3000:]
    assert recap.counts(run.stdout)[host]["changed"] == 0


def test_a_node_that_refuses_its_own_run_is_named_with_its_failure(lab, pulled) -> None:
    host = lab.info.hosts[0].name
    bad = playbook(lab.info.inventory, "pull.yml", "--limit", host,
                   extra={"self_converge_playbook_args": ["-e", "rocm_version=5.0.0"]})
    assert bad.rc == 2, bad.output[-4000:]
    assert f"{host} did not converge itself" in bad.output and f"{PREFIX}/last-run.log" in bad.output
    assert "rocm_version" in bad.output.split("did not converge itself", 1)[1][:3000]   # the node's own reason
    assert bad.recap()[host]["failed"] == 1


def test_check_mode_is_refused_before_anything_reaches_the_nodes(lab, pulled) -> None:
    refused = playbook(lab.info.inventory, "pull.yml", "--check")
    assert refused.rc == 2, refused.output[-3000:]
    assert "playbooks/pull.yml has no --check" in refused.output
    assert "Read which bundle" not in refused.output
