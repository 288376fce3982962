"""pytest plugin for the node checks: tiers, the spec and facts fixtures, per-node results.

Loaded through the `pytest11` entry point, so the same checks run on a node
(`--hosts=local://`) and from the controller (`--hosts=ansible://GROUP`). It only acts on
tests that live in validation/checks/; other test suites are left alone.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from validation import idle, judged, names
from validation.checks import health, measuring
from validation.checks.facts import provenance
from validation.checks.node import RESULTS, node_name, results_for
from validation.checks.outcome import CheckFailure
from validation.checks.targets_fixture import targets  # noqa: F401  (registers the fixture)
from validation.health_state import HealthState
from validation.probes import gpu_activity, gpu_watch
from validation.results import catalog, progress
from validation.spec import DeclaredState, checks_spec, load_spec_file

TIERS = {"smoke": "seconds", "quick": "minutes", "acceptance": "hours"}
CHECKS_DIR = Path(__file__).resolve().parent


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocm-fleet", "rocm-fleet node validation")
    group.addoption("--rf-results", metavar="DIR", default=None,
                    help="write one JSON results document per node into DIR, updated after every check")
    group.addoption("--rf-spec", metavar="FILE", default=None,
                    help="declared node state (YAML/JSON); default: inventory variables via ansible://")
    group.addoption("--rf-node", metavar="NAME", default=None,
                    help="name for the local node in results (default: its host name); one file name: letters, "
                    "digits, '.', '_', ':', '-', not starting with '-' or '.'")
    group.addoption("--rf-previous", metavar="FILE|DIR", default=None,
                    help="previous results document or run directory whose check durations set the expected "
                    "times in progress-<node>.json (default: the newest run directory next to --rf-results)")
    group.addoption("--rf-allow-busy", action="store_true", default=False,
                    help="measure GPUs that other processes are using; every such number is marked "
                    "measured_while_busy (default: their measuring checks are skipped and the pre-flight fails)")
    group.addoption("--rf-health-state", metavar="DIR", default=None,
                    help="health mode: directory of the node's health memory (error counters, kernel log "
                    "position, firmware) that the `health` checks compare with and update")
    group.addoption("--rf-health-jobs-running", action="store_true", default=False,
                    help="health mode: the node runs jobs now, so processes on its GPUs are theirs, not leftovers")
    group.addoption("--rf-health-accept", action="store_true", default=False,
                    help="health mode: take the firmware found now as the node's recorded set (after a validation "
                    "passed on it)")
    group.addoption("--rf-forks", metavar="N", type=int, default=16,
                    help="with pytest-xdist's -n auto: check at most N hosts at once, one worker process each "
                    "(default 16); a host's checks run one after another in its worker")
    group.addoption("--rf-watch-interval", metavar="S", type=float, default=gpu_watch.DEFAULT_INTERVAL_S,
                    help="while measuring checks run, sample the GPUs' activity every S seconds on the node "
                    f"(default {gpu_watch.DEFAULT_INTERVAL_S:g}); 0 turns the watcher off and every number is "
                    "recorded as not watched")
    group.addoption("--rf-require-judged", action="store_true", default=False,
                    help="fail a node whose performance numbers were all record-only (RF-NOT-JUDGED); the "
                    "acceptance tier always does")
    group.addoption("--rf-valid-for-hours", metavar="H", type=float, default=None,
                    help="how long this run's verdict vouches for the node (valid_until); default: its tier's "
                    "validity, validation/validity.py")
    group.addoption("--rf-baseline", metavar="FILE", default=None,
                    help="site baseline (rocm-fleet baseline create) to judge against; default: the spec's "
                    "validation_baseline")


def pytest_configure(config: pytest.Config) -> None:
    override = config.getoption("--rf-node")
    if override is not None:        # it becomes <results>/<name>.json and <health-state>/<name>.json
        try:
            names.check_node(override, "--rf-node")
        except names.UnsafeName as exc:
            raise pytest.UsageError(str(exc)) from None
    for tier, budget in TIERS.items():
        config.addinivalue_line("markers", f"{tier}: validation tier, runtime in {budget}")
    config.addinivalue_line("markers", "gpu: needs an AMD or NVIDIA GPU on the node")
    config.addinivalue_line("markers", "health: part of the health mode (`rocm-fleet health`): no load, seconds")
    config.addinivalue_line("markers", "destructive: changes host state; not run by default")
    config.stash[RESULTS] = {}
    config.pluginmanager.register(RunOrder(), "rocm-fleet-run-order")
    if _is_xdist_worker(config) and config.option.hosts:
        from validation.checks.xdist_hosts import take_inventory

        take_inventory(config)


def _is_check(item: pytest.Item) -> bool:
    return CHECKS_DIR in Path(str(item.fspath)).resolve().parents


@pytest.hookimpl(tryfirst=True)      # before `-m` deselects: the health marker is added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not _is_check(item):
            continue
        found = [m.name for m in item.iter_markers() if m.name in TIERS]
        if len(found) != 1:
            raise pytest.UsageError(f"{item.nodeid}: needs exactly one tier marker of {list(TIERS)}, has {found}")
        if item.originalname in health.HEALTH_CHECKS:   # type: ignore[attr-defined]
            item.add_marker(pytest.mark.health)


class RunOrder:
    """The idle pre-flight before anything else, the sibling verdicts and the post-flight after it all.

    A sort inside the plugin's own modifyitems did not hold: pytest's fixture-scope reordering runs
    after it and put the post-flight right behind the pre-flight (same module, same module-scoped
    fixtures), before any probe. As the outermost wrapper this sort is the last word on the order,
    after pytest's reordering, `-m` deselection and --lf/--ff; the sort is stable, so pytest's
    grouping holds everywhere else."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> Any:
        result = yield
        items.sort(key=lambda item: measuring.ORDER.get(getattr(item, "originalname", ""), 1)
                   if _is_check(item) else 1)
        return result


