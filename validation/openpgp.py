"""OpenPGP public key fingerprints, computed without gpg (RFC 4880 section 12.2, RFC 9580 5.5.4).

roles/rocm_repo uses this (through its filter plugin) to compare a downloaded repository key
with the pinned fingerprint before the key is written anywhere. Only primary public keys
(packet tag 6) are fingerprinted; subkeys sign nothing apt or dnf checks against the pin.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from validation.errors import RocmFleetError

PUBLIC_KEY_TAG = 6


class KeyError_(RocmFleetError):
    """The data is not an OpenPGP public key (armored or binary)."""


def dearmor(text: str) -> bytes:
    """Binary packets from an ASCII-armored block (the checksum line is ignored)."""
    lines = text.strip().splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("-----BEGIN PGP PUBLIC KEY BLOCK"))
        end = next(i for i, line in enumerate(lines) if line.startswith("-----END PGP PUBLIC KEY BLOCK"))
    except StopIteration as exc:
        raise KeyError_("no '-----BEGIN PGP PUBLIC KEY BLOCK-----' armor found; "
                        "is the key URL serving an HTML error page?") from exc
    body = lines[start + 1:end]
    while body and ":" in body[0]:       # armor headers such as "Version: GnuPG v1"
        body.pop(0)
    payload = "".join(line.strip() for line in body if line.strip() and not line.startswith("="))
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise KeyError_(f"armored key body is not valid base64: {exc}") from exc


def _packets(data: bytes) -> list[tuple[int, bytes]]:
    packets, pos = [], 0
    while pos < len(data):
        head = data[pos]
        if not head & 0x80:
            raise KeyError_(f"byte {pos} is not an OpenPGP packet header")
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
        if pos + length > len(data):
            raise KeyError_("truncated OpenPGP packet")
        packets.append((tag, data[pos:pos + length]))
        pos += length
    return packets


def fingerprints(key: str | bytes) -> list[str]:
    """Upper-case hex fingerprints of every primary key in an armored or binary key block."""
    data = dearmor(key) if isinstance(key, str) else key
    found = []
    for tag, body in _packets(data):
        if tag != PUBLIC_KEY_TAG:
            continue
        version = body[0] if body else 0
        if version == 4:
            digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False)
        elif version == 6:
            digest = hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body)
        else:
            raise KeyError_(f"OpenPGP key version {version} is not supported (4 and 6 are)")
        found.append(digest.hexdigest().upper())
    if not found:
        raise KeyError_("no public key packet found in the key block")
    return found


def normalize(fingerprint: str) -> str:
    """'CA8B B472 ...' or 'ca8bb472...' -> 'CA8BB472...'."""
    return "".join(fingerprint.split()).upper()
