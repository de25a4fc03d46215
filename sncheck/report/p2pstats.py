"""The reports' readers of the p2p and rank rows, fed by one read per run (issue 31):
report.html's connectivity view (:class:`Drawn`: the rows a map can draw), sncheck.prom's
card series (the per-card statistics, :mod:`sncheck.report.cardstats`) and its launch skews
(:mod:`sncheck.report.rankstats`) are builders of the run's one pass over each kind's rows
(:mod:`sncheck.store.passes`), never a pass each (at 131,072 cards a read of the 50.2 M p2p
rows' columns is 20-25 s CPU).

:func:`expect` says which builders the formats a run renders will ask for
(:func:`sncheck.report.outputs`; the run says it before evidence, the first reader of the
rows, whose pass then builds them too); each report takes its own, given once and then let go
(the view's rows are never kept). A report that was not expected, or asks again, gets a pass
of its own: the values are the same either way (each builder sees every piece, in order). A
view's rows are fixed when it is made (a run store's view holds the parts written by then),
so what waits for a report is what its own pass over the view would give.

These are the run's raw values over every p2p row (every layer's rounds; an unreachable
host's rows are failed pairs): judging's per-card statistics are per evaluation and in
ratio units (:mod:`sncheck.health.firstlook`), which would not give these numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from sncheck.report.cardstats import TierRows
from sncheck.report.codes import Codes, narrow_positions
from sncheck.report.p2pread import Piece, pieces_of
from sncheck.report.rankstats import Skews
from sncheck.report.tables import tables
from sncheck.store.frames import RowFrames
from sncheck.store.passes import Make, one_pass
from sncheck.topology import SCALE_OUT


class Drawn:
    """The p2p rows a map can draw, added a piece at a time: every row but the scale-out
    ones (between supernodes, never drawn), as card codes (``src``, ``dst``: int32, into
    ``cards``, every card any row names, scale-out ones too), tier codes (``tier``: int16,
    into ``tiers``, a row without one intra_host or scale_up by host, :func:`_tiers`),
    ``ok`` and each metric's columns (``values``). At 131,072 cards the view read every p2p
    row whole (50.2 M, 2.97 GB); 33 M of them are scale-out. ``named``: whether some row
    names a src and some a dst."""

    columns = ("src", "dst", "tier", "status", "bw_GBps", "bw_rev_GBps", "lat_us")   # what the view reads
    decoder = staticmethod(pieces_of)   # (a piece's codes made once, for the card table too)
    values_read = ("bw_GBps", "bw_rev_GBps", "lat_us")

    def __init__(self) -> None:
        self._cards, self._tiers = Codes(), Codes()
        self._got: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "dst", "tier", "ok", *self.values_read)}
        self._named = [False, False]

    def add(self, piece: Piece) -> None:
        """A piece of the rows (:class:`~sncheck.report.p2pread.Piece`), in row order."""
        self._named = [self._named[0] or piece.named[0], self._named[1] or piece.named[1]]
        code = self._cards.of(piece.cards)   # (this piece's codes -> the run's)
        tier, names = piece.tiers["drawn"]
        tier = self._tiers.of(names, np.int16)[tier]
        at = narrow_positions(np.flatnonzero(tier != self._tiers.values.get_indexer([SCALE_OUT])[0]))
        got = self._got
        got["src"].append(code[piece.src[at]])
        got["dst"].append(code[piece.dst[at]])
        got["tier"].append(tier[at])
        got["ok"].append(piece.ok[at])
        for c in self.values_read:
            got[c].append(piece.values[c][at])

    def finish(self) -> "Drawn":
        self.named = all(self._named)
        self.cards, self.tiers = self._cards.values, list(self._tiers.values)
        joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in self._got.items()}
        del self._got
        self.src, self.dst, self.tier, self.ok = (joined.pop(k) for k in ("src", "dst", "tier", "ok"))
        self.values = joined
        return self


# What each report's reader is built by, per kind of rows: a pass that builds several
# finishes the card table first (its rows reduced to one a card and tier) before the drawn
# rows are joined (TierRows.finish_first).
BUILDERS: dict[str, dict[str, Make]] = {"p2p": {"cards": TierRows, "drawn": Drawn}, "rank": {"skew": Skews}}
READS = {"html": {"p2p": ("drawn",)}, "prometheus": {"p2p": ("cards",), "rank": ("skew",)}}   # which format asks


def reads(formats: Iterable[str]) -> dict[str, dict[str, Make]]:
    """The builders the reports of ``formats`` will ask for, per kind of rows."""
    wanted = {(kind, n) for f in formats for kind, names in READS.get(f, {}).items() for n in names}
    return {kind: {n: make for n, make in makes.items() if (kind, n) in wanted}
            for kind, makes in BUILDERS.items() if any((kind, n) in wanted for n in makes)}


def expect(rows: Any, formats: Iterable[str]) -> None:
    """The reports of ``formats`` will read ``rows``: the first reader of each kind's rows
    (evidence's, in a run) builds what each needs in its one pass (``RowFrames.expect``;
    rows held as one frame are no view to share)."""
    if isinstance(rows, RowFrames):
        for kind, makes in reads(formats).items():
            rows.expect(kind, makes)


def drawn(rows: Any) -> Drawn:
    """The rows a map can draw (:class:`Drawn`)."""
    return _take(rows, "p2p", "drawn")


def card_stats(rows: Any) -> pd.DataFrame:
    """The per-card statistics of the p2p rows (:func:`sncheck.report.cardstats.card_stats`)."""
    return _take(rows, "p2p", "cards")


def skews(rows: Any) -> pd.DataFrame:
    """Each card's median launch skew (:class:`sncheck.report.rankstats.Skews`)."""
    return _take(rows, "rank", "skew")


def _take(rows: Any, kind: str, name: str) -> Any:
    make = BUILDERS[kind][name]
    if isinstance(rows, RowFrames):
        return rows.shared(kind, name, make)
    return one_pass({name: make}, lambda columns: tables(rows, kind, columns))[name]
