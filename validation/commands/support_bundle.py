"""`rocm-fleet support-bundle`: collect this node's evidence into one archive with a manifest.

Run on the node (playbooks/remediate.yml runs it for a node held for physical action and fetches the
archive). The archive, `<out>/rocm-fleet-bundle-<node>-<UTC stamp>.tar.gz` (mode 0600), holds:

  kernel/     the kernel log: dmesg and journalctl -k (this boot)
  amd-smi/    static, metric, bad-pages (--json) and the CPER records (amd-smi ras --cper)
  versions/   rocminfo, installed packages (dpkg or rpm), uname, os-release, the amdgpu module's
              version and modinfo, the AMD PCI devices (lspci -vvv)
  health/     the health mode's memory and its last results documents
  results/    the results documents given with --results (the failing validation)
  remediation/ the node's remediation record (every attempt, the drain history) and the drain record
  slurm/      scontrol show node, with --slurm-node
  manifest.json  per file: its command or source, rc, status, sha256, size, time; a tool that is not
              installed is recorded "absent" with the reason

Every command has a timeout (--timeout); links are never followed. Once the archive is written, only the
newest --keep bundles of --out stay (default 5, the new one among them): the older ones are removed, so
bundles do not pile up on the node. Prints the archive's path (or one JSON document with --json, with the
bundles removed). Exit 0 when the archive was written, 2 when it could not be.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import tempfile
from pathlib import Path

from validation import __version__, bundle
from validation.commands.remediate import DEFAULT_RECORD
from validation.errors import RocmFleetError
from validation.slurm import check_node as check_slurm_node

DEFAULT_STATE = Path("/var/lib/rocm-fleet/health")
DEFAULT_DRAIN = Path("/var/lib/rocm-fleet/drain.json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("support-bundle", help="collect this node's logs, amd-smi views and results into one archive",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="directory for the archive (created 0700)")
    p.add_argument("--node-name", default=None, help="this node's name (default: the short host name)")
    p.add_argument("--slurm-node", default=None, help="also record `scontrol show node NAME`")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE,
                   help=f"the health mode's memory (default {DEFAULT_STATE})")
    p.add_argument("--record", type=Path, default=DEFAULT_RECORD,
                   help=f"the remediation record (default {DEFAULT_RECORD})")
    p.add_argument("--results", type=Path, action="append", default=[], metavar="DIR",
                   help="a directory of results documents to include (repeatable)")
    p.add_argument("--reason", default="", help="why the bundle is made (recorded in the manifest)")
    p.add_argument("--timeout", type=float, default=60, help="seconds each command may take (default 60)")
    p.add_argument("--keep", type=int, default=bundle.DEFAULT_KEEP, metavar="N",
                   help=f"bundles that stay in --out, the new one among them; older ones are removed (default "
                   f"{bundle.DEFAULT_KEEP})")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=run)


def items(args: argparse.Namespace, cper_dir: Path) -> list[bundle.Item]:
    t = args.timeout
    found: list[bundle.Item] = [
        bundle.Command(name="kernel/dmesg.txt", argv=("dmesg", "--time-format=iso"), timeout_s=t),
        bundle.Command(name="kernel/journalctl-k.txt", argv=("journalctl", "-k", "-b", "--no-pager", "-o",
                                                             "short-iso"), timeout_s=t),
        bundle.Command(name="amd-smi/static.json", argv=("amd-smi", "static", "--json"), timeout_s=t),
        bundle.Command(name="amd-smi/metric.json", argv=("amd-smi", "metric", "--json"), timeout_s=t),
        bundle.Command(name="amd-smi/bad-pages.json", argv=("amd-smi", "bad-pages", "--json"), timeout_s=t),
        bundle.Command(name="amd-smi/ras-cper.txt", argv=("amd-smi", "ras", "--cper", "--severity", "all",
                                                          "--folder", str(cper_dir)), timeout_s=t),
        bundle.Copy(name="amd-smi/cper", path=cper_dir),
        bundle.Command(name="versions/rocminfo.txt", argv=("rocminfo",), timeout_s=t),
        bundle.Command(name="versions/dpkg.txt", argv=("dpkg-query", "-W", "-f=${Package} ${Version} ${Status}\n"),
                       timeout_s=t),
        bundle.Command(name="versions/rpm.txt", argv=("rpm", "-qa"), timeout_s=t),
        bundle.Command(name="versions/uname.txt", argv=("uname", "-a"), timeout_s=t),
        # a link on most distributions (to /usr/lib/os-release); this one named system file is resolved
        bundle.Copy(name="versions/os-release", path=Path("/etc/os-release").resolve()),
        bundle.Copy(name="versions/amdgpu-version", path=Path("/sys/module/amdgpu/version")),
        bundle.Command(name="versions/modinfo-amdgpu.txt", argv=("modinfo", "amdgpu"), timeout_s=t),
        bundle.Command(name="versions/lspci-amd.txt", argv=("lspci", "-d", "1002:", "-vvv"), timeout_s=t),
        bundle.Copy(name="health/state", path=args.state_dir, pattern="*.json"),
        bundle.Copy(name="health/last", path=args.state_dir / "last", pattern="*.json"),
        bundle.Copy(name="remediation/record.json", path=args.record),
        bundle.Copy(name="remediation/drain.json", path=DEFAULT_DRAIN),
    ]
    for index, path in enumerate(args.results, 1):
        label = path.name if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", path.name) else f"dir{index}"
        found.append(bundle.Copy(name=f"results/{index}-{label}", path=path, pattern="*.json"))
    if args.slurm_node:
        found.append(bundle.Command(name="slurm/node.txt", argv=("scontrol", "show", "node",
                                                                  check_slurm_node(args.slurm_node)), timeout_s=t))
    return found


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise RocmFleetError(f"--timeout is {args.timeout:g}; give the seconds each command may take (> 0)")
    bundle.check_keep(args.keep)
    node = args.node_name or socket.gethostname().split(".")[0]
    args.out.mkdir(parents=True, exist_ok=True, mode=0o700)
    cper_dir = Path(tempfile.mkdtemp(prefix=".cper-", dir=args.out))
    try:
        summary = {"reason": args.reason, "rocm_fleet": __version__, "slurm_node": args.slurm_node}
        archive = bundle.build(args.out, node, items(args, cper_dir), summary=summary)
    finally:
        shutil.rmtree(cper_dir, ignore_errors=True)
    removed = bundle.prune(args.out, args.keep, newest=archive)
    if args.json:
        print(json.dumps({"schema_version": 1, "node": node, "archive": str(archive),
                          "removed": [str(p) for p in removed]}))
    else:
        print(archive)
    return 0
