"""Every source a reader is pointed at is in the repository or at a public address.

Markdown links must resolve to a file of this repository; no tracked file may cite a path outside
it (`../shared/...`, the project's working folders), which a user of the repository cannot open.
What a user reads (validation/, docs/, roles/, playbooks/, plugins/, inventories/, README.md) must not cite a
private document by its bare name (`validation.md §2.2`, `provisioning.md`, a `§` section with no
document), and every repository path it cites must exist (with its `#anchor`, for Markdown).
Verbatim tool outputs and recorded logs are evidence, not citations, and are not read here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
OUTSIDE = re.compile(r"(?<![\w.])(?:\.\./)+shared/|/work/shared/")
# Documents only the project's authors have: the research notes by their bare names (a repository
# file is cited by its path, e.g. docs/validate.md, and a public one by its URL), a section sign
# with no document before it, or the notes' folder (also caught, for every tracked file, by OUTSIDE).
PRIVATE = re.compile(
    r"(?<![\w./-])(?:reference/)?(?:validation|provisioning)\.md\b"
    r"|§\s*\d"
    r"|(?:\.\./)+shared/|/work/shared/|\bshared/reference\b"
    r"|\b(?:provisioning|validation|shared) reference\b",
    re.IGNORECASE)
TEXT = (".md", ".py", ".yml", ".yaml", ".j2", ".cfg", ".toml", ".sh", ".ini")
EVIDENCE = ("tests/fixtures/real/", "tests/fixtures/derived/", "docs/measurements/")
USER_FACING = ("validation", "docs", "roles", "playbooks", "plugins", "inventories", "README.md")
# A repository path as text cites it: a top-level folder of this repository, then a file name with
# an extension (or a folder, ending in /), not inside a URL or a longer path; `#anchor` optional.
REPO_PATH = re.compile(
    r"(?<![\w./:@~-])((?:validation|docs|roles|playbooks|inventories|tests|bench)/[\w.+/-]*)"
    r"(#[\w-]+)?(?P<tail>[*<{]?)")


def tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.split()


def ignored(paths: set[str]) -> set[str]:
    """The paths git ignores: files a user makes (inventories/lab/hosts.yml), not ones the repository cites."""
    if not paths:
        return set()
    out = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(sorted(paths)),
                         capture_output=True, text=True, check=False, timeout=60)
    return set(out.stdout.split())


def readable(name: str) -> bool:
    """A file a reader reads as text: not evidence data (SOURCES.md, which cites, is read), and not
    this test, which spells the patterns out to test them."""
    if name.endswith("SOURCES.md"):
        return True
    if name.startswith("docs/measurements/") and name.endswith(".md"):
        return True       # the measurement write-ups cite; the recorded outputs next to them are evidence
    return name.endswith(TEXT) and not name.startswith(EVIDENCE) and name != "tests/unit/cli/test_docs_links.py"


def user_facing() -> list[str]:
    return [name for name in tracked(*USER_FACING) if readable(name)]


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)    # headings, not code comments
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.M)}


def private_citations(text: str) -> list[str]:
    return [m.group(0) for m in PRIVATE.finditer(text)]


def missing_repo_paths(text: str) -> set[str]:
    """The repository paths `text` cites that do not exist (or whose Markdown #anchor is not a heading)."""
    cited: dict[str, str] = {}
    for m in REPO_PATH.finditer(text):
        path, anchor = m.group(1).rstrip("."), m.group(2) or ""
        if m.group("tail") or ("." not in path.rsplit("/", 1)[-1] and not path.endswith("/")):
            continue      # a pattern (docs/<file>.md, *.txt) or no file named (inventories/prod: one you create)
        cited[path + anchor] = path
    missing = {shown for shown, path in cited.items()
               if not (ROOT / path).exists()
               or ("#" in shown and path.endswith(".md") and shown.split("#", 1)[1] not in anchors(ROOT / path))}
    users_own = ignored({cited[shown] for shown in missing})
    return {shown for shown in missing if cited[shown] not in users_own}


def test_markdown_links_point_at_files_of_this_repository() -> None:
    broken = []
    for name in tracked("*.md"):
        path = ROOT / name
        for target in LINK.findall(path.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target):      # http(s)://, mailto:, in-page anchors
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve()
            if ROOT not in (resolved, *resolved.parents) or not resolved.exists():
                broken.append(f"{name}: ({target})")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{name}: ({target}): no heading #{anchor}")
    assert not broken, "links to nothing in this repository:\n" + "\n".join(broken)


def test_no_file_cites_a_path_outside_the_repository() -> None:
    citing = sorted(name for name in tracked() if readable(name) and OUTSIDE.search((ROOT / name).read_text()))
    assert not citing, f"cite files outside the repository: {citing}"


def test_no_user_facing_file_cites_a_private_document() -> None:
    found = {name: hits for name in user_facing() if (hits := private_citations((ROOT / name).read_text()))}
    assert not found, ("cite documents a user cannot open (cite the public URL, or the repository file "
                       f"by its path): {found}")


def test_every_repository_path_a_user_facing_file_cites_exists() -> None:
    found = {name: sorted(missing) for name in user_facing()
             if (missing := missing_repo_paths((ROOT / name).read_text()))}
    assert not found, f"cite repository paths that do not exist: {found}"


def test_the_outside_path_pattern_catches_what_it_should() -> None:
    assert OUTSIDE.search("copied from `../shared/reference/validation.md`")
    assert OUTSIDE.search("see ../../shared/DESIGN.md")
    assert OUTSIDE.search("Copied verbatim from /work/shared/fixtures/real/rvs/")
    assert not OUTSIDE.search("Librccl path : /shared/apps/ubuntu/opt/rocm-6.4.2/lib/librccl.so.1")


@pytest.mark.parametrize("text", [
    "RVS gst_single.conf @21584e14 (validation.md §1.2)",
    "Azure/azhpc-images `lspci -d 1002:74bd` (provisioning.md §1.3)",
    "[?] not confirmed (reference/provisioning.md 2.4)",
    "values in validation.md",
    "SuperBench `uncorrected_ecc > 0` (§1.1)",
    "summarised in the project's provisioning reference, section 2.5",
    "Numbers from ../shared/reference/validation.md",
    "see shared/reference for the table",
])
def test_the_private_pattern_catches_bare_private_documents(text: str) -> None:
    assert private_citations(text), text


@pytest.mark.parametrize("text", [
    "AMD network validation, https://github.com/ROCm/system-acceptance-docs/blob/23e73127/docs/network/validation.md",
    "see docs/validate.md and docs/provision.md",
    "RFC 4880 sections 6 and 12.2",
    "the burn-in's own reference result",
])
def test_the_private_pattern_leaves_public_and_repository_citations_alone(text: str) -> None:
    assert not private_citations(text), text


def test_the_repository_path_check_catches_what_it_should() -> None:
    assert missing_repo_paths("see docs/no-such-page.md") == {"docs/no-such-page.md"}
    assert missing_repo_paths("(docs/targets.md#no-such-heading)") == {"docs/targets.md#no-such-heading"}
    assert missing_repo_paths("tests/fixtures/real/rocminfo/no-such-output.txt") == {
        "tests/fixtures/real/rocminfo/no-such-output.txt"}
    assert not missing_repo_paths("docs/targets.md#targets-and-verdicts, validation/targets/data/mi300x.yaml.")
    assert not missing_repo_paths("https://github.com/ROCm/system-acceptance-docs/blob/23e73127/docs/gpus/mi300x.md")
    assert not missing_repo_paths("write docs/measurements/<file>.md; fixtures *-burnin-*.txt; "
                                  "validation/targets/data/*.yaml; cp -r inventories/example inventories/prod")
    assert not missing_repo_paths("ansible -i inventories/lab/hosts.yml lab")     # git-ignored: the user's own
