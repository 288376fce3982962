"""A node that delivered nothing is a named failure; per-node compare; acceptance reports."""

from __future__ import annotations

import json
from pathlib import Path

from validation.cli import main
from validation.report.acceptance import batch_markdown, gpu_serials, node_markdown, verdict
from validation.report.load import with_missing


def node(host: str, *, status: str = "pass", complete: bool = True, value: float = 600.0,
         provenance: dict | None = None) -> dict:
    return {"schema_version": 1, "host": host, "complete": complete, "tier": "acceptance",
            "provenance": provenance or {},
            "checks": [{"id": "c", "name": "test_gemm", "status": status, "code": "RF-BELOW-TARGET" if status == "fail"
                        else None, "message": "gpu3 gemm_bf16: 400 < 551.95", "hint": "reseat"}],
            "measurements": [{"metric": "gemm_bf16_tflops", "subject": "gpu0", "value": value, "unit": "TFLOPS",
                              "higher_is_better": True, "status": status}]}


def write(directory: Path, *docs: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (directory / f"{doc['host']}.json").write_text(json.dumps(doc))
    return directory


def test_expected_nodes_without_a_document_become_named_failures() -> None:
    nodes = with_missing([node("n1")], ["n1", "n2", "n3"], ["n3"])
    assert [n["host"] for n in nodes] == ["n1", "n2", "n3"]
    codes = {n["host"]: n["checks"][0]["code"] for n in nodes}
    assert codes == {"n1": None, "n2": "RF-NODE-NO-RESULTS", "n3": "RF-NODE-UNREACHABLE"}
    assert not nodes[2]["complete"] and nodes[2]["checks"][0]["status"] == "error"
    assert "ssh" in nodes[2]["checks"][0]["hint"].lower()


def test_report_fails_and_names_the_unreachable_node(tmp_path: Path, capsys) -> None:
    run = write(tmp_path / "run", node("n1"), node("n2"))
    assert main(["report", str(run)]) == 0
    assert main(["report", str(run), "--expect", "n1", "n2", "n3", "--unreachable", "n3"]) == 1
    md = (run / "fleet.md").read_text()
    assert "| n3 | results_delivered | RF-NODE-UNREACHABLE |" in md, md
    assert "n3" in (run / "fleet-junit.xml").read_text()


def test_what_the_run_saw_of_a_node_that_delivered_nothing_is_said_with_its_failure(tmp_path: Path, capsys) -> None:
    run = write(tmp_path / "run", node("n1"))
    why = "Stop when the suite failed to run: the suite on n2 exited 2 and wrote no results document: File exists"
    assert main(["report", str(run), "--expect", "n1", "n2", "n3", "--reason", f"n2={why}",
                 "--reason", "n1=ignored: n1 delivered its document"]) == 1
    md = (run / "fleet.md").read_text()
    assert f"the node was targeted but delivered no results document: {why}" in md, md
    assert "ignored" not in md and "File exists" in (run / "fleet-junit.xml").read_text()
    assert "| n3 | results_delivered | RF-NODE-NO-RESULTS | the node was targeted but delivered no results document |" \
        in md, md                                                             # n3: no reason given, none added


def test_a_reason_not_of_the_form_node_equals_text_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    run = write(tmp_path / "run", node("n1"))
    for bad in ("n2", "=why", "n2="):
        assert main(["report", str(run), "--reason", bad]) == 2
        err = capsys.readouterr().err
        assert f"argument --reason: {bad!r} is not NODE=TEXT" in err and "Traceback" not in err, err
    assert not (run / "fleet.md").exists()


def test_compare_for_one_node_ignores_the_others(tmp_path: Path) -> None:
    before = write(tmp_path / "before", node("n1", value=600.0), node("n2", value=600.0))
    after = write(tmp_path / "after", node("n1", value=599.0), node("n2", value=300.0))
    assert main(["compare", str(before), str(after), "--node", "n1"]) == 0
    assert main(["compare", str(before), str(after), "--node", "n2"]) == 1
    assert main(["compare", str(before), str(after)]) == 1


ASIC = json.dumps([{"gpu": 0, "asic": {"asic_serial": "0xA1B2"}}, {"gpu": 1, "asic": {"asic_serial": "0xC3D4"}}])


def test_acceptance_verdicts_identity_and_batch(tmp_path: Path) -> None:
    good = node("n1", provenance={"bios_version": "1.2", "gpu_asic": ASIC, "system_product": "G593-ZX1"})
    bad = node("n2", status="fail")
    assert gpu_serials(good) == ["0xA1B2", "0xC3D4"]
    assert (verdict(good), verdict(bad), verdict(node("n3", complete=False))) == ("ACCEPT", "REJECT", "REJECT")
    page = node_markdown(good)
    assert "| BIOS | 1.2 |" in page and "0xA1B2, 0xC3D4" in page and "ACCEPT" in page.splitlines()[0]
    assert "RF-BELOW-TARGET" in node_markdown(bad) and "reseat" in node_markdown(bad)
    nodes = with_missing([good, bad], ["n1", "n2", "n4"], [])
    batch = batch_markdown(nodes)
    assert "1 of 3 nodes accepted" in batch and "| n4 | NOT RUN |" in batch
    run = write(tmp_path / "run", good, bad)
    assert main(["acceptance", str(run), "--expect", "n1", "n2"]) == 1
    assert (run / "acceptance-n1.md").exists() and (run / "acceptance.md").exists()
    assert main(["acceptance", str(write(tmp_path / "ok", good))]) == 0


def test_a_node_list_before_the_results_directory_no_longer_swallows_it(tmp_path: Path, capsys,
                                                                         monkeypatch) -> None:
    """`report --expect n1 n2 DIR` took DIR for a third node and stopped: RESULTS_DIR is missing (issue 44)."""
    run = write(tmp_path / "run", node("n1"), node("n2"))
    assert main(["report", "--expect", "n1", "n2", str(run)]) == 0
    assert main(["report", "--unreachable", "n3", "--expect", "n1", "n2", str(run)]) == 1       # n3 named, run kept
    assert "| n3 | results_delivered | RF-NODE-UNREACHABLE |" in (run / "fleet.md").read_text()
    assert main(["acceptance", "--expect", "n1", "n2", "n3", str(run)]) == 1                   # n3 NOT RUN
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--expect", "n1", "--", "run"]) == 0                                # the documented way
    capsys.readouterr()
    assert main(["report", "--expect", "n1", "n2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RESULTS_DIR is missing; --expect took 'n2' as a node's name" in err, err
