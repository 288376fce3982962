"""validation/compat.py: ROCm / driver / OS / kernel combinations, checked against the data file."""

from __future__ import annotations

import pytest

from validation import compat
from validation.errors import CompatibilityError


def combo(rocm: str, driver: str, os_id: str, kernel: str = "") -> compat.Combination:
    return compat.Combination(rocm_version=rocm, driver_version=driver, os_id=os_id, kernel=kernel)


@pytest.mark.parametrize(("rocm", "driver", "os_id"), [
    ("6.2.4", "6.2.4", "ubuntu-22.04"),
    ("6.2.4", "6.2.4", "rhel-9.4"),
    ("6.4.3", "6.4.3", "ubuntu-24.04"),
    ("7.0.2", "30.10.2", "ubuntu-24.04"),
    ("7.0.2", "30.10.2", "rhel-9.6"),
    ("6.2.4", "30.10.1", "ubuntu-22.04.5"),   # 30.10 supports 6.2 user space
    ("6.1.2", "inbox", "debian-13"),
])
def test_supported_combinations_pass(rocm: str, driver: str, os_id: str) -> None:
    compat.check(combo(rocm, driver, os_id))


def test_rocm_7_with_a_6_1_driver_is_refused_naming_what_the_driver_supports() -> None:
    with pytest.raises(CompatibilityError) as err:
        compat.check(combo("7.0.2", "6.1.3", "ubuntu-22.04"))
    message = str(err.value)
    assert "ROCm 7.0.2 is not supported by amdgpu driver 6.1.3" in message
    assert "that driver supports ROCm 5.7, 6.0, 6.1, 6.2, 6.3, 6.4" in message
    assert "driver 30.10 -> ROCm 6.2, 6.3, 6.4, 7.0" in message


def test_unknown_driver_line_lists_known_lines() -> None:
    with pytest.raises(CompatibilityError, match=r"known driver lines: 30\.10, 30\.30, 6\.0"):
        compat.check(combo("7.0.2", "31.1.0", "ubuntu-24.04"))


def test_unsupported_os_is_refused_with_the_supported_list() -> None:
    with pytest.raises(CompatibilityError, match=r"ROCm 6\.2\.4 is not supported on debian-13; supported: oracle-8\.9"):
        compat.check(combo("6.2.4", "6.2.4", "debian-13"))


def test_excluded_hwe_kernel_is_refused_for_rocm_6_2_on_jammy() -> None:
    with pytest.raises(CompatibilityError, match=r"kernel 6\.8\.0-45-generic on ubuntu-22\.04\.5 is excluded"):
        compat.check(combo("6.2.4", "6.2.4", "ubuntu-22.04.5", kernel="6.8.0-45-generic"))
    compat.check(combo("6.2.4", "6.2.4", "ubuntu-22.04.5", kernel="5.15.0-119-generic"))


def test_inbox_row_is_limited_to_its_os() -> None:
    with pytest.raises(CompatibilityError, match="inbox"):
        compat.check(combo("6.1.2", "inbox", "ubuntu-22.04"))


def test_site_rows_need_a_source() -> None:
    with pytest.raises(CompatibilityError, match="needs kind: driver\\|os and a non-empty source"):
        compat.load(extra_rows=[{"kind": "driver", "driver": "inbox", "rocm": ["7.2"]}])


def test_site_row_with_a_source_extends_the_data() -> None:
    rows = [{"kind": "driver", "driver": "inbox", "rocm": ["7.2"], "os": ["debian-13"], "source": "lab rehearsal"},
            {"kind": "os", "rocm": "7.2", "os": ["debian-13"], "source": "lab rehearsal"}]
    compat.check(combo("7.2.4", "inbox", "debian-13"), extra_rows=rows)


def test_every_row_in_the_data_file_has_a_source() -> None:
    data = compat.load()
    assert all(row["source"].strip() for row in data["drivers"] + data["os_support"])
    assert len(data["drivers"]) == 8


@pytest.mark.parametrize("bad", ["latest", "7", "seven.0"])
def test_malformed_versions_are_refused(bad: str) -> None:
    with pytest.raises(CompatibilityError, match=r"X\.Y"):
        compat.release_line(bad)
