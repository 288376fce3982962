"""Hostile inventory values against the role-side builders of scheduler, sysctl and SSH inputs (issue 16).

node_drain builds `scontrol update NodeName=...` and `kubectl drain ... -- NAME` from node_drain_name;
node_tuning writes node_tuning_sysctl_extra into /etc/sysctl.d; mpi_launcher writes ssh_config lines
and the cluster key's authorized_keys line. Each is run here through ansible-playbook with a local
connection (the tasks only read: facts, /proc/sys), one inventory host per case, and a hostile value
must stop its case with an assert that names the variable. The kubectl test runs the real kubectl
against a closed local port to show that it reads the name after `--` as a node, not an option.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation import declared
from validation.multinode import cluster_ssh
from validation.multinode.model import ClusterError

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "ansible" / "argument_checks.yml"
KEEP_KERNEL = {"node_tuning_pci_realloc": "keep", "node_tuning_iommu": "keep", "node_tuning_vendor_iommu": "keep",
               "node_tuning_numa_balancing": "keep", "node_tuning_thp_enabled": "keep",
               "node_tuning_thp_defrag": "keep"}

CPX = {"validation_gpu_count": 8, "validation_target_sku": "mi300x", "amdgpu_partition_compute": "CPX",
       "amdgpu_partition_memory": "NPS4"}

# case -> (role, variables, the refusal expected in the output or None when the case must pass)
CASES: dict[str, tuple[str, dict, str | None]] = {
    "drain-slurm-dash": ("node_drain", {"node_drain_method": "slurm", "node_drain_name": "-oops"},
                         'node_drain_name is "-oops"; give the node\'s name in the scheduler'),
    "drain-k8s-option": ("node_drain", {"node_drain_method": "kubernetes", "node_drain_name": "--force"},
                         'node_drain_name is "--force"'),
    "drain-k8s-two-words": ("node_drain", {"node_drain_method": "kubernetes", "node_drain_name": "gpu-07 gpu-08"},
                            'node_drain_name is "gpu-07 gpu-08"'),
    "drain-slurm-newline": ("node_drain", {"node_drain_method": "slurm", "node_drain_name": "gpu-07\nState=RESUME"},
                            'node_drain_name is "gpu-07\\nState=RESUME"'),
    "drain-k8s-ok": ("node_drain", {"node_drain_method": "kubernetes", "node_drain_name": "gpu-07"}, None),
    "drain-slurm-ok": ("node_drain", {"node_drain_method": "slurm", "node_drain_name": "gpu-07",
                                      "node_drain_reason": "rocm-fleet upgrade r1"}, None),
    "sysctl-newline": ("node_tuning", {**KEEP_KERNEL, "node_tuning_sysctl_extra": [
        {"name": "vm.max_map_count", "value": "1048576\nkernel.core_pattern=|/bin/sh -c id"}]},
        "node_tuning_sysctl_extra entry vm.max_map_count has value"),
    "sysctl-carriage-return": ("node_tuning", {**KEEP_KERNEL, "node_tuning_sysctl_extra": [
        {"name": "vm.max_map_count", "value": "1048576\r"}]}, "numbers or strings on one line"),
    "sysctl-ok": ("node_tuning", {**KEEP_KERNEL, "node_tuning_sysctl_extra": [
        {"name": "vm.max_map_count", "value": 1048576}]}, None),
    "tuning-plan": ("node_tuning", {"node_tuning_iommu": "pt", "node_tuning_numa_balancing": "keep",
                                    "node_tuning_thp_enabled": "always", "node_tuning_modprobe_blacklist": ["ast"],
                                    "node_tuning_sysctl_extra": [{"name": "vm.max_map_count", "value": "1048576 "}]},
                    None),
    "mpi-user-option": ("mpi_launcher", {"mpi_launcher_user": "-oProxyCommand=id"},
                        "mpi_launcher_user is '-oProxyCommand=id', which is not a user name"),
    "mpi-host-newline": ("mpi_launcher", {"mpi_launcher_ssh_host": "10.0.0.1\n  ProxyCommand id"},
                         "mpi_launcher_ssh_host (else ansible_host) is '10.0.0.1\\n  ProxyCommand id'"),
    "mpi-config-dir-space": ("mpi_launcher", {"mpi_launcher_config_dir": "/etc/x -o ProxyCommand=id"},
                             "mpi_launcher_config_dir is '/etc/x -o ProxyCommand=id'"),
    "mpi-from-name": ("mpi_launcher", {"mpi_launcher_ssh_from": ["node01.example.com"]},
                      "mpi_launcher_ssh_from holds ['node01.example.com']"),
    "mpi-from-quote": ("mpi_launcher", {"mpi_launcher_ssh_from": ['10.0.0.1",command="id']},
                       "mpi_launcher_ssh_from holds"),
    "mpi-ok": ("mpi_launcher", {"mpi_launcher_ssh_host": "10.9.8.7"}, None),
    # issue 34: what counts GPUs follows the partition mode, and a mode the SKU does not run is refused
    "env-visible-beyond": ("env_profiles", {"validation_gpu_count": 8, "env_profiles_rocr_visible_devices": "0,8"},
                           "the login environment ROCR_VISIBLE_DEVICES=0,8: the node lists GPUs 0-7"),
    "env-visible-cpx-ok": ("env_profiles", {**CPX, "env_profiles_rocr_visible_devices": "0,63"}, None),
    "partition-spx-nps4": ("amdgpu_partition", {**CPX, "amdgpu_partition_compute": "SPX"},
                           "amdgpu_partition refused before any change: mi300x cannot run SPX with NPS4"),
    "partition-ok": ("amdgpu_partition", CPX, None),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dict[str, int]], Path]:
    """Every case in one ansible-playbook run: (output, recap per host, directory of argv files)."""
    tmp = tmp_path_factory.mktemp("argchecks")
    hosts = {}
    for name, (role, variables, _) in CASES.items():
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "case_role": role, "case_out": str(tmp / f"{name}.json"), **variables}
    inventory = tmp / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false"}
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                             str(PLAYBOOK)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
                            check=False)
    recap = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) > 4 and parts[0] in CASES and parts[1] == ":":
            recap[parts[0]] = {k: int(v) for k, v in (p.split("=") for p in parts[2:])}
    return result.stdout + result.stderr, recap, tmp


def _failure(output: str, case: str) -> str:
    """The message of the task that failed for one host ('' when none did): a task prints
    "fatal: [h]: FAILED! => {...}", a loop item "failed: [h] (item=...) => {...}"."""
    for line in output.splitlines():
        if line.startswith((f"fatal: [{case}]: FAILED! => ", f"failed: [{case}] (item=")):
            return str(json.loads(line.split(" => ", 1)[1]).get("msg", ""))
    return ""


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_is_refused_with_its_message_or_passes(ran, case: str) -> None:
    output, recap, _ = ran
    _, _, refusal = CASES[case]
    assert case in recap, output[-3000:]
    if refusal is None:
        assert recap[case]["failed"] == 0, _failure(output, case) or output[-3000:]
    else:
        assert recap[case]["failed"] == 1, f"{case} was not refused: {output[-3000:]}"
        assert refusal in _failure(output, case), _failure(output, case)


def test_kubectl_gets_the_node_name_after_a_double_dash(ran) -> None:
    _, _, out = ran
    argv = json.loads((out / "drain-k8s-ok.json").read_text())
    assert argv == {"drain": ["kubectl", "drain", "--timeout=600s", "--ignore-daemonsets", "--delete-emptydir-data",
                              "--", "gpu-07"],
                    "undrain": ["kubectl", "uncordon", "--", "gpu-07"]}


def test_scontrol_gets_the_node_name_inside_its_nodename_argument(ran) -> None:
    _, _, out = ran
    argv = json.loads((out / "drain-slurm-ok.json").read_text())
    assert argv == {"drain": ["scontrol", "update", "NodeName=gpu-07", "State=DRAIN", "Reason=rocm-fleet upgrade r1"],
                    "undrain": ["scontrol", "update", "NodeName=gpu-07", "State=RESUME"]}


def test_the_role_plans_what_declared_py_plans_from_defaults_and_inventory(ran) -> None:
    """node_tuning reads its variables (role defaults under the inventory's) into validation/declared.py,
    the same function the node-tuning checks call: the plan the role works out is the checks' plan."""
    _, _, out = ran
    defaults = yaml.safe_load((ROOT / "roles" / "node_tuning" / "defaults" / "main.yml").read_text())
    _, variables, _ = CASES["tuning-plan"]
    wanted = declared.tuning_plan({**defaults, **variables}, Path("/proc/cpuinfo").read_text())
    assert json.loads((out / "tuning-plan.json").read_text()) == wanted
    assert "iommu=pt" in wanted["cmdline"] and wanted["sysctl"] == {"vm.max_map_count": "1048576"}


def test_the_cluster_key_is_restricted_to_the_nodes_own_addresses(ran) -> None:
    _, _, out = ran
    sources = json.loads((out / "mpi-ok.json").read_text())
    assert "10.9.8.7" in sources                        # the declared mpi_launcher_ssh_host, an address
    assert all(cluster_ssh.SOURCE_RE.match(s) for s in sources), sources


@pytest.mark.skipif(not shutil.which("kubectl"), reason="needs the real kubectl")
def test_real_kubectl_reads_the_name_after_the_double_dash_as_a_node(tmp_path: Path) -> None:
    """With `--`, even a name that looks like an option reaches the API request as a node name: kubectl
    fails to connect (nothing listens), it does not parse the name as a flag."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                  "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                                  "users": [{"name": "u", "user": {}}]}))
    env = {**os.environ, "KUBECONFIG": str(config)}
    for argv in (["kubectl", "uncordon", "--", "gpu-07"], ["kubectl", "uncordon", "--", "--help"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
        assert done.returncode != 0 and "connection refused" in done.stderr, (argv, done.stdout, done.stderr)
    unguarded = subprocess.run(["kubectl", "uncordon", "--help"], capture_output=True, text=True, timeout=60,
                               env=env, check=False)
    assert unguarded.returncode == 0 and "Usage:" in unguarded.stdout      # without `--` it was an option


def test_authorized_key_line_is_restricted_and_refuses_anything_but_addresses() -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEvlt3n0Gd9rQ2e0iDg7xw0DlFQ3Bc6S9sTq0YV1KEGp rocm-fleet-cluster@c1"
    assert cluster_ssh.authorized_key_line(key, ["10.0.0.2", "10.0.0.1", "10.0.0.1"]) == \
        f'from="10.0.0.1,10.0.0.2",restrict {key}'
    for sources in ([], ["node01"], ['10.0.0.1",command="id'], ["10.0.0.1 10.0.0.2"]):
        with pytest.raises(ClusterError, match=r"mpi_launcher_ssh_from|no address"):
            cluster_ssh.authorized_key_line(key, sources)
    with pytest.raises(ClusterError, match="not one 'type base64 comment' line"):
        cluster_ssh.authorized_key_line(key + "\nssh-ed25519 AAAA other", ["10.0.0.1"])


def test_own_addresses_keep_addresses_and_leave_names_out() -> None:
    assert cluster_ssh.own_addresses("127.0.0.1", ["10.0.0.5"], ["fe80::1"]) == ["127.0.0.1", "10.0.0.5", "fe80::1"]
    assert cluster_ssh.own_addresses("node01.example.com", ["10.0.0.5"], []) == ["10.0.0.5"]
