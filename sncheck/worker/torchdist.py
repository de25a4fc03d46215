"""The torch.distributed probe: connectivity, stress and golden layers for real.

Run one process per card::

    python -m sncheck.worker.torchdist --job JOB.json --out OUT.jsonl

or, for a launcher on this machine, one fork server that imports torch once and forks
a rank per request (``--serve``; see :func:`serve_forks`).

Rank, world size and rendezvous come from the torchrun variables (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so ``torchrun`` can launch it on remote hosts
too; the local backend starts it with the same variables. ``gloo`` is used on CPU and
``nccl`` (one process per GPU, device ``cuda:LOCAL_RANK``) where CUDA is available,
unless the job names a ``dist_backend``.

Rank 0 appends result rows (:mod:`sncheck.rows`) to OUT as JSON lines, flushed as they
are produced, after gathering every rank's measurements with ``gather_object``. OUT
also carries lines ``{"_progress": "..."}`` for the launcher; they are not rows. The
probe never writes to the terminal.

Job JSON (``schema: sncheck.job/1``)::

    {"schema": "sncheck.job/1",
     "layer": "calibrate" | "p2p" | "collectives" | "golden",
     "cards": ["localhost/gpu0", ...],          # card of each rank, in rank order
     "plan": {...},                             # dataclasses.asdict of the layer's plan
     "faults": [{"type", "target", "factor", "probability"}],
     "seed": 0,
     "op_timeout_s": 60,        # torch.distributed timeout is 2x this (a backstop;
                                # the local backend's watchdog fires at 1x)
     "dist_backend": null | "gloo" | "nccl",
     "supernode_of_host": {"localhost": "local"},   # for the p2p rows' tier
     "heartbeat_dir": null | "/tmp/...",        # each rank touches <dir>/rank<N>
     "serialize_pairs": false,                  # p2p: one pair of a round at a time
     "golden_config": {...}}                    # optional GoldenConfig overrides

Methods (the why of each number):

* Clocks: at start each rank estimates its offset to rank 0 with an NTP-style
  handshake over send/recv (8 samples; the sample with the smallest round trip wins;
  offset = t_rank0 - (t_send + t_recv) / 2). Timestamps are ``perf_counter_ns`` plus
  that offset, so op starts on different hosts compare. Half that smallest round trip
  is also the base latency that latency faults scale.
* p2p: per pair, a small-message ping-pong (median round trip / 2), then
  ``bw_iters`` back-to-back sends of ``bw_bytes`` src->dst, then dst->src, then both
  at once (batch_isend_irecv); with ``serialize_pairs`` the pairs of a round take
  turns in three passes, each doing a third of the iterations. A transfer's time is the gap between successive
  completions on a rank; a direction's time is the larger of the two ranks' lower
  quartiles of those gaps (not the mean: on a shared host the scheduler only adds
  delay, and one descheduled transfer must not speak for the link). Payloads are
  float32 small integers derived from (sender rank, round), checked on receipt (the
  last one of each direction; all of a direction's payloads are the same).
* calibrate: the p2p measurement over every pair of a round-robin, few iterations;
  one ``calibration`` row with the 90th percentile of the directional bandwidths and
  the 10th percentile of the latencies (faults act here too, so one bad card must
  not set the design values).
* collectives, the nccl-tests way: warmup, a group barrier, ``iters`` back-to-back
  timed ops, then one check op on fresh inputs. Each rank timestamps every timed op.
  ``time_us`` is a rank's (end of last op - start of first) / iters, for the slowest
  rank. ``skew_us`` is a rank's op start minus the group's earliest start of that op
  and ``op_us`` its own end minus start, both means over the timed ops (a slow rank
  starts last and waits least). Buffers are float32 (count = size // 4); for
  all_to_all the size is the whole buffer per rank, as nccl-tests prints it, and the
  count is rounded down to a multiple of the ranks (a size below 4 x ranks is
  skipped), so ``size_bytes`` is the size actually moved. On nccl every timed op is
  followed by a device sync so that host timestamps bracket it, which adds a few us
  to small-message times compared with nccl-tests' unsynchronised loop. The check
  op's inputs are small integers derived from (rank, iteration), so results are
  exact and every element of every rank's result is checked (``wrong``, summed over
  ranks).
* golden: see :mod:`sncheck.worker.golden_model`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import select
import signal
import statistics
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

from ..faults import TORCH_PROBE_FAULTS, default_param
from ..rows import collective_row, not_run_row, p2p_row, rank_row
from ..topology import link_id
from .lifeline import pending_jobs, die_with_parent, remove_workdirs

JOB_SCHEMA = "sncheck.job/1"
LAYERS = ("calibrate", "p2p", "collectives", "golden")
CLOCK_SAMPLES = 8
# A bulk transfer's time is the lower quartile of its repeats: on a shared host the
# scheduler only ever adds delay, so a low quantile tracks the link and the median
# tracks whatever else the host was doing.
TRANSFER_PCT = 25.0
LAT_WARMUP = 3
BW_WARMUP = 2
PAIR_PASSES = 3  # serialized pairs: each pair's iterations in this many interleaved turns
# time.sleep overshoots by ~0.1 ms, so the last stretch of a delay spins; only a short
# one: a spinning rank holds a core, and on a host with more ranks than cores every
# woken rank would then wait a scheduler slice (~ms), which shows up as latency.
_SPIN_S = 0.0002


# --------------------------------------------------------------------------- faults

def wait_s(seconds: float) -> None:
    """Delay precisely: sleep for the bulk, spin for the last stretch."""
    if seconds <= 0:
        return
    end = time.perf_counter() + seconds
    if seconds > _SPIN_S:
        time.sleep(seconds - _SPIN_S)
    while time.perf_counter() < end:
        pass


class FaultActor:
    """The faults that target this rank's card, acted out as delays and bad data.

    * slow_card f: bulk transfers to and from it carry 1/f times the payload on the
      wire (rows report the nominal bytes; see ``wire_factor``), and it arrives
      (1/f - 1) x the clean op time late to collectives and gradient all-reduces, so
      its links and its compute run at ~f.
    * high_latency_card F: every small message it sends or receives waits
      (F - 1) x base latency (a ping-pong round trip touches it twice: RTT x F), and
      each collective waits (F - 1) x base latency per algorithm hop.
    * jittery_card p, F: with probability p a message or op takes F x as long.
    * thermal_throttle f: as slow_card f (its HW Thermal Slowdown shows in the
      host's tools, not here).
    * corrupt_card: the payloads it sends and its collective inputs are off by one.
    * collective_corruption: its collective inputs are off by one; p2p payloads are
      intact, so only a collective (or its retest) can see it.
    * diverge: large noise is added to its gradients in golden training.
    """

    def __init__(self, faults: list[dict], card: str, seed: int) -> None:
        mine = {f["type"]: f for f in faults if f.get("target") == card}
        unknown = sorted(set(mine) - set(TORCH_PROBE_FAULTS))
        if unknown:
            raise ValueError(f"fault type(s) {', '.join(unknown)} cannot be acted out by the torch probe")
        slow = [_param(mine.get(t), "factor") for t in ("slow_card", "thermal_throttle")]
        self.slow = min((s for s in slow if s is not None), default=None)
        self.high_latency = _param(mine.get("high_latency_card"), "factor")
        jit = mine.get("jittery_card")
        self.jitter = (_param(jit, "probability"), _param(jit, "factor")) if jit else None
        self.corrupt_payload = "corrupt_card" in mine
        self.corrupt = self.corrupt_payload or "collective_corruption" in mine
        self.diverge = "diverge" in mine
        # str seeds hash deterministically (sha512), unlike hash() of a tuple
        self.rng = random.Random(f"{seed}:{card}")
        self.base_latency_s = 0.0

    def _spike(self, duration_s: float) -> float:
        if self.jitter and self.rng.random() < self.jitter[0]:
            return (self.jitter[1] - 1.0) * duration_s
        return 0.0

    def message_delay_s(self) -> float:
        """Extra time for one small message this rank sends or receives."""
        d = self._spike(self.base_latency_s)
        if self.high_latency:
            d += (self.high_latency - 1.0) * self.base_latency_s
        return d

    def op_delay_s(self, op_s: float, hops: int) -> float:
        """How late this rank arrives to a collective whose clean time is ``op_s``."""
        d = self._spike(max(op_s, self.base_latency_s))
        if self.slow:
            d += (1.0 / self.slow - 1.0) * op_s
        if self.high_latency:
            d += (self.high_latency - 1.0) * self.base_latency_s * hops
        return d

    def corrupt_(self, t: torch.Tensor) -> None:
        """Corrupt a collective's input (or gradients), as a card that reduces wrongly."""
        if self.corrupt:
            t.add_(1.0)

    def corrupt_payload_(self, t: torch.Tensor) -> None:
        """Corrupt a p2p payload this card sends."""
        if self.corrupt_payload:
            t.add_(1.0)


MAX_WIRE_FACTOR = 64.0  # memory bound: a slow_card factor below 1/64 acts as 1/64


def wire_factor(faults: list[dict], a: str, b: str) -> float:
    """How many times the nominal payload a transfer between cards a and b carries.

    Padding the payload, rather than sleeping after each send, makes the transfer
    itself take 1/f as long: a send that returns once its data is buffered would
    hide a sleep-based throttle, and a sleep does not scale with the noise of a shared
    host. Both ranks of a pair compute the same factor from the job's faults.
    """
    f = min([_param(x, "factor") for x in faults if x["type"] in ("slow_card", "thermal_throttle")
                                           and x["target"] in (a, b)],
            default=1.0)
    return min(1.0 / f, MAX_WIRE_FACTOR)


def _param(fault: dict | None, key: str) -> float | None:
    """A fault's parameter, or the fault plan's default for its type."""
    if fault is None:
        return None
    value = fault.get(key)
    return float(default_param(fault["type"], key) if value is None else value)


# --------------------------------------------------------------------------- context

class Ctx:
    """One rank's view: its card, device, clocks, faults and the rank-0 writer."""

    def __init__(self, job: dict, out_path: str, env: dict[str, str]) -> None:
        self.job = job
        self.cards: list[str] = list(job["cards"])
        self.rank = int(env["RANK"])
        self.world = int(env["WORLD_SIZE"])
        self.local_rank = int(env.get("LOCAL_RANK", self.rank))
        if self.world != len(self.cards):
            raise ValueError(f"WORLD_SIZE {self.world} but the job lists {len(self.cards)} cards")
        self.card = self.cards[self.rank]
        self.index = {c: i for i, c in enumerate(self.cards)}
        self.seed = int(job.get("seed", 0))
        self.op_timeout_s = float(job.get("op_timeout_s", 60.0))
        self.faults = FaultActor(job.get("faults") or [], self.card, self.seed)
        self.backend = job.get("dist_backend") or ("nccl" if torch.cuda.is_available() else "gloo")
        self.is_cuda = self.backend == "nccl"
        self.device = torch.device(f"cuda:{self.local_rank}") if self.is_cuda else torch.device("cpu")
        self.offset_ns = 0
        hb_dir = job.get("heartbeat_dir")
        self._hb = Path(hb_dir) / f"rank{self.rank}" if hb_dir else None
        self._last_beat = 0.0
        self._out = open(out_path, "a", encoding="utf-8") if self.rank == 0 else None

    # ---- process group

    def init(self) -> None:
        if self.is_cuda:
            torch.cuda.set_device(self.device)
        else:
            torch.set_num_threads(1)  # ranks share the host's cores
        dist.init_process_group(self.backend, init_method="env://", rank=self.rank,
                                world_size=self.world, timeout=self.dist_timeout)
        self.heartbeat()

    @property
    def dist_timeout(self) -> timedelta:
        return timedelta(seconds=2 * self.op_timeout_s)

    def new_group(self, ranks: list[int]):
        return dist.new_group(ranks, timeout=self.dist_timeout)

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
        if self._out:
            self._out.close()

    # ---- time

    def sync(self) -> None:
        """Wait for queued device work, so host timestamps bracket the real op."""
        if self.is_cuda:
            torch.cuda.synchronize(self.device)

    def now_ns(self) -> int:
        """This rank's clock, moved onto rank 0's."""
        return time.perf_counter_ns() + self.offset_ns

    def heartbeat(self, every_s: float = 0.0) -> None:
        """Tell the launcher this rank is alive (at most once per ``every_s``)."""
        now = time.monotonic()
        if self._hb and now - self._last_beat >= every_s:
            self._hb.touch()
            self._last_beat = now

    # ---- small collectives

    def barrier(self, group=None) -> None:
        # a tiny all-reduce works the same on gloo and nccl (nccl's barrier needs device ids)
        dist.all_reduce(torch.zeros(1, device=self.device), group=group)

    def gather(self, obj: Any) -> list | None:
        """Every rank's ``obj`` on rank 0 (None elsewhere); all ranks must call it."""
        out = [None] * self.world if self.rank == 0 else None
        dist.gather_object(obj, out, dst=0)
        return out

    def agree(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank, for decisions that must not diverge."""
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    # ---- output (rank 0)

    def write(self, row: dict) -> None:
        if self._out:
            self._out.write(json.dumps(row) + "\n")
            self._out.flush()

    def progress(self, msg: str) -> None:
        self.write({"_progress": msg})


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


# --------------------------------------------------------------------------- p2p

def _tier(job: dict, a: str, b: str) -> str | None:
    ha, hb = a.rsplit("/", 1)[0], b.rsplit("/", 1)[0]
    if ha == hb:
        return "intra_host"
    sn = job.get("supernode_of_host") or {}
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
        self.wire = int(self.count * wire_factor(ctx.job.get("faults") or [],
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
    serialize = bool(ctx.job.get("serialize_pairs"))
    bw_iters, lat_iters = max(1, int(plan.get("bw_iters", 5))), max(1, int(plan.get("lat_iters", 50)))
    passes = min(PAIR_PASSES, bw_iters, lat_iters) if serialize else 1
    for n, rnd in enumerate(rounds):
        ctx.progress(f"{ctx.job['layer']}: round {n + 1}/{len(rounds)}")
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
                          checksum_ok=r["ok"]))

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


# 90th percentile bandwidth, 10th percentile latency: one slow card (a few of the
# pairs) must not drag the design values down, since faults act during calibration.
CALIBRATION_BW_PCT = 90.0
CALIBRATION_LAT_PCT = 10.0


def run_calibrate(ctx: Ctx, plan: dict) -> None:
    bws: list[float] = []
    lats: list[float] = []

    def on_pair(ridx: int, a: str, b: str, r: dict) -> None:
        bws.extend((r["bw"], r["bw_rev"]))
        if r["lat"] is not None:
            lats.append(r["lat"])

    run_pairs(ctx, plan, on_pair, lambda *_: None)
    if ctx.rank == 0 and bws and lats:
        ctx.write({"kind": "calibration", "layer": "connectivity", "tier": "intra_host",
                   "bandwidth_GBps": percentile(bws, CALIBRATION_BW_PCT),
                   "latency_us": percentile(lats, CALIBRATION_LAT_PCT)})


# --------------------------------------------------------------------------- collectives

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
                        op = _Op(ctx, pg, len(members), members.index(ctx.rank), coll, count)
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


# --------------------------------------------------------------------------- entry

def run_job(job: dict, out_path: str, env: dict[str, str] | None = None) -> None:
    """Run one job as one rank; ``env`` holds the torchrun variables."""
    if job.get("schema", JOB_SCHEMA) != JOB_SCHEMA:
        raise ValueError(f"job schema {job.get('schema')!r}, expected {JOB_SCHEMA}")
    layer = job.get("layer")
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; known: {', '.join(LAYERS)}")
    ctx = Ctx(job, out_path, dict(os.environ if env is None else env))
    try:
        ctx.init()
        clock_sync(ctx)
        plan = job.get("plan") or {}
        if layer == "p2p":
            run_p2p(ctx, plan)
        elif layer == "calibrate":
            run_calibrate(ctx, plan)
        elif layer == "collectives":
            run_collectives(ctx, plan)
        else:
            from .golden_model import run_golden
            run_golden(ctx, plan, job.get("golden_config") or {})
        ctx.barrier()
    finally:
        ctx.close()


def _quiet() -> None:
    # The probe never writes to the terminal; the launcher keeps stderr in a file.
    logging.disable(logging.CRITICAL)
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")


def _run_forked(req: dict, server_pid: int) -> None:
    """In a child of the fork server: become a rank, run the job, never return."""
    code = 1
    try:
        die_with_parent(server_pid)  # a rank never outlives its server
        os.setsid()  # its own process group, so the launcher can kill it and anything it starts
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # off the server's request pipe ...
        os.dup2(fd, 1)    # ... and its reply pipe: output goes to the rank's log
        os.dup2(fd, 2)
        os.close(fd)
        os.close(null)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.environ.update(req["env"])
        run_job(json.loads(Path(req["job"]).read_text(encoding="utf-8")), req["out"])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # the process boundary: record why, exit non-zero
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve_forks(launcher: int | None = None) -> None:
    """A fork server for launchers on this machine: torch is imported once, ranks fork.

    Requests on stdin, one JSON line each: ``{"id", "job", "out", "env", "log"}``.
    Replies on stdout: ``{"id", "pid"}`` when a rank started, ``{"pid", "code"}`` when
    it ended (code < 0: killed by that signal). On end of stdin (the launcher is gone)
    the server kills the ranks it started and exits.
    """
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    children: set[int] = set()
    jobs: set[str] = set()  # job files of the ranks started, for clean-up after the launcher dies
    pending = b""
    launcher = launcher or os.getppid()

    def launcher_died(signum: int, frame: object) -> None:
        # Also while torch is still importing: stop the ranks, remove the temp dirs of
        # every job started or still waiting in the pipe, and go.
        for pid in children:
            _kill_group(pid)
        for pid in children:
            _reap(pid)
        jobs.update(pending_jobs(stdin, pending))
        remove_workdirs(jobs)
        os._exit(0)

    signal.signal(signal.SIGTERM, launcher_died)
    die_with_parent(launcher, signal.SIGTERM)  # the kernel tells us when the launcher dies
    _quiet()
    _preload()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the launcher's to handle

    def reply(msg: dict) -> None:
        os.write(stdout, (json.dumps(msg) + "\n").encode())

    while True:
        # poll for exits only while ranks run; an idle server sleeps until the next request
        # (an idle server still wakes each second to see whether the launcher is alive)
        ready, _, _ = select.select([stdin], [], [], 0.05 if children else 1.0)
        orphaned = os.getppid() != launcher
        if ready or orphaned:
            data = os.read(stdin, 1 << 16) if ready else b""
            if not data:
                for pid in children:
                    _kill_group(pid)
                if orphaned:  # the launcher died (SIGKILL): nobody else removes its temp dirs
                    for pid in children:
                        _reap(pid)
                    remove_workdirs(jobs)
                return
            *lines, pending = (pending + data).split(b"\n")
            for line in filter(None, (ln.strip() for ln in lines)):
                req = json.loads(line)
                server = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _run_forked(req, server)
                children.add(pid)
                jobs.add(req["job"])
                reply({"id": req["id"], "pid": pid})
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.discard(pid)
            reply({"pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _preload() -> None:
    """Import, once, what every rank would import lazily (torch.optim pulls in dynamo:
    seconds per rank). Imports only: running ops would start thread pools, and a
    process with thread pools does not fork safely."""
    import importlib

    for name in ("torch._dynamo", "torch.optim", "torch.nn.parallel", "sncheck.worker.golden_model"):
        try:
            importlib.import_module(name)
        except ImportError:  # a leaner torch build: the rank imports what it needs itself
            continue


def _reap(pid: int, timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)


def _kill_group(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
            return
        except ProcessLookupError:
            continue


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sncheck.worker.torchdist",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--job", help="job JSON file")
    ap.add_argument("--out", help="JSON lines file that rank 0 appends rows to")
    ap.add_argument("--serve", action="store_true",
                    help="be a fork server for a launcher on this machine (requests on stdin)")
    args = ap.parse_args(argv)
    if args.serve:
        serve_forks()
        return 0
    if not (args.job and args.out):
        ap.error("--job and --out are required")
    _quiet()
    if os.environ.get("SNCHECK_DIE_WITH_PARENT") == "1":  # the local backend's subprocess launcher
        die_with_parent(os.getppid())
    job = json.loads(Path(args.job).read_text(encoding="utf-8"))
    run_job(job, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
