#!/usr/bin/python3
"""Stand-in for ib_write_bw on lab hosts, which have no RDMA device (the lab kernel has no InfiniBand).

It does what the launch code depends on and nothing RDMA: the server listens on perftest's TCP
port (-p) on the loopback all lab hosts share, the client connects once to the server host given
last (as perftest does, failing with perftest's "Couldn't connect to" when nothing listens yet),
they exchange one line naming both ends, and each side prints the recorded real ib_write_bw output installed next to it
(AMD ROCm/gpu-cluster-networking, see tests/fixtures/real/ib_write_bw/SOURCES.md), then exits 0.
Installed under a name ending in "_hang", the server accepts and never answers, so both sides hang
until the launch code's time limit kills them.
"""

import socket
import sys
import time
from pathlib import Path

VALUE_OPTIONS = {"-d", "-i", "-x", "-s", "-D", "-q", "-p"}
RECORDED = "/usr/local/share/rocm-fleet-standin/ib_write_bw.txt"


def main(argv: list[str]) -> int:
    args = argv[1:]
    port = int(args[args.index("-p") + 1]) if "-p" in args else 18515
    device = args[args.index("-d") + 1] if "-d" in args else "?"
    client = len(args) >= 2 and not args[-1].startswith("-") and args[-2] not in VALUE_OPTIONS
    hang = Path(argv[0]).name.endswith("_hang")
    me = socket.gethostname()
    if client:
        try:   # like perftest's client: one attempt
            conn = socket.create_connection((args[-1], port), timeout=5)
        except OSError:
            print(f"Couldn't connect to {args[-1]}:{port}", file=sys.stderr)
            return 1
        conn.settimeout(None)
        conn.sendall(f"{me} {device}\n".encode())
        reply = conn.makefile().readline().strip()
        if not reply:   # the server went away without answering: perftest fails the exchange too
            print(" Failed to exchange data between server and clients", file=sys.stderr)
            return 1
        print(f"stand-in client {me} {device}: server answered {reply!r}; argv {' '.join(args)}", file=sys.stderr)
    else:
        with socket.create_server(("127.0.0.1", port)) as server:
            conn, _ = server.accept()
            hello = conn.makefile().readline().strip()
            print(f"stand-in server {me} {device} port {port}: client {hello!r}; argv {' '.join(args)}",
                  file=sys.stderr)
            while hang:
                time.sleep(1)
            conn.sendall(f"{me} {device}\n".encode())
    sys.stdout.write(Path(RECORDED).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