def _measures(item: pytest.Item) -> bool:
    """A check that loads the GPU: a quick or acceptance check on a GPU, other than the idle checks."""
    return (_is_check(item) and item.get_closest_marker("gpu") is not None
            and _tier_of(item) in measuring.MEASURING_TIERS
            and getattr(item, "originalname", "") not in measuring.ORDER)


_REACH = pytest.StashKey[dict[str, str | None]]()
REMOTE_BACKENDS = ("ssh", "paramiko", "ansible")


def _unreachable(item: pytest.Item, host: Any, name: str) -> tuple[str | None, bool]:
    """(why the node does not answer or None, whether this is its first check to learn it). Asked once
    per node, before its first check: a node that refuses connections gives one RF-NODE-UNREACHABLE with
    ssh's own reason instead of every check failing on a command that never ran."""
    known = item.config.stash.setdefault(_REACH, {})
    if name in known:
        return known[name], False
    why = None
    if host.backend.NAME in REMOTE_BACKENDS:
        try:
            answer = host.run("true")
            failed = answer.rc == 255
        except RuntimeError as exc:    # testinfra's ssh backends raise on ssh's own exit status, 255
            answer, failed = (exc.args[0] if exc.args else None), True
        if failed:
            lines = [ln.strip() for ln in (getattr(answer, "stderr", None) or "").splitlines() if ln.strip()]
            why = lines[-1] if lines else "ssh exited 255 without a message"
    known[name] = why
    return why, True


@pytest.hookimpl(tryfirst=True)        # before the fixtures, which would each run commands on the node
def pytest_runtest_setup(item: pytest.Item) -> None:
    host = _host_of(item)
    if host is None or not _is_check(item):
        return
    name = node_name(host, item.config.getoption("--rf-node"))
    results_for(item, name)            # the node's document exists before anything waits on the node
    why, first = _unreachable(item, host, name)
    if why is not None:
        if first:
            raise CheckFailure("RF-NODE-UNREACHABLE", f"{name} does not answer over SSH: {why}")
        pytest.skip(f"{name} does not answer over SSH (RF-NODE-UNREACHABLE on its first check)")
    if not _measures(item):
        return
    state = _measuring_state(item.config, name)
    reason = state.skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """A measuring check runs under the node's GPU watcher: its numbers get the window they were
    taken in, and what the watcher saw there decides whether they describe the hardware."""
    host = _host_of(item)
    if host is None or not _measures(item):
        return (yield)
    state = _measuring_state(item.config, node_name(host, item.config.getoption("--rf-node")), item)
    _start_watch(item.config, host, state)
    first, start = len(state.measurements), time.time()
    state.mark_own_memory(start)
    try:
        result = yield
    except pytest.skip.Exception:
        state.watch_check(check_id(item), start, state.mark_own_memory(time.time()), first)
        raise
    except (Exception, pytest.fail.Exception) as exc:
        found = state.watch_check(check_id(item), start, state.mark_own_memory(time.time()), first)
        replacement = _window_verdict(found, state, exc)
        if replacement is None:
            raise
        raise replacement from exc
    found = state.watch_check(check_id(item), start, state.mark_own_memory(time.time()), first)
    verdict = _window_verdict(found, state, None)
    if verdict is not None:
        raise verdict
    return result


