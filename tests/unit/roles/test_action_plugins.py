"""The collection's action plugins, run by Ansible on this machine as the playbooks run them:
wheelhouse and fleet_report do their work inside Ansible's process; fetch_files reads on the node
with one run of read_paths and writes on the controller. (The lab runs all three through
playbooks/validate.yml: tests/integration/test_fleet.py.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ansible_run import adhoc

from validation import wheelhouse

ROOT = Path(__file__).resolve().parents[3]


def small_project(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "validation").mkdir(parents=True)
    (root / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (root / "README.md").write_text("readme\n")
    (root / "validation" / "__init__.py").write_text("")
    return root


def test_wheelhouse_builds_once_and_then_finds_it(tmp_path: Path) -> None:
    root, houses = small_project(tmp_path), tmp_path / "houses"
    first = adhoc("wheelhouse", {"root": str(root), "dir": str(houses)})
    assert (first["changed"], first["built"]) == (True, True), first
    path = Path(first["path"])
    assert wheelhouse.complete(path) and first["digest"] == path.name == (path / "DIGEST").read_text().strip()
    again = adhoc("wheelhouse", {"root": str(root), "dir": str(houses)})
    assert (again["changed"], again["built"], again["path"]) == (False, False, first["path"])


def test_wheelhouse_says_what_pip_said_in_its_message_when_the_build_fails(tmp_path: Path) -> None:
    root = small_project(tmp_path)
    (root / "pyproject.toml").write_text("[project\nbroken")
    failed = adhoc("wheelhouse", {"root": str(root), "dir": str(tmp_path / "houses")}, ok=False)
    said = f"wheelhouse: pip wheel failed (exit {failed['msg'].split('(exit ', 1)[1][0]}) building {root} and "
    assert failed["msg"].startswith(said) and "\n" not in failed["msg"], failed["msg"]
    assert "Expected ']' at the end of a table declaration" in failed["msg"], failed["msg"]     # pip's last words


def node(host: str, status: str = "pass") -> dict:
    return {"schema_version": 1, "host": host, "complete": True, "tier": "smoke", "provenance": {},
            "checks": [{"id": "c", "name": "test_c", "status": status, "code": "RF-BELOW-TARGET" if status == "fail"
                        else None, "message": "m", "hint": "h"}], "measurements": []}


def test_fleet_report_passes_a_passing_fleet_and_names_the_nodes_that_failed_or_delivered_nothing(
        tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for doc in (node("n1"), node("n2")):
        (run / f"{doc['host']}.json").write_text(json.dumps(doc))
    passed = adhoc("fleet_report", {"results": str(run), "expect": ["n1", "n2"]})
    assert (passed["rc"], passed["changed"]) == (0, False) and "fleet report:" in passed["stdout"], passed
    assert {"fleet.md", "fleet.html", "fleet-junit.xml", "fleet.prom"} <= {p.name for p in run.iterdir()}
    (run / "n2.json").write_text(json.dumps(node("n2", "fail")))
    failed = adhoc("fleet_report", {"results": str(run), "expect": ["n1", "n2", "n3", "n4"], "unreachable": ["n4"],
                                    "reasons": {"n3": "Install the suite:\n  pip exited 1 = no wheel", "n1": ""}},
                   ok=False)
    assert failed["rc"] == 1 and failed["msg"] == f"the fleet has failures (exit 1): {run}", failed
    md = (run / "fleet.md").read_text()
    assert "RF-NODE-NO-RESULTS" in md and "| n4 | results_delivered | RF-NODE-UNREACHABLE |" in md, md
    assert "delivered no results document: Install the suite: pip exited 1 = no wheel" in md, md
    assert any(line.split()[:2] == ["n2", "FAIL"] for line in failed["stdout_lines"]), failed["stdout"]


def test_fleet_report_of_a_run_where_no_node_delivered_anything_names_every_node(tmp_path: Path) -> None:
    run = tmp_path / "results" / "run-1"          # no node got as far as writing here
    failed = adhoc("fleet_report", {"results": str(run), "expect": ["n1", "n2"],
                                    "reasons": {"n1": "Install the suite: no space left on device"}}, ok=False)
    assert failed["rc"] == 1, failed
    md = (run / "fleet.md").read_text()
    assert "| n1 | results_delivered | RF-NODE-NO-RESULTS |" in md and "no space left on device" in md, md
    assert "| n2 | results_delivered | RF-NODE-NO-RESULTS |" in md, md


def test_fleet_report_says_in_one_line_why_there_is_no_verdict(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    failed = adhoc("fleet_report", {"results": str(tmp_path / "empty")}, ok=False)
    assert failed["rc"] == 2 and failed["msg"].startswith("rocm-fleet: error: no per-node results in"), failed


def test_fetch_files_copies_every_file_byte_for_byte_through_the_connection(tmp_path: Path) -> None:
    node_dir, out = tmp_path / "node", tmp_path / "controller"
    node_dir.mkdir()
    data = bytes(range(256)) * 3                       # not text: the copy is the bytes, not a decoding of them
    (node_dir / "doc.json").write_bytes(data)
    (node_dir / "junit.xml").write_text("<testsuites/>\n")
    got = adhoc("fetch_files", {"files": [
        {"src": str(node_dir / "doc.json"), "dest": str(out / "run" / "n1.json")},
        {"src": str(node_dir / "junit.xml"), "dest": str(out / "run" / "junit-n1.xml")}]})
    assert got["changed"] and not got["module_run"], got
    assert got["dest"] == [str(out / "run" / "n1.json"), str(out / "run" / "junit-n1.xml")]
    assert (out / "run" / "n1.json").read_bytes() == data
    assert (out / "run" / "junit-n1.xml").read_text() == "<testsuites/>\n"
    assert oct((out / "run" / "n1.json").stat().st_mode & 0o777) == "0o644"
    assert sorted(p.name for p in (out / "run").iterdir()) == ["junit-n1.xml", "n1.json"]      # no temporary left


def test_fetch_files_writes_nothing_when_a_source_is_missing_and_is_skipped_in_check_mode(tmp_path: Path) -> None:
    (tmp_path / "there").write_text("x")
    files = [{"src": str(tmp_path / "there"), "dest": str(tmp_path / "out" / "a")},
             {"src": str(tmp_path / "gone"), "dest": str(tmp_path / "out" / "b")}]
    failed = adhoc("fetch_files", {"files": files}, ok=False)
    assert failed["msg"] == f"could not fetch {tmp_path / 'gone'}: does not exist", failed
    assert not (tmp_path / "out").exists()
    relative = adhoc("fetch_files", {"files": [{"src": "there", "dest": str(tmp_path / "out" / "a")}]}, ok=False)
    assert relative["msg"] == "src must be absolute on the node: there", relative
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a").write_text("before\n")
    (tmp_path / "out" / "taken").write_text("a file where a directory would go\n")
    (tmp_path / "gone").write_text("y")
    blocked = [files[0], {"src": str(tmp_path / "gone"), "dest": str(tmp_path / "out" / "taken" / "b")}]
    adhoc("fetch_files", {"files": blocked}, ok=False)
    assert (tmp_path / "out" / "a").read_text() == "before\n"            # all or nothing
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a", "taken"]
    (tmp_path / "gone").unlink()
    shutil.rmtree(tmp_path / "out")
    skipped = adhoc("fetch_files", {"files": files[:1]}, check=True)
    assert skipped.get("skipped") and not (tmp_path / "out").exists(), skipped


# A connection whose own file transfer fails, as it does for a login user who may not read the file (the
# tests run as root, who may read anything): everything else is the local connection's.
NO_TRANSFER = """
from ansible.errors import AnsibleError
from ansible.plugins.connection.local import Connection as Local


