"""roles rocm_repo + amdgpu_driver + rocm on real lab hosts, through the mirror source.

The mirror is served on 127.0.0.1, signed with a key generated for this lab, and holds real
Debian ROCm packages; the lab's declared state is inventories/lab/group_vars/lab.yml.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_run import ROOT, PlaybookRun, converge_in_slices, playbook

from validation import openpgp
from validation.report import load_run

GROUP_VARS = yaml.safe_load((ROOT / "inventories" / "lab" / "group_vars" / "lab.yml").read_text())


@pytest.fixture(scope="module")
def converged(lab, tmp_path_factory: pytest.TempPathFactory) -> tuple[PlaybookRun, PlaybookRun]:
    first = playbook(lab.info.inventory, "site.yml")
    assert first.rc == 0, first.output[-6000:]
    # the re-converge an operator runs over a large fleet: site.yml in slices, side by side (issue 20)
    second = converge_in_slices(lab.info.inventory, tmp_path_factory.mktemp("converge"), shards=len(lab.info.hosts))
    print(f"\nfirst converge {first.seconds:.1f} s, second {second.seconds:.1f} s, "
          f"{len(lab.info.hosts)} hosts", file=sys.stderr)
    return first, second


def host_names(lab) -> list[str]:
    return [h.name for h in lab.info.hosts]


def etc_snapshot(lab, host: str) -> str:
    """Every path under /etc with type, mode, owner and, for files, the content hash."""
    script = ("find /etc -xdev -printf '%p %y %m %U %G\\n' | sort; "
              "find /etc -xdev -type f -print0 | sort -z | xargs -0 sha256sum")
    result = lab.run(host, ["sh", "-c", script], timeout_s=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_first_converge_changes_every_host(lab, converged) -> None:
    first, _ = converged
    recap = first.recap()
    assert set(recap) == set(host_names(lab))
    assert all(r["changed"] > 0 and r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values()), recap


def test_second_converge_in_slices_reports_no_change(lab, converged) -> None:
    _, second = converged
    assert second.rc == 0, second.output[-4000:]
    assert second.changed() == 0, second.changed_tasks()
    assert set(second.recap()) == set(host_names(lab))
    assert all(f"slice {i + 1}: 1 hosts, exit 0 (ok)" in second.output for i in range(len(host_names(lab))))


def test_a_repeat_converge_skips_the_module_runs_that_would_change_nothing(lab, converged) -> None:
    """apt's no-op opens its cache (0.9 s a host), the idle unit's systemd call 0.65 s, each file written
    through its own task 0.25 s: a repeat converge makes none of them (issue 20)."""
    run = playbook(lab.info.inventory, "site.yml", "--limit", host_names(lab)[0])
    assert run.rc == 0 and run.changed() == 0, run.changed_tasks() or run.output[-4000:]
    ran = run.tasks_run()
    assert not ran & {"rocm : Install ROCm packages at the declared versions",
                      "rocm : Hold ROCm packages so that no upgrade moves them",
                      "node_tuning : Enable the CPU idle unit and run it now"}, ran
    # node_tuning reads the host once, in preflight.yml, and uses that reading (it is seconds old)
    assert run.output.count("TASK [node_tuning : Read the record, the THP modes and sysctls") == 1, run.output[-4000:]
    written = sorted(t for t in ran if t.split(" : ")[-1].startswith("Write "))     # one files call per role
    assert [t.split(" : ")[0] for t in written] == ["env_profiles", "gpu_access", "node_tuning", "rocm", "rocm_repo"], (
        written)


def test_check_mode_on_a_converged_host_reports_no_change(lab, converged) -> None:
    run = playbook(lab.info.inventory, "site.yml", "--check", "--diff")
    assert run.rc == 0, run.output[-4000:]
    assert run.changed() == 0, run.changed_tasks()


@pytest.mark.parametrize("index", [0, 1])
def test_packages_are_at_the_declared_versions_and_held(lab, converged, index: int) -> None:
    host = host_names(lab)[min(index, len(lab.info.hosts) - 1)]
    listing = lab.run(host, ["dpkg-query", "-W", "-f", "${Package} ${Version}\\n",
                             "rocminfo", "rocm-smi", "hipcc", "libamdhip64-5"]).stdout
    versions = dict(line.split(" ", 1) for line in listing.splitlines())
    assert versions["rocminfo"].startswith("6.1.2")
    assert versions["rocm-smi"].startswith("6.1.2")
    assert versions["hipcc"].startswith("5.7.1")
    assert versions["libamdhip64-5"].startswith("5.7.1")
    held = set(lab.run(host, ["apt-mark", "showhold"]).stdout.split())
    assert held >= {"rocminfo", "rocm-smi", "hipcc", "libamdhip64-5"}


def test_packages_came_from_the_mirror(lab, converged) -> None:
    host = host_names(lab)[0]
    policy = lab.run(host, ["apt-cache", "policy", "rocminfo"]).stdout
    mirror = lab.info.mirror.url
    assert f"600 {mirror}/rocm/apt/6.1.2 trixie/main" in policy, policy


def test_sources_pin_and_keyring_are_exactly_as_designed(lab, converged) -> None:
    host = host_names(lab)[0]
    mirror = lab.info.mirror.url
    sources = lab.run(host, ["cat", "/etc/apt/sources.list.d/rocm-fleet.sources"]).stdout
    assert sources == (
        "# Managed by rocm-fleet (Ansible). Local changes are overwritten on the next run.\n"
        "# rocm-fleet: ROCm 6.1.2 from mirror\n"
        "\n"
        "Types: deb\n"
        f"URIs: {mirror}/rocm/apt/6.1.2\n"
        "Suites: trixie\n"
        "Components: main\n"
        "Architectures: amd64\n"
        "Signed-By: /etc/apt/keyrings/rocm-fleet.asc\n")
    pin = lab.run(host, ["cat", "/etc/apt/preferences.d/rocm-fleet-pin"]).stdout
    assert pin.endswith('Package: *\nPin: origin "127.0.0.1"\nPin-Priority: 600\n'), pin
    stat = lab.run(host, ["stat", "-c", "%U %G %a", "/etc/apt/keyrings/rocm-fleet.asc",
                          "/etc/apt/sources.list.d/rocm-fleet.sources", "/etc/apt/preferences.d/rocm-fleet-pin"])
    assert stat.stdout.split("\n")[:3] == ["root root 644"] * 3
    key = lab.run(host, ["cat", "/etc/apt/keyrings/rocm-fleet.asc"]).stdout
    assert openpgp.fingerprints(key) == [lab.info.mirror.fingerprint]      # every block of the file read
    served = (lab.info.mirror.root / "rocm" / "rocm.gpg.key").read_text()
    assert key == openpgp.trusted_keys(served, [lab.info.mirror.fingerprint])  # rebuilt, not the download


def test_rocminfo_runs_and_says_there_is_no_gpu(lab, converged) -> None:
    result = lab.run(host_names(lab)[0], ["rocminfo"])
    assert "ROCk module is NOT loaded, possibly no GPU devices" in result.stdout + result.stderr


def test_local_fact_records_what_was_applied(lab, converged) -> None:
    fact = json.loads(lab.run(host_names(lab)[0], ["cat", "/etc/ansible/facts.d/rocm_fleet.fact"]).stdout)
    assert fact["rocm_version"] == "6.1.2"
    assert fact["rocm_repo_source"] == "mirror"
    assert fact["amdgpu_driver_mode"] == "inbox"
    assert fact["packages"] == ["rocminfo", "rocm-smi", "hipcc", "libamdhip64-5"]
    assert fact["applied_at"].startswith("20")


REFUSALS = {
    "incompatible-rocm-driver-pair": (
        {"rocm_version": "7.0.2", "amdgpu_driver_mode": "dkms", "amdgpu_driver_version": "6.1.3"},
        "ROCm 7.0.2 is not supported by amdgpu driver 6.1.3"),
    "unsupported-os": (
        {"rocm_version": "6.2.4", "amdgpu_driver_mode": "dkms", "amdgpu_driver_version": "6.2.4"},
        "ROCm 6.2.4 is not supported on debian-13"),
    "key-fingerprint-mismatch": (
        {"rocm_repo_mirror_key_fingerprints": ["0123456789ABCDEF0123456789ABCDEF01234567"]},
        "is not in the pinned list 0123456789ABCDEF0123456789ABCDEF01234567"),
    "plain-http-mirror": (
        {"rocm_repo_allow_http": False},
        "must be served over https://; plain http is accepted only with rocm_repo_allow_http: true"),
    # A variable of a role applied after the others: its argument_specs are checked in preflight.yml
    # (entry point preflight); before, only when that role was applied, after the first ones ran.
    "later-role-variable-outside-its-choices": (
        {"node_tuning_state": "bogus"},
        "node_tuning_state must be one of: present, absent"),
}


def assert_refused_and_etc_identical(lab, overrides: dict, message: str) -> PlaybookRun:
    host = host_names(lab)[-1]
    before = etc_snapshot(lab, host)
    run = playbook(lab.info.inventory, "site.yml", "--limit", host, extra=overrides)
    assert run.rc != 0, run.output[-4000:]
    assert message in run.output, run.output[-4000:]
    assert "Provision the ROCm stack" not in run.output  # the refused host never reached the changing play
    assert etc_snapshot(lab, host) == before
    return run


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusal_fails_before_any_change_and_leaves_etc_identical(lab, converged, case: str) -> None:
    assert_refused_and_etc_identical(lab, *REFUSALS[case])


def test_a_key_file_with_a_second_unpinned_key_after_the_pinned_one_is_refused(lab, converged, tmp_path: Path) -> None:
    """The pin bypass of issue 16: the mirror serves its real key followed by a second armoured block
    holding another key. apt would trust both (the file is a signed-by keyring), so the whole file is
    refused, naming the key nobody pinned, and the host stays byte-for-byte as it was."""
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    gpg = ["gpg", "--batch", "--homedir", str(home)]
    subprocess.run([*gpg, "--passphrase", "", "--quick-gen-key", "intruder <intruder@invalid>", "rsa3072", "sign",
                    "never"], capture_output=True, timeout=120, check=True)
    intruder = subprocess.run([*gpg, "--armor", "--export"], capture_output=True, text=True, timeout=60,
                              check=True).stdout
    (other,) = openpgp.fingerprints(intruder)
    keys = lab.info.mirror.root / "rocm"
    (keys / "two-keys.gpg.key").write_text((keys / "rocm.gpg.key").read_text() + intruder)
    run = assert_refused_and_etc_identical(
        lab, {"rocm_repo_mirror_key_url": f"{lab.info.mirror.url}/rocm/two-keys.gpg.key"},
        f"{other} is not in the pinned list {lab.info.mirror.fingerprint}")
    assert f"the key file holds 2 keys ({lab.info.mirror.fingerprint}, {other})" in run.output


def test_validation_passes_host_checks_and_names_the_missing_gpu(lab, converged, tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = subprocess.run([str(Path(sys.executable).parent / "rocm-fleet"), "validate", "-i", str(lab.info.inventory),
                           "--hosts", "ansible://lab", "--tier", "smoke", "--results", str(results)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    docs = {doc["host"]: doc for doc in load_run(results)}   # node documents, not progress files
    assert set(docs) == set(host_names(lab))
    for host, doc in docs.items():
        assert doc["complete"] is True
        host_checks = [c for c in doc["checks"] if not c["needs_gpu"]]
        device = [c for c in doc["checks"] if c["needs_gpu"]]
        assert host_checks and all(c["status"] in ("pass", "skip") for c in host_checks), (host, host_checks)
        failed = [c for c in device if c["status"] == "fail"]
        assert {c["name"] for c in failed} == {"test_amdgpu_driver_is_loaded", "test_kfd_device_node_is_present",
                                               "test_rocminfo_lists_every_declared_gpu"}, (host, device)
        assert {c["code"] for c in failed} <= {"RF-NO-AMD-GPU", "RF-NO-KFD"}
        assert all(c["status"] == "skip" for c in device if c not in failed)   # health checks, NVIDIA discovery
        assert any("no AMD GPU present" in c["message"] for c in failed)
    assert (results / "junit.xml").exists()
    html = (results / "report.html").read_text()
    assert "RF-NO-AMD-GPU" in html and all(h in html for h in host_names(lab))


def test_hip_probe_compiles_for_gfx942_with_debians_hipcc(lab, converged) -> None:
    """Offline compilation for MI300X (gfx942) needs no GPU; running the binary does, so the run
    is expected to report that no device exists, which proves it was built and linked for HIP."""
    from validation.lab.podman import podman
    from validation.probes import hip_probe

    host, work = host_names(lab)[0], Path("/root/rfhip")        # a path inside the lab host
    lab.run(host, ["mkdir", "-p", str(work)])
    for name in ("rf_probe.hip", "rf_hip_compat.h"):
        podman(["cp", str(hip_probe.SOURCE.parent / name), f"{host}:{work / name}"])
    argv = hip_probe.hipcc_argv(work / "rf_probe.hip", work / "rf_probe", offload_arch="gfx942")
    build = lab.run(host, ["env", "HIP_PLATFORM=amd", *argv], timeout_s=600)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    ran = lab.run(host, [str(work / "rf_probe")], timeout_s=120)
    output = hip_probe.parse(ran.stdout)
    assert ran.returncode != 0 and output.platform == "hip" and output.devices == 0, ran.stdout + ran.stderr

