"""The stress layer's rank rows for judging, as integer codes and values (issue 31).

A rank row is one card's skew in one collective of one group: at 131,072 cards 29 M of them.
Judging reads them four ways: each card's launch lateness (:func:`sncheck.health.metrics.rank_skew`,
medians per card and group, then per card), where a late card was measured
(``sncheck.health.ops._Sides``: medians per card over some groups), which cards and groups
took part (:func:`sncheck.health.invariants.stress_coverage`) and each card's summary for the
history (:func:`sncheck.health.summaries.summarize`). Each read a frame of every rank row
(the view kept it, 16 bytes a row) and grouped it whole, its temporaries a dozen arrays of
every row: the stress layer's judging was 3,809 MiB at 131,072 cards (README "Fleet scale").

:class:`RankRows` reads them a piece at a time (``RowFrames.pieces``) into a cell code each,
the (card, group) it is of, and its skew, then orders the skews by cell (a counting sort,
piece by piece): 8 bytes a row held, the cells (a few a card) beside them. Cells are ordered
by card, then group, so a card's rows are one run, and every statistic is pandas' grouped
median over a run of cards at a time (:data:`AT_ONCE` rows): the same values, the same
floats. Rows naming no group or no card say nothing of one and are left out. One view of the
rows (a layer's judging) reads them once (:func:`rank_rows`)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from sncheck.health.endstats import counting_order
from sncheck.store.frames import RowFrames, kind_rows

AT_ONCE = 1 << 20  # rows grouped at once (a few arrays of this many)
COLUMNS = ["group", "card", "skew_us"]
PAIRS = "pair:"  # the pairwise narrowing's groups: a pair each, not a collective's


class RankRows:
    """The rank rows by cell: ``groups``, ``cards`` (names, by code); per cell (ascending by
    card, then group) its ``group`` and ``card`` codes and its rows' run ``starts`` (one more
    than the cells) in ``skew`` (us, a cell's rows in their order); ``order``: the cards in
    the order the collectives' rows (not the pairs') first name them."""

    def __init__(self, groups: np.ndarray, cards: np.ndarray, group: np.ndarray, card: np.ndarray,
                 starts: np.ndarray, skew: np.ndarray, order: np.ndarray) -> None:
        self.groups, self.cards, self.group, self.card = groups, cards, group, card
        self.starts, self.skew, self.order = starts, skew, order
        self.pairs = np.fromiter((str(g).startswith(PAIRS) for g in groups), bool, len(groups))

    @property
    def empty(self) -> bool:
        return not len(self.group)

    def collectives(self) -> np.ndarray:
        """Which cells are of a collective (not of the pairwise narrowing's pairs)."""
        return ~self.pairs[self.group]

    def cell_medians(self, cells: np.ndarray) -> np.ndarray:
        """Each cell's median skew (NaN where its rows hold none), of the cells ``cells`` (a mask)."""
        out = np.full(len(self.group), np.nan)
        for lo, hi in self._runs(cells):
            at, v = self._rows(lo, hi, cells)
            if len(v):
                m = pd.Series(v).groupby(at).median()
                out[m.index.to_numpy()] = m.to_numpy()
        return out

    def card_medians(self, cells: np.ndarray, added: np.ndarray | None = None,
                     spread: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per card with a row in ``cells`` (a mask): its code (ascending), the median of its
        rows' skews (each plus ``added`` of its cell, where given), the median of their absolute
        deviations from it (``spread``; else NaN) and how many are not missing."""
        codes, med, mad, n = [], [], [], []
        for lo, hi in self._runs(cells):
            at, v = self._rows(lo, hi, cells)
            if not len(v):
                continue
            if added is not None:
                v = v + added[at]
            card = self.card[at]
            values = pd.Series(v)
            by = values.groupby(card)
            m = by.median()
            codes.append(m.index.to_numpy())
            med.append(m.to_numpy())
            n.append(by.count().to_numpy())
            if spread:  # (as pandas' transform and grouped median of the deviations give it)
                mad.append((values - by.transform("median")).abs().groupby(card).median().to_numpy())
            else:
                mad.append(np.full(len(m), np.nan))
        if not codes:
            empty = np.zeros(0)
            return np.zeros(0, np.int64), empty, empty, np.zeros(0, np.int64)
        return (np.concatenate(codes), np.concatenate(med), np.concatenate(mad), np.concatenate(n))

    def _runs(self, cells: np.ndarray) -> Iterator[tuple[int, int]]:
        """Ranges of cells holding whole cards and about :data:`AT_ONCE` rows (a card with
        more is a range alone), only those with a cell in ``cells``."""
        if not len(self.card):
            return
        first = np.flatnonzero(np.r_[True, self.card[1:] != self.card[:-1]])  # each card's first cell
        bounds = np.append(first, len(self.card))
        rows = self.starts[bounds]
        lo = 0
        while lo < len(bounds) - 1:
            hi = max(lo + 1, int(np.searchsorted(rows, rows[lo] + AT_ONCE, side="right")) - 1)
            a, b = int(bounds[lo]), int(bounds[hi])
            if cells[a:b].any():
                yield a, b
            lo = hi

    def _rows(self, lo: int, hi: int, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of cells ``lo``..``hi`` in ``cells``: each one's cell and skew."""
        counts = np.diff(self.starts[lo:hi + 1])
        at = np.repeat(np.arange(lo, hi), counts)
        v = self.skew[self.starts[lo]:self.starts[hi]]
        keep = cells[at]
        return (at, v) if keep.all() else (at[keep], v[keep])


_READ: "weakref.WeakKeyDictionary[RowFrames, RankRows]" = weakref.WeakKeyDictionary()


def rank_rows(rows: Any) -> RankRows:
    """The rank rows of ``rows`` (a view of a run's rows, or one frame of rows with a ``kind``
    column), read once per view: the layer's judging and its invariants share them, and they
    go with the view."""
    if not isinstance(rows, RowFrames):
        return _read([kind_rows(rows, "rank", COLUMNS)])
    got = _READ.get(rows)
    if got is None:
        got = _READ[rows] = _read(rows.pieces("rank", COLUMNS))
    return got


def of_columns(group: pd.Series, card: pd.Series, skew: pd.Series) -> RankRows:
    """Rank rows of three columns."""
    return _read([pd.DataFrame({"group": group, "card": card, "skew_us": skew})])


def _read(pieces: Any) -> RankRows:
    names: tuple[dict[str, int], dict[str, int]] = ({}, {})
    locals_, keys, values, seen = [], [], [], []
    for piece in pieces:
        if not len(piece):
            continue
        g = _codes(piece["group"], names[0])
        c = _codes(piece["card"], names[1])
        keep = (g >= 0) & (c >= 0)
        g, c = g[keep], c[keep]
        skew = np.asarray(piece["skew_us"].to_numpy(dtype=float, na_value=np.nan), dtype=np.float64)[keep]
        key = (c.astype(np.int64) << 32) | g
        local, uniq = pd.factorize(key)
        locals_.append(local.astype(np.int32))
        keys.append(uniq)
        values.append(skew)
        pairs = np.fromiter((k.startswith(PAIRS) for k in names[0]), bool, len(names[0]))
        seen.append(pd.unique(c[~pairs[g]]))
    groups = np.asarray(list(names[0]), dtype=object)
    cards = np.asarray(list(names[1]), dtype=object)
    cell_keys, inverse = np.unique(np.concatenate(keys) if keys else np.zeros(0, np.int64), return_inverse=True)
    counts = np.zeros(len(cell_keys), np.int64)
    at = 0
    for i, (local, uniq) in enumerate(zip(locals_, keys)):
        cell = inverse[at:at + len(uniq)].astype(np.int32)[local]  # each row's cell
        at += len(uniq)
        locals_[i] = cell
        counts += np.bincount(cell, minlength=len(cell_keys))
    starts = np.zeros(len(cell_keys) + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    skew = np.empty(int(starts[-1]))
    fill = starts[:-1].copy()
    while locals_:  # each piece's skews to their cells' places (a counting sort, a piece at a time)
        cell, v = locals_.pop(0), values.pop(0)
        mine = np.zeros(len(cell_keys) + 1, np.int64)
        np.cumsum(np.bincount(cell, minlength=len(cell_keys)), out=mine[1:])
        order = counting_order(cell, mine)
        place = fill[cell[order]] + (np.arange(len(cell)) - mine[cell[order]])
        skew[place] = v[order]
        fill += np.diff(mine)
    order_cards = pd.unique(np.concatenate(seen)) if seen else np.zeros(0, np.int64)
    return RankRows(groups, cards, (cell_keys & 0xFFFFFFFF).astype(np.int32), (cell_keys >> 32).astype(np.int32),
                    starts, skew, np.asarray(order_cards, np.int64))


def _codes(col: pd.Series, names: dict[str, int]) -> np.ndarray:
    """``col``'s values as codes into ``names`` (added where new); -1 where missing. A
    categorical's own codes are used, its categories looked up once each."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        raw, cats = col.cat.codes.to_numpy(), col.cat.categories
    else:
        raw, cats = pd.factorize(col)
    table = np.fromiter((names.setdefault(str(v), len(names)) for v in cats), np.int32, len(cats))
    return np.append(table, np.int32(-1))[raw]
