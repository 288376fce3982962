"""Sibling and batch verdicts on real results: the lent H200's eight idle quick-tier runs, AMD's
recorded MI300X xGMI links, and the variants tests/helpers/derived_results.py derives from them."""

from __future__ import annotations

import pytest
from derived_results import eight_gpu_node, idle_runs, renamed, scaled, xgmi_node

from validation import peers
from validation.records import Status


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    return idle_runs()


def failures(verdicts: list[peers.PeerVerdict]) -> list[peers.PeerVerdict]:
    return [v for v in verdicts if v.status is Status.FAIL]


def test_eight_healthy_gpus_raise_no_sibling_verdict(runs: list[dict]) -> None:
    node = eight_gpu_node(runs)
    verdicts = peers.judge_siblings(node["host"], node["measurements"])
    assert not failures(verdicts)
    assert sum(v.status is Status.PASS for v in verdicts) == 34       # every throughput and central latency


def test_one_gpu_of_eight_at_80_percent_fails_naming_it_with_value_median_and_gap(runs: list[dict]) -> None:
    node = scaled(eight_gpu_node(runs), "gpu3", 0.8)
    bad = failures(peers.judge_siblings(node["host"], node["measurements"]))
    assert {v.subject for v in bad} == {"gpu3"}
    bf16 = next(v for v in bad if v.metric == "torch_matmul_bf16_tflops")
    assert bf16.code == "RF-SIBLING-GAP" and 0.19 < bf16.gap < 0.21
    assert "gpu3 torch_matmul_bf16_tflops" in bf16.reason and "below the median" in bf16.reason
    assert "of this node's GPUs" in bf16.reason and "allowed gap" in bf16.reason
    assert "%" in bf16.reason and "+" not in bf16.reason
    # eager-mode ResNet-50 at batch 32 scatters 30-70 % between healthy runs: 20 % there is not evidence
    assert not any(v.metric == "resnet50_fp16_eager_b32_images_s" for v in bad)


def test_a_faster_gpu_is_never_a_failure(runs: list[dict]) -> None:
    node = scaled(eight_gpu_node(runs), "gpu5", 1.3)
    assert not failures(peers.judge_siblings(node["host"], node["measurements"]))


def test_one_xgmi_link_at_60_percent_is_named_among_56(runs: list[dict]) -> None:
    node = xgmi_node()
    assert not failures(peers.judge_siblings(node["host"], node["measurements"]))
    slow = scaled(node, "gpu2 -> gpu6", 0.6)
    (bad,) = failures(peers.judge_siblings(slow["host"], slow["measurements"]))
    assert bad.subject == "gpu2 -> gpu6" and bad.metric == "xgmi_pair_gb_s"
    assert "of this node's links" in bad.reason and 0.40 < bad.gap < 0.43     # it read 45.45 of a 46.78 median


def test_a_gpu_measured_while_busy_does_not_move_the_median_but_is_judged(runs: list[dict]) -> None:
    node = scaled(eight_gpu_node(runs), "gpu1", 0.5)
    for entry in node["measurements"]:
        if entry["subject"] == "gpu1":
            entry["measured_while_busy"] = True
    bad = failures(peers.judge_siblings(node["host"], node["measurements"]))
    assert {v.subject for v in bad} == {"gpu1"} and all(v.peers == 7 for v in bad)
    assert "(measured while busy or marked invalid)" in bad[0].reason


def test_one_gpu_alone_is_recorded_with_the_reason(runs: list[dict]) -> None:
    verdicts = peers.judge_siblings("h200-idle-1", runs[0]["measurements"])
    assert verdicts and all(v.status is Status.SKIP for v in verdicts)
    assert "peer verdicts need at least 4" in verdicts[0].reason


def test_eight_idle_runs_as_one_batch_raise_no_false_alarm(runs: list[dict]) -> None:
    verdicts = peers.judge_batch(runs)
    assert not failures(verdicts) and sum(v.status is Status.PASS for v in verdicts) == 8 * 34


def test_one_node_of_eight_at_half_speed_fails_the_batch_and_only_it(runs: list[dict]) -> None:
    batch = [*runs[:7], renamed(scaled(runs[7], "gpu0", 0.5), "h200-slow")]
    bad = failures(peers.judge_batch(batch))
    assert {v.node for v in bad} == {"h200-slow"} and all(v.code == "RF-BATCH-GAP" for v in bad)
    bf16 = next(v for v in bad if v.metric == "torch_matmul_bf16_tflops")
    assert "50.3% below the median 681.1 TFLOPS of the batch's h200 nodes" in bf16.reason     # 676.6 halved


def test_a_batch_of_three_is_recorded_not_judged(runs: list[dict]) -> None:
    verdicts = peers.judge_batch(runs[:3])
    assert verdicts and all(v.status is Status.SKIP for v in verdicts)
    assert "has 3 nodes usable for the batch's h200 nodes; peer verdicts need at least 4" in verdicts[0].reason


def test_nodes_of_another_sku_are_not_peers(runs: list[dict]) -> None:
    other = [renamed(r, f"other-{i}") for i, r in enumerate(runs[:4])]
    for doc in other:
        doc["provenance"] = {**doc["provenance"], "declared_sku": "h100"}
        for entry in doc["measurements"]:
            if isinstance(entry.get("value"), (int, float)):
                entry["value"] = entry["value"] * 0.5
    assert not failures(peers.judge_batch([*runs, *other]))       # half as fast, but compared only with h100s


def test_the_allowed_gap_names_its_basis() -> None:
    members = [peers.Member(node="n", subject=f"gpu{i}", value=v, spread_pct=None, clean=True)
               for i, v in enumerate((100.0, 101.0, 99.0, 100.0, 60.0, 140.0, 100.5, 99.5))]
    spread = peers.allowed_gap(members, peers.THROUGHPUT)
    assert spread.median == 100.0 and spread.allowed == pytest.approx(0.05) and "throughput floor 5%" in spread.why
    noisy = [peers.Member(node="n", subject=f"gpu{i}", value=100.0, spread_pct=12.0, clean=True) for i in range(4)]
    assert peers.allowed_gap(noisy, peers.THROUGHPUT).allowed == pytest.approx(0.12)


def test_acceptance_rejects_the_node_the_batch_left_behind(runs: list[dict], tmp_path, capsys) -> None:
    """The eight runs' host-configuration failures (an unprovisioned machine) are dropped from the
    documents here, so that the verdict turns on the numbers alone."""
    import json

    from validation.cli import main

    batch = [*runs[:7], renamed(scaled(runs[7], "gpu0", 0.5), "h200-slow")]
    for doc in batch:
        doc["checks"] = [c for c in doc["checks"] if c["needs_gpu"]]
        (tmp_path / f"{doc['host']}.json").write_text(json.dumps(doc))
    assert main(["acceptance", str(tmp_path)]) == 1
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines() if line.startswith("h200"))
    assert lines["h200-slow"].strip() == "REJECT" and {v.strip() for k, v in lines.items() if k != "h200-slow"} == {
        "ACCEPT"}
    assert "RF-BATCH-GAP" in (tmp_path / "acceptance-h200-slow.md").read_text()
