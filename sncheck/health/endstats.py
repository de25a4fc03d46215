"""Per-card statistics over pair ends: one home for judging and the reports (issue 31).

A tier's pairs are two columns of card codes (``a``, ``b``); each pair is an end of both
cards. :class:`Ends` groups every end by its card (a counting sort, no hashing),
and :func:`card_medians` takes each card's median and count of a value per end from that
grouping. Judging reads them in ratio units per evaluation (the explanation search's first
look, :mod:`sncheck.health.firstlook`); the reports in raw units over every round of a run
(``sncheck.report.cardstats``): the numbers differ, the grouping and the median are one.
"""

from __future__ import annotations

import numpy as np

from sncheck.health.pairgroups import position_dtype

PerCard = tuple[np.ndarray, np.ndarray, np.ndarray]  # (card codes ascending, medians, counts)

SORT_AT_ONCE = 1 << 20  # codes ordered at once (counting_order: a few arrays of this many)


class Ends:
    """Every pair end by card, as a tier's pairs give them (``a``, ``b``: each pair's two
    card codes, below ``n_cards``): card c's run is its pairs where it is the first end
    (ascending), then where it is the second (ascending). Each column of ends is held as
    its pairs' order by card (:func:`counting_order`, int32 where the pairs fit) and each
    card's run start in it; a column already in order (a tier's first ends: its pairs are
    sorted by them) holds only its run starts, its order being the positions themselves.
    A tier sorted by its first ends holds 4 bytes a pair (both columns' orders: 8)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, n_cards: int) -> None:
        self.columns: list[tuple[np.ndarray | None, np.ndarray]] = []  # per column: (order or None, run starts)
        for ends in (a, b):
            starts = np.zeros(n_cards + 1, np.int64)
            np.cumsum(np.bincount(ends, minlength=n_cards)[:n_cards], out=starts[1:])
            in_order = len(ends) < 2 or bool((ends[1:] >= ends[:-1]).all())
            self.columns.append((None if in_order else counting_order(ends, starts), starts))
        self.starts = self.columns[0][1] + self.columns[1][1]  # where each card's run starts among every end

    def of(self, cards: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Every end of ``cards`` (codes; first ends, then second ends): its pair's position,
        and its slot: which of ``cards`` it is (an index into them) times ``width``, plus its
        place in that card's run (a card's first ends from 0, then its second ends)."""
        cards = np.asarray(cards, np.int64)
        pos, slot = [], []
        before: np.ndarray | int = 0  # (a card's second ends after its first ends)
        for order, starts in self.columns:
            lo = starts[cards]
            k = starts[cards + 1] - lo
            first = np.cumsum(k) - k  # each card's first end among this column's ends of cards
            step = np.arange(int(first[-1] + k[-1]) if len(k) else 0)
            at = np.repeat(lo - first, k) + step
            pos.append(at if order is None else order[at])
            slot.append(np.repeat(np.arange(len(cards)) * width + before - first, k) + step)
            before = k
        return np.concatenate(pos), np.concatenate(slot)

    def pairs(self, cards: np.ndarray) -> np.ndarray:
        """Every pair with an end among ``cards`` (positions, ascending, each once)."""
        cards = np.asarray(cards, np.int64)
        parts = []
        for order, starts in self.columns:
            lo = starts[cards]
            k = starts[cards + 1] - lo
            at = np.repeat(lo - (np.cumsum(k) - k), k) + np.arange(int(k.sum()))
            parts.append(at if order is None else order[at])
        at = np.sort(np.concatenate(parts))
        return at[np.r_[True, at[1:] != at[:-1]]] if len(at) > 1 else at


def counting_order(codes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` (int32 where the codes fit) by a counting sort:
    ``starts``, each code's run start (the cumulative count of the codes below it), and
    each chunk of :data:`SORT_AT_ONCE` codes put in place in turn after the chunks before
    it. A chunk's order is one sort of unique keys (code, place in the chunk): numpy's
    sort of integers, not a stable sort of every code (timsort, 1.7 s for 8.4 M random
    card codes; this ~0.2 s), and no array of every code's place beside the order."""
    n = len(codes)
    out: np.ndarray = np.empty(n, position_dtype(n))
    fill = starts[:-1].copy()  # each code's next free place
    shift = max(1, (SORT_AT_ONCE - 1).bit_length())
    for lo in range(0, n, SORT_AT_ONCE):
        key = codes[lo:lo + SORT_AT_ONCE].astype(np.int64)
        key <<= shift
        key += np.arange(len(key))
        key.sort()  # (unique keys: any sort is stable)
        code = key >> shift
        count = np.bincount(code, minlength=len(fill))
        place = (fill - (np.cumsum(count) - count))[code]  # each code's next place less its first in the chunk
        place += np.arange(len(key))
        key &= (1 << shift) - 1
        key += lo
        out[place] = key
        fill += count
    return out


def card_medians(ends: Ends, q, at_once: int) -> PerCard:
    """Per card with a measured end (a value of ``q`` not NaN): its code, the median of its
    ends' values and their count, ascending by card, from the tier's ends by card
    (:class:`Ends`, a card's run at a time). ``q``: each pair's value, read by positions
    (``q[positions]``: an array, or a column computed where read, such as
    :class:`sncheck.health.pairview.Derived`; nothing of every pair is made here). Each
    card's values are one row of a block, sorted along the rows (cards
    whose runs are within twice each other's length together; a row padded with NaN, which
    a sort puts last), at most ``at_once`` values a block: no hashing or grouping of every
    pair end (pandas' grouped median took twice as long at 16,384 cards). The median is the
    middle value, or ``(a + b) / 2`` of the two middle ones: pandas' grouped median to the bit."""
    runs = np.diff(ends.starts)
    med, n = np.full(len(runs), np.nan), np.zeros(len(runs), np.int64)
    cards = np.flatnonzero(runs)
    width = np.frexp(runs[cards].astype(float))[1]  # each run's length in bits: a block's runs within 2x
    for w in np.unique(width).tolist():
        alike = cards[width == w]
        row = int(runs[alike].max())
        step = max(1, at_once // row)
        for i in range(0, len(alike), step):
            rows = alike[i:i + step]
            at, slot = ends.of(rows, row)
            flat = np.full(len(rows) * row, np.nan)
            flat[slot] = q[at]
            del at, slot
            block = flat.reshape(len(rows), row)
            block.sort(axis=1)
            got = row - np.isnan(block).sum(axis=1)
            has = np.flatnonzero(got)
            lo, hi = block[has, (got[has] - 1) // 2], block[has, got[has] // 2]
            med[rows[has]] = np.where(got[has] % 2 == 1, lo, (lo + hi) / 2)
            n[rows] = got
    measured = np.flatnonzero(n)
    return measured, med[measured], n[measured]
