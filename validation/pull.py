"""What a node needs to converge itself: a pinned copy of this checkout, the controller's ansible-core,
and its own inventory.

    python -m validation.pull --root CHECKOUT --dir BUNDLES -i INVENTORY [-i ...] HOST...
        prints {"path": BUNDLE, "built": bool, "digest": ..., "inventories": {HOST: {...}}}

playbooks/pull.yml copies the bundle to each node, which then runs playbooks/site.yml over a local
connection, as `ansible-pull` would, so the controller's cost per node is a handful of commands
however many tasks the roles have. The bundle is content-addressed like the suite's wheelhouse
(validation/wheelhouse.py): `BUNDLES/<digest>/` (0700, as is BUNDLES) holds the checkout's tracked files
that a node's run reads (SHIPPED; an uncommitted change to one is what the nodes run, an untracked file
never ships) in a reproducible tar, and the wheel of the ansible-core version this controller runs, so
nodes converge with the same Ansible. A node's inventory is its own variables as the controller's
inventory merges them, its groups, and a local connection in place of the controller's way of reaching it.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from validation import names
from validation.errors import RocmFleetError
from validation.multinode.inventory import ansible_inventory_sources
from validation.wheelhouse import DIGEST_FILE, SOURCE_DATE_EPOCH, build_once

CHECKOUT = "rocm-fleet-checkout.tar.gz"
# A become plugin's option that holds a secret (sudo's, su's, runas's become_pass), by its option name.
SECRET_OPTION = re.compile(r"pass|secret|token|key|cert", re.IGNORECASE)
# What no plugin of ansible-core names (a collection's connection plugin: ansible_httpapi_pass,
# ansible_netconf_password, ...): an Ansible variable whose name says it holds a secret. The node's own
# variables (a role's mirror token) are its business and reach it.
UNNAMED_SECRET = re.compile(r"^ansible_\w*(pass|secret|token|private_key|credential)", re.IGNORECASE)


class PullError(RocmFleetError):
    """Said in one line, exit 2."""


def ansible_requirement() -> str:
    return f"ansible-core=={importlib.metadata.version('ansible-core')}"


# What a node's run of playbooks/site.yml reads (and validation_node's wheel of this package): never the
# inventories (their variables reach a node only as its own inventory, node_inventory), tests or docs.
SHIPPED = ("ansible.cfg", "galaxy.yml", "pyproject.toml", "README.md", "collections/", "meta/", "playbooks/",
           "plugins/", "roles/", "validation/")


def checkout_files(root: Path) -> list[str]:
    """The checkout's tracked files (as the working tree has them, less the deleted) that a node's run needs
    (SHIPPED): an untracked file is never shipped, so a secret kept beside the checkout stays there."""
    proc = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--", *SHIPPED],
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise PullError(f"{root} is not a git checkout ({proc.stderr.decode(errors='replace').strip()[-200:]}); "
                        "the nodes get the checkout's tracked files")
    names = {name for name in proc.stdout.decode().split("\0") if name}
    return sorted(name for name in names if os.path.lexists(root / name))


def digest(root: Path, files: list[str], requirement: str) -> str:
    h = hashlib.sha256(requirement.encode() + b"\0")
    for name in files:
        path = root / name
        h.update(name.encode() + b"\0")
        if path.is_symlink():
            h.update(b"L" + str(path.readlink()).encode())
        else:
            h.update(b"X" if os.access(path, os.X_OK) else b"F")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:20]


def write_checkout(root: Path, files: list[str], into: Path) -> None:
    """A tar of `files` whose bytes depend on their names, contents, links and executable bits only."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in files:
            path = root / name
            info = tarfile.TarInfo(name)
            info.mtime = int(SOURCE_DATE_EPOCH)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if path.is_symlink():
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(path.readlink()), 0o777
                tar.addfile(info)
                continue
            data = path.read_bytes()
            info.size, info.mode = len(data), 0o755 if os.access(path, os.X_OK) else 0o644
            tar.addfile(info, io.BytesIO(data))
    with (into / CHECKOUT).open("wb") as out, gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        gz.write(buffer.getvalue())


def build(root: Path, files: list[str], into: Path, requirement: str) -> None:
    write_checkout(root, files, into)
    proc = subprocess.run([sys.executable, "-P", "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(into),
                           requirement], stdout=2, check=False)      # fd 2: stdout is the JSON line
    if proc.returncode != 0:
        raise PullError(f"pip wheel failed (exit {proc.returncode}) for {requirement}; its output is above")


