"""validation/openpgp.py computes key fingerprints the way gpg does, without gpg on the node."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from validation import openpgp

DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


@pytest.mark.skipif(not DEBIAN_KEYRING.exists(), reason="needs Debian's archive keyring (a real binary keyring)")
def test_fingerprints_of_debian_archive_keyring_match_gpg() -> None:
    ours = openpgp.fingerprints(DEBIAN_KEYRING.read_bytes())
    # Debian 12 "bookworm" archive signing key, typed from https://ftp-master.debian.org/keys.html
    assert "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8" in ours
    if shutil.which("gpg"):
        listing = subprocess.run(["gpg", "--show-keys", "--with-colons", str(DEBIAN_KEYRING)],
                                 capture_output=True, text=True, timeout=30, check=True).stdout
        theirs, after_pub = [], False
        for line in listing.splitlines():       # the first fpr after each pub (rvk lines may intervene)
            if line.startswith("pub:"):
                after_pub = True
            elif line.startswith("fpr:") and after_pub:
                theirs.append(line.split(":")[9])
                after_pub = False
        assert sorted(ours) == sorted(theirs)  # gpg lists keys in its own order


@pytest.mark.skipif(not shutil.which("gpg"), reason="gpg generates the armored test key")
def test_armored_key_from_gpg_has_gpgs_fingerprint(tmp_path: Path) -> None:
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    subprocess.run(["gpg", "--batch", "--homedir", str(home), "--passphrase", "", "--quick-gen-key",
                    "rocm-fleet test <test@invalid>", "ed25519", "default", "never"],
                   capture_output=True, timeout=60, check=True)
    armored = subprocess.run(["gpg", "--homedir", str(home), "--armor", "--export"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    colons = subprocess.run(["gpg", "--homedir", str(home), "--with-colons", "--fingerprint"],
                            capture_output=True, text=True, timeout=30, check=True).stdout
    expected = next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))
    assert openpgp.fingerprints(armored) == [expected]


def test_html_error_page_is_not_a_key() -> None:
    with pytest.raises(openpgp.KeyError_, match="no '-----BEGIN PGP PUBLIC KEY BLOCK-----' armor"):
        openpgp.fingerprints("<html><body>404 Not Found</body></html>")


def test_corrupted_armor_is_rejected() -> None:
    text = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF!!!notbase64\n-----END PGP PUBLIC KEY BLOCK-----\n"
    with pytest.raises(openpgp.KeyError_):
        openpgp.fingerprints(text)


def test_normalize_accepts_spaced_lowercase() -> None:
    assert openpgp.normalize("ca8b b472 7a47") == "CA8BB4727A47"
