"""Ids (cards, tiers) as integer codes, for grouped passes over millions of rows.

The store's id columns are categoricals: their codes are used as they are, mapped onto
one index of the values the columns share, so no per-row string is ever built.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def id_codes(*cols: pd.Series, dtype: type = np.int64) -> tuple[list[np.ndarray], pd.Index]:
    """Codes (``dtype``, one array per column) into one index of the distinct values (as
    strings) the columns hold; only values that occur are in the index. A missing value
    is the string ``"nan"``, as ``astype(str)`` writes it. A categorical column's codes
    index a table of its categories' codes (:class:`IdTable`): one array of ``dtype`` per
    column is made, nothing wider (a fleet's 50 M pair ends as int32 are 200 MB a column,
    not 400 and a temporary)."""
    table = IdTable(*cols, dtype=dtype)
    return [table.every(i) for i in range(len(cols))], table.values


TAKE_ROWS = 1 << 20   # rows IdTable reads at once (a few arrays of this many)


class IdTable:
    """Codes of id columns into one index of the values they hold, as :func:`id_codes`
    gives them, taken for the rows asked (``take``, ``rows_of``) instead of for every row
    at once: a categorical column's own codes are read through a table of its
    categories' codes (one entry a category), so no array of every row's codes is made
    (at 131,072 cards the p2p rows' src, dst and tier codes were 550 MB). A plain column
    is coded whole, as :func:`id_codes` does."""

    def __init__(self, *cols: pd.Series, dtype: type = np.int64) -> None:
        self._raw: list[np.ndarray] = []
        self._tables: list[np.ndarray] = []
        self._codes: list[np.ndarray] = []
        if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in cols):
            # (pandas 3 keeps a missing value missing through astype(str): factorize would give it -1, the last value)
            shared, values = pd.factorize(pd.concat([c.astype(str).fillna("nan") for c in cols], ignore_index=True))
            bounds = np.cumsum([0] + [len(c) for c in cols])
            self._codes = [shared[lo:hi].astype(dtype) for lo, hi in zip(bounds[:-1], bounds[1:])]
            self.values = pd.Index(values, dtype=object)
            return
        self._raw = [c.cat.codes.to_numpy() for c in cols]   # (views of the columns' codes)
        cats = [np.append(c.cat.categories.astype(str).to_numpy(dtype=object), "nan") for c in cols]
        shared, values = pd.factorize(np.concatenate(cats))
        used, start = np.zeros(len(values), dtype=bool), 0
        for raw, k in zip(self._raw, cats):
            table = shared[start:start + len(k)].astype(dtype)
            start += len(k)
            held = np.zeros(len(k), dtype=bool)
            held[raw] = True   # (a missing value's code, -1, marks the last entry: the "nan" one)
            used[table[held]] = True
            self._tables.append(table)
        if not used.all():  # categories no row holds (a filtered frame): leave them out
            renumber: np.ndarray = (np.cumsum(used) - 1).astype(dtype)
            self._tables = [renumber[t] for t in self._tables]
            values = values[used]
        self.values = pd.Index(values, dtype=object)

    def every(self, i: int) -> np.ndarray:
        """Column ``i``'s codes, every row's."""
        return self._tables[i][self._raw[i]] if self._tables else self._codes[i]

    def take(self, i: int, at: np.ndarray, through: np.ndarray | None = None) -> np.ndarray:
        """Column ``i``'s codes at the rows ``at`` (positions), or ``through[code]`` for
        each (``through``: one entry a value), ``TAKE_ROWS`` rows at a time."""
        if not self._tables:
            codes = self._codes[i]
            return codes[at] if through is None else through[codes[at]]
        table = self._tables[i] if through is None else through[self._tables[i]]
        raw = self._raw[i]
        out = np.empty(len(at), dtype=table.dtype)
        for lo in range(0, len(at), TAKE_ROWS):
            out[lo:lo + TAKE_ROWS] = table[raw[at[lo:lo + TAKE_ROWS]]]
        return out

    def rows_of(self, i: int, code: int) -> np.ndarray:
        """Positions (int32 where they fit) of the rows whose column ``i`` holds the value
        ``code``, found ``TAKE_ROWS`` rows at a time."""
        if not self._tables:
            return narrow_positions(np.flatnonzero(self._codes[i] == code))
        table, raw = self._tables[i], self._raw[i]
        hit = np.flatnonzero(table == code)
        hit[hit == len(table) - 1] = -1   # the table's last entry is a missing value's, -1
        if not len(hit):
            return np.zeros(0, dtype=np.int32)
        hit = hit.astype(raw.dtype)
        wide = len(raw) >= 2**31
        parts = []
        for lo in range(0, len(raw), TAKE_ROWS):
            chunk = raw[lo:lo + TAKE_ROWS]
            mask = chunk == hit[0] if len(hit) == 1 else np.isin(chunk, hit)
            at = np.flatnonzero(mask)
            parts.append(at + lo if wide else (at + lo).astype(np.int32))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


FEW_BUCKETS = 12   # buckets found by a scan per bucket; more by a counting sort (bucket_positions)


def bucket_positions(codes: np.ndarray, bucket_of: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions of ``codes`` grouped by their bucket (``bucket_of[code]``, each below
    ``buckets``), each bucket's positions in their order, and where each bucket starts
    among them (``buckets + 1`` offsets): bucket ``k``'s rows are
    ``positions[starts[k]:starts[k + 1]]``, what ``np.flatnonzero(bucket_of[codes] == k)``
    gives. A stable counting sort :data:`TAKE_ROWS` codes at a time: one pass to count,
    one to place (int32 positions where they fit; no array of every code's bucket). A
    mask per bucket scans every code once a bucket, so a fleet's tiers grew with the
    square of their pairs (at 131,072 cards 33 M scale-out pairs in 66 slices: 33 s of
    the report phase's CPU)."""
    narrow = np.int16 if buckets < 2**15 else np.int32   # (a 16-bit key: numpy's stable sort is a radix sort)
    wide = len(codes) >= 2**31
    if buckets <= FEW_BUCKETS:   # a scan of the codes' buckets per bucket costs less than the sort
        ids = bucket_of[codes].astype(narrow, copy=False)
        runs = [np.flatnonzero(ids == k) if wide else np.flatnonzero(ids == k).astype(np.int32)
                for k in range(buckets)]
        del ids
        starts = np.zeros(buckets + 1, dtype=np.int64)
        np.cumsum([len(r) for r in runs], out=starts[1:])
        return (np.concatenate(runs) if runs else np.zeros(0, dtype=np.int32)), starts
    counts = np.zeros(buckets, dtype=np.int64)
    for lo in range(0, len(codes), TAKE_ROWS):
        counts += np.bincount(bucket_of[codes[lo:lo + TAKE_ROWS]], minlength=buckets)
    starts = np.zeros(buckets + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    out = np.empty(len(codes), dtype=np.int64 if wide else np.int32)
    fill = starts[:-1].copy()   # each bucket's next free place
    for lo in range(0, len(codes), TAKE_ROWS):
        ids = bucket_of[codes[lo:lo + TAKE_ROWS]].astype(narrow, copy=False)
        order = np.argsort(ids, kind="stable")   # (this chunk's rows by bucket, each bucket's in order)
        here = np.bincount(ids, minlength=buckets)
        took = 0
        for k in np.flatnonzero(here).tolist():   # each bucket's run of the chunk, appended to the bucket's
            got = int(here[k])
            out[fill[k]:fill[k] + got] = order[took:took + got]
            out[fill[k]:fill[k] + got] += lo
            took += got
            fill[k] += got
    return out, starts


def repeated(key: np.ndarray) -> np.ndarray:
    """Mask of the entries of ``key`` (integers) that occur more than once: one sort of
    the keys says whether any does (most often none: a supernode's directions); where some
    do, pandas' hash table marks them (a binary search of every key among the repeated
    ones took 3x the hash's CPU: 5 s of 33 M synthetic scale-out pairs' 26 s)."""
    s = np.sort(key)
    if not (s[1:] == s[:-1]).any():
        return np.zeros(len(key), dtype=bool)
    return pd.Series(key, copy=False).duplicated(keep=False).to_numpy()


def merge_repeated(key: np.ndarray, cols: dict[str, np.ndarray], how: dict[str, str]) -> dict[str, np.ndarray]:
    """Rows with the same ``key`` merged into the first of them (``how``: column ->
    ``median``, ``sum``, ``all`` or ``first``), the rest dropped; first-seen order kept.
    Rows whose key is unique pass as they are, so only the repeated ones are grouped."""
    rep = repeated(key)
    if not rep.any():
        return cols
    at = np.flatnonzero(rep)
    _, first, group = np.unique(key[at], return_index=True, return_inverse=True)
    g = pd.DataFrame({k: cols[k][at] for k, h in how.items() if h != "first"}).groupby(group.ravel())
    head = at[first]
    keep = ~rep
    keep[head] = True
    out = {k: v[keep] for k, v in cols.items()}   # new arrays: the caller's stay as they are
    where = np.cumsum(keep)[head] - 1             # each head's place among the rows kept
    for k, h in how.items():
        if h != "first":
            out[k][where] = getattr(g[k], h)().to_numpy()
    return out


def narrow_positions(positions: np.ndarray) -> np.ndarray:
    """Row positions as int32 where they are below 2**31 (half the memory of a fleet's
    tens of millions of positions)."""
    return positions.astype(np.int32) if len(positions) and positions.max() < 2**31 else positions


class Codes:
    """One index of names over pieces read one after another (a run's p2p rows a part at a
    time, each with its own categories): :meth:`of` gives a piece's values (an
    :class:`IdTable`'s, in its order) their codes in the index, new names appended in the
    order they first come, so a name keeps one code over every piece."""

    def __init__(self) -> None:
        self.values = pd.Index([], dtype=object)
        self._last: tuple[pd.Index, np.ndarray] | None = None

    def of(self, values: pd.Index, dtype: type = np.int32) -> np.ndarray:
        """The codes of ``values`` (each a name), new ones added. The index last given, given
        again (a run's pieces naming every card: :class:`~sncheck.report.p2pread.Reader`),
        takes its codes again (names keep their codes), not a look-up of every name."""
        if self._last is not None and self._last[0] is values:
            return self._last[1].astype(dtype, copy=False)
        at = self.values.get_indexer(values)
        new = at < 0
        if new.any():
            self.values = self.values.append(pd.Index(values[new], dtype=object))
            at = self.values.get_indexer(values)
        self._last = (values, at)
        return at.astype(dtype)
