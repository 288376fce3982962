"""`rocm-fleet validate`: run the node checks (pytest + testinfra) and write the reports.

From the controller: `rocm-fleet validate -i inventories/lab --hosts ansible://lab`; on a node:
`rocm-fleet validate --hosts local:// --spec spec.yml`. Results land in one directory: a JSON
document per node (updated after every check), JUnit XML, and a self-contained HTML report.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml
from testinfra.utils.ansible_runner import get_ansible_config

from validation import names, spec
from validation.errors import RocmFleetError
from validation.multinode.inventory import ansible_inventory_sources, group_hosts
from validation.report import load_run, render_html, render_terminal

# Hosts checked at once by default. A worker is one Python process (about 60 MB) that mostly waits on
# its host's commands over SSH, so this is not tied to the controller's cores; 16 is twice
# ansible's own forks default of 5 rounded up to what a 2-core controller runs without swapping.
DEFAULT_FORKS = 16

TIER_EXPR = {"smoke": "smoke", "quick": "smoke or quick", "acceptance": "smoke or quick or acceptance"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="run the node checks and write JSON, JUnit and HTML results")
    p.add_argument("--hosts", default=None,
                   help="testinfra host spec: ansible://GROUP with -i INVENTORY (controller) or local:// (on a node); "
                   "required")
    p.add_argument("-i", "--inventory", type=Path, default=None, help="Ansible inventory for ansible:// hosts")
    p.add_argument("--tier", choices=list(TIER_EXPR), default="smoke",
                   help="smoke (seconds), quick (minutes), acceptance (hours); each includes the ones before")
    p.add_argument("--spec", type=Path, default=None, help="declared state file for local:// runs")
    p.add_argument("--node-name", default=None, help="name of this node in results for local:// runs")
    p.add_argument("--results", type=Path, default=None, help="results directory (default results/<UTC time>)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds before the whole run is stopped")
    p.add_argument("-f", "--forks", type=_forks, default=DEFAULT_FORKS, metavar="N",
                   help=f"hosts (ansible://GROUP or a list of ssh:// hosts) checked at once, each in its own "
                        f"pytest-xdist worker process (default {DEFAULT_FORKS}, never more than the hosts; 1 = one "
                        "host after another in one process); a host's own checks always run one after another")
    p.add_argument("--no-gpu", action="store_true", help="leave out checks that need a GPU")
    p.add_argument("--strict", action="store_true", help="WARN counts as failure for the exit code")
    p.add_argument("--allow-busy", action="store_true",
                   help="measure GPUs that other processes are using (default: the idle pre-flight fails and the "
                   "measuring checks are skipped); every number so taken is marked measured_while_busy")
    p.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                   help="site baseline to judge against (rocm-fleet baseline create); default: the spec's "
                   "validation_baseline")
    p.add_argument("--require-judged", action="store_true",
                   help="fail a node whose performance numbers were all record-only (RF-NOT-JUDGED: no published "
                   "target, no site baseline, no siblings); the acceptance tier always does")
    p.add_argument("--watch-interval", type=_interval, default=None, metavar="S",
                   help="while measuring, sample every GPU's processes, load, clocks and power every S seconds on "
                   "the node (default 1); a foreign process in a number's window makes it invalid (RF-GPU-BUSY), "
                   "a thermal/hardware clock reduction fails RF-GPU-THROTTLED; 0 turns the watcher off")
    p.add_argument("--valid-for", type=_hours, default=None, metavar="HOURS",
                   help="how long this run's verdict vouches for the node: its results say valid_until, and a "
                   "report read after it fails the node RF-VALIDATION-EXPIRED (default: the tier's validity, "
                   "docs/validate.md)")
    p.set_defaults(run=run)


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (value == 0 or 0.1 <= value <= 60):
        raise argparse.ArgumentTypeError(f"{text}: give 0 (off) or 0.1 to 60 seconds")
    return value


def _hours(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of hours: {text!r}") from None
    if not 0 < value <= 24 * 366:
        raise argparse.ArgumentTypeError(f"{text}: give more than 0 and at most {24 * 366} hours (a year)")
    return value


# The checks run with exactly the pytest plugins they need: testinfra's, their own and, to check hosts side
# by side, pytest-xdist's. Whatever else is installed beside them is not loaded (autoload off): a
# controller's pytest-cov, pytest-benchmark or jaxtyping plugin can neither change the run nor add its own
# start-up to it (on the lent GPU machine, 6.6 CPU-s a host with them: docs/measurements/fleet-speed.md).
PLUGINS = ("testinfra.plugin", "validation.checks.plugin")


def checks_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment pytest runs the checks in: `base` (default this process's) with plugin autoload off
    and the current directory off Python's import path (PYTHONSAFEPATH, for pytest and every Python it
    starts): health runs as root from wherever a timer or an operator stands, and a `pytest.py` left in a
    world-writable directory would otherwise run as root."""
    return {**(os.environ if base is None else base), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONSAFEPATH": "1"}


def checks_argv(hosts: str, expr: str, results: Path, *options: str) -> list[str]:
    """pytest over validation/checks for `hosts`, the marker expression `expr`, results into `results`;
    run it in checks_env()."""
    checks = Path(__file__).resolve().parents[1] / "checks"
    return [sys.executable, "-P", "-m", "pytest", *(arg for name in PLUGINS for arg in ("-p", name)),
            "-c", str(checks / "pytest.ini"), "--rootdir", str(checks), str(checks), f"--hosts={hosts}", "-m", expr,
            f"--rf-results={results}", f"--junitxml={results / 'junit.xml'}", "-o", "junit_family=xunit2", *options]


def marker_expr(tier: str, *, no_gpu: bool) -> str:
    """pytest's -m expression for `tier`; `and` binds tighter than `or`, so the tier is parenthesised."""
    return f"({TIER_EXPR[tier]}) and not gpu" if no_gpu else TIER_EXPR[tier]


def pytest_argv(args: argparse.Namespace, results: Path) -> list[str]:
    argv = checks_argv(args.hosts, marker_expr(args.tier, no_gpu=args.no_gpu), results)
    if args.inventory:
        argv.append(f"--ansible-inventory={args.inventory}")
    if args.spec:
        argv.append(f"--rf-spec={args.spec}")
    if args.node_name:
        argv.append(f"--rf-node={args.node_name}")
    if args.allow_busy:
        argv.append("--rf-allow-busy")
    if args.baseline:
        argv.append(f"--rf-baseline={args.baseline.resolve()}")
    if args.require_judged:
        argv.append("--rf-require-judged")
    if args.valid_for is not None:
        argv.append(f"--rf-valid-for-hours={args.valid_for:g}")
    if args.watch_interval is not None:
        argv.append(f"--rf-watch-interval={args.watch_interval:g}")
    if getattr(args, "debug", False):
        argv += ["--tb=short", "-ra"]        # each failure's traceback and every skip's reason, as pytest prints them
    argv += parallel_argv(args.hosts, args.forks)
    return argv


def _forks(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"--forks {text}: at least 1")
    return value


def parallel_argv(hosts: str, forks: int) -> list[str]:
    """pytest's options to check `hosts` side by side: pytest-xdist with a worker per host, at most
    `forks` (the plugin counts the hosts and hands each worker whole hosts: validation/checks/
    plugin.py, xdist_hosts.py). None for local:// (one node, checked where it runs) or forks 1."""
    if forks <= 1 or hosts.startswith("local://"):
        return []
    if importlib.util.find_spec("xdist") is None:
        print("rocm-fleet: pytest-xdist is not installed; checking the hosts one after another "
              "(pip install pytest-xdist to check them side by side)", file=sys.stderr)
        return []
    return ["-p", "xdist.plugin", "-n", "auto", f"--rf-forks={forks}"]


def check_inputs(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, what cannot give a verdict (exit 2 through the CLI)."""
    if args.hosts is None:
        raise RocmFleetError("say which nodes to validate: --hosts ansible://GROUP -i INVENTORY from the controller, "
                             "or --hosts local:// --spec FILE on a node")
    if args.node_name is not None:
        names.check_node(args.node_name, "--node-name")
    if args.spec is not None and args.spec.is_file():
        host = args.node_name or socket.gethostname()
        try:
            variables = spec.load_spec_file(args.spec, host)
        except (ValueError, yaml.YAMLError) as exc:
            raise RocmFleetError(f"--spec {args.spec}: not a YAML or JSON mapping ({exc})") from None
        spec.refuse_undeclarable({host: variables})
    if not args.hosts.startswith("ansible://") and args.spec is None:
        raise RocmFleetError(f"validating {args.hosts} needs the node's declared state: pass --spec FILE, written by "
                             "`rocm-fleet spec -i INVENTORY HOST > FILE` (or the /etc/rocm-fleet/spec.yml that "
                             "playbooks/validate.yml writes on each node), or validate from the controller with "
                             "--hosts ansible://GROUP")
    for what, path in (("--spec", args.spec), ("--baseline", args.baseline)):
        if path is not None and not path.is_file():
            raise RocmFleetError(f"{what} {path}: no such file")
    if args.hosts.startswith("ansible://") and args.inventory is not None and not args.inventory.exists():
        raise RocmFleetError(f"--inventory {args.inventory}: no such file or directory")
    if args.hosts.startswith("ansible://"):
        check_ansible_hosts(args.hosts.removeprefix("ansible://"), args.inventory)


ANSIBLE_PATTERN_SYNTAX = frozenset("*?[]~!&:,")


def check_ansible_hosts(pattern: str, inventory: Path | None) -> list[str]:
    """The inventory's hosts that `ansible://PATTERN` names, read once before pytest starts: a group or
    host the inventory does not have is one line with its groups (not pytest's INTERNALERROR and an empty
    report), and every host's name, ansible_host and ansible_user is checked, since testinfra hands them
    to ssh as words of its command line."""
    pattern = pattern.split("?", 1)[0]               # testinfra's ?force_ansible=... options
    where = str(inventory) if inventory else f"the inventory ansible.cfg names ({_configured_inventory()})"
    try:
        listing = ansible_inventory_sources([str(inventory)] if inventory else [])
    except RocmFleetError as exc:
        raise RocmFleetError(f"--hosts ansible://{pattern}: {exc}") from None
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    every = list(dict.fromkeys([*hostvars, *(h for doc in listing.values() if isinstance(doc, dict)
                                             for h in doc.get("hosts", []))]))
    if ANSIBLE_PATTERN_SYNTAX & set(pattern) or pattern == "all":
        hosts = every                                 # a host pattern: ansible resolves it; check them all
    elif pattern in listing:
        hosts = group_hosts(listing, pattern)
    elif pattern in every:
        hosts = [pattern]
    else:
        groups = ", ".join(sorted(g for g in listing if g not in ("_meta", "all", "ungrouped"))) or "none"
        raise RocmFleetError(f"--hosts ansible://{pattern}: no group or host {pattern!r} in {where} (its groups: "
                             f"{groups}){'' if inventory else '; pass -i INVENTORY'}")
    if not hosts:
        raise RocmFleetError(f"--hosts ansible://{pattern}: the group has no hosts in {where}")
    spec.refuse_undeclarable({host: hostvars.get(host, {}) for host in hosts})
    for host in hosts:
        names.check_node(host, f"inventory host {host!r}")
        own = hostvars.get(host, {})
        if "ansible_host" in own:
            names.check_host(own["ansible_host"], f"{host}'s ansible_host")
        if "ansible_user" in own:
            names.check_user(own["ansible_user"], f"{host}'s ansible_user")
    return hosts


def _configured_inventory() -> str:
    return get_ansible_config().get("defaults", "inventory", fallback="/etc/ansible/hosts")


def reuse_ssh_connections() -> str | None:
    """Let testinfra's ssh backend keep one connection per host for ansible:// hosts; a warning if it cannot.

    Without a ControlPath every command of every check opens its own SSH connection (105 for a lab host's
    smoke tier: 22.5 s against 4.7 s sharing one). testinfra takes the path from ansible.cfg's
    [ssh_connection] control_path, and only when its directory already exists (Ansible creates it when
    it first connects; testinfra does not), so the directory is created here, where testinfra looks."""
    config = get_ansible_config()
    if not config.get("ssh_connection", "control_path", fallback="", raw=True):
        return ("rocm-fleet: ansible.cfg names no [ssh_connection] control_path, so every command of every check "
                "opens its own SSH connection (several times slower); this checkout's ansible.cfg sets "
                "control_path = %(directory)s/%%C")
    directory = config.get("persistent_connection", "control_path_dir", fallback="~/.ansible/cp")
    Path(directory).expanduser().mkdir(mode=0o700, parents=True, exist_ok=True)
    return None


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (systemd, Slurm, `kill`) stops the run as Ctrl-C does: a KeyboardInterrupt carrying the signal."""
    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum))

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_pytest(argv: list[str], env: dict[str, str], timeout_s: int) -> int:
    """pytest's exit code. pytest runs in its own process group, so that on timeout it and every
    process it started (pytest-xdist workers, ssh) are stopped together: TERM, then KILL; the run
    counts as failed and its partial results are kept. Ctrl-C here is passed on to the group as
    pytest's own Ctrl-C, which ends the run cleanly."""
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        print(f"rocm-fleet: validation stopped after {timeout_s} s; partial results kept", file=sys.stderr)
        _stop_group(proc, (signal.SIGTERM, signal.SIGKILL))
        return 1
    except KeyboardInterrupt:
        with _ignoring_interrupts():             # a second Ctrl-C must not leave the checks running
            _stop_group(proc, (signal.SIGINT, signal.SIGTERM, signal.SIGKILL))
        raise


