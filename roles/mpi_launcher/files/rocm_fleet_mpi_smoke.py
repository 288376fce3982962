#!/usr/bin/env python3
"""MPI smoke test for a cluster's launch path (mpi4py): runs on CPUs, no GPU needed.

Every rank reports its host (and the variables named with --print-env); rank 0 ping-pongs a
buffer with every other rank and checks it comes back intact; an allreduce of rank + 1 over all
ranks must equal n(n + 1)/2. Rank 0 prints one JSON summary line prefixed `rocm-fleet-mpi-smoke:`.
Exit 0 only when every check passed on every rank.

    mpirun ... python3 rocm_fleet_mpi_smoke.py [--print-env NAME]... [--bytes N] [--iters N]
    --hang-rank R      rank R sleeps forever (tests the launcher's time limit)
    --fail-rank R      rank R exits with --exit-code (tests failure propagation)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--print-env", action="append", default=[], metavar="NAME")
    p.add_argument("--bytes", type=int, default=64 << 10)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--hang-rank", type=int, default=None)
    p.add_argument("--fail-rank", type=int, default=None)
    p.add_argument("--exit-code", type=int, default=3)
    args = p.parse_args(argv)

    from mpi4py import MPI  # imported here so --help works without MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    host = socket.gethostname()
    env = {name: os.environ.get(name) for name in args.print_env}
    print(f"rank {rank} of {size} on {host} pid {os.getpid()} env {json.dumps(env, sort_keys=True)}", flush=True)

    if args.fail_rank == rank:
        print(f"rank {rank} exits with {args.exit_code} as asked (--fail-rank)", flush=True)
        os._exit(args.exit_code)
    if args.hang_rank == rank:
        print(f"rank {rank} hangs as asked (--hang-rank)", flush=True)
        while True:
            time.sleep(3600)

    ok = True
    pingpong_us: dict[str, float] = {}
    payload = bytes((i * 7 + 3) % 251 for i in range(args.bytes))
    for peer in range(1, size):
        comm.Barrier()
        if rank == 0:
            start = time.perf_counter()
            for _ in range(args.iters):
                comm.send(payload, dest=peer, tag=1)
                back = comm.recv(source=peer, tag=2)
                ok = ok and back == payload
            pingpong_us[str(peer)] = round((time.perf_counter() - start) / args.iters * 1e6, 1)
        elif rank == peer:
            for _ in range(args.iters):
                comm.send(comm.recv(source=0, tag=1), dest=0, tag=2)

    total = comm.allreduce(rank + 1, op=MPI.SUM)
    expected = size * (size + 1) // 2
    ok = ok and total == expected
    hosts = comm.gather(host, root=0)
    all_ok = comm.allreduce(1 if ok else 0, op=MPI.MIN) == 1
    if rank == 0:
        summary = {"ranks": size, "hosts": hosts, "allreduce_sum": total, "allreduce_expected": expected,
                   "pingpong_bytes": args.bytes, "pingpong_round_trip_us": pingpong_us, "ok": all_ok}
        print("rocm-fleet-mpi-smoke: " + json.dumps(summary, sort_keys=True), flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
