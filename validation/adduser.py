"""What gpu_access declares in Debian's /etc/adduser.conf, and how a file is brought to it.

New users get the GPU groups through two settings: one EXTRA_GROUPS line naming every group (AMD's
install guide writes two EXTRA_GROUPS= lines, and adduser keeps only the last) and ADD_EXTRA_GROUPS=1.
The role writes the file with `rocm_fleet.fleet.adduser_conf` and the check reads it with `settings`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def settings(groups: Iterable[str]) -> dict[str, str]:
    """The assignments adduser.conf must hold, name -> value as written after the '='."""
    return {"EXTRA_GROUPS": f'"{" ".join(groups)}"', "ADD_EXTRA_GROUPS": "1"}


def _active(name: str) -> re.Pattern[str]:
    """An active (not commented) `name=` line; group 1 is its value."""
    return re.compile(rf"^\s*{name}=(.*)$", re.M)


def assignments(text: str, name: str) -> list[str]:
    """The values of every active `name=` line, in file order."""
    return _active(name).findall(text)


def with_settings(text: str, groups: Iterable[str]) -> str:
    """text with exactly one line per setting: the last existing assignment rewritten in place, else a
    new line after the commented example (`#EXTRA_GROUPS=...`), else at the end; other assignments of
    the same name are dropped. Nothing else in the file changes."""
    lines = text.splitlines()
    for name, value in settings(groups).items():
        active = _active(name)
        hits = [i for i, line in enumerate(lines) if active.match(line)]
        if hits:
            lines[hits[-1]] = f"{name}={value}"
            lines = [line for i, line in enumerate(lines) if i not in hits[:-1]]
            continue
        example = [i for i, line in enumerate(lines) if re.match(rf"^#\s*{name}=", line)]
        lines.insert(example[-1] + 1 if example else len(lines), f"{name}={value}")
    return "".join(f"{line}\n" for line in lines)