@contextlib.contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop_group(proc: subprocess.Popen, signals: tuple[signal.Signals, ...], grace_s: float = 10.0) -> None:
    for sig in signals:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run(args: argparse.Namespace) -> int:
    check_inputs(args)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    results = (args.results or Path("results") / stamp).resolve()
    results.mkdir(parents=True, exist_ok=True)
    argv = pytest_argv(args, results)
    print(f"rocm-fleet: running {args.tier} checks on {args.hosts}", file=sys.stderr)
    if args.hosts.startswith("ansible://") and (warning := reuse_ssh_connections()):
        print(warning, file=sys.stderr)
    # testinfra's ansible backend calls ansible-inventory: find it beside this interpreter first
    env = checks_env({**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    stopped = None
    with _terminate_as_interrupt():
        try:
            rc = _run_pytest(argv, env, args.timeout)
        except KeyboardInterrupt as exc:        # Ctrl-C or SIGTERM: the checks were stopped, what they wrote stays
            stopped, rc = (exc.args[0] if exc.args else signal.SIGINT), 1
    nodes = load_run(results)
    (results / "report.html").write_text(render_html(nodes, title=f"rocm-fleet {args.tier} validation"))
    print(render_terminal(nodes))
    print(f"results: {results}\nreport:  {results / 'report.html'}")
    if stopped is not None:
        print(f"rocm-fleet: validation interrupted ({signal.Signals(stopped).name}); the partial results are kept and "
              "marked incomplete", file=sys.stderr)
        return 128 + int(stopped)
    if rc not in (0, 1) and not nodes:
        return 2
    statuses = [c["status"] for n in nodes for c in n["checks"]]
    if any(s in ("fail", "error", "timeout") for s in statuses) or rc == 1:
        return 1
    if args.strict and "warn" in statuses:
        return 1
    return 0 if statuses else 2
