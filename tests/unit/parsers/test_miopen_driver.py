"""MIOpenDriver parser on a real MIOpenDriver 3.5.2 convfp16 run on MI300X."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import miopen_driver

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "miopen-driver"
FLAGOFF = REAL / "mi300x-x8-miopen-wrapper-proof-flagoff-convfp16.txt"


def test_command_operation_and_args():
    r = miopen_driver.parse(FLAGOFF.read_text())
    assert r.command.startswith("MIOpenDriver convfp16 -n 1 -c 1 -H 8")
    assert r.operation == "convfp16"
    args = dict(r.args)
    assert len(r.args) == 19
    assert (args["-H"], args["-W"], args["-y"], args["-x"], args["-F"], args["-V"]) == ("8", "8", "3", "3", "1", "0")
    assert r.prng_seed == 12345678


def test_system_line_is_split_into_fields():
    system = dict(miopen_driver.parse(FLAGOFF.read_text()).system)
    assert system["ROCm"] == "7.13.61040"
    assert system["MIOpen Driver"] == "3.5.2"
    assert system["GPU Model"] == "8 x AMD Instinct MI300X"
    assert system["AMDGPU Driver"] == "6.16.13"
    assert system["Timestamp"] == "2026-05-27 14:49:27 UTC"
    assert len(system) == 10


def test_forward_algorithm_time_and_stats():
    r = miopen_driver.parse(FLAGOFF.read_text())
    (algo,) = r.algorithms
    assert (algo.phase, algo.algorithm, algo.solution_id, algo.solution_name) == (
        "forward", 1, 85, "ConvDirectNaiveConvFwd")
    (t,) = r.timings
    assert (t.phase, t.clock, t.elapsed_ms) == ("forward", "gpu_kernel", 0.006936)
    (s,) = r.stats
    assert s.name == "fwd-conv3x3u1"
    assert (s.flop_count, s.bytes_read, s.bytes_written) == (1152, 146, 128)
    assert (s.gflops, s.gb_s, s.time_ms) == (0, 0, 0.006936)
    assert dict(s.columns)["ho"] == "8"
    assert r.verifications == ()  # -V 0: verification was off


def test_verification_lines_are_recorded_pass_and_fail():
    text = FLAGOFF.read_text() + ("Forward Convolution Verifies OK on GPU reference (0.0012 < 0.0082)\n"
                                  "Backward Convolution Data FAILED: 0.5 > 0.0082\n")
    r = miopen_driver.parse(text)
    assert [(v.phase, v.passed) for v in r.verifications] == [("forward", True), ("backward_data", False)]


def test_unknown_line_raises_with_line_number():
    text = FLAGOFF.read_text() + "MIOpen Error: something broke\n"
    with pytest.raises(ParseError) as err:
        miopen_driver.parse(text)
    assert err.value.tool == "miopen-driver" and err.value.line_no == 9


@pytest.mark.parametrize("garbage", ["", "PRNG seed: 1\n", "stats: fwd, 1\n"], ids=["empty", "seed-only",
                                                                                   "row-without-header"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        miopen_driver.parse(garbage)


def test_argv_builds_resnet_layer_with_verification():
    assert miopen_driver.argv(n=256, c=64, h=56, w=56, k=64, y=3, x=3, pad=1) == [
        "MIOpenDriver", "convfp16", "-n", "256", "-c", "64", "-H", "56", "-W", "56", "-k", "64", "-y", "3",
        "-x", "3", "-p", "1", "-q", "1", "-u", "1", "-v", "1", "-l", "1", "-j", "1", "-g", "1", "-F", "0",
        "-t", "1", "-i", "10", "-V", "1"]


@pytest.mark.parametrize("kwargs", [{"operation": "gemm"}, {"direction": 3}, {"n": 0}], ids=["op", "dir", "n"])
def test_argv_rejects_bad_requests(kwargs):
    base = {"n": 1, "c": 1, "h": 8, "w": 8, "k": 1, "y": 3, "x": 3}
    with pytest.raises(ValueError):
        miopen_driver.argv(**{**base, **kwargs})
