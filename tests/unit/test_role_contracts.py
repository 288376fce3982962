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


def test_every_failure_code_has_one_hint_in_one_table() -> None:
    from validation.checks.outcome import CHECK_CODES
    from validation.checks.tuning_codes import TUNING_CODES
    from validation.judge import CODES

    tables = {"validation/judge.py": CODES, "validation/checks/outcome.py": CHECK_CODES,
              "validation/checks/tuning_codes.py": TUNING_CODES}
    seen: dict[str, list[str]] = {}
    for where, table in tables.items():
        for code in table:
            seen.setdefault(code, []).append(where)
    twice = {code: where for code, where in seen.items() if len(where) > 1}
    assert not twice, f"codes with a hint in more than one table (docs/codes.md lists them twice): {twice}"


def test_failure_code_reference_is_generated_from_the_code_tables() -> None:
    assert (ROOT / "docs" / "codes.md").read_text() == docgen.render_codes(), (
        "docs/codes.md is stale; run: python -m validation.docgen codes > docs/codes.md")
