"""rocm_fleet.fleet.fleet_report: `rocm-fleet report` over one run's results, inside Ansible's own process.

The playbooks' last step aggregates what the nodes delivered (validation/commands/report.py, the
command an operator runs). As a `command` task on the controller it cost a module run and a second
Python, 0.59 s on the lab's machine, around 0.25 s of work; here it costs the work. The documents
are read in this process (--jobs 1): Ansible's worker is not forked again, and a run of a few
thousand nodes reads in a few seconds (docs/measurements/fleet-aggregation.md: 10,000 in 5.6 s).
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

# The package shipped beside this plugin, as for plugins/filter/rocm_fleet.py.
_HERE = str(Path(__file__).resolve().parents[2])
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from validation import cli  # noqa: E402

ARGUMENTS = {
    "results": {"type": "path", "required": True},
    "expect": {"type": "list", "elements": "str", "default": []},
    "unreachable": {"type": "list", "elements": "str", "default": []},
    "reasons": {"type": "dict", "default": {}},    # node -> what the run saw of it, where it delivered nothing
}


def report_argv(args: dict[str, Any]) -> list[str]:
    """`rocm-fleet report`'s argv; every inventory name as `--option=NAME`, so none is read as an option."""
    return ["report", args["results"], "--jobs", "1", *(f"--expect={node}" for node in args["expect"]),
            *(f"--unreachable={node}" for node in args["unreachable"]),
            *(f"--reason={node}={' '.join(str(why).split())}" for node, why in args["reasons"].items() if why)]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False      # reads and writes on the controller only
    _supports_check_mode = True       # writes only the report files, on the controller

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENTS)
        if args["expect"]:    # the run targeted nodes: where none delivered anything, its report says so
            Path(args["results"]).mkdir(parents=True, exist_ok=True)
        argv = report_argv(args)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(argv)
        stdout, stderr = out.getvalue().rstrip("\n"), err.getvalue().rstrip("\n")
        result.update(rc=rc, stdout=stdout, stdout_lines=stdout.splitlines(), stderr=stderr,
                      stderr_lines=stderr.splitlines(), changed=False)
        if rc != 0:
            result.update(failed=True, msg=stderr.splitlines()[-1] if stderr else
                          f"the fleet has failures (exit {rc}): {args['results']}")
        return result
