"""Fleet aggregation at scale (issue 20): the compiled schema check, the one-pass report (numbers
kept as columns, Prometheus lines spooled to a file, documents kept without their measurement
entries), its split over processes and its forked writers. Every test here holds the fast path to
the slow one it replaces: the same verdicts, the same report bytes, the same first error.

The documents are hand-made in the real schema with round numbers: they test bookkeeping, not
hardware. The real-run contract stays with test_fleet.py, test_peers.py and
test_fleet_loading_strict.py, which run through the same code.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from validation import fleet, peers
from validation.cli import main
from validation.report import fleet_text, forked, gather, load_run, render_html
from validation.report.load import SCHEMA_FILE, with_missing
from validation.report.schema_check import UnsupportedSchemaError, compile_schema
from validation.results import catalog

SCHEMA = json.loads(SCHEMA_FILE.read_text())
REFERENCE = Draft202012Validator(SCHEMA)
CHECK = compile_schema(SCHEMA)
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))


def entry(metric: str, subject: str, value: Any, unit: str | None = "GB/s", **more: Any) -> dict[str, Any]:
    return {"metric": metric, "subject": subject, "value": value, "unit": unit, "higher_is_better": True,
            "status": "pass", **more}


def node(host: str, entries: list[dict[str, Any]], *, sku: str = "mi300x", status: str = "pass") -> dict[str, Any]:
    return {"schema_version": 1, "host": host, "tier": "quick", "started_at": "2026-12-03T08:00:00+00:00",
            "finished_at": "2026-12-03T08:10:00+00:00", "complete": True, "command": ["pytest"],
            "provenance": {"declared_sku": sku},
            "checks": [{"id": f"test_x.py::test_y[ansible://{host}-gpu0]", "name": "test_y", "tier": "quick",
                        "needs_gpu": True, "status": status, "code": None, "message": "", "hint": None,
                        "duration_s": 0.1}],
            "measurements": entries}


def eight_gpus(host: str, hbm: float = 4000.0, *, slow: str | None = None) -> dict[str, Any]:
    entries = [entry("hbm_triad_gb_s", f"gpu{g}", hbm * (0.7 if f"gpu{g}" == slow else 1.0) + g)
               for g in range(8)]
    entries.append(entry("gpu_temp_c", "gpu0", 41.0, "C"))                   # no family: summary only
    entries.append(entry("rccl_allreduce_busbw_gb_s", "node", 320.0 + len(host)))  # node level: batch only
    return node(host, entries)


def tricky_fleet() -> list[tuple[str, dict[str, Any]]]:
    """(file name, document) for a fleet whose files do not sort like its hosts (a file is named after its
    node, `<node>.json`, and "node00-x.json" sorts before "node00.json"), with a slow GPU, a node of another
    SKU, a busy member, an invalid one, a metric measured twice, a unit left out, a null value and a document
    whose unit differs from its peers'."""
    docs = [eight_gpus(f"node{i:02d}", slow="gpu3" if i == 7 else None) for i in range(12)]
    docs[2]["measurements"][1]["measured_while_busy"] = True
    docs[3]["measurements"][2].update(valid=False, invalid_reason="throttled")
    docs[4]["measurements"].append({**docs[4]["measurements"][0], "value": 3000.0})     # measured twice: last wins
    docs[5]["measurements"][3].pop("unit")
    docs[6]["measurements"].insert(0, entry("hbm_triad_gb_s", "gpu9", None))
    docs[8]["measurements"][0]["unit"] = "MB/s"
    docs[9]["measurements"][4]["spread_pct"] = 1.5
    docs[10]["provenance"]["declared_sku"] = "mi325x"
    docs[11]["host"] = "a-first"
    for i in (1, 5, 9):
        docs[i]["host"] = f"node{i - 1:02d}-x"
    names = [f"{d['host']}.json" for d in docs]
    return list(zip(names, docs, strict=True))


