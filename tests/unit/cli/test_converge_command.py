"""`rocm-fleet converge`: site.yml in slices, all at once, one verdict.

ansible and ansible-playbook are stand-ins here (scripts that list hosts and print a PLAY RECAP after
half a second): what is under test is the slicing, the running side by side, the merged recap and the
exit code. A real sharded converge of the lab runs in tests/integration/test_provision.py.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from validation.cli import main
from validation.commands import converge

FAKE_ANSIBLE = """#!{python}
import json, os, sys
hosts = json.load(open(os.environ["FAKE_HOSTS"]))
args = sys.argv[1:]
limits = [args[i + 1] for i, a in enumerate(args) if a == "--limit"]
chosen = [h for h in hosts if not limits or any(h.startswith(l.rstrip("*")) for l in limits)]
print(f"  hosts ({{len(chosen)}}):")
for h in chosen:
    print(f"    {{h}}")
"""
FAKE_PLAYBOOK = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
limit = args[args.index("--limit") + 1]
hosts = open(limit[1:]).read().split()
with open(os.environ["FAKE_CALLS"], "a") as calls:
    calls.write(json.dumps({{"hosts": hosts, "args": args, "start": time.time()}}) + "\\n")
if os.environ.get("FAKE_BROKEN"):
    print("ERROR! the playbook could not be parsed")
    sys.exit(5)
if os.environ.get("FAKE_TASK"):
    print("PLAY [Provision] *****", flush=True)
    print(f"TASK [{{os.environ['FAKE_TASK']}}] *****", flush=True)
    time.sleep(1.5)
time.sleep(0.5)
print("PLAY RECAP *****")
rc = 0
for h in hosts:
    failed = int(h.startswith("bad"))
    rc |= 2 * failed
    print(f"{{h}} : ok=10   changed=0    unreachable=0    failed={{failed}}    skipped=3    rescued=0    ignored=0")
sys.exit(rc)
"""


@pytest.fixture
def fake_ansible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in (("ansible", FAKE_ANSIBLE), ("ansible-playbook", FAKE_PLAYBOOK)):
        (tmp_path / name).write_text(text.format(python=sys.executable))
        (tmp_path / name).chmod(0o755)
    monkeypatch.setattr(converge, "tool", lambda name: str(tmp_path / name))
    monkeypatch.setenv("FAKE_CALLS", str(tmp_path / "calls.jsonl"))
    (tmp_path / "inventory.yml").write_text("all: {}\n")
    return tmp_path


def hosts(tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hosts.json").write_text(json.dumps(names))
    monkeypatch.setenv("FAKE_HOSTS", str(tmp_path / "hosts.json"))


def calls(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]


def test_slices_run_side_by_side_and_the_recap_names_every_host(fake_ansible: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    hosts(fake_ansible, [f"node{i}" for i in range(5)], monkeypatch)
    start = time.monotonic()
    rc = main(["converge", "-i", str(fake_ansible / "inventory.yml"), "--shards", "2", "--out",
               str(fake_ansible / "logs"), "--", "-e", "rocm_version=6.4.1"])
    took = time.monotonic() - start
    out = capsys.readouterr().out
    assert rc == 0, out
    made = calls(fake_ansible)
    assert sorted(c["hosts"] for c in made) == [["node0", "node2", "node4"], ["node1", "node3"]]
    assert all("rocm_fleet_hosts=gpu_nodes" in c["args"] and "rocm_version=6.4.1" in c["args"] for c in made)
    assert abs(made[0]["start"] - made[1]["start"]) < 0.4 and took < 2 * 0.5 + 1.0   # at once, not in turn
    assert [line.split()[0] for line in out.splitlines() if "changed=" in line] == [
        "node0", "node2", "node4", "node1", "node3"]
    assert "slice 1: 3 hosts, exit 0 (ok)" in out and "slice 2: 2 hosts, exit 0 (ok)" in out
    assert all(c["args"][2].endswith("playbooks/site.yml") for c in made)


def test_pull_gives_every_slice_the_playbook_whose_nodes_converge_themselves(
        fake_ansible: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    hosts(fake_ansible, ["n1", "n2", "n3"], monkeypatch)
    assert main(["converge", "-i", str(fake_ansible / "inventory.yml"), "--shards", "2", "--pull", "--out",
                 str(fake_ansible / "logs")]) == 0
    made = calls(fake_ansible)
    assert len(made) == 2 and all(c["args"][2].endswith("playbooks/pull.yml") for c in made)
    assert "(pull.yml) in 2 slices" in capsys.readouterr().out


def test_a_limit_narrows_the_hosts_sliced_and_is_not_passed_on(fake_ansible: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    hosts(fake_ansible, ["rack1-a", "rack1-b", "rack2-a"], monkeypatch)
    assert main(["converge", "-i", str(fake_ansible / "inventory.yml"), "--shards", "8", "--out",
                 str(fake_ansible / "logs"), "--", "--limit", "rack1*"]) == 0
    made = calls(fake_ansible)
    assert sorted(h for c in made for h in c["hosts"]) == ["rack1-a", "rack1-b"] and len(made) == 2
    assert all(c["args"].count("--limit") == 1 for c in made)        # only the slice's own @file


def test_a_failed_host_fails_the_run_and_a_slice_that_cannot_run_gives_no_verdict(
        fake_ansible: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    hosts(fake_ansible, ["good1", "bad1", "good2"], monkeypatch)
    inventory = str(fake_ansible / "inventory.yml")
    assert main(["converge", "-i", inventory, "--shards", "3", "--out", str(fake_ansible / "a")]) == 1
    assert "exit 2 (host failures)" in capsys.readouterr().out
    monkeypatch.setenv("FAKE_BROKEN", "1")
    assert main(["converge", "-i", inventory, "--shards", "3", "--out", str(fake_ansible / "b")]) == 2
    assert "exit 5 (could not run)" in capsys.readouterr().out


def test_bad_input_is_one_line_and_exit_2(fake_ansible: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    hosts(fake_ansible, [], monkeypatch)
    inventory = str(fake_ansible / "inventory.yml")
    assert main(["converge", "-i", inventory]) == 2
    assert "names no host" in capsys.readouterr().err
    assert main(["converge", "-i", inventory, "--", "-i", "other"]) == 2
    assert "converge's own -i" in capsys.readouterr().err
    assert main(["converge", "-i", str(fake_ansible / "missing.yml")]) == 2
    assert main(["converge", "-i", inventory, "--shards", "0"]) == 2
    assert not (fake_ansible / "calls.jsonl").exists()


def test_a_long_converge_says_where_each_slice_is_while_it_runs(fake_ansible: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # issue 44: `converge` was silent until every slice ended
    (fake_ansible / "hosts.json").write_text(json.dumps(["n1", "n2"]))
    monkeypatch.setenv("FAKE_HOSTS", str(fake_ansible / "hosts.json"))
    monkeypatch.setenv("FAKE_TASK", "rocm : Install the \x1b[31mROCm packages")
    monkeypatch.setattr(converge, "PROGRESS_S", 0.5)
    assert main(["converge", "-i", str(fake_ansible / "inventory.yml"), "--shards", "2", "--out",
                 str(fake_ansible / "logs")]) == 0
    progress = [line for line in capsys.readouterr().out.splitlines()
                if line.startswith("rocm-fleet: ") and " s: " in line]
    assert progress, "no progress line"
    assert "slice 1 at TASK [rocm : Install the ROCm packages]" in progress[0], progress   # escapes left out
    assert "slice 2 at TASK [" in progress[0] and "\x1b" not in "".join(progress)