def _window_verdict(found: measuring.CheckWindow | None, state: measuring.NodeMeasuring,
                    error: BaseException | None) -> BaseException | None:
    """The failure a check's window calls for, or None to keep the check's own outcome."""
    if found is None or not (found.foreign or found.throttled or found.unseen):
        return None
    own = error if isinstance(error, CheckFailure) else None
    own_text = f" (the check's own verdict, {own.code}: {own.message[:600]})" if own else ""
    if (found.foreign or found.unseen) and not state.allow_busy:
        seen = "; ".join([*(s.describe() for s in found.foreign), *(u.describe() for u in found.unseen)])
        if error is not None and (own is None or own.code not in measuring.NUMBER_CODES):
            if own is None:
                return None
            return CheckFailure(own.code, f"{own.message}; also, someone else's work was on the GPU: {seen}",
                                own.hint)
        code = idle.BUSY if found.foreign else idle.UNSEEN
        return CheckFailure(code, f"someone else's work ran on the GPU while {found.check.split('::')[-1]} "
                            f"measured it: {seen}; {found.marked} of its {found.numbers} numbers are marked invalid: "
                            f"they do not describe the hardware{own_text}")
    if found.throttled:
        seen = gpu_watch.sighting_lines(found.throttled)
        if own is not None and own.code not in measuring.NUMBER_CODES:
            return CheckFailure(own.code, f"{own.message}; also, {seen}", own.hint)
        if error is not None and own is None:
            return None
        return CheckFailure("RF-GPU-THROTTLED", f"the GPU's clocks were held down while "
                            f"{found.check.split('::')[-1]} measured it: {seen}{own_text}")
    return None


def _start_watch(config: pytest.Config, host: Any, state: measuring.NodeMeasuring) -> None:
    """The node's watcher, started before its first measuring check (once; a failure is kept as the
    reason its numbers are not watched)."""
    if state.watcher is not None or state.watch_error:
        return
    interval = config.getoption("--rf-watch-interval")
    if interval <= 0:
        state.watch_error = measuring.WATCH_OFF
        return
    views = gpu_watch.views_for(gpu_activity.host_run(host), gpu_activity.host_which(host))
    if views is None:
        state.watch_error = "none of amd-smi, rocm-smi or nvidia-smi is on the node"
        return
    watcher = gpu_watch.Watcher(host, views, interval_s=interval,
                                owner_pid=os.getpid() if host.backend.NAME == "local" else None)
    if not watcher.start():
        state.watch_error = watcher.error or "the watcher did not start"
        return
    state.watcher = watcher
    watcher.wait_past(time.time())     # the first sample in, so the first check is watched from its start
    if state.results is not None:
        state.results.doc["provenance"]["watch"] = {"interval_s": interval, "source": views.source,
                                                    "commands": [" ".join(views.gpus_argv),
                                                                 " ".join(views.processes_argv)]}


def _host_of(item: pytest.Item) -> Any:
    return getattr(getattr(item, "callspec", None), "params", {}).get("_testinfra_host")


def _tier_of(item: pytest.Item) -> str | None:
    return next((m.name for m in item.iter_markers() if m.name in TIERS), None)


def check_id(item: pytest.Item) -> str:
    """The id results documents use: the node id without the host's own parameter, so one check has
    one id on every host ('t.py::test_thp[ansible://n1-enabled]' -> 't.py::test_thp[enabled]')."""
    host = _host_of(item)
    if host is None:
        return item.nodeid
    return catalog.check_key(item.nodeid, node_name(host, item.config.getoption("--rf-node")))


