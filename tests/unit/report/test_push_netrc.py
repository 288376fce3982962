"""`--push` over plain http never carries ~/.netrc's credentials, even with --push-allow-http: requests adds the
netrc entry for the host to any request that has no auth of its own, and the permission is for the credentials
the operator gave (a token, the URL's user info), not for whatever a netrc holds. A real HTTP server on
127.0.0.1 and a HOME whose .netrc has an entry for 127.0.0.1."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from validation import push
from validation.cli import main

NETRC_PASSWORD = "netrc-pw-51d0"
URL_PASSWORD = "url-pw-9e3c"
TOKEN = "tok-2b7a"
PAYLOAD = {"schema_version": 1, "nodes": 0, "failed": False, "metrics": []}


@pytest.fixture
def received() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """The server's URL and the headers of every request it got."""
    got: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            got.append(dict(self.headers))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ingest", got
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def home_with_netrc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text(f"machine 127.0.0.1 login netrc-bot password {NETRC_PASSWORD}\n")
    (home / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC", raising=False)
    monkeypatch.delenv("ROCM_FLEET_PUSH_TOKEN", raising=False)
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)        # 127.0.0.1 directly, whatever this machine's proxy
    return home


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("allow_http", [False, True], ids=["refusing-http", "push-allow-http"])
def test_no_netrc_credentials_over_plain_http(received, allow_http: bool) -> None:
    url, got = received
    assert push.push_json(url, PAYLOAD, timeout_s=5, retries=0, allow_http=allow_http).status_code == 200
    assert "Authorization" not in got[-1], got[-1]


def test_the_url_s_user_info_is_sent_and_not_the_netrc_s(received) -> None:
    url, got = received
    push.push_json(url.replace("http://", f"http://bot:{URL_PASSWORD}@"), PAYLOAD, timeout_s=5, retries=0,
                   allow_http=True)
    assert got[-1]["Authorization"] == basic("bot", URL_PASSWORD)


def test_a_token_is_sent_and_not_the_netrc_s(received) -> None:
    url, got = received
    push.push_json(url, PAYLOAD, token=TOKEN, timeout_s=5, retries=0, allow_http=True)
    assert got[-1]["Authorization"] == f"Bearer {TOKEN}"


def test_report_push_allow_http_without_a_token_sends_no_netrc_credentials(
        received, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, got = received
    run = tmp_path / "run"
    run.mkdir()
    (run / "n1.json").write_text(json.dumps({
        "schema_version": 1, "host": "n1", "complete": True,
        "checks": [{"id": "test_x.py::test_y", "status": "pass", "code": None, "message": "", "hint": None}],
        "measurements": []}))
    rc = main(["report", str(run), "--json", "--push", url, "--push-allow-http", "--push-retries", "0"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out)["push"]["status_code"] == 200
    assert len(got) == 1 and "Authorization" not in got[0], got
    assert NETRC_PASSWORD not in out + err
