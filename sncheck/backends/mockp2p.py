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
# parts of ~20,000 rows), times part_rows' factor in a fleet of more than CARDS_PER_PART.
BATCH_PAIRS = 262_144
# A part's card columns each hold every card's name (src, dst; a rank row's card), and every
# read of such a column hashes those names again, per part: at 131,072 cards, 22 ms a part
# and column against 3 ms at 16,384 (131,072 cards: 194 p2p parts of 262,144 pairs, 4.3 s a
# read of src). So a part holds BATCH_PAIRS rows for every CARDS_PER_PART cards or part of them:
# at most one name a part for 8 of its rows.
CARDS_PER_PART = 32_768


def part_rows(least: int, cards: int) -> int:
    """The rows a batch gathers before it goes out as a part: ``least``, times the fleet's
    cards over :data:`CARDS_PER_PART` (a fleet of 131,072 cards: 4x)."""
    return least * max(1, -(-cards // CARDS_PER_PART))
# A round of at least this many ping-pong samples (live pairs x lat_iters: a fleet's round,
# 4,096 pairs of 50) draws each pair's summary as order statistics instead of every sample.
ORDER_STATISTICS_FROM = 204_800
STATUSES = ("ok", "timeout", "unreachable")  # p2p status codes 0, 1, 2
OK, TIMEOUT, UNREACHABLE = 0, 1, 2


def names(codes: np.ndarray, names: tuple[str, ...]) -> pa.DictionaryArray:
    """Codes into ``names`` as an Arrow dictionary column (nothing hashed per row)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names))


def p2p(m: MockBackend, plan: ConnectivityPlan, sink) -> None:
    """Every pair of the plan, a batch of rounds at once: consecutive rounds up to at least
    ``BATCH_PAIRS`` pairs (:func:`part_rows`) are simulated together and go out as one batch
    (a killed run keeps every batch written before it)."""
    rounds: list[tuple[int, np.ndarray, np.ndarray]] = []
    size, batch = 0, part_rows(BATCH_PAIRS, len(m.ids))
    for rnd in plan.rounds:
        m.progress(f"connectivity round {rnd.index + 1}/{len(plan.rounds)} ({rnd.phase})")
        if not rnd.pairs:
            continue
        if isinstance(rnd.pairs, Pairs) and rnd.pairs.cards is m.topo.card_ids:
            a, b = rnd.pairs.a, rnd.pairs.b  # positions in topo.card_ids: our indices
        else:
            a, b = m.idx([p[0] for p in rnd.pairs]), m.idx([p[1] for p in rnd.pairs])
        rounds.append((rnd.index, a, b))
        size += len(a)
        if size >= batch:
            _emit_p2p(m, _simulated(m, rounds, plan), plan, sink)
            rounds, size = [], 0
    if rounds:
        _emit_p2p(m, _simulated(m, rounds, plan), plan, sink)


def _simulated(m: MockBackend, rounds: list[tuple[int, np.ndarray, np.ndarray]], plan: ConnectivityPlan) -> dict:
    """Consecutive rounds' pairs as columns of card indices and measurements over them all,
    each round simulated on its own (a round's arrays stay in the processor's cache: one
    pass over a batch's is slower) and written into its rows of the columns."""
    lengths = [len(r[1]) for r in rounds]
    n = sum(lengths)
    cols = {"round": np.repeat([r[0] for r in rounds], lengths), "src": np.concatenate([r[1] for r in rounds]),
            "dst": np.concatenate([r[2] for r in rounds]), "tier": np.empty(n, dtype=np.int64),
            **{name: np.full(n, np.nan) for name in MEASURES}, "checksum_ok": np.zeros(n, dtype=bool),
            "measured": np.zeros(n, dtype=bool), "status": np.empty(n, dtype=np.int64)}
    at = 0
    for length in lengths:
        _round(m, plan, {k: v[at:at + length] for k, v in cols.items() if k != "round"})
        at += length
    return cols


MEASURES = ("bw_GBps", "bw_rev_GBps", "bibw_GBps", "lat_us", "lat_p99_us", "lat_max_us")


def _round(m: MockBackend, plan: ConnectivityPlan, cols: dict[str, np.ndarray]) -> None:
    """One round's measurements into its rows of the batch's columns (``cols``: views of
    them; ``src`` and ``dst`` given, the rest filled in)."""
    a, b = cols["src"], cols["dst"]
    phys = m.phys_at(plan.bw_bytes)  # the bandwidth message; latency has no size-gated fault
    tier = cols["tier"]
    tier[:] = phys.tier(a, b)
    reach = phys.up[a] & phys.up[b]
    fwd, rev = phys.both_ways(a, b, tier)  # each way: a link may fail one
    both = np.minimum(fwd, rev)  # a ping-pong needs both ways
    live = np.flatnonzero(reach & (both > 0))
    k = len(live)
    at = live if k < len(a) else slice(None)   # the live pairs' rows (every row: views, not copies)
    la, lb = a[at], b[at]
    # One draw per round: 3 bandwidth samples (a->b, b->a, both at once) and lat_iters ping-pongs per live pair.
    bws = m.noise((k, 3))
    bws[:, 0] *= fwd[at]
    bws[:, 1] *= rev[at]
    bws[:, 2] *= fwd[at] + rev[at]
    cols["bw_GBps"][at], cols["bw_rev_GBps"][at], cols["bibw_GBps"][at] = bws.T
    true_lat = phys.true_lat(la, lb, tier[at])
    if k * plan.lat_iters < ORDER_STATISTICS_FROM:   # every ping-pong sample drawn, then summarised
        lat = m.noise((k, plan.lat_iters))
        lat *= true_lat[:, None]
        _jitter(m, lat, la, lb)
        if k:
            cols["lat_us"][at], cols["lat_p99_us"][at], cols["lat_max_us"][at] = median_p99_max(lat)
    else:
        cols["lat_us"][at], cols["lat_p99_us"][at], cols["lat_max_us"][at] = \
            _summaries_drawn(m, la, lb, true_lat, plan.lat_iters)
    cols["checksum_ok"][at] = ~(phys.corrupt[la] | phys.corrupt[lb])
    cols["measured"][at] = True
    cols["status"][:] = np.where(~reach, UNREACHABLE, np.where(both <= 0, TIMEOUT, OK))


def _summaries_drawn(m: MockBackend, a: np.ndarray, b: np.ndarray, true_lat: np.ndarray, iters: int) -> np.ndarray:
    """A fleet-size round's ping-pong summaries (median, p99, max of ``iters`` samples) of
    its live pairs ``a``, ``b``, as rows of a (3, pairs) array: drawn as order statistics,
    except where a jittery end spikes single samples (those few pairs draw every sample,
    then the spikes)."""
    out = np.empty((3, len(a)))
    phys = m.phys
    spiky = (phys.jit_p[a] > 0) | (phys.jit_p[b] > 0)
    spikes = np.flatnonzero(spiky)
    plain = np.flatnonzero(~spiky) if len(spikes) else slice(None)
    count = len(a) - len(spikes)
    if count:
        z = from_order(iters, normal_order_statistics(m.rng, count, iters))
        for i, stat in enumerate(z):
            out[i, plain] = true_lat[plain] * (1.0 + NOISE_CV * stat)
    if len(spikes):
        lat = m.noise((len(spikes), iters))
        lat *= true_lat[spikes, None]
        _jitter(m, lat, a[spikes], b[spikes])
        out[:, spikes] = median_p99_max(lat)
    return out


def _link_ids(m: MockBackend, a: np.ndarray, b: np.ndarray) -> pa.Array:
    """Each pair's link, its ends in natural order (``a<->b``)."""
    swap = m.rank[a] > m.rank[b]
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    return pc.binary_join_element_wise(m.labels.take(lo), m.labels.take(hi), "<->")


def _emit_p2p(m: MockBackend, cols: dict, plan: ConnectivityPlan, sink) -> None:
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
