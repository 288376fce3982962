"""The collection's modules: dpkg_holds (one dpkg call for many holds, only the differing ones changed),
files (many files written and removed in one call) and read_paths
(many files read, globs expanded and paths looked at in one call).

Run through ansible on localhost with a stand-in `dpkg` first on PATH: holding packages of the
machine running the tests is not acceptable. The real dpkg runs in the lab (tests/integration:
test_provision holds ROCm packages and proves the second converge changes nothing).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from ansible_run import adhoc

ROOT = Path(__file__).resolve().parents[3]
# dpkg-query -W -f FORMAT NAMES, as dpkg 1.21 answers it: a line per known package, an error line per
# unknown one and exit 1 then; a deinstalled package keeps its configuration files.
FAKE_DPKG_QUERY = """#!/usr/bin/env python3
import json, sys, pathlib
sel = json.loads(pathlib.Path(__file__).with_name("selections.json").read_text())
missing = 0
for name in sys.argv[4:]:
    if name in sel:
        status = "config-files" if sel[name] == "deinstall" else "installed"
        print(f"{name}\\t{sel[name]} ok {status}\\t1.0-{name}")
    else:
        print(f"dpkg-query: no packages found matching {name}", file=sys.stderr)
        missing = 1
sys.exit(missing)
"""
FAKE_DPKG = """#!/usr/bin/env python3
import json, sys, pathlib
state = pathlib.Path(__file__).with_name("selections.json")
sel = json.loads(state.read_text())
if sys.argv[1] == "--set-selections":
    for line in sys.stdin.read().splitlines():
        name, value = line.split()
        sel[name] = value
    state.write_text(json.dumps(sel))
    with state.with_name("calls.log").open("a") as log:
        log.write("set\\n")