class Connection(Local):
    transport = "notransfer"

    def fetch_file(self, in_path, out_path):
        raise AnsibleError(f"failed to transfer file {in_path}: Permission denied")
"""


def test_fetch_files_reads_with_one_module_run_where_the_connection_cannot_transfer(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "notransfer.py").write_text(NO_TRANSFER)
    (tmp_path / "doc.json").write_bytes(b"\xff{}\n")
    (tmp_path / "junit.xml").write_text("<testsuites/>\n")
    files = [{"src": str(tmp_path / "doc.json"), "dest": str(tmp_path / "out" / "n1.json")},
             {"src": str(tmp_path / "junit.xml"), "dest": str(tmp_path / "out" / "junit-n1.xml")}]
    env = {"ANSIBLE_CONNECTION_PLUGINS": str(tmp_path / "plugins")}
    got = adhoc("fetch_files", {"files": files}, connection="notransfer", env=env)
    assert got["changed"] and got["module_run"], got
    assert (tmp_path / "out" / "n1.json").read_bytes() == b"\xff{}\n"
    assert (tmp_path / "out" / "junit-n1.xml").read_text() == "<testsuites/>\n"
    (tmp_path / "junit.xml").unlink()
    failed = adhoc("fetch_files", {"files": files}, connection="notransfer", env=env, ok=False)
    assert failed["msg"] == f"could not fetch {tmp_path / 'junit.xml'}: does not exist", failed