def write_fleet(directory: Path, fleet_docs: list[tuple[str, dict[str, Any]]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, doc in fleet_docs:
        (directory / name).write_text(json.dumps(doc, indent=2))
    return directory


def in_memory_report(results: Path, expect: list[str]) -> dict[str, str]:
    """The report files made the plain way: every document held whole, every function on the list."""
    nodes = with_missing(load_run(results), expect, [])
    verdicts = peers.judge_batch(nodes)
    summaries = fleet.summarize(nodes, verdicts=verdicts)
    nodes = fleet.with_batch_checks(nodes, verdicts=verdicts)
    return {"fleet.md": fleet_text.markdown(nodes, summaries), "fleet.prom": fleet_text.prometheus(nodes),
            "fleet-junit.xml": fleet_text.junit(nodes),
            "fleet.html": render_html(nodes, title=f"rocm-fleet fleet report ({len(nodes)} nodes)")}


def report_files(results: Path, out: Path, *extra: str) -> dict[str, str]:
    assert main(["report", str(results), "--out", str(out), "--json", *extra]) in (0, 1)
    return {p.name: p.read_text() for p in sorted(out.iterdir())}


# --- the compiled schema check ------------------------------------------------------------------

JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, -0.0, 1e300]),
                 st.sampled_from(["", "x", "pass", "fail", "gpu0"]), st.lists(st.integers(0, 2), max_size=2),
                 st.dictionaries(st.sampled_from(["id", "status", "metric", "value"]), st.integers(0, 1), max_size=2))


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A valid document with one to four values replaced by junk of another JSON type, or removed."""
    doc = copy.deepcopy(eight_gpus("n1"))
    doc["measurements"][0].update(valid=True, measured_while_busy=False, spread_pct=1, samples=[1, 2])
    doc["checks"][0]["verdicts"] = [{"metric": "x"}]
    def first(key: str, at: int) -> Any:
        items = doc.get(key)
        return items[at] if isinstance(items, list) and items else None

    for _ in range(draw(st.integers(1, 4))):
        place = draw(st.sampled_from(["top", "check", "measurement", "provenance", "measurement-late"]))
        target = {"top": doc, "check": first("checks", 0), "measurement": first("measurements", 0),
                  "measurement-late": first("measurements", -1), "provenance": doc.get("provenance")}[place]
        if not isinstance(target, dict) or not target:
            continue
        key = draw(st.sampled_from(sorted(target)))
        if draw(st.booleans()):
            target[key] = draw(JUNK)
        else:
            del target[key]
    return doc


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_the_compiled_check_accepts_exactly_what_jsonschema_accepts(doc: dict[str, Any]) -> None:
    assert CHECK(doc) is REFERENCE.is_valid(doc), list(REFERENCE.iter_errors(doc))[:1]


@pytest.mark.parametrize(("value", "schema", "valid"), [
    (1.0, {"const": 1}, True), (True, {"const": 1}, False), (1, {"enum": [True]}, False),
    (2.0, {"type": "integer"}, True), (2.5, {"type": "integer"}, False), (True, {"type": "number"}, False),
    ("", {"type": "string", "minLength": 1}, False), ("é", {"minLength": 1}, True), (5, {"minLength": 1}, True),
    ([{"a": 1}, {"a": "x"}], {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
     False),
    ([{"b": 1}], {"type": "array", "items": {"type": "object", "required": ["a"]}}, False),
    ({"a": None}, {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}, True),
])
def test_the_compiled_check_reads_types_as_jsonschema_does(value: Any, schema: dict[str, Any], valid: bool) -> None:
    assert Draft202012Validator(schema).is_valid(value) is valid        # the reference, first
    assert compile_schema(schema)(value) is valid


def test_a_schema_keyword_the_compiled_check_does_not_know_is_refused_by_name() -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["$defs"]["measurement"]["properties"]["metric"]["pattern"] = "^[a-z_]+$"
    with pytest.raises(UnsupportedSchemaError, match=r"properties/metric: keyword\(s\) pattern are not implemented"):
        compile_schema(schema)


def test_a_refused_document_is_still_named_by_jsonschema(tmp_path: Path) -> None:
    doc = eight_gpus("n1")
    doc["measurements"][5]["value"] = "fast"
    (tmp_path / "n1.json").write_text(json.dumps(doc))
    with pytest.raises(Exception, match=r"n1\.json: measurements\[5\]\.value: 'fast' is not of type 'number', 'null'"):
        load_run(tmp_path)


# --- the one-pass report --------------------------------------------------------------------------

def test_the_report_writes_what_the_documents_held_in_memory_give(tmp_path: Path) -> None:
    results = write_fleet(tmp_path / "run", tricky_fleet())
    expect = ["ghost", "node03"]
    assert main(["report", str(results), "--out", str(tmp_path / "rc"), "--json"]) == 1   # node07 fails its batch
    assert report_files(results, tmp_path / "out", "--expect", *expect) == in_memory_report(results, expect)
    assert "node07/gpu3" in (tmp_path / "out" / "fleet.md").read_text()     # the planted slow GPU is named


def test_past_the_per_node_tables_the_report_still_writes_what_memory_gives(tmp_path: Path) -> None:
    docs = [(f"n{i:03d}.json", eight_gpus(f"n{i:03d}", slow="gpu5" if i == 40 else None)) for i in range(70)]
    docs[3][1]["measurements"].append(entry("resnet50_images_s", "gpu0", 100.0, "images/s",
                                            scaling={"workload": "resnet50", "n_gpus": 1, "kind": "solo"}))
    results = write_fleet(tmp_path / "run", docs)
    assert report_files(results, tmp_path / "out") == in_memory_report(results, [])
    assert "n040/gpu5" in (tmp_path / "out" / "fleet.md").read_text()


def test_the_terminal_keeps_scaling_tables_past_the_per_node_tables(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    docs = [(f"n{i:03d}.json", eight_gpus(f"n{i:03d}")) for i in range(70)]
    docs[3][1]["measurements"].append(entry("resnet50_images_s", "gpu0", 100.0, "images/s",
                                            scaling={"workload": "resnet50", "n_gpus": 1, "kind": "solo"}))
    main(["report", str(write_fleet(tmp_path / "run", docs)), "--out", str(tmp_path / "out")])
    assert "scaling n003 resnet50 (images/s per GPU)" in capsys.readouterr().out


def test_per_node_tables_stop_past_the_detail_limit() -> None:
    docs = [eight_gpus(f"n{i:03d}") for i in range(65)]
    assert "Measurements per GPU: n000" in render_html(docs[:64], title="t")
    assert "Measurements per GPU" not in render_html(docs, title="t")


@pytest.mark.parametrize("jobs", [2, 3])
def test_reading_in_several_processes_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      jobs: int) -> None:
    monkeypatch.setattr(gather, "PARALLEL_MIN_FILES", 4)
    results = write_fleet(tmp_path / "run", tricky_fleet() + [
        (f"m{i:03d}.json", eight_gpus(f"m{i:03d}")) for i in range(60)])
    one = report_files(results, tmp_path / "one", "--jobs", "1")
    assert report_files(results, tmp_path / "many", "--jobs", str(jobs)) == one
    with gather.gather(results, jobs=jobs) as read:
        assert read.jobs == jobs


def test_a_parallel_read_of_few_documents_keeps_their_measurement_tables(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Mostly progress files: the parts keep no entries, so the few documents are read again whole."""
    monkeypatch.setattr(gather, "PARALLEL_MIN_FILES", 4)
    docs = [(f"n{i}.json", eight_gpus(f"n{i}")) for i in range(5)]
    progress = [(f"progress-n{i}.json", {"kind": "rocm-fleet-progress", "schema_version": 1, "node": f"n{i}"})
                for i in range(5)]
    results = write_fleet(tmp_path / "run", docs + progress)
    assert report_files(results, tmp_path / "many", "--jobs", "2") == in_memory_report(results, [])
    assert "Measurements per GPU: n4" in (tmp_path / "many" / "fleet.html").read_text()


