#!/usr/bin/python3
"""Stand-in for dmesg on lab hosts: the real kernel log, then hardware-error lines injected from a state
file, so a lab test can make a node "log" a PCIe AER fatal error (or a machine check) without touching the
kernel log. Never writes to /dev/kmsg: the lab hosts and the machine share one kernel, and other tests read
its log.

Interface (for the lab tests and the remediation playbook's lab proof):

  Install it as /usr/local/bin/dmesg on a lab host. Root's PATH has /usr/local/bin before /usr/bin, and so
  has every PATH the project runs dmesg under: the health runner (roles/node_health's rocm-fleet-health sets
  PATH=/usr/local/sbin:/usr/local/bin:... for Slurm's HealthCheckProgram and the systemd unit), Ansible's
  commands over SSH (the remediation's health and validation runs, `rocm-fleet support-bundle`).

  Output: `/usr/bin/dmesg` with every argument passed through (its output and exit status), then, when it
  exited 0, the injected lines in the format the arguments ask for: `[  942.180230] text` by default,
  `[Sun Dec  6 21:10:29 2026] text` for -T / --ctime / --time-format=ctime, `2026-12-06T21:10:29,089431+00:00
  text` for --time-format=iso, bare text for -t / --notime / --time-format=notime. `-l/--level LIST` and
  `-f/--facility LIST` filter them as dmesg filters real lines (each kind has its kernel level, facility
  kern). Options whose output the stand-in does not reproduce (follow, clear, raw, decode, JSON, delta,
  reltime, human, ...) run the real dmesg alone: `exec /usr/bin/dmesg ARGS`.

  Injected lines: the real lines of a fixture (tests/fixtures/real/dmesg/, SOURCES.md there), re-stamped: the
  first line at the injection's seconds since boot (/proc/uptime; on the lab it is the machine's uptime,
  which a lab host's reboot does not reset), the others at their real offsets from it.
    aer-fatal   radeon-fury-nano-rocm-issue32-dmesg-aer-uncorrected-fatal-root-port.txt (10 lines:
                `pcieport 0000:00:1c.4: AER: Uncorrected (Fatal) error received: id=00e4` ... `AER: Device
                recovery failed`), level err
    mce         sandy-bridge-rasdaemon-issue155-dmesg-tail-mce-machine-check-events.txt (`mce: [Hardware
                Error]: Machine check events logged` and its CPU/Bank/TSC/PROCESSOR lines), level info/emerg
                as the kernel logs them

  State files (JSON objects `{"kind": "aer-fatal", "seconds": 12345.678}`), one per mode; both may exist:
    transient   /run/rocm-fleet-standin/dmesg.json ($DMESG_STANDIN_TRANSIENT): /run is a fresh tmpfs after
                every boot (a real host's and a lab host's: podman's systemd containers mount one), so the
                lines are gone after the next reboot, as the old boot's log is. Printed with the injection's
                stamp on every call until then.
    recurring   /var/lib/rocm-fleet-standin/dmesg.json ($DMESG_STANDIN_RECURRING): survives reboots, like a
                failing link that keeps reporting: every call prints the lines again, the first stamped with
                the current uptime, so each run of the health mode sees a new report.

  Injecting (the stand-in's own options; real dmesg has no --standin-*):
    dmesg --standin-inject transient|recurring [--standin-kind aer-fatal|mce]   writes the state file, with
                                                                                the current uptime; prints it
    dmesg --standin-clear                                                       removes both state files

  For tests: $DMESG_STANDIN_REAL (the real dmesg, default /usr/bin/dmesg), $DMESG_STANDIN_UPTIME (default
  /proc/uptime), $DMESG_STANDIN_NOW (the wall-clock epoch seconds, for the ctime/iso stamps).
"""

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REAL = "/usr/bin/dmesg"
TRANSIENT = "/run/rocm-fleet-standin/dmesg.json"
RECURRING = "/var/lib/rocm-fleet-standin/dmesg.json"
UPTIME = "/proc/uptime"

# (seconds offset from the first line, level, text): verbatim from the fixtures named in the docstring.
KINDS: dict[str, tuple[tuple[float, str, str], ...]] = {
    "aer-fatal": (
        (0.000000, "err", "pcieport 0000:00:1c.4: AER: Uncorrected (Fatal) error received: id=00e4"),
        (0.000009, "err", "pcieport 0000:00:1c.4: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction "
                          "Layer, id=00e4(Receiver ID)"),
        (0.000097, "err", "pcieport 0000:00:1c.4:   device [8086:a114] error status/mask=00040000/00000000"),
        (0.000162, "err", "pcieport 0000:00:1c.4:    [18] Malformed TLP          (First)"),
        (0.000214, "err", "pcieport 0000:00:1c.4:   TLP Header: 6c000002 06000000 0000000f b76e6008"),
        (0.000281, "info", "pcieport 0000:00:1c.4: broadcast error_detected message"),
        (0.000283, "info", "amdgpu 0000:06:00.0: device has no AER-aware driver"),
        (0.000284, "info", "snd_hda_intel 0000:06:00.1: device has no AER-aware driver"),
        (1.008768, "info", "pcieport 0000:00:1c.4: Root Port link has been reset"),
        (1.008771, "info", "pcieport 0000:00:1c.4: AER: Device recovery failed"),
    ),
    "mce": (
        (0.000000, "info", "mce: [Hardware Error]: Machine check events logged"),
        (0.000006, "emerg", "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 9: 0000000000000000"),
        (0.008578, "emerg", "mce: [Hardware Error]: TSC 2ac997e3063c3 "),
        (0.014223, "emerg", "mce: [Hardware Error]: PROCESSOR 0:50663 TIME 947185249 SOCKET 0 APIC 0 "
                            "microcode 7000019"),
    ),
}
LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
# options whose output form the stand-in does not reproduce: the real dmesg alone answers them
REAL_ONLY = ("-w", "--follow", "-W", "--follow-new", "-c", "--read-clear", "-C", "--clear", "-D", "--console-off",
             "-E", "--console-on", "-n", "--console-level", "-r", "--raw", "-x", "--decode", "-J", "--json",
             "-d", "--show-delta", "-e", "--reltime", "-H", "--human", "-h", "--help", "-V", "--version",
             "-u", "--userspace", "-s", "--buffer-size", "-F", "--file", "-S", "--syslog")
