"""Parse version evidence: `/opt/rocm/.info/version`, `hipcc --version`, `apt list --installed`,
`dpkg-query -W`, `dnf list installed` and `rpm -q` output. One parse() detects which of these each
line belongs to and returns the fields it found.

AMD packages carry the ROCm release inside the version: `6.2.2.60202-116~22.04` is ROCm 6.2.2
(build code 60202, package release 116, distro suffix ~22.04).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import numbered, require_text

TOOL = "versions"

_VERSION_FILE = re.compile(r"^(?P<version>\d+\.\d+\.\d+)(?:-(?P<build>\d+))?$")
_HIP = re.compile(r"^HIP version: (?P<version>\S+)$")
_CLANG = re.compile(r"^(?P<vendor>AMD )?clang version (?P<version>\S+)(?: \((?P<source>.*)\))?$")
_HIPCC_OTHER = re.compile(r"^(Target|Thread model|InstalledDir|Configuration file): ")
_TIME = re.compile(r"^(real|user|sys)\s+\d+m[\d.]+s$")
_APT = re.compile(r"^(?P<name>[a-z0-9][a-z0-9+.-]*)/(?P<suites>\S+) (?P<version>\S+) (?P<arch>\S+)"
                  r"(?: \[(?P<state>[^\]]+)\])?$")
_DPKG = re.compile(r"^(?P<name>[a-z0-9][a-z0-9+.-]*(?::[a-z0-9]+)?)\s+(?P<version>(?:\d+:)?\d\S*)?$")
_DNF = re.compile(r"^(?P<name>\S+)\.(?P<arch>x86_64|aarch64|noarch|i686|ppc64le|s390x)\s+"
                  r"(?P<version>(?:\d+:)?\d\S*)\s+(?P<repo>@?\S+)$")
_RPM = re.compile(r"^(?P<name>[A-Za-z0-9_.+-]+?)-(?P<version>\d[^-]*-[^-]+)"
                  r"\.(?P<arch>x86_64|aarch64|noarch|i686)$")
_NOT_INSTALLED = re.compile(r"^package (?P<name>\S+) is not installed$")
_NOISE = (re.compile(r"^Listing\.\.\.( Done)?$"), re.compile(r"^WARNING: apt does not have a stable CLI"),
          re.compile(r"^Installed Packages$"), re.compile(r"^Last metadata expiration check"))
_AMD_VERSION = re.compile(r"^(?:\d+:)?(?P<release>\d+\.\d+\.\d+)\.(?P<code>\d{5,6})(?:-(?P<pkgrel>[^~.]+))?")


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    """One installed (or explicitly absent) package as a package manager printed it."""

    name: str
    version: str | None  # None for "package X is not installed"
    arch: str | None
    source: str  # apt, dpkg-query, dnf, rpm
    installed: bool
    rocm_release: str | None  # AMD naming: "6.2.2" from 6.2.2.60202-116~22.04; None otherwise


def _package(name: str, version: str | None, arch: str | None, source: str, installed: bool) -> Package:
    match = _AMD_VERSION.match(version or "")
    return Package(name=name, version=version, arch=arch, source=source, installed=installed,
                   rocm_release=match.group("release") if match else None)


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionsRecord:
    """Everything version-like found in one text."""

    kinds: tuple[str, ...]  # which outputs were recognised, in order of first appearance
    rocm_version: str | None  # from /opt/rocm/.info/version
    rocm_build: int | None  # the "-139" of "6.2.4-139"
    hip_version: str | None  # "6.2.41133-dd7f95766"
    clang_version: str | None  # "18.0.0git"
    clang_vendor: str | None  # "AMD" for AMD clang
    packages: tuple[Package, ...]

    def package(self, name: str) -> Package | None:
        """The first package entry with this name."""
        return next((p for p in self.packages if p.name == name), None)


def parse(text: str) -> VersionsRecord:
    """Parse any of the supported version outputs (or several pasted one after another)."""
    require_text(TOOL, text)
    lines = [(n, line.strip()) for n, line in numbered(text)]
    body = [(n, line) for n, line in lines if line and not line.startswith("$ ")]
    if not body:
        raise ParseError(TOOL, "no output after the command line", expected="version output")
    kinds: list[str] = []
    rocm_version = hip = clang = vendor = None
    rocm_build: int | None = None
    packages: list[Package] = []

    def saw(kind: str) -> None:
        if kind not in kinds:
            kinds.append(kind)

    if len(body) == 1 and (m := _VERSION_FILE.match(body[0][1])):
        build = m.group("build")
        return VersionsRecord(kinds=("rocm-version-file",), rocm_version=m.group("version"),
                              rocm_build=int(build) if build else None, hip_version=None,
                              clang_version=None, clang_vendor=None, packages=())
    for n, line in body:
        if m := _HIP.match(line):
            hip = m.group("version")
            saw("hipcc")
        elif m := _CLANG.match(line):
            clang, vendor = m.group("version"), (m.group("vendor") or "").strip() or None
            saw("hipcc")
        elif _HIPCC_OTHER.match(line) or _TIME.match(line) or any(p.match(line) for p in _NOISE):
            continue
        elif m := _APT.match(line):
            state = m.group("state") or ""
            packages.append(_package(name=m.group("name"), version=m.group("version"), arch=m.group("arch"),
                                    source="apt", installed="installed" in state))
            saw("apt")
        elif m := _DNF.match(line):
            packages.append(_package(name=m.group("name"), version=m.group("version"), arch=m.group("arch"),
                                    source="dnf", installed=m.group("repo").startswith("@")))
            saw("dnf")
        elif m := _RPM.match(line):
            packages.append(_package(name=m.group("name"), version=m.group("version"), arch=m.group("arch"),
                                    source="rpm", installed=True))
            saw("rpm")
        elif m := _NOT_INSTALLED.match(line):
            packages.append(_package(name=m.group("name"), version=None, arch=None, source="rpm",
                                    installed=False))
            saw("rpm")
        elif m := _DPKG.match(line):
            name, _, arch = m.group("name").partition(":")
            version = m.group("version")
            packages.append(_package(name=name, version=version, arch=arch or None, source="dpkg-query",
                                    installed=version is not None))
            saw("dpkg-query")
        else:
            raise ParseError(TOOL, "unrecognised line", line_no=n, line=line,
                             expected="a ROCm version file line, hipcc --version, apt list, dpkg-query -W, "
                                      "dnf list installed or rpm -q output")
    if not kinds:
        raise ParseError(TOOL, "no version information found", expected="at least one version line")
    return VersionsRecord(kinds=tuple(kinds), rocm_version=rocm_version, rocm_build=rocm_build,
                          hip_version=hip, clang_version=clang, clang_vendor=vendor,
                          packages=tuple(packages))