def complete(target: Path) -> bool:
    return ((target / DIGEST_FILE).is_file() and (target / CHECKOUT).is_file()
            and any(target.glob("ansible_core-*.whl")))


def ensure(root: Path, base: Path) -> tuple[Path, bool]:
    """The bundle of this checkout, and whether it had to be built now."""
    requirement = ansible_requirement()
    files = checkout_files(root)
    return build_once(base, digest(root, files, requirement), lambda staging: build(root, files, staging, requirement),
                      complete)


@functools.cache
def controller_variables() -> frozenset[str]:
    """The variables through which the controller reaches a node or becomes root there, as ansible-core's own
    plugins document them (each option's `vars:`, aliases included): every variable of every connection plugin
    but those the local connection reads too, and the secret options of every become plugin (the password,
    never the user or method a run on the node still uses). Read from the plugins' documentation, without
    importing them; on the node the connection is local and nothing there needs them."""
    from ansible.plugins.loader import become_loader, connection_loader, fragment_loader
    from ansible.utils.plugin_docs import get_docstring

    def options(path: str) -> dict[str, Any]:
        doc = get_docstring(path, fragment_loader)[0] or {}
        return doc.get("options") or {}

    def names(option: Mapping[str, Any]) -> set[str]:
        return {str(var["name"]) for var in option.get("vars") or [] if isinstance(var, Mapping) and "name" in var}

    local: set[str] = set()
    reach: set[str] = set()
    for path in connection_loader.all(path_only=True):
        found = set().union(*(names(option) for option in options(path).values()))
        (local if Path(path).stem == "local" else reach).update(found)
    secret: set[str] = set()
    for path in become_loader.all(path_only=True):
        secret.update(*(names(option) for name, option in options(path).items() if SECRET_OPTION.search(name)))
    # not variables of the host: the name a plugin falls back to, and a delegated host's
    return frozenset(name for name in (reach - local) | secret if name.startswith("ansible_"))


def _controller_only(name: str) -> bool:
    return name in controller_variables() or bool(UNNAMED_SECRET.match(name))


def node_inventory(listing: Mapping[str, Any], host: str) -> dict[str, Any]:
    """`host`'s inventory for a run on the node itself: its merged variables less the ways the controller
    reaches it, every group it is in (flattened: membership is what plays and group_names use), and a
    local connection through the node's own Python."""
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    if host not in hostvars and not any(host in doc.get("hosts", []) for doc in listing.values()):
        raise PullError(f"{host} is not in the inventory")
    own = {name: value for name, value in hostvars.get(host, {}).items() if not _controller_only(name)}
    own.update(ansible_connection="local", ansible_python_interpreter="/usr/bin/python3")
    groups = sorted(name for name in listing if name not in {"_meta", "all", "ungrouped"}
                    and host in _members(listing, name, set()))
    return {"all": {"hosts": {host: own}, "children": {name: {"hosts": {host: None}} for name in groups}}}


def _members(listing: Mapping[str, Any], group: str, seen: set[str]) -> set[str]:
    """The hosts of `group` and of its children, at any depth."""
    seen.add(group)
    doc = listing.get(group, {})
    hosts = set(doc.get("hosts", []))
    for child in doc.get("children", []):
        if child not in seen:
            hosts |= _members(listing, child, seen)
    return hosts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation.pull", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the checkout the nodes converge from")
    parser.add_argument("--dir", type=Path, required=True, help="where bundles are kept, one per digest")
    parser.add_argument("-i", "--inventory", action="append", default=[], required=True,
                        help="the controller's inventory sources (as ansible-playbook got them)")
    parser.add_argument("hosts", nargs="+", help="the nodes to write inventories for (after `--`: they come from "
                        "the inventory, and a name that starts with '-' must not be read as an option)")
    args = parser.parse_args(argv)
    try:
        hosts = [names.check_node(host, "an inventory host name") for host in args.hosts]
        path, built = ensure(args.root.resolve(), args.dir.resolve())
        listing = ansible_inventory_sources([str(p) for p in args.inventory])
        inventories = {host: node_inventory(listing, host) for host in hosts}
    except RocmFleetError as exc:
        print(f"pull: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"path": str(path), "built": built, "digest": path.name, "inventories": inventories}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
