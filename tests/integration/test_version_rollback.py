"""Upgrade and downgrade are one path (issue 2), rehearsed on a converged lab host.

This module runs last on purpose (file name order): it leaves its host on a different package set,
so the modules before it see the hosts as site.yml left them.
"""

from __future__ import annotations

from ansible_run import playbook

UPGRADE_ROWS = [  # the lab's own qualification of sid's ROCm 7.2 user space on trixie, for this rehearsal only
    {"kind": "driver", "driver": "inbox", "rocm": ["7.2"], "os": ["debian-13"],
     "source": "rocm-fleet lab: Debian sid rocminfo 7.2.4 on trixie, upgrade rehearsal"},
    {"kind": "os", "rocm": "7.2", "os": ["debian-13"],
     "source": "rocm-fleet lab: Debian sid rocminfo 7.2.4 on trixie, upgrade rehearsal"},
]


def test_upgrade_and_downgrade_are_the_same_path(lab) -> None:
    """Change the version variables and re-run: sources are replaced (not added), packages move
    both ways and stay held, holds on packages no longer declared are released."""
    host = lab.info.hosts[-1].name
    # sid's 7.2.4 set has no hipcc; HIP's packages pin the 6.1.2 runtime, so they go first
    # (librocblas0-bench is there when test_validation_tools ran before)
    purge = lab.run(host, ["apt-get", "purge", "-y", "-q", "--allow-change-held-packages", "hipcc", "libamdhip64-dev",
                           "libhsa-runtime-dev", "librocblas0-bench"], timeout_s=600)
    assert purge.returncode == 0, purge.stdout[-2000:] + purge.stderr[-2000:]
    upgrade = {"rocm_version": "7.2.4", "rocm_repo_compat_extra": UPGRADE_ROWS, "rocm_repo_graphics": "absent",
               "rocm_packages": ["rocminfo", {"name": "rocm-smi", "version": "6.4.1*"}]}
    up = playbook(lab.info.inventory, "site.yml", "--limit", host, extra=upgrade)
    assert up.rc == 0, up.output[-5000:]
    versions = lab.run(host, ["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "rocminfo", "rocm-smi"]).stdout
    assert "rocminfo 7.2.4" in versions and "rocm-smi 6.4.1" in versions, versions
    sources = lab.run(host, ["cat", "/etc/apt/sources.list.d/rocm-fleet.sources"]).stdout
    assert "/rocm/apt/7.2.4\n" in sources and "/rocm/apt/6.1.2" not in sources
    held = set(lab.run(host, ["apt-mark", "showhold"]).stdout.split())
    assert {"rocminfo", "rocm-smi"} <= held and "libamdhip64-5" not in held   # no longer declared: released
    # apt downgrades only from a pin of 1000 or more (apt_preferences(5)); the rollback run says so
    down = playbook(lab.info.inventory, "site.yml", "--limit", host,
                    extra={"rocm_packages": ["rocminfo", "rocm-smi"], "rocm_repo_apt_pin_priority": 1001})
    assert down.rc == 0, down.output[-5000:]
    versions = lab.run(host, ["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "rocminfo", "rocm-smi"]).stdout
    assert "rocminfo 6.1.2" in versions and "rocm-smi 6.1.2" in versions, versions
    assert "/rocm/apt/6.1.2\n" in lab.run(host, ["cat", "/etc/apt/sources.list.d/rocm-fleet.sources"]).stdout
    assert {"rocminfo", "rocm-smi"} <= set(lab.run(host, ["apt-mark", "showhold"]).stdout.split())
    back = playbook(lab.info.inventory, "site.yml", "--limit", host, extra={"rocm_packages": ["rocminfo", "rocm-smi"]})
    assert back.rc == 0, back.output[-5000:]
    assert "Pin-Priority: 600" in lab.run(host, ["cat", "/etc/apt/preferences.d/rocm-fleet-pin"]).stdout
