"""`rocm-fleet validate --hosts ansible://GROUP` checks the hosts side by side (issue 20).

The real command, the real checks and testinfra's real ssh:// backend, from an inventory, as an
operator runs them; only `ssh` is a fake (a script first on PATH): there are no SSH servers in a unit
test, so it runs the remote command on this machine after a fixed delay that stands for the round
trip and the command's own time, logs when each command ran and for which host, and can play a
host that refuses connections (ssh exits 255) or one that never answers. The delay makes a host's
checks cost seconds, so one host after another would take N times one host; side by side takes
about one host's time. On the lab the same run goes over real SSH (tests/integration, not run here).

Five hosts: n1-n3 answer, n4 refuses connections, n5 hangs on its first command. The run is stopped
by --timeout; the three good hosts must be finished and complete long before that.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_ssh import FAKE_SSH

from validation.report import load_run

INVENTORY = """all:
  children:
    gpu_nodes:
      hosts: {n1: {}, n2: {}, n3: {}, n4: {}, n5: {}}
      vars:
        ansible_connection: ssh
        validation_gpu_count: 0
        node_tuning_state: absent
        gpu_access_state: absent
        env_profiles_state: absent
"""

GOOD = ("n1", "n2", "n3")
TIMEOUT_S = 45
DELAY_S = 0.25


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("parallel")
    (tmp / "bin").mkdir()
    ssh = tmp / "bin" / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(ssh.stat().st_mode | stat.S_IXUSR)
    (tmp / "inventory.yml").write_text(INVENTORY)
    log = tmp / "ssh.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PATH=f"{tmp / 'bin'}{os.pathsep}{env.get('PATH', '')}", FAKE_SSH_LOG=str(log),
               FAKE_SSH_DELAY=str(DELAY_S), FAKE_SSH_DOWN="n4", FAKE_SSH_HANG="n5")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "-i", str(tmp / "inventory.yml"),
                           "--hosts", "ansible://gpu_nodes", "--tier", "smoke", "--no-gpu", "--forks", "8",
                           "--timeout", str(TIMEOUT_S), "--results", str(tmp / "r")],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S + 120, check=False)
    wall = time.monotonic() - started
    commands: dict[str, list[tuple[float, float]]] = {}
    for line in log.read_text().splitlines():
        host, start, end = line.split()
        commands.setdefault(host, []).append((float(start), float(end)))
    return {"rc": proc.returncode, "out": proc.stdout + proc.stderr, "wall": wall, "dir": tmp / "r",
            "commands": commands}


def test_the_run_fails_and_is_stopped_by_its_timeout_not_before(fleet_run: dict) -> None:
    assert fleet_run["rc"] == 1, fleet_run["out"][-3000:]
    assert f"validation stopped after {TIMEOUT_S} s" in fleet_run["out"]
    assert fleet_run["wall"] < TIMEOUT_S + 30             # TERM reached the workers and the hanging ssh


def test_the_answering_hosts_ran_side_by_side(fleet_run: dict) -> None:
    commands = fleet_run["commands"]
    assert sorted(commands) == list(GOOD)                 # n4 refused every command, n5 never finished one
    windows = {h: (min(s for s, _ in c), max(e for _, e in c)) for h, c in commands.items()}
    longest = max(end - start for start, end in windows.values())
    all_of_them = max(e for _, e in windows.values()) - min(s for s, _ in windows.values())
    # each host's commands take seconds (len x DELAY_S); one after another the three would take 3x
    assert longest >= len(commands["n1"]) * DELAY_S
    assert max(s for s, _ in windows.values()) < min(e for _, e in windows.values()), windows
    assert all_of_them < 1.8 * longest, (all_of_them, longest)


def test_every_host_has_its_own_valid_documents(fleet_run: dict) -> None:
    results: Path = fleet_run["dir"]
    docs = {d["host"]: d for d in load_run(results)}    # the schema-checked loader the report uses
    assert sorted(docs) == ["n1", "n2", "n3", "n4", "n5"]
    ids = {h: [c["id"] for c in d["checks"]] for h, d in docs.items()}
    for host in GOOD:
        assert docs[host]["complete"] is True
        assert ids[host] == ids["n1"] and len(set(ids[host])) == len(ids[host])   # its checks, each once
        assert all(c["status"] in ("pass", "skip") for c in docs[host]["checks"]), host
        progress = json.loads((results / f"progress-{host}.json").read_text())
        assert (progress["node"], progress["state"], progress["done"]) == (host, "finished", progress["total"])


def test_a_host_refusing_connections_fails_alone_once_with_sshs_reason(fleet_run: dict) -> None:
    """Issue 32: each of its checks failed on a command that never ran (37 raw CommandResult reprs a
    node); now one RF-NODE-UNREACHABLE with ssh's own line, the rest skipped."""
    doc = next(d for d in load_run(fleet_run["dir"]) if d["host"] == "n4")
    assert doc["complete"] is True
    (failing,) = [c for c in doc["checks"] if c["status"] in ("fail", "error")]
    assert failing["code"] == "RF-NODE-UNREACHABLE"
    assert failing["message"] == "n4 does not answer over SSH: ssh: connect to host n4 port 22: Connection refused"
    others = [c for c in doc["checks"] if c is not failing]
    assert len(others) > 20 and all(c["status"] == "skip" and "RF-NODE-UNREACHABLE" in c["message"] for c in others)
    assert "CommandResult" not in fleet_run["out"]


def test_a_hanging_host_is_left_unfinished_and_holds_nobody_else(fleet_run: dict) -> None:
    doc = next(d for d in load_run(fleet_run["dir"]) if d["host"] == "n5")
    assert doc["complete"] is False
    progress = json.loads((fleet_run["dir"] / "progress-n5.json").read_text())
    assert (progress["state"], progress["done"]) == ("running", 0)
