"""Which rows of a metric frame are one pair (:func:`sncheck.health.pairview.summarise`'s
grouping): per tier, the rows whose two cards are known, each row's pair code, and each
pair's two ends (card codes, the lower first; pairs in order of their key).

The p2p metrics of one evaluation (bandwidth, latency, its tail, corrupted payloads) are
row selections of one frame of pairs (``sncheck.health.metrics._p2p``: its rows keep their
place as the frame's index, its id columns one set of categories). Their grouping is that
frame's, made once per evaluation (a :class:`Family`, in the evaluation's cache) and
restricted to each metric's rows, not sorted again per metric: at 16,384 cards the four
metrics grouped the same 4.1 M rows four times, about half of ``summarise``'s time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

FAMILY = "_groups"  # the evaluation cache's key: (FAMILY, id of the src column's categories)
ID_COLUMNS = ("src", "dst", "tier")  # categoricals, each with its categories (dtype) the frame's own
TierGroup = list  # [tier, rows (positions in the frame), pair code per row, first ends, second ends]


def tier_groups(cells: pd.DataFrame, table: pd.DataFrame, cache: dict | None = None,
                keep: np.ndarray | None = None) -> Iterator[TierGroup]:
    """Per tier (by name), the rows of ``cells`` whose two cards are in ``table``
    (ascending), each one's pair code, and each pair's ends (positions in ``table``).
    ``cache``: an evaluation's (``DetectContext.cache``), where a frame whose rows are a
    selection of one already grouped takes that grouping. ``keep``: only these rows (a
    mask), as the grouping of ``cells[keep]`` gives them, their positions still in ``cells``
    (a metric that is a row selection of the frame of pairs, read without copying it:
    :mod:`sncheck.health.p2ptiers`).

    Each item is a list its reader empties (``clear()``) as it takes it: at fleet size each
    array is tens of millions of values, let go when the reader lets go of its own."""
    if keep is not None:
        yield from _kept(cells, table, cache, np.asarray(keep, bool))
        return
    dtypes = tuple(cells[c].dtype for c in ID_COLUMNS)
    dtype = dtypes[0] if all(isinstance(d, pd.CategoricalDtype) for d in dtypes) else None
    key = (FAMILY, id(dtype))
    if cache is not None and dtype is not None:
        family = cache.get(key)
        if family is not None and all(d is e for d, e in zip(family.dtypes, dtypes)):
            code = family.codes_of(cells)
            if code is not None:
                yield from family.restricted(cells, table, code)
                return
        if _whole(cells.index):  # the rows its selections come from: group them once, for all
            family = Family(cells)
            for item in _grouped(cells, table):
                family.record(item)
                yield item
            cache[key] = family  # kept once every tier is recorded: a reader stopped part-way keeps none
            return
    yield from _grouped(cells, table)


def _kept(cells: pd.DataFrame, table: pd.DataFrame, cache: dict | None, keep: np.ndarray) -> Iterator[TierGroup]:
    """:func:`tier_groups` of the rows ``keep`` of ``cells``, at their places in ``cells``:
    through the frame's grouping where the evaluation holds it (no row of it copied), else
    by grouping the rows kept."""
    dtypes = tuple(cells[c].dtype for c in ID_COLUMNS)
    family = cache.get((FAMILY, id(dtypes[0]))) if cache is not None else None
    if family is not None and all(d is e for d, e in zip(family.dtypes, dtypes)) and \
            family.codes_of(cells) is family.group:
        yield from family.restricted(cells, table, family.group, keep)
        return
    rows = np.flatnonzero(keep)
    for item in tier_groups(cells.iloc[rows], table):
        item[1] = rows[item[1]].astype(position_dtype(len(cells)), copy=False)
        yield item


def _whole(index: pd.Index) -> bool:
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays are one (the same memory, shape and type: a frame's shallow copy's column)."""
    return a.__array_interface__ == b.__array_interface__


