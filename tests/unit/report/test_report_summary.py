"""The report reads itself: a summary first, checks named by what they prove, one row per check
whatever the host, provenance per node, lab-host failures apart, terminal text wrapped at words.

Inputs are the real H200 results documents (tests/fixtures/real/results/SOURCES.md); the expected
values are read from those files by hand.
"""

from __future__ import annotations

import ast
import copy
import re

from derived_results import FIXTURES, load

from validation.report import render_html, render_terminal
from validation.report.html import check_rows
from validation.report.summary import expected_on_lab_host, failure_groups, overview, provenance
from validation.results import catalog

H200 = FIXTURES / "real" / "results" / "h200"
CHECKS = catalog.CHECKS_DIR
# Check files other engineers own at the moment; their checks are named from the function name
# until they get docstrings (the test below fails once one has it, so the list only shrinks).
NO_DOCSTRING_YET: set[str] = set()


def busy_and_idle() -> list[dict]:
    return [load(H200 / "h200-busy.json"), load(H200 / "h200-idle-1.json")]


def as_lab_host(doc: dict, host: str) -> dict:
    """What a lab host's document adds: the lab marker in its provenance (validation/lab/hosts.py)."""
    out = copy.deepcopy(doc)
    out["host"] = host
    out["provenance"]["lab_host"] = "rfdemo-1a2b3c"
    return out


def test_failures_are_grouped_by_code_with_the_nodes_they_hit() -> None:
    groups = {g["code"]: g for g in failure_groups(busy_and_idle())}
    assert groups["RF-GPU-BUSY"]["nodes"] == ["h200-busy"]                     # the pre-flight, busy run only
    assert groups["RF-ENV-PROFILE"]["nodes"] == ["h200-busy", "h200-idle-1"]
    assert groups["RF-ENV-PROFILE"]["failures"] == 6                             # three checks on each node
    assert [title for _, title in groups["RF-TUNING-CSTATE"]["checks"]] == [
        "The unit that disables the declared CPU idle states at boot is in place and enabled."]
    assert next(iter(groups)) != "RF-GPU-BUSY"                                    # most nodes first


def test_overview_counts_verdicts_and_names_the_nodes_that_need_action() -> None:
    view = overview(busy_and_idle())
    assert view["nodes"] == 2 and dict(view["verdicts"]) == {"fail": 2}
    assert view["action"] == ["h200-busy", "h200-idle-1"] and view["lab_only"] == []
    assert dict(view["checks"])["fail"] == 11 + 10


def test_provenance_names_os_kernel_driver_and_gpus() -> None:
    rows = dict(provenance(load(H200 / "h200-idle-1.json")))
    assert rows["OS"] == "Ubuntu 24.04.3 LTS"
    assert rows["kernel"] == "6.18.44-fc-v973-gpu"
    assert rows["NVIDIA driver"] == "580.159.04"
    assert rows["GPUs on the PCI bus"] == "1 x 0x10de:0x2335"
    assert "ROCm" not in rows and "lab host" not in rows                         # not reported: left out


def test_a_lab_hosts_device_failures_are_expected_and_kept_apart() -> None:
    idle = load(H200 / "h200-idle-1.json")
    lab = as_lab_host(idle, "rflab-1")
    device = [c for c in lab["checks"] if c["needs_gpu"] and c["status"] == "fail"]
    host = [c for c in lab["checks"] if not c["needs_gpu"] and c["status"] == "fail"]
    assert not device   # the idle H200 passes its device checks: fail one as a lab host would
    lab["checks"][0] = {**lab["checks"][0], "status": "fail", "code": "RF-NO-AMD-GPU"}
    assert lab["checks"][0]["needs_gpu"] and expected_on_lab_host(lab, lab["checks"][0])
    assert not expected_on_lab_host(idle, {**lab["checks"][0]})                   # not on a real node
    groups = failure_groups([lab])
    assert [(g["code"], g["expected"]) for g in groups][-1] == ("RF-NO-AMD-GPU", True)   # listed last
    assert host and all(not g["expected"] for g in groups if g["code"] != "RF-NO-AMD-GPU")
    html = render_html([lab], title="t")
    assert "expected on a lab host" in html and "failed as expected on a lab host (no GPU)" in html


