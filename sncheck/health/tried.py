"""The cards a layer's p2p rows tried, noted once while judging holds the frame of pairs.

Connectivity's coverage (:func:`sncheck.health.invariants.connectivity_coverage`) asks
which cards are an end of a p2p row whose pair was tried (its status neither unreachable
nor not run). Judging's frame of pairs (``metrics._p2p``, one per evaluation) holds the
same rows' ends and status as categorical codes, its unreachable rows already left out:
the cards are taken from it when it is made (one pass over small codes) and kept on the
context for the rows they came from. Read again on their own, at 131,072 cards the three
columns of 50 M rows cost 5.9 s CPU of judging's ~85 (round 19, cpu19), a third of it
decoding Parquet a second time.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pandas as pd

from sncheck.model import Status

STEP = 1 << 22  # rows a step: a mask of them is 4 MB


def cards_of(p: pd.DataFrame) -> set[str] | None:
    """The cards at either end of a row of ``p`` whose status is not ``not_run`` (a frame
    of pairs: ``src``, ``dst`` and ``status`` categoricals, no unreachable row); None
    where the columns are not so."""
    ends, status = (p["src"], p["dst"]), p["status"]
    if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in (*ends, status)):
        return None
    code = status.cat.codes.to_numpy()
    names = status.cat.categories.get_indexer([str(Status.UNREACHABLE), str(Status.NOT_RUN)])
    if names[0] >= 0 and (code == names[0]).any():
        return None
    at = [end.cat.codes.to_numpy() for end in ends]  # (src and dst may order one set of categories two ways)
    seen = [np.zeros(len(end.cat.categories) + 1, bool) for end in ends]  # (a missing end's code, -1: the last)
    every = names[1] < 0 or not (code == names[1]).any()
    for lo in range(0, len(code), STEP):
        tried = slice(None) if every else code[lo:lo + STEP] != names[1]  # (a missing status: tried)
        for a, s in zip(at, seen):
            s[a[lo:lo + STEP][tried]] = True
    out: set[str] = set()
    for end, s in zip(ends, seen):
        out.update(end.cat.categories[s[:-1]])
    return out


def note(ctx: Any, rows: object, p: pd.DataFrame) -> None:
    """Keep on ``ctx`` (``ctx.tried``) the cards ``p`` (the frame of pairs of ``rows``) tried."""
    cards = cards_of(p)
    try:
        ctx.tried = None if cards is None else (weakref.ref(rows), cards)
    except TypeError:  # (rows no weak reference can name: read again)
        ctx.tried = None


def noted(ctx: Any, rows: object) -> set[str] | None:
    """The cards noted for ``rows`` (the same object), else None: read them from the rows."""
    held = getattr(ctx, "tried", None)
    return held[1] if held is not None and held[0]() is rows else None
