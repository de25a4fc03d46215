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

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sncheck.probeplan import ConnectivityPlan, Pairs
from sncheck.topology import host_of
from sncheck.backends.behind import Behind
from sncheck.backends.mockorder import drawn_summaries, median_p99_max
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
    ``BATCH_PAIRS`` pairs (:func:`part_rows`) are simulated together and go out as one batch,
    on a thread while the next batch is simulated (:class:`~sncheck.backends.behind.Behind`;
    a killed run keeps every batch written before it)."""
    rounds: list[tuple[int, np.ndarray, np.ndarray]] = []
    size, batch = 0, part_rows(BATCH_PAIRS, len(m.ids))
    with Behind() as behind:   # a batch goes to the sink while the next is simulated
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
                behind.emit(_emit_p2p, m, *_simulated_linked(m, rounds, plan), plan, sink)
                rounds, size = [], 0
        if rounds:
            behind.emit(_emit_p2p, m, *_simulated_linked(m, rounds, plan), plan, sink)


def _simulated_linked(m: MockBackend, rounds: list[tuple[int, np.ndarray, np.ndarray]],
                      plan: ConnectivityPlan) -> tuple[dict, pa.Array]:
    """:func:`_simulated`'s columns and their pairs' link ids, both on the caller's thread: the
    emitting thread has the rest of a batch (its Arrow columns, the Parquet part), the longer
    share at 131,072 cards (20.2 s simulating against 33.6 s emitting, the link ids among them,
    before round 14 moved them here; ``scripts/mock-p2p-cpu.py``)."""
    cols = _simulated(m, rounds, plan)
    return cols, _link_ids(m, cols["src"], cols["dst"])


def _simulated(m: MockBackend, rounds: list[tuple[int, np.ndarray, np.ndarray]], plan: ConnectivityPlan) -> dict:
    """Consecutive rounds' pairs as columns of card indices and measurements over them all,
    each round simulated on its own (a round's arrays stay in the processor's cache: one
    pass over a batch's is slower) and written into its rows of the columns."""
    lengths = [len(r[1]) for r in rounds]
    n = sum(lengths)
    cols = {"round": np.repeat([r[0] for r in rounds], lengths), "src": np.concatenate([r[1] for r in rounds]),
            "dst": np.concatenate([r[2] for r in rounds]), "tier": np.empty(n, dtype=np.int64),
            **{name: np.empty(n) for name in MEASURES}, "checksum_ok": np.empty(n, dtype=bool),
            "measured": np.empty(n, dtype=bool), "status": np.empty(n, dtype=np.int64)}
    at = 0
    for length in lengths:
        _round(m, plan, {k: v[at:at + length] for k, v in cols.items() if k != "round"})
        at += length
    return cols


MEASURES = ("bw_GBps", "bw_rev_GBps", "bibw_GBps", "lat_us", "lat_p99_us", "lat_max_us")
# A round with at most this many pairs that carry nothing (a down host's, a dead link's) takes
# its live rows as runs of consecutive rows (slices); with more, by their positions.
MAX_RUNS = 64


class _Live:
    """The rows of a round whose pair carries data: ``take`` selects them from a column of
    every row, ``put`` writes their values into one. A fleet's round is 65,536 pairs with a
    handful dead at most (a down host's cards are in every round): copies of the runs of
    live rows between them, not a gather and a scatter of every row."""

    def __init__(self, ok: np.ndarray) -> None:
        dead = np.flatnonzero(~ok)
        self.count = len(ok) - len(dead)
        self.whole = not len(dead)
        self.index = np.flatnonzero(ok) if len(dead) > MAX_RUNS else None
        bounds = [-1, *dead.tolist(), len(ok)]
        # (start, stop, its first live row's place among the live rows)
        self.runs = [(lo + 1, hi, lo + 1 - i) for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])) if hi > lo + 1]

    def take(self, column: np.ndarray) -> np.ndarray:
        if self.whole:
            return column
        if self.index is not None:
            return column[self.index]
        return np.concatenate([column[start:stop] for start, stop, _ in self.runs] or [column[:0]])

    def put(self, column: np.ndarray, values: np.ndarray) -> None:
        if self.whole:
            column[:] = values
        elif self.index is not None:
            column[self.index] = values
        else:
            for start, stop, at in self.runs:
                column[start:stop] = values[at:at + stop - start]


