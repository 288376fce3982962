"""A stand-in for a testinfra host that answers from recorded real outputs, for unit tests of checks.

The checks take testinfra's `host`; here `run()` answers a command by the first recorded prefix it
contains (unrecorded commands exit 127, as a missing tool would), `exists()` says which tools are
installed, and `file()` answers sysfs paths from a dict. Integration tests use real hosts instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@dataclass
class Out:
    rc: int
    stdout: str
    stderr: str = ""


@dataclass
class RecordedFile:
    exists: bool
    content_string: str = ""
    entries: list[str] = field(default_factory=list)

    @property
    def is_directory(self) -> bool:
        return self.exists

    def listdir(self) -> list[str]:
        return self.entries


class RecordedHost:
    """answers: command prefix -> fixture path under tests/fixtures; tools: installed tools (None: all);
    files: sysfs path -> content; pci: what the PCI listing of discovery.pci_gpus prints;
    every_path_exists: file() reports any path present (checks that only test existence)."""

    backend = SimpleNamespace(NAME="recorded")     # not "local": checks do not look at this machine's /proc

    def __init__(self, answers: dict[str, str], *, tools: set[str] | None = None,
                 files: dict[str, str] | None = None, pci: str = "", every_path_exists: bool = False) -> None:
        self.answers, self.tools, self.files, self.pci = answers, tools, files or {}, pci
        self.every_path_exists = every_path_exists

    def run(self, command: str) -> Out:
        if "/sys/bus/pci/devices/*" in command:     # discovery.pci_gpus's listing: "bdf class vendor device"
            return Out(0, self.pci)
        for prefix, path in self.answers.items():
            if prefix in command:
                return Out(0, (FIXTURES / path).read_text())
        return Out(127, "", f"not recorded: {command}")

    def exists(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def file(self, path: str) -> RecordedFile:
        if path == "/sys/class/net":
            return RecordedFile(True, entries=sorted({p.split("/")[4] for p in self.files if p.startswith(path)}))
        present = self.every_path_exists or path in self.files or path == "/sys/module/amdgpu"
        return RecordedFile(present, self.files.get(path, ""))
