"""`rocm-fleet parse TOOL FILE`: print a saved tool output as the parsed record in JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from validation import inputs, parsers
from validation.records import to_jsonable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("parse", help="parse a saved tool output and print it as JSON",
                       description="Parse a saved tool output; exit 0 with JSON on stdout, "
                       "or exit 2 with the parse error on stderr.")
    p.add_argument("tool", choices=parsers.tools(), metavar="TOOL",
                   help="one of: " + ", ".join(parsers.tools()))
    p.add_argument("file", type=Path, metavar="FILE", help="saved output ('-' for stdin)")
    p.add_argument("--max-input-mb", type=float, default=None, metavar="MB",
                   help=f"refuse an input larger than this (default ${inputs.ENV_VARIABLE} or "
                   f"{inputs.DEFAULT_MAX_INPUT_MB})")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    text = inputs.read_text(args.file, inputs.limit_bytes(args.max_input_mb))
    record = parsers.parse(args.tool, text)
    doc = {"schema_version": 1, "tool": args.tool, "record": to_jsonable(record)}
    print(json.dumps(doc, indent=2))
    return 0
