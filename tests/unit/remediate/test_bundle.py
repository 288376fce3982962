"""The support bundle (validation/bundle.py, `rocm-fleet support-bundle`): one 0600 archive whose manifest
matches its files, bounded commands, absent tools said, links never followed, hostile names refused."""

from __future__ import annotations

import hashlib
import json
import stat
import sys
import tarfile
from pathlib import Path

import pytest

from validation import bundle
from validation.cli import main
from validation.errors import RocmFleetError


def unpack(archive: Path) -> tuple[dict, dict[str, bytes]]:
    with tarfile.open(archive) as tar:
        read = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    return json.loads(read["manifest.json"]), read


def test_the_archive_is_0600_and_its_manifest_names_each_file_with_command_rc_and_sha256(tmp_path: Path) -> None:
    source = tmp_path / "state.json"
    source.write_text('{"attempts": []}\n')
    archive = bundle.build(tmp_path / "out", "gpu-node-07", [
        bundle.Command(name="versions/python.txt", argv=(sys.executable, "-c", "print('hello')")),
        bundle.Command(name="amd-smi/static.json", argv=("amd-smi-not-here", "static", "--json")),
        bundle.Copy(name="remediation/record.json", path=source)])
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600 and archive.name.startswith("rocm-fleet-bundle-gpu-node-07-")
    manifest, read = unpack(archive)
    files = {f["name"]: f for f in manifest["files"]}
    assert read["versions/python.txt"] == b"hello\n"
    assert files["versions/python.txt"]["rc"] == 0
    assert files["versions/python.txt"]["sha256"] == hashlib.sha256(b"hello\n").hexdigest()
    assert files["versions/python.txt"]["size"] == 6 and files["versions/python.txt"]["command"][1] == "-c"
    assert files["amd-smi/static.json"]["status"] == "absent"
    assert files["amd-smi/static.json"]["reason"] == "amd-smi-not-here is not installed (not on PATH)"
    assert "amd-smi/static.json" not in read
    assert read["remediation/record.json"] == b'{"attempts": []}\n'
    assert files["remediation/record.json"]["source"] == str(source)
    assert not [p for p in (tmp_path / "out").iterdir() if p != archive], "the staging directory was left behind"


def test_a_command_that_hangs_is_stopped_and_its_output_so_far_kept(tmp_path: Path) -> None:
    slow = (sys.executable, "-c", "import sys, time; print('partial', flush=True); time.sleep(30)")
    archive = bundle.build(tmp_path, "n1", [bundle.Command(name="kernel/dmesg.txt", argv=slow, timeout_s=1)])
    manifest, read = unpack(archive)
    entry = manifest["files"][0]
    assert entry["status"] == "timeout" and entry["rc"] is None and "stopped after 1 s" in entry["reason"]
    assert read["kernel/dmesg.txt"] == b"partial\n"


def test_links_are_never_followed_out_of_a_directory_and_odd_names_are_skipped(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root's key")
    results = tmp_path / "results"
    results.mkdir()
    (results / "n1.json").write_text("{}")
    (results / "stolen.json").symlink_to(secret)
    (results / "bad\nname.json").write_text("{}")
    (tmp_path / "linked-dir").symlink_to(results)
    archive = bundle.build(tmp_path / "out", "n1", [bundle.Copy(name="results/run", path=results, pattern="*.json"),
                                                    bundle.Copy(name="results/linked", path=tmp_path / "linked-dir"),
                                                    bundle.Copy(name="remediation/x", path=results / "stolen.json")])
    manifest, read = unpack(archive)
    assert set(read) == {"manifest.json", "results/run/n1.json"}
    assert b"root's key" not in b"".join(read.values())
    statuses = {(f["name"], f["status"]) for f in manifest["files"]}
    assert ("results/run/stolen.json", "skipped") in statuses and ("remediation/x", "skipped") in statuses
    assert ("results/run/(unsafe name)", "skipped") in statuses and ("results/linked", "skipped") in statuses


@pytest.mark.parametrize("name", ["../etc/passwd", "/abs", "a/../../b", ".hidden", "-rf", "a\nb"])
def test_an_entry_name_that_could_leave_the_bundle_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(RocmFleetError, match="not a safe name in a bundle"):
        bundle.build(tmp_path, "n1", [bundle.Command(name=name, argv=("true",))])


@pytest.mark.parametrize("node", ["../n1", "-n1", "n 1", ""])
def test_a_hostile_node_name_is_refused_before_anything_is_written(node: str, tmp_path: Path) -> None:
    with pytest.raises(RocmFleetError, match="node"):
        bundle.build(tmp_path / "out", node, [])
    assert not (tmp_path / "out").exists()


def test_the_command_collects_the_node_views_and_says_which_tools_are_absent(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "health"
    (state / "last").mkdir(parents=True)
    (state / "n1.json").write_text('{"counters": {}}')
    (state / "last" / "n1.json").write_text('{"checks": [{"status": "fail", "code": "RF-GPU-BUSY"}]}')
    code = main(["support-bundle", "--out", str(tmp_path / "out"), "--node-name", "n1", "--state-dir", str(state),
                 "--record", str(tmp_path / "none.json"), "--timeout", "20", "--reason", "held", "--json"])
    assert code == 0
    manifest, read = unpack(Path(json.loads(capsys.readouterr().out)["archive"]))
    files = {f["name"]: f for f in manifest["files"]}
    assert manifest["summary"]["reason"] == "held"
    assert read["health/last/n1.json"].startswith(b'{"checks"') and "health/state/n1.json" in read
    assert files["versions/uname.txt"]["status"] == "ok" and read["versions/uname.txt"].startswith(b"Linux")
    assert files["remediation/record.json"]["status"] == "absent"
    for name in ("amd-smi/static.json", "amd-smi/metric.json", "amd-smi/bad-pages.json", "amd-smi/ras-cper.txt"):
        assert files[name]["command"][0] == "amd-smi"
        assert files[name]["status"] == "ok" or files[name]["reason"] == "amd-smi is not installed (not on PATH)"
