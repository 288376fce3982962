"""The built-in lab: Debian trixie hosts under podman (systemd + sshd on 127.0.0.1 ports) and a
signed apt mirror of real Debian ROCm packages, for the integration tests and the quickstart.

    with Lab(hosts=2, mirror=True) as lab:   # name rflab-<checkout key>, free ports
        lab.info.inventory   # inventories/lab/hosts.yml
        lab.run(lab.info.hosts[0].name, ["systemctl", "is-system-running"])
"""

from validation.lab.inventory import HostPlan, MirrorFacts
from validation.lab.lab import DEFAULT_HOSTS, DEFAULT_PORT_BASE, Lab, LabHost, LabInfo
from validation.lab.mirror import MirrorInfo, VersionSet
from validation.lab.paths import LAB_PREFIX, checkout_key, default_lab_name

__all__ = [
    "DEFAULT_HOSTS",
    "DEFAULT_PORT_BASE",
    "LAB_PREFIX",
    "HostPlan",
    "Lab",
    "LabHost",
    "LabInfo",
    "MirrorFacts",
    "MirrorInfo",
    "VersionSet",
    "checkout_key",
    "default_lab_name",
]
