"""Every judged target rests on a public document or a real output (issue 31, class 3).

A target whose basis is a comment, another SKU's rule or nothing at all must be record-only with the
reason: this walks every profile (each SKU and variant, every partition, the nominal and an 8-GPU count)
and checks what each judged target cites. Real outputs named in a source must exist in the fixtures.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from validation.targets import load_targets
from validation.targets.loader import list_skus

ROOT = Path(__file__).resolve().parents[3]
FIXTURE_PATH = re.compile(r"tests/fixtures/real/[\w./-]+?\.txt")
PROFILES = [(e.name, mode, count) for e in list_skus() for mode in (e.partitions or (None,)) for count in (None, 8)]


def judged(name: str, mode: str | None, count: int | None):
    profile = load_targets(name, gpu_count=count, partition=mode)
    return [t for t in profile.targets.values() if not t.record_only]


@pytest.mark.parametrize("name, mode, count", PROFILES, ids=[f"{n}-{m}-{c}" for n, m, c in PROFILES])
def test_every_judged_target_cites_a_public_document_or_a_real_output(name, mode, count) -> None:
    weak = [t.metric for t in judged(name, mode, count)
            if "https://" not in t.source and not FIXTURE_PATH.search(t.source)
            and not t.source.startswith("declared gpu_count")]
    assert not weak, f"{name} {mode} {count}: judged without a cited basis: {weak}"


@pytest.mark.parametrize("name, mode, count", PROFILES, ids=[f"{n}-{m}-{c}" for n, m, c in PROFILES])
def test_real_outputs_named_as_a_basis_exist(name, mode, count) -> None:
    profile = load_targets(name, gpu_count=count, partition=mode)
    cited = {path for t in profile.targets.values() for path in FIXTURE_PATH.findall(t.source + " " + t.note)}
    assert all((ROOT / path).is_file() for path in cited), sorted(p for p in cited if not (ROOT / p).is_file())


def test_no_judged_target_rests_on_a_rule_written_for_another_gpu() -> None:
    # SuperBench's 85 °C temperature rule is an A100 rule set; H100/H200 now use their own reported limit
    for name in ("h100", "h200"):
        target = load_targets(name).get("burnin_temperature_max_c")
        assert target.threshold == 87 and "A100" not in target.source
    # the MI308X topology came from a config comment ("PCIe-only, no xGMI") that a real node contradicts
    assert not any("PCIe-only" in t.source for t in judged("mi308x", None, 8))