_PROGRESS = pytest.StashKey[progress.ProgressBook]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Plan each node's checks and write its first progress file (only with --rf-results)."""
    directory = session.config.getoption("--rf-results")
    if not directory or session.config.option.collectonly:
        return
    by_node: dict[str, list[tuple[str, str, str | None]]] = {}
    for item in session.items:
        host = _host_of(item)
        if _is_check(item) and host is not None:
            name = node_name(host, session.config.getoption("--rf-node"))
            by_node.setdefault(name, []).append((item.nodeid, check_id(item), _tier_of(item)))
    previous = session.config.getoption("--rf-previous")
    # A pytest-xdist worker runs only the hosts it is given (validation/checks/xdist_hosts.py): it
    # writes and closes the progress files of those alone, each from its host's first check on.
    session.config.stash[_PROGRESS] = progress.start_book(
        Path(directory), by_node, tier=session.config.getoption("markexpr") or "all",
        previous=Path(previous) if previous else None, only_started=_is_xdist_worker(session.config))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    book = item.config.stash.get(_PROGRESS, None)
    if book is not None:
        book.start(item.nodeid)
    yield
    if book is not None:
        book.finish(item.nodeid)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


_HOST_IDS = pytest.StashKey[list[str]]()


def _host_ids(config: pytest.Config) -> list[str]:
    """The hosts' pytest ids, resolved once per session (ansible:// groups through ansible-inventory)."""
    if _HOST_IDS not in config.stash:
        from validation.checks.xdist_hosts import host_ids

        config.stash[_HOST_IDS] = host_ids(config)
    return config.stash[_HOST_IDS]


