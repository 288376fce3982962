"""Native ROCm tools as probes (quick tier): rccl-tests (all_reduce, all_gather, alltoall),
TransferBench, rocm-bandwidth-test, BabelStream, RVS GST, hipblaslt-bench / rocblas-bench GEMM and
MIOpenDriver conv layers. Each runs with a timeout, is parsed, judged per GPU and per link against
the SKU's targets, and every number lands in the node's results. A tool that is not installed
skips with the package that provides it; a timeout is its own verdict (TIMEOUT, never FAIL).
Command lines come from validation/probes/native_commands.py.

They run on the node itself (`--hosts=local://`, as playbooks/validate.yml does).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from validation import extract, parsers, runner
from validation.checks.outcome import CheckFailure, expect, fail_on_verdicts
from validation.errors import ParseError
from validation.judge import judge_timeout
from validation.probes import native_commands
from validation.probes.conv_shapes import ConvShape
from validation.records import FAILING, Status
from validation.spec import gpu_vendor

pytestmark = [pytest.mark.quick, pytest.mark.gpu]

TIMEOUT_S = {"rccl-tests": 900, "transferbench": 600, "rocm-bandwidth-test": 600, "babelstream": 300, "rvs": 1200,
             "hipblaslt-bench": 300, "rocblas-bench": 300, "miopen-driver": 600}
_RCCL_TESTS = "rccl-tests (roles/validation_tools builds it from a pinned, checksummed archive)"
PACKAGES = {"all_reduce_perf": _RCCL_TESTS, "all_gather_perf": _RCCL_TESTS, "alltoall_perf": _RCCL_TESTS,
            "TransferBench": "rocm-validation-suite (bundles TransferBench) or a TransferBench build",
            "rocm-bandwidth-test": "rocm-bandwidth-test", "hip-stream": "a BabelStream HIP build",
            "rvs": "rocm-validation-suite", "hipblaslt-bench": "hipblaslt-clients",
            "rocblas-bench": "rocblas-clients", "MIOpenDriver": "miopen-hip"}
GPUS = range(8)


@pytest.fixture(scope="module")
def amd_node(host: Any, spec: dict) -> int:
    if host.backend.NAME != "local":
        pytest.skip("native probes run on the node itself: use --hosts=local:// (playbooks/validate.yml does)")
    if gpu_vendor(spec) != "amd":
        pytest.skip("native ROCm tools: spec declares NVIDIA GPUs (the portable probes cover them)")
    if not host.file("/dev/kfd").exists:
        pytest.skip("no /dev/kfd: no AMD GPU to run ROCm tools on (the presence checks fail and say why)")
    if not spec.get("validation_gpu_count"):
        pytest.skip("spec declares no validation_gpu_count: the native probes run on each declared GPU")
    return int(spec["validation_gpu_count"])


def _on_gpu(verdict: Any, gpu: int | None) -> Any:
    """Subject 'gpu' / 'gpu <what>' (a single-GPU tool that does not know its device) -> 'gpu<N> <what>',
    in the subject and where the reason repeats it."""
    subject = verdict.subject
    if gpu is None or not (subject == "gpu" or subject.startswith("gpu ")):
        return verdict
    named = f"gpu{gpu}{subject[3:]}"
    return dataclasses.replace(verdict, subject=named, reason=verdict.reason.replace(subject, named, 1))


def _installed(argv: list[str]) -> None:
    binary = argv[0]
    if runner.which(binary) is None:
        pytest.skip(f"{binary} is not installed; it comes with {PACKAGES.get(binary, binary)}")


def run_and_judge(tool: str, argv: list[str], targets: Any, record: Any, *, gpu: int | None = None,
                  env: dict[str, str] | None = None) -> None:
    """Run, parse, judge, record (a node-wide tool: collectives, links, RVS)."""
    _installed(argv)
    judge_run(tool, argv, runner.run(argv, TIMEOUT_S[tool], env=env), targets, record, gpu=gpu)


Command = Any  # (gpu) -> (argv, env or None)


@pytest.fixture(scope="module")
def gpu_runs() -> runner.PerGpuRuns:
    """The node's per-GPU cases, each run on every GPU at once by the first check that needs it."""
    return runner.PerGpuRuns()


