"""What a node writes reaches fleet.md, the acceptance reports and the terminal as text (issue 32): raw
`<script>` rendered by a Markdown viewer and terminal escape sequences that retitle a terminal or hide a
line were passed through before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main
from validation.report import render_terminal
from validation.report.load import load_run

HOSTILE = "<script>alert(1)</script> \x1b]0;owned\x07\x1b[2K\x9b1A done"


def document(host: str) -> dict:
    return {"schema_version": 1, "host": host, "complete": True, "tier": "smoke",
            "checks": [{"id": "test_x.py::test_y", "name": f"test_y{HOSTILE}", "status": "fail", "code": "RF-X",
                        "message": HOSTILE, "hint": HOSTILE}],
            "measurements": [{"metric": f"m{HOSTILE}", "subject": "gpu0", "value": 1.0, "unit": HOSTILE,
                              "higher_is_better": True}]}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "n1.json").write_text(json.dumps(document("n1")))
    return tmp_path / "run"


def test_fleet_md_and_the_acceptance_reports_show_a_nodes_html_and_control_characters_as_text(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run), "--out", str(tmp_path / "out")]) == 1
    assert main(["acceptance", str(run), "--out", str(tmp_path / "acc")]) == 1
    out = capsys.readouterr().out
    texts = {"fleet.md": (tmp_path / "out" / "fleet.md").read_text(),
             "acceptance-n1.md": (tmp_path / "acc" / "acceptance-n1.md").read_text(), "stdout": out}
    for name, text in texts.items():
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, name
    for name in ("fleet.md", "acceptance-n1.md"):
        assert "<script>" not in texts[name] and "&lt;script&gt;alert(1)&lt;/script&gt;" in texts[name], name
        assert "\\x1b]0;owned\\x07" in texts[name], name


def test_the_terminal_summary_shows_control_characters_as_escapes(run: Path) -> None:
    text = render_terminal(load_run(run), columns=200)
    assert "\x1b" not in text and "\\x1b]0;owned\\x07" in text and "\\x9b1A" in text
