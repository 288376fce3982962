"""Read a results directory: one JSON document per node (see validation/results/node.py).

Every `*.json` in the directory is a node document except the progress files the plugin keeps beside
them (`progress-<node>.json`, kind "rocm-fleet-progress"). Each is read with the input size limit
(validation/inputs.py), must be UTF-8 JSON without NaN/Infinity, must carry a schema_version this
version reads, and must validate against validation/report/node_schema.json. A document that does not
is an error naming the file and the field; nothing is dropped and nothing ends in a traceback.

The schema is checked by a predicate compiled from it (validation/report/schema_check.py, about
a hundredth of jsonschema's cost); jsonschema, the reference, is asked only for the message of a
document the predicate refuses. `iter_run` yields the documents one at a time, so that a fleet
report can keep what it needs of each and let the rest go.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from validation import inputs, names, validity
from validation.codes import CODES
from validation.errors import RocmFleetError
from validation.report.schema_check import Check, compile_schema

log = logging.getLogger(__name__)

SCHEMA_VERSIONS = (1,)
SCHEMA_FILE = Path(__file__).with_name("node_schema.json")
PROGRESS_KIND = "rocm-fleet-progress"  # validation/results/progress.py KIND


class ResultsDocumentError(RocmFleetError):
    """A results document that is not a valid node document."""


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator  # a runtime dependency of report/compare only

    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@functools.cache
def _check() -> Check:
    return compile_schema(json.loads(SCHEMA_FILE.read_text()))


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _field(path: Any) -> str:
    """'checks[2].status' from a jsonschema error path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the document)"


