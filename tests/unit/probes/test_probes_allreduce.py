"""validation/probes/torch_allreduce.py: two gloo ranks on CPU, tiny sizes."""

from __future__ import annotations

import inspect
import warnings

import pytest

with warnings.catch_warnings():
    # torch's CPU wheel warns at import when numpy is absent; the probes do not use numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

from validation.probes import torch_allreduce as ar

SIZES = (1024, 16384)


@pytest.fixture(scope="module")
def gloo_run() -> ar.AllReduceResult:
    return ar.allreduce_probe(
        2,
        sizes_bytes=SIZES,
        backend="gloo",
        warmup=1,
        repeats=3,
        target_sample_s=0.001,
        timeout_s=60,
        init_timeout_s=60,
    )


def test_bus_factor_follows_nccl_tests() -> None:
    assert ar.bus_factor(2) == 1.0
    assert ar.bus_factor(4) == 1.5
    assert ar.bus_factor(8) == 1.75


def test_two_gloo_ranks_sweep_every_size_and_verify_by_value(gloo_run: ar.AllReduceResult) -> None:
    assert (gloo_run.backend, gloo_run.world_size, gloo_run.timed_out, gloo_run.reason) == ("gloo", 2, False, None)
    assert [p.size_bytes for p in gloo_run.points] == list(SIZES)
    for point in gloo_run.points:
        assert point.dtype == "fp32"
        assert point.verified, f"{point.size_bytes} bytes: all-reduce of rank+1 did not give 3 everywhere"
        assert len(point.seconds.values) == 3


def test_busbw_is_algbw_times_the_bus_factor_and_algbw_is_bytes_over_seconds(gloo_run: ar.AllReduceResult) -> None:
    for point in gloo_run.points:
        assert point.bus_factor == 1.0  # 2(n-1)/n for n = 2
        for secs, alg, bus in zip(point.seconds.values, point.algbw_gb_s.values, point.busbw_gb_s.values, strict=True):
            assert alg == pytest.approx(point.size_bytes / secs / 1e9)
            assert bus == pytest.approx(alg * point.bus_factor)
        assert (point.algbw_gb_s.unit, point.busbw_gb_s.unit, point.seconds.unit) == ("GB/s", "GB/s", "s")


def test_a_passed_deadline_stops_all_ranks_together_and_says_timed_out() -> None:
    r = ar.allreduce_probe(2, sizes_bytes=SIZES, backend="gloo", warmup=1, repeats=3, timeout_s=0, init_timeout_s=60)
    assert r.timed_out
    assert len(r.points) == 1, "the sweep must stop at the first size once the deadline has passed"
    assert r.points[0].seconds.timed_out
    assert "deadline" in (r.reason or "")


def test_one_rank_is_refused_with_a_reason_without_spawning() -> None:
    r = ar.allreduce_probe(1, backend="gloo")
    assert r.points == ()
    assert ">= 2 ranks" in (r.reason or "")


def test_nccl_without_enough_gpus_is_refused_with_a_reason() -> None:
    import torch

    if torch.cuda.device_count() >= 64:
        pytest.skip("this host really has 64 GPUs")
    r = ar.allreduce_probe(64, backend="nccl")
    assert r.points == ()
    assert "64 ranks need 64 GPUs" in (r.reason or "")


def test_multicast_stays_off_by_default() -> None:
    assert ar.MULTICAST_OFF_ENV == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
    assert inspect.signature(ar.allreduce_probe).parameters["env"].default is ar.MULTICAST_OFF_ENV
