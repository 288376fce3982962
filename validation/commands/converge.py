"""`rocm-fleet converge -i INVENTORY [--shards N] [--pull] [-- ANSIBLE-PLAYBOOK OPTIONS]`: playbooks/site.yml
over many hosts on every controller core.

ansible-playbook runs every host's tasks through one main process, so a converge of hundreds of hosts
is bound by one core however many forks it has. This runs N ansible-playbook processes, each over its
own slice of the targeted hosts (`--limit @FILE`), all at once; each host still gets the whole
playbook (preflight before any change, one reboot at most), and `rocm_fleet_serial` batches apply
within each slice. Each slice's output goes to its own log; the command prints one PLAY RECAP line per
host, then one line per slice. Exit 0 when every slice succeeded, 1 when a host failed or was
unreachable, 2 when a slice could not run (bad options, an inventory or playbook error, interrupted).
With --pull the slices run playbooks/pull.yml instead: each node converges itself from the pinned
bundle (built once, whichever slice comes first) and the controller only installs and waits.
Only site.yml or pull.yml: upgrade.yml's failure budget and validate.yml's one fleet report span all
hosts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from validation import recap
from validation.commands._options import deprecated
from validation.errors import RocmFleetError
from validation.parsers._text import printable
from validation.runner import environment_tool

ROOT = Path(__file__).resolve().parents[2]
# ansible-playbook's exit codes (ansible.errors.ExitCode): bit 2 a host failed, bit 4 a host unreachable,
# both from a run that reached its PLAY RECAP; 4 is also a parser error, which has no recap. The rest
# (1 error, 5 bad options, 99 interrupted, 250 unexpected) mean the slice gave no verdict.
HOST_BITS = 2 | 4
PROGRESS_S = 15.0          # a line saying where each slice is, this often while they run (a converge takes minutes)
TAIL_BYTES = 16384         # of a slice's log, read to find its current task


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("converge", help="run site.yml over many hosts on every controller core (sharded)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-i", "--inventory", type=Path, required=True, help="Ansible inventory (file or directory)")
    p.add_argument("--hosts", default="gpu_nodes", metavar="PATTERN",
                   help="inventory pattern to converge (site.yml's rocm_fleet_hosts; default gpu_nodes)")
    p.add_argument("--shards", type=_positive, default=None, metavar="N",
                   help="ansible-playbook processes at once (default: the controller's CPUs, at most one per host)")
    p.add_argument("--pull", action="store_true",
                   help="nodes converge themselves (playbooks/pull.yml) instead of the controller running site.yml")
    p.add_argument("--out", dest="log_dir", type=Path, default=None, metavar="DIR",
                   help="where each slice's output goes (default results/converge-<UTC stamp>/)")
    deprecated(p, "--log-dir", "--out", "log_dir", type=Path)
    p.add_argument("playbook_args", nargs=argparse.REMAINDER, metavar="-- OPTIONS",
                   help="passed to every ansible-playbook after --, e.g. -- -e rocm_version=6.4.1 --check --diff")
    p.set_defaults(run=run)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--shards {text}: a whole number of at least 1")
    return int(text)


def tool(name: str) -> str:
    """An Ansible command of this environment (next to this Python first, as the playbooks run it)."""
    found = environment_tool(name)
    if not found:
        raise RocmFleetError(f"{name} is not installed; install ansible-core in this environment (.ci/setup)")
    return found


def split_limit(extra: list[str]) -> tuple[list[str], list[str]]:
    """(--limit patterns, the other options): the limit narrows the hosts to slice, and each slice has
    its own, which a second --limit passed on would replace."""
    limits, rest, words = [], [], iter(extra)
    for word in words:
        if word in ("-l", "--limit"):
            limits.append(next(words, ""))
        elif word.startswith("--limit="):
            limits.append(word.split("=", 1)[1])
        else:
            rest.append(word)
    return [x for x in limits if x], rest


def target_hosts(inventory: Path, pattern: str, limits: list[str]) -> list[str]:
    """The hosts `pattern` names in `inventory`, narrowed by `limits` (as --limit does), in inventory order."""
    argv = [tool("ansible"), "-i", str(inventory), pattern, "--list-hosts"]
    for limit in limits:
        argv += ["--limit", limit]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    if proc.returncode != 0:
        raise RocmFleetError(f"ansible could not list {pattern!r} in {inventory}: {proc.stderr.strip()[-400:]}")
    return [line.strip() for line in proc.stdout.splitlines()[1:] if line.strip()]


def slices(hosts: list[str], shards: int) -> list[list[str]]:
    """Round-robin, so a site's inventory order (racks, say) spreads over every slice."""
    count = max(1, min(shards, len(hosts)))
    return [hosts[i::count] for i in range(count)]


