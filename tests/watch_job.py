"""A small gloo training job for the watch tests, run under torchrun with 4 ranks.

    torchrun --nproc-per-node 4 tests/watch_job.py --out DIR --mode straggler

Modes (the fault is acted out by the job itself, as a real job would suffer it):
  clean      every rank does the same work each step
  straggler  rank --rank sleeps --delay seconds before each step's collectives
  hung       rank --rank stops taking part after --hang-after steps (it sleeps until it
             is killed); the others time out (--pg-timeout) and dump
  desync     rank --rank calls a broadcast where the others all-reduce, once, at --hang-after
Each step: a little compute, an all-reduce of the gradients and a small broadcast.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

import torch
import torch.distributed as dist

from sncheck.watch import torch as watch


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--mode", default="clean", choices=("clean", "straggler", "hung", "desync"))
    p.add_argument("--rank", type=int, default=2, help="the faulty rank")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--delay", type=float, default=0.04)
    p.add_argument("--hang-after", type=int, default=8)
    p.add_argument("--pg-timeout", type=float, default=60.0)
    p.add_argument("--host", default=None)
    p.add_argument("--job", default=None)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # The training group: its collectives time out after --pg-timeout (the default group,
    # which the rendezvous and the helper's rank map use, keeps torch's default).
    group = dist.new_group(list(range(dist.get_world_size())), timeout=datetime.timedelta(seconds=a.pg_timeout))
    torch.manual_seed(rank)
    w = torch.randn(64, 64)
    x = torch.randn(16, 64)
    with watch.start(a.out, every=a.every, host=a.host, job=a.job) as rec:
        for step in range(a.steps):
            grad = (x @ w).sum(0)  # the step's compute, the same on every rank
            time.sleep(0.005)
            if a.mode == "straggler" and rank == a.rank:
                time.sleep(a.delay)
            if a.mode == "hung" and rank == a.rank and step >= a.hang_after:
                time.sleep(3600)  # stuck: never enters this step's collectives
            if a.mode == "desync" and rank == a.rank and step == a.hang_after:
                dist.broadcast(grad, 0, group=group)
            else:
                dist.all_reduce(grad, group=group)
            flag = torch.zeros(1)
            dist.broadcast(flag, 0, group=group)
            rec.step()
        rec.dump()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
