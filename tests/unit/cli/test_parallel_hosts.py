"""Hosts side by side from the controller (issue 20): pytest-xdist workers get whole hosts.

The scheduling is tested end to end in a real pytest run with real xdist workers over testinfra
`ssh://` hosts that are never contacted (the tests only record which process ran them: testinfra
connects on the first command, and none is sent). The real checks through `rocm-fleet validate`,
with their results documents and progress files, hosts failing and hanging, and the time side by
side: tests/unit/cli/test_parallel_validate.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from validation.checks.xdist_hosts import host_of
from validation.results import progress

SUITE = '''
import json, os, pytest

@pytest.mark.parametrize("gpu", range(3))
def test_b_per_gpu(host, gpu):
    record(host, f"b{gpu}")

def test_a_first(host):
    record(host, "a")

def test_c_last(host):
    record(host, "c")

def record(host, what):
    with open(os.environ["RUNS_LOG"], "a") as log:
        log.write(json.dumps([host.backend.get_pytest_id(), what, os.getpid(),
                              os.environ.get("PYTEST_XDIST_WORKER")]) + "\\n")
'''


def run_suite(tmp_path: Path, hosts: list[str], *extra: str) -> list[tuple[str, str, int, str | None]]:
    (tmp_path / "test_suite.py").write_text(SUITE)
    log = tmp_path / "runs.jsonl"
    log.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(tmp_path / "test_suite.py"), f"--hosts={','.join(hosts)}", *extra],
                          cwd=tmp_path, env={**_env(), "RUNS_LOG": str(log)}, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]  # type: ignore[misc]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


HOSTS = ["ssh://n1", "ssh://n1-b", "ssh://n2", "ssh://n3"]       # n1 is a prefix of n1-b: ids must not mix


def test_every_host_runs_whole_in_one_worker_and_the_hosts_side_by_side(tmp_path: Path) -> None:
    runs = run_suite(tmp_path, HOSTS, "-n", "auto")
    by_host: dict[str, list[tuple[str, int, str | None]]] = {}
    for host, what, pid, worker in runs:
        by_host.setdefault(host, []).append((what, pid, worker))
    assert sorted(by_host) == HOSTS
    for host, done in by_host.items():
        assert len({pid for _, pid, _ in done}) == 1, f"{host} ran in several processes: {done}"
        assert all(worker for _, _, worker in done), f"{host} ran outside a worker"
        assert [what for what, _, _ in done] == ["b0", "b1", "b2", "a", "c"], f"{host} ran out of order"
    assert len({pid for _, _, pid, _ in runs}) == 4            # a worker per host


def test_at_most_the_asked_number_of_workers(tmp_path: Path) -> None:
    runs = run_suite(tmp_path, HOSTS, "-n", "auto", "--rf-forks=2")
    assert len({pid for _, _, pid, _ in runs}) == 2
    assert {host: len({pid for h, _, pid, _ in runs if h == host}) for host in HOSTS} == dict.fromkeys(HOSTS, 1)


def test_a_single_host_runs_in_one_process_without_workers(tmp_path: Path) -> None:
    runs = run_suite(tmp_path, ["ssh://n1"], "-n", "auto")
    assert {worker for *_, worker in runs} == {None} and len(runs) == 5


def test_without_xdist_everything_runs_in_one_process(tmp_path: Path) -> None:
    runs = run_suite(tmp_path, HOSTS, "-p", "no:xdist")
    assert len({pid for _, _, pid, _ in runs}) == 1 and len(runs) == 20


@pytest.mark.parametrize(("nodeid", "host"), [
    ("t.py::test_x[ssh://n1]", "ssh://n1"),
    ("t.py::test_x[ssh://n1-b]", "ssh://n1-b"),
    ("t.py::test_x[ssh://n1-b-gpu3]", "ssh://n1-b"),
    ("t.py::test_x[ssh://n1-gpu3]", "ssh://n1"),
    ("t.py::test_x[ssh://n11]", None),
    ("t.py::test_x", None),
])
def test_a_test_belongs_to_the_longest_host_id_its_parameters_start_with(nodeid: str, host: str | None) -> None:
    ids = sorted(HOSTS, key=len, reverse=True)
    assert host_of(nodeid, ids) == host


def test_a_worker_writes_and_closes_only_the_progress_of_the_nodes_it_ran(tmp_path: Path) -> None:
    checks = {"n1": [("t.py::a[ssh://n1]", "t.py::a", "smoke")], "n2": [("t.py::a[ssh://n2]", "t.py::a", "smoke")]}
    book = progress.start_book(tmp_path, checks, tier="smoke", only_started=True)
    assert not list(tmp_path.glob("progress-*.json"))              # nothing until a node's first check
    book.start("t.py::a[ssh://n1]")
    book.finish("t.py::a[ssh://n1]")
    book.close()
    assert [p.name for p in tmp_path.glob("progress-*.json")] == ["progress-n1.json"]
    assert json.loads((tmp_path / "progress-n1.json").read_text())["state"] == "finished"
    everything = progress.start_book(tmp_path / "one", checks, tier="smoke")
    everything.close()                                              # one process owns every node
    assert sorted(p.name for p in (tmp_path / "one").glob("progress-*.json")) == ["progress-n1.json",
                                                                                  "progress-n2.json"]


@pytest.mark.parametrize(("hosts", "forks", "argv"), [
    ("ansible://gpu_nodes", 16, ["-p", "xdist.plugin", "-n", "auto", "--rf-forks=16"]),
    ("ssh://n1,ssh://n2", 4, ["-p", "xdist.plugin", "-n", "auto", "--rf-forks=4"]),
    ("ansible://gpu_nodes", 1, []),            # one host after another, one process
    ("local://", 16, []),                      # one node, checked where it runs
])
def test_validate_asks_pytest_for_a_worker_per_host_up_to_forks(hosts: str, forks: int, argv: list[str]) -> None:
    from validation.commands.validate import parallel_argv

    assert parallel_argv(hosts, forks) == argv


def test_forks_below_one_is_refused() -> None:
    import argparse

    from validation.commands.validate import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert parser.parse_args(["validate", "--forks", "3"]).forks == 3
    assert parser.parse_args(["validate"]).forks == 16
    with pytest.raises(SystemExit):
        parser.parse_args(["validate", "--forks", "0"])
