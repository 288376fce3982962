"""HIP kernel probe: compile hip/rf_probe.hip with hipcc (or nvcc on NVIDIA hosts), run it, parse it.

The kernel checks its own result on every GPU and prints one `RF_HIP` line per GPU plus an
`RF_HIP_SUMMARY` line (format in the source's header comment). `parse()` accepts exactly that
and raises ParseError on anything else, so a changed or truncated output never reads as a pass.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from validation.errors import ParseError, ProbeError
from validation.parsers._text import numbered, require_text, to_float, to_int
from validation.runner import RawRun, run, which

log = logging.getLogger(__name__)

TOOL = "rf-hip-probe"
SOURCE = Path(__file__).resolve().parent / "hip" / "rf_probe.hip"
DEFAULT_OFFLOAD_ARCH = "gfx942"  # MI300X / MI300A / MI325X
COMPILERS = ("hipcc", "nvcc")

_TOKEN = re.compile(r'\s+(\w+)=("[^"]*"|\S+)')
_GPU_KEYS_MEASURED = {"gpu", "name", "arch", "n", "result", "max_abs_err", "sum_err", "ms"}
_GPU_KEYS_ERROR = {"gpu", "result", "step", "error"}
_SUMMARY_KEYS = {"platform", "devices", "ok", "failed"}


@dataclass(frozen=True, slots=True, kw_only=True)
class HipGpuResult:
    """One GPU. result: "ok", "fail" (wrong numbers) or "error" (a HIP call failed at `step`)."""

    gpu: int
    result: str
    name: str | None = None
    arch: str | None = None
    n: int | None = None
    max_abs_err: float | None = None
    sum_err: float | None = None
    kernel_ms: float | None = None
    step: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HipProbeOutput:
    platform: str  # "hip" or "cuda" (how the binary was built)
    devices: int
    ok: int
    failed: int
    gpus: tuple[HipGpuResult, ...]
    error: str | None  # why no GPU was probed (runtime error or none visible)


@dataclass(frozen=True, slots=True, kw_only=True)
class HipProbeRun:
    """Compile step, run step and parsed output. reason says why a later step did not happen."""

    compiler: str
    build: RawRun
    run: RawRun | None
    output: HipProbeOutput | None
    reason: str | None


def hipcc_argv(source: Path, out: Path, *, offload_arch: str = DEFAULT_OFFLOAD_ARCH) -> tuple[str, ...]:
    """hipcc --offload-arch=gfx942 -O2 -o OUT SOURCE (offline compilation: no GPU needed)."""
    return ("hipcc", f"--offload-arch={offload_arch}", "-O2", "-o", str(out), str(source))


def nvcc_argv(source: Path, out: Path, *, arch: str | None = None) -> tuple[str, ...]:
    """nvcc -x cu -O2 [-arch=sm_90] -o OUT SOURCE. Without arch nvcc embeds PTX that the driver
    compiles for newer GPUs at load time."""
    argv = ["nvcc", "-x", "cu", "-O2"]
    if arch:
        argv.append(f"-arch={arch}")
    return (*argv, "-o", str(out), str(source))


def pick_compiler(path: str | None = None) -> str | None:
    """hipcc where ROCm is installed, else nvcc, else None."""
    return next((c for c in COMPILERS if which(c, path) is not None), None)


def build_argv(
    compiler: str,
    out: Path,
    *,
    source: Path = SOURCE,
    offload_arch: str = DEFAULT_OFFLOAD_ARCH,
    cuda_arch: str | None = None,
) -> tuple[str, ...]:
    if compiler == "hipcc":
        return hipcc_argv(source, out, offload_arch=offload_arch)
    if compiler == "nvcc":
        return nvcc_argv(source, out, arch=cuda_arch)
    raise ValueError(f"unknown compiler {compiler!r}; one of {', '.join(COMPILERS)}")


def build_env(compiler: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """hipcc picks the NVIDIA platform when it finds nvcc on the host; --offload-arch is AMD's,
    so a hipcc build says HIP_PLATFORM=amd unless the caller set it."""
    out = dict(env or {})
    if compiler == "hipcc":
        out.setdefault("HIP_PLATFORM", "amd")
    return out


def hip_probe(
    *,
    compiler: str | None = None,
    n: int | None = None,
    offload_arch: str = DEFAULT_OFFLOAD_ARCH,
    cuda_arch: str | None = None,
    compile_timeout_s: float = 300.0,
    run_timeout_s: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> HipProbeRun:
    """Compile the probe into a temporary directory, run it on every visible GPU, parse it.

    Raises ProbeError when no compiler exists, ParseError when the binary printed something
    this module does not understand. A failed or timed-out compile or run is returned, not raised.
    """
    compiler = compiler or pick_compiler()
    if compiler is None:
        raise ProbeError("neither hipcc nor nvcc is on PATH; install hipcc (ROCm) or the CUDA toolkit")
    with tempfile.TemporaryDirectory(prefix="rf-hip-") as tmp:
        binary = Path(tmp) / "rf_probe"
        argv = build_argv(compiler, binary, offload_arch=offload_arch, cuda_arch=cuda_arch)
        build = run(argv, compile_timeout_s, env=build_env(compiler, env), cwd=tmp)
        if not build.ok:
            why = "timed out" if build.timed_out else f"exited {build.rc}"
            tail = build.stderr.strip().splitlines()[-5:]
            return HipProbeRun(
                compiler=compiler,
                build=build,
                run=None,
                output=None,
                reason=f"{compiler} {why}: {' | '.join(tail)}",
            )
        ran = run((str(binary), *(() if n is None else (str(n),))), run_timeout_s, env=env, cwd=tmp)
    if ran.timed_out:
        return HipProbeRun(
            compiler=compiler,
            build=build,
            run=ran,
            output=None,
            reason=f"the probe ran past {run_timeout_s:.0f} s and was killed",
        )
    return HipProbeRun(compiler=compiler, build=build, run=ran, output=parse(ran.stdout), reason=None)


def parse(text: str) -> HipProbeOutput:
    """Parse the probe's stdout: RF_HIP lines, then exactly one RF_HIP_SUMMARY line, last."""
    require_text(TOOL, text)
    gpus: list[HipGpuResult] = []
    summary: dict[str, str] | None = None
    for line_no, line in numbered(text):
        if not line.strip():
            continue
        if summary is not None:
            raise ParseError(
                TOOL,
                "text after the summary line",
                line_no=line_no,
                line=line,
                expected="RF_HIP_SUMMARY as the last line",
            )
        tag, _, rest = line.partition(" ")
        fields = _fields(rest, line_no, line)
        if tag == "RF_HIP":
            gpus.append(_gpu(fields, line_no, line))
        elif tag == "RF_HIP_SUMMARY":
            _require_keys(fields, _SUMMARY_KEYS, _SUMMARY_KEYS | {"error"}, line_no, line)
            summary = {**fields, "_line_no": str(line_no), "_line": line}
        else:
            raise ParseError(
                TOOL,
                "unexpected line",
                line_no=line_no,
                line=line,
                expected="a line starting with RF_HIP or RF_HIP_SUMMARY",
                hint="run the probe binary on its own; its stdout holds only these lines",
            )
    if summary is None:
        raise ParseError(
            TOOL,
            "no RF_HIP_SUMMARY line",
            expected="a summary as the last line",
            hint="the output is truncated: the probe crashed or was killed",
        )
    return _summary(summary, tuple(gpus))