def run_on_every_gpu_and_judge(tool: str, case: str, command: Command, gpu: int, amd_node: int,
                               gpu_runs: runner.PerGpuRuns, targets: Any, record: Any) -> None:
    """This GPU's share of a case that runs on all the node's GPUs at once (one process per GPU,
    started together by the case's first check; runner.PerGpuRuns), parsed, judged and recorded
    for this GPU only."""
    if gpu >= amd_node:
        pytest.skip(f"spec declares {amd_node} GPUs")
    argv, _ = command(gpu)
    _installed(argv)
    raw = gpu_runs.get((tool, case), gpu, range(amd_node), command, TIMEOUT_S[tool])
    judge_run(tool, argv, raw, targets, record, gpu=gpu)


def judge_run(tool: str, argv: list[str], raw: runner.RawRun, targets: Any, record: Any, *,
              gpu: int | None = None) -> None:
    """Parse, judge, record one finished run; `gpu` names the device of a single-GPU tool run.

    The argv becomes the record's command (where the parser found none), so the judge reads the
    collective, dtype, initialization and device from what was run. A non-zero exit is still parsed:
    MIOpenDriver exits non-zero when its verification fails, and that verdict names the layer.
    """
    if raw.timed_out:
        verdict = judge_timeout(f"{tool}_run", " ".join(argv), raw.seconds, targets)
        record(f"{tool}_run_seconds", "node", raw.seconds, "s", higher_is_better=False, status="timeout",
               reason=verdict.reason)
        raise CheckFailure("RF-TIMEOUT", verdict.reason)
    exited = f"{' '.join(argv)} exited {raw.rc}: {raw.stderr.strip()[-400:]}"
    try:
        parsed = parsers.parse(tool, raw.stdout)
    except ParseError as exc:
        expect(raw.rc == 0, "RF-TOOL-FAILED", exited)
        raise CheckFailure("RF-TOOL-FAILED", f"{tool} output not understood: {exc}") from exc
    if getattr(parsed, "command", "") is None:
        parsed = dataclasses.replace(parsed, command=" ".join(argv))
    verdicts = [_on_gpu(v, gpu) for v in extract.verdicts_for(tool, parsed, targets)]
    if not verdicts:
        expect(raw.rc == 0, "RF-TOOL-FAILED", exited)
        raise CheckFailure("RF-NOT-REPORTED", f"{' '.join(argv)} exited 0 but printed no measurement that "
                           f"{tool}'s judge reads; an empty run is never a pass")
    taken = {} if raw.started_at is None else {"taken_from": round(raw.started_at, 3),
                                                 "taken_to": round(raw.started_at + raw.seconds, 3)}
    for v in verdicts:
        record(v.metric, v.subject, v.measured if isinstance(v.measured, (int, float)) else None, v.unit,
               status=v.status.value, reason=v.reason, code=v.code, command=" ".join(argv), **taken)
    bad = [v for v in verdicts if v.status in FAILING]
    expect(raw.rc == 0 or bool(bad), "RF-TOOL-FAILED", exited)
    fail_on_verdicts(bad)
    if all(v.status is Status.SKIP for v in verdicts):
        pytest.skip(f"nothing judged, {len(verdicts)} measurement(s) recorded: "
                    + "; ".join(v.reason for v in verdicts[:3]) + (" ..." if len(verdicts) > 3 else ""))


def test_rccl_all_reduce_bus_bandwidth_correctness_and_no_dip(amd_node: int, targets: Any, record: Any) -> None:
    """RCCL all-reduce across the node's GPUs is correct, meets its bus bandwidth target and does not
    dip as messages grow."""
    run_and_judge("rccl-tests", native_commands.rccl_collective("all_reduce", gpus=amd_node), targets, record)


def test_transferbench_every_gpu_pair_and_host_link(amd_node: int, targets: Any, record: Any) -> None:
    """TransferBench measures every GPU pair and every host link at its bandwidth target."""
    from validation.parsers import transferbench

    run_and_judge("transferbench", transferbench.argv(preset="p2p"), targets, record)


def test_rocm_bandwidth_test_where_transferbench_is_absent(amd_node: int, targets: Any, record: Any) -> None:
    """rocm-bandwidth-test measures the GPU pairs and host links where TransferBench is not installed."""
    from validation.parsers import rocm_bandwidth_test

    if runner.which("TransferBench") is not None:
        pytest.skip("TransferBench is installed and measures the same links; rocm-bandwidth-test is its fallback")
    run_and_judge("rocm-bandwidth-test", rocm_bandwidth_test.argv(all_pairs="uni"), targets, record)


@pytest.mark.parametrize("gpu", range(8))
def test_babelstream_hbm_bandwidth_per_gpu(amd_node: int, gpu_runs: runner.PerGpuRuns, targets: Any, record: Any,
                                           gpu: int) -> None:
    """Each GPU's HBM bandwidth (BabelStream) meets its target."""
    from validation.parsers import babelstream

    run_on_every_gpu_and_judge("babelstream", "triad", lambda g: (babelstream.argv(device=g, iterations=50), None),
                               gpu, amd_node, gpu_runs, targets, record)


