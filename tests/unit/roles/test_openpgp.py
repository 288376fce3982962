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


# ---------------------------------------------------------------- every key in the material (issue 16)
def _gpg(home: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["gpg", "--batch", "--homedir", str(home), *args], capture_output=True, text=text,
                          timeout=120, check=True)


@pytest.fixture(scope="module")
def two_keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two ed25519 keys made by gpg: their fingerprints and armoured exports ('pinned', 'other')."""
    if not shutil.which("gpg"):
        pytest.skip("gpg generates the test keys")
    out = {}
    for name in ("pinned", "other"):
        home = tmp_path_factory.mktemp(f"gnupg-{name}")
        home.chmod(0o700)
        _gpg(home, "--passphrase", "", "--quick-gen-key", f"rocm-fleet {name} <{name}@invalid>", "ed25519",
             "sign", "never")
        out[name] = _gpg(home, "--armor", "--export").stdout
        colons = _gpg(home, "--with-colons", "--fingerprint").stdout
        out[f"{name}_fpr"] = next(ln.split(":")[9] for ln in colons.splitlines() if ln.startswith("fpr:"))
    return out


def test_every_armoured_block_is_read_not_only_the_first(two_keys: dict[str, str]) -> None:
    """A key file holding the pinned key followed by a second armoured block (the pin bypass)."""
    material = two_keys["pinned"] + two_keys["other"]
    assert openpgp.fingerprints(material) == [two_keys["pinned_fpr"], two_keys["other_fpr"]]


def test_a_second_key_that_is_not_pinned_is_refused_by_name(two_keys: dict[str, str]) -> None:
    material = two_keys["pinned"] + "\nsome text between blocks\n" + two_keys["other"]
    with pytest.raises(openpgp.KeyError_) as caught:
        openpgp.trusted_keys(material, [two_keys["pinned_fpr"]])
    assert f"{two_keys['other_fpr']} is not in the pinned list {two_keys['pinned_fpr']}" in str(caught.value)
    assert "holds 2 keys" in str(caught.value)


def test_only_the_verified_key_is_written_rearmoured(two_keys: dict[str, str], tmp_path: Path) -> None:
    noisy = "Comment line a publisher might add\n" + two_keys["pinned"] + "\ntrailing words\n"
    written = openpgp.trusted_keys(noisy, [two_keys["pinned_fpr"].lower()])
    assert written.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n")
    assert written.endswith("-----END PGP PUBLIC KEY BLOCK-----\n")
    assert "Comment line" not in written and "trailing words" not in written
    assert written == openpgp.trusted_keys(written, [two_keys["pinned_fpr"]])   # stable: a re-run changes nothing
    (tmp_path / "k.asc").write_text(written)
    shown = subprocess.run(["gpg", "--show-keys", "--with-colons", str(tmp_path / "k.asc")],
                           capture_output=True, text=True, timeout=60, check=True).stdout
    primaries = [ln for ln in shown.splitlines() if ln.startswith("pub:")]
    assert len(primaries) == 1                                     # gpg finds one key in what is written
    assert next(ln.split(":")[9] for ln in shown.splitlines() if ln.startswith("fpr:")) == two_keys["pinned_fpr"]


def test_several_keys_pass_only_when_each_is_pinned(two_keys: dict[str, str]) -> None:
    material = two_keys["pinned"] + two_keys["other"]
    written = openpgp.trusted_keys(material, [two_keys["other_fpr"], two_keys["pinned_fpr"]])
    assert openpgp.fingerprints(written) == [two_keys["pinned_fpr"], two_keys["other_fpr"]]
    assert written.count("-----BEGIN PGP PUBLIC KEY BLOCK-----") == 2     # one block per key (rpm reads one)


def test_two_keys_inside_one_armoured_block_are_both_checked(two_keys: dict[str, str]) -> None:
    both = openpgp.dearmor(two_keys["pinned"]) + openpgp.dearmor(two_keys["other"])
    with pytest.raises(openpgp.KeyError_, match=f"{two_keys['other_fpr']} is not in the pinned list"):
        openpgp.trusted_keys(openpgp.armor(both), [two_keys["pinned_fpr"]])


def test_a_damaged_armour_checksum_is_refused(two_keys: dict[str, str]) -> None:
    lines = two_keys["pinned"].splitlines()
    crc = next(i for i, ln in enumerate(lines) if ln.startswith("=") and len(ln) == 5)
    lines[crc] = "=AAAA" if lines[crc] != "=AAAA" else "=AAAB"
    with pytest.raises(openpgp.KeyError_, match="checksum"):
        openpgp.fingerprints("\n".join(lines) + "\n")


def test_a_private_key_block_is_refused(two_keys: dict[str, str]) -> None:
    text = two_keys["pinned"] + two_keys["other"].replace("PUBLIC KEY BLOCK", "PRIVATE KEY BLOCK")
    with pytest.raises(openpgp.KeyError_, match="PGP PRIVATE KEY BLOCK"):
        openpgp.trusted_keys(text, [two_keys["pinned_fpr"], two_keys["other_fpr"]])


def test_an_empty_pin_list_trusts_nothing(two_keys: dict[str, str]) -> None:
    with pytest.raises(openpgp.KeyError_, match="no pinned fingerprint"):
        openpgp.trusted_keys(two_keys["pinned"], [])