TIME_FORMATS = ("notime", "ctime", "iso", "raw")


def _path(env: str, default: str) -> Path:
    return Path(os.environ.get(env, default))


def uptime() -> float:
    return float(_path("DMESG_STANDIN_UPTIME", UPTIME).read_text().split()[0])


def _load(path: Path) -> dict | None:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and state.get("kind") in KINDS else None


def _option(args: list[str], short: str, long: str) -> str | None:
    """The value of `-l X` / `-lX` / `--level X` / `--level=X` (the last one given)."""
    value = None
    for i, arg in enumerate(args):
        if arg in (short, long) and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(long + "="):
            value = arg.split("=", 1)[1]
        elif arg.startswith(short) and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
    return value


def time_form(args: list[str]) -> str | None:
    """raw (`[seconds]`), notime, ctime or iso; None for a form the stand-in does not print (delta, reltime)."""
    form: str | None = "raw"
    for i, arg in enumerate(args):
        if arg in ("-t", "--notime"):
            form = "notime"
        elif arg in ("-T", "--ctime"):
            form = "ctime"
        elif arg == "--time-format" and i + 1 < len(args):
            form = args[i + 1] if args[i + 1] in TIME_FORMATS else None
        elif arg.startswith("--time-format="):
            form = arg.split("=", 1)[1] if arg.split("=", 1)[1] in TIME_FORMATS else None
    return form


def stamp(seconds: float, form: str | None, now: float, now_uptime: float) -> str:
    if form == "notime":
        return ""
    if form == "raw":
        whole, micro = divmod(round(seconds * 1e6), 1_000_000)
        return f"[{whole:5d}.{micro:06d}] "
    wall = dt.datetime.fromtimestamp(now - now_uptime + seconds).astimezone()
    if form == "ctime":
        return f"[{wall.strftime('%a %b %e %H:%M:%S %Y')}] "
    offset = wall.strftime("%z")
    return f"{wall.strftime('%Y-%m-%dT%H:%M:%S')},{wall.microsecond:06d}{offset[:3]}:{offset[3:]} "


def injected(args: list[str], now_uptime: float, now: float) -> list[str]:
    """The injected lines, formatted and filtered as `args` ask, oldest first."""
    levels = _option(args, "-l", "--level")
    facilities = _option(args, "-f", "--facility")
    if facilities is not None and "kern" not in facilities.split(","):
        return []
    wanted = set(levels.split(",")) if levels is not None else set(LEVELS)
    form = time_form(args)
    reports = []
    for mode, env, default in (("transient", "DMESG_STANDIN_TRANSIENT", TRANSIENT),
                               ("recurring", "DMESG_STANDIN_RECURRING", RECURRING)):
        state = _load(_path(env, default))
        if state is None:
            continue
        first = now_uptime if mode == "recurring" else float(state.get("seconds", now_uptime))
        reports.append((first, KINDS[state["kind"]]))
    out = []
    for first, lines in sorted(reports, key=lambda r: r[0]):
        for offset, level, text in lines:
            seconds = first + offset
            if level in wanted and seconds <= now_uptime + 2.0:   # a recurring report's tail is not logged yet
                out.append(stamp(seconds, form, now, now_uptime) + text)
    return out


def inject(args: list[str]) -> int:
    mode = _option(args, "--standin-inject", "--standin-inject")
    kind = _option(args, "--standin-kind", "--standin-kind") or "aer-fatal"
    if mode not in ("transient", "recurring") or kind not in KINDS:
        print(f"dmesg stand-in: --standin-inject transient|recurring [--standin-kind {'|'.join(KINDS)}]",
              file=sys.stderr)
        return 2
    path = _path("DMESG_STANDIN_TRANSIENT", TRANSIENT) if mode == "transient" else \
        _path("DMESG_STANDIN_RECURRING", RECURRING)
    state = {"kind": kind, "seconds": uptime(), "mode": mode}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state) + "\n")
    print(json.dumps({**state, "path": str(path)}))
    return 0


def main(argv: list[str]) -> int:
    args = argv[1:]
    if "--standin-inject" in args or any(a.startswith("--standin-inject=") for a in args):
        return inject(args)
    if "--standin-clear" in args:
        for env, default in (("DMESG_STANDIN_TRANSIENT", TRANSIENT), ("DMESG_STANDIN_RECURRING", RECURRING)):
            _path(env, default).unlink(missing_ok=True)
        return 0
    real = os.environ.get("DMESG_STANDIN_REAL", REAL)
    if any(a.split("=", 1)[0] in REAL_ONLY for a in args) or time_form(args) is None:
        os.execv(real, [real, *args])          # noqa: S606 - dmesg itself, with the caller's arguments
    sys.stdout.flush()
    done = subprocess.run([real, *args], check=False)
    if done.returncode != 0:
        return done.returncode
    now = float(os.environ.get("DMESG_STANDIN_NOW", time.time()))
    lines = injected(args, uptime(), now)
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
