"""What playbooks/pull.yml gives a node: a reproducible bundle of the checkout and the node's own inventory."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from validation import pull, recap

ROOT = Path(__file__).resolve().parents[3]


def git_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "playbooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text(".ansible/\n")
    (root / "playbooks" / "site.yml").write_text("---\n")
    (root / "playbooks" / "run.sh").write_text("#!/bin/sh\n")
    (root / "playbooks" / "run.sh").chmod(0o755)
    (root / "playbooks" / "gone.yml").write_text("x\n")
    (root / "collections").mkdir()
    (root / "collections" / "fleet").symlink_to("..")
    (root / "inventories" / "prod").mkdir(parents=True)
    (root / "inventories" / "prod" / "hosts.yml").write_text("all: {}\n")        # tracked, never shipped
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("\n")                             # tracked, not for a node
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "x"],
                   check=True)
    (root / "playbooks" / "gone.yml").unlink()                # deleted, not yet committed
    (root / "playbooks" / "new.yml").write_text("uncommitted\n")     # untracked, not ignored: not shipped
    for secret in ("inventories/prod/group_vars/all.yml", "playbooks/token"):  # what the issue saw shipped
        (root / secret).parent.mkdir(parents=True, exist_ok=True)
        (root / secret).write_text("vault_token: s3cr3t\n")
        (root / secret).chmod(0o600)
    (root / ".ansible").mkdir()
    (root / ".ansible" / "facts").write_text("cache\n")       # ignored
    return root


def test_the_bundle_holds_the_tracked_files_a_node_runs_and_is_the_same_bytes_twice(tmp_path: Path) -> None:
    root = git_checkout(tmp_path)
    files = pull.checkout_files(root)
    assert files == ["collections/fleet", "playbooks/run.sh", "playbooks/site.yml"]
    for out in ("one", "two"):
        (tmp_path / out).mkdir()
        pull.write_checkout(root, files, tmp_path / out)
        os.utime(root / "playbooks" / "site.yml", (1, 1))     # the clock never reaches the bytes
    one, two = ((tmp_path / out / pull.CHECKOUT).read_bytes() for out in ("one", "two"))
    assert hashlib.sha256(one).digest() == hashlib.sha256(two).digest()
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(one))) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["playbooks/run.sh"].mode == 0o755 and members["playbooks/site.yml"].mode == 0o644
    assert members["collections/fleet"].issym() and members["collections/fleet"].linkname == ".."
    assert {m.uid for m in members.values()} == {0}


def test_the_bundles_directories_are_the_controller_users_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = git_checkout(tmp_path)
    monkeypatch.setattr(pull, "build", lambda root, files, into, requirement: pull.write_checkout(root, files, into))
    monkeypatch.setattr(pull, "complete", lambda target: (target / pull.CHECKOUT).is_file())
    base = tmp_path / "bundles"
    base.mkdir(mode=0o755)
    path, built = pull.ensure(root, base)
    assert built and base.stat().st_mode & 0o777 == 0o700 and path.stat().st_mode & 0o777 == 0o700


def test_the_digest_follows_contents_executable_bits_links_and_the_ansible_pin(tmp_path: Path) -> None:
    root = git_checkout(tmp_path)

    def now(requirement: str = "ansible-core==2.19.14") -> str:
        return pull.digest(root, pull.checkout_files(root), requirement)

    first = now()
    assert now("ansible-core==2.19.15") != first
    run = root / "playbooks" / "run.sh"
    run.chmod(0o644)
    assert now() != first
    run.chmod(0o755)
    assert now() == first
    (root / ".ansible" / "facts").write_text("other cache\n")        # ignored files are not the checkout
    (root / "playbooks" / "new.yml").write_text("changed\n")          # untracked: not the nodes' business
    assert now() == first
    (root / "playbooks" / "site.yml").write_text("--- # changed, not committed\n")
    assert now() != first


def test_a_directory_that_is_not_a_git_checkout_is_refused_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "validation.pull", "--root", str(tmp_path), "--dir",
                           str(tmp_path / "b"), "-i", str(tmp_path / "inv.yml"), "node1"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("pull: ") and "not a git checkout" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


LISTING = {
    "_meta": {"hostvars": {
        "n1": {"ansible_host": "10.0.0.1", "ansible_port": 2201, "ansible_user": "ops",
               "ansible_ssh_private_key_file": "/k", "ansible_ssh_common_args": "-o X=1",
               "ansible_become_password": "secret", "ansible_python_interpreter": "/usr/bin/python3.11",
               "rocm_version": "6.4.1", "node_tuning_thp_enabled": "always"},
        "n2": {"rocm_version": "6.4.1"}}},
    "all": {"children": ["ungrouped", "gpu_nodes"]},
    "gpu_nodes": {"children": ["rack1"]},
    "rack1": {"children": ["mi300x"], "hosts": ["n2"]},
    "mi300x": {"hosts": ["n1"]},
    "other": {"hosts": ["n2"]},
}


def test_a_node_inventory_keeps_its_variables_and_groups_and_connects_locally() -> None:
    doc = pull.node_inventory(LISTING, "n1")
    assert doc["all"]["hosts"] == {"n1": {"rocm_version": "6.4.1", "node_tuning_thp_enabled": "always",
                                          "ansible_connection": "local",
                                          "ansible_python_interpreter": "/usr/bin/python3"}}
    assert doc["all"]["children"] == {name: {"hosts": {"n1": None}} for name in ("gpu_nodes", "mi300x", "rack1")}
    assert sorted(pull.node_inventory(LISTING, "n2")["all"]["children"]) == ["gpu_nodes", "other", "rack1"]


def test_a_host_missing_from_the_inventory_is_refused() -> None:
    with pytest.raises(pull.PullError, match="n9 is not in the inventory"):
        pull.node_inventory(LISTING, "n9")


OUTPUT = """TASK [x] ***
changed: [n1]

