"""The exception hierarchy. Messages say what happened, where, and what to do."""

from __future__ import annotations


class RocmFleetError(Exception):
    """Base class for every error rocm-fleet raises on purpose."""


class ParseError(RocmFleetError):
    """A tool's output could not be understood.

    Carries the tool, the 1-based line number and the offending line so the message
    points at the exact place; `expected` says what the parser was looking for.
    """

    def __init__(
        self,
        tool: str,
        message: str,
        *,
        line_no: int | None = None,
        line: str | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.tool = tool
        self.line_no = line_no
        self.line = line
        self.expected = expected
        self.hint = hint
        parts = [f"{tool}: {message}"]
        if line_no is not None:
            shown = (line or "").strip()
            if len(shown) > 120:
                shown = shown[:117] + "..."
            parts.append(f"at line {line_no}: {shown!r}")
        if expected:
            parts.append(f"expected {expected}")
        if hint:
            parts.append(hint)
        super().__init__("; ".join(parts))


class TargetError(RocmFleetError):
    """A target profile is invalid (missing source, unknown key, bad number)."""


class UnknownSkuError(TargetError):
    """No target profile exists for the detected or requested SKU."""


class CompatibilityError(RocmFleetError):
    """A ROCm / amdgpu driver / OS / kernel combination is not in the compatibility data."""


class LabError(RocmFleetError):
    """The local lab (podman hosts, package mirror) could not be created or reached."""


class ProbeError(RocmFleetError):
    """A probe could not be run at all (tool missing, no device)."""
