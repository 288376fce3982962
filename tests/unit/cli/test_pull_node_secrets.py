"""A node's inventory in the pull bundle (validation/pull.py:node_inventory) carries none of the ways the
controller reaches it or becomes root there, under any of the names Ansible reads them by: every alias
of a connection plugin's options and of a become plugin's password, as ansible-core documents them."""

from __future__ import annotations

import pytest

from validation import pull

# Each a name under which ansible-core 2.17-2.19 reads a password, a key or an address of the controller's
# way in (the connection plugins' and the become plugins' documented `vars:`).
ALIASES = (
    "ansible_become_password", "ansible_become_pass", "ansible_sudo_pass", "ansible_su_pass", "ansible_runas_pass",
    "ansible_password", "ansible_ssh_pass", "ansible_ssh_password", "ansible_paramiko_pass",
    "ansible_paramiko_password", "ansible_winrm_pass", "ansible_winrm_password",
    "ansible_private_key_file", "ansible_ssh_private_key_file", "ansible_paramiko_private_key_file",
    "ansible_private_key", "ansible_ssh_private_key", "ansible_private_key_passphrase",
    "ansible_ssh_private_key_passphrase", "ansible_psrp_certificate_key_pem", "ansible_psrp_certificate_pem",
    "ansible_host", "ansible_ssh_host", "ansible_paramiko_host", "ansible_port", "ansible_ssh_port",
    "ansible_user", "ansible_ssh_user", "ansible_paramiko_user", "ansible_ssh_common_args",
    "ansible_paramiko_proxy_command", "ansible_ssh_extra_args",
)
# Named by no plugin ansible-core ships (a collection's connection plugin): caught by their names.
UNNAMED = ("ansible_httpapi_pass", "ansible_netconf_password", "ansible_kubectl_token", "ansible_vmware_secret")
# What a run on the node itself still reads.
KEPT = {"ansible_become": True, "ansible_become_user": "root", "ansible_become_method": "sudo",
        "ansible_become_exe": "/usr/bin/sudo", "ansible_become_flags": "-H", "ansible_shell_executable": "/bin/bash",
        "rocm_version": "6.4.1", "rocm_repo_mirror_url": "https://mirror.example/rocm"}


@pytest.mark.parametrize("alias", ALIASES + UNNAMED)
def test_every_alias_of_a_way_in_is_stripped(alias: str) -> None:
    listing = {"_meta": {"hostvars": {"n1": {alias: "s3cr3t", **KEPT}}}, "all": {"hosts": ["n1"]}}
    own = pull.node_inventory(listing, "n1")["all"]["hosts"]["n1"]
    assert alias not in own, own
    assert "s3cr3t" not in repr(own)
    assert own == {**KEPT, "ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}


def test_the_stripped_names_come_from_ansible_s_own_plugins() -> None:
    """The sudo and su become plugins and the ssh and paramiko connection plugins name these: ansible-core's
    documentation of them is read, so a new alias there is stripped without a change here."""
    names = pull.controller_variables()
    assert {"ansible_sudo_pass", "ansible_su_pass", "ansible_paramiko_pass", "ansible_ssh_private_key"} <= names
    assert not {"ansible_become_user", "ansible_become_method", "ansible_pipelining", "inventory_hostname"} & names