def _fields(rest: str, line_no: int, line: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    pos = 0
    text = " " + rest
    for match in _TOKEN.finditer(text):
        if match.start() != pos:
            break
        key, value = match.group(1), match.group(2)
        if key in fields:
            raise ParseError(TOOL, f"key {key!r} twice", line_no=line_no, line=line)
        fields[key] = value[1:-1] if value.startswith('"') else value
        pos = match.end()
    if text[pos:].strip():
        raise ParseError(
            TOOL,
            f"cannot read {text[pos:].strip()!r}",
            line_no=line_no,
            line=line,
            expected='space-separated key=value or key="quoted value" fields',
        )
    return fields


def _require_keys(fields: Mapping[str, str], needed: set[str], allowed: set[str], line_no: int, line: str) -> None:
    missing, unknown = needed - fields.keys(), fields.keys() - allowed
    if missing or unknown:
        raise ParseError(
            TOOL,
            f"missing keys {sorted(missing)}, unknown keys {sorted(unknown)}",
            line_no=line_no,
            line=line,
            expected=f"keys {sorted(allowed)}",
        )


def _gpu(fields: dict[str, str], line_no: int, line: str) -> HipGpuResult:
    result = fields.get("result")
    gpu = to_int(TOOL, fields.get("gpu", ""), line_no, line, "gpu index")
    if result == "error":
        _require_keys(fields, _GPU_KEYS_ERROR, _GPU_KEYS_ERROR, line_no, line)
        return HipGpuResult(gpu=gpu, result=result, step=fields["step"], error=fields["error"])
    if result not in ("ok", "fail"):
        raise ParseError(
            TOOL,
            f"unknown result {result!r}",
            line_no=line_no,
            line=line,
            expected="result=ok, result=fail or result=error",
        )
    _require_keys(fields, _GPU_KEYS_MEASURED, _GPU_KEYS_MEASURED, line_no, line)
    return HipGpuResult(
        gpu=gpu,
        result=result,
        name=fields["name"],
        arch=fields["arch"],
        n=to_int(TOOL, fields["n"], line_no, line, "n"),
        max_abs_err=to_float(TOOL, fields["max_abs_err"], line_no, line, "max_abs_err"),
        sum_err=to_float(TOOL, fields["sum_err"], line_no, line, "sum_err"),
        kernel_ms=to_float(TOOL, fields["ms"], line_no, line, "ms"),
    )


def _summary(fields: dict[str, str], gpus: tuple[HipGpuResult, ...]) -> HipProbeOutput:
    line_no, line = int(fields["_line_no"]), fields["_line"]
    devices = to_int(TOOL, fields["devices"], line_no, line, "devices")
    ok = to_int(TOOL, fields["ok"], line_no, line, "ok")
    failed = to_int(TOOL, fields["failed"], line_no, line, "failed")
    indices = sorted(g.gpu for g in gpus)
    if indices != list(range(devices)):
        raise ParseError(
            TOOL,
            f"summary says {devices} devices but GPU lines cover {indices}",
            line_no=line_no,
            line=line,
            hint="the output is incomplete or mixed from two runs",
        )
    counted_ok = sum(g.result == "ok" for g in gpus)
    if (ok, failed) != (counted_ok, devices - counted_ok):
        raise ParseError(
            TOOL,
            f"summary ok={ok} failed={failed} disagrees with the GPU lines ({counted_ok} ok of {devices})",
            line_no=line_no,
            line=line,
        )
    return HipProbeOutput(
        platform=fields["platform"],
        devices=devices,
        ok=ok,
        failed=failed,
        gpus=gpus,
        error=fields.get("error"),
    )