class Family:
    """The grouping of a frame of pairs: each row's pair code over every tier (-1: a card
    not in the table), each tier's first code and number of pairs; and the frame's id and
    tier codes (views of its columns: no copy) and categories, by which a selection of its
    rows is known."""

    def __init__(self, cells: pd.DataFrame) -> None:
        self.dtypes = tuple(cells[c].dtype for c in ID_COLUMNS)
        self.columns = [cells[c].array.codes for c in ID_COLUMNS]
        self.group = np.full(len(cells), -1, np.int32 if len(cells) < 2**31 else np.int64)
        self.tiers: list[tuple[str, int, int]] = []  # (tier, its first pair code, its pairs)

    def record(self, item: TierGroup) -> None:
        name, at, inverse, pa, _ = item
        first = sum(t[2] for t in self.tiers)
        self.group[at] = inverse
        self.group[at] += first
        self.tiers.append((name, first, len(pa)))

    def codes_of(self, cells: pd.DataFrame) -> np.ndarray | None:
        """Each row's pair code, where ``cells`` is a selection of the frame's rows (its
        index their places: the same cards and tier on each); else None. The frame's rows
        all, in its order (a metric that keeps every row): the codes themselves, no copy."""
        mine = [cells[c].array.codes for c in ID_COLUMNS]
        if _whole(cells.index) and len(cells) == len(self.group) and all(map(_same, mine, self.columns)):
            return self.group
        if not pd.api.types.is_integer_dtype(cells.index.dtype):
            return None
        labels = cells.index.to_numpy()
        if len(labels) and (labels.min() < 0 or labels.max() >= len(self.group)):
            return None
        if not all(np.array_equal(column[labels], codes) for column, codes in zip(self.columns, mine)):
            return None
        return self.group[labels]

    def restricted(self, cells: pd.DataFrame, table: pd.DataFrame, code: np.ndarray,
                   keep: np.ndarray | None = None) -> Iterator[TierGroup]:
        """:func:`tier_groups` of ``cells``, whose rows' pair codes are ``code``: each tier's
        pairs that ``cells`` holds a row of (their order kept, their codes renumbered),
        their ends from the rows (no pair's ends held between metrics: 8 bytes a pair);
        ``keep``: of the rows this mask keeps only (their positions in ``cells``)."""
        src, dst = Positions(cells["src"], table.index), Positions(cells["dst"], table.index)
        wide = position_dtype(len(table))
        for name, first, n in self.tiers:
            inside = (code >= first) & (code < first + n)
            if keep is not None:
                inside &= keep
            at = np.flatnonzero(inside).astype(code.dtype, copy=False)
            del inside
            if not len(at):
                continue
            inverse = code[at]
            inverse -= first
            held = np.ones(n, bool) if code is self.group and keep is None else np.bincount(inverse, minlength=n) > 0
            if not held.all():  # (a selection without some pairs' rows: the rest, renumbered)
                inverse = (np.cumsum(held, dtype=inverse.dtype) - 1)[inverse]
            ta, tb = src.of(at), dst.of(at)
            pa: np.ndarray = np.empty(int(held.sum()), wide)
            pb: np.ndarray = np.empty(len(pa), wide)
            pa[inverse] = np.minimum(ta, tb)  # (every row of a pair has its two ends)
            pb[inverse] = np.maximum(ta, tb)
            del ta, tb
            item = [name, at, inverse, pa, pb]
            del at, inverse, pa, pb
            yield item


def _grouped(cells: pd.DataFrame, table: pd.DataFrame) -> Iterator[TierGroup]:
    """:func:`tier_groups` from the frame's own columns: each tier's pair keys, sorted."""
    src, dst = Positions(cells["src"], table.index), Positions(cells["dst"], table.index)
    # Each tier's rows whose two cards are known, in row order: one tier at a time (no
    # array of every row beyond the frame's own columns: a fleet has tens of millions).
    present = {}
    small = len(cells) < 2**31  # (positions as int32: half the memory of every tier's rows)
    known = src.all_known() and dst.all_known()  # (a fleet's rows: no row's cards looked up twice)
    for name, at in tier_rows(cells["tier"]):
        if not known:
            at = at[(src.of(at) >= 0) & (dst.of(at) >= 0)]
        if len(at):
            present[name] = at.astype(np.int32) if small else at
    for t in sorted(present):
        at = present.pop(t)
        ta, tb = src.of(at), dst.of(at)
        # the pair's key, built in place; each array of the tier's rows let go when done
        # (at 131,072 cards a tier is 40 M rows: every int64 array of them 320 MB)
        key = np.minimum(ta, tb).astype(np.int64, copy=False)
        key *= len(table)
        key += np.maximum(ta, tb)
        del ta, tb
        uniq, inverse = unique_inverse(key)
        del key
        # the pairs' ends, held for the search: int32 where the cards fit, each written in
        # place (no int64 column of them beside the keys)
        wide = position_dtype(len(table))
        pa: np.ndarray = np.empty(len(uniq), wide)
        pb: np.ndarray = np.empty(len(uniq), wide)
        np.floor_divide(uniq, len(table), out=pa, casting="unsafe")
        np.remainder(uniq, len(table), out=pb, casting="unsafe")
        del uniq
        item = [t, at, inverse, pa, pb]
        del at, inverse, pa, pb
        yield item