# pytest-xdist's hooks: optional, since nodes (which run one host, local://) do not install it.
@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` with --hosts: a worker per host, at most --rf-forks; no worker at all (one
    process, as without xdist) for a single host."""
    if not config.option.hosts:
        return None
    workers = min(len(_host_ids(config)), config.getoption("--rf-forks"))
    return workers if workers > 1 else 0


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With pytest-xdist and --hosts, a worker gets whole hosts: their checks run one after another
    in one process, the hosts side by side (validation/checks/xdist_hosts.py)."""
    if config.getoption("dist") == "each" or not config.option.hosts:
        return None
    from validation.checks.xdist_hosts import HostScheduling

    return HostScheduling(config, log, ids=_host_ids(config))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """The controller hands each pytest-xdist worker the inventory it read once (ansible-inventory
    costs about 2 CPU-seconds; every worker would run it again)."""
    if node.config.option.hosts:
        from validation.checks.xdist_hosts import share_inventory

        share_inventory(node.config, node.workerinput)


@pytest.fixture(scope="module")
def spec(host: Any, request: pytest.FixtureRequest) -> DeclaredState:
    """The host's declared state: role defaults overlaid with its spec file or inventory variables."""
    spec_file = request.config.getoption("--rf-spec")
    name = node_name(host, request.config.getoption("--rf-node"))
    if spec_file:
        return checks_spec(load_spec_file(Path(spec_file), name))
    if host.backend.NAME == "ansible":
        return checks_spec(host.ansible.get_variables())
    pytest.fail(f"no spec for {name}: pass the node's declared state with `rocm-fleet validate --spec FILE` "
                "(pytest: --rf-spec FILE), written by `rocm-fleet spec -i INVENTORY HOST > FILE` (or the "
                "/etc/rocm-fleet/spec.yml that playbooks/validate.yml writes on each node), or run from the "
                "controller with --hosts=ansible://GROUP")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    book = item.config.stash.get(_PROGRESS, None)
    if book is not None:
        book.report(item.nodeid, report.when, passed=report.passed, failed=report.failed)
    host = _host_of(item)
    if not _is_check(item) or host is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        results = results_for(item, node_name(host, item.config.getoption("--rf-node")))
        if results is None:
            return
        code, hint, message = None, None, ""
        if call.excinfo is not None:
            if isinstance(call.excinfo.value, CheckFailure):   # message, code and hint kept apart
                failure = call.excinfo.value
                code, hint, message = failure.code, failure.hint, failure.message[:2000]
            else:
                message = str(call.excinfo.value).split("\nassert ")[0][:2000]
        if report.skipped:
            status = "skip"
            message = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else message
        elif report.failed:
            status = "error" if report.when == "setup" else "fail"
        else:
            status = "pass"
        name = getattr(item, "originalname", item.name)
        results.add_check({"id": check_id(item), "name": name, "tier": _tier_of(item),
                           "needs_gpu": item.get_closest_marker("gpu") is not None,
                           "status": status, "code": code, "message": message, "hint": hint,
                           "duration_s": round(report.duration, 3),
                           "started_at": round(report.start, 3), "ended_at": round(report.stop, 3)})


_PROVENANCE_DONE = pytest.StashKey[set[str]]()

@pytest.fixture(autouse=True)
def _provenance(request: pytest.FixtureRequest) -> None:
    """Record where and on what the node's checks ran, once per node and session."""
    if not _is_check(request.node) or "host" not in request.fixturenames:
        return
    host = request.getfixturevalue("host")
    name = node_name(host, request.config.getoption("--rf-node"))
    done = request.config.stash.setdefault(_PROVENANCE_DONE, set())
    results = results_for(request.node, name)
    if name in done or results is None:
        return
    done.add(name)
    from validation import __version__
    from validation.checks import discovery

    facts: dict[str, Any] = {"rocm_fleet_version": __version__, "command": list(sys.argv), **provenance(host),
                             "allow_busy": request.config.getoption("--rf-allow-busy")}
    facts["gpus_on_pci_bus"] = [{"bdf": b, "vendor": v, "device": d} for b, v, d in discovery.pci_gpus(host)]
    try:
        facts["declared_sku"] = request.getfixturevalue("spec").get("validation_target_sku")
    except pytest.fail.Exception:      # no spec for this host: the spec fixture says why in its own checks
        facts["declared_sku"] = None
    for key, value in facts.items():
        results.doc["provenance"][key] = value
    results.write()


_HEALTH = pytest.StashKey[dict[str, HealthState]]()


@pytest.fixture
def health_state(host: Any, request: pytest.FixtureRequest) -> HealthState:
    """The node's health memory (previous run's counters, kernel log position, firmware); health mode only."""
    directory = request.config.getoption("--rf-health-state")
    if not directory:
        pytest.skip("compares with the previous health run: runs in `rocm-fleet health` (--rf-health-state)")
    name = node_name(host, request.config.getoption("--rf-node"))
    store = request.config.stash.setdefault(_HEALTH, {})
    if name not in store:
        store[name] = HealthState(Path(directory), name)
    return store[name]


_MEASURING = pytest.StashKey[dict[str, measuring.NodeMeasuring]]()


def _measuring_state(config: pytest.Config, name: str, item: pytest.Item | None = None) -> measuring.NodeMeasuring:
    store = config.stash.setdefault(_MEASURING, {})
    if name not in store:
        store[name] = measuring.NodeMeasuring(node=name, allow_busy=config.getoption("--rf-allow-busy"))
    state = store[name]
    if state.results is None and item is not None:
        state.results = results_for(item, name)
    return state


@pytest.fixture
def measuring_state(host: Any, request: pytest.FixtureRequest) -> measuring.NodeMeasuring:
    """This node's measuring state: busy GPUs found by the pre-flight, the numbers measured so far."""
    return _measuring_state(request.config, node_name(host, request.config.getoption("--rf-node")), request.node)


@pytest.fixture
def record(measuring_state: measuring.NodeMeasuring, request: pytest.FixtureRequest) -> Any:
    """record(metric, subject, value, unit, *, higher_is_better=True, status="pass", **extra):
    add one measurement to this node's results document (kept also when the check fails later)."""
    def add(metric: str, subject: str, value: float | None, unit: str, *, higher_is_better: bool = True,
            status: str = "pass", **extra: Any) -> None:
        measuring_state.add({"metric": metric, "subject": subject, "value": value, "unit": unit,
                             "higher_is_better": higher_is_better, "status": status,
                             "check": request.node.nodeid.split("[")[0], **extra})
    return add


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    for measured in session.config.stash.get(_MEASURING, {}).values():
        if measured.watcher is not None:      # the post-flight stops it; a run without one (-k, a crash) here
            measured.watcher.stop()
    for state in session.config.stash.get(_HEALTH, {}).values():
        state.save()
    for results in session.config.stash.get(RESULTS, {}).values():
        results.doc["judged"] = judged.summarize(results.doc)
        results.finish(complete=exitstatus != pytest.ExitCode.INTERRUPTED,
                       valid_for_hours=session.config.getoption("--rf-valid-for-hours"))
    book = session.config.stash.get(_PROGRESS, None)
    if book is not None:
        book.close()
