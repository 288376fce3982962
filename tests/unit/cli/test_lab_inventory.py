"""The lab's pure parts: host/port plan, inventory rendering, mirror URI discovery, recipe hash.

No podman, no network: ansible-inventory reads the written file from disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation.errors import LabError
from validation.lab import hosts, inventory, mirror
from validation.lab.image import Recipe, debian_mirror_from_sources
from validation.lab.inventory import HostPlan, MirrorFacts

ROOT = Path(__file__).resolve().parents[3]
FPR = "9A0BC2DD1208B4F8D8D1A66322F27789F247BBEC"
MIRROR = MirrorFacts(url="http://127.0.0.1:8765", key_url="http://127.0.0.1:8765/rocm/rocm.gpg.key",
                     key_fingerprints=(FPR,), allow_http=True)


def _render(mirror_facts: MirrorFacts | None = MIRROR) -> dict:
    plan = (HostPlan(name="rflab-1", port=2221), HostPlan(name="rflab-2", port=2222))
    return inventory.render("rflab", plan, key_path=Path("/s/id_ed25519"), known_hosts=Path("/s/known_hosts"),
                            mirror=mirror_facts)


# ---------------------------------------------------------------- host and port plan
def test_hosts_are_named_after_the_lab_and_listen_on_base_plus_index() -> None:
    plan = inventory.plan_hosts("rflab", 3, 2220)
    assert [(h.name, h.port) for h in plan] == [("rflab-1", 2221), ("rflab-2", 2222), ("rflab-3", 2223)]


def test_a_port_in_use_is_refused_with_the_port_and_the_option_to_change() -> None:
    with pytest.raises(LabError, match=r"port\(s\) 2242 are in use; choose another --port-base"):
        inventory.plan_hosts("rftest", 3, 2240, is_free=lambda port: port != 2242)


def test_free_ports_are_searched_in_blocks_of_ten_past_ports_in_use_or_held() -> None:
    held = {2221, 2232}   # a listening sshd in the first block, another lab's stopped host in the second
    assert inventory.choose_port_base(2, lambda port: port not in held, start=2220) == 2240
    assert inventory.choose_port_base(1, lambda port: port not in held, start=2220) == 2230  # 2231 is free
    assert inventory.choose_port_base(12, lambda port: True, start=2220) == 2220


def test_a_lab_larger_than_ten_hosts_steps_past_a_whole_block() -> None:
    assert inventory.choose_port_base(12, lambda port: port != 2225, start=2220) == 2240


def test_no_free_block_is_an_error_that_names_the_way_out() -> None:
    with pytest.raises(LabError, match=r"no 2 free ports on 127\.0\.0\.1 between 2221 and 2300.*--port-base"):
        inventory.choose_port_base(2, lambda port: False, start=2220, stop=2300)


def test_the_default_lab_name_is_keyed_to_the_checkout() -> None:
    from validation.lab.paths import checkout_key, default_lab_name

    assert default_lab_name("rfdemo", Path("/srv/clone-a")) != default_lab_name("rfdemo", Path("/srv/clone-b"))
    assert default_lab_name("rfdemo", Path("/srv/clone-a")) == f"rfdemo-{checkout_key(Path('/srv/clone-a'))}"
    inventory.check_name(default_lab_name("rfdemo", Path("/srv/clone-a")))   # a valid host name prefix


@pytest.mark.parametrize("name", ["RFlab", "rf_lab", "1lab", "", "a" * 32])
def test_a_lab_name_that_cannot_prefix_a_hostname_is_refused(name: str) -> None:
    with pytest.raises(LabError, match="not usable as a host name prefix"):
        inventory.plan_hosts(name, 1, 2220)


@pytest.mark.parametrize(("count", "base"), [(0, 2220), (33, 2220), (2, 65534), (1, 1000)])
def test_host_counts_and_port_ranges_outside_the_limits_are_refused(count: int, base: int) -> None:
    with pytest.raises(LabError):
        inventory.plan_hosts("rflab", count, base)


def test_port_probe_sees_a_listening_socket_as_busy() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert hosts.port_is_free(sock.getsockname()[1]) is False


# ---------------------------------------------------------------- inventory
def test_lab_group_is_a_child_of_gpu_nodes_with_its_hosts_on_loopback() -> None:
    lab = _render()["all"]["children"]["gpu_nodes"]["children"]["lab"]
    assert lab["hosts"] == {"rflab-1": {"ansible_host": "127.0.0.1", "ansible_port": 2221},
                            "rflab-2": {"ansible_host": "127.0.0.1", "ansible_port": 2222}}


def test_ssh_uses_the_lab_key_and_strict_checking_against_the_lab_known_hosts() -> None:
    lab_vars = _render()["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"]
    assert lab_vars["ansible_user"] == "root"
    assert lab_vars["ansible_ssh_private_key_file"] == "/s/id_ed25519"
    args = lab_vars["ansible_ssh_common_args"]
    assert "-o UserKnownHostsFile=/s/known_hosts -o StrictHostKeyChecking=yes" in args
    assert "StrictHostKeyChecking=no" not in args
    assert lab_vars["ansible_python_interpreter"] == "/usr/bin/python3"


def test_mirror_facts_are_lab_group_vars_under_the_role_names() -> None:
    lab_vars = _render()["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"]
    assert lab_vars["rocm_repo_mirror_url"] == "http://127.0.0.1:8765"
    assert lab_vars["rocm_repo_mirror_key_url"] == "http://127.0.0.1:8765/rocm/rocm.gpg.key"
    assert lab_vars["rocm_repo_mirror_key_fingerprints"] == [FPR]
    assert lab_vars["rocm_repo_allow_http"] is True    # rocm_repo refuses plain http unless told


@pytest.mark.parametrize(("url", "allowed"), [("http://127.0.0.1:8765", True), ("http://10.0.0.5:8765", False),
                                              ("https://127.0.0.1:8765", False)])
def test_only_the_loopback_http_mirror_asks_roles_to_accept_plain_http(url: str, allowed: bool) -> None:
    info = mirror.MirrorInfo(url=url, key_url=f"{url}/rocm/rocm.gpg.key", key_fingerprints=(FPR,), versions=("6.1.2",),
                             root=Path("/m"), port=8765, pid=1)
    assert info.allow_http is allowed
    facts = MirrorFacts(url=url, key_url=info.key_url, key_fingerprints=(FPR,), allow_http=info.allow_http)
    lab_vars = _render(facts)["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"]
    assert ("rocm_repo_allow_http" in lab_vars) is allowed


def test_reboots_are_recognised_by_pid_1s_start_time_not_the_shared_kernels_boot_id() -> None:
    lab_vars = _render(None)["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"]
    assert lab_vars["node_reboot_boot_time_command"] == "awk '{print $22}' /proc/1/stat"


def test_without_a_mirror_no_mirror_variable_is_written() -> None:
    lab_vars = _render(None)["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"]
    assert not [k for k in lab_vars if k.startswith("rocm_repo_")]


def test_written_inventory_names_its_lab_and_reads_back_as_yaml(tmp_path: Path) -> None:
    path = inventory.write(tmp_path / "inv" / "hosts.yml", "rflab", _render())
    assert path.read_text().splitlines()[0] == "# rocm-fleet lab: rflab"
    assert inventory.owner(path) == "rflab"
    assert yaml.safe_load(path.read_text()) == _render()


def test_a_hand_written_inventory_has_no_lab_owner(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    node01:\n")
    assert inventory.owner(path) is None
    assert inventory.owner(tmp_path / "absent.yml") is None


def test_ansible_reads_the_inventory_with_lab_hosts_in_gpu_nodes(tmp_path: Path) -> None:
    path = inventory.write(tmp_path / "hosts.yml", "rflab", _render())
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(path), "--list"],
                         capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["gpu_nodes"]["children"] == ["lab"]
    assert doc["lab"]["hosts"] == ["rflab-1", "rflab-2"]
    second = doc["_meta"]["hostvars"]["rflab-2"]
    assert second["ansible_port"] == 2222
    assert second["rocm_repo_mirror_key_fingerprints"] == [FPR]


def test_written_inventory_passes_yamllint_with_its_default_rules(tmp_path: Path) -> None:
    path = inventory.write(tmp_path / "hosts.yml", "rflab", _render())
    out = subprocess.run([str(Path(sys.executable).parent / "yamllint"), "-f", "parsable", str(path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert "[error]" not in out.stdout, out.stdout


# ---------------------------------------------------------------- sshd and known_hosts
def test_sshd_dropin_listens_on_the_port_on_loopback_only_with_keys_only() -> None:
    text = hosts.sshd_dropin(2221)
    assert "Port 2221\n" in text
    assert "ListenAddress 127.0.0.1\n" in text
    assert "PermitRootLogin prohibit-password\n" in text
    assert "PasswordAuthentication no\n" in text


def test_known_hosts_line_names_loopback_and_port() -> None:
    pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBN7ssWJQf2pBszXBb1NEszQTGw51dnyALTXinXn9r/Q root@rflab-1\n"
    assert hosts.known_hosts_line(2221, pub) == (
        "[127.0.0.1]:2221 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBN7ssWJQf2pBszXBb1NEszQTGw51dnyALTXinXn9r/Q")


# ---------------------------------------------------------------- base image recipe
DEB822 = """Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_uri_comes_from_deb822_sources_skipping_security() -> None:
    texts = {"/etc/apt/sources.list.d/debian-security.sources": "URIs: http://security.debian.org/debian-security\n",
             "/etc/apt/sources.list.d/debian.sources": DEB822}
    assert debian_mirror_from_sources(texts) == "http://deb.debian.org/debian"


