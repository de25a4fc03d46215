"""Ids (cards, tiers) as integer codes, for grouped passes over millions of rows.

The store's id columns are categoricals: their codes are used as they are, mapped onto
one index of the values the columns share, so no per-row string is ever built.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def id_codes(*cols: pd.Series) -> tuple[list[np.ndarray], pd.Index]:
    """Codes (int64, one array per column) into one index of the distinct values (as
    strings) the columns hold; only values that occur are in the index. A missing value
    is the string ``"nan"``, as ``astype(str)`` writes it."""
    if all(isinstance(c.dtype, pd.CategoricalDtype) for c in cols):
        cats = [np.append(c.cat.categories.astype(str).to_numpy(dtype=object), "nan") for c in cols]
        shared, values = pd.factorize(np.concatenate(cats))
        codes, start = [], 0
        for c, k in zip(cols, cats):
            local = c.cat.codes.to_numpy().astype(np.int64)
            local[local < 0] = len(k) - 1            # a missing value: the "nan" entry
            codes.append(shared[start:start + len(k)][local])
            start += len(k)
    else:
        shared, values = pd.factorize(pd.concat([c.astype(str) for c in cols], ignore_index=True))
        bounds = np.cumsum([0] + [len(c) for c in cols])
        codes = [shared[lo:hi].astype(np.int64) for lo, hi in zip(bounds[:-1], bounds[1:])]
    used = np.zeros(len(values), dtype=bool)
    for c in codes:
        used[c] = True
    if not used.all():  # categories no row holds (a filtered frame): leave them out
        renumber = np.cumsum(used) - 1
        codes = [renumber[c] for c in codes]
        values = values[used]
    return codes, pd.Index(values, dtype=object)
