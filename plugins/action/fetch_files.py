"""rocm_fleet.fleet.fetch_files: copy several files from a node to the controller with one module run.

ansible.builtin.fetch runs a module on the node for every file (with become, `slurp`; without, a
stat for the checksum): playbooks/validate.yml's two fetches of a node's results cost 0.66 s on the
lab's machine. Here rocm_fleet.fleet.read_paths reads them all in one run (as root where the task
becomes root, like fetch's slurp), returns their bytes in base64, and each is written here
atomically (a temporary file in the destination's directory, renamed).
"""

from __future__ import annotations

import base64
import os
import tempfile
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

MAX_BYTES = 256 * 1024 * 1024        # a node's results document is tens of kB to a few MB
ARGUMENTS = {
    "files": {"type": "list", "elements": "dict", "required": True, "options": {
        "src": {"type": "str", "required": True},
        "dest": {"type": "path", "required": True}}},
    "max_bytes": {"type": "int", "default": MAX_BYTES},
}


def write_atomically(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    staging = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        staging.chmod(0o644)
        staging.replace(dest)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = False      # as ansible.builtin.fetch: skipped in check mode

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENTS)
        files = args["files"]
        if relative := [f["src"] for f in files if not f["src"].startswith("/")]:
            return {**result, "failed": True, "msg": f"src must be absolute on the node: {', '.join(relative)}"}
        read = self._execute_module(module_name="rocm_fleet.fleet.read_paths", task_vars=task_vars, module_args={
            "read": [f["src"] for f in files], "max_bytes": args["max_bytes"], "base64": True})
        if read.get("failed"):
            return {**result, "failed": True, "msg": read.get("msg", "could not read the files on the node")}
        problems = [f"{path}: does not exist" for path in read["missing"]] + [
            f"{path}: {why}" for path, why in read["unreadable"].items()]
        if problems:
            return {**result, "failed": True, "msg": "could not fetch " + "; ".join(problems)}
        written = []
        for f in files:          # a relative dest is the playbook's, as for ansible.builtin.fetch
            dest = Path(self._loader.path_dwim(f["dest"]))
            write_atomically(dest, base64.b64decode(read["contents"][f["src"]]))
            written.append(str(dest))
        return {**result, "changed": True, "dest": written}
