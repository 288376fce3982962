"""validation/probes/torch_probes.py on CPU tensors at tiny sizes: correctness, not speed."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # torch's CPU wheel warns at import when numpy is absent; the probes do not use numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

from validation.probes import torch_probes as tp

FAST = {"warmup": 1, "repeats": 3, "target_sample_s": 0.001, "timeout_s": 60}
TINY_CONV = tp.ConvShape(name="tiny", n=2, c=4, h=8, w=8, k=4, r=3, s=3, pad=1)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32", "tf32", "fp64"])
def test_matmul_on_cpu_returns_a_sane_record_that_passes_its_check(dtype: str) -> None:
    r = tp.matmul_tflops("cpu", dtype, size=32, **FAST)
    assert isinstance(r, tp.MatmulResult)
    assert (r.device, r.dtype, r.m, r.n, r.k) == ("cpu", dtype, 32, 32, 32)
    assert r.flops_per_matmul == 65536  # 2 * 32^3
    assert r.tf32_enabled is (dtype == "tf32")
    assert r.tflops.unit == "TFLOP/s"
    assert len(r.tflops.values) == 3 and all(v > 0 for v in r.tflops.values)
    assert r.tflops.median is not None and r.tflops.spread_pct is not None
    assert r.iterations_per_sample >= 1
    assert r.correct, f"{dtype}: max rel err {r.max_rel_err} > {r.tolerance}"
    assert r.max_rel_err <= r.tolerance


def test_fp8_matmul_runs_or_skips_with_a_reason() -> None:
    r = tp.matmul_tflops("cpu", "fp8", size=32, **FAST)
    if isinstance(r, tp.ProbeSkip):
        assert "fp8" in r.reason
    else:
        assert r.correct, f"fp8: max rel err {r.max_rel_err} > {r.tolerance}"
        assert r.flops_per_matmul == 65536


def test_matmul_accepts_a_non_square_shape() -> None:
    r = tp.matmul_tflops("cpu", "fp32", size=(16, 24, 40), **FAST)
    assert isinstance(r, tp.MatmulResult)
    assert (r.m, r.n, r.k, r.flops_per_matmul) == (16, 24, 40, 30720)
    assert r.correct


def test_matmul_check_catches_a_wrong_result(monkeypatch: pytest.MonkeyPatch) -> None:
    real = tp._matmul_operands

    def off_by_one(*args: object, **kwargs: object) -> object:
        a, b, step = real(*args, **kwargs)  # type: ignore[arg-type]
        return a, b, lambda: step() + 1.0

    monkeypatch.setattr(tp, "_matmul_operands", off_by_one)
    r = tp.matmul_tflops("cpu", "fp32", size=32, **FAST)
    assert isinstance(r, tp.MatmulResult)
    assert not r.correct
    assert r.max_rel_err > r.tolerance


def test_tf32_setting_is_restored_after_the_probe() -> None:
    before = torch.backends.cuda.matmul.allow_tf32
    r = tp.matmul_tflops("cpu", "tf32", size=16, **FAST)
    assert r.tf32_enabled
    # reading allow_tf32 raises when the legacy flag and fp32_precision disagree (cuBLAS would too)
    assert torch.backends.cuda.matmul.allow_tf32 == before
    assert not tp.matmul_tflops("cpu", "fp32", size=16, **FAST).tf32_enabled


def test_unknown_matmul_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="int4"):
        tp.matmul_tflops("cpu", "int4", size=16)


def test_device_copy_counts_read_plus_write_and_verifies_the_checksum() -> None:
    r = tp.device_copy_gb_s("cpu", size_bytes=1 << 20, **FAST)
    assert (r.device, r.size_bytes, r.bytes_counted_per_copy, r.counting) == ("cpu", 1048576, 2097152, "read+write")
    assert r.checksum_ok
    assert r.gb_s.unit == "GB/s" and len(r.gb_s.values) == 3 and r.gb_s.median > 0


def test_pinned_copy_without_a_gpu_is_skipped_with_a_reason() -> None:
    r = tp.pinned_copy_gb_s("cpu", size_bytes=1 << 20, **FAST)
    assert isinstance(r, tp.ProbeSkip)
    assert r.probe == "pinned_copy"
    assert "no GPU" in r.reason


def test_peer_matrix_with_fewer_than_two_gpus_is_empty_with_a_reason() -> None:
    r = tp.peer_copy_matrix([0], size_bytes=1 << 20)
    assert (r.links, r.measurements, r.peer_access, r.checksum_ok) == ((), (), (), ())
    assert r.reason == "peer copies need >= 2 GPUs, found 1"


def test_conv_flop_formula_for_the_resnet50_stem() -> None:
    stem = next(s for s in tp.RESNET50_SHAPES if s.name == "stem_7x7")
    assert stem.out_hw == (112, 112)
    assert stem.forward_flops == 15_105_785_856  # 2*64*64*112*112*3*7*7


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "fwd+bwd"])
def test_conv2d_on_cpu_counts_flops_and_passes_its_check(dtype: str, backward: bool) -> None:
    r = tp.conv2d_tflops("cpu", TINY_CONV, dtype, backward=backward, **FAST)
    forward = 36_864  # 2 * N2 * K4 * P8 * Q8 * C4 * R3 * S3
    assert r.flops_per_call == (3 * forward if backward else forward)
    assert r.direction == ("fwd+bwd" if backward else "fwd")
    assert r.library == "cpu"
    assert len(r.tflops.values) == 3 and r.tflops.median > 0
    assert r.correct, f"max rel err {r.max_rel_err} > {r.tolerance}"


def test_numa_cpus_reads_a_cpulist_with_ranges(tmp_path: Path) -> None:
    node = tmp_path / "node1"
    node.mkdir()
    (node / "cpulist").write_text("0-3,8,10-11\n")
    assert tp.numa_cpus(1, sysfs=tmp_path) == frozenset({0, 1, 2, 3, 8, 10, 11})


def test_describe_cpu_names_the_backend_and_torch_version() -> None:
    info = tp.describe("cpu")
    assert (info.label, info.index, info.backend) == ("cpu", None, "cpu")
    assert info.torch_version == torch.__version__


def test_no_gpu_means_no_gpu_devices() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible; this checks the CPU-only path")
    assert tp.gpu_devices() == ()


def test_host_copies_run_local_then_on_the_nearest_other_numa_node() -> None:
    assert tp.host_copy_plan(1, (0, 1, 2, 3)) == ((1, "local"), (0, "remote"))
    assert tp.host_copy_plan(2, (0, 1, 2, 3)) == ((2, "local"), (1, "remote"))
    assert tp.host_copy_plan(0, (0,)) == ((0, "local"),)                  # one node: no remote
    assert tp.host_copy_plan(None, (0, 1)) == ((None, "unknown"),)        # GPU's node unknown: unbound
    assert tp.host_copy_plan(3, (0, 1)) == ((None, "unknown"),)           # node without usable CPUs


def test_usable_numa_nodes_read_from_sysfs_and_the_affinity_mask(tmp_path) -> None:
    import os
    allowed = sorted(os.sched_getaffinity(0))
    (tmp_path / "node0").mkdir()
    (tmp_path / "node0" / "cpulist").write_text(f"{allowed[0]}\n")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "cpulist").write_text("100000-100003\n")     # CPUs this process may not use
    (tmp_path / "node10").mkdir()
    (tmp_path / "node10" / "cpulist").write_text(f"{allowed[-1]}\n")
    assert tp.usable_numa_nodes(tmp_path) == (0, 10)
