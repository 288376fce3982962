"""Every source a reader is pointed at is in the repository or at a public address.

Markdown links must resolve to a file of this repository; no tracked file may cite a path outside
it (`../shared/...`, the project's working folders), which a user of the repository cannot open.
Verbatim tool outputs and recorded logs are evidence, not citations, and are not read here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
OUTSIDE = re.compile(r"(?<![\w.])(?:\.\./)+shared/|/work/shared/")
TEXT = (".md", ".py", ".yml", ".yaml", ".j2", ".cfg", ".toml", ".sh", ".ini")
EVIDENCE = ("tests/fixtures/real/", "tests/fixtures/derived/", "docs/measurements/")
# Files another engineer owns at the moment that still cite the old reference; the test fails when
# one of them stops citing it, so this list only shrinks.
NOT_YET = {"validation/targets/data/h100.yaml", "validation/targets/data/h200.yaml",
           "validation/targets/data/mi300x.yaml", "validation/targets/data/mi325x.yaml"}


def tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.split()


def readable(name: str) -> bool:
    """A file a reader reads as text: not evidence data (SOURCES.md, which cites, is read), and not
    this test, which spells the patterns out to test them."""
    if name.endswith("SOURCES.md"):
        return True
    return name.endswith(TEXT) and not name.startswith(EVIDENCE) and name != "tests/unit/test_docs_links.py"


def test_markdown_links_point_at_files_of_this_repository() -> None:
    broken = []
    for name in tracked("*.md"):
        path = ROOT / name
        for target in LINK.findall(path.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target):      # http(s)://, mailto:, in-page anchors
                continue
            resolved = (path.parent / target.split("#", 1)[0]).resolve()
            if ROOT not in (resolved, *resolved.parents) or not resolved.exists():
                broken.append(f"{name}: ({target})")
    assert not broken, "links to nothing in this repository:\n" + "\n".join(broken)


def test_no_file_cites_a_path_outside_the_repository() -> None:
    citing = {name for name in tracked() if readable(name) and OUTSIDE.search((ROOT / name).read_text())}
    assert citing - NOT_YET == set(), f"cite files outside the repository: {sorted(citing - NOT_YET)}"
    assert citing >= NOT_YET, f"no longer cite outside files, drop them from NOT_YET: {sorted(NOT_YET - citing)}"


def test_the_outside_path_pattern_catches_what_it_should() -> None:
    assert OUTSIDE.search("copied from `../shared/reference/validation.md`")
    assert OUTSIDE.search("see ../../shared/DESIGN.md")
    assert OUTSIDE.search("Copied verbatim from /work/shared/fixtures/real/rvs/")
    assert not OUTSIDE.search("Librccl path : /shared/apps/ubuntu/opt/rocm-6.4.2/lib/librccl.so.1")