RVS_CONF_DIRS = ("/opt/rocm/share/rocm-validation-suite/conf", "/opt/rocm/etc/rocm-validation-suite/conf")


def test_rvs_gst_gemm_per_gpu_against_the_sku_targets(host: Any, amd_node: int, spec: dict, targets: Any,
                                                      record: Any, tmp_path: Path) -> None:
    """RVS GST (gst_single.conf of the SKU) on all GPUs at once: best GFLOPS per action and GPU,
    judged with our own copy of the targets and their sources; RVS's own `met:` flag is not trusted.

    The shipped conf sets no `parallel`, so RVS would stress one GPU after the other (8 × its
    duration); we run a copy with `parallel: true` on every action, named in the record's command."""
    _installed(["rvs"])
    sku_dir = spec.get("validation_rvs_conf_dir") or str(targets.name).split("-")[0].upper()
    conf = next((f"{base}/{sku_dir}/gst_single.conf" for base in RVS_CONF_DIRS
                 if host.file(f"{base}/{sku_dir}/gst_single.conf").exists), None)
    if conf is None:
        pytest.skip(f"rvs is installed but has no {sku_dir}/gst_single.conf under {', '.join(RVS_CONF_DIRS)}")
    try:
        together = native_commands.rvs_conf_all_gpus_at_once(host.file(conf).content_string)
    except ValueError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"{conf}: {exc}; reinstall rocm-validation-suite") from exc
    ours = tmp_path / f"{sku_dir}-gst_single-all-gpus-at-once.conf"
    ours.write_text(together)
    from validation.parsers import rvs

    run_and_judge("rvs", rvs.argv(config=str(ours)), targets, record)


@pytest.mark.parametrize("collective", ["all_gather", "alltoall"])
def test_rccl_collective_bus_bandwidth_correctness_and_no_dip(amd_node: int, targets: Any, record: Any,
                                                             collective: str) -> None:
    """All GPUs in one process (-g N), 8 B..16 GiB: busBW at 8/16 GiB (recorded for 8 GPUs: the
    only published numbers are for 32), #wrong == 0 with -c 1, no dip as sizes grow."""
    run_and_judge("rccl-tests", native_commands.rccl_collective(collective, gpus=amd_node), targets, record)


@pytest.mark.parametrize("case", native_commands.GST_GEMM_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: f"gpu{g}")
def test_gemm_tflops_per_gpu_against_the_gst_targets(amd_node: int, gpu_runs: runner.PerGpuRuns, targets: Any,
                                                     record: Any, gpu: int, case: native_commands.GemmCase) -> None:
    """The RVS GST shapes, dtypes and initializations through hipblaslt-bench / rocblas-bench, on
    every GPU at once."""
    run_on_every_gpu_and_judge(case.tool, case.name, lambda g: (native_commands.gemm_argv(case, device=g), None),
                               gpu, amd_node, gpu_runs, targets, record)


@pytest.mark.parametrize("metric", list(native_commands.ROCBLAS_ACCEPTANCE))
@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: f"gpu{g}")
def test_rocblas_acceptance_gemm_per_gpu(amd_node: int, gpu_runs: runner.PerGpuRuns, targets: Any, record: Any,
                                        gpu: int, metric: str) -> None:
    """AMD's acceptance rocblas-bench commands (FP32 4000³, fp16 and int8 strided batched), on every
    GPU at once."""
    run_on_every_gpu_and_judge("rocblas-bench", metric,
                               lambda g: (native_commands.rocblas_acceptance(metric, device=g), None),
                               gpu, amd_node, gpu_runs, targets, record)


@pytest.mark.parametrize("layer", native_commands.CONV_LAYERS, ids=lambda layer: layer.name)
@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: f"gpu{g}")
def test_miopen_conv_layer_verifies_and_is_timed_per_gpu(amd_node: int, gpu_runs: runner.PerGpuRuns, targets: Any,
                                                         record: Any, gpu: int, layer: ConvShape) -> None:
    """MIOpenDriver fp16 forward + backward data + backward weights with -V 1 -t 1, on every GPU at
    once: a failed verification fails the GPU; times and TFLOPS are recorded (no published target)."""
    run_on_every_gpu_and_judge("miopen-driver", layer.name,
                               lambda g: (native_commands.miopen_conv(layer), native_commands.miopen_env(g)),
                               gpu, amd_node, gpu_runs, targets, record)
