"""Multi-node launch through Slurm's srun on two lab hosts: real Slurm 24.11, real OpenMPI 5 over PMIx.

Its own lab (name $ROCM_FLEET_SLURM_LAB_NAME, default rfslm-<checkout key>; SSH ports
$ROCM_FLEET_SLURM_PORT_BASE + 1..2, default free ones, Slurm ports from cluster_lab.service_ports; inventory in a
temporary directory), removed at the end also on failure.
The hosts get the lab mirror as their only package source, then
tests/integration/playbooks/lab_slurm.yml makes them a small real Slurm cluster (the site's
Slurm: rocm-fleet does not install Slurm), then playbooks/cluster.yml with
mpi_launcher_method=srun (and --mpi=pmix) prepares them and runs the MPI smoke job through srun.
The tests then launch through the same code that would launch rccl-tests under Slurm: the
environment through srun's own, the interface variable as OMPI_MCA_*, a time limit with stray
cleanup, a failing rank. Last, playbooks/pull.yml gives both hosts the pull bundle and a Slurm job runs
each node's own converge (/opt/rocm-fleet/pull/converge), the scheduler's trigger of nodes that converge
themselves. No GPU, no RDMA.

    .venv/bin/pytest tests/integration/test_slurm.py -q
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ansible_run import ROOT, PlaybookRun, run_playbook
from cluster_lab import MIRROR_LIST, cli, cluster_inventory, leftovers, mirror_only_play, service_ports
from waiting import wait_for

from validation import recap
from validation.lab import Lab, default_lab_name

pytestmark = pytest.mark.lab

LAB = os.environ.get("ROCM_FLEET_SLURM_LAB_NAME") or default_lab_name("rfslm")
_BASE = os.environ.get("ROCM_FLEET_SLURM_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
HOSTS = [f"{LAB}-1", f"{LAB}-2"]
SMOKE = "/etc/rocm-fleet/cluster/rocm_fleet_mpi_smoke.py"
STRAY_PATTERN = "rocm_fleet_mpi_smoke|srun"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path, PlaybookRun]]:
    """Two lab hosts running Slurm, prepared by cluster.yml for srun; yields (lab, inventory, run)."""
    work = tmp_path_factory.mktemp("slurm")
    lab = Lab(LAB, len(HOSTS), mirror=True, port_base=PORT_BASE, inventory_path=work / "lab.yml")
    with lab:
        inventory = cluster_inventory(lab, work / "cluster.yml", {
            "mpi_launcher_method": "srun",
            "mpi_launcher_srun_args": ["--mpi=pmix"],
            "mpi_launcher_cluster_name": LAB,
            "mpi_launcher_controller_key_dir": str(work / "keys"),
            "mpi_launcher_ranks_per_node": 1,
            "mpi_launcher_socket_ifname": "lo",
            "mpi_launcher_env": {"ROCM_FLEET_TEST_GREETING": "hello, slurm"},
        })
        playbook = work / "prepare.yml"
        playbook.write_text(yaml.safe_dump([
            mirror_only_play(lab),
            {"ansible.builtin.import_playbook": str(ROOT / "tests" / "integration" / "playbooks" / "lab_slurm.yml")},
            {"ansible.builtin.import_playbook": str(ROOT / "playbooks" / "cluster.yml"),
             "vars": {"rocm_fleet_cluster_group": "lab"}},
        ], sort_keys=False))
        key = base64.b64encode(secrets.token_bytes(1024)).decode()
        first = run_playbook(inventory, playbook, "-e", json.dumps({"lab_slurm_munge_key_b64": key,
                                                                 "lab_slurm_port_base": service_ports(lab)}))
        yield lab, inventory, first


def _leftovers(lab: Lab) -> dict[str, str]:
    return leftovers(lab, HOSTS, STRAY_PATTERN)


def test_cluster_playbook_runs_the_smoke_job_through_srun(cluster) -> None:
    _, _, first = cluster
    assert first.rc == 0, first.output[-4000:]
    assert "cluster smoke: PASS: 2 ranks on 2 nodes; allreduce 3 as expected" in first.output, first.output[-3000:]
    print(f"prepare + Slurm + cluster.yml: {first.seconds:.0f} s")


def test_srun_job_gets_the_declared_environment_on_every_rank(cluster, capsys) -> None:
    _, inventory, _ = cluster
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--json", "--",
                     "python3", SMOKE, "--print-env", "ROCM_FLEET_TEST_GREETING", "--print-env",
                     "NCCL_SOCKET_IFNAME", "--print-env", "OMPI_MCA_btl_tcp_if_include")
    assert code == 0, doc["stderr"][-2000:]
    assert doc["method"] == "srun" and doc["hostfile"] == ""
    assert "--mpi=pmix" in doc["argv"] and f"--nodelist={HOSTS[0]},{HOSTS[1]}" in doc["argv"]
    envs = {}
    for line in doc["stdout"].splitlines():
        if line.startswith("rank ") and " env " in line:
            envs[line.split(" on ", 1)[1].split()[0]] = json.loads(line.split(" env ", 1)[1])
    want = {"ROCM_FLEET_TEST_GREETING": "hello, slurm", "NCCL_SOCKET_IFNAME": "lo", "OMPI_MCA_btl_tcp_if_include": "lo"}
    assert envs == {host: want for host in HOSTS}


def test_hanging_srun_job_is_killed_within_its_limit_and_leaves_nothing(cluster, capsys) -> None:
    lab, inventory, _ = cluster
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--timeout", "10",
                     "--json", "--", "python3", SMOKE, "--hang-rank", "1")
    took = time.monotonic() - started
    assert code == 1
    assert doc["timed_out"] is True, doc
    assert took < 10 + 10 + 15, f"the 10 s job took {took:.0f} s to end"
    assert _leftovers(lab) == {}
    queue = lab.ssh(HOSTS[0], [shlex.join(["squeue", "--noheader"])])
    assert queue.returncode == 0 and queue.stdout.strip() == "", queue.stdout
    print(f"hanging srun job killed in {took:.1f} s")


def test_failing_rank_fails_the_srun_job_at_once_naming_the_task(cluster, capsys) -> None:
    """srun's own exit status is not the failing rank's: --kill-on-bad-exit terminates the other ranks
    and srun reports the worst of all tasks; srun names the failing task and its code on stderr."""
    lab, inventory, _ = cluster
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--timeout", "60",
                     "--json", "--", "python3", SMOKE, "--fail-rank", "1", "--exit-code", "7")
    assert code == 1
    assert doc["rc"] not in (0, None) and doc["timed_out"] is False, doc
    assert f"{HOSTS[1]}: task 1: Exited with exit code 7" in doc["stderr"], doc["stderr"][-2000:]
    assert time.monotonic() - started < 45
    assert _leftovers(lab) == {}
    print(f"failing rank: srun exit {doc['rc']}")


def test_node_drain_takes_a_node_out_of_slurm_and_puts_it_back(cluster, tmp_path) -> None:
    """roles/node_drain with node_drain_method=slurm, delegated to the Slurm controller host, as
    upgrade.yml runs it: the node goes DRAINED with the reason, no job can land on it, then RESUME."""
    lab, inventory, _ = cluster
    node, controller = HOSTS[1], HOSTS[0]

    def play(tasks_from: str) -> PlaybookRun:
        book = tmp_path / f"{tasks_from}.yml"
        book.write_text(yaml.safe_dump([{
            "name": f"node_drain {tasks_from}", "hosts": node, "become": True, "gather_facts": False,
            "tasks": [{"name": "Run node_drain", "ansible.builtin.include_role": {
                "name": "node_drain", "tasks_from": tasks_from}}]}], sort_keys=False))
        return run_playbook(inventory, book, "-e", json.dumps({
            "node_drain_method": "slurm", "node_drain_delegate_to": controller,
            "node_drain_reason": "rocm-fleet test: ROCm upgrade"}))

    def state() -> str:
        return lab.ssh(controller, [shlex.join(["sinfo", "--noheader", "--nodes", node, "--format=%T|%E"])]
                       ).stdout.strip()

    drained = play("drain.yml")
    assert drained.rc == 0, drained.output[-3000:]
    assert state() == "drained|rocm-fleet test: ROCm upgrade"
    assert json.loads(lab.ssh(node, ["cat", "/var/lib/rocm-fleet/drain.json"]).stdout)["method"] == "slurm"
    refused = lab.ssh(controller, [shlex.join(["srun", "--nodelist", node, "--immediate=5", "hostname"])])
    assert refused.returncode != 0, refused.stdout
    resumed = play("undrain.yml")
    assert resumed.rc == 0, resumed.output[-3000:]
    seen = [state()]
    deadline = time.monotonic() + 60
    while not seen[-1].startswith("idle|") and time.monotonic() < deadline:   # "idle*": not yet pinged back
        time.sleep(2)
        seen.append(state())
    assert seen[-1].startswith("idle|"), seen
    print(f"after RESUME: {seen[0]!r}, then {seen[-1]!r} after {len(seen) - 1} polls")
    assert lab.ssh(controller, [shlex.join(["srun", "--nodelist", node, "hostname"])]).stdout.strip() == node
    assert lab.ssh(node, ["test", "-e", "/var/lib/rocm-fleet/drain.json"]).returncode != 0


def test_node_drain_waits_for_the_jobs_a_drain_lets_finish_and_names_them_when_they_do_not(cluster, tmp_path) -> None:
    """Issue 39: a Slurm drain stops new jobs but lets running ones finish (State=MIXED+DRAIN); upgrade.yml
    then validated, upgraded and rebooted under them. node_drain now waits for them: with no wait the node
    fails naming the job (and stays drained); with a wait the drain ends only after the job did."""
    lab, inventory, _ = cluster
    node, controller = HOSTS[1], HOSTS[0]

    def drain(wait: int) -> PlaybookRun:
        book = tmp_path / f"drain-{wait}.yml"
        book.write_text(yaml.safe_dump([{
            "name": "node_drain", "hosts": node, "become": True, "gather_facts": False,
            "tasks": [{"name": "Run node_drain", "ansible.builtin.include_role": {
                "name": "node_drain", "tasks_from": "drain.yml"}}]}], sort_keys=False))
        return run_playbook(inventory, book, "-e", json.dumps({
            "node_drain_method": "slurm", "node_drain_delegate_to": controller, "node_drain_job_poll_seconds": 2,
            "node_drain_job_wait_seconds": wait, "node_drain_reason": "rocm-fleet test: ROCm upgrade"}))

    lab.ssh(node, ["rm -f /var/tmp/rfslm-job-end"])
    job = lab.ssh(controller, [shlex.join(["sbatch", "--parsable", f"--nodelist={node}", "--time=2",
                                           "--output=/dev/null", "--wrap",
                                           "sleep 25; date +%s.%N > /var/tmp/rfslm-job-end"])]).stdout.strip()
    try:
        wait_for(f"job {job} running", lambda: lab.ssh(controller, [shlex.join(
            ["squeue", "--noheader", "--format=%T", f"--jobs={job}"])]).stdout.strip() == "RUNNING",
            timeout_s=60, every_s=1)
        at_once = drain(0)
        assert at_once.rc != 0, at_once.output[-3000:]
        assert f"{node} is drained but Slurm shows it " in at_once.output, at_once.output[-3000:]
        assert f"{job} (root, RUNNING)" in " ".join(at_once.output.split()), at_once.output[-3000:]
        waited = drain(120)
        assert waited.rc == 0, waited.output[-3000:]
        ended = lab.ssh(node, ["cat /var/tmp/rfslm-job-end"])
        assert ended.returncode == 0, "the drain ended before the job did"
        print(f"drain with a 25 s job: no wait failed naming job {job}; a 120 s wait ended {waited.seconds:.0f} s "
              "later, after the job")
    finally:
        lab.ssh(controller, [shlex.join(["scancel", job])])
        lab.ssh(controller, [shlex.join(["scontrol", "update", f"NodeName={node}", "State=RESUME"])])
        lab.ssh(node, ["rm -f /var/lib/rocm-fleet/drain.json"])


STANDINS = ROOT / "tests" / "integration" / "standins"


def test_slurm_sees_the_gpus_the_partition_mode_makes(cluster) -> None:
    """roles/amdgpu_partition then roles/slurm_gres on the real Slurm: the GPU node (amd-smi and modprobe
    stand-ins, docs/partition.md) goes SPX/NPS1 -> CPX/NPS4 -> SPX/NPS1, and `scontrol show node` follows:
    Gres=(null), gpu:8, gpu:64, gpu:8, each converge again changing nothing; the node stays schedulable."""
    lab, inventory, _ = cluster
    node, controller = HOSTS[1], HOSTS[0]
    for path, source in (("/usr/local/bin/amd-smi", STANDINS / "amd_smi_standin.py"),
                         ("/usr/local/bin/modprobe", STANDINS / "gpu_node" / "modprobe")):
        payload = base64.b64encode(source.read_bytes()).decode()
        assert lab.ssh(node, [f"echo {payload} | base64 -d > {path} && chmod 0755 {path}"]).returncode == 0
    loaded = lab.ssh(node, ["mkdir -p /dev/dri && modprobe amdgpu && ls /dev/dri | grep -c renderD"])
    assert loaded.stdout.strip() == "8", (loaded.stdout, loaded.stderr)

    def gres() -> str:
        shown = lab.ssh(controller, [shlex.join(["scontrol", "--oneliner", "show", "node", node])]).stdout
        return re.search(r"Gres=(\S+)", shown).group(1)           # type: ignore[union-attr]

    def converge(compute: str, memory: str, **extra: object) -> PlaybookRun:
        return run_playbook(inventory, ROOT / "tests" / "integration" / "playbooks" / "slurm_gres.yml", "-e",
                            json.dumps({"lab_compute": compute, "lab_memory": memory, **extra}))

    seen = [f"before: Gres={gres()}"]
    assert gres() == "(null)"
    for compute, memory, wanted in (("SPX", "NPS1", "gpu:8"), ("CPX", "NPS4", "gpu:64"), ("SPX", "NPS1", "gpu:8")):
        first = converge(compute, memory)
        assert first.rc == 0 and first.changed() >= 1, first.output[-4000:]
        assert gres() == wanted
        again = converge(compute, memory)
        assert again.rc == 0 and again.changed() == 0, again.changed_tasks()
        state = lab.ssh(controller, [shlex.join(["sinfo", "--noheader", "--nodes", node, "--format=%T"])]).stdout
        assert state.strip() == "idle", state
        seen.append(f"{compute}/{memory}: Gres={gres()}, changed {first.changed()} in {first.seconds:.0f} s, "
                    f"then 0 in {again.seconds:.0f} s")
    assert lab.ssh(controller, ["grep -c '^GresTypes=gpu$' /etc/slurm/slurm.conf"]).stdout.strip() == "1"
    refused = converge("SPX", "NPS1", slurm_gres_type="mi300x x")
    said = " ".join(refused.output.split())
    assert refused.rc != 0 and "slurm_gres refused before any change: slurm_gres_type" in said, said[-2000:]
    assert gres() == "gpu:8"
    print("\n" + "\n".join(seen))


PULL = "/opt/rocm-fleet/pull/converge"


@pytest.fixture(scope="module")
def pulled(cluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Lab, PlaybookRun]:
    """The Slurm hosts given the pull bundle by playbooks/pull.yml (which converges each once, its package
    source the lab mirror alone), declared as the session lab's hosts are (inventories/lab/group_vars).
    The mirror line the hosts were given by hand names the URL rocm_repo will, with another keyring (apt
    refuses two Signed-By for one URL): it is declared a file to remove, as a site's own would be."""
    lab, _, _ = cluster
    declared = yaml.safe_load((ROOT / "inventories" / "lab" / "group_vars" / "lab.yml").read_text())
    defaults = yaml.safe_load((ROOT / "roles" / "rocm_repo" / "defaults" / "main.yml").read_text())
    declared["rocm_repo_remove_files"] = [*defaults["rocm_repo_remove_files"], MIRROR_LIST]
    inventory = cluster_inventory(lab, tmp_path_factory.mktemp("pull") / "site.yml", declared)
    return lab, run_playbook(inventory, ROOT / "playbooks" / "pull.yml", timeout_s=1800)


