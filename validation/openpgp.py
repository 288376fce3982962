"""OpenPGP public keys read without gpg: every key in a key file, its fingerprint, and the pinned
subset re-armoured (RFC 4880 sections 6 and 12.2, RFC 9580 section 5.5.4).

roles/rocm_repo uses this (through plugins/filter/rocm_fleet.py) before a downloaded repository key is
written anywhere. A key file may hold several armoured blocks and each block several keys; apt
trusts every one of them, so every primary key in the material is fingerprinted and each must be
pinned. What the role writes is `trusted_keys`'s output, rebuilt from the verified keys' packets
(one armoured block per key), never the downloaded text. Subkeys travel with their primary key:
gpg accepts a subkey only with a binding signature made by that primary.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from validation.errors import RocmFleetError

PUBLIC_KEY_TAG = 6
SECRET_KEY_TAGS = frozenset({5, 7})
# What a transferable public key may carry: signature, trust, public key, user ID, public subkey, user attribute.
KEY_PACKET_TAGS = frozenset({2, 12, 6, 13, 14, 17})
BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
END = "-----END PGP PUBLIC KEY BLOCK-----"
_ARMOR_LINE = re.compile(r"^-----(BEGIN|END) PGP ([A-Z0-9 ,/]+)-----\s*$")


class KeyError_(RocmFleetError):
    """The data is not an OpenPGP public key (armored or binary), or not one that may be trusted."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    fingerprint: str   # primary key, upper-case hex
    packets: bytes     # the primary key packet and everything up to the next primary key


