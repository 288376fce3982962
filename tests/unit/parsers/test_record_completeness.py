"""Per-record completeness: when a real output prints a field the record models, the parsed value is not
null (issue 15: amd-smi's 7.x static JSON parsed with PCIe width/speed, VRAM type, power cap and serial
null although the output has them; rocm-smi's pre-6.1 JSON left the clocks null).

Each row says: in outputs of TOOL, every match of PATTERN (a printed, non-N/A value) must show up as a
non-null FIELD on as many GPUs as there are matches (at most every GPU). A new field a parser forgets,
or a new spelling of a key, fails here with the fixture named.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from validation import parsers
from validation.errors import ParseError

FIX = Path(__file__).resolve().parents[2] / "fixtures"

FIELDS: list[tuple[str, str, str]] = [
    ("amd-smi", r"(?m)^\s+MARKET_NAME: (?!N/A)\S|\"market_name\": \"(?!N/A)", "market_name"),
    ("amd-smi", r"(?m)^\s+DEVICE_ID: 0x|\"device_id\": \"0x", "device_id"),
    ("amd-smi", r"(?m)^\s+MAX_PCIE_WIDTH: \d|\"max_pcie_width\": \d", "pcie_width_max"),
    ("amd-smi", r"(?m)^\s+MAX_PCIE_SPEED: \d|\"max_pcie_speed\": \{\s*\"value\": \d", "pcie_speed_max_gt_s"),
    ("amd-smi", r"(?m)\"vram\": \{\s*\"type\": \"(?!N/A)|^    VRAM:\n\s+TYPE: (?!N/A)", "vram_type"),
    ("amd-smi", r"(?m)\"limit\": \{[^}]*?\"socket_power\": \{\s*\"value\": \d"
                r"|^    LIMIT:\n(?:\s+\w+: .*\n)*?\s+SOCKET_POWER: \d", "power_cap_w"),
    ("amd-smi", r"(?m)^\s+ASIC_SERIAL: (?!N/A)\S|\"asic_serial\": \"(?!N/A)\S", "asic_serial"),
    ("amd-smi", r"(?m)^\s+PRODUCT_SERIAL: (?!N/A)\S|\"product_serial\": \"(?!N/A)\S", "product_serial"),
    ("amd-smi", r"(?m)^\s+TARGET_GRAPHICS_VERSION: gfx|\"target_graphics_version\": \"gfx", "gfx_target"),
    ("amd-smi", r"(?m)^\s+COMPUTE_PARTITION: (?!N/A)\S", "compute_partition"),
    ("rocm-smi", r"(?m)^GPU\[\d+\]\s*: (?:Device ID|GPU ID): 0x|\"(?:Device ID|GPU ID)\": \"0x", "device_id"),
    ("rocm-smi", r"(?m)^GPU\[\d+\]\s*: Card [Ss]eries:\s+(?!N/A)\S|\"Card [Ss]eries\": \"(?!N/A)", "name"),
    ("rocm-smi", r"(?m)^GPU\[\d+\]\s*: sclk clock level: \S+:? \(\d|\"sclk clock speed:\": \"\(\d", "sclk_mhz"),
    ("rocm-smi", r"(?m)^GPU\[\d+\]\s*: mclk clock level: \S+:? \(\d|\"mclk clock speed:\": \"\(\d", "mclk_mhz"),
    ("rocm-smi", r"(?m)^GPU\[\d+\]\s*: VBIOS version: (?!N/A)\S|\"VBIOS version\": \"(?!N/A)", "vbios_version"),
    ("rocm-smi", r"(?m)^GPU\[\d+\]\s*: GFX Version:\s+gfx", "gfx_version"),
    ("rocminfo", r"(?m)^  Chip ID:\s+[1-9]\d*\(0x", "chip_id"),
    ("rocminfo", r"(?m)^  Name:\s+gfx\d", "gfx_target"),
    ("nvidia-smi", r"(?m)^\s+Device Id\s+: 0x[0-9A-F]{8}$", "pci_device_id"),
    ("nvidia-smi", r"(?m)^\s+Product Name\s+: \S", "name"),
    ("nvidia-smi", r"(?m)^\s+Serial Number\s+: (?!N/A)\d", "serial"),
    ("nvidia-smi", r"(?m)^\s+VBIOS Version\s+: \S", "vbios_version"),
]


def _cases() -> list[tuple[str, str, str, Path]]:
    out = []
    for tool, pattern, attr in FIELDS:
        for path in sorted((FIX / "real" / tool).glob("*.txt")):
            out.append(pytest.param(tool, pattern, attr, path, id=f"{attr}:{path.name}"))
    return out


@pytest.mark.parametrize("tool, pattern, attr, path", _cases())
def test_a_printed_field_is_parsed(tool: str, pattern: str, attr: str, path: Path) -> None:
    text = path.read_text()
    printed = len(re.findall(pattern, text))
    if not printed:
        return
    try:
        record = parsers.parse(tool, text)
    except ParseError:
        return  # a documented refusal (test_parsers_fuzz_a REFUSED)
    filled = sum(getattr(g, attr) is not None for g in record.gpus)
    assert filled >= min(printed, len(record.gpus)), (
        f"{path.name}: {attr} printed {printed}x but parsed on {filled} of {len(record.gpus)} GPUs")


def test_the_table_catches_a_field_the_parser_drops() -> None:
    """The check itself can fail: the MI210 static JSON prints max_pcie_width, so a record without it
    would be reported."""
    text = (FIX / "real/amd-smi/mi210-device-metrics-exporter-test-static-json-gpu-data.txt").read_text()
    record = parsers.parse("amd-smi", text)
    pattern = next(p for t, p, a in FIELDS if a == "pcie_width_max")
    assert len(re.findall(pattern, text)) == 1 and record.gpus[0].pcie_width_max == 16
    assert (record.gpus[0].vram_type, record.gpus[0].power_cap_w, record.gpus[0].pcie_speed_max_gt_s) == (
        "HBM", 300.0, 16.0)
    assert (record.gpus[0].product_serial, record.gpus[0].gfx_target) == ("0", "gfx90a")
