"""ResNet-50 definition and the model benchmark's code paths on CPU at tiny sizes (never speed)."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

with warnings.catch_warnings():
    # torch's CPU wheel warns at import when numpy is absent; the probes do not use numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

from validation.probes import model_bench
from validation.probes.resnet import ResNet, parameter_count, resnet50
from validation.probes.torch_probes import ProbeSkip


@pytest.fixture(scope="module")
def full() -> ResNet:
    return resnet50(seed=0).eval()


@pytest.fixture(scope="module")
def small() -> ResNet:
    """One Bottleneck per stage: the same code, a quarter of the depth, for fast CPU runs."""
    return ResNet(layers=(1, 1, 1, 1)).eval()


def test_resnet50_has_torchvisions_parameter_count(full: ResNet) -> None:
    # torchvision.models.resnet50(): 25,557,032 parameters (its model card and docs table)
    assert parameter_count(full) == 25_557_032


def test_resnet50_maps_a_batch_to_1000_logits(full: ResNet) -> None:
    with torch.no_grad():
        out = full(torch.randn(2, 3, 32, 32))
    assert tuple(out.shape) == (2, 1000)


def test_layer_names_match_torchvision_state_dict_keys(full: ResNet) -> None:
    keys = full.state_dict().keys()
    for key in ("conv1.weight", "bn1.running_var", "layer1.0.downsample.0.weight", "layer3.5.bn3.bias",
                "layer4.2.conv3.weight", "fc.weight", "fc.bias"):
        assert key in keys, key
    assert "layer3.6.conv1.weight" not in keys  # stage 3 has six blocks (0..5)


def test_v1_5_puts_the_downsampling_stride_on_the_3x3_convolution(full: ResNet) -> None:
    first = full.layer2[0]
    assert (first.conv1.stride, first.conv2.stride) == ((1, 1), (2, 2))
    assert full.layer2[0].downsample[0].stride == (2, 2)


def test_weights_follow_the_seed_and_leave_the_global_rng_alone() -> None:
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    model = resnet50(seed=1)
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(model.fc.weight, resnet50(seed=1).fc.weight)
    assert not torch.equal(model.fc.weight, resnet50(seed=2).fc.weight)


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([5.0, 1.0, 4.0, 2.0, 3.0], 50, 3.0),
    (list(range(1, 11)), 99, 10),
    (list(range(1, 201)), 99, 198),
    (list(range(1, 201)), 50, 100),
    ([], 99, None),
])
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float | None) -> None:
    assert model_bench.percentile(values, q) == expected


def test_metric_stem_names_dtype_mode_and_batch() -> None:
    assert model_bench.metric_stem("bf16", "graph", 256) == "resnet50_bf16_graph_b256"


def test_cpu_inference_measures_throughput_latency_and_checks_logits(small: ResNet) -> None:
    r = model_bench.resnet50_inference("cpu", "fp32", 2, model=small, image_size=32, warmup=0, repeats=2,
                                       latency_repeats=3, target_sample_s=0.001)
    assert isinstance(r, model_bench.ModelResult)
    assert (r.device, r.dtype, r.mode, r.batch, r.channels_last, r.tf32_enabled) == ("cpu", "fp32", "eager", 2, True,
                                                                                      False)
    assert r.images_s.unit == "images/s" and len(r.images_s.values) == 2 and r.images_s.median > 0
    assert len(r.latency_ms.values) == 3
    assert r.latency_p50_ms <= r.latency_p99_ms == max(r.latency_ms.values)
    assert r.peak_memory_mib is None  # CPU: no device memory figure, never 0
    assert r.correct and r.max_rel_err < 1e-5


def test_wrong_logits_are_reported_as_incorrect(small: ResNet) -> None:
    ref = model_bench.make_reference(small, 32)
    off = dataclasses.replace(ref, logits=ref.logits + ref.logits.abs().max())
    r = model_bench.resnet50_inference("cpu", "bf16", 1, model=small, reference=off, image_size=32, warmup=0,
                                       repeats=1, latency_repeats=1, target_sample_s=0.001)
    assert not r.correct and r.max_rel_err > 0.5


def test_graph_mode_without_a_gpu_is_a_skip_with_the_reason(small: ResNet) -> None:
    r = model_bench.resnet50_inference("cpu", "fp16", 4, mode="graph", model=small, image_size=32)
    assert isinstance(r, ProbeSkip)
    assert r.subject == "cpu resnet50_fp16_graph_b4"
    assert "graphs need a GPU" in r.reason


def test_int8_is_a_skip_that_says_why() -> None:
    r = model_bench.resnet50_inference("cpu", "int8", 1)
    assert isinstance(r, ProbeSkip)
    assert "no int8 convolution" in r.reason and "MIGraphX" in r.reason


def test_unknown_dtype_and_mode_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown model dtype 'fp8'"):
        model_bench.resnet50_inference("cpu", "fp8", 1)
    with pytest.raises(ValueError, match="unknown mode 'jit'"):
        model_bench.resnet50_inference("cpu", "fp32", 1, mode="jit")


def test_sweep_runs_every_dtype_mode_and_batch_in_order(small: ResNet) -> None:
    plan = dataclasses.replace(model_bench.TINY_PLAN, batches=(1, 2), dtypes=("fp32", "int8"), repeats=1,
                               latency_repeats=1, warmup=0)
    seen: list[object] = []
    results = model_bench.sweep("cpu", plan, model=small, on_result=seen.append)
    assert list(results) == seen
    kinds = [(type(r).__name__, getattr(r, "subject", None) or model_bench.metric_stem(r.dtype, r.mode, r.batch))
             for r in results]
    assert kinds == [
        ("ModelResult", "resnet50_fp32_eager_b1"),
        ("ModelResult", "resnet50_fp32_eager_b2"),
        ("ProbeSkip", "cpu resnet50_fp32_graph_b1"),
        ("ProbeSkip", "cpu resnet50_fp32_graph_b2"),
        ("ProbeSkip", "cpu resnet50_int8_eager_b1"),
        ("ProbeSkip", "cpu resnet50_int8_eager_b2"),
        ("ProbeSkip", "cpu resnet50_int8_graph_b1"),
        ("ProbeSkip", "cpu resnet50_int8_graph_b2"),
    ]
