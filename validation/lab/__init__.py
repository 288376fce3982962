"""The built-in lab: Debian trixie hosts under podman (systemd + sshd on 127.0.0.1 ports) and a
signed apt mirror of real Debian ROCm packages, for the integration tests and the quickstart.

    with Lab(name="rflab", hosts=2, mirror=True) as lab:
        lab.info.inventory   # inventories/lab/hosts.yml
        lab.run("rflab-1", ["systemctl", "is-system-running"])
"""

from validation.lab.inventory import HostPlan, MirrorFacts
from validation.lab.lab import DEFAULT_HOSTS, DEFAULT_PORT_BASE, Lab, LabHost, LabInfo
from validation.lab.mirror import MirrorInfo, VersionSet
from validation.lab.paths import DEFAULT_LAB_NAME

__all__ = [
    "DEFAULT_HOSTS",
    "DEFAULT_LAB_NAME",
    "DEFAULT_PORT_BASE",
    "HostPlan",
    "Lab",
    "LabHost",
    "LabInfo",
    "MirrorFacts",
    "MirrorInfo",
    "VersionSet",
]