def read_node_document(path: Path, *, max_input_mb: float | None = None) -> dict[str, Any] | None:
    """One validated node document, or None for a progress file. Raises ResultsDocumentError."""
    raw = inputs.read_bytes(path, inputs.limit_bytes(max_input_mb))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsDocumentError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                                   "was it written by rocm-fleet? re-fetch it from the node") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ResultsDocumentError(f"{path} is not valid JSON ({exc}); was it written by another tool or cut "
                                   "short? re-fetch it from the node") from None
    if isinstance(doc, dict) and (doc.get("kind") == PROGRESS_KIND or path.name.startswith("progress-")):
        return None
    if not isinstance(doc, dict):
        raise ResultsDocumentError(f"{path}: a node document is a JSON object, this is a {type(doc).__name__}; "
                                   "keep only rocm-fleet results documents in the directory")
    version = doc.get("schema_version")
    if "schema_version" in doc and version not in SCHEMA_VERSIONS:
        raise ResultsDocumentError(
            f"{path}: schema_version {version!r} is not one this rocm-fleet reads "
            f"({', '.join(map(str, SCHEMA_VERSIONS))}); use the rocm-fleet version that wrote it")
    if _check()(doc):
        return doc
    errors = sorted(_validator().iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ResultsDocumentError(f"{path}: {_field(first.absolute_path)}: {first.message}{more}; the document "
                                   f"does not follow {SCHEMA_FILE.name} (schema_version 1)")
    # jsonschema is the reference: the compiled check refused what it accepts, a bug in schema_check.py
    log.warning("%s: validation/report/schema_check.py refused a document that jsonschema accepts; "
                "it is loaded; please report this", path)
    return doc


def load_run(directory: Path, *, max_input_mb: float | None = None) -> list[dict[str, Any]]:
    """Every node document of a results directory, validated (see the module docstring)."""
    return list(iter_run(directory, max_input_mb=max_input_mb))


def iter_run(directory: Path, *, max_input_mb: float | None = None) -> Iterator[dict[str, Any]]:
    """The node documents of a results directory one at a time, in file name order, validated."""
    if not directory.is_dir():
        raise RocmFleetError(f"{directory} is not a directory of results documents")
    claims = Claims()
    for path in sorted(directory.glob("*.json")):
        doc = read_node_document(path, max_input_mb=max_input_mb)
        if doc is not None and (own := claims.take(path, doc)) is not None:
            yield own


class Claims:
    """Which file each node's results come from, as documents are read in file order. A document counts only
    for the node whose file it is, `<node>.json` (the name the controller chose: roles/validation_node/tasks/
    results.yml; validation/results/node.py): one that names another node fails its file's node (`claimed`).
    A second document for a node (only a caller joining two directories can meet one) fails that node
    (`conflict`) and is left out. A document read after its `valid_until` fails its node too (`expire`), as of
    `now` (default: when reading starts)."""

    def __init__(self, now: dt.datetime | None = None) -> None:
        self.sources: dict[str, Path] = {}           # host -> the file its document was read from
        self._kept: dict[str, dict[str, Any]] = {}
        self.now = now or dt.datetime.now(dt.UTC)

    def take(self, path: Path, doc: dict[str, Any]) -> dict[str, Any] | None:
        """The document to use for `path` (`doc`, or a failing stand-in), None when it is left out."""
        own = claimed(path, doc, self.sources)
        if own is None:
            conflict(self._kept[path.stem], self.sources[path.stem], path)
            return None
        self._kept[own["host"]] = own
        expire(own, self.now)
        return own


def claimed(path: Path, doc: dict[str, Any], seen: dict[str, Path]) -> dict[str, Any] | None:
    """`doc` when it names the node of its file (`<node>.json`) and no earlier document claimed that node
    (recorded in `seen`); None for a node an earlier document claimed (the caller fails that one: `conflict`).
    A failing stand-in instead: for the file's node when the document names another node (it is never counted
    for the node it names), or named after the file name's digest when the file's name is not a node name.
    One bad document never hides the rest of the run's report."""
    node, host = path.stem, doc["host"]
    if not names.matches(node, names.NODE_RE):
        stand_in = "unnamed-" + hashlib.sha256(path.name.encode()).hexdigest()[:8]
        seen[stand_in] = path
        return stand_in_document(stand_in, "RF-RESULTS-CONFLICT",
                                 f"{path.name!a} is not named after a node (<node>.json, a node name of letters, "
                                 "digits, '.', '_', ':', '-'); its results are not read")
    if node in seen:
        return None
    seen[node] = path
    if host != node:
        return stand_in_document(node, "RF-RESULTS-WRONG-NODE",
                                 f"{path.name!a} was fetched from node {node} but names node {ascii(host)[:80]}; "
                                 "it counts for neither")
    return doc


def conflict(doc: dict[str, Any], first: Path, second: Path) -> None:
    """The node of `doc` (read from `first`) is claimed again by `second`: it fails, incomplete."""
    host = doc["host"]
    doc["checks"].append(stand_in_document(host, "RF-RESULTS-CONFLICT", f"{second.name!a} also claims to be "
                                           f"node {host}, beside {first.name!a}; the node's results cannot be "
                                           "trusted")["checks"][0] | {"id": "results_conflict",
                                                                      "name": "results_conflict"})
    doc["complete"] = False


def expire(doc: dict[str, Any], now: dt.datetime) -> None:
    """A complete run read after its `valid_until` no longer vouches for its node: one error check says since
    when, so no report shows the old verdict as the node's current one (validation/validity.py)."""
    since = validity.expired_since(doc, now)
    if since is None or any(c.get("code") == "RF-VALIDATION-EXPIRED" for c in doc["checks"]):
        return
    age = now - since
    doc["checks"].append({"id": "validation_current", "name": "validation_current", "tier": None, "needs_gpu": False,
                          "status": "error", "code": "RF-VALIDATION-EXPIRED",
                          "message": f"this run (tier {doc.get('tier')}, finished {doc.get('finished_at')}) vouched "
                          f"for the node until {doc['valid_until']}; that was {_age(age)} ago",
                          "hint": CODES["RF-VALIDATION-EXPIRED"], "duration_s": 0.0})


def _age(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} h"


def stand_in_document(host: str, code: str, message: str) -> dict[str, Any]:
    """A failing document for a node whose results could not be used: the failure is named in every format."""
    return {"schema_version": 1, "host": host, "tier": None, "started_at": None, "finished_at": None,
            "complete": False, "missing": True, "provenance": {}, "measurements": [],
            "checks": [{"id": "results_delivered", "name": "results_delivered", "tier": None, "needs_gpu": False,
                        "status": "error", "code": code, "message": message, "hint": CODES[code],
                        "duration_s": 0.0}]}


MISSING = {  # why a targeted node has no document -> (code, what was seen)
    "unreachable": ("RF-NODE-UNREACHABLE", "the node stopped answering over SSH during the run; no results came back"),
    "no-results": ("RF-NODE-NO-RESULTS", "the node was targeted but delivered no results document"),
}


def with_missing(nodes: list[dict[str, Any]], expected: list[str], unreachable: list[str],
                 reasons: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Add a failing stand-in document for every expected node that delivered none, so a node
    that vanished is a named failure in every report format instead of a silent gap. `reasons`: what
    the run saw of such a node (the step that failed, its message), said with its failure."""
    present = {n["host"] for n in nodes}
    stand_ins = []
    for host in dict.fromkeys([*expected, *unreachable]):
        names.check_node(host, "an expected node's name")
        if host in present:
            continue
        code, message = MISSING["unreachable" if host in unreachable else "no-results"]
        if reasons and reasons.get(host):
            message = f"{message}: {reasons[host]}"
        stand_ins.append(stand_in_document(host, code, message))
    return sorted([*nodes, *stand_ins], key=lambda n: n["host"])


def node_status(node: dict[str, Any]) -> str:
    """The worst check status of a node; 'incomplete' runs are flagged as such by the caller."""
    order = ["error", "timeout", "fail", "warn", "pass", "skip"]
    statuses = [c["status"] for c in node["checks"]] or ["error"]
    return min(statuses, key=order.index)