@pytest.mark.parametrize("jobs", [1, 3])
def test_the_first_bad_document_in_file_order_is_the_error_whatever_the_split(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], jobs: int) -> None:
    monkeypatch.setattr(gather, "PARALLEL_MIN_FILES", 4)
    docs = [(f"n{i:02d}.json", eight_gpus(f"n{i:02d}")) for i in range(12)]
    docs[9][1]["checks"][0]["status"] = "mostly"          # in the last part
    docs[5][1]["host"] = "n01"                            # n05's file names n01, in the middle part
    results = write_fleet(tmp_path / "run", docs)
    (results / "n09.json").write_text(json.dumps(eight_gpus("n09")))
    assert main(["report", str(results), "--out", str(tmp_path / "out"), "--jobs", str(jobs)]) == 1
    fleet = (tmp_path / "out" / "fleet.md").read_text()   # n05's named failure, whatever the split; n01 stays n01's
    assert "12 nodes." in fleet and "| n05 | results_delivered | RF-RESULTS-WRONG-NODE | 'n05.json' was fetched " \
        "from node n05 but names node 'n01'" in fleet and "| n01 | pass | 2 | yes |" in fleet
    assert (tmp_path / "out" / "fleet.prom").is_file() and (tmp_path / "out" / "fleet-junit.xml").is_file()
    shutil.rmtree(tmp_path / "out")
    (results / "n05.json").write_text(json.dumps(eight_gpus("n05")))
    docs[9][1]["checks"][0]["status"] = "mostly"
    (results / "n09.json").write_text(json.dumps(docs[9][1]))
    assert main(["report", str(results), "--out", str(tmp_path / "out"), "--jobs", str(jobs)]) == 2
    assert re.search(r"n09\.json: checks\[0\]\.status: 'mostly' is not one of", capsys.readouterr().err)
    assert not (tmp_path / "out").exists()                 # nothing written on a refused run


def test_batches_joined_are_the_batch_of_all_documents() -> None:
    """As the report joins them: the second batch comes from another process, through pickle."""
    docs = [d for _, d in tricky_fleet()]
    first, second = peers.Batch.of(docs[:5]), pickle.loads(pickle.dumps(peers.Batch.of(docs[5:])))  # noqa: S301 (our own bytes)
    first.extend(second)
    whole = peers.Batch.of(docs)
    assert first.judge() == whole.judge() == peers.judge_batch(docs)
    assert list(first.values()) == list(whole.values())


