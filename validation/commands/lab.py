"""`rocm-fleet lab up|down|status`: the built-in lab of Debian trixie hosts and its apt mirror."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from validation.lab import DEFAULT_HOSTS, DEFAULT_PORT_BASE, Lab, default_lab_name
from validation.lab.image import Recipe
from validation.lab.paths import REPO_ROOT
from validation.lab.podman import labs_of
from validation.lab.serve import DEFAULT_LIFETIME_S


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="start, stop or show the built-in lab (podman hosts + apt mirror)",
                       description="Debian trixie hosts under podman with systemd and sshd on "
                       "127.0.0.1 ports, plus a signed apt mirror of real Debian ROCm packages.")
    actions = p.add_subparsers(dest="lab_action", required=True, metavar="ACTION")

    up = actions.add_parser("up", help="build what is missing, start hosts and mirror, write the inventory")
    _common(up)
    up.add_argument("--hosts", type=int, default=DEFAULT_HOSTS, help=f"host count (default {DEFAULT_HOSTS})")
    up.add_argument("--mirror", action=argparse.BooleanOptionalAction, default=True,
                    help="build and serve the ROCm apt mirror (default: yes)")
    up.add_argument("--port-base", type=int, default=None,
                    help="host i listens for SSH on 127.0.0.1:<base+i> (default: the first free base from "
                    f"{DEFAULT_PORT_BASE}, skipping ports that other labs hold)")
    up.add_argument("--mirror-port", type=int, default=None,
                    help="mirror port on 127.0.0.1 (default: any free port)")
    up.add_argument("--mirror-lifetime-s", type=float, default=DEFAULT_LIFETIME_S,
                    help="the mirror stops by itself after this many seconds (default 3 h)")
    up.add_argument("--debian-mirror", default=None, metavar="URI",
                    help="Debian archive for the image and the mirror (default: this machine's apt sources)")
    up.set_defaults(run=run_up)

    down = actions.add_parser("down", help="remove the lab's containers and stop its mirror (idempotent)")
    _common(down)
    down.set_defaults(run=run_down)

    status = actions.add_parser("status", help="show the lab's hosts, mirror and inventory (without --name: every "
                                "lab of this checkout)")
    _common(status)
    status.add_argument("--json", action="store_true", help="one JSON document on stdout")
    status.set_defaults(run=run_status)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default=None,
                   help=f"lab name (default {default_lab_name()}: rflab and this checkout's key, so labs of "
                   "two clones never meet)")
    p.add_argument("--state-dir", type=Path, default=None,
                   help="keys, known_hosts, mirror files (default .lab/NAME)")
    p.add_argument("--inventory", type=Path, default=None,
                   help="inventory to write/remove (default inventories/lab/hosts.yml)")


def _lab(args: argparse.Namespace, **extra: Any) -> Lab:
    return Lab(args.name, state_dir=args.state_dir, inventory_path=args.inventory, **extra)


def run_up(args: argparse.Namespace) -> int:
    recipe = Recipe(mirror=args.debian_mirror.rstrip("/")) if args.debian_mirror else None
    info = _lab(args, hosts=args.hosts, mirror=args.mirror, port_base=args.port_base,
                mirror_port=args.mirror_port, mirror_lifetime_s=args.mirror_lifetime_s, recipe=recipe).up()
    print(info.inventory)
    return 0


def run_down(args: argparse.Namespace) -> int:
    _lab(args).down()
    return 0


def run_status(args: argparse.Namespace) -> int:
    """The named lab; without --name every lab this checkout started (the demo's, the tests', `lab up`'s), or the
    default one when there is none. --json: the first lab's document, with every one of them under `labs`."""
    if args.name is None:
        names = labs_of(str(REPO_ROOT.resolve())) or [default_lab_name()]
        docs = [Lab(name, state_dir=args.state_dir, inventory_path=args.inventory).status() for name in names]
    else:
        docs = [_lab(args).status()]
    if args.json:
        print(json.dumps({"schema_version": 1, **docs[0], "labs": docs}, indent=2))
        return 0
    for doc in docs:
        print(f"lab {doc['name']}: {len(doc['hosts'])} host(s)")
        for name, state in doc["hosts"].items():
            print(f"  {name:<20} {state}")
        print(f"mirror:    {doc['mirror_url'] or 'not running'}")
        print(f"inventory: {doc['inventory'] or 'none'}")
    return 0
