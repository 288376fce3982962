"""lspci -vvv parser against real outputs (tests/fixtures/real/lspci/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import lspci

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "lspci"
DERIVED = FIXTURES / "derived" / "lspci"


def test_connectx7_gen5_x16_link_with_numa_node_and_clean_devsta() -> None:
    rec = lspci.parse((REAL / "cx7-lenovo-sd665n-lspci-s-03-vvv.txt").read_text())
    assert rec.messages == ("lspci: Unable to load libkmod resources: error -2",)
    (dev,) = rec.devices
    assert (dev.bdf, dev.class_name) == ("03:00.0", "Ethernet controller")
    assert dev.description == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert dev.vendor_id is None  # no -nn: "[ConnectX-7]" is a name, not ids
    assert dev.numa_node == 0
    assert dev.link_capability == lspci.PciLink(speed_gt_s=32.0, width=16)
    assert dev.link_status == lspci.PciLink(speed_gt_s=32.0, width=16, speed_downgraded=False,
                                            width_downgraded=False)
    assert dev.fatal_error is False
    assert dev.device_status["CorrErr"] is False
    assert dev.kernel_driver == "mlx5_core"


def test_derived_x8_link_is_reported_as_downgraded_width() -> None:
    (dev,) = lspci.parse((DERIVED / "cx7-lenovo-sd665n-lnksta-x8-downgraded.txt").read_text()).devices
    assert dev.link_status is not None
    assert dev.link_status.width == 8
    assert dev.link_status.width_downgraded is True
    assert dev.link_status.speed_downgraded is False
    assert dev.link_capability is not None and dev.link_capability.width == 16


def test_lab_vm_nn_output_reads_class_codes_and_vendor_device_ids() -> None:
    rec = lspci.parse((REAL / "lab-debian12-vm-lspci-vvv-nn.txt").read_text())
    assert [d.bdf for d in rec.devices] == ["00:00.0", "00:01.0", "00:02.0", "00:03.0", "00:04.0", "00:05.0"]
    host, balloon = rec.devices[0], rec.devices[1]
    assert (host.class_code, host.vendor_id, host.device_id) == (0x0600, 0x8086, 0x0D57)
    assert host.revision is None
    assert (balloon.class_code, balloon.vendor_id, balloon.device_id, balloon.revision) == (
        0xFFFF, 0x1AF4, 0x1045, "01")
    assert balloon.kernel_driver == "virtio-pci"
    # a VM without PCIe capability blocks: nothing to report, not zero
    assert all(d.link_status is None and d.numa_node is None for d in rec.devices)
    assert host.fatal_error is None


def test_devsta_fatal_error_plus_is_reported() -> None:
    lines = (REAL / "cx7-lenovo-sd665n-lspci-s-03-vvv.txt").read_text().splitlines()
    edited = [x.replace("DevSta:\tCorrErr- NonFatalErr- FatalErr-", "DevSta:\tCorrErr- NonFatalErr- FatalErr+")
              for x in lines]
    assert edited != lines
    (dev,) = lspci.parse("\n".join(edited)).devices
    assert dev.fatal_error is True


def test_unreadable_lnksta_names_the_line() -> None:
    lines = (REAL / "cx7-lenovo-sd665n-lspci-s-03-vvv.txt").read_text().splitlines()
    index = next(i for i, x in enumerate(lines) if "LnkSta:" in x)
    lines[index] = "\t\tLnkSta:\tSpeed 32GT/s (ok), Wid"
    with pytest.raises(ParseError) as err:
        lspci.parse("\n".join(lines))
    assert err.value.line_no == index + 1
    assert "LnkSta" in str(err.value)


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        lspci.parse("not a pci device\n")
    assert (err.value.tool, err.value.line_no) == ("lspci", 1)


def test_rejects_rocm_smi_output() -> None:
    text = (FIXTURES / "real" / "rocm-smi" / "mi300x-x1-thamada-gls-concise.txt").read_text()
    with pytest.raises(ParseError, match="lspci"):
        lspci.parse(text)