def position_dtype(n: int) -> type:
    """The narrowest of int32 and int64 holding codes below ``n`` (a fleet's pair
    summaries and their index are tens of millions of them, held for the whole search)."""
    return np.int32 if n < 2**31 else np.int64


def unique_inverse(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)``, by a stable sort: the rows come round by
    round, each round's pairs in order, and a stable sort (timsort) takes such runs in
    one pass where ``np.unique``'s quicksort sorts from scratch (6x faster at fleet size)."""
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    first = np.empty(len(key), bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    uniq = ordered if first.all() else ordered[first]  # (every pair once, as a fleet's rounds measure: no copy)
    del ordered
    # the group codes as int32 where they fit (a tier of a fleet is tens of millions of rows)
    code = np.int32 if len(key) < 2**31 else np.int64
    rank = np.cumsum(first, dtype=code)
    del first
    rank -= 1
    inverse = np.empty(len(key), code)
    inverse[order] = rank
    return uniq, inverse


class Positions:
    """Each row's position in ``index`` by its text (-1: not there), for the rows asked
    (no array of every row's). A categorical column (the p2p ids) looks up its
    categories once: converting millions of rows to text took most of a fleet's judging."""

    def __init__(self, column: pd.Series, index: pd.Index) -> None:
        if isinstance(column.dtype, pd.CategoricalDtype):
            self._codes = column.cat.codes.to_numpy()
            at = np.append(index.get_indexer(column.cat.categories.astype(str)), -1)
            # int32 where the index fits: each row asked for gets one (tens of millions at fleet size)
            self._at: np.ndarray | None = at.astype(np.int32) if len(index) < 2**31 else at
        else:
            self._codes, self._at = index.get_indexer(column.astype(str)), None

    def of(self, rows: np.ndarray) -> np.ndarray:
        return self._codes[rows] if self._at is None else self._at[self._codes[rows]]

    def all_known(self) -> bool:
        """Whether every row's text is in the index (no position -1): a categorical's
        from its categories and codes, without looking up its rows."""
        if self._at is None:
            return bool((self._codes >= 0).all())
        return bool((self._at[:-1] >= 0).all()) and (not len(self._codes) or int(self._codes.min()) >= 0)


def tier_rows(column: pd.Series) -> list[tuple[str, np.ndarray]]:
    """Each value of ``column`` (as :func:`codes` names it: text, NaN where missing) with
    the positions of its rows, ascending."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        code = column.cat.codes.to_numpy()
        names: list = [*column.cat.categories.astype(str).tolist(), np.nan]
        seen = np.flatnonzero(np.bincount(code.astype(np.int64) + 1, minlength=1)) - 1
        return [(names[c], np.flatnonzero(code == c)) for c in seen.tolist()]
    code64, names = codes(column)
    return [(names[c], np.flatnonzero(code64 == c)) for c in np.flatnonzero(np.bincount(code64, minlength=1)).tolist()]


def codes(column: pd.Series) -> tuple[np.ndarray, list]:
    """Each row's code and the text of each code (``astype(str)``; a missing value is NaN,
    the last code): a categorical column through its categories, no text per row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        code, names = column.cat.codes.to_numpy(np.int64), column.cat.categories.astype(str).tolist()
    else:
        code, uniques = pd.factorize(column.astype(str))
        names = list(uniques)
    return np.where(code < 0, len(names), code), [*names, np.nan]  # missing stays missing, as astype(str)