PLAY RECAP *********************************************************************
n1                         : ok=129  changed=2    unreachable=0    failed=0    skipped=51   rescued=0    ignored=0
node-2.example.com         : ok=3    changed=0    unreachable=1    failed=1    skipped=0    rescued=0    ignored=0
"""


def test_the_play_recap_is_read_per_host_and_only_from_the_last_recap() -> None:
    assert recap.counts(OUTPUT) == {
        "n1": {"ok": 129, "changed": 2, "unreachable": 0, "failed": 0, "skipped": 51, "rescued": 0, "ignored": 0},
        "node-2.example.com": {"ok": 3, "changed": 0, "unreachable": 1, "failed": 1, "skipped": 0, "rescued": 0,
                               "ignored": 0}}
    assert len(recap.lines(OUTPUT)) == 2
    assert recap.counts("n1 : ok=1 changed=1 unreachable=0 failed=0\n") == {}      # no PLAY RECAP: none
    assert recap.counts("PLAY RECAP\n" + OUTPUT)["n1"]["changed"] == 2


REFUSED = ROOT / "tests/fixtures/real/ansible-playbook/lab-debian13-self-converge-refused-rocm500.txt"


def test_a_failed_run_gives_each_failure_s_reason_on_one_line() -> None:
    text = REFUSED.read_text()
    (reason,) = recap.failures(text)
    assert reason.startswith("Refusing to change rfbench-1: ROCm 5.0.0 is not supported")
    assert reason.endswith("add a site-qualified row with its source to rocm_repo_compat_extra.")
    assert "Origin:" not in reason and "\n" not in reason
    assert recap.counts(text)["rfbench-1"]["failed"] == 1


def test_without_an_error_line_the_yaml_result_block_is_the_reason() -> None:
    # Older ansible-core prints no [ERROR] line; derived here from the real output by dropping it.
    text = "\n".join(row for row in REFUSED.read_text().splitlines() if not row.startswith("[ERROR]"))
    (reason,) = recap.failures(text)
    assert reason.startswith("fatal: [rfbench-1]: FAILED! => assertion: __problems | length == 0")
    assert "msg: 'Refusing to change rfbench-1: ROCm 5.0.0" in reason and "rocm_repo_compat_extra.'" in reason
    assert recap.failures(OUTPUT) == []