def test_one_row_per_check_whatever_the_host() -> None:
    two = []
    for host in ("rflab-1", "rflab-2"):
        doc = copy.deepcopy(load(H200 / "h200-idle-1.json"))
        doc["host"] = host
        for check in doc["checks"]:   # as ansible:// runs name them: the host is in parametrized ids
            if "[local-" in check["id"]:
                check["id"] = check["id"].replace("[local-", f"[ansible://{host}-")
        two.append(doc)
    rows = check_rows(two)
    assert len(rows) == len(two[0]["checks"]) == 208
    assert all(set(r["cells"]) == {"rflab-1", "rflab-2"} for r in rows)
    (babel,) = [r for r in rows if r["key"] == "test_native_probes.py::test_babelstream_hbm_bandwidth_per_gpu[3]"]
    assert babel["title"] == "Each GPU's HBM bandwidth (BabelStream) meets its target." and babel["params"] == "3"


def test_check_keys_drop_only_the_hosts_own_parameter() -> None:
    key = catalog.check_key
    assert key("test_node_tuning.py::test_transparent_huge_pages_mode[ansible://rflab-1-enabled]",
               "rflab-1") == "test_node_tuning.py::test_transparent_huge_pages_mode[enabled]"
    assert key("test_x.py::test_y[local-fp16]", "node7") == "test_x.py::test_y[fp16]"
    assert key("test_x.py::test_y[ssh://root@node7-gpu3]", "node7") == "test_x.py::test_y[gpu3]"
    assert key("test_x.py::test_y[local]", "node7") == "test_x.py::test_y"
    assert key("test_x.py::test_y[gpu5->gpu2]", "node7") == "test_x.py::test_y[gpu5->gpu2]"


def test_every_check_says_what_it_proves() -> None:
    missing, named = set(), set()
    for path in sorted(CHECKS.glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                (named if ast.get_docstring(node) else missing).add(path.name)
    assert missing == NO_DOCSTRING_YET, ("checks without a docstring (reports name a check by it): "
                                         f"{sorted(missing - NO_DOCSTRING_YET)}; got one since: "
                                         f"{sorted(NO_DOCSTRING_YET - missing)}")
    assert catalog.describe("test_node_tuning.py::test_numa_balancing") == (
        "Automatic NUMA balancing (kernel.numa_balancing) has the declared value.")
    assert catalog.describe("test_gpu_idle.py::test_gpus_are_idle_before_measuring") == (
        "No other process, load, memory or clock throttling is on any GPU before the first probe.")
    assert catalog.describe("results_delivered") == "Results delivered"     # no check function: named from the id


def test_the_report_opens_with_the_summary_and_names_checks_by_what_they_prove() -> None:
    html = render_html(busy_and_idle(), title="t")
    headings = re.findall(r"<h2[^>]*>([^<]+)</h2>", html)
    assert headings[:4] == ["Summary", "Nodes", "Checks", "Measurements per GPU: h200-busy"]
    assert html.index("RF-GPU-BUSY") < html.index('<h2 id="nodes">')
    assert ("The unit that disables the declared CPU idle states at boot is in place and enabled.<br>"
            '<span class="id">test_node_tuning.py::test_cpuidle_unit_is_enabled</span>') in html
    assert not re.search(r"<script|<link|<img|src=|url\(", html)    # self-contained: nothing to fetch


def test_terminal_lines_wrap_at_words_instead_of_cutting_them() -> None:
    doc = load(H200 / "h200-busy.json")
    (busy,) = [c for c in doc["checks"] if c.get("code") == "RF-GPU-BUSY"]
    text = render_terminal([doc], columns=72)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "RF-GPU-BUSY" in line)
    body = []
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        body.append(line.strip())
    assert body and all(len(line) <= 66 for line in body)
    words = busy["message"].splitlines()[0].split()
    shown = " ".join(body).removesuffix(" [...] (the whole message is in the node's JSON)").split()
    assert shown == words[:len(shown)]                  # whole words, in order: none was cut
