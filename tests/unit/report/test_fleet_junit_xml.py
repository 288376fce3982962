"""fleet-junit.xml stays well-formed XML 1.0 whatever a node's document says: a check message with a terminal
escape (`\\x1b[31m`), a NUL, a lone surrogate or U+FFFE made CI dashboards refuse the whole file (issue 39
item 7). Such characters are shown as escapes (`\\x1b`), in element text and in attributes alike; a strict
parser (expat, fed the file's bytes) reads every byte of it."""

from __future__ import annotations

import json
import xml.parsers.expat
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from validation.cli import main
from validation.report import fleet_text

# Illegal in XML 1.0 (C0 controls, a lone surrogate, U+FFFE/U+FFFF), and C1 controls a terminal obeys (CSI)
HOSTILE = "red \x1b[31mFAIL\x1b[0m nul\x00 bell\x07 vt\x0b sur\ud800 nonchar\ufffe\uffff csi\x9b2J end"
SHOWN = "red \\x1b[31mFAIL\\x1b[0m nul\\x00 bell\\x07 vt\\x0b sur\\ud800 nonchar\\ufffe\\uffff csi\\x9b2J end"
FIRST_LINE = "red \\x1b[31mFAIL\\x1b[0m nul\\x00 bell\\x07 vt"     # the message attribute: up to \x0b (str.splitlines)


def strictly_parsed(data: bytes) -> ET.Element:
    parser = xml.parsers.expat.ParserCreate()
    parser.Parse(data, True)                         # raises ExpatError on any character XML 1.0 forbids
    return ET.fromstring(data)


def document(host: str = "n1") -> dict:
    return {"schema_version": 1, "host": host, "complete": True, "tier": "smoke",
            "checks": [
                {"id": f"test_x.py::test_y[{HOSTILE}]", "status": "fail", "code": f"RF-X{HOSTILE}",
                 "message": f"{HOSTILE}\nsecond line\ttab", "hint": HOSTILE, "duration_s": 1.5},
                {"id": "test_x.py::test_z", "status": "skip", "code": None, "message": HOSTILE, "hint": None},
                {"id": "test_x.py::test_e", "status": "error", "code": None, "message": HOSTILE, "hint": None}],
            "measurements": []}


def test_junit_text_and_attributes_carry_control_characters_as_escapes() -> None:
    data = fleet_text.junit([document()]).encode("utf-8")      # strict: a lone surrogate cannot be encoded
    root = strictly_parsed(data)
    fail, skip, error = root.iter("testcase")
    assert fail.get("name") == f"test_x.py::test_y[{SHOWN}]"
    failure = fail.find("failure")
    assert failure is not None
    assert failure.get("message") == f"RF-X{SHOWN}: {FIRST_LINE}"
    assert failure.text == f"{SHOWN}\nsecond line\ttab\nhint: {SHOWN}"           # newlines and tabs kept
    skipped = skip.find("skipped")
    assert skipped is not None and skipped.get("message") == SHOWN
    err = error.find("error")
    assert err is not None and err.get("message") == f"error: {FIRST_LINE}" and err.text == SHOWN


def test_a_hostile_host_name_and_duration_are_escaped_in_attributes_too() -> None:
    doc = document(host=f"n1{HOSTILE}")
    doc["checks"][0]["duration_s"] = f"1{HOSTILE}"
    root = strictly_parsed(fleet_text.junit([doc]).encode("utf-8"))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == f"n1{SHOWN}"
    case = suite.find("testcase")
    assert case is not None and case.get("classname") == f"n1{SHOWN}" and case.get("time") == f"1{SHOWN}"


def test_text_without_such_characters_is_unchanged() -> None:
    plain = "GPU 5 → GPU 2 xGMI 31 GB/s < 42 GB/s & more \"quoted\" ✓ 𝔸"
    doc = document()
    doc["checks"] = [{"id": "t::a", "status": "fail", "code": "RF-Y", "message": plain, "hint": None}]
    failure = strictly_parsed(fleet_text.junit([doc]).encode("utf-8")).find("testsuite/testcase/failure")
    assert failure is not None and failure.text == plain and failure.get("message") == f"RF-Y: {plain}"


def test_rocm_fleet_report_writes_a_well_formed_junit_file(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command (without the lone surrogate: fleet.html cannot be written with one yet)."""
    hostile, shown = HOSTILE.replace("\ud800", ""), SHOWN.replace("\\ud800", "")
    doc = document()
    doc["checks"] = [{"id": "t::a", "status": "fail", "code": "RF-X", "message": hostile, "hint": hostile}]
    run = tmp_path / "run"
    run.mkdir()
    (run / "n1.json").write_text(json.dumps(doc))
    assert main(["report", str(run), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 1, capsys.readouterr().err
    root = strictly_parsed((tmp_path / "out" / "fleet-junit.xml").read_bytes())
    (failure,) = root.iter("failure")
    assert failure.get("message") == "RF-X: " + FIRST_LINE and failure.text == f"{shown}\nhint: {shown}"
