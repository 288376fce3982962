"""The alerting rules (validation/data/prometheus/rocm-fleet.rules.yml) fire on the series rocm-fleet writes:
`promtool check rules`, then `promtool test rules` over series taken from the health mode's textfile and the
fleet report's fleet.prom as this code writes them (issue 44, item 2). promtool is Debian's, put in .venv/bin
by .ci/setup."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation import flap
from validation.report import fleet_text
from validation.report.health_text import textfile

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "validation" / "data" / "prometheus" / "rocm-fleet.rules.yml"
MINUTES = 40


def promtool() -> str:
    found = shutil.which("promtool") or str(Path(sys.executable).parent / "promtool")
    if not Path(found).exists():
        pytest.fail("promtool is missing: .ci/setup puts Debian's into .venv/bin")
    return found


def series(exposition: str, *, values: dict[str, str] | None = None) -> list[dict[str, str]]:
    """promtool input_series from textfile lines, each value held for the whole test (or as `values` says, by
    metric name)."""
    out = []
    for line in exposition.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        name = name_labels.split("{", 1)[0]
        out.append({"series": name_labels, "values": (values or {}).get(name, f"{float(value):g}x{MINUTES}")})
    return out


def health_series() -> list[dict[str, str]]:
    # gpu-a: RF-GPU-THROTTLED flapping, drained, held for physical action; its last health run at time 0 and
    # none since (its timer stopped). gpu-b: healthy, its textfile rewritten every minute.
    history = None
    hot = {"RF-GPU-THROTTLED": "gpu3 clocks held down now"}
    for i, failures in enumerate([hot, {}, hot, {}, hot]):
        decision = flap.step(history, failures, at=str(i))
        history = decision.history
    bad = {"host": "gpu-a", "checks": [{"id": "test_health.py::test_gpus_are_unthrottled_and_cool_enough_now",
                                        "status": "fail", "code": "RF-GPU-THROTTLED"},
                                       {"id": "test_health.py::test_no_xgmi_errors", "status": "skip"}]}
    good = {"host": "gpu-b", "checks": [{"id": "test_health.py::test_gpus_are_unthrottled_and_cool_enough_now",
                                         "status": "pass"}]}
    a = textfile(bad, ok=False, duration_s=3.0, finished_at=0.0, drained=True, codes=decision.codes, held=True)
    b = textfile(good, ok=True, duration_s=3.0, finished_at=0.0, drained=False, held=False)
    return series(a) + series(b, values={"rocm_fleet_health_last_run_timestamp_seconds": f"0+60x{MINUTES}"})


def fleet_series() -> list[dict[str, str]]:
    # n-fail: failed its validation, which vouched for it until 600 s after time 0; n-ok: passed, valid for long
    def node(host: str, status: str, until: str) -> dict:
        return {"host": host, "complete": True, "valid_until": until, "measurements": [],
                "checks": [{"id": "test_gemm.py::test_gemm", "status": status,
                            "code": "RF-GEMM-LOW" if status == "fail" else None}]}
    return series(fleet_text.prometheus([node("n-fail", "fail", "1970-01-01T00:10:00+00:00"),
                                         node("n-ok", "pass", "1970-01-02T00:00:00+00:00")]))


def annotations(alert: str, labels: dict[str, str], value: str = "") -> dict[str, str]:
    """The rule's annotations as Prometheus renders them for `labels` (and `value`, humanized)."""
    (rule,) = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if r["alert"] == alert]
    out = {}
    for key, text in rule["annotations"].items():
        for name, label in labels.items():
            text = text.replace(f"{{{{ $labels.{name} }}}}", label)
        out[key] = text.replace("{{ $value | humanizeDuration }}", value)
    return out


def test_the_rules_file_is_valid() -> None:
    check = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 7 rules found" in check.stdout


def test_each_alert_fires_on_the_series_rocm_fleet_writes_and_not_on_a_healthy_node(tmp_path: Path) -> None:
    warning, critical = {"severity": "warning"}, {"severity": "critical"}
    cases = [
        # at one minute: the failing code, the drain, the flapping, the hold, the failed validation; nothing of
        # gpu-b or n-ok; neither stale nor expired yet
        (1, "RocmFleetHealthCheckFailing", [{"node": "gpu-a", "code": "RF-GPU-THROTTLED", **warning}]),
        (1, "RocmFleetNodeDrained", [{"node": "gpu-a", **warning}]),
        (1, "RocmFleetFlapping", [{"node": "gpu-a", "code": "RF-GPU-THROTTLED", **warning}]),
        (1, "RocmFleetHeldForPhysicalAction", [{"node": "gpu-a", **critical}]),
        (1, "RocmFleetNodeFailed", [{"node": "n-fail", **warning}]),
        (1, "RocmFleetValidationExpired", []),
        (1, "RocmFleetHealthTextfileStale", []),
        # n-fail's validity ended at 10 minutes; gpu-a's last health run is 15 minutes old at 15, stale for 5 at 20
        (11, "RocmFleetValidationExpired", [{"node": "n-fail", **warning}]),
        (17, "RocmFleetHealthTextfileStale", []),
        (21, "RocmFleetHealthTextfileStale", [{"node": "gpu-a", **warning}]),
    ]
    humanized = {21: "21m 0s"}      # time() - the last run's time, as humanizeDuration says it
    tests = [{"interval": "1m", "input_series": health_series() + fleet_series(),
              "alert_rule_test": [{"eval_time": f"{minute}m", "alertname": name,
                                   "exp_alerts": [{"exp_labels": labels,
                                                   "exp_annotations": annotations(name, labels,
                                                                                  humanized.get(minute, ""))}
                                                  for labels in expected]}
                                  for minute, name, expected in cases]}]
    spec = tmp_path / "rules-test.yml"
    spec.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests}))
    run = subprocess.run([promtool(), "test", "rules", str(spec)], capture_output=True, text=True, check=False)
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout
