"""Run ansible-playbook against the lab and read its PLAY RECAP (shared by the integration tests)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass(frozen=True)
class PlaybookRun:
    rc: int
    output: str
    seconds: float

    def recap(self) -> dict[str, dict[str, int]]:
        return {m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]), "failed": int(m[5])}
                for m in RECAP.finditer(self.output)}

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


def run_playbook(inventory: Path, playbook_path: Path, *args: str, timeout_s: int = 900) -> PlaybookRun:
    """ansible-playbook on any playbook file, with the project's ansible.cfg."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(playbook_path), *args]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0"}
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    return PlaybookRun(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


def playbook(inventory: Path, playbook_name: str, *args: str, extra: dict | None = None,
             timeout_s: int = 1800) -> PlaybookRun:
    """One of playbooks/ by name, with extra variables as one JSON -e."""
    extra_args = ["-e", json.dumps(extra)] if extra else []
    return run_playbook(inventory, ROOT / "playbooks" / playbook_name, *args, *extra_args, timeout_s=timeout_s)
