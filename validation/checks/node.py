"""Which node a check runs on and where its results go: shared by the plugin and the fixtures it
registers (targets_fixture), so neither imports the other."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from validation.results.node import NodeResults


def node_name(host: Any, override: str | None = None) -> str:
    """'ansible://rflab-1' -> 'rflab-1'; local -> --rf-node or this machine's host name."""
    ident = host.backend.get_pytest_id()
    name = ident.split("://", 1)[-1] if "://" in ident else ident
    if name in ("", "local"):
        return override or socket.gethostname()
    return name


# node name -> its results document, one per node for the whole session (pytest_configure sets it)
RESULTS = pytest.StashKey[dict[str, NodeResults]]()


def results_for(item: pytest.Item, name: str) -> NodeResults | None:
    """The node's results document, None when the run writes none (no --rf-results)."""
    directory = item.config.getoption("--rf-results")
    if not directory:
        return None
    store = item.config.stash[RESULTS]
    if name not in store:
        store[name] = NodeResults(Path(directory), name, tier=item.config.getoption("markexpr") or "all",
                                  argv=list(sys.argv))
    return store[name]
