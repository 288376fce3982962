"""A stand-in `scontrol` for the health mode's unit tests (`rocm-fleet health --slurm`).

MOCK, said plainly: no Slurm runs on this machine (the real Slurm 24.11 is in tests/integration). The
stand-in keeps one node's state and reason in a JSON file. `scontrol show node NAME` prints a real output,
tests/fixtures/real/scontrol/gentoo-cu201-jxliu-blog-show-node-idle-drain-low-realmemory-20.11.txt
(Slurm 20.11.0), with the minimal edit another node in another state shows: the values of NodeName= and
State= replaced, and the Reason= line's text replaced (the line left out when the node has no reason).
`scontrol update ...` is logged (its argv) and applied: State=DRAIN sets +DRAIN and the reason,
State=RESUME clears both. `squeue` prints the node's jobs as `JOBID|STATE|USER` lines, the format
validation/slurm.py asks for (a real lab capture of that format: tests/integration/test_remediate.py).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "scontrol"
           / "gentoo-cu201-jxliu-blog-show-node-idle-drain-low-realmemory-20.11.txt")

SCONTROL = textwrap.dedent("""\
    import json, os, re, sys
    path = os.environ["STANDIN_SLURM"]
    node = json.load(open(path))
    args = sys.argv[1:]
    if "show" in args:
        lines = [l for l in open(FIXTURE).read().splitlines() if not l.startswith("$ ")]
        out = []
        for line in lines:
            if line.strip().startswith("Reason="):
                if node["reason"]:
                    out.append(f"   Reason={node['reason']} [root@2022-05-18T17:20:20]")
                continue
            line = re.sub(r"^NodeName=\\S+", f"NodeName={args[-1]}", line)
            line = re.sub(r"(?<=CPUAlloc=)\\d+", str(node.get("cpus", 0)), line)
            out.append(re.sub(r"(?<=\\sState=)\\S+", node["state"], line))
        print("\\n".join(out))
        sys.exit(0)
    node["updates"].append(args)
    if "State=RESUME" in args:
        node["state"], node["reason"] = "IDLE", ""
    else:
        node["state"] = "IDLE+DRAIN"
        node["reason"] = next(a for a in args if a.startswith("Reason=")).removeprefix("Reason=")
    json.dump(node, open(path, "w"))
    """)
SQUEUE = textwrap.dedent("""\
    import json, os, sys
    node = json.load(open(os.environ["STANDIN_SLURM"]))
    assert "--all" in sys.argv and "--format=%A|%T|%u" in sys.argv, sys.argv
    for job in node.get("jobs", []):
        print(job)
    """)


class StandinSlurm:
    """The node the stand-in shows, and the updates it was given."""

    def __init__(self, state_file: Path) -> None:
        self.state_file = state_file

    def set_node(self, state: str, reason: str = "", jobs: tuple[str, ...] = (), cpus: int = 0) -> None:
        """The node as Slurm shows it; `jobs` as squeue lists them (`JOBID|STATE|USER`)."""
        self.state_file.write_text(json.dumps({"state": state, "reason": reason, "updates": [], "jobs": list(jobs),
                                               "cpus": cpus}))

    def node(self) -> dict:
        return json.loads(self.state_file.read_text())

    @property
    def updates(self) -> list[list[str]]:
        return self.node()["updates"]


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandinSlurm:
    """Put the stand-in `scontrol` and `squeue` first on PATH (for this process and the ones it starts)."""
    bin_dir = tmp_path / "standin-bin"
    bin_dir.mkdir()
    for name, text in (("scontrol", SCONTROL), ("squeue", SQUEUE)):
        script = bin_dir / name
        script.write_text(f"#!{sys.executable}\nFIXTURE = {str(FIXTURE)!r}\n{text}")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    standin = StandinSlurm(tmp_path / "standin-slurm.json")
    monkeypatch.setenv("STANDIN_SLURM", str(standin.state_file))
    standin.set_node("IDLE")
    return standin
