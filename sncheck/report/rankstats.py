"""Each card's launch skew over the collectives it took part in (sncheck.prom's
``sncheck_card_launch_skew_seconds``; issue 31): :class:`Skews` takes the rank rows a piece
at a time (23 M at 131,072 cards, 1.3 GB read whole), each kept as its card's code and its
value, in the run's one pass over them (:mod:`sncheck.store.passes`, beside evidence's read
of the same rows), and reduces them to a row a card when the pass ends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from sncheck.report.cardstats import US
from sncheck.report.codes import Codes, id_codes
from sncheck.report.p2pread import Reader
from sncheck.report.tables import floats
from sncheck.store.frames import to_frame


class Skews:
    """The rank rows' cards (as codes into ``cards``) and launch skews (us), the pairwise
    narrowing pass's rows left out (per pair, not a collective), added a piece at a time; a
    run store's piece read from its Arrow table's dictionaries (:class:`Reader`)."""

    columns = ("card", "group", "skew_us")

    def __init__(self) -> None:
        self.cards = Codes()
        self._codes: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._named = False
        self._reader = Reader(())

    def add(self, ranks: Any) -> None:
        got = _skew_piece(self._reader, ranks)
        if got is None:
            ranks = ranks if isinstance(ranks, pd.DataFrame) else to_frame([ranks], "rank")
            self._named = self._named or bool(ranks["card"].notna().any())
            # (left out by a mask: no copy of a fleet's millions of rank rows)
            keep = ~starts_with(ranks["group"], "pair:")
            (card,), names = id_codes(ranks["card"], dtype=np.int32)
            skew = floats(ranks["skew_us"])
        else:
            card, names, keep, skew, some = got
            self._named = self._named or some
        self._codes.append(self.cards.of(names)[card[keep]])
        self._values.append(skew[keep])

    def finish(self) -> pd.DataFrame:
        """Per card (``card``, ``skew``: the median of its skews, s), cards in order of
        their codes; empty where no row names a card."""
        codes, values, self._codes, self._values = self._codes, self._values, [], []
        if not self._named:
            return pd.DataFrame()
        value = np.concatenate(values)
        value *= US
        skew = pd.Series(value).groupby(np.concatenate(codes)).median()
        return pd.DataFrame({"card": np.asarray(self.cards.values, dtype=object)[skew.index.to_numpy()],
                             "skew": skew.to_numpy()})


def _skew_piece(reader: Reader, ranks: Any) -> tuple[np.ndarray, pd.Index, np.ndarray, np.ndarray, bool] | None:
    """A rank piece's card codes and names, which rows are collectives' (not the pairwise
    pass's ``pair:`` groups), their skew (us) and whether some row names a card, read from
    its Arrow table; None where it goes through its frame."""
    if isinstance(ranks, pd.DataFrame) or not pa.types.is_floating(ranks.column("skew_us").type):
        return None
    card, group = reader.ids("card", ranks.column("card")), reader.ids("group", ranks.column("group"))
    if card is None or group is None:
        return None
    keep = ~np.asarray([str(g).startswith("pair:") for g in group[1].tolist()], dtype=bool)[group[0]]
    skew = np.asarray(ranks.column("skew_us").to_numpy(), dtype=np.float64)
    return card[0], card[1], keep, skew, ranks.column("card").null_count < len(ranks)


def starts_with(col: pd.Series, prefix: str) -> np.ndarray:
    """Whether each value (as a string) starts with ``prefix``; a categorical column (the
    store's ids: millions of rank rows) is tested on its categories only."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = np.append(np.asarray(col.cat.categories.astype(str).str.startswith(prefix), dtype=bool),
                         "nan".startswith(prefix))   # code -1: a missing value, "nan" as astype(str) writes it
        return cats[col.cat.codes.to_numpy()]
    return col.astype(str).str.startswith(prefix).to_numpy(bool)
