"""`--push URL` for `rocm-fleet report`: the options and the call, kept apart from the report itself.

The token comes from an environment variable (`--push-token-env`, default ROCM_FLEET_PUSH_TOKEN) or
a file (`--push-token-file`, which others must not be able to read), never from the command line. A
credential goes to a plain http:// URL only with `--push-allow-http`, and then only the one given here (the
token or the URL's user info): never ~/.netrc's entry for the host (validation/push.py:_auth).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from validation import push
from validation.commands._options import deprecated
from validation.errors import RocmFleetError
from validation.records import to_jsonable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--push", metavar="URL", default=None,
                   help="also POST the summary (the --json document) to this http(s) URL; retried on connection "
                   "errors, timeouts and 429/5xx; logged without user info or query string")
    p.add_argument("--push-token-env", metavar="VAR", default=push.DEFAULT_TOKEN_ENV,
                   help=f"environment variable holding a bearer token for --push (default {push.DEFAULT_TOKEN_ENV})")
    p.add_argument("--push-token-file", type=Path, metavar="FILE", default=None,
                   help="file whose first line is the bearer token for --push (used instead of the variable); "
                   "refused when group or others may read it")
    p.add_argument("--push-allow-http", action="store_true",
                   help="let --push send the token (or URL user info) over plain http:// (a network you trust "
                   "end to end); refused otherwise. ~/.netrc's credentials never go over plain http")
    p.add_argument("--push-timeout", dest="push_timeout_s", type=float, default=10.0, metavar="SECONDS",
                   help="seconds allowed per push request (default 10)")
    deprecated(p, "--push-timeout-s", "--push-timeout", "push_timeout_s", type=float)
    p.add_argument("--push-retries", type=int, default=3,
                   help="further attempts after a connection error, timeout or 429/5xx (default 3)")


def maybe_push(args: argparse.Namespace, doc: dict[str, Any]) -> dict[str, Any] | None:
    """Push `doc` when --push was given: {"url", "status_code", "attempts", "seconds"} or {"error": ...}.
    A failed push is returned, not raised, so the report is still printed."""
    if not args.push:
        if args.push_token_file:
            raise RocmFleetError("--push-token-file is only used with --push URL; add --push URL or drop it")
        return None
    try:
        token = push.read_token(env_var=args.push_token_env, file=args.push_token_file)
        result = push.push_json(args.push, doc, token=token, timeout_s=args.push_timeout_s, retries=args.push_retries,
                                allow_http=args.push_allow_http)
    except RocmFleetError as exc:
        return {"error": str(exc)}
    return to_jsonable(result)


def exit_code(pushed: dict[str, Any] | None, verdict_code: int) -> int:
    """2 when the push failed (after saying why on stderr), else the report's own exit code."""
    if pushed and "error" in pushed:
        print(f"rocm-fleet: error: {pushed['error']}", file=sys.stderr)
        return 2
    return verdict_code
