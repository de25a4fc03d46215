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
    index a table of its categories' codes: one array of ``dtype`` per column is made,
    nothing wider (a fleet's 50 M pair ends as int32 are 200 MB a column, not 400 and a
    temporary)."""
    if all(isinstance(c.dtype, pd.CategoricalDtype) for c in cols):
        cats = [np.append(c.cat.categories.astype(str).to_numpy(dtype=object), "nan") for c in cols]
        shared, values = pd.factorize(np.concatenate(cats))
        codes, start = [], 0
        for c, k in zip(cols, cats):
            # a missing value's code, -1, takes the table's last entry: the "nan" one
            codes.append(shared[start:start + len(k)].astype(dtype)[c.cat.codes.to_numpy()])
            start += len(k)
    else:
        # (pandas 3 keeps a missing value missing through astype(str): factorize would give it -1, the last value)
        shared, values = pd.factorize(pd.concat([c.astype(str).fillna("nan") for c in cols], ignore_index=True))
        bounds = np.cumsum([0] + [len(c) for c in cols])
        codes = [shared[lo:hi].astype(dtype) for lo, hi in zip(bounds[:-1], bounds[1:])]
    used = np.zeros(len(values), dtype=bool)
    for c in codes:
        used[c] = True
    if not used.all():  # categories no row holds (a filtered frame): leave them out
        renumber: np.ndarray = (np.cumsum(used) - 1).astype(dtype)
        codes = [renumber[c] for c in codes]
        values = values[used]
    return codes, pd.Index(values, dtype=object)


def repeated(key: np.ndarray) -> np.ndarray:
    """Mask of the entries of ``key`` (integers) that occur more than once: one sort of
    the keys, then a binary search for the few repeated ones (no hashing)."""
    s = np.sort(key)
    twice = np.unique(s[1:][s[1:] == s[:-1]])
    if not len(twice):
        return np.zeros(len(key), dtype=bool)
    at = np.minimum(np.searchsorted(twice, key), len(twice) - 1)
    return twice[at] == key


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
