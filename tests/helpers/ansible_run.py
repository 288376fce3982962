"""Run ansible-playbook against the lab and read its PLAY RECAP (shared by the integration tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from validation import recap
from validation.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class PlaybookRun:
    rc: int
    output: str
    seconds: float

    def recap(self) -> dict[str, dict[str, int]]:
        return recap.counts(self.output)

    def changed(self) -> int:
        return sum(h["changed"] for h in self.recap().values())

    def changed_tasks(self) -> list[str]:
        """'TASK name -> host' for every task that reported a change (for assertion messages)."""
        out, task = [], ""
        for line in self.output.splitlines():
            if line.startswith(("TASK [", "RUNNING HANDLER [")):
                task = line.split("[", 1)[1].rsplit("]", 1)[0]
            elif line.startswith("changed: ["):
                out.append(f"{task} -> {line.split('[', 1)[1].split(']', 1)[0]}")
        return out

    def task_hosts(self, name: str) -> set[str]:
        """The hosts on which the task (or handler) of that name ran rather than being skipped."""
        out, current = set(), ""
        for line in self.output.splitlines():
            if line.startswith(("TASK [", "RUNNING HANDLER [")):
                current = line.split("[", 1)[1].rsplit("]", 1)[0]
            elif current == name and line.startswith(("ok: [", "changed: [", "failed: [", "fatal: [")):
                out.add(line.split("[", 1)[1].split("]", 1)[0])
        return out

    def tasks_run(self) -> set[str]:
        """The tasks (and handlers) that ran a module or an action on some host, rather than being skipped."""
        out, task = set(), ""
        for line in self.output.splitlines():
            if line.startswith(("TASK [", "RUNNING HANDLER [")):
                task = line.split("[", 1)[1].rsplit("]", 1)[0]
            elif line.startswith(("ok: [", "changed: [", "failed: [", "fatal: [")):
                out.add(task)
        return out


def _env() -> dict[str, str]:
    return {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0"}


def adhoc(module: str, args: dict, *, path_first: Path | None = None, check: bool = False, ok: bool = True,
          connection: str = "local", env: dict[str, str] | None = None) -> dict:
    """The result of one run of the collection's module or action plugin `module` on this machine
    (`ansible localhost -o`, through the local connection or `connection`); `path_first` goes first on PATH
    (stand-in commands). The implicit localhost names its connection in a variable, which only -e overrides."""
    env = {**_env(), **({"PATH": f"{path_first}:{os.environ['PATH']}"} if path_first else {}), **(env or {})}
    proc = subprocess.run([str(BIN / "ansible"), "localhost", "-e", f"ansible_connection={connection}",
                           "-e", f"ansible_python_interpreter={sys.executable}", "-o",
                           "-m", f"rocm_fleet.fleet.{module}", "-a", json.dumps(args), *(["--check"] if check else [])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert (proc.returncode == 0) == ok, proc.stdout[-2000:] + proc.stderr[-2000:]
    if proc.stdout.startswith("localhost | SKIPPED"):         # -o prints no result for a skipped task
        return {"skipped": True}
    return json.loads(proc.stdout.split(" => ", 1)[1])          # -o: "localhost | CHANGED => {...}"


def run_playbook(inventory: Path, playbook_path: Path, *args: str, timeout_s: int = 900) -> PlaybookRun:
    """ansible-playbook on any playbook file, with the project's ansible.cfg."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(playbook_path), *args]
    env = _env()
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    return PlaybookRun(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


def converge_in_slices(inventory: Path, log_dir: Path, shards: int, *args: str, pull: bool = False,
                       timeout_s: int = 1800) -> PlaybookRun:
    """`rocm-fleet converge`: site.yml (pull.yml with `pull`) in `shards` ansible-playbook processes at once;
    the output is every slice's log followed by the command's own (merged recap, one line per slice)."""
    argv = [str(BIN / "rocm-fleet"), "converge", "-i", str(inventory), "--shards", str(shards),
            "--out", str(log_dir), *(["--pull"] if pull else []), *(["--", *args] if args else [])]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout_s, check=False)
    logs = "".join(path.read_text() for path in sorted(log_dir.glob("shard-*.log")))
    return PlaybookRun(proc.returncode, logs + proc.stdout + proc.stderr, time.monotonic() - start)


def playbook(inventory: Path, playbook_name: str, *args: str, extra: dict | None = None,
             timeout_s: int = 1800) -> PlaybookRun:
    """One of playbooks/ by name, with extra variables as one JSON -e."""
    extra_args = ["-e", json.dumps(extra)] if extra else []
    return run_playbook(inventory, ROOT / "playbooks" / playbook_name, *args, *extra_args, timeout_s=timeout_s)


def playbook_acting(inventory: Path, playbook_name: str, *args: str, extra: dict | None = None, when: str,
                    act: Callable[[], None], timeout_s: int = 2400) -> PlaybookRun:
    """playbook() that calls `act` once, in a thread, as soon as a line of the output starts with `when`
    (e.g. stop a host while a given task runs); fails when no line does."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(ROOT / "playbooks" / playbook_name), *args,
            *(["-e", json.dumps(extra)] if extra else [])]
    start, output, acting = time.monotonic(), [], None
    with subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if acting is None and line.startswith(when):
                acting = threading.Thread(target=act)
                acting.start()
            assert time.monotonic() - start < timeout_s, f"{playbook_name} did not finish in {timeout_s} s"
        rc = proc.wait(timeout=60)
    if acting is not None:
        acting.join(timeout=300)
    assert acting is not None, f"no line started with {when!r}: {''.join(output)[-3000:]}"
    return PlaybookRun(rc, "".join(output), time.monotonic() - start)


@contextmanager
def provisioned_lab(name: str, hosts: int, *, port_base: int | None, inventory: Path,
                    extra: dict) -> Iterator[Lab]:
    """A lab with the mirror, converged by site.yml with `extra`; removed afterwards, also on failure."""
    with Lab(name, hosts, mirror=True, port_base=port_base, inventory_path=inventory) as lab:
        site = playbook(inventory, "site.yml", extra=extra, timeout_s=2400)
        assert site.rc == 0, site.output[-5000:]
        yield lab