def _round(m: MockBackend, plan: ConnectivityPlan, cols: dict[str, np.ndarray]) -> None:
    """One round's measurements into its rows of the batch's columns (``cols``: views of
    them; ``src`` and ``dst`` given, the rest filled in)."""
    a, b = cols["src"], cols["dst"]
    phys = m.phys_at(plan.bw_bytes)  # the bandwidth message; latency has no size-gated fault
    tier = phys.tier(a, b, out=cols["tier"])
    fwd, rev = phys.both_ways(a, b, tier)  # each way: a link may fail one
    both = np.minimum(fwd, rev)  # a ping-pong needs both ways
    ok = both > 0
    reach = phys.reach(a, b)
    if reach is not None:
        ok &= reach
    live = _Live(ok)
    k = live.count
    la, lb = live.take(a), live.take(b)
    # One draw per round: 3 bandwidth samples (a->b, b->a, both at once) and lat_iters ping-pongs per live pair.
    bws = m.noise((k, 3))
    bws[:, 0] *= live.take(fwd)
    bws[:, 1] *= live.take(rev)
    bws[:, 2] *= live.take(np.add(fwd, rev, out=fwd))   # (fwd is read no more)
    for name, values in zip(MEASURES, bws.T):
        live.put(cols[name], values)
    true_lat = phys.true_lat(la, lb, live.take(tier))
    lat_cols = tuple(cols[name] for name in MEASURES[3:])
    summary: Sequence[np.ndarray]
    if k * plan.lat_iters < ORDER_STATISTICS_FROM:   # every ping-pong sample drawn, then summarised
        lat = m.noise((k, plan.lat_iters))
        lat *= true_lat[:, None]
        _jitter(m, lat, la, lb)
        summary = median_p99_max(lat) if k else (lat[:, 0],) * 3
    else:
        summary = lat_cols if live.whole else tuple(np.empty(k) for _ in lat_cols)
        _summaries_drawn(m, la, lb, true_lat, plan.lat_iters, summary)
    if not live.whole or summary is not lat_cols:
        for column, values in zip(lat_cols, summary):
            live.put(column, values)
    checksum = cols["checksum_ok"]
    phys.intact(a, b, out=checksum)
    cols["measured"][:] = ok
    status = cols["status"]
    status[:] = OK
    if not live.whole:
        dead = np.flatnonzero(~ok)
        for name in MEASURES:
            cols[name][dead] = np.nan
        checksum[dead] = False
        carried = np.where(both[dead] <= 0, TIMEOUT, OK)   # (a bandwidth without a design value: neither)
        status[dead] = carried if reach is None else np.where(reach[dead], carried, UNREACHABLE)


def _summaries_drawn(m: MockBackend, a: np.ndarray, b: np.ndarray, true_lat: np.ndarray, iters: int,
                     out: Sequence[np.ndarray]) -> None:
    """A fleet-size round's ping-pong summaries (median, p99, max of ``iters`` samples) of
    its live pairs ``a``, ``b``, into ``out`` (three arrays, a row a pair): drawn as order
    statistics, except where a jittery end spikes single samples (those few pairs draw
    every sample, then the spikes)."""
    phys = m.phys
    spiky = (phys.jit_p[a] > 0) | (phys.jit_p[b] > 0) if phys.jittery else None
    if spiky is None or not spiky.any():
        drawn_summaries(m.rng, iters, true_lat, NOISE_CV, out)
        return
    plain, spikes = np.flatnonzero(~spiky), np.flatnonzero(spiky)
    if len(plain):
        stats = tuple(np.empty(len(plain)) for _ in out)
        drawn_summaries(m.rng, iters, true_lat[plain], NOISE_CV, stats)
        for dest, stat in zip(out, stats):
            dest[plain] = stat
    lat = m.noise((len(spikes), iters))
    lat *= true_lat[spikes, None]
    _jitter(m, lat, a[spikes], b[spikes])
    for dest, stat in zip(out, median_p99_max(lat)):
        dest[spikes] = stat


def _link_ids(m: MockBackend, a: np.ndarray, b: np.ndarray) -> pa.Array:
    """Each pair's link, its ends in natural order (``a<->b``)."""
    swap = m.rank[a] > m.rank[b]
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    return pc.binary_join_element_wise(m.labels.take(lo), m.labels.take(hi), "<->")


def _emit_p2p(m: MockBackend, cols: dict, links: pa.Array, plan: ConnectivityPlan, sink) -> None:
    a, b, status = cols.pop("src"), cols.pop("dst"), cols.pop("status")
    measured = cols.pop("measured")
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
