"""Push a run summary to an HTTP endpoint: bounded retries with backoff, a timeout on every request,
an optional bearer token, and no secrets in logs or error messages.

The token comes from an environment variable or a file, never from the command line; a token file that
others may read is refused, and so is a credential (the token, or user info in the URL) bound for a
plain http:// URL unless the caller allows it explicitly (`allow_http`, `--push-allow-http`); over plain
http nothing from ~/.netrc is ever sent, allowed or not (`_auth`). Every URL
that is logged or put in an error is `redact_url`'s form (no user info, no query, no fragment),
and urllib3/requests log records emitted during the push are scrubbed of the token, the user info
and the query string, so `--debug` shows the traffic without the secrets.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from validation.errors import RocmFleetError

log = logging.getLogger(__name__)

DEFAULT_TOKEN_ENV = "ROCM_FLEET_PUSH_TOKEN"
# HTTP statuses worth another attempt: the server is overloaded, restarting or rate-limiting.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Loggers that may write the request line (with the query string) while a push runs.
_TRANSPORT_LOGGERS = ("urllib3.connectionpool", "urllib3.connection", "urllib3.util.retry", "urllib3", "requests")


@dataclass(frozen=True, slots=True, kw_only=True)
class PushResult:
    url: str                 # redacted
    status_code: int
    attempts: int
    seconds: float


def redact_url(url: str) -> str:
    """'https://user:pw@host:8443/ingest?key=abc#x' -> 'https://host:8443/ingest'."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:                               # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def read_token(*, env_var: str | None = DEFAULT_TOKEN_ENV, file: Path | None = None,
               environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token from `file` (first line) or else from the environment variable; None when neither."""
    if file is not None:
        try:
            mode = file.stat().st_mode
            text = file.read_text()
        except OSError as exc:
            raise RocmFleetError(f"cannot read the push token file {file}: {exc.strerror}; "
                                 "create it with the token on its first line (mode 0600)") from exc
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            raise RocmFleetError(f"push token file {file} is readable by other users (mode "
                                 f"{stat.S_IMODE(mode):04o}); chmod 0600 {file} and, since others could read it, "
                                 "replace the token")
        token = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not token:
            raise RocmFleetError(f"push token file {file} is empty; put the token on its first line")
        return token
    value = (os.environ if environ is None else environ).get(env_var or "", "").strip()
    return value or None


class _NoAuth(requests.auth.AuthBase):
    """No credentials, and none looked up (an auth object stops requests reading ~/.netrc or the URL)."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers.pop("Authorization", None)
        return request


class _BearerAuth(requests.auth.AuthBase):
    """Sets the Authorization header; given explicitly, it also keeps requests from using URL user info."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request


class _Scrub(logging.Filter):
    def __init__(self, secrets: tuple[str, ...]) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(s in message for s in self._secrets):
            for secret in self._secrets:
                message = message.replace(secret, "[redacted]")
            record.msg, record.args = message, ()
        return True


def _secrets_of(url: str, token: str | None) -> tuple[str, ...]:
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    found = [token or "", userinfo, parts.query, parts.fragment]
    if parts.password:
        found.append(parts.password)
    return tuple(sorted((s for s in found if s), key=len, reverse=True))   # longest first


@contextmanager
def _scrubbed_transport_logs(secrets: tuple[str, ...]) -> Iterator[None]:
    scrub = _Scrub(secrets)
    loggers = [logging.getLogger(name) for name in _TRANSPORT_LOGGERS]
    for logger in loggers:
        logger.addFilter(scrub)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(scrub)


def push_json(url: str, payload: Mapping[str, Any], *, token: str | None = None, timeout_s: float = 10.0,
              retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0, allow_http: bool = False,
              sleep: Callable[[float], None] = time.sleep, session: requests.Session | None = None) -> PushResult:
    """POST `payload` as JSON; retry connection errors, timeouts and 429/5xx up to `retries` times,
    waiting backoff_s, 2*backoff_s, ... (capped) in between. Other statuses >= 300 fail at once.
    A token or URL user info goes over plain http only with allow_http; nothing is sent otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise RocmFleetError(f"push URL {redact_url(url)!r} is not http(s); give a URL like https://host/ingest")
    if retries < 0 or timeout_s <= 0:
        raise RocmFleetError("push needs retries >= 0 and a timeout > 0 seconds")
    shown = redact_url(url)
    if parts.scheme == "http" and (token or "@" in parts.netloc) and not allow_http:
        what = "the bearer token" if token else "the URL's user info"
        raise RocmFleetError(f"push to {shown} would send {what} in clear over plain http; use an https:// URL, "
                             "or pass --push-allow-http if the endpoint is on a network you trust end to end")
    auth = _auth(url, token)
    http = session or requests.Session()
    started = time.monotonic()
    problem = ""
    try:
        with _scrubbed_transport_logs(_secrets_of(url, token)):
            for attempt in range(1, retries + 2):
                try:
                    response = http.post(url, json=payload, auth=auth, timeout=timeout_s, allow_redirects=False)
                except requests.Timeout:
                    problem = f"no answer within {timeout_s:g} s"
                except requests.ConnectionError as exc:   # the message names the URL: keep only its kind
                    problem = f"connection failed ({type(exc).__name__})"
                except requests.RequestException as exc:  # a bad URL, a bad payload: retrying cannot help
                    raise RocmFleetError(f"push to {shown} failed: {type(exc).__name__}; check the URL") from None
                else:
                    code = response.status_code
                    response.close()
                    if code < 300:
                        result = PushResult(url=shown, status_code=code, attempts=attempt,
                                            seconds=round(time.monotonic() - started, 3))
                        log.info("pushed the run summary to %s: HTTP %d after %d attempt(s)", shown, code, attempt)
                        return result
                    if code not in RETRY_STATUSES:
                        raise RocmFleetError(f"push to {shown} refused: HTTP {code} {response.reason}; "
                                             + _advice(code))
                    problem = f"HTTP {code} {response.reason}"
                if attempt <= retries:
                    wait = min(max_backoff_s, backoff_s * 2 ** (attempt - 1))
                    log.warning("push to %s: %s (attempt %d of %d); retrying in %.1f s",
                                shown, problem, attempt, retries + 1, wait)
                    sleep(wait)
    finally:
        if session is None:
            http.close()
    raise RocmFleetError(f"push to {shown} failed after {retries + 1} attempt(s): {problem}; "
                         "the report files are written, push again with `rocm-fleet report DIR --push URL`")


def _auth(url: str, token: str | None) -> requests.auth.AuthBase | None:
    """The credentials the caller gave, and only those: the token, else the URL's user info. A request with
    no auth of its own gets ~/.netrc's entry for the host from requests (trust_env, which stays on for the
    proxy settings and CA bundle of the environment), so over plain http the push names "none" explicitly:
    --push-allow-http lets through what the operator put on the command line, never what a netrc holds.
    Over https with neither, requests may use the netrc's entry for the host, as curl --netrc would."""
    if token:
        return _BearerAuth(token)
    if "@" in urlsplit(url).netloc:
        user, password = requests.utils.get_auth_from_url(url)     # percent-decoded, as requests would send them
        return requests.auth.HTTPBasicAuth(user, password)
    return _NoAuth() if urlsplit(url).scheme == "http" else None


def _advice(code: int) -> str:
    if code in (401, 403):
        return "check the token (--push-token-file, or the variable --push-token-env names)"
    if 300 <= code < 400:
        return "the endpoint redirects; give the final URL"
    return "check the URL and what the endpoint accepts"
