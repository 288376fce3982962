"""Every role's public surface agrees with itself: defaults, argument_specs and the docs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from validation import docgen

ROOT = Path(__file__).resolve().parents[3]
ROLES = docgen.role_dirs(ROOT)


def test_there_are_roles() -> None:
    assert {r.name for r in ROLES} >= {"rocm_repo", "amdgpu_driver", "rocm", "node_reboot"}


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_argument_spec_defaults_equal_defaults_main(role: Path) -> None:
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    for name, value in defaults.items():
        assert name in options, f"{role.name}: {name} is in defaults/main.yml but not in argument_specs"
        assert options[name].get("default") == value, (
            f"{role.name}: {name} defaults to {value!r} but argument_specs says {options[name].get('default')!r}")
    own = [n for n in options if n.startswith(role.name + "_")]
    missing = [n for n in own if n not in defaults and not options[n].get("required")]
    assert not missing, f"{role.name}: options without a default in defaults/main.yml: {missing}"


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_every_option_has_a_type_and_description(role: Path) -> None:
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    for name, opt in options.items():
        assert opt.get("type"), f"{role.name}: {name} has no type"
        assert opt.get("description"), f"{role.name}: {name} has no description"


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_every_public_default_is_commented(role: Path) -> None:
    lines = (role / "defaults" / "main.yml").read_text().splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith((" ", "#", "-", "---")) and ":" in line:
            assert i > 0 and lines[i - 1].startswith("#"), f"{role.name}: {line.split(':')[0]} has no comment above it"


def _options(role: Path) -> dict:
    return yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]


def owner_of(name: str) -> str | None:
    """The role a variable belongs to: the longest role name that prefixes it (`rocm_version` -> rocm,
    `rocm_repo_source` -> rocm_repo), None for a variable no role prefixes."""
    owners = [r.name for r in ROLES if name.startswith(r.name + "_")]
    if not owners and name.startswith("validation_"):
        return "validation_node"     # what a node is declared to have, for the checks
    return max(owners, key=len) if owners else None


def test_every_variable_has_one_owner_and_a_re_declaration_matches_it() -> None:
    """A role may re-declare a variable it reads (rocm_repo checks rocm_version), but only as its owner
    declares it: same type, default, choices and required, the owner's description plus "(Owned by X.)"."""
    declared: dict[str, list[str]] = {}
    for role in ROLES:
        for name in _options(role):
            declared.setdefault(name, []).append(role.name)
    checked = 0
    for name, roles in sorted(declared.items()):
        owner = owner_of(name)
        assert owner in roles, f"{name} is declared by {roles} but not by its owner {owner}"
        mine = _options(ROOT / "roles" / owner)[name]
        for other in (r for r in roles if r != owner):
            theirs = _options(ROOT / "roles" / other)[name]
            for key in ("type", "default", "choices", "required", "elements"):
                assert theirs.get(key) == mine.get(key), (
                    f"{other} re-declares {name} with {key} {theirs.get(key)!r}; "
                    f"its owner {owner} says {mine.get(key)!r}")
            assert theirs["description"] == f"{mine['description']} (Owned by {owner}.)", (other, name)
            checked += 1
    assert checked >= 4     # rocm_version twice, amdgpu_driver_mode and _version once each


def test_every_variable_the_checks_read_is_declared_by_its_owner() -> None:
    """A `validation_*` variable a check reads has an owner that declares and documents it."""
    import re
    prefixes = "validation|rocm|amdgpu_driver|node_tuning|gpu_access|env_profiles"
    name = re.compile(rf"spec(?:\.get\(|\[)\"((?:{prefixes})_\w+)\"")
    read = set()
    for path in (ROOT / "validation").rglob("*.py"):
        read |= set(name.findall(path.read_text()))
    assert len(read) > 30, read
    undeclared = sorted(n for n in read if owner_of(n) is None or n not in _options(ROOT / "roles" / str(owner_of(n))))
    assert not undeclared, f"read by the checks but declared by no owner role: {undeclared}"


def test_the_playbooks_variables_have_an_owner_and_restate_only_its_defaults() -> None:
    """Every rocm_fleet_* variable the playbooks read is declared in playbooks/argument_specs.yml (or set
    by the playbooks themselves), and every `rocm_fleet_X | default(V)` restates the declared default."""
    import re
    spec = yaml.safe_load((ROOT / "playbooks" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    text = {p: p.read_text() for p in (ROOT / "playbooks").rglob("*.yml") if p.name != "argument_specs.yml"}
    set_here = {m for t in text.values() for m in re.findall(r"^\s+(rocm_fleet_\w+):", t, re.M)}
    used = {m for t in text.values() for m in re.findall(r"\b(rocm_fleet_\w+)\b", t)}
    undeclared = sorted(used - set(spec) - set_here)
    assert not undeclared, f"read by the playbooks, declared nowhere: {undeclared}"
    restated = [(p.name, name, value) for p, t in text.items()
                for name, value in re.findall(r"\b(rocm_fleet_\w+) \| default\(('[^']*'|\[\]|true|false|\d+)\)", t)]
    assert len(restated) >= 20, restated
    for where, name, value in restated:
        assert yaml.safe_load(value) == spec[name].get("default"), (
            f"{where} defaults {name} to {value}; playbooks/argument_specs.yml says {spec[name].get('default')!r}")


def test_variables_reference_is_generated_from_the_specs() -> None:
    assert (ROOT / "docs" / "variables.md").read_text() == docgen.render(ROOT), (
        "docs/variables.md is stale; run: python -m validation.docgen > docs/variables.md")


def test_every_failure_code_is_in_the_one_table_once_and_every_entry_is_used() -> None:
    import ast
    import re

    from validation.codes import CODES
    from validation.remediate import AWAITED  # the RAS codes the remediation policy names before they exist

    literal = next(n.value for n in ast.parse((ROOT / "validation" / "codes.py").read_text()).body
                   if isinstance(n, ast.AnnAssign) and isinstance(n.value, ast.Dict))
    keys = [k.value for k in literal.keys if isinstance(k, ast.Constant)]
    assert len(keys) == len(set(keys)) == len(CODES), "a code is written twice in validation/codes.py"
    used: dict[str, str] = {}
    for path in [*ROOT.glob("validation/**/*.py"), *ROOT.glob("roles/**/*.yml"), *ROOT.glob("playbooks/**/*.yml")]:
        if path.name != "codes.py":
            for code in re.findall(r"\bRF-[A-Z0-9]+(?:-[A-Z0-9]+)*\b(?!-\{)", path.read_text()):
                used.setdefault(code, str(path.relative_to(ROOT)))
    unknown = {code: where for code, where in used.items() if code not in CODES and code not in AWAITED}
    assert not unknown, f"codes used without a hint in validation/codes.py: {unknown}"
    assert not set(CODES) - set(used), f"codes nothing raises: {sorted(set(CODES) - set(used))}"


def test_failure_code_reference_is_generated_from_the_code_tables() -> None:
    assert (ROOT / "docs" / "codes.md").read_text() == docgen.render_codes(), (
        "docs/codes.md is stale; run: python -m validation.docgen codes > docs/codes.md")


@pytest.mark.parametrize("role", sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/tasks/preflight.yml")))
def test_a_role_with_a_preflight_checks_its_variables_there_as_its_main_entry_point_does(role: str) -> None:
    """playbooks/preflight.yml includes tasks_from: preflight, which Ansible checks against the entry point
    of that name; site.yml then applies the roles with rolespec_validate: false."""
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert specs.get("preflight") == specs["main"], f"{role}: argument_specs has no preflight entry equal to main"
