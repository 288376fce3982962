"""`python -m validation.lab.serve`: the lab mirror's HTTP server (threaded, 127.0.0.1 only).

Started in the background by the lab; writes its port to --port-file once listening, and stops
by itself after --lifetime-s so an orphaned server never outlives its lab for long.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

log = logging.getLogger("validation.lab.serve")

DEFAULT_LIFETIME_S = 3 * 3600


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        log.info("%s %s", self.address_string(), format % args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m validation.lab.serve")
    p.add_argument("--root", type=Path, required=True, help="directory to serve")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--port-file", type=Path, required=True, help="written with the port once listening")
    p.add_argument("--lifetime-s", type=float, default=DEFAULT_LIFETIME_S,
                   help="stop after this many seconds (default 3 h)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    handler = functools.partial(_Handler, directory=str(args.root))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    server.daemon_threads = True
    stop = threading.Event()

    def _shutdown(*_: object) -> None:
        if not stop.is_set():
            stop.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _shutdown)
    signal.signal(signal.SIGINT, _shutdown)
    timer = threading.Timer(args.lifetime_s, _shutdown)
    timer.daemon = True
    timer.start()
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(f"{server.server_address[1]}\n")
    tmp.replace(args.port_file)
    log.info("serving %s on 127.0.0.1:%d for at most %.0f s (pid %d)",
             args.root, server.server_address[1], args.lifetime_s, os.getpid())
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        timer.cancel()
        server.server_close()
        args.port_file.unlink(missing_ok=True)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
