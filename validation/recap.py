"""ansible-playbook's PLAY RECAP, read: one line per host with its task counts.

Read by `rocm-fleet converge` (its slices' recaps), the self_converge role (the node's own run, through
the play_recap and play_failures filters), the integration tests and the benches.
"""

from __future__ import annotations

import re

COUNTS = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
LINE = re.compile(r"^(\S+)\s+:\s+" + r"\s+".join(rf"{name}=(\d+)" for name in COUNTS[:4])
                  + "".join(rf"(?:\s+{name}=(\d+))?" for name in COUNTS[4:]) + r".*$", re.M)


def lines(text: str) -> list[str]:
    """The host lines of the last PLAY RECAP in `text` (none when the run never reached one)."""
    start = text.rfind("PLAY RECAP")
    return [] if start < 0 else [m.group(0) for m in LINE.finditer(text, start)]


def counts(text: str) -> dict[str, dict[str, int]]:
    """Host -> {ok, changed, unreachable, failed, skipped, rescued, ignored} from the last PLAY RECAP."""
    start = text.rfind("PLAY RECAP")
    if start < 0:
        return {}
    return {m[1]: {name: int(m[i + 2] or 0) for i, name in enumerate(COUNTS)} for m in LINE.finditer(text, start)}


_ERROR = "[ERROR]: "
_ERROR_PREFIXES = ("Task failed: Action failed: ", "Task failed: ")


def failures(text: str) -> list[str]:
    """Each failed task's reason, one line each, in order.

    ansible-core 2.19 prints a failure's message as `[ERROR]: Task failed: ...` up to its `Origin:`
    line; the result block under `fatal: [host]: FAILED! =>` is what older versions (and a failure
    without an [ERROR] line) leave, indented when the result format is YAML.
    """
    rows = text.splitlines()
    found: list[str] = []
    for i, row in enumerate(rows):
        if row.startswith(_ERROR):
            block = [row[len(_ERROR):]]
            for more in rows[i + 1:]:
                if not more.strip() or more.startswith("Origin:"):
                    break
                block.append(more.strip())
            found.append(_strip(" ".join(block)))
    if found:
        return found
    for i, row in enumerate(rows):
        if row.startswith(("fatal:", "failed:")):
            block = [row.strip()]
            for more in rows[i + 1:]:
                if not more[:1].isspace():
                    break
                block.append(more.strip())
            found.append(" ".join(block))
    return found


def _strip(message: str) -> str:
    for prefix in _ERROR_PREFIXES:
        if message.startswith(prefix):
            return message[len(prefix):]
    return message
