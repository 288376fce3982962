"""ansible-playbook's PLAY RECAP, read: one line per host with its task counts.

Read by `rocm-fleet converge` (its slices' recaps), the self_converge role (the node's own run, through
the play_recap filter), the integration tests and the benches.
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
