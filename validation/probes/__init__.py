"""Probes: measure a node and return typed records; they never judge.

runner (external tools with a timeout), stats (repeats, median, spread), torch_probes and
torch_allreduce (portable PyTorch probes; import them only where torch is installed), hip_probe
(the HIP kernel, built with hipcc or nvcc). See docs/probes.md.
"""
