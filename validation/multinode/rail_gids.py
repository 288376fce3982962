"""RoCE version and GID per declared rail, read from the kernel's sysfs on each node.

    raw = probe(spec, "node07", ["mlx5_0:1"], gid_index=3)   # one line per rail, over SSH
    gids = parse_probe(raw.stdout)                           # RailGid per rail ({} = no RDMA device)
    judge_gids("node07", gids, ["mlx5_0:1"], gid_index=3)    # one verdict per rail

The kernel publishes, per port and GID index (Documentation/ABI/stable/sysfs-class-infiniband,
since 4.4): `gid_attrs/types/<index>` = "IB/RoCE v1" or "RoCE v2", `gid_attrs/ndevs/<index>` = the
netdev, `gids/<index>` = the GID, and `link_layer` = "InfiniBand" or "Ethernet". Reading the type of
an unpopulated index fails (EINVAL), which the probe prints as an empty value.

On an Ethernet (RoCE) rail the declared index (NCCL_IB_GID_INDEX; AMD's multi-node RCCL example and
CVS use 3) must hold a non-zero GID of type "RoCE v2": RCCL's RoCE path routes over UDP/IP, and an
empty index means the netdev has no address. On an InfiniBand rail the RoCE version does not
apply; it is recorded. Which GID index to use is consistent across nodes by construction (the
inventory declares one), so a node whose index holds something else fails here, by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from validation import runner
from validation.codes import CODES
from validation.judge import Verdict, judge_target
from validation.multinode.model import ClusterSpec
from validation.multinode.rails import split_rail
from validation.multinode.remote import ssh_argv
from validation.records import Status
from validation.runner import RawRun
from validation.targets.model import EQUAL, Target

PROBE_TIMEOUT_S = 30
NO_RDMA = "no-rdma"
ROCE_V2 = "RoCE v2"
GID_TYPE = Target(
    metric="rdma_gid_type", value=ROCE_V2, unit="", direction=EQUAL,
    source="RCCL over RoCE v2 at the declared NCCL_IB_GID_INDEX (AMD's multi-node RCCL example sets 3: "
           "https://github.com/ROCm/ROCm/blob/e396b489/docs/how-to/rocm-for-ai/training/"
           "prerequisite-system-validation.rst); GID types per the kernel's "
           "https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband")

# argv: sysfs root ("" on a node), GID index, then DEVICE:PORT rails. One tab-separated line per rail.
PROBE_SCRIPT = r"""
root=$1; idx=$2; shift 2
base="$root/sys/class/infiniband"
if [ ! -d "$base" ] || [ -z "$(ls -A "$base" 2>/dev/null)" ]; then echo no-rdma; exit 0; fi
for rail in "$@"; do
  dev=${rail%%:*}; port=${rail#*:}
  p="$base/$dev/ports/$port"
  if [ ! -d "$p" ]; then printf 'rail=%s\tmissing\n' "$rail"; continue; fi
  printf 'rail=%s\tlink_layer=%s\ttype=%s\tndev=%s\tgid=%s\n' "$rail" \
    "$(cat "$p/link_layer" 2>/dev/null)" "$(cat "$p/gid_attrs/types/$idx" 2>/dev/null)" \
    "$(cat "$p/gid_attrs/ndevs/$idx" 2>/dev/null)" "$(cat "$p/gids/$idx" 2>/dev/null)"
done
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class RailGid:
    rail: str
    present: bool
    link_layer: str = ""     # "InfiniBand" | "Ethernet"
    gid_type: str = ""       # "IB/RoCE v1" | "RoCE v2" | "" (index not populated)
    netdev: str = ""
    gid: str = ""

    @property
    def gid_is_zero(self) -> bool:
        return not self.gid or not self.gid.replace(":", "").strip("0")


def probe_argv(rails: Sequence[str], gid_index: int, *, sysfs_root: str = "") -> list[str]:
    if gid_index < 0:
        raise ValueError(f"GID index must be >= 0, not {gid_index}")
    normalised = [f"{d}:{p}" for d, p in map(split_rail, rails)]
    return ["sh", "-c", PROBE_SCRIPT, "sh", sysfs_root, str(gid_index), *normalised]


def probe(spec: ClusterSpec, node: str, rails: Sequence[str], *, gid_index: int,
          run: Callable[..., RawRun] = runner.run) -> RawRun:
    """The probe script on `node` over SSH."""
    return run(ssh_argv(spec.node(node).connection, probe_argv(rails, gid_index)), timeout_s=PROBE_TIMEOUT_S)


def parse_probe(text: str) -> dict[str, RailGid] | None:
    """Probe stdout -> rail -> RailGid; None when the node has no RDMA device at all."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines == [NO_RDMA]:
        return None
    out: dict[str, RailGid] = {}
    for line in lines:
        fields = line.split("\t")
        if not fields[0].startswith("rail="):
            raise ValueError(f"probe line not understood: {line!r}")
        rail = fields[0].removeprefix("rail=")
        if fields[1:] == ["missing"]:
            out[rail] = RailGid(rail=rail, present=False)
            continue
        kv = dict(f.split("=", 1) for f in fields[1:])
        out[rail] = RailGid(rail=rail, present=True, link_layer=kv.get("link_layer", ""),
                            gid_type=kv.get("type", ""), netdev=kv.get("ndev", ""), gid=kv.get("gid", ""))
    return out


def judge_gids(node: str, gids: Mapping[str, RailGid] | None, rails: Sequence[str], *,
               gid_index: int) -> list[Verdict]:
    """One verdict per declared rail: RoCE v2 at the declared index (Ethernet), recorded on InfiniBand."""
    verdicts = []
    for rail in (f"{d}:{p}" for d, p in map(split_rail, rails)):
        subject = f"{node} {rail}"
        seen = (gids or {}).get(rail)
        if gids is None or seen is None or not seen.present:
            why = "the node has no RDMA device" if gids is None else "no such device/port in sysfs"
            verdicts.append(Verdict(
                status=Status.FAIL, subject=subject, metric="rdma_port_state",
                measured="absent", unit="", target=GID_TYPE,
                reason=f"{subject}: declared rail not present ({why}; /sys/class/infiniband)",
                code="RF-NET-RAIL-DOWN", hint=CODES["RF-NET-RAIL-DOWN"]))
            continue
        if seen.link_layer != "Ethernet":
            record = Target(metric=GID_TYPE.metric, value=None, unit="", record_only=True,
                            source=f"link layer {seen.link_layer or 'unknown'}: RoCE version does not apply")
            verdicts.append(judge_target(record, subject, seen.gid_type or "none"))
            continue
        if not seen.gid_type or seen.gid_is_zero:
            verdicts.append(Verdict(
                status=Status.FAIL, subject=subject, metric=GID_TYPE.metric,
                measured="empty", unit="", target=GID_TYPE,
                reason=f"{subject}: GID index {gid_index} is empty (netdev {seen.netdev or 'none'}; a RoCE GID "
                       f"needs an IP address on it) ({GID_TYPE.source})",
                code="RF-NET-GID", hint=CODES["RF-NET-GID"]))
            continue
        verdict = judge_target(GID_TYPE, subject, seen.gid_type)
        if verdict.code:
            verdict = Verdict(status=verdict.status, subject=subject, metric=verdict.metric,
                              measured=verdict.measured, unit="", target=GID_TYPE,
                              reason=f"{subject}: GID index {gid_index} ({seen.gid} on {seen.netdev}) is "
                                     f"{seen.gid_type!r}, expected {ROCE_V2!r} ({GID_TYPE.source})",
                              code=verdict.code, hint=verdict.hint)
        verdicts.append(verdict)
    return verdicts

