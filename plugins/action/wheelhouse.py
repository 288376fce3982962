"""rocm_fleet.fleet.wheelhouse: find or build this checkout's wheelhouse, inside Ansible's own process.

The work is validation/wheelhouse.py's (a digest of the package's files, a reproducible build when
no wheelhouse has that digest). Run as a `command` task it cost a module run on the controller,
0.54 s on the lab's machine, around 0.08 s of work; here it costs the work.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

# The package shipped beside this plugin, as for plugins/filter/rocm_fleet.py (Path.resolve: the
# checkout's collections/ link).
_HERE = str(Path(__file__).resolve().parents[2])
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from validation import wheelhouse  # noqa: E402

ARGUMENTS = {"root": {"type": "path", "required": True}, "dir": {"type": "path", "required": True}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False      # the controller's work only: no host is contacted
    _supports_check_mode = True       # --check runs need the wheels too; building them changes no node

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENTS)
        try:
            path, built = wheelhouse.ensure(Path(args["root"]).resolve(), Path(args["dir"]).resolve())
        except wheelhouse.WheelhouseError as exc:
            return {**result, "failed": True, "msg": f"wheelhouse: {exc}"}
        return {**result, "changed": built, "path": str(path), "built": built,
                "digest": (path / wheelhouse.DIGEST_FILE).read_text().strip()}
