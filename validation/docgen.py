"""Generate docs/variables.md from every role's meta/argument_specs.yml and defaults/main.yml.

`python -m validation.docgen > docs/variables.md`; a unit test fails when the file is stale, so
the reference cannot drift from the roles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from validation.report.markdown import cell as _cell

ROOT = Path(__file__).resolve().parents[1]


def role_dirs(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists())


def _option(name: str, opt: dict) -> list[str]:
    kind = opt.get("type", "str")
    if opt.get("elements"):
        kind += f" of {opt['elements']}"
    out = [f"### `{name}`", "", f"- Type: {kind}"]
    if opt.get("required"):
        out.append("- Required: yes")
    elif "default" in opt:
        # a plain scalar dumps as its own document, with the "..." end marker after it
        shown = yaml.safe_dump(opt["default"], default_flow_style=True).removesuffix("...\n").strip()
        out.append(f"- Default: `{shown}`")
    else:
        out.append("- Default: unset")
    if opt.get("choices"):
        out.append(f"- Choices: {', '.join(f'`{c}`' for c in opt['choices'])}")
    description = opt.get("description", "")
    if isinstance(description, list):
        description = " ".join(description)
    return [*out, "", description, ""]


def render(root: Path = ROOT) -> str:
    out = ["# Role variables reference", "",
           "Generated from each role's `meta/argument_specs.yml` by `python -m validation.docgen`;",
           "a unit test fails when this file and the specs disagree. Defaults are the values in",
           "`defaults/main.yml`. Every role validates these before it changes anything.", ""]
    for role in role_dirs(root):
        spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
        out += [f"## {role.name}", "", spec.get("short_description", ""), ""]
        for name, opt in spec.get("options", {}).items():
            out += _option(name, opt)
    playbooks = yaml.safe_load((root / "playbooks" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    out += ["## playbooks", "", playbooks.get("short_description", ""), "",
            "Owned by `playbooks/argument_specs.yml`; set with `-e` or in the inventory.", ""]
    for name, opt in playbooks.get("options", {}).items():
        out += _option(name, opt)
    return "\n".join(out).rstrip() + "\n"


def render_codes() -> str:
    """docs/codes.md: every stable failure code with its remediation hint, from validation/codes.py."""
    from validation.codes import CODES

    out = ["# Failure codes", "",
           "Generated from `validation/codes.py` by `python -m validation.docgen codes`; a unit test fails when",
           "this file and the table disagree. Every FAIL, WARN, TIMEOUT or ERROR in a results document,",
           "report or JUnit file carries one of these codes and its hint.", "",
           "| code | what to do |", "|---|---|"]
    out += [f"| `{code}` | {_cell(hint)} |" for code, hint in sorted(CODES.items())]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    sys.stdout.write(render_codes() if args[:1] == ["codes"] else render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
