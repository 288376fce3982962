"""ResNet-50 measurement as the first CUDA/HIP call of a fresh process (run on the lent GPU).

The quick tier runs the model sweep before the portable probes, so on a node it is the first code
to touch the GPU. torch.cuda.reset_peak_memory_stats("cuda:0") does not initialise CUDA itself and
raised "Invalid device argument" there (H200, torch 2.11): the quick tier failed on a healthy GPU.
Skipped where PyTorch sees no GPU (CI); bench/device_run.sh runs it on the device machine.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU that PyTorch can use")

PROGRAM = """
import torch
from validation.probes import model_bench
assert not torch.cuda.is_initialized()
r = model_bench.resnet50_inference("cuda:0", "bf16", 2, mode="eager", repeats=2, latency_repeats=3,
                                   target_sample_s=0.01)
print("images/s", r.images_s.median, "correct", r.correct, "peak MiB", r.peak_memory_mib)
assert r.correct and r.images_s.median > 0 and r.peak_memory_mib > 0
"""


def test_resnet50_measures_when_it_is_the_first_cuda_call_of_the_process(repo_root) -> None:
    run = subprocess.run([sys.executable, "-c", PROGRAM], cwd=repo_root, capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "correct True" in run.stdout
