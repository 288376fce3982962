"""rocm_fleet.fleet.fetch_files: copy several files from a node to the controller, with no module run
where the login user may read them and with one where it may not.

ansible.builtin.fetch runs a module on the node for every file (with become, `slurp`; without, a
stat for the checksum): playbooks/validate.yml's two fetches of a node's results cost 0.66 s on the
lab's machine. Here each file first comes through the connection's own transfer (sftp or scp over
the host's one SSH connection; SSH protects what it carries); where that fails for any file (the
login user may not read it, it is missing), rocm_fleet.fleet.read_paths reads them all in one run as
the task's become user, like fetch's slurp, and returns their bytes in base64. Every file is written
here atomically (a temporary file in the destination's directory, renamed), and only when all came.

The size cap (max_bytes, default MAX_BYTES) is checked on the node before any byte is transferred: one
`stat` through the connection's shell (as the task's become user; no module run) gives each source's
type and size, and a source over the cap, or one that is not a regular file (a FIFO or a device would
never end), refuses the task naming the file and its size. Where stat cannot say (not installed, the
file is missing), read_paths checks the cap on the node; a file that grew past the cap after the stat
is refused when it has come, and nothing is written.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import stat
import tempfile
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase

MAX_BYTES = 256 * 1024 * 1024        # a node's results document is tens of kB to a few MB
_STAT_LINE = re.compile(r"(?P<mode>[0-9a-f]{1,8}) (?P<size>[0-9]{1,20})|-")
_KINDS = {stat.S_IFDIR: "directory", stat.S_IFIFO: "fifo", stat.S_IFCHR: "character device",
          stat.S_IFBLK: "block device", stat.S_IFSOCK: "socket"}
ARGUMENTS = {
    "files": {"type": "list", "elements": "dict", "required": True, "options": {
        "src": {"type": "str", "required": True},
        "dest": {"type": "path", "required": True}}},
    "max_bytes": {"type": "int", "default": MAX_BYTES},
}


def write_all(files: list[tuple[Path, bytes]]) -> None:
    """Every file staged beside its destination first, then each renamed into place: a write that fails
    leaves every destination as it was."""
    staged: list[tuple[Path, Path]] = []
    try:
        for dest, data in files:
            dest.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
            staged.append((Path(name), dest))
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            Path(name).chmod(0o644)
        for staging, dest in staged:
            staging.replace(dest)
    finally:
        for staging, _ in staged:
            staging.unlink(missing_ok=True)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = False      # as ansible.builtin.fetch: skipped in check mode

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENTS)
        files = args["files"]
        read = None
        if relative := [f["src"] for f in files if not f["src"].startswith("/")]:
            return {**result, "failed": True, "msg": f"src must be absolute on the node: {', '.join(relative)}"}
        dests = [Path(self._loader.path_dwim(f["dest"])) for f in files]   # relative: the playbook's, as for fetch
        if refused := self._refused([f["src"] for f in files], args["max_bytes"]):
            return {**result, "failed": True, "msg": "refused before transfer: " + "; ".join(refused)}
        with tempfile.TemporaryDirectory(prefix="rocm-fleet-fetch-") as tmp:
            came = self._transfer([f["src"] for f in files], Path(tmp), args["max_bytes"])
            if came is None:
                read = self._execute_module(module_name="rocm_fleet.fleet.read_paths", task_vars=task_vars,
                                            module_args={"read": [f["src"] for f in files],
                                                         "max_bytes": args["max_bytes"], "base64": True})
                if read.get("failed"):
                    return {**result, "failed": True, "msg": read.get("msg", "could not read the files on the node")}
                problems = [f"{path}: does not exist" for path in read["missing"]] + [
                    f"{path}: {why}" for path, why in read["unreadable"].items()]
                if problems:
                    return {**result, "failed": True, "msg": "could not fetch " + "; ".join(problems)}
                came = [base64.b64decode(read["contents"][f["src"]]) for f in files]
            write_all(list(zip(dests, came, strict=True)))
        return {**result, "changed": True, "dest": [str(d) for d in dests], "module_run": read is not None}

    def _refused(self, sources: list[str], max_bytes: int) -> list[str]:
        """Why each source that must not come is refused, from its type and size on the node (one shell
        command through the connection, as the task's become user); a source stat cannot say is left to the
        checks after it (read_paths checks the cap on the node). A connection that fails is raised."""
        script = ("for p in " + " ".join(shlex.quote(s) for s in sources)
                  + '; do stat -L -c "%f %s" -- "$p" 2>/dev/null || echo -; done')
        out = self._low_level_execute_command(script, sudoable=True)
        lines = [line for line in str(out.get("stdout", "")).splitlines() if _STAT_LINE.fullmatch(line.strip())]
        if len(lines) != len(sources):          # no stat, or a shell that printed more: nothing known
            return []
        refused = []
        for src, line in zip(sources, lines, strict=True):
            m = _STAT_LINE.fullmatch(line.strip())
            if m is None or m.group("mode") is None:
                continue
            mode, size = int(m.group("mode"), 16), int(m.group("size"))
            if not stat.S_ISREG(mode):
                kind = _KINDS.get(stat.S_IFMT(mode), "not a file")
                refused.append(f"{src} is not a regular file on the node ({kind})")
            elif size > max_bytes:
                refused.append(f"{src} is {size} bytes on the node, more than max_bytes {max_bytes}; raise max_bytes "
                               "for this task to fetch it")
        return refused

    def _transfer(self, sources: list[str], tmp: Path, max_bytes: int) -> list[bytes] | None:
        """Every source's bytes through the connection's own file transfer, or None where one of them
        could not come that way. A connection that fails is raised (the host is unreachable)."""
        # ssh's "smart" transfer tries sftp, then scp, then dd, each failure with a warning: for a file the
        # login user may not read, sftp's failure is the answer (read_paths reads it), so sftp alone
        if "ssh_transfer_method" in getattr(self._connection, "option_definitions", {}) \
                and self._connection.get_option("ssh_transfer_method") == "smart":
            self._connection.set_option("ssh_transfer_method", "sftp")
        came = []
        for number, src in enumerate(sources):
            local = tmp / str(number)
            try:
                self._connection.fetch_file(src, str(local))
            except AnsibleConnectionFailure:
                raise
            except AnsibleError:
                return None
            if not local.is_file() or local.stat().st_size > max_bytes:
                return None
            came.append(local.read_bytes())
        return came
