"""Peer-to-peer: per pair, ping-pong latency (median, p99, max), bandwidth one way and both ways.

See :mod:`sncheck.worker.torchdist` for the method and the why of each number.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch
import torch.distributed as dist

from sncheck.model import host_of, link_id
from sncheck.rows import not_run_row, p2p_row
from sncheck.worker.context import Ctx
from sncheck.worker.faults import wait_s, wire_factor
from sncheck.worker.job import Job

# A bulk transfer's time is the lower quartile of its repeats: on a shared host the
# scheduler only ever adds delay, so a low quantile tracks the link and the median
# tracks whatever else the host was doing.
TRANSFER_PCT = 25.0
LAT_WARMUP = 3
BW_WARMUP = 2
LAT_TAIL_PCT = 99.0
PAIR_PASSES = 3  # serialized pairs: each pair's iterations in this many interleaved turns


def _tier(job: Job, a: str, b: str) -> str | None:
    ha, hb = host_of(a), host_of(b)
    if ha == hb:
        return "intra_host"
    sn = job.supernode_of_host
    if ha not in sn or hb not in sn:
        return None
    return "scale_up" if sn[ha] == sn[hb] else "scale_out"


def _payload(ctx: Ctx, count: int, sender: int, round_: int) -> torch.Tensor:
    """Float32 small integers, exact, that name the sender and the round."""
    base = torch.arange(count, device=ctx.device, dtype=torch.int64) % 251
    return (base + (sender * 17 + round_ * 5) % 97).to(torch.float32)


def _split(total: int, parts: int) -> list[int]:
    """``total`` iterations over ``parts`` passes, as evenly as can be."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


