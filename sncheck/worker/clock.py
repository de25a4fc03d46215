"""Clock sync: each rank's offset to rank 0, and the base latency that latency faults scale.

An NTP-style handshake over send/recv (``CLOCK_SAMPLES`` samples; the sample with the
smallest round trip wins; offset = t_rank0 - (t_send + t_recv) / 2). Half the median of
the ranks' smallest round trips is the base one-way latency.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from sncheck.worker.context import Ctx

CLOCK_SAMPLES = 8


def clock_sync(ctx: Ctx) -> None:
    """Offset to rank 0 and base one-way latency, from min-RTT ping-pongs with rank 0."""
    t = torch.zeros(1, dtype=torch.int64, device=ctx.device)
    best_rtt, offset = None, 0
    if ctx.rank == 0:
        for peer in range(1, ctx.world):
            for _ in range(CLOCK_SAMPLES):
                dist.recv(t, src=peer)
                ctx.sync()  # on nccl the recv is queued: stamp when it has landed
                t.fill_(time.perf_counter_ns())
                dist.send(t, dst=peer)
    else:
        for _ in range(CLOCK_SAMPLES):
            t1 = time.perf_counter_ns()
            t.fill_(t1)
            dist.send(t, dst=0)
            dist.recv(t, src=0)
            ctx.sync()
            t3 = time.perf_counter_ns()
            rtt = t3 - t1
            if best_rtt is None or rtt < best_rtt:
                best_rtt, offset = rtt, int(t.item()) - (t1 + t3) // 2
    ctx.offset_ns = offset
    rtts = [r for r in _all_gather(best_rtt) if r is not None]
    # rank 0 has no sample of its own; everyone uses the same median
    ctx.faults.base_latency_s = statistics.median(rtts) / 2e9 if rtts else 0.0


def _all_gather(obj: Any) -> list:
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out
