"""Collectives, the nccl-tests way: all-reduce and all-to-all over a size sweep, with launch skew.

See :mod:`sncheck.worker.torchdist` for the method and the why of each number.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
import torch.distributed as dist

from sncheck.rows import collective_row, not_run_row, rank_row
from sncheck.worker.context import Ctx
from sncheck.worker.faults import wait_s


def _count(collective: str, size: int, n: int) -> int:
    count = size // 4
    if collective == "all_to_all":
        count -= count % n  # nccl-tests rounds the same way
    return count


def _hops(collective: str, n: int) -> int:
    """Latency terms of the alpha-beta models (ring all-reduce, pairwise all-to-all)."""
    return 2 * (n - 1) if collective == "all_reduce" else n - 1


class _Op:
    """One collective at one size on one group: inputs, the call and the check."""

    def __init__(self, ctx: Ctx, pg, n: int, me: int, collective: str, count: int) -> None:
        self.ctx, self.pg, self.n, self.me, self.coll = ctx, pg, n, me, collective
        dev = ctx.device
        if collective == "all_reduce":
            self.base = (torch.arange(count, device=dev) % 13).to(torch.float32)
            self.buf = torch.empty_like(self.base)
        else:
            chunk = count // n
            self.base = (torch.arange(chunk, device=dev) % 13).to(torch.float32)
            self.inp = torch.empty(n, chunk, device=dev)
            self.out = torch.empty(n, chunk, device=dev)
            self.rows = torch.arange(n, device=dev)

    def fill(self, it: int) -> None:
        if self.coll == "all_reduce":
            torch.add(self.base, float((self.me * 7 + it) % 11), out=self.buf)
            self.ctx.faults.corrupt_(self.buf)
        else:
            # chunk j goes to member j: base + (me*7 + j*3 + it) % 11
            off = ((self.me * 7 + self.rows * 3 + it) % 11).to(torch.float32)
            torch.add(self.base.unsqueeze(0), off.unsqueeze(1), out=self.inp)
            self.ctx.faults.corrupt_(self.inp)

    def run(self) -> None:
        if self.coll == "all_reduce":
            dist.all_reduce(self.buf, group=self.pg)
        else:
            dist.all_to_all_single(self.out, self.inp, group=self.pg)

    def wrong(self, it: int) -> int:
        if self.coll == "all_reduce":
            total = float(sum((m * 7 + it) % 11 for m in range(self.n)))
            return int(torch.sub(self.buf, self.base, alpha=self.n).ne(total).sum())
        # row s came from member s: base + (s*7 + me*3 + it) % 11
        off = ((self.rows * 7 + self.me * 3 + it) % 11).to(torch.float32)
        return int(torch.sub(self.out, self.base.unsqueeze(0)).ne(off.unsqueeze(1)).sum())


def _measure_op(ctx: Ctx, op: _Op, warmup: int, iters: int) -> dict:
    """Warmup, ``iters`` back-to-back timed ops, then one check op on fresh inputs.

    As in nccl-tests, the timed ops run back to back on one buffer and correctness is
    checked on a separate op: writing fresh inputs and checking results between timed
    ops evicts the buffers from cache and slows the next op by a third on a CPU host.
    At least one warmup op runs, each after a barrier: its time is the clean op time
    that a slow or jittery card's delays scale.
    """
    op.fill(0)
    clean = []
    for _ in range(max(1, warmup)):
        ctx.barrier(op.pg)
        t0 = time.perf_counter()
        op.run()
        ctx.sync()
        clean.append(time.perf_counter() - t0)
    clean_s, hops = statistics.median(clean), _hops(op.coll, op.n)
    ctx.barrier(op.pg)
    starts, ends = [], []
    for _ in range(iters):
        wait_s(ctx.faults.op_delay_s(clean_s, hops))
        t0 = ctx.now_ns()
        op.run()
        ctx.sync()
        starts.append(t0)
        ends.append(ctx.now_ns())
        ctx.heartbeat(every_s=0.5)
    check = max(1, warmup) + iters  # an iteration number no timed op used
    op.fill(check)
    ctx.barrier(op.pg)
    op.run()
    ctx.sync()
    return {"starts": starts, "ends": ends, "wrong": op.wrong(check)}


def _collective_rows(group: dict, collective: str, size: int, count: int, repeat: int,
                     per_rank: list[dict]) -> list[dict]:
    """One ``collective`` row and one ``rank`` row per member, from aligned timestamps."""
    n = len(per_rank)
    iters = len(per_rank[0]["starts"])
    # nccl-tests: a rank's time per op over the back-to-back loop; the slowest rank's
    time_us = max((r["ends"][-1] - r["starts"][0]) / iters for r in per_rank) / 1000
    first = [min(r["starts"][i] for r in per_rank) for i in range(iters)]
    rows = [collective_row(group["id"], group.get("kind"), n, collective, size, count, "float32", repeat,
                           time_us=time_us, wrong=sum(r["wrong"] for r in per_rank))]
    for r in per_rank:
        rows.append(rank_row(
            group["id"], collective, size, repeat, r["card"],
            skew_us=statistics.fmean(r["starts"][i] - first[i] for i in range(iters)) / 1000,
            op_us=statistics.fmean(e - s for s, e in zip(r["starts"], r["ends"], strict=True)) / 1000,
            wrong=r["wrong"]))
    return rows


def usable_groups(ctx: Ctx, groups: list[dict], layer: str, min_members: int) -> list[tuple[dict, Any]]:
    """Groups whose cards are all in the job, each with its process group.

    Every rank calls new_group for every group, in plan order, as torch requires.
    """
    out = []
    for g in groups:
        members = list(g["members"])
        absent = [m for m in members if m not in ctx.index]
        for card in absent:  # the group cannot run without them: say so, per card
            ctx.write(not_run_row(layer, card, "card", "not_run",
                                  f"group {g['id']} needs {card}, which is not in this job"))
        if absent or len(members) < min_members:
            continue
        ranks = [ctx.index[m] for m in members]
        out.append((g, ctx.new_group(ranks) if len(ranks) > 1 else None))
    return out


def run_collectives(ctx: Ctx, plan: dict) -> None:
    groups = usable_groups(ctx, plan.get("groups") or [], "stress", 2)
    collectives = list(plan.get("collectives") or ())
    sizes = [int(s) for s in plan.get("sizes") or ()]
    warmup, iters = int(plan.get("warmup", 2)), max(1, int(plan.get("iters", 5)))
    repeats, duration = max(1, int(plan.get("repeats", 1))), plan.get("duration_s")
    t_start = time.monotonic()
    repeat = 0
    while True:
        ctx.progress(f"collectives: sweep {repeat + 1}")
        for g, pg in groups:
            members = [ctx.index[m] for m in g["members"]]
            for coll in collectives:
                for size in sizes:
                    count = _count(coll, size, len(members))
                    if count == 0:
                        continue
                    data = None
                    if ctx.rank in members:
                        # torch numbers a group's ranks in global rank order, whatever the
                        # order of the plan's members: all_to_all's rows follow that order
                        op = _Op(ctx, pg, len(members), sorted(members).index(ctx.rank), coll, count)
                        data = _measure_op(ctx, op, warmup, iters)
                        data["card"] = ctx.card
                        del op  # free the buffers before the next size
                    gathered = ctx.gather(data)
                    if gathered is not None:
                        per_rank = [gathered[r] for r in members]
                        for row in _collective_rows(g, coll, count * 4, count, repeat, per_rank):
                            ctx.write(row)
        repeat += 1
        more = repeat < repeats or (duration is not None and time.monotonic() - t_start < float(duration))
        if not ctx.agree(more):  # rank 0's clock decides, so no rank loops alone
            break
