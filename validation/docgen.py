"""Generate docs/variables.md from every role's meta/argument_specs.yml and defaults/main.yml.

`python -m validation.docgen > docs/variables.md`; a unit test fails when the file is stale, so
the reference cannot drift from the roles.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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


# The Jinja plugins' documentation, as ansible-doc reads it for a file that holds several plugins: one
# `<plugin>.yml` beside the file per filter or test, generated here from the Python function it maps to
# (its docstring and signature), so the documentation and the code cannot drift apart.
PLUGIN_FILES = {"filter": Path("plugins/filter/rocm_fleet.py"), "test": Path("plugins/test/rocm_fleet.py")}


def plugin_functions(root: Path, kind: str) -> dict[str, Any]:
    """name -> function of the filters (kind "filter") or tests ("test") the collection's file defines."""
    import importlib.util

    path = root / PLUGIN_FILES[kind]
    spec = importlib.util.spec_from_file_location(f"_rocm_fleet_{kind}_plugins", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.FilterModule().filters() if kind == "filter" else module.TestModule().tests()
    return dict(sorted(table.items()))


class _IndentedDumper(yaml.SafeDumper):
    """Sequences indented under their key, as yamllint's default indentation rule wants."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def render_plugin_doc(name: str, function: Any, kind: str) -> str:
    """One plugin's documentation file: DOCUMENTATION and RETURN from the function's docstring and
    signature (the first parameter is the value the filter or test is applied to)."""
    import inspect

    doc = inspect.getdoc(function) or f"{name}."
    first, _, rest = doc.partition("\n\n")
    short = " ".join(first.split())
    description = [" ".join(part.split()) for part in rest.split("\n\n") if part.strip()] or [short]
    params = list(inspect.signature(function).parameters.values())
    options: dict[str, Any] = {}
    for index, param in enumerate(params):
        key = "_input" if index == 0 else param.name
        option: dict[str, Any] = {"description": "The value the " + kind + " is applied to." if index == 0 else
                                  f"The {kind}'s argument {param.name}.", "type": "raw"}
        if param.default is inspect.Parameter.empty:
            option["required"] = True
        options[key] = option
    document = {"name": name, "version_added": "0.1.0", "short_description": short,
                "description": description, "author": ["rocm-fleet developers"], "options": options}
    if len(params) > 1:
        document["positional"] = ", ".join(p.name for p in params[1:])
    returned = {"_value": {"description": "What the " + kind + " gives (see the description).",
                           "type": "boolean" if kind == "test" else "raw"}}
    body = yaml.dump({"DOCUMENTATION": document, "RETURN": returned}, Dumper=_IndentedDumper, sort_keys=False,
                     width=100)
    return f"---\n# Generated by `python -m validation.docgen plugins` from {PLUGIN_FILES[kind]}; do not edit.\n{body}"


def render_plugin_docs(root: Path = ROOT) -> dict[Path, str]:
    """Every filter's and test's documentation file, by its path relative to `root`."""
    return {PLUGIN_FILES[kind].parent / f"{name}.yml": render_plugin_doc(name, function, kind)
            for kind in PLUGIN_FILES for name, function in plugin_functions(root, kind).items()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["plugins"]:            # writes the files (several), not stdout
        for path, text in render_plugin_docs().items():
            (ROOT / path).write_text(text)
        return 0
    sys.stdout.write(render_codes() if args[:1] == ["codes"] else render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
