"""Every module's, filter's and test's documentation renders with ansible-doc, and the modules' EXAMPLES
are valid YAML (issue 32: read_paths' EXAMPLES did not parse, and every filter said UNDOCUMENTED). The
filters' and tests' documentation files are generated from their functions (validation/docgen.py)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import yaml

from validation import docgen

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if not p.name.startswith("_"))


def ansible_doc(kind: str, names: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "ansible-doc"), "-t", kind, *(f"rocm_fleet.fleet.{n}" for n in names)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_the_plugin_documentation_files_are_what_the_functions_say() -> None:
    wanted = docgen.render_plugin_docs()
    for path, text in wanted.items():
        assert (ROOT / path).read_text() == text, f"{path} is stale; run: python -m validation.docgen plugins"
    present = {p.relative_to(ROOT) for kind in ("filter", "test") for p in (ROOT / "plugins" / kind).glob("*.yml")}
    assert present == set(wanted), "documentation for a plugin that is not there"


def test_ansible_doc_renders_every_module_filter_and_test() -> None:
    filters = sorted(docgen.plugin_functions(ROOT, "filter"))
    tests = sorted(docgen.plugin_functions(ROOT, "test"))
    for kind, names, header in (("module", MODULES, "> MODULE"), ("filter", filters, "> FILTER"),
                                ("test", tests, "> TEST")):
        proc = ansible_doc(kind, names)
        assert proc.returncode == 0 and "[ERROR]" not in proc.stderr, proc.stderr[-2000:]
        assert proc.stdout.count(header) == len(names), (kind, proc.stdout[:2000])
    listed = subprocess.run([str(BIN / "ansible-doc"), "-t", "filter", "-l", "rocm_fleet.fleet"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert "UNDOCUMENTED" not in listed.stdout and len(listed.stdout.splitlines()) == len(filters)


def test_every_modules_examples_are_valid_yaml_tasks() -> None:
    for name in MODULES:
        tree = ast.parse((ROOT / "plugins" / "modules" / f"{name}.py").read_text())
        found = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)}
        tasks = yaml.safe_load(found["EXAMPLES"])
        assert isinstance(tasks, list) and all(f"rocm_fleet.fleet.{name}" in task for task in tasks), name
