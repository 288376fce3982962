"""Per-task wall time of a playbook run, slowest first (bench only: ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins
ANSIBLE_CALLBACKS_ENABLED=task_times; writes the table to $RF_TASK_TIMES or stderr)."""

from __future__ import annotations

import os
import sys
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_times
type: aggregate
short_description: per-task wall time, slowest first
requirements: [enable in ansible.cfg or ANSIBLE_CALLBACKS_ENABLED]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[float, str, str]] = []
        self.current: tuple[float, str, str] | None = None

    def _close(self) -> None:
        if self.current:
            start, name, action = self.current
            self.rows.append((time.perf_counter() - start, name, action))
            self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional) -> None:
        self._close()
        self.current = (time.perf_counter(), task.get_name(), task.action)

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def v2_playbook_on_stats(self, stats) -> None:
        self._close()
        out = open(os.environ["RF_TASK_TIMES"], "w") if os.environ.get("RF_TASK_TIMES") else sys.stderr  # noqa: SIM115, PTH123
        total = sum(r[0] for r in self.rows)
        by_action: dict[str, list[float]] = {}
        for seconds, _name, action in self.rows:
            by_action.setdefault(action, []).append(seconds)
        out.write(f"{len(self.rows)} tasks, {total:.2f} s\n")
        for action, times in sorted(by_action.items(), key=lambda kv: -sum(kv[1])):
            out.write(f"  {sum(times):7.2f} s {len(times):4d}x  {action}\n")
        for seconds, name, action in sorted(self.rows, reverse=True)[:40]:
            out.write(f"{seconds:7.3f} {action:38} {name}\n")