def _crc24(data: bytes) -> int:
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def _blocks(text: str) -> list[list[str]]:
    """The body lines of every armoured block; any block type other than a public key block is refused."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _ARMOR_LINE.match(line.strip())
        if not match:
            if current is not None:
                current.append(line)
            continue
        kind, label = match.groups()
        if label != "PUBLIC KEY BLOCK":
            raise KeyError_(f"line {number} opens a PGP {label}; a repository key file may hold public key "
                            "blocks only")
        if kind == "BEGIN":
            if current is not None:
                raise KeyError_(f"line {number}: a public key block starts inside another one")
            current = []
        else:
            if current is None:
                raise KeyError_(f"line {number}: a public key block ends that never started")
            blocks.append(current)
            current = None
    if current is not None:
        raise KeyError_("the last public key block has no '-----END PGP PUBLIC KEY BLOCK-----' line")
    if not blocks:
        raise KeyError_(f"no '{BEGIN}' armor found; is the key URL serving an HTML error page?")
    return blocks


def _decode(body: list[str]) -> bytes:
    lines = [line.strip() for line in body]
    while lines and ":" in lines[0]:      # armor headers such as "Version: GnuPG v1"
        lines.pop(0)
    checksum = [line for line in lines if line.startswith("=") and len(line) == 5]
    payload = "".join(line for line in lines if line and not line.startswith("="))
    try:
        data = base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise KeyError_(f"armored key body is not valid base64: {exc}") from exc
    if checksum:
        try:
            wanted = int.from_bytes(base64.b64decode(checksum[-1][1:], validate=True), "big")
        except binascii.Error as exc:
            raise KeyError_(f"the armor checksum line {checksum[-1]!r} is not base64") from exc
        if wanted != _crc24(data):
            raise KeyError_("the armor checksum does not match the key data; the key file is damaged or altered")
    return data


def dearmor(text: str) -> bytes:
    """Binary packets of every armoured public key block in text, concatenated (checksums checked)."""
    return b"".join(_decode(body) for body in _blocks(text))


def armor(data: bytes) -> str:
    """One ASCII-armoured public key block (64-column base64, CRC-24 line); the same bytes for the same data."""
    encoded = base64.b64encode(data).decode()
    lines = [encoded[i:i + 64] for i in range(0, len(encoded), 64)]
    crc = base64.b64encode(_crc24(data).to_bytes(3, "big")).decode()
    return "\n".join([BEGIN, "", *lines, f"={crc}", END]) + "\n"


def _packets(data: bytes) -> list[tuple[int, int, int]]:
    """(tag, start of the packet header, start of the next packet) for every packet."""
    packets, pos = [], 0
    while pos < len(data):
        start, head = pos, data[pos]
        if not head & 0x80:
            raise KeyError_(f"byte {pos} is not an OpenPGP packet header")
        try:
            if head & 0x40:  # new format
                tag, pos = head & 0x3F, pos + 1
                first = data[pos]
                if first < 192:
                    length, pos = first, pos + 1
                elif first < 224:
                    length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
                elif first == 255:
                    length, pos = int.from_bytes(data[pos + 1:pos + 5], "big"), pos + 5
                else:
                    raise KeyError_("partial body lengths are not valid in a public key block")
            else:            # old format
                tag, kind, pos = (head >> 2) & 0x0F, head & 0x03, pos + 1
                if kind == 3:
                    raise KeyError_("indeterminate-length packets are not valid in a public key block")
                size = (1, 2, 4)[kind]
                length, pos = int.from_bytes(data[pos:pos + size], "big"), pos + size
        except IndexError as exc:
            raise KeyError_("truncated OpenPGP packet header") from exc
        if pos + length > len(data):
            raise KeyError_("truncated OpenPGP packet")
        packets.append((tag, start, pos + length))
        pos += length
    return packets


def _fingerprint(body: bytes) -> str:
    version = body[0] if body else 0
    if version == 4:
        digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False)
    elif version == 6:
        digest = hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body)
    else:
        raise KeyError_(f"OpenPGP key version {version} is not supported (4 and 6 are)")
    return digest.hexdigest().upper()


def _body(data: bytes, start: int, end: int) -> bytes:
    """The packet body of the packet data[start:end] (its header skipped)."""
    head = data[start]
    if head & 0x40:
        first = data[start + 1]
        return data[start + (2 if first < 192 else 3 if first < 224 else 6):end]
    return data[start + 1 + (1, 2, 4)[head & 0x03]:end]


def keys(material: str | bytes) -> list[PublicKey]:
    """Every primary public key in an armored text (all blocks) or binary keyring, in file order."""
    data = dearmor(material) if isinstance(material, str) else material
    found: list[PublicKey] = []
    start: int | None = None
    fingerprint = ""
    for tag, begin, end in _packets(data):
        if tag in SECRET_KEY_TAGS:
            raise KeyError_("the key material holds secret key packets; refusing to handle it as a public key")
        if tag not in KEY_PACKET_TAGS:
            raise KeyError_(f"unexpected OpenPGP packet (tag {tag}) in a public key block")
        if tag == PUBLIC_KEY_TAG:
            if start is not None:
                found.append(PublicKey(fingerprint=fingerprint, packets=data[start:begin]))
            start, fingerprint = begin, _fingerprint(_body(data, begin, end))
        elif start is None:
            raise KeyError_(f"an OpenPGP packet (tag {tag}) comes before the first public key")
    if start is None:
        raise KeyError_("no public key packet found in the key block")
    found.append(PublicKey(fingerprint=fingerprint, packets=data[start:]))
    return found


def fingerprints(material: str | bytes) -> list[str]:
    """Upper-case hex fingerprints of every primary key in an armored text (all blocks) or binary keyring."""
    return [key.fingerprint for key in keys(material)]


def normalize(fingerprint: str) -> str:
    """'CA8B B472 ...' or 'ca8bb472...' -> 'CA8BB472...'."""
    return "".join(fingerprint.split()).upper()


def trusted_keys(material: str | bytes, pinned: Iterable[str]) -> str:
    """The keys of `material`, re-armoured one block per key, when every one of them is pinned.

    Raises KeyError_ naming each key that is not pinned: a file that carries the pinned key next to
    another one is refused whole, because apt and dnf would trust the other key too.
    """
    pins = [normalize(p) for p in pinned]
    if not pins:
        raise KeyError_("no pinned fingerprint was given, so no key can be trusted")
    found = keys(material)
    stray = [key.fingerprint for key in found if key.fingerprint not in pins]
    if stray:
        held = f"the key file holds {len(found)} keys ({', '.join(k.fingerprint for k in found)}); " \
            if len(found) > 1 else ""
        raise KeyError_(f"{held}{', '.join(stray)} {'is' if len(stray) == 1 else 'are'} not in the pinned list "
                        f"{', '.join(pins)}")
    return "".join(armor(key.packets) for key in found)