@dataclass
class Slice:
    index: int
    hosts: list[str]
    log: Path
    proc: subprocess.Popen | None = None
    rc: int | None = None
    seconds: float = 0.0

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def at(self) -> str:
        """Where the slice is: the last task (or play) its log names, or that it is done."""
        if self.rc is not None:
            return f"slice {self.index + 1} done ({self.verdict()}, {self.seconds:.0f} s)"
        try:
            with self.log.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_BYTES))
                tail = log.read().decode(errors="replace")
        except OSError:
            tail = ""
        step = next((line for line in reversed(tail.splitlines()) if line.startswith(("TASK [", "PLAY ["))), "")
        return f"slice {self.index + 1} at {printable(step.rstrip(' *'))[:100] or 'its start'}"

    def verdict(self) -> str:
        if self.rc == 0:
            return "ok"
        if self.rc and not self.rc & ~HOST_BITS and "PLAY RECAP" in self.output():
            return "host failures"
        return "could not run"


def run(args: argparse.Namespace) -> int:
    extra = list(args.playbook_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    refused = [a for a in extra if a in ("-i", "--inventory") or a.startswith("--inventory=")]
    if refused:
        raise RocmFleetError("give the inventory with converge's own -i, not after --")
    if not args.inventory.exists():
        raise RocmFleetError(f"{args.inventory}: no such inventory")
    limits, extra = split_limit(extra)
    hosts = target_hosts(args.inventory, args.hosts, limits)
    if not hosts:
        raise RocmFleetError(f"{args.hosts!r} names no host in {args.inventory}")
    log_dir = args.log_dir or ROOT / "results" / f"converge-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}"
    log_dir.mkdir(parents=True, exist_ok=True)
    parts = [Slice(i, part, log_dir / f"shard-{i + 1}.log") for i, part in enumerate(slices(hosts, args.shards
                                                                                              or os.cpu_count() or 1))]
    playbook = ROOT / "playbooks" / ("pull.yml" if args.pull else "site.yml")
    print(f"rocm-fleet: converging {len(hosts)} hosts ({playbook.name}) in {len(parts)} slices at once; "
          f"logs in {log_dir}", flush=True)
    start = time.monotonic()
    try:
        for part in parts:
            limit = log_dir / f"shard-{part.index + 1}.hosts"
            limit.write_text("".join(f"{h}\n" for h in part.hosts))
            argv = [tool("ansible-playbook"), "-i", str(args.inventory), str(playbook),
                    "--limit", f"@{limit}", "-e", f"rocm_fleet_hosts={args.hosts}", *extra]
            with part.log.open("w") as out:
                part.proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)
        said = time.monotonic()
        while any(part.rc is None for part in parts):
            for part in parts:
                if part.rc is None and part.proc is not None and part.proc.poll() is not None:
                    part.rc, part.seconds = part.proc.returncode, time.monotonic() - start
            if any(part.rc is None for part in parts) and time.monotonic() - said >= PROGRESS_S:
                said = time.monotonic()
                print(f"rocm-fleet: {said - start:.0f} s: " + "; ".join(part.at() for part in parts), flush=True)
            time.sleep(0.2)
    except KeyboardInterrupt:
        _stop(parts)
        raise RocmFleetError("interrupted: every slice was stopped; what each host reached is in its log") from None
    return report(parts, time.monotonic() - start)


def _stop(parts: list[Slice]) -> None:
    for part in parts:
        if part.proc and part.proc.poll() is None:
            os.killpg(part.proc.pid, signal.SIGINT)          # ansible-playbook stops as on Ctrl-C
    for part in parts:
        if part.proc:
            try:
                part.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(part.proc.pid, signal.SIGKILL)


def report(parts: list[Slice], seconds: float) -> int:
    print("\nPLAY RECAP (every slice)")
    for part in parts:
        for line in recap.lines(part.output()):
            print(line)
    print()
    for part in parts:
        print(f"slice {part.index + 1}: {len(part.hosts)} hosts, exit {part.rc} ({part.verdict()}), "
              f"{part.seconds:.1f} s, log {part.log}")
    print(f"all slices done in {seconds:.1f} s")
    verdicts = {part.verdict() for part in parts}
    if "could not run" in verdicts:
        return 2
    return 1 if "host failures" in verdicts else 0
