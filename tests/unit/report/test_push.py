"""Pushing the run summary to an HTTP endpoint, against a real HTTP server on 127.0.0.1:
success, retry on 503, no retry on a permanent 4xx, bounded timeouts, and no secret in any output."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from validation import push
from validation.cli import main
from validation.errors import RocmFleetError

TOKEN = "s3cr3t-T0KEN-8d1f"
QUERY_SECRET = "apikey-77c2e"
PASSWORD = "pw-4a9b"


@dataclass
class Endpoint:
    """What the server answers, in order ("sleep" = answer only after 3 s), and what it received."""
    url: str
    script: list[int | str] = field(default_factory=list)
    received: list[dict] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
            action = state.script.pop(0) if state.script else 200
            if action == "sleep":
                time.sleep(3)
                action = 200
            try:
                self.send_response(int(action))
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:       # the client gave up (timeout test)
                pass

        def log_message(self, format: str, *args: object) -> None:   # keep the server off stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/ingest"
    yield state
    server.shutdown()
    server.server_close()


PAYLOAD = {"schema_version": 1, "nodes": 2, "failed": False, "metrics": []}


def test_summary_is_posted_as_json_with_the_bearer_token(endpoint: Endpoint) -> None:
    result = push.push_json(endpoint.url, PAYLOAD, token=TOKEN, timeout_s=5, allow_http=True)
    assert (result.status_code, result.attempts, result.url) == (200, 1, endpoint.url)
    (got,) = endpoint.received
    assert got["path"] == "/ingest"
    assert got["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert got["headers"]["Content-Type"] == "application/json"
    assert json.loads(got["body"]) == PAYLOAD


def test_503_is_retried_with_doubling_backoff_until_200(endpoint: Endpoint) -> None:
    endpoint.script = [503, 503, 200]
    waits: list[float] = []
    result = push.push_json(endpoint.url, PAYLOAD, timeout_s=5, retries=3, backoff_s=0.5, sleep=waits.append)
    assert (result.status_code, result.attempts) == (200, 3)
    assert waits == [0.5, 1.0]
    assert len(endpoint.received) == 3


def test_5xx_retries_are_bounded(endpoint: Endpoint) -> None:
    endpoint.script = [502, 502, 502, 502, 502]
    with pytest.raises(RocmFleetError, match=r"failed after 3 attempt\(s\): HTTP 502"):
        push.push_json(endpoint.url, PAYLOAD, timeout_s=5, retries=2, sleep=lambda _: None)
    assert len(endpoint.received) == 3


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_permanent_4xx_is_not_retried(endpoint: Endpoint, status: int) -> None:
    endpoint.script = [status, 200]
    with pytest.raises(RocmFleetError, match=f"refused: HTTP {status}"):
        push.push_json(endpoint.url, PAYLOAD, timeout_s=5, retries=3, sleep=lambda _: None)
    assert len(endpoint.received) == 1


def test_a_server_that_never_answers_costs_at_most_attempts_times_timeout(endpoint: Endpoint) -> None:
    endpoint.script = ["sleep", "sleep"]
    started = time.monotonic()
    with pytest.raises(RocmFleetError, match=r"after 2 attempt\(s\): no answer within 0.3 s"):
        push.push_json(endpoint.url, PAYLOAD, timeout_s=0.3, retries=1, backoff_s=0.05)
    assert time.monotonic() - started < 1.5          # 2 x 0.3 s + 0.05 s, far below the 3 s the server sleeps
    assert len(endpoint.received) == 2


def test_a_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as s:          # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    waits: list[float] = []
    with pytest.raises(RocmFleetError, match=r"after 3 attempt\(s\): connection failed"):
        push.push_json(f"http://127.0.0.1:{port}/ingest", PAYLOAD, timeout_s=2, retries=2, backoff_s=0.01,
                       sleep=waits.append)
    assert waits == [0.01, 0.02]


def test_redacted_urls_keep_scheme_host_port_and_path_only() -> None:
    assert push.redact_url(f"https://bot:{PASSWORD}@metrics.example:8443/api/v1/runs?key={QUERY_SECRET}#frag") == \
        "https://metrics.example:8443/api/v1/runs"
    assert push.redact_url("http://[::1]:9000/x?y=1") == "http://[::1]:9000/x"
    assert push.redact_url("https://example.org/ingest") == "https://example.org/ingest"


def test_token_comes_from_a_file_first_line_or_the_environment(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"  {TOKEN}\nsecond line ignored\n")
    token_file.chmod(0o600)
    assert push.read_token(file=token_file, environ={"ROCM_FLEET_PUSH_TOKEN": "other"}) == TOKEN
    assert push.read_token(environ={"ROCM_FLEET_PUSH_TOKEN": f"{TOKEN}\n"}) == TOKEN
    assert push.read_token(env_var="MY_TOKEN", environ={"MY_TOKEN": "abc"}) == "abc"
    assert push.read_token(environ={}) is None


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "empty").chmod(0o600)
    with pytest.raises(RocmFleetError, match="is empty"):
        push.read_token(file=tmp_path / "empty")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604], ids=["0644", "0640", "0604"])
def test_a_token_file_that_others_may_read_is_refused_without_showing_the_token(tmp_path: Path, mode: int) -> None:
    (tmp_path / "open").write_text(TOKEN)
    (tmp_path / "open").chmod(mode)
    with pytest.raises(RocmFleetError, match=f"readable by other users \\(mode {mode:04o}\\); chmod 0600") as caught:
        push.read_token(file=tmp_path / "open")
    assert TOKEN not in str(caught.value)


def test_a_token_over_plain_http_is_refused_and_nothing_is_sent(endpoint: Endpoint) -> None:
    with pytest.raises(RocmFleetError, match="would send the bearer token in clear over plain http") as caught:
        push.push_json(endpoint.url, PAYLOAD, token=TOKEN, timeout_s=5)
    assert endpoint.received == [] and TOKEN not in str(caught.value)


def test_url_user_info_over_plain_http_is_refused_and_nothing_is_sent(endpoint: Endpoint) -> None:
    with pytest.raises(RocmFleetError, match="would send the URL's user info in clear") as caught:
        push.push_json(secret_url(endpoint), PAYLOAD, timeout_s=5)
    assert endpoint.received == [] and PASSWORD not in str(caught.value)


def test_plain_http_without_a_credential_needs_no_permission(endpoint: Endpoint) -> None:
    assert push.push_json(endpoint.url, PAYLOAD, timeout_s=5).status_code == 200
    assert "Authorization" not in endpoint.received[0]["headers"]


def test_plain_http_never_carries_netrc_credentials(endpoint: Endpoint, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """requests reads ~/.netrc for a request without auth (trust_env): over plain http those credentials
    are never sent, --push-allow-http or not (issue 39; tests/unit/report/test_push_netrc.py)."""
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login bot password {PASSWORD}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    push.push_json(endpoint.url, PAYLOAD, timeout_s=5)
    assert "Authorization" not in endpoint.received[-1]["headers"]
    push.push_json(endpoint.url, PAYLOAD, timeout_s=5, allow_http=True)      # a trusted network: still no netrc
    assert "Authorization" not in endpoint.received[-1]["headers"]


def results_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for host, value in (("n1", 600.0), ("n2", 590.0)):
        (run / f"{host}.json").write_text(json.dumps({
            "schema_version": 1, "host": host, "complete": True,
            "checks": [{"id": "test_x.py::test_y", "status": "pass", "code": None, "message": "", "hint": None}],
            "measurements": [{"metric": "gemm_bf16_tflops", "subject": "gpu0", "value": value, "unit": "TFLOPS",
                              "higher_is_better": True}]}))
    return run


def secret_url(endpoint: Endpoint) -> str:
    return endpoint.url.replace("http://", f"http://bot:{PASSWORD}@") + f"?key={QUERY_SECRET}"


def test_report_push_sends_the_fleet_summary_and_leaks_no_secret(
        endpoint: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("ROCM_FLEET_PUSH_TOKEN", TOKEN)
    endpoint.script = [503, 200]
    rc = main(["--debug", "report", str(results_dir(tmp_path)), "--json", "--push", secret_url(endpoint),
               "--push-allow-http", "--push-retries", "2", "--push-timeout", "5"])
    out, err = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out)
    assert doc["push"]["url"] == endpoint.url and doc["push"]["attempts"] == 2
    sent = json.loads(endpoint.received[-1]["body"])
    assert sent["node_count"] == 2 and sent["failed"] is False and sent["verdict"] == "pass"
    (metric,) = sent["metrics"]
    assert (metric["metric"], metric["minimum"], metric["maximum"]) == ("gemm_bf16_tflops", 590.0, 600.0)
    assert endpoint.received[-1]["headers"]["Authorization"] == f"Bearer {TOKEN}"   # not the URL's basic auth
    assert endpoint.received[-1]["path"] == f"/ingest?key={QUERY_SECRET}"         # the query is sent as given
    assert "POST /ingest" in caplog.text and "retrying" in caplog.text           # the traffic is logged ...
    for secret in (TOKEN, QUERY_SECRET, PASSWORD):                                # ... without any secret
        assert secret not in caplog.text and secret not in out and secret not in err


def test_failed_push_exits_2_after_writing_the_report_and_names_no_secret(
        endpoint: Endpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    endpoint.script = [401]
    run = results_dir(tmp_path)
    rc = main(["--debug", "report", str(run), "--push", secret_url(endpoint), "--push-token-file", str(token_file),
               "--push-allow-http"])
    out, err = capsys.readouterr()
    assert rc == 2 and (run / "fleet.md").is_file()
    assert f"push to {endpoint.url} refused: HTTP 401" in err
    for secret in (TOKEN, QUERY_SECRET, PASSWORD):
        assert secret not in caplog.text and secret not in out and secret not in err


def test_a_token_file_without_push_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(results_dir(tmp_path)), "--push-token-file", str(tmp_path / "token")]) == 2
    assert "only used with --push" in capsys.readouterr().err


def test_report_push_of_a_token_to_plain_http_exits_2_and_sends_nothing(
        endpoint: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ROCM_FLEET_PUSH_TOKEN", TOKEN)
    run = results_dir(tmp_path)
    rc = main(["report", str(run), "--push", endpoint.url])
    out, err = capsys.readouterr()
    assert rc == 2 and (run / "fleet.md").is_file()
    assert f"push to {endpoint.url} would send the bearer token in clear over plain http" in err
    assert "--push-allow-http" in err
    assert endpoint.received == [] and TOKEN not in out + err


def test_report_push_refuses_a_token_file_others_can_read(
        endpoint: Endpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o644)
    rc = main(["report", str(results_dir(tmp_path)), "--push", endpoint.url, "--push-token-file", str(token_file),
               "--push-allow-http"])
    err = capsys.readouterr().err
    assert rc == 2 and "is readable by other users (mode 0644); chmod 0600" in err
    assert endpoint.received == []
