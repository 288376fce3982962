"""Run one external tool with a timeout and keep whatever it printed.

`run()` never raises for a non-zero exit or a timeout: those are facts the caller records
(`rc`, `timed_out`). It raises `ProbeError` only when the tool cannot be started at all.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from validation.errors import ProbeError

log = logging.getLogger(__name__)


def environment_tool(name: str) -> str | None:
    """A command of this Python's environment, found beside the interpreter first and then on PATH:
    the ansible commands of the venv rocm-fleet runs from, as the playbooks run them."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)

# After the kill, how long to wait for the pipes to drain (the group is dead by then).
_DRAIN_S = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RawRun:
    """One finished (or killed) command. `rc` is None when the command was killed on timeout."""

    argv: tuple[str, ...]
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    started_at: float | None = None     # wall clock (epoch seconds) when it started; the GPU watcher's window

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


def which(tool: str, path: str | None = None) -> str | None:
    """Absolute path of `tool` on PATH (or on `path`), None when it is absent."""
    return shutil.which(tool, path=path)


def run(
    argv: Sequence[str],
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> RawRun:
    """Run argv (no shell) with a wall-clock limit; on timeout kill its whole process group.

    This is `subprocess.run(argv, timeout=..., capture_output=True, text=True, check=False)`
    spelled out with Popen, because `subprocess.run` kills only the direct child on timeout and
    does not tell us its pid: a tool that forked (mpirun, a shell wrapper) would keep running.
    The child starts in its own session, so `os.killpg` reaches every process it started, and
    the output printed before the kill is kept.
    """
    argv = tuple(str(a) for a in argv)
    full_env = None if env is None else {**os.environ, **env}
    started_at = time.time()
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise ProbeError(f"cannot start {argv[0]!r}: {exc.strerror or exc}; install it or put it on PATH") from exc
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        log.warning("%s ran past %.1f s; killing its process group", argv[0], timeout_s)
        _kill_group(proc.pid)
        try:
            # communicate() again returns everything read so far plus what is left in the pipes.
            stdout, stderr = proc.communicate(timeout=_DRAIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
    seconds = time.perf_counter() - start
    return RawRun(
        argv=argv,
        rc=None if timed_out else proc.returncode,
        stdout=stdout or "",
        stderr=stderr or "",
        seconds=seconds,
        timed_out=timed_out,
        started_at=started_at,
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group ended between timeout and kill
        os.killpg(pid, signal.SIGKILL)


def run_each(
    commands: Mapping[Hashable, tuple[Sequence[str], Mapping[str, str] | None]],
    timeout_s: float,
) -> dict[Hashable, RawRun | ProbeError]:
    """Run every command at once, each as `run()` does (its own process group, its own timeout),
    and return each one's RawRun by its key (a GPU index), or the ProbeError of one that could
    not start. One command hanging or failing changes nothing for the others: each is waited for
    in its own thread (the processes do the work; the threads only wait on them)."""
    if not commands:
        return {}

    def one(key: Hashable) -> RawRun | ProbeError:
        argv, env = commands[key]
        try:
            return run(argv, timeout_s, env=env)
        except ProbeError as exc:
            return exc

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(commands)) as pool:
        return dict(zip(commands, pool.map(one, commands), strict=True))


class PerGpuRuns:
    """One tool case run on every GPU at once, the first time any GPU's check asks for it.

    A per-GPU check names its case (a hashable key), its GPU and how to build the command for any
    GPU; the first check of a case starts it on every declared GPU together (`run_each`), and the
    later checks of the case take their GPU's result from here. So the GPUs are measured side by
    side, under the whole node's power and heat, and a case costs one run's time, not one per GPU.
    Each GPU keeps its own result, exit status and timeout."""

    def __init__(self, launch: Callable[..., Mapping[Hashable, RawRun | ProbeError]] = run_each) -> None:
        self._launch = launch
        self._done: dict[Hashable, Mapping[Hashable, RawRun | ProbeError]] = {}

    def get(self, case: Hashable, gpu: int, gpus: Sequence[int],
            command: Callable[[int], tuple[Sequence[str], Mapping[str, str] | None]], timeout_s: float) -> RawRun:
        if case not in self._done:
            self._done[case] = self._launch({g: command(g) for g in gpus}, timeout_s)
        result = self._done[case][gpu]
        if isinstance(result, ProbeError):
            raise result
        return result
