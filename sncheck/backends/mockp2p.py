"""The mock's card pairs (connectivity, README "Mock backend cost model"): every pair of a
round at once, its bandwidth each way and both ways, its ping-pong latency summary and its
payload checksum, as columns of card indices; rounds go out in batches of at least
``BATCH_PAIRS`` pairs (a killed run keeps every batch written before it).

The draws per round, in order: 3 bandwidth samples per live pair, then its ping-pong
samples and their jitter spikes (a fleet-size round, at least ``ORDER_STATISTICS_FROM``
samples: the summaries of its pairs without a jittery end as order statistics, then the
jittery pairs' samples and spikes; :mod:`sncheck.backends.mockorder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sncheck.probeplan import ConnectivityPlan, Pairs
from sncheck.topology import host_of
from sncheck.backends.mockorder import from_order, median_p99_max, normal_order_statistics
from sncheck.backends.mockphysics import NOISE_CV, TIERS

if TYPE_CHECKING:
    from sncheck.backends.mock import MockBackend

# Rows are written as one Parquet part per batch: p2p rounds go out together up to at least
# this many pairs (a part's cost is mostly per part below that: 16,384 cards wrote 400
# parts of ~20,000 rows).
BATCH_PAIRS = 262_144
# A round of at least this many ping-pong samples (live pairs x lat_iters: a fleet's round,
# 4,096 pairs of 50) draws each pair's summary as order statistics instead of every sample.
ORDER_STATISTICS_FROM = 204_800
STATUSES = ("ok", "timeout", "unreachable")  # p2p status codes 0, 1, 2
OK, TIMEOUT, UNREACHABLE = 0, 1, 2


def names(codes: np.ndarray, names: tuple[str, ...]) -> pa.DictionaryArray:
    """Codes into ``names`` as an Arrow dictionary column (nothing hashed per row)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names))


def p2p(m: MockBackend, plan: ConnectivityPlan, sink) -> None:
    """Every pair of a round at once; rounds go out in batches of at least
    ``BATCH_PAIRS`` pairs (a killed run keeps every batch written before it)."""
    pending: list[dict] = []
    size = 0
    for rnd in plan.rounds:
        m.progress(f"connectivity round {rnd.index + 1}/{len(plan.rounds)} ({rnd.phase})")
        if not rnd.pairs:
            continue
        cols = _p2p_round(m, rnd, plan)
        pending.append(cols)
        size += len(cols["src"])
        if size >= BATCH_PAIRS:
            _emit_p2p(m, pending, plan, sink)
            pending, size = [], 0
    if pending:
        _emit_p2p(m, pending, plan, sink)


def _p2p_round(m: MockBackend, rnd, plan: ConnectivityPlan) -> dict:
    """One round's pairs as columns of card indices and measurements."""
    if isinstance(rnd.pairs, Pairs) and rnd.pairs.cards is m.topo.card_ids:
        a, b = rnd.pairs.a, rnd.pairs.b  # positions in topo.card_ids: our indices
    else:
        a = m.idx([p[0] for p in rnd.pairs])
        b = m.idx([p[1] for p in rnd.pairs])
    phys = m.phys_at(plan.bw_bytes)  # the bandwidth message; latency has no size-gated fault
    tier = phys.tier(a, b)
    reach = phys.up[a] & phys.up[b]
    fwd, rev = phys.true_bw(a, b, tier), phys.true_bw(b, a, tier)  # each way: a link may fail one
    both = np.minimum(fwd, rev)  # a ping-pong needs both ways
    live = np.flatnonzero(reach & (both > 0))
    n, k = len(a), len(live)
    # One draw per round: 3 bandwidth samples (a->b, b->a, both at once) and lat_iters ping-pongs per live pair.
    bws = m.noise((k, 3))
    bws[:, 0] *= fwd[live]
    bws[:, 1] *= rev[live]
    bws[:, 2] *= fwd[live] + rev[live]
    cols = {name: np.full(n, np.nan) for name in ("bw_GBps", "bw_rev_GBps", "bibw_GBps",
                                                  "lat_us", "lat_p99_us", "lat_max_us")}
    cols["bw_GBps"][live], cols["bw_rev_GBps"][live] = bws[:, 0], bws[:, 1]
    cols["bibw_GBps"][live] = bws[:, 2]
    true_lat = phys.true_lat(a[live], b[live], tier[live])
    if k * plan.lat_iters < ORDER_STATISTICS_FROM:   # every ping-pong sample drawn, then summarised
        lat = m.noise((k, plan.lat_iters))
        lat *= true_lat[:, None]
        _jitter(m, lat, a[live], b[live])
        if k:
            cols["lat_us"][live], cols["lat_p99_us"][live], cols["lat_max_us"][live] = median_p99_max(lat)
    else:
        _summaries_drawn(m, cols, a, b, live, true_lat, plan.lat_iters)
    checksum = np.zeros(n, dtype=bool)
    checksum[live] = ~(phys.corrupt[a[live]] | phys.corrupt[b[live]])
    measured = np.zeros(n, dtype=bool)
    measured[live] = True
    status = np.where(~reach, UNREACHABLE, np.where(both <= 0, TIMEOUT, OK))
    return {"round": np.full(n, rnd.index), "src": a, "dst": b, "tier": tier, **cols,
            "checksum_ok": checksum, "measured": measured, "status": status}


