"""The node side of the GPU watcher: run the activity views at a steady interval, append what they print.

Runs on the node as a script of its own (`python3 watch_sampler.py CONFIG`), standard library
only, so a node needs nothing but Python to be watched and the controller pays no SSH round trip
per sample. It understands none of the views: each tick appends one JSON line with the time,
each command's exit status and output, the commands' own process ids, and the process ids that
belong to the run (the owner process and its descendants, read before and after the views ran,
so a probe that started or ended meanwhile is still known). validation/probes/gpu_watch.py parses
and judges the lines.

A tick file (config "tick") that appears makes the next tick start at once instead of at the interval:
the reader asks for a sample of "now" (the run's first moment, the post-flight's last) without waiting
up to an interval for it.

It stops when the stop file appears, when the owner process is gone, or at the deadline, whichever
comes first: a run that is killed leaves no sampler behind for longer than one interval (local) or
the deadline (a remote node, whose owner is on the controller).

CONFIG (JSON): {"interval_s": 1.0, "out": PATH, "stop": PATH, "tick": PATH, "deadline": EPOCH, "owner_pid": PID|null,
"timeout_s": 10, "commands": {"gpus": ARGV, "processes": ARGV}}
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

LIMIT = 4 << 20     # characters of one view kept per tick; a longer one is cut and marked (the reader refuses it)
STEP_S = 0.1        # how often the stop file and the owner are looked at while waiting for the next tick


def parents(root: Path = Path("/proc")) -> dict[int, int]:
    """pid -> parent pid of every process, from /proc/<pid>/stat."""
    out = {}
    for entry in root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        out[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])   # the name may hold spaces and ')'
    return out


def descendants(owner: int | None, root: Path = Path("/proc")) -> set[int]:
    """`owner` and every process descended from it; empty without an owner."""
    if owner is None:
        return set()
    parent = parents(root)
    mine = {owner}
    grew = True
    while grew:
        before = len(mine)
        mine |= {pid for pid, ppid in parent.items() if ppid in mine}
        grew = len(mine) != before
    return mine


def alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run(argv: list[str], timeout_s: float) -> tuple[dict, int | None]:
    """One view: its start time, exit status and output (undecodable bytes replaced: a process name
    is anyone's choice, and it must not stop the sampler)."""
    started = time.time()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, errors="replace")
    except OSError as exc:
        return {"t": started, "rc": None, "out": "", "err": str(exc)}, None
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return {"t": started, "rc": None, "out": "", "err": f"timed out after {timeout_s:g} s"}, proc.pid
    view = {"t": started, "rc": proc.returncode, "out": out[:LIMIT], "err": err[-2000:]}
    if len(out) > LIMIT:
        view.update(rc=None, err=f"the view is longer than {LIMIT} characters; cut")
    return view, proc.pid


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    interval = float(config["interval_s"])
    owner = config.get("owner_pid")
    commands = config["commands"]
    stop = Path(config["stop"])
    tick_now = Path(config["tick"]) if config.get("tick") else None
    deadline = float(config["deadline"])
    Path(config["out"]).with_name("pid").write_text(f"{os.getpid()}\n")

    def go_on() -> bool:
        return time.time() < deadline and not stop.exists() and alive(owner)

    with Path(config["out"]).open("a") as out:
        while go_on():
            start = time.time()
            try:
                ours = descendants(owner)
                tick: dict = {"t": start, "views": {}, "tool_pids": []}
                for key, argv in commands.items():
                    tick["views"][key], pid = run(argv, float(config.get("timeout_s", 10)))
                    if pid is not None:
                        tick["tool_pids"].append(pid)
                tick["ours"] = sorted((ours | descendants(owner)) - {os.getpid()})
            except Exception as exc:
                tick = {"t": start, "views": {}, "tool_pids": [], "ours": [], "error": repr(exc)[:500]}
            tick["took_s"] = round(time.time() - start, 4)
            out.write(json.dumps(tick) + "\n")
            out.flush()
            while go_on() and time.time() - start < interval:
                if tick_now is not None and tick_now.exists():
                    tick_now.unlink(missing_ok=True)
                    break
                time.sleep(min(STEP_S, max(0.0, interval - (time.time() - start))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
