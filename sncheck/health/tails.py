"""A card's tail over the repeats of its collectives: the stress layer's reading of jitter.

The stress layer judges a collective by medians (a group's time at each size, a pair's over its
looks, a card's launch lateness: :mod:`sncheck.health.lateness`), and a card that spikes on a
fifth of its operations leaves every median where it was: a jittery card passed the nightly, and
a ``--duration`` soak of 150 sweeps found nothing (reviews20 #11). Connectivity reads a pair's tail
(``p2p_latency_tail``: its ping-pong p99 over its median, rule ``p2p-latency-spikes``); this reads
the same of collectives, where a rank row says which card was late.

Each rank row of a collective gives its card's launch skew (``skew_us``: how much later than its
group's first rank it entered). A row is a spike where that skew is beyond ``SPIKE_X`` times the
card's own median skew in that group and at least ``SPIKE_US`` later than it: a steadily late card
(a slow one: the mock adds ``(1/s - 1) x 50 us`` to every one of its rows) has no spike, a jittery
one (the mock's ``jittery_card``: ``probability`` of its rows ``factor`` x the collective's latency
later) has that share of its rows. A card's value is the share of its rows that spiked, over every
group, size and repeat it ran (narrowing pairs too); fewer than ``MIN_SPIKES`` spikes read 0, one
stray launch is no tail, and so does a share under ``PEER_X`` times the other cards' median: a
machine whose every rank spikes alike (ranks sharing loaded CPU cores) has no jittery card. More sweeps sharpen the share, never hide it. A retest reads it over its
own rows (the suspect's pair collectives: a hundred rows and more), so one clean look never
releases a card that still spikes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sncheck.health.rankrows import AT_ONCE, rank_rows

SPIKE_X = 5.0  # a spike: beyond this times the card's median skew in its group ...
SPIKE_US = 10.0  # ... and this much later than it (launch skew: |N(0, 2 us)| a rank in the mock)
MIN_SPIKES = 3  # fewer spikes than this: no tail
PEER_X = 4.0  # a tail is a card's own: at least this times the other cards' median share
EXACT_UPTO = 64  # cards: the others' median left one out exactly up to this many; the whole median past it


def rank_skew_spikes(rows: object, ctx: object) -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Each card's share of its collectives' rank rows that spiked (see the module), with its
    ``spikes`` and ``rows`` counts. Read from the view's rank rows by cell (card, group), a run of
    cells at a time (:mod:`sncheck.health.rankrows`: millions of rank rows at fleet size)."""
    ranks = rank_rows(rows)
    if ranks.empty:
        return pd.DataFrame(columns=["entity", "kind", "value", "spikes", "rows"])
    median = ranks.cell_medians(np.ones(len(ranks.group), bool))
    counts = np.diff(ranks.starts)
    spikes = np.zeros(len(ranks.group), np.int64)
    lo = 0
    while lo < len(ranks.group):  # cells lo..hi, about AT_ONCE rows
        hi = max(lo + 1, int(np.searchsorted(ranks.starts, ranks.starts[lo] + AT_ONCE, side="right")) - 1)
        at = np.repeat(np.arange(lo, hi), counts[lo:hi])
        v, m = ranks.skew[ranks.starts[lo]:ranks.starts[hi]], median[at]
        spiked = (v > SPIKE_X * np.maximum(m, 0.0)) & (v - m >= SPIKE_US)
        spikes[lo:hi] = np.bincount(at - lo, weights=spiked, minlength=hi - lo).astype(np.int64)
        lo = hi
    finite = np.diff(np.r_[0, np.cumsum(np.isfinite(ranks.skew))][ranks.starts])  # rows with a skew, per cell
    n = np.bincount(ranks.card, weights=finite, minlength=len(ranks.cards)).astype(np.int64)
    k = np.bincount(ranks.card, weights=spikes, minlength=len(ranks.cards)).astype(np.int64)
    has = n > 0
    n, k, cards = n[has], k[has], np.asarray(ranks.cards)[has]
    share = k / n
    share = np.where((k >= MIN_SPIKES) & (share >= PEER_X * _others(share)), share, 0.0)
    return pd.DataFrame({"entity": cards, "kind": "card", "value": share, "spikes": k, "rows": n})


def _others(share: np.ndarray) -> np.ndarray:
    """Per card, the median share of the other cards (0 where it is alone)."""
    if len(share) > EXACT_UPTO:
        return np.full(len(share), float(np.median(share)))
    return np.array([float(np.median(np.delete(share, i))) if len(share) > 1 else 0.0 for i in range(len(share))])