class _Pair:
    """One rank's side of one pair in one round; its samples add up over passes."""

    def __init__(self, ctx: Ctx, src: int, dst: int, round_: int, plan: dict) -> None:
        self.ctx, self.src, self.dst, self.round = ctx, src, dst, round_
        self.me_src = ctx.rank == src
        self.peer = dst if self.me_src else src
        self.count = max(1, int(plan.get("bw_bytes", 64 << 20)) // 4)
        self.wire = int(self.count * wire_factor(list(ctx.job.faults),
                                                 ctx.cards[src], ctx.cards[dst]))
        self.tiny = torch.zeros(1, device=ctx.device)
        self.msg = torch.zeros(max(1, int(plan.get("lat_bytes", 8)) // 4), device=ctx.device)
        # Buffers live across passes: what each direction sends (this rank's payload,
        # corrupted if its card is) and receives (checked against the peer's payload).
        mine = _payload(ctx, self.wire, ctx.rank, round_)
        ctx.faults.corrupt_payload_(mine)
        self.out = mine
        self.inn = torch.full((self.wire,), -1.0, device=ctx.device)
        self.expect = _payload(ctx, self.wire, self.peer, round_)
        self.samples: dict[str, list] = {"rtts": [], "fw_s": [], "rev_s": [], "bi_s": []}
        self.ok = True
        self.warm = False

    def _sync(self) -> None:
        """Both sides leave together (to within one message)."""
        if self.me_src:
            dist.send(self.tiny, self.peer)
            dist.recv(self.tiny, self.peer)
        else:
            dist.recv(self.tiny, self.peer)
            dist.send(self.tiny, self.peer)

    def _latency(self, iters: int) -> None:
        """Ping-pongs; the src side keeps the round-trip times in ns."""
        ctx, f, msg = self.ctx, self.ctx.faults, self.msg
        self._sync()
        warmup = 0 if self.warm else LAT_WARMUP
        for i in range(warmup + iters):
            if self.me_src:
                t0 = time.perf_counter_ns()
                wait_s(f.message_delay_s())
                dist.send(msg, self.peer)
                dist.recv(msg, self.peer)
                ctx.sync()
                wait_s(f.message_delay_s())
                if i >= warmup:
                    self.samples["rtts"].append(time.perf_counter_ns() - t0)
            else:
                dist.recv(msg, self.peer)
                ctx.sync()
                wait_s(f.message_delay_s())
                wait_s(f.message_delay_s())
                dist.send(msg, self.peer)
        ctx.heartbeat()

    def _timed(self, key: str, transfer: Callable[[], None], iters: int) -> None:
        """Per-transfer times: gaps between successive completions after a pair sync."""
        ctx = self.ctx
        for _ in range(0 if self.warm else BW_WARMUP):
            transfer()
        self._sync()
        prev = time.perf_counter()
        for _ in range(iters):
            transfer()
            ctx.sync()
            now = time.perf_counter()
            self.samples[key].append(now - prev)
            prev = now
        ctx.heartbeat()

    def _one_way(self, key: str, sender: int, iters: int) -> None:
        sending = self.ctx.rank == sender

        def transfer() -> None:
            if sending:
                dist.send(self.out, self.peer)
            else:
                dist.recv(self.inn, self.peer)

        self._timed(key, transfer, iters)
        if not sending:
            self._check()

    def _both_ways(self, iters: int) -> None:
        ops = [dist.P2POp(dist.isend, self.out, self.peer), dist.P2POp(dist.irecv, self.inn, self.peer)]

        def exchange() -> None:
            for req in dist.batch_isend_irecv(ops):
                req.wait()

        self._timed("bi_s", exchange, iters)
        self._check()

    def _check(self) -> None:
        self.ok = self.ok and bool(torch.equal(self.inn, self.expect))
        self.inn.fill_(-1.0)  # the next check sees only what arrives after it

    def run_pass(self, lat_iters: int, bw_iters: int) -> None:
        self._latency(lat_iters)
        self._one_way("fw_s", self.src, bw_iters)
        self._one_way("rev_s", self.dst, bw_iters)
        self._both_ways(bw_iters)
        self.warm = True

    def result(self) -> dict:
        return {"src": self.src, "dst": self.dst, "me": self.ctx.rank, "ok": self.ok,
                "bytes": self.count * 4, **self.samples}


def _combine_pair(sides: list[dict]) -> dict:
    """Merge the two ranks' measurements of one pair into bandwidths and latency."""
    s = {d["me"]: d for d in sides}
    a, b = s[sides[0]["src"]], s[sides[0]["dst"]]
    nbytes = a["bytes"]
    rtts = a["rtts"]

    def per_transfer(key: str) -> float:
        # the side that took longer bounds the transfer (usually the receiver)
        return max(percentile(a[key], TRANSFER_PCT), percentile(b[key], TRANSFER_PCT))

    return {
        "bw": nbytes / per_transfer("fw_s") / 1e9,
        "bw_rev": nbytes / per_transfer("rev_s") / 1e9,
        "bibw": 2 * nbytes / per_transfer("bi_s") / 1e9,
        "lat": statistics.median(rtts) / 2 / 1000 if rtts else None,
        # the tail: a jittery card spikes a few round trips, the median hides them
        "lat_p99": percentile(rtts, LAT_TAIL_PCT) / 2 / 1000 if rtts else None,
        "lat_max": max(rtts) / 2 / 1000 if rtts else None,
        "ok": a["ok"] and b["ok"], "bytes": nbytes,
    }


def run_pairs(ctx: Ctx, plan: dict, on_pair: Callable[[int, str, str, dict], None],
              on_missing: Callable[[int, str, str], None]) -> None:
    """Measure every pair of every round; rank 0 gets each pair's combined result.

    The pairs of a round run at once, unless the job says ``serialize_pairs``: on CPU
    ranks the "links" are the same cores and memory, so concurrent pairs would measure
    each other rather than the link. Serialized pairs take turns in ``PAIR_PASSES``
    short passes, so that load that comes and goes on a shared host falls on every
    pair of the round alike instead of on whichever pair ran at the time.
    """
    rounds = plan.get("rounds") or []
    serialize = ctx.job.serialize_pairs
    bw_iters, lat_iters = max(1, int(plan.get("bw_iters", 5))), max(1, int(plan.get("lat_iters", 50)))
    passes = min(PAIR_PASSES, bw_iters, lat_iters) if serialize else 1
    for n, rnd in enumerate(rounds):
        ctx.progress(f"{ctx.job.layer}: round {n + 1}/{len(rounds)}")
        ridx = int(rnd.get("index", n))
        pairs = [(a, b) for a, b in rnd["pairs"] if a in ctx.index and b in ctx.index]
        missing = [(a, b) for a, b in rnd["pairs"] if (a, b) not in pairs]
        mine = None
        for lat_n, bw_n in zip(_split(lat_iters, passes), _split(bw_iters, passes), strict=True):
            for a, b in pairs:
                ra, rb = ctx.index[a], ctx.index[b]
                if ctx.rank in (ra, rb):
                    mine = mine or _Pair(ctx, ra, rb, ridx, plan)
                    mine.run_pass(lat_n, bw_n)
                if serialize:
                    ctx.barrier()
        gathered = ctx.gather(mine.result() if mine else None)
        del mine  # free the payloads before the next round
        ctx.barrier()  # rounds do not overlap
        if gathered is None:
            continue
        by_pair: dict[tuple[int, int], list[dict]] = {}
        for d in gathered:
            if d is not None:
                by_pair.setdefault((d["src"], d["dst"]), []).append(d)
        for (ra, rb), sides in by_pair.items():
            on_pair(ridx, ctx.cards[ra], ctx.cards[rb], _combine_pair(sides))
        for a, b in missing:
            on_missing(ridx, a, b)


def run_p2p(ctx: Ctx, plan: dict) -> None:
    def on_pair(ridx: int, a: str, b: str, r: dict) -> None:
        ctx.write(p2p_row(ridx, a, b, link_id(a, b), _tier(ctx.job, a, b), r["bytes"],
                          bw=r["bw"], bw_rev=r["bw_rev"], bibw=r["bibw"], lat=r["lat"],
                          lat_p99=r["lat_p99"], lat_max=r["lat_max"], checksum_ok=r["ok"]))

    def on_missing(ridx: int, a: str, b: str) -> None:
        ctx.write(not_run_row("connectivity", link_id(a, b), "link", "not_run",
                              f"round {ridx}: a card of this pair is not in the job"))

    run_pairs(ctx, plan, on_pair, on_missing)


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of nothing")
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