"""


def run_module(tmp_path: Path, args: dict, check: bool = False, module: str = "dpkg_holds",
               ok: bool = True) -> dict:
    return adhoc(module, args, path_first=tmp_path, check=check, ok=ok)


def setup(tmp_path: Path, selections: dict) -> None:
    for name, script in (("dpkg", FAKE_DPKG), ("dpkg-query", FAKE_DPKG_QUERY)):
        (tmp_path / name).write_text(script)
        (tmp_path / name).chmod(0o755)
    (tmp_path / "selections.json").write_text(json.dumps(selections))


def test_holds_only_what_differs_in_one_call_and_then_nothing(tmp_path: Path) -> None:
    setup(tmp_path, {"rocminfo": "install", "rocm-core": "hold", "amd-smi-lib": "install"})
    names = ["rocminfo", "rocm-core", "amd-smi-lib", "not-installed"]
    first = run_module(tmp_path, {"names": names, "selection": "hold"})
    assert (first["changed"], first["changed_packages"], first["unknown"]) == (
        True, ["rocminfo", "amd-smi-lib"], ["not-installed"])
    assert json.loads((tmp_path / "selections.json").read_text()) == {
        "rocminfo": "hold", "rocm-core": "hold", "amd-smi-lib": "hold"}
    assert (tmp_path / "calls.log").read_text() == "set\n"
    assert first["installed"] == {n: f"1.0-{n}" for n in names[:3]}
    second = run_module(tmp_path, {"names": names, "selection": "hold"})
    assert (second["changed"], second["changed_packages"]) == (False, [])


def test_release_touches_held_packages_only_and_check_mode_writes_nothing(tmp_path: Path) -> None:
    setup(tmp_path, {"old-held": "hold", "removed-by-hand": "deinstall", "kept": "install"})
    names = ["old-held", "removed-by-hand", "kept"]
    dry = run_module(tmp_path, {"names": names, "selection": "install"}, check=True)
    assert (dry["changed"], dry["changed_packages"]) == (True, ["old-held"])
    assert json.loads((tmp_path / "selections.json").read_text())["old-held"] == "hold"
    done = run_module(tmp_path, {"names": names, "selection": "install"})
    assert done["changed_packages"] == ["old-held"]
    assert json.loads((tmp_path / "selections.json").read_text()) == {
        "old-held": "install", "removed-by-hand": "deinstall", "kept": "install"}
    assert done["installed"] == {"old-held": "1.0-old-held", "kept": "1.0-kept"}     # not the one removed by hand


def test_files_removes_the_absent_ones_that_exist_with_the_writes_and_refuses_directories(tmp_path: Path) -> None:
    (tmp_path / "a.list").write_text("deb x\n")
    (tmp_path / "b.link").symlink_to(tmp_path / "nowhere")
    (tmp_path / "dir").mkdir()
    paths = [str(tmp_path / n) for n in ("a.list", "b.link", "c.missing")]
    args = {"absent": paths, "files": [{"path": str(tmp_path / "ours.sources"), "content": "Types: deb\n"}]}
    dry = run_module(tmp_path, args, check=True, module="files")
    assert (dry["changed"], dry["removed"], (tmp_path / "a.list").exists()) == (True, paths[:2], True)
    assert not (tmp_path / "ours.sources").exists()
    done = run_module(tmp_path, args, module="files")
    assert done["removed"] == paths[:2] and not os.path.lexists(paths[1]) and not (tmp_path / "a.list").exists()
    assert done["written"] == [str(tmp_path / "ours.sources")]
    again = run_module(tmp_path, args, module="files")
    assert (again["changed"], again["removed"], again["written"]) == (False, [], [])
    only_absent = run_module(tmp_path, {"absent": [str(tmp_path / "ours.sources")]}, module="files")
    assert only_absent["removed"] == [str(tmp_path / "ours.sources")] and not (tmp_path / "ours.sources").exists()
    refused = run_module(tmp_path, {"absent": [str(tmp_path / "dir")]}, module="files", ok=False)
    assert "refusing to remove directories" in refused["msg"] and (tmp_path / "dir").is_dir()
    both = run_module(tmp_path, {"absent": paths[:1], "files": [{"path": paths[0], "content": ""}]}, module="files",
                      ok=False)
    assert f"paths given more than once: {paths[0]}" in both["msg"]


def test_files_writes_only_what_differs_creates_parents_and_then_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "same.conf").write_text("kept\n")
    (tmp_path / "same.conf").chmod(0o644)
    (tmp_path / "old.conf").write_text("old\n")
    (tmp_path / "old.conf").chmod(0o600)
    files = [{"path": str(tmp_path / "same.conf"), "content": "kept\n"},
             {"path": str(tmp_path / "old.conf"), "content": "new\n"},
             {"path": str(tmp_path / "sub/deeper/new.sh"), "content": "x=1\n", "mode": "0755"},
             {"path": str(tmp_path / "sub/deeper/other.sh"), "content": "y=2\n", "mode": "0755"}]
    args = {"files": files, "directories": [str(tmp_path / "keyrings")], "owner": "root", "group": "root"}
    created = [str(tmp_path / p) for p in ("keyrings", "sub", "sub/deeper")]
    dry = run_module(tmp_path, args, check=True, module="files")
    assert (dry["changed"], dry["written"]) == (True, [f["path"] for f in files[1:]])
    assert sorted(dry["created_directories"]) == created                  # each once, though two files share it
    assert (tmp_path / "old.conf").read_text() == "old\n" and not (tmp_path / "sub").exists()
    assert not (tmp_path / "keyrings").exists()
    done = run_module(tmp_path, args, module="files")
    assert done["written"] == [f["path"] for f in files[1:]]
    assert sorted(done["created_directories"]) == created
    assert (tmp_path / "old.conf").read_text() == "new\n"
    assert (tmp_path / "old.conf").stat().st_mode & 0o7777 == 0o644
    assert (tmp_path / "sub/deeper/new.sh").stat().st_mode & 0o7777 == 0o755
    assert (tmp_path / "sub").stat().st_mode & 0o7777 == 0o755 and (tmp_path / "keyrings").is_dir()
    assert not [p.name for p in tmp_path.rglob(".*")]                      # no temporary file left
    again = run_module(tmp_path, args, module="files")
    assert (again["changed"], again["written"], again["created_directories"]) == (False, [], [])


def test_files_changes_a_mode_alone_and_refuses_relative_paths_and_directories(tmp_path: Path) -> None:
    (tmp_path / "a.conf").write_text("a\n")
    (tmp_path / "a.conf").chmod(0o666)
    only_mode = run_module(tmp_path, {"files": [{"path": str(tmp_path / "a.conf"), "content": "a\n"}]},
                           module="files")
    assert only_mode["written"] == [str(tmp_path / "a.conf")]
    assert (tmp_path / "a.conf").stat().st_mode & 0o7777 == 0o644
    relative = run_module(tmp_path, {"files": [{"path": "etc/x", "content": ""}]}, module="files", ok=False)
    assert "paths must be absolute: etc/x" in relative["msg"]
    (tmp_path / "dir").mkdir()
    refused = run_module(tmp_path, {"files": [{"path": str(tmp_path / "dir"), "content": ""}]},
                         module="files", ok=False)
    assert "refusing to replace a directory or a link" in refused["msg"] and (tmp_path / "dir").is_dir()
    symbolic = run_module(tmp_path, {"files": [{"path": str(tmp_path / "b"), "content": "", "mode": "u=rw"}]},
                          module="files", ok=False)
    assert "modes must be octal numbers such as 0644: u=rw" in symbolic["msg"] and not (tmp_path / "b").exists()
    secret = run_module(tmp_path, {"files": [{"path": str(tmp_path / "inventory.yml"), "content": "token: s3cret\n",
                                              "mode": "0600"}]}, module="files")
    assert (tmp_path / "inventory.yml").stat().st_mode & 0o7777 == 0o600 and secret["written"]


def test_read_paths_reads_expands_and_looks_in_one_call_changing_nothing(tmp_path: Path) -> None:
    switches = {0: "1\n", 1: "0\n", 10: "1\n"}
    for cpu, value in switches.items():
        (tmp_path / f"cpu{cpu}").mkdir()
        (tmp_path / f"cpu{cpu}/disable").write_text(value)
    (tmp_path / "record.fact").write_text('{"thp": {}}\n')
    (tmp_path / "big").write_text("x" * 100)
    (tmp_path / "bin").mkdir()
    os.mkfifo(tmp_path / "control")
    args = {"read": [str(tmp_path / p) for p in ("record.fact", "absent.fact", "bin", "big")],
            "globs": [str(tmp_path / "cpu[0-9]*/disable"), str(tmp_path / "nothing*")],
            "stat": [str(tmp_path / p) for p in ("record.fact", "bin", "control", "gone")],
            "max_bytes": 50}
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for check in (True, False):
        got = run_module(tmp_path, args, check=check, module="read_paths")
        assert got["changed"] is False
        assert got["contents"] == {str(tmp_path / "record.fact"): '{"thp": {}}\n',
                                   **{str(tmp_path / f"cpu{c}/disable"): v for c, v in switches.items()}}
        assert got["missing"] == [str(tmp_path / "absent.fact")]
        assert got["unreadable"] == {str(tmp_path / "bin"): "Is a directory",
                                     str(tmp_path / "big"): "larger than max_bytes (50)"}
        assert got["matches"] == {str(tmp_path / "cpu[0-9]*/disable"): [str(tmp_path / f"cpu{c}/disable")
                                                                         for c in (0, 1, 10)],
                                  str(tmp_path / "nothing*"): []}
        assert got["types"] == {str(tmp_path / "record.fact"): "file", str(tmp_path / "bin"): "directory",
                                str(tmp_path / "control"): "other", str(tmp_path / "gone"): "missing"}
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    relative = run_module(tmp_path, {"globs": ["cpu*/disable"]}, module="read_paths", ok=False)
    assert "paths and patterns must be absolute: cpu*/disable" in relative["msg"]


def test_every_module_documents_each_of_its_options_in_text_ansible_doc_reads() -> None:
    """ansible-doc parses the DOCUMENTATION YAML; a ': ' inside a sentence there makes a mapping of
    it (files.py had one), and `ansible-doc rocm_fleet.fleet.files` then failed."""
    names = sorted(p.stem for p in (ROOT / "plugins/modules").glob("*.py"))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "--json", "-t", "module",
                           *(f"rocm_fleet.fleet.{name}" for name in names)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    docs = json.loads(proc.stdout)
    assert sorted(docs) == [f"rocm_fleet.fleet.{name}" for name in names]
    for name, doc in docs.items():
        texts = [doc["doc"]["description"], *(o["description"] for o in doc["doc"]["options"].values()),
                 *(r["description"] for r in (doc["return"] or {}).values())]
        for text in texts:
            assert all(isinstance(line, str) for line in (text if isinstance(text, list) else [text])), (name, text)


def test_a_roles_declared_files_split_into_what_files_writes_and_what_it_removes() -> None:
    """rocm_fleet.fleet.files_declared: true writes the file, false removes it, none leaves it alone (node_tuning's
    GRUB drop-in where grubby sets the command line; rocm's unattended-upgrades file on EL)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rocm_fleet_filters", ROOT / "plugins" / "filter" / "rocm_fleet.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    split = module.FilterModule().filters()["files_declared"]
    files = {name: {"path": f"/etc/{name}", "content": f"{name}\n"} for name in ("record", "thp", "sysctl", "dropin")}
    assert split(files, {"record": True, "thp": False, "sysctl": True, "dropin": None}) == {
        "files": [files["record"], files["sysctl"]], "absent": ["/etc/thp"]}
    # only True and False count: a string is neither (the roles pass booleans, `| bool` where a variable is read)
    assert split(files, {"record": "True", "thp": "False"}) == {"files": [], "absent": []}


def test_read_paths_returns_the_bytes_in_base64_when_asked(tmp_path: Path) -> None:
    (tmp_path / "raw").write_bytes(b"\xff\xfe\x00ok\n")
    text = run_module(tmp_path, {"read": [str(tmp_path / "raw")]}, module="read_paths")
    exact = run_module(tmp_path, {"read": [str(tmp_path / "raw")], "base64": True}, module="read_paths")
    assert text["contents"][str(tmp_path / "raw")] == "\ufffd\ufffd\x00ok\n"          # decoded, bytes replaced
    assert base64.b64decode(exact["contents"][str(tmp_path / "raw")]) == b"\xff\xfe\x00ok\n"
