"""Parse `dkms status`: one module/version/kernel/arch/state line per build, in the dkms 3
form (`amdgpu/6.16.6-2255209.24.04, 6.17.0-5-generic, x86_64: installed`) and the dkms 2 form
(`amdgpu, 5.11.32-1350682, 5.4.0-97-generic, x86_64: installed`), including "added" lines that
name no kernel, the "(WARNING! ...)" suffixes and the "Error! ..." lines dkms prints instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import numbered, require_text

TOOL = "dkms-status"

_NEW = re.compile(r"^(?P<module>[^/,\s]+)/(?P<version>[^,\s]+), (?P<kernel>[^,\s]+), (?P<arch>[^,:\s]+): "
                  r"(?P<state>[a-z][a-z-]*)(?P<rest>.*)$")
_OLD = re.compile(r"^(?P<module>[^/,\s]+), (?P<version>[^,\s]+), (?P<kernel>[^,\s]+), (?P<arch>[^,:\s]+): "
                  r"(?P<state>[a-z][a-z-]*)(?P<rest>.*)$")
_ADDED = re.compile(r"^(?P<module>[^/,\s]+)(?:/|, )(?P<version>[^,:\s]+): (?P<state>added)$")
_SUFFIX = re.compile(r"\s*\(([^()]*)\)")
_ERRORS = (re.compile(r"^Error! "), re.compile(r"^File: .* does not exist\.$"))
_MESSAGES = (re.compile(r"^Deprecated feature: "), re.compile(r"^WARNING: "))
_STATES = {"added", "built", "installed", "installed-weak", "unbuilt"}


@dataclass(frozen=True, slots=True, kw_only=True)
class DkmsModule:
    """One `dkms status` line."""

    module: str
    version: str
    kernel: str | None  # None for "added" (not built for any kernel yet)
    arch: str | None
    state: str  # added, built, installed, ...
    warnings: tuple[str, ...]  # "WARNING! Diff between built and installed module!"
    notes: tuple[str, ...]  # other parenthesised suffixes, e.g. "Original modules exist"


@dataclass(frozen=True, slots=True, kw_only=True)
class DkmsStatusRecord:
    """All lines of one `dkms status` run."""

    modules: tuple[DkmsModule, ...]
    errors: tuple[str, ...]  # "Error! Could not locate dkms.conf file." and its "File: ..." line
    messages: tuple[str, ...]

    def named(self, module: str) -> tuple[DkmsModule, ...]:
        """Lines for one module name, e.g. "amdgpu"."""
        return tuple(m for m in self.modules if m.module == module)


def parse(text: str) -> DkmsStatusRecord:
    """Parse `dkms status` output; only the command line and no modules is a valid empty status."""
    require_text(TOOL, text)
    modules: list[DkmsModule] = []
    errors: list[str] = []
    messages: list[str] = []
    command_seen = False
    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line:
            continue
        if not command_seen and not modules and not errors and line.startswith("$ "):
            command_seen = True
            continue
        if any(p.match(line) for p in _ERRORS):
            errors.append(line)
            continue
        if any(p.match(line) for p in _MESSAGES):
            messages.append(line)
            continue
        m = _NEW.match(line) or _OLD.match(line)
        if m is not None:
            rest = m.group("rest")
            suffixes = _SUFFIX.findall(rest)
            if _SUFFIX.sub("", rest).strip():
                raise ParseError(TOOL, "unexpected text after the module state", line_no=line_no, line=raw,
                                 expected="only '(WARNING! ...)' or '(...)' notes after the state")
            if m.group("state") not in _STATES:
                raise ParseError(TOOL, f"unknown module state {m.group('state')!r}", line_no=line_no,
                                 line=raw, expected=f"one of {sorted(_STATES)}")
            modules.append(DkmsModule(
                module=m.group("module"), version=m.group("version"), kernel=m.group("kernel"),
                arch=m.group("arch"), state=m.group("state"),
                warnings=tuple(s for s in suffixes if s.startswith("WARNING")),
                notes=tuple(s for s in suffixes if not s.startswith("WARNING"))))
            continue
        if m := _ADDED.match(line):
            modules.append(DkmsModule(module=m.group("module"), version=m.group("version"), kernel=None,
                                      arch=None, state="added", warnings=(), notes=()))
            continue
        raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=raw,
                         expected="'<module>/<version>, <kernel>, <arch>: <state>' (or the dkms 2 "
                                  "'<module>, <version>, ...' form)")
    return DkmsStatusRecord(modules=tuple(modules), errors=tuple(errors), messages=tuple(messages))