def test_mirror_uri_comes_from_one_line_sources_with_options() -> None:
    texts = {"/etc/apt/sources.list": "# comment\n"
             "deb [arch=amd64 signed-by=/k.gpg] http://ftp.de.debian.org/debian/ bookworm main\n"}
    assert debian_mirror_from_sources(texts) == "http://ftp.de.debian.org/debian"


def test_no_archive_uri_found_is_none() -> None:
    assert debian_mirror_from_sources({"/etc/apt/sources.list": "# nothing\n"}) is None


def test_recipe_hash_ignores_package_order_but_not_the_mirror_or_packages() -> None:
    a = Recipe(suite="trixie", packages=("python3", "sudo"), mirror="http://deb.debian.org/debian")
    b = Recipe(suite="trixie", packages=("sudo", "python3"), mirror="http://deb.debian.org/debian/")
    assert a.digest() == b.digest()
    assert a.tag == f"localhost/rocm-fleet-lab:{a.digest()}"
    assert Recipe(suite="trixie", packages=("python3",), mirror=a.mirror).digest() != a.digest()
    assert Recipe(suite="trixie", packages=a.packages, mirror="http://other/debian").digest() != a.digest()
    assert Recipe(suite="sid", packages=a.packages, mirror=a.mirror).digest() != a.digest()