def _srun_converge(lab: Lab, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str], float]:
    """`srun --label` of the node's converge command on every host from the Slurm controller host:
    (srun's result, each host's own output by its task label, seconds)."""
    argv = ["srun", f"--nodelist={','.join(HOSTS)}", "--ntasks-per-node=1", "--label", PULL, *args]
    started = time.monotonic()
    job = lab.ssh(HOSTS[0], [shlex.join(argv)], timeout_s=900)
    took = time.monotonic() - started
    outputs: dict[str, list[str]] = {}
    for line in job.stdout.splitlines():
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdigit():
            outputs.setdefault(HOSTS[int(label)], []).append(rest)
    return job, {host: "\n".join(lines) for host, lines in outputs.items()}, took


def test_a_slurm_job_converges_every_node_in_place(pulled) -> None:
    """The scheduler's trigger of nodes that converge themselves (docs/provision.md): one srun task per
    node runs the bundle's site.yml over a local connection; every node reports its own recap."""
    lab, first = pulled
    assert first.rc == 0, first.output[-6000:]
    assert set(first.recap()) == set(HOSTS), first.output[-3000:]
    job, outputs, took = _srun_converge(lab)
    assert job.returncode == 0, (job.stdout + job.stderr)[-4000:]
    assert set(outputs) == set(HOSTS), job.stdout[-3000:]
    for host, text in outputs.items():
        counts = recap.counts(text)
        assert set(counts) == {host}, text[-2000:]                              # its own inventory: itself
        assert counts[host]["changed"] == 0 and counts[host]["failed"] == 0, text[-3000:]
        assert counts[host]["ok"] > 50, text[-3000:]                            # the whole site.yml
        assert recap.counts(lab.ssh(host, ["cat", "/opt/rocm-fleet/pull/last-run.log"]).stdout) == counts
    print(f"pull.yml on {len(HOSTS)} fresh Slurm hosts: {first.seconds:.0f} s; "
          f"srun of the node converge on both (no-op): {took:.1f} s")


def test_a_slurm_job_fails_with_the_node_that_refused_and_its_reason(pulled) -> None:
    """A converge a node refuses fails the job: srun names the task, the node's output says why."""
    lab, _ = pulled
    job, outputs, took = _srun_converge(lab, "-e", "rocm_version=5.0.0")
    assert job.returncode != 0, job.stdout[-3000:]
    assert re.search(rf"{HOSTS[0]}: task 0: Exited with exit code [1-9]", job.stderr), job.stderr[-2000:]
    for host, text in outputs.items():
        assert recap.counts(text)[host]["failed"] == 1, text[-3000:]
        assert "rocm_version" in "\n".join(recap.failures(text)), text[-3000:]
    assert took < 300
