"""roles/validation_tools on a lab host: tool packages, and the checksum gate of the rccl-tests build.

Run with its own lab so it never meets another lab's hosts:

    ROCM_FLEET_LAB_NAME=rftools ROCM_FLEET_LAB_PORT_BASE=2300 ROCM_FLEET_LAB_HOSTS=1 \\
    ROCM_FLEET_LAB_INVENTORY=$PWD/inventories/lab/rftools.yml \\
    .venv/bin/pytest tests/integration/test_validation_tools.py

GitHub cannot be reached here, so no real rccl-tests archive is built. The archive these tests
serve is a STAND-IN made below: one Makefile whose `all` target writes build/all_reduce_perf, a
script that prints the make variables it was built with. It proves the role's fetch, checksum,
unpack, make and install steps, not that rccl-tests compiles.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import os
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_run import BIN, ROOT, PlaybookRun

from validation.lab.podman import podman

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "validation_tools.yml"
PREFIX = "/opt/rocm-fleet/tools"
CACHE = "/var/cache/rocm-fleet/tools"
ROCBLAS_BENCH = "/usr/libexec/rocm/librocblas0-bench/rocblas-bench"
STAND_IN_MAKEFILE = (
    "# Stand-in for rccl-tests' Makefile (NOT rccl-tests), made by test_validation_tools.py.\n"
    "all:\n"
    "\tmkdir -p build\n"
    "\tprintf '#!/bin/sh\\necho \"stand-in all_reduce_perf MPI=$(MPI) HIP_HOME=$(HIP_HOME)\"\\n'"
    " > build/all_reduce_perf\n"
    "\tchmod 0755 build/all_reduce_perf\n"
)


def run_playbook(inventory: Path, extra: dict) -> PlaybookRun:
    """ansible-playbook on the test playbook (playbooks/ is not ours to edit), as ansible_run does."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK), "-e", json.dumps(extra)]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0"}
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    return PlaybookRun(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


def source(url: str, sha256: str, version: str, *, build: bool = True) -> dict:
    return {"validation_tools_rccl_tests_source": {"url": url, "sha256": sha256, "version": version},
            "validation_tools_rccl_tests_build": build}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The stand-in archive, laid out like GitHub's (one top directory), and its sha256."""
    directory = tmp_path_factory.mktemp("artifacts")
    path = directory / "rccl-tests-standin.tar.gz"
    data = STAND_IN_MAKEFILE.encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("rccl-tests-standin/Makefile")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def mirror_url(archive: tuple[Path, str]) -> Iterator[str]:
    """An HTTP mirror on 127.0.0.1 serving the archive directory (lab hosts share the loopback)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(archive[0].parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{archive[0].name}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def host(lab) -> str:
    return lab.info.hosts[0].name


@pytest.fixture(scope="module")
def converged(lab, archive: tuple[Path, str], mirror_url: str) -> tuple[PlaybookRun, PlaybookRun]:
    extra = source(mirror_url, archive[1], "standin")
    first = run_playbook(lab.info.inventory, extra)
    assert first.rc == 0, first.output[-6000:]
    second = run_playbook(lab.info.inventory, extra)
    print(f"\nvalidation_tools converge: first {first.seconds:.1f} s, second {second.seconds:.1f} s")
    return first, second


def flat(text: str) -> str:
    """Ansible's YAML output wraps long messages; compare with the whitespace folded."""
    return " ".join(text.split())


def sh(lab, host: str, script: str) -> tuple[int, str]:
    result = lab.run(host, ["sh", "-c", script])
    return result.returncode, result.stdout + result.stderr


def test_first_converge_installs_rocblas_bench(lab, host: str, converged) -> None:
    first, _ = converged
    assert first.changed() > 0
    rc, out = sh(lab, host, f"test -x {ROCBLAS_BENCH} && dpkg-query -W -f '${{Version}}' librocblas0-bench")
    assert rc == 0, out
    assert out.startswith("5.5.1"), out


def test_second_converge_changes_nothing(converged) -> None:
    _, second = converged
    assert second.rc == 0, second.output[-4000:]
    assert second.changed() == 0, second.changed_tasks()


def test_checked_archive_is_built_with_mpi_off_into_the_versioned_prefix(lab, host: str, converged,
                                                                         archive: tuple[Path, str]) -> None:
    for binary in (f"{PREFIX}/rccl-tests-standin/bin/all_reduce_perf", f"{PREFIX}/rccl-tests/bin/all_reduce_perf"):
        rc, out = sh(lab, host, binary)
        assert rc == 0, out
        assert out.strip() == "stand-in all_reduce_perf MPI=0 HIP_HOME=/opt/rocm"
    rc, record = sh(lab, host, f"cat {PREFIX}/rccl-tests-standin/rocm-fleet-build.yml")
    assert rc == 0, record
    assert record.startswith("# Managed by rocm-fleet (Ansible).")
    assert f'sha256: "{archive[1]}"' in record
    assert "built: true" in record


def test_wrong_sha256_is_refused_before_anything_is_unpacked(lab, host: str, converged, mirror_url: str,
                                                             archive: tuple[Path, str]) -> None:
    wrong = hashlib.sha256(b"not the archive").hexdigest()
    run = run_playbook(lab.info.inventory, source(mirror_url, wrong, "wrongsum"))
    assert run.rc != 0
    output = flat(run.output)
    assert "Refusing rccl-tests wrongsum" in output, run.output[-4000:]
    assert f"did not match {wrong}" in output      # expected, as get_url reports it
    assert f"it was {archive[1]}" in output         # found
    assert f"Expected sha256 {wrong}" in output
    assert "Nothing was unpacked or built" in output
    rc, out = sh(lab, host, f"test -e {PREFIX}/rccl-tests-wrongsum || echo absent; ls {CACHE}")
    assert rc == 0, out
    assert "absent" in out
    assert "wrongsum" not in out.replace("absent", "")


def test_local_file_archive_with_the_right_checksum_is_accepted(lab, host: str, converged,
                                                                archive: tuple[Path, str]) -> None:
    path, sha256 = archive
    for each in lab.info.hosts:          # the playbook runs on every lab host: each needs its local copy
        podman(["exec", "-i", each.name, "sh", "-c", f"mkdir -p /srv/artifacts && cat > /srv/artifacts/{path.name}"],
               input_bytes=path.read_bytes(), what="copy the archive into the lab host")
    run = run_playbook(lab.info.inventory, source(f"file:///srv/artifacts/{path.name}", sha256, "fromfile",
                                                  build=False))
    assert run.rc == 0, run.output[-6000:]
    rc, out = sh(lab, host, f"cat {PREFIX}/rccl-tests-fromfile/src/Makefile")
    assert rc == 0, out
    assert "Stand-in for rccl-tests' Makefile" in out
    _, out = sh(lab, host, f"ls -A {PREFIX}/rccl-tests-fromfile/bin {PREFIX}/rccl-tests-fromfile/src/build 2>&1")
    assert "all_reduce_perf" not in out  # build off: make never ran, nothing installed
    rc, record = sh(lab, host, f"cat {PREFIX}/rccl-tests-fromfile/rocm-fleet-build.yml")
    assert rc == 0, record
    assert "built: false" in record
    _, link = sh(lab, host, f"readlink {PREFIX}/rccl-tests")
    assert link.strip() == "rccl-tests-standin"  # an unbuilt stage does not replace the build


@pytest.mark.parametrize(("url", "sha256", "named"), [
    ("ftp://mirror.example/rccl-tests.tar.gz", "a" * 64, "url must be https://"),
    ("https://mirror.example/rccl-tests.tar.gz", "abc123", "64 hex digits"),
])
def test_malformed_source_is_refused_by_preflight(lab, host: str, converged, url: str, sha256: str,
                                                  named: str) -> None:
    run = run_playbook(lab.info.inventory, source(url, sha256, "malformed"))
    assert run.rc != 0
    output = flat(run.output)
    assert "validation_tools_rccl_tests_source is" in output, run.output[-4000:]
    assert named in output
    assert run.changed() == 0, run.changed_tasks()
    _, out = sh(lab, host, f"test -e {PREFIX}/rccl-tests-malformed || echo absent")
    assert out.strip() == "absent"
