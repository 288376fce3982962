"""rocm_fleet.fleet.fetch_files refuses a file over its size cap on the node, before any byte of it is transferred
(issue 39 item 12): the results fetch (roles/validation_node/tasks/results.yml) and the support bundle fetch
pull from nodes, and a runaway file must not fill the controller's disk or hold its link.

Run by Ansible on this machine through a connection that is the local one but records every file transfer it
is asked for (the tests run as root, so the local connection could read anything)."""

from __future__ import annotations

import os
from pathlib import Path

from ansible_run import adhoc

# The local connection, recording each fetch_file call in $RF_FETCH_LOG before doing it.
RECORDING = """
import os

from ansible.plugins.connection.local import Connection as Local


class Connection(Local):
    transport = "recording"

    def fetch_file(self, in_path, out_path):
        with open(os.environ["RF_FETCH_LOG"], "a") as log:
            log.write(in_path + "\\n")
        return super().fetch_file(in_path, out_path)
"""


def recording(tmp_path: Path) -> tuple[dict[str, str], Path]:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "recording.py").write_text(RECORDING)
    log = tmp_path / "transfers.log"
    return {"ANSIBLE_CONNECTION_PLUGINS": str(tmp_path / "plugins"), "RF_FETCH_LOG": str(log)}, log


def test_a_file_over_the_cap_is_refused_on_the_node_naming_file_and_size_before_any_transfer(tmp_path: Path) -> None:
    env, log = recording(tmp_path)
    (tmp_path / "doc.json").write_text("{}\n")
    (tmp_path / "bundle.tar.gz").write_bytes(b"\0" * 3000)
    files = [{"src": str(tmp_path / "doc.json"), "dest": str(tmp_path / "out" / "n1.json")},
             {"src": str(tmp_path / "bundle.tar.gz"), "dest": str(tmp_path / "out" / "n1.tar.gz")}]
    failed = adhoc("fetch_files", {"files": files, "max_bytes": 2048}, connection="recording", env=env, ok=False)
    assert failed["msg"] == (f"refused before transfer: {tmp_path / 'bundle.tar.gz'} is 3000 bytes on the node, more "
                             "than max_bytes 2048; raise max_bytes for this task to fetch it"), failed
    assert not log.exists(), f"transferred before the refusal: {log.read_text()}"
    assert not (tmp_path / "out").exists()


def test_a_file_within_the_cap_comes_and_the_default_cap_is_256_mib(tmp_path: Path) -> None:
    env, log = recording(tmp_path)
    (tmp_path / "doc.json").write_bytes(b"x" * 2048)
    got = adhoc("fetch_files", {"files": [{"src": str(tmp_path / "doc.json"), "dest": str(tmp_path / "out" / "a")}],
                                "max_bytes": 2048}, connection="recording", env=env)
    assert got["changed"] and (tmp_path / "out" / "a").read_bytes() == b"x" * 2048
    assert log.read_text() == f"{tmp_path / 'doc.json'}\n"
    big = tmp_path / "big"
    with big.open("wb") as sparse:                       # 256 MiB + 1 without writing it: a sparse file
        sparse.truncate(256 * 1024 * 1024 + 1)
    failed = adhoc("fetch_files", {"files": [{"src": str(big), "dest": str(tmp_path / "out" / "b")}]},
                   connection="recording", env=env, ok=False)
    assert failed["msg"].startswith(f"refused before transfer: {big} is 268435457 bytes on the node, more than "
                                    "max_bytes 268435456"), failed
    assert log.read_text() == f"{tmp_path / 'doc.json'}\n"


def test_a_source_that_is_not_a_regular_file_is_refused_before_transfer(tmp_path: Path) -> None:
    env, log = recording(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)                                      # a transfer would block on it for ever
    failed = adhoc("fetch_files", {"files": [{"src": str(fifo), "dest": str(tmp_path / "out" / "p")}]},
                   connection="recording", env=env, ok=False)
    assert failed["msg"] == f"refused before transfer: {fifo} is not a regular file on the node (fifo)", failed
    assert not log.exists()
