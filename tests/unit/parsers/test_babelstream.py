"""BabelStream parser on the real 8-rank interleaved MI300X output of AMD's acceptance docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import babelstream

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "babelstream"
MPIEXEC = REAL / "mi300x-x8-amd-acceptance-doc-mpiexec-truncated.txt"


def test_banner_facts_shared_by_all_ranks():
    r = babelstream.parse(MPIEXEC.read_text())
    assert r.command == "mpiexec -n 8 wrapper.sh"
    assert (r.version, r.implementation, r.iterations) == ("5.0", "HIP", 50)
    assert r.precision == "double"  # "**double**" markdown artifact stripped
    assert (r.array_size_mb, r.total_size_mb) == (2147.5, 6442.5)


def test_interleaved_truncated_output_is_flagged_and_not_attributed():
    r = babelstream.parse(MPIEXEC.read_text())
    assert r.processes == 2  # two banners survived the documentation's elision
    assert r.interleaved is True and r.truncated is True
    assert [d.name for d in r.devices] == ["AMD Instinct MI300X"] * 3
    assert [d.driver for d in r.devices] == ["60241133"] * 3
    assert [d.memory for d in r.devices] == ["DEFAULT", "DEFAULT", None]
    assert {t.rank for t in r.tables} == {None}


def test_two_kernel_tables_with_five_rows_each():
    r = babelstream.parse(MPIEXEC.read_text())
    assert len(r.tables) == 2
    first, second = r.tables
    assert [k.function for k in first.rows] == ["Copy", "Mul", "Add", "Triad", "Dot"]
    copy = first.rows[0]
    assert (copy.mb_s, copy.min_s, copy.max_s, copy.avg_s) == (4255995.148, 0.00101, 0.00117, 0.00106)
    assert first.rows[3].mb_s == 3948061.647
    assert second.rows[4].mb_s == 3927179.117 and second.rows[4].avg_s == 0.00113


def test_init_and_read_timings():
    r = babelstream.parse(MPIEXEC.read_text())
    assert [(t.phase, t.seconds, t.mb_s) for t in r.timings] == [
        ("init", 0.400851, 16071.943100), ("read", 0.189949, 33916.687305), ("init", 0.401357, 16051.675182)]


def test_tagged_mpi_output_is_attributed_per_rank():
    text = ("[1,0]<stdout>:Function    MBytes/sec  Min (sec)   Max         Average\n"
            "[1,1]<stdout>:Function    MBytes/sec  Min (sec)   Max         Average\n"
            "[1,1]<stdout>:Copy        4269126.275 0.00101     0.00109     0.00105\n"
            "[1,0]<stdout>:Copy        4255995.148 0.00101     0.00117     0.00106\n")
    r = babelstream.parse(text)
    assert [(t.rank, t.rows[0].mb_s) for t in r.tables] == [(0, 4255995.148), (1, 4269126.275)]


def test_gbytes_unit_is_converted_to_decimal_mb():
    r = babelstream.parse("Function    GBytes/sec  Min (sec)   Max         Average\n"
                          "Triad       3948.061    0.00163     0.00180     0.00166\n")
    assert r.tables[0].rows[0].mb_s == pytest.approx(3948061.0)


def test_settings_that_differ_between_ranks_are_refused():
    text = MPIEXEC.read_text().replace("Running kernels 50 times\n. . .", "Running kernels 20 times\n. . .")
    with pytest.raises(ParseError, match="differs between processes"):
        babelstream.parse(text)


def test_row_with_missing_number_raises():
    text = MPIEXEC.read_text().replace("Mul 4115971.910 0.00104 0.00111 0.00106", "Mul 4115971.910 0.00104")
    with pytest.raises(ParseError) as err:
        babelstream.parse(text)
    assert err.value.line_no == 29 and "Mul row has 2 numbers" in str(err.value)


@pytest.mark.parametrize("garbage", ["", "BabelStream\nVersion: 5.0\n", "Copy 1 2 3 4\n"],
                         ids=["empty", "banner-only", "row-without-header"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        babelstream.parse(garbage)


def test_argv_builds_hip_stream_run():
    assert babelstream.argv(device=3, iterations=50, array_elements=268435456) == [
        "hip-stream", "--device", "3", "-n", "50", "-s", "268435456"]
    assert babelstream.argv(float_precision=True)[-1] == "--float"


def test_argv_rejects_tiny_runs():
    with pytest.raises(ValueError):
        babelstream.argv(iterations=1)


def test_malformed_array_size_raises_parse_error():
    text = MPIEXEC.read_text().replace("Array size: 2147.5 MB", "Array size: 2147.5.1 MB")
    with pytest.raises(ParseError) as err:
        babelstream.parse(text)
    assert err.value.line_no == 7
