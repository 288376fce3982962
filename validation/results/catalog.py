"""What each check proves, in words: the first paragraph of its docstring, read from the source.

Reports name a check by this sentence and show the pytest id beneath it. The source is read, not
imported (the checks import testinfra and pytest fixtures); a check without a docstring is named
from its function name ("test_numa_balancing" -> "Numa balancing").
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

CHECKS_DIR = Path(__file__).resolve().parents[1] / "checks"
_HOST_ID = r"(?:[a-z][a-z0-9+.-]*://(?:[^@\]/]*@)?)?"   # testinfra's backend prefix, ansible:// ssh://user@


_BACKEND = re.compile(rf"{_HOST_ID}")
_AFTER_HOST = re.compile(r"(?::\d+)?(?:-|$)")


def check_key(check_id: str, host: str) -> str:
    """The check's id with the host's own parameter removed, so one check is one row whatever the
    host: 'f.py::t[ansible://n1-enabled]' on n1 -> 'f.py::t[enabled]'; 'f.py::t[local]' -> 'f.py::t'."""
    head, sep, params = check_id.partition("[")
    if not sep or not params.endswith("]"):
        return check_id
    params = params[:-1]
    end = _host_parameter_end(params, host)
    if end is not None:
        params = params[end:]
    return f"{head}[{params}]" if params else head


def _host_parameter_end(params: str, host: str) -> int | None:
    """Where `params` continues after a leading '[backend://[user@]](host|local)[:port]' and its
    '-', or None: what one regex per host (_HOST_ID, then the host or 'local', a port, a '-' or the
    end) would match, tried in the order re would try it (the longest backend prefix first), without
    compiling a pattern per host, which for a report of thousands of hosts meant one per check."""
    prefix = _BACKEND.match(params)
    full = prefix.end() if prefix else 0
    scheme = params.find("://", 0, full) + 3 if full else 0
    for start in dict.fromkeys((full, scheme, 0)):          # backend with user@, without it, none at all
        for name in (host, "local"):
            if params.startswith(name, start):
                after = _AFTER_HOST.match(params, start + len(name))
                if after:
                    return after.end()
    return None


@functools.cache
def _docstrings(module: str) -> dict[str, str]:
    path = CHECKS_DIR / module
    if not path.is_file() or path.parent != CHECKS_DIR:
        return {}
    tree = ast.parse(path.read_text())
    return {node.name: ast.get_docstring(node) or "" for node in tree.body if isinstance(node, ast.FunctionDef)}


def describe(check_id: str) -> str:
    """One sentence for the check behind `check_id` ('test_x.py::test_y[...]'), parameters left out."""
    module, _, rest = check_id.partition("::")
    name = rest.split("[", 1)[0] or module
    doc = _docstrings(Path(module).name).get(name, "") if rest else ""
    if doc:
        return " ".join(doc.split("\n\n", 1)[0].split())
    words = re.sub(r"^test_", "", name).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def parameters(key: str) -> str:
    """The parameter part of a check key ('gpu3-fp16'), '' when it has none."""
    return key.split("[", 1)[1][:-1] if "[" in key and key.endswith("]") else ""