def test_members_are_listed_in_the_order_given_not_the_order_read() -> None:
    """The report lists nodes by host; the outliers it names must come in that order too."""
    docs = [eight_gpus(f"n{i}", hbm=4000.0, slow="gpu1" if i in (2, 6) else None) for i in range(8)]
    batch = peers.Batch.of(list(reversed(docs)))
    order = [d["host"] for d in docs]
    failing = [(v.node, v.subject) for v in batch.judge(order=order) if v.status.name == "FAIL"]
    assert failing == [("n2", "gpu1"), ("n6", "gpu1")]
    assert [(v.node, v.subject) for v in batch.judge() if v.status.name == "FAIL"] == [("n6", "gpu1"), ("n2", "gpu1")]


def test_labels_that_cannot_be_cache_keys_are_still_placed_and_rendered() -> None:
    """Not from a JSON document (a list is no unit), but a library caller may pass anything."""
    docs = [eight_gpus(f"n{i}") for i in range(5)]
    docs[0]["measurements"][0]["unit"] = ["GB", "s"]
    peers.Batch.of(docs).judge()
    assert "unit=\"['GB', 's']\"} 4000.0" in fleet_text.measurement_lines("n0", docs[0]["measurements"])


def test_the_spool_writes_the_prometheus_text_of_the_nodes_in_their_order(tmp_path: Path) -> None:
    docs = [eight_gpus("b"), eight_gpus("a"), node("c", [])]
    with fleet_text.MeasurementSpool(tmp_path / "spool") as spool:
        for doc in docs[:2]:
            spool.add(doc)
    nodes = sorted(docs, key=lambda d: d["host"])             # "c" was never spooled: a stand-in
    spool.write(tmp_path / "fleet.prom", nodes)
    assert (tmp_path / "fleet.prom").read_text() == fleet_text.prometheus(nodes)


# --- forked writers -------------------------------------------------------------------------------

def test_forked_writers_all_write(tmp_path: Path) -> None:
    writers = [lambda i=i: (tmp_path / f"f{i}").write_text(str(i)) for i in range(4)]
    forked.run_all(writers, jobs=3)
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["0", "1", "2", "3"]


def test_a_writer_that_fails_in_its_forked_process_fails_the_run(tmp_path: Path) -> None:
    def broken() -> None:
        raise ValueError("the disk said no")

    with pytest.raises(forked.WriterFailedError, match="ValueError: the disk said no"):
        forked.run_all([broken, lambda: (tmp_path / "here").write_text("x")], jobs=2)
    assert (tmp_path / "here").read_text() == "x"          # this process's writer still ran


# --- check keys for thousands of hosts -------------------------------------------------------------

def _check_key_by_regex(check_id: str, host: str) -> str:
    """The previous check_key: one regex per host (a compile per check once hosts outnumber re's cache)."""
    head, sep, params = check_id.partition("[")
    if not sep or not params.endswith("]"):
        return check_id
    params = params[:-1]
    match = re.match(rf"^{catalog._HOST_ID}(?:{re.escape(host)}|local)(?::\d+)?(?:-|$)", params)
    if match:
        params = params[match.end():]
    return f"{head}[{params}]" if params else head


ID_TEXT = st.text(alphabet="abl1:/@-.]+[ocsx", max_size=14)


@settings(max_examples=EXAMPLES * 10, deadline=None, database=None)
@given(ID_TEXT, st.text(alphabet="abl1:/@-.ocsx", max_size=4))
def test_check_keys_are_those_of_the_per_host_regex(params: str, host: str) -> None:
    check_id = f"test_f.py::test_t[{params}]"
    assert catalog.check_key(check_id, host) == _check_key_by_regex(check_id, host)


@pytest.mark.parametrize(("check_id", "host", "key"), [
    ("f.py::t[ansible://n1-enabled]", "n1", "f.py::t[enabled]"),
    ("f.py::t[ssh://root@n1:22-gpu3]", "n1", "f.py::t[gpu3]"),
    ("f.py::t[local]", "n1", "f.py::t"),
    ("f.py::t[n10-gpu0]", "n1", "f.py::t[n10-gpu0]"),
    ("f.py::t[ssh://u@n1-x]", "u@n1", "f.py::t[x]"),          # re backtracks to the backend without user@
    ("f.py::t[ssh://n1-x]", "ssh://n1", "f.py::t[x]"),        # and to no backend at all
])
def test_check_keys_drop_the_hosts_own_parameter(check_id: str, host: str, key: str) -> None:
    assert catalog.check_key(check_id, host) == key
