"""Read a results directory once for a fleet report, with every CPU the machine lends.

Each node document is read and validated (validation/report/load.py), its numbers go into the
batch's columns (validation/peers.py Batch), its Prometheus measurement lines into a spool file
(validation/report/fleet_text.py MeasurementSpool), and the document itself is kept with only the
measurement entries the other report formats show: all of them while the run is small enough for
the HTML page's per-node tables (validation/report/html.py DETAIL_NODES), else only the scaling
entries the terminal shows. At 10,000 nodes that is one pass over about 150 MB of JSON and a
million measurement entries, without holding them.

The pass is split by file into contiguous parts: this process reads the first, forked worker
processes the others, and the parts are joined in file order. Whatever the split, the outcome is
that of reading the files one after another (`jobs=1`): the same documents in the same order, and
the same error, the first in file order (a malformed document, or a second document for one host).
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise, repeat
from pathlib import Path
from typing import Any

from validation import judged, peers
from validation.errors import RocmFleetError
from validation.report.fleet_text import MeasurementSpool
from validation.report.html import DETAIL_NODES
from validation.report.load import Claims, read_node_document

PARALLEL_MIN_FILES = 256   # fewer files are read in this process: a worker costs more than it saves
MAX_JOBS = 8               # past this the joining and the report's rendering, not the reading, take the time


@dataclass(slots=True, kw_only=True)
class Gathered:
    """What a fleet report keeps of a results directory."""

    nodes: list[dict[str, Any]]          # in file order
    sources: dict[str, Path]             # host -> the file its document was read from
    batch: peers.Batch
    spool: MeasurementSpool
    jobs: int                            # the processes that read them (1 for a small run)


@dataclass(slots=True, kw_only=True)
class _Part:
    docs: list[tuple[Path, dict[str, Any]]]
    batch: peers.Batch
    spool: MeasurementSpool
    error: RocmFleetError | None         # the first in the part; the documents before it are in `docs`


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity), at most MAX_JOBS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:               # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_JOBS, cpus))


@contextmanager
def gather(directory: Path, *, jobs: int | None = None) -> Iterator[Gathered]:
    """The documents of `directory` read once (see the module docstring); the spool's files live
    until the context ends. Raises RocmFleetError as validation/report/load.py load_run does."""
    if not directory.is_dir():
        raise RocmFleetError(f"{directory} is not a directory of results documents")
    paths = sorted(directory.glob("*.json"))
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if len(paths) < PARALLEL_MIN_FILES:
        jobs = 1
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-report-") as spool_dir:
        # one process keeps every entry until the run outgrows the per-node tables; a part of many
        # cannot know the run's size, so it keeps none (and the rare small run is read again below)
        slim_after = DETAIL_NODES if jobs == 1 else 0
        bounds = [len(paths) * k // jobs for k in range(jobs + 1)]
        chunks = [(paths[a:b], Path(spool_dir) / f"part{k}.prom", slim_after) for k, (a, b) in
                  enumerate(pairwise(bounds))]
        if jobs == 1:
            parts = [_read_part(*chunks[0])]
        else:
            with ProcessPoolExecutor(max_workers=jobs - 1, mp_context=_context()) as pool:
                others = pool.map(_read_part, *zip(*chunks[1:], strict=True))
                parts = [_read_part(*chunks[0]), *others]
        gathered = _join(parts, jobs)
        if jobs > 1 and len(gathered.nodes) <= DETAIL_NODES:      # rare: mostly progress files; read in full
            gathered.nodes = [_in_full(doc, gathered.sources[doc["host"]]) for doc in gathered.nodes]
        yield gathered


def _in_full(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """`doc` read again whole, keeping what the join added (a conflict); a stand-in stays as it is."""
    if doc.get("missing"):
        return doc
    full = read_node_document(path)
    assert full is not None
    full["checks"] += [c for c in doc["checks"] if c.get("id") == "results_conflict"]
    full["complete"] = doc.get("complete", False) and full.get("complete", False)
    return full


def _context() -> Any:
    """fork where the platform has it: the workers start at once with everything imported."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _read_part(paths: list[Path], spool_path: Path, slim_after: int) -> _Part:
    """Read `paths` in order up to the first error; each document's numbers and Prometheus lines go
    to the part's batch and spool; past `slim_after` documents, they keep only their scaling entries."""
    batch = peers.Batch()
    docs: list[tuple[Path, dict[str, Any]]] = []
    error = None
    with MeasurementSpool(spool_path) as spool:
        for path in paths:
            try:
                doc = read_node_document(path)
            except RocmFleetError as exc:
                error = exc
                break
            if doc is None:
                continue
            batch.add(doc)
            spool.add(doc)
            docs.append((path, doc))
            if len(docs) > slim_after:
                for _, kept in (docs if len(docs) == slim_after + 1 else docs[-1:]):
                    _keep_scaling_only(kept)
    return _Part(docs=docs, batch=batch, spool=spool, error=error)


def _keep_scaling_only(doc: dict[str, Any]) -> None:
    """Drop the document's measurement entries but those the terminal's scaling tables show (their
    judged counts kept first, for a document written before runs recorded them)."""
    if "judged" not in doc:
        doc["judged"] = judged.summarize(doc)
    entries = doc.get("measurements") or []
    tags = list(map(dict.get, entries, repeat("scaling")))          # one C-level pass: most have none
    doc["measurements"] = [] if tags.count(None) == len(tags) else [
        m for m, tag in zip(entries, tags, strict=True) if isinstance(tag, dict)]


def _join(parts: list[_Part], jobs: int) -> Gathered:
    """The parts in file order, refusing a second document for one host, raising the first error."""
    first = parts[0]
    nodes: list[dict[str, Any]] = []
    claims = Claims()
    for part in parts:
        for path, doc in part.docs:
            own = claims.take(path, doc)   # None: the node fails; this document's numbers may stay in the batch
            if own is not None:
                nodes.append(own)
        if part.error is not None:
            raise part.error
        if part is not first:
            first.batch.extend(part.batch)
            first.spool.extend(part.spool)
    return Gathered(nodes=nodes, sources=claims.sources, batch=first.batch, spool=first.spool, jobs=jobs)