def _summaries_drawn(m: MockBackend, cols: dict[str, np.ndarray], a: np.ndarray, b: np.ndarray, live: np.ndarray,
                     true_lat: np.ndarray, iters: int) -> None:
    """A fleet-size round's ping-pong summaries (median, p99, max of ``iters`` samples),
    in place: drawn as order statistics, except where a jittery end spikes single
    samples (those few pairs draw every sample, then the spikes)."""
    phys = m.phys
    spiky = (phys.jit_p[a[live]] > 0) | (phys.jit_p[b[live]] > 0)
    plain = np.flatnonzero(~spiky)
    if len(plain):
        z = from_order(iters, normal_order_statistics(m.rng, len(plain), iters))
        for name, stat in zip(("lat_us", "lat_p99_us", "lat_max_us"), z):
            cols[name][live[plain]] = true_lat[plain] * (1.0 + NOISE_CV * stat)
    if spiky.any():
        at = np.flatnonzero(spiky)
        lat = m.noise((len(at), iters))
        lat *= true_lat[at, None]
        _jitter(m, lat, a[live[at]], b[live[at]])
        cols["lat_us"][live[at]], cols["lat_p99_us"][live[at]], cols["lat_max_us"][live[at]] = \
            median_p99_max(lat)


def _link_ids(m: MockBackend, a: np.ndarray, b: np.ndarray) -> pa.Array:
    lo = np.where(m.rank[a] <= m.rank[b], a, b)
    hi = np.where(m.rank[a] <= m.rank[b], b, a)

    return pc.binary_join_element_wise(m.labels.take(lo), m.labels.take(hi), "<->")


def _emit_p2p(m: MockBackend, rounds: list[dict], plan: ConnectivityPlan, sink) -> None:
    cols = {k: np.concatenate([r[k] for r in rounds]) for k in rounds[0]}
    a, b, status = cols.pop("src"), cols.pop("dst"), cols.pop("status")
    measured = cols.pop("measured")
    links = _link_ids(m, a, b)
    # Arrow columns built from arrays (a fleet's batch is a million pairs: no object per row)
    checksum = pa.array(cols.pop("checksum_ok"), mask=~measured)
    bad = np.flatnonzero(status != OK)
    texts = [f"{host_of(m.ids[a[i] if not m.phys.up[a[i]] else b[i]])} unreachable"
             if status[i] == UNREACHABLE else f"no data across {links[i].as_py()} within the timeout"
             for i in bad.tolist()]
    at = np.zeros(len(a), dtype=np.int32)
    at[bad] = np.arange(len(bad), dtype=np.int32)
    error = pa.DictionaryArray.from_arrays(pa.array(at, mask=status == OK), pa.array(texts, pa.string()))
    sink.batch("p2p", {"round": cols.pop("round"), "link": links, "src": m.card_ids(a),
                       "dst": m.card_ids(b), "tier": names(cols.pop("tier"), TIERS),
                       "bytes": plan.bw_bytes, **cols, "checksum_ok": checksum,
                       "status": names(status, STATUSES), "error": error})


def _jitter(m: MockBackend, lat: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Spike the ping-pong samples of pairs with a jittery end, in place: for each
    pair in order, end a then end b, one uniform draw per sample."""
    ends = np.stack([a, b], axis=1).ravel()            # a0, b0, a1, b1, ...
    jit_p, jit_f = m.phys.jit_p, m.phys.jit_f
    hit = np.flatnonzero(jit_p[ends] > 0)
    if not len(hit):
        return
    u = m.rng.random((len(hit), lat.shape[1]))
    card = ends[hit]
    factor = np.where(u < jit_p[card, None], jit_f[card, None], 1.0)
    np.multiply.at(lat, hit // 2, factor)
