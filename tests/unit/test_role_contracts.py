"""Every role's public surface agrees with itself: defaults, argument_specs and the docs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from validation import docgen

ROOT = Path(__file__).resolve().parents[2]
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


def test_variables_reference_is_generated_from_the_specs() -> None:
    assert (ROOT / "docs" / "variables.md").read_text() == docgen.render(ROOT), (
        "docs/variables.md is stale; run: python -m validation.docgen > docs/variables.md")


def test_every_failure_code_is_in_the_one_table_once_and_every_entry_is_used() -> None:
    import ast
    import re

    from validation.codes import CODES

    literal = next(n.value for n in ast.parse((ROOT / "validation" / "codes.py").read_text()).body
                   if isinstance(n, ast.AnnAssign) and isinstance(n.value, ast.Dict))
    keys = [k.value for k in literal.keys if isinstance(k, ast.Constant)]
    assert len(keys) == len(set(keys)) == len(CODES), "a code is written twice in validation/codes.py"
    used: dict[str, str] = {}
    for path in [*ROOT.glob("validation/**/*.py"), *ROOT.glob("roles/**/*.yml"), *ROOT.glob("playbooks/**/*.yml")]:
        if path.name != "codes.py":
            for code in re.findall(r"\bRF-[A-Z0-9]+(?:-[A-Z0-9]+)*\b(?!-\{)", path.read_text()):
                used.setdefault(code, str(path.relative_to(ROOT)))
    unknown = {code: where for code, where in used.items() if code not in CODES}
    assert not unknown, f"codes used without a hint in validation/codes.py: {unknown}"
    assert not set(CODES) - set(used), f"codes nothing raises: {sorted(set(CODES) - set(used))}"


def test_failure_code_reference_is_generated_from_the_code_tables() -> None:
    assert (ROOT / "docs" / "codes.md").read_text() == docgen.render_codes(), (
        "docs/codes.md is stale; run: python -m validation.docgen codes > docs/codes.md")
