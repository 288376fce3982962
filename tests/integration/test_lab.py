"""The lab on this machine: hosts reachable over loopback SSH with strict host keys, Ansible
reaching them through the generated inventory, and the signed mirror of real Debian ROCm
packages installing on a trixie host. Needs podman, runc and debootstrap (see docs/lab.md)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from validation.cli import main
from validation.errors import LabError
from validation.lab import Lab, default_lab_name, hosts, mirror
from validation.lab.podman import LABEL, containers, image_exists, podman

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE = Path(sys.executable).parent / "ansible"
# apt state for the mirror checks, inside a lab host and apart from the host's own apt state
APT_TMP = "/tmp/rocm-fleet-lab-apt"  # noqa: S108 - a path inside the lab host, not on this machine


def _ssh(lab: Lab, port: int, known_hosts: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    assert lab.info is not None
    argv = ["ssh", "-i", str(lab.info.key), "-p", str(port), "-o", f"UserKnownHostsFile={known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
            "-o", "ConnectTimeout=10", "root@127.0.0.1", *command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def _apt_with_mirror(lab: Lab, host: str, key_path: str, version: str) -> str:
    """A bash script that points apt at the mirror only, with private lists, and reads the policy."""
    assert lab.info is not None and lab.info.mirror is not None
    url = lab.info.mirror.url
    opts = (f"-o Dir::Etc::SourceList={APT_TMP}/mirror.list -o Dir::Etc::SourceParts=/nonexistent "
            f"-o Dir::State::Lists={APT_TMP}/lists")
    return (f"set -e; rm -rf {APT_TMP}; mkdir -p {APT_TMP}/lists/partial; "
            f"echo 'deb [signed-by={key_path}] {url}/rocm/apt/{version} trixie main' "
            f"> {APT_TMP}/mirror.list; "
            f"apt-get {opts} update 2>&1; apt-cache {opts} policy rocminfo")


def _fetch_key_in_host(lab: Lab, host: str) -> str:
    assert lab.info is not None and lab.info.mirror is not None
    dest = f"{APT_TMP}-key/rocm.asc"
    script = ("import pathlib, sys, urllib.request; p = pathlib.Path(sys.argv[2]); "
              "p.parent.mkdir(parents=True, exist_ok=True); "
              "p.write_bytes(urllib.request.urlopen(sys.argv[1]).read())")
    out = lab.run(host, ["python3", "-c", script, lab.info.mirror.key_url, dest], timeout_s=60)
    assert out.returncode == 0, out.stderr
    return dest


# ---------------------------------------------------------------- hosts and SSH
def test_every_host_answers_ssh_on_loopback_with_its_own_name_and_a_booted_systemd(lab: Lab) -> None:
    assert lab.info is not None
    for host in lab.info.hosts:
        out = _ssh(lab, host.port, lab.info.known_hosts, ["hostname;", "systemctl", "is-system-running"])
        name, state = [*out.stdout.split(), "", ""][:2]
        assert name == host.name, f"port {host.port} answered as {name!r}: {out.stderr}"
        assert state in ("running", "degraded"), f"{host.name}: systemd is {state!r}"


def test_lab_status_without_a_name_finds_every_lab_of_this_checkout(lab: Lab, capsys) -> None:
    """The session lab is not the default name (rftest-, not rflab-): `lab status` finds it by its checkout
    label, as it finds the demo's (issue 44: it did not)."""
    assert lab.info is not None and not lab.name.startswith("rflab-")
    assert main(["lab", "status", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    mine = {d["name"]: d for d in doc["labs"]}
    assert lab.name in mine, sorted(mine)
    assert sorted(mine[lab.name]["hosts"]) == sorted(h.name for h in lab.info.hosts)
    assert all(state.startswith("Up ") for state in mine[lab.name]["hosts"].values()), mine[lab.name]["hosts"]
    assert main(["lab", "status"]) == 0
    assert f"lab {lab.name}: {len(lab.info.hosts)} host(s)" in capsys.readouterr().out


def test_ssh_refuses_a_lab_host_whose_key_is_not_in_known_hosts(lab: Lab, tmp_path: Path) -> None:
    assert lab.info is not None
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    out = _ssh(lab, lab.info.hosts[0].port, empty, ["true"])
    assert out.returncode == 255
    assert "Host key verification failed" in out.stderr


def test_sshd_listens_on_loopback_only(lab: Lab) -> None:
    assert lab.info is not None
    host = lab.info.hosts[0]
    out = lab.run(host.name, ["ss", "-Hltn", f"sport = :{host.port}"])
    local = sorted(line.split()[3] for line in out.stdout.splitlines() if line.strip())
    assert local == [f"127.0.0.1:{host.port}"]


def test_ansible_pings_every_lab_host_through_the_generated_inventory(lab: Lab) -> None:
    assert lab.info is not None
    out = subprocess.run([str(ANSIBLE), "-i", str(lab.info.inventory), "lab", "-m", "ansible.builtin.ping"],
                         capture_output=True, text=True, timeout=180, check=False, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    for host in lab.info.hosts:
        assert f"{host.name} | SUCCESS" in out.stdout


def test_a_reboot_inside_a_host_brings_it_back(lab: Lab) -> None:
    assert lab.info is not None
    host = lab.info.hosts[-1]
    before = lab.run(host.name, ["cat", "/proc/1/stat"]).stdout.split()[21]  # PID 1 start time
    _ssh(lab, host.port, lab.info.known_hosts, ["systemctl", "reboot"])
    time.sleep(3)
    hosts.wait_ready(host.name, host.port, timeout_s=120)
    after = lab.run(host.name, ["cat", "/proc/1/stat"]).stdout.split()[21]
    assert after != before, "PID 1 has the same start time: the host did not reboot"
    assert _ssh(lab, host.port, lab.info.known_hosts, ["true"]).returncode == 0


# ---------------------------------------------------------------- mirror
def test_inventory_carries_the_mirror_url_key_url_and_fingerprint_of_the_served_key(lab: Lab,
                                                                                    tmp_path: Path) -> None:
    assert lab.info is not None and lab.info.mirror is not None
    doc = yaml.safe_load(lab.info.inventory.read_text())
    lab_vars = doc["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"]
    assert lab_vars["rocm_repo_mirror_url"] == lab.info.mirror.url
    assert lab_vars["rocm_repo_mirror_key_url"] == f"{lab.info.mirror.url}/rocm/rocm.gpg.key"
    assert lab_vars["rocm_repo_allow_http"] is True    # plain http on 127.0.0.1; rocm_repo refuses it otherwise
    key = urllib.request.urlopen(lab_vars["rocm_repo_mirror_key_url"], timeout=10).read()  # noqa: S310 - loopback
    assert key.startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    shown = subprocess.run(["gpg", "--homedir", str(home), "--with-colons", "--show-keys"], input=key,
                           capture_output=True, timeout=30, check=False)
    fprs = [line.split(b":")[9].decode() for line in shown.stdout.splitlines() if line.startswith(b"fpr:")]
    assert lab_vars["rocm_repo_mirror_key_fingerprints"] == fprs[:1]
    assert len(fprs[0]) == 40 and fprs[0] == fprs[0].upper()


def test_mirror_is_laid_out_like_repo_radeon_com_for_both_version_sets(lab: Lab) -> None:
    assert lab.info is not None and lab.info.mirror is not None
    assert lab.info.mirror.versions == ("6.1.2", "7.2.4")
    for version in ("6.1.2", "7.2.4"):
        base = f"{lab.info.mirror.url}/rocm/apt/{version}/dists/trixie"
        release = urllib.request.urlopen(f"{base}/Release", timeout=10).read().decode()  # noqa: S310 - loopback
        assert "Origin: rocm-fleet-lab\n" in release and "Codename: trixie\n" in release
        for name in ("InRelease", "Release.gpg", "main/binary-amd64/Packages.gz"):
            with urllib.request.urlopen(f"{base}/{name}", timeout=10) as resp:  # noqa: S310 - loopback
                assert resp.status == 200


def test_host_apt_reads_the_signed_mirror_over_loopback(lab: Lab) -> None:
    assert lab.info is not None and lab.info.mirror is not None
    host = lab.info.hosts[0].name
    key = _fetch_key_in_host(lab, host)
    try:
        out = lab.run(host, ["bash", "-c", _apt_with_mirror(lab, host, key, "6.1.2")], timeout_s=180)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Candidate: 6.1.2-2" in out.stdout
        assert f"500 {lab.info.mirror.url}/rocm/apt/6.1.2 trixie/main amd64 Packages" in out.stdout
    finally:
        lab.run(host, ["rm", "-rf", APT_TMP, f"{APT_TMP}-key"])


def test_host_apt_rejects_the_mirror_signed_by_another_key(lab: Lab) -> None:
    assert lab.info is not None
    host = lab.info.hosts[0].name
    wrong = "/usr/share/keyrings/debian-archive-keyring.gpg"
    try:
        out = lab.run(host, ["bash", "-c", _apt_with_mirror(lab, host, wrong, "6.1.2")], timeout_s=180)
        assert out.returncode != 0
        assert "is not signed" in out.stdout
    finally:
        lab.run(host, ["rm", "-rf", APT_TMP])


@pytest.fixture
def fresh_host(lab: Lab) -> Iterator[str]:
    """A throwaway trixie container from the lab image, on the machine's network, no apt sources."""
    assert lab.info is not None
    name = f"{lab.name}-fresh"
    podman(["run", "-d", "--network=host", "--name", name, "--label", f"{LABEL}={lab.name}",
            lab.info.image, "sleep", "900"], timeout_s=60)
    try:
        podman(["exec", name, "bash", "-c", "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*"])
        yield name
    finally:
        podman(["rm", "--force", "--time", "0", name], timeout_s=60)


def _install(lab: Lab, host: str, version: str, packages: str) -> subprocess.CompletedProcess[str]:
    assert lab.info is not None and lab.info.mirror is not None
    url = lab.info.mirror.url
    script = (f"set -e; python3 -c \"import urllib.request; open('/etc/apt/keyrings/lab.asc','wb')"
              f".write(urllib.request.urlopen('{url}/rocm/rocm.gpg.key').read())\"; "
              f"echo 'deb [signed-by=/etc/apt/keyrings/lab.asc] {url}/rocm/apt/{version} trixie main' "
              "> /etc/apt/sources.list.d/lab.list; apt-get -q update; "
              f"DEBIAN_FRONTEND=noninteractive apt-get -y -q install {packages}; "
              "dpkg-query -W rocminfo rocm-smi; rocminfo 2>&1 | head -n 3 || true")
    return podman(["exec", host, "bash", "-c", script], timeout_s=900, check=False)


def test_the_6_1_2_set_alone_installs_rocminfo_rocm_smi_and_hip_on_trixie(lab: Lab, fresh_host: str) -> None:
    # hipcc (clang-17, ~1 GB unpacked) is install-checked when the mirror's .deb set is built;
    # here the runtime pieces go through HTTP and the signed Release like a role would use them.
    out = _install(lab, fresh_host, "6.1.2", "rocminfo rocm-smi libamdhip64-5")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "rocminfo\t6.1.2-2" in out.stdout
    assert "rocm-smi\t6.1.2-1" in out.stdout
    assert "ROCk module is NOT loaded" in out.stdout   # the real tool ran; there is no GPU here
    hip = podman(["exec", fresh_host, "dpkg-query", "-W", "-f", "${Version}", "libamdhip64-5"], check=False)
    assert hip.stdout == "5.7.1-6+deb13u1"


def test_the_7_2_4_set_upgrades_rocminfo_and_rocm_smi_on_trixie(lab: Lab, fresh_host: str) -> None:
    first = _install(lab, fresh_host, "6.1.2", "rocminfo rocm-smi")
    assert first.returncode == 0, first.stdout[-3000:]
    out = _install(lab, fresh_host, "7.2.4", "rocminfo rocm-smi")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "rocminfo\t7.2.4-1" in out.stdout
    assert "rocm-smi\t6.4.1-1.1" in out.stdout


def test_mirror_server_stops_by_itself_after_its_lifetime(tmp_path: Path) -> None:
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "hello").write_text("hi\n")
    pid, port = mirror.start_server(tmp_path / "www", tmp_path, port=0, lifetime_s=2)
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/hello", timeout=5).read()
    assert body == b"hi\n"
    deadline = time.monotonic() + 15
    while mirror.server_pid(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    assert mirror.server_pid(tmp_path) is None
    assert not (tmp_path / "mirror.port").exists()
    mirror.stop_server(tmp_path)


def test_stopping_the_mirror_leaves_a_process_that_is_not_the_mirror_alone(tmp_path: Path) -> None:
    (tmp_path / "mirror.pid").write_text(f"{os.getpid()}\n")
    assert mirror.stop_server(tmp_path) is False
    assert not (tmp_path / "mirror.pid").exists()


# ---------------------------------------------------------------- down and cleanup
DOWN, RAISE, OTHER = (default_lab_name(prefix) for prefix in ("rfdown", "rfraise", "rfother"))


def test_lab_down_removes_every_container_with_the_label_and_keeps_the_image(tmp_path: Path) -> None:
    small = Lab(DOWN, 1, mirror=False, state_dir=tmp_path / "state", inventory_path=tmp_path / "hosts.yml")
    info = small.up()
    try:
        assert containers(DOWN) == [f"{DOWN}-1"]
        assert info.inventory.exists()
    finally:
        removed = small.down()
    assert removed == [f"{DOWN}-1"]
    assert containers(DOWN) == []
    assert podman(["ps", "-a", "--filter", f"label={LABEL}={DOWN}", "--format", "{{.Names}}"]).stdout == ""
    assert not info.inventory.exists()
    assert image_exists(info.image)
    assert small.down() == []   # idempotent


def test_lab_context_removes_its_hosts_when_the_body_raises(tmp_path: Path) -> None:
    def body() -> None:
        with Lab(RAISE, 1, mirror=False, state_dir=tmp_path / "state",
                 inventory_path=tmp_path / "hosts.yml") as small:
            assert containers(RAISE) == [f"{RAISE}-1"]
            assert small.run(f"{RAISE}-1", ["true"]).returncode == 0
            raise RuntimeError("test body failed")

    with pytest.raises(RuntimeError, match="test body failed"):
        body()
    assert containers(RAISE) == []


# ---------------------------------------------------------------- two checkouts, one machine
def test_a_lab_of_the_same_name_from_another_checkout_is_refused_and_left_alone(tmp_path: Path) -> None:
    """Two clones that ask for the same lab name: the second is refused with the first's checkout
    named, and neither its `up` nor its `down` touches the first one's host."""
    first = Lab(OTHER, 1, mirror=False, state_dir=tmp_path / "a", inventory_path=tmp_path / "a.yml",
                checkout=tmp_path / "clone-a")
    second = Lab(OTHER, 1, mirror=False, state_dir=tmp_path / "b", inventory_path=tmp_path / "b.yml",
                 checkout=tmp_path / "clone-b")
    info = first.up()
    try:
        created = podman(["inspect", "--format", "{{.Created}}", f"{OTHER}-1"]).stdout
        with pytest.raises(LabError, match=f"lab {OTHER} is up, started from another checkout "
                           f"\\({tmp_path / 'clone-a'}\\).*left alone"):
            second.up()
        assert second.down() == []
        assert podman(["inspect", "--format", "{{.Created}}", f"{OTHER}-1"]).stdout == created
        assert first.ssh(f"{OTHER}-1", ["true"]).returncode == 0
        assert info.hosts[0].port == int(podman(["inspect", "--format",
                                                 f"{{{{index .Config.Labels \"{LABEL}.port\"}}}}",
                                                 f"{OTHER}-1"]).stdout)
    finally:
        first.down()
    assert containers(OTHER) == []


def test_two_labs_started_at_once_get_different_free_ports_and_both_come_up(tmp_path: Path) -> None:
    """`lab up` from two processes at the same moment (two clones, two CI jobs), no --port-base:
    each lab gets its own ports, and a port another lab holds is never chosen."""
    names = [default_lab_name(f"rfpar{i}") for i in (1, 2)]
    argv = [[str(Path(sys.executable).parent / "rocm-fleet"), "lab", "up", "--name", name, "--hosts", "2",
             "--no-mirror", "--state-dir", str(tmp_path / name), "--inventory", str(tmp_path / f"{name}.yml")]
            for name in names]
    try:
        procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argv]
        outs = [p.communicate(timeout=300) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        ports = [yaml.safe_load((tmp_path / f"{name}.yml").read_text())["all"]["children"]["gpu_nodes"]
                 ["children"]["lab"]["hosts"] for name in names]
        taken = [h["ansible_port"] for hosts_ in ports for h in hosts_.values()]
        assert len(set(taken)) == 4, ports
    finally:
        for name in names:
            subprocess.run([*argv[names.index(name)][:2], "down", "--name", name, "--state-dir",
                            str(tmp_path / name), "--inventory", str(tmp_path / f"{name}.yml")],
                           capture_output=True, timeout=120, check=False)
    assert all(containers(name) == [] for name in names)