# ---------------------------------------------------------------- mirror helpers
@pytest.mark.parametrize(("debian", "upstream"), [
    ("6.1.2-2", "6.1.2"),            # trixie rocminfo
    ("5.7.1-6+deb13u1", "5.7.1"),    # trixie hipcc
    ("7.0.2+dfsg-3", "7.0.2"),       # sid hipcc
    ("1:3.13.0-2", "3.13.0"),        # epoch (pciutils)
])
def test_rocm_version_is_the_upstream_part_of_the_debian_version(debian: str, upstream: str) -> None:
    assert mirror.upstream_version(debian) == upstream


def test_fingerprints_are_the_primary_keys_not_the_subkeys() -> None:
    colons = ("sec:u:3072:1:22F27789F247BBEC:1764675074:::u:::scESC:::+:::23::0:\n"
              "fpr:::::::::9a0bc2dd1208b4f8d8d1a66322f27789f247bbec:\n"
              "grp:::::::::0123456789ABCDEF0123456789ABCDEF01234567:\n"
              "uid:u::::1764675074::AB::rocm-fleet lab mirror (rflab) "
              "<lab-mirror@rocm-fleet.invalid>::::::::::0:\n"
              "ssb:u:3072:1:1111222233334444:1764675074::::::e:::+:::23:\n"
              "fpr:::::::::AAAABBBBCCCCDDDDEEEEFFFF1111222233334444:\n")
    assert mirror.fingerprints(colons) == (FPR,)
