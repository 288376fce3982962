"""playbooks/upgrade.yml's comparison gate has something to compare (issue 16): both validations run
the quick tier by default (smoke measures nothing), and `rocm-fleet compare --require-measurements`,
which the gate passes unless the nodes have no GPU, refuses to call "nothing measured" a pass."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest
import yaml

from validation.cli import main
from validation.commands.validate import TIER_EXPR

ROOT = Path(__file__).resolve().parents[3]


def node(host: str, measurements: list[dict]) -> dict:
    return {"schema_version": 1, "host": host, "complete": True,
            "checks": [{"id": "c", "name": "test_rocminfo_is_installed", "status": "pass", "code": None,
                        "message": "", "hint": None}],
            "measurements": measurements}


def run_dir(path: Path, *docs: dict) -> Path:
    path.mkdir(parents=True)
    for doc in docs:
        (path / f"{doc['host']}.json").write_text(json.dumps(doc))
    return path


GEMM = {"metric": "gemm_bf16_tflops", "subject": "gpu0", "value": 600.0, "unit": "TFLOPS", "higher_is_better": True}


def test_a_comparison_with_nothing_measured_is_no_verdict_when_measurements_are_required(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = run_dir(tmp_path / "before", node("n1", []))
    after = run_dir(tmp_path / "after", node("n1", []))
    assert main(["compare", str(before), str(after), "--node", "n1"]) == 0      # what smoke gave the gate
    capsys.readouterr()
    assert main(["compare", str(before), str(after), "--node", "n1", "--require-measurements"]) == 2
    assert "no measurements of n1 in" in capsys.readouterr().err


def test_required_measurements_are_compared_as_before(tmp_path: Path) -> None:
    before = run_dir(tmp_path / "before", node("n1", [GEMM]))
    same = run_dir(tmp_path / "same", node("n1", [{**GEMM, "value": 598.0}]))
    worse = run_dir(tmp_path / "worse", node("n1", [{**GEMM, "value": 500.0}]))
    assert main(["compare", str(before), str(same), "--node", "n1", "--require-measurements"]) == 0
    assert main(["compare", str(before), str(worse), "--node", "n1", "--require-measurements"]) == 1


def _rolling_play() -> dict:
    plays = yaml.safe_load((ROOT / "playbooks" / "upgrade.yml").read_text())
    return next(p for p in plays if p.get("name") == "Roll the upgrade batch by batch")


def _tasks(block: list[dict]) -> list[dict]:
    out = []
    for task in block:
        out.append(task)
        for key in ("block", "rescue", "always"):
            out += _tasks(task.get(key, []))
    return out


def _render(expression: str, **variables: object) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # noqa: S701 - no HTML
    env.filters["bool"] = lambda v: v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes", "on")
    return env.from_string(expression).render(**variables).strip()


def test_both_validations_run_a_tier_that_measures_by_default() -> None:
    play = _rolling_play()
    validations = [t for t in _tasks(play["tasks"])
                   if t.get("ansible.builtin.include_role", {}).get("name") == "validation_node"]
    assert len(validations) == 2, validations
    for task in validations:
        tier = _render(task["vars"]["validation_node_tier"], __upgrade_tier=_render(play["vars"]["__upgrade_tier"]))
        assert tier == "quick", task["name"]
    assert "quick" in TIER_EXPR["quick"].split()     # quick = the measuring probes (GEMM, HBM, bandwidth, RCCL)
    assert _render(play["vars"]["__upgrade_tier"], rocm_fleet_upgrade_tier="acceptance") == "acceptance"
    # every quick probe needs a GPU: nodes declared without one run smoke (and compare nothing)
    assert _render(play["vars"]["__upgrade_tier"], validation_node_no_gpu=True) == "smoke"


@pytest.mark.parametrize(("variables", "required"), [({}, "True"), ({"validation_node_no_gpu": True}, "False"),
                                                      ({"rocm_fleet_upgrade_require_measurements": False}, "False")])
def test_the_gate_requires_measurements_unless_the_nodes_have_no_gpu(variables: dict, required: str) -> None:
    play = _rolling_play()
    assert _render(play["vars"]["__upgrade_require_measurements"], **variables) == required
    compare = next(t for t in _tasks(play["tasks"])
                   if t.get("name") == "Compare the node's measurements with its baseline")
    argv = compare["ansible.builtin.command"]["argv"]
    assert "['--require-measurements'] if __upgrade_require_measurements | bool" in argv
