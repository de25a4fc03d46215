"""A small gloo training job for the watch tests and bench, run under torchrun with 4 ranks.

    torchrun --standalone --nproc-per-node 4 tests/watch_job.py --out DIR --phases clean,straggler,hung

Each phase trains in its own process group and dumps into DIR/<phase>/ (through
sncheck.watch.torch); a phase's dumps hold every collective so far, and sncheck judges
each group against itself. The fault is acted out by the job itself:

  clean      every rank does the same work each step
  straggler  rank --rank sleeps --delay seconds before each step's collectives
  p2p        the straggler, and after each step's collectives sends and recvs in a ring of
             every rank but rank 1: ranks make different numbers of point-to-point ops
  hung       rank --hung-rank stops taking part after --hang-after steps (it sleeps until
             torchrun stops it: SIGTERM, on which the helper dumps); the others time out
             after --pg-timeout seconds and dump (the helper's with block). The last phase.

Each step: a little compute, an all-reduce of the gradients and a small broadcast.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from sncheck.watch import torch as watch


def phase(name: str, a, rank: int, world: int) -> None:
    timeout = datetime.timedelta(seconds=a.pg_timeout if name == "hung" else 120)
    group = dist.new_group(list(range(world)), timeout=timeout)
    torch.manual_seed(rank)
    w, x = torch.randn(64, 64), torch.randn(16, 64)
    fmt = "pickle" if name in a.pickle_phases.split(",") else "json"
    with watch.start(Path(a.out) / name, every=a.every, host=a.host, job=a.job, fmt=fmt) as rec:
        for step in range(a.steps):
            grad = (x @ w).sum(0)  # the step's compute, the same on every rank
            time.sleep(0.005)
            if name in ("straggler", "p2p") and rank == a.rank:
                time.sleep(a.delay)
            if name == "hung" and rank == a.hung_rank and step >= a.hang_after:
                time.sleep(3600)  # stuck: never enters this step's collectives
            dist.all_reduce(grad, group=group)
            flag = torch.zeros(1)
            dist.broadcast(flag, 0, group=group)
            if name == "p2p" and rank != 1:
                ring = [r for r in range(world) if r != 1]
                at = ring.index(rank)
                reqs = [dist.isend(flag, ring[(at + 1) % len(ring)], group=group),
                        dist.irecv(torch.zeros(1), ring[at - 1], group=group)]
                for q in reqs:
                    q.wait()
            rec.step()
        rec.dump()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--phases", default="clean")
    p.add_argument("--rank", type=int, default=2, help="the straggler")
    p.add_argument("--hung-rank", type=int, default=3)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--delay", type=float, default=0.04)
    p.add_argument("--hang-after", type=int, default=8)
    p.add_argument("--pg-timeout", type=float, default=3.0)
    p.add_argument("--host", default=None)
    p.add_argument("--job", default=None)
    p.add_argument("--pickle-phases", default="", help="phases that dump pickles (torch's watchdog format)")
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    for name in a.phases.split(","):
        phase(name, a, rank, world)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
