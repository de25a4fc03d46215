"""The reports' p2p rows, read once per run (issue 31): report.html's connectivity view
(:class:`Drawn`: the rows a map can draw) and sncheck.prom's card series (the per-card
statistics, :mod:`sncheck.report.cardstats`) are built from one pass over the p2p parts a
piece at a time, not one pass each (at 131,072 cards a read of the 50.2 M rows' columns is
20-25 s CPU).

The reports of a run are rendered one after another, each from the same view of the rows
(``write(record, rows, path)``). :func:`expect` says which of them will ask (the formats a
run renders, :func:`sncheck.report.outputs`); the first to ask builds what every expected
one needs in one pass, and the others take theirs, each given once and then let go (the
view's rows are never kept). A report that was not expected, or asks again, gets a pass of
its own: the values are the same either way (each builder sees every piece, in order). A view's
rows are fixed when it is made (a run store's view holds the parts written by then), so what
waits for a report is what its own pass over the view would give.

These are the run's raw values over every p2p row (every layer's rounds; an unreachable
host's rows are failed pairs): judging's per-card statistics are per evaluation and in
ratio units (:mod:`sncheck.health.firstlook`), which would not give these numbers.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import pandas as pd

from sncheck.report.cardstats import TierRows
from sncheck.report.codes import Codes, narrow_positions
from sncheck.report.p2pread import IDS, Piece, Reader
from sncheck.report.tables import tables
from sncheck.topology import SCALE_OUT

class _Builder(Protocol):
    columns: tuple[str, ...]

    def add(self, piece: Piece) -> None: ...


class Drawn:
    """The p2p rows a map can draw, added a piece at a time: every row but the scale-out
    ones (between supernodes, never drawn), as card codes (``src``, ``dst``: int32, into
    ``cards``, every card any row names, scale-out ones too), tier codes (``tier``: int16,
    into ``tiers``, a row without one intra_host or scale_up by host, :func:`_tiers`),
    ``ok`` and each metric's columns (``values``). At 131,072 cards the view read every p2p
    row whole (50.2 M, 2.97 GB); 33 M of them are scale-out. ``named``: whether some row
    names a src and some a dst."""

    columns = ("src", "dst", "tier", "status", "bw_GBps", "bw_rev_GBps", "lat_us")   # what the view reads
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


# What each reader is built by; when a pass ends, the card table is finished first (its
# rows reduced to one a card and tier) before the drawn rows are joined.
BUILDERS: dict[str, type] = {"cards": TierRows, "drawn": Drawn}
FOR_FORMAT = {"html": "drawn", "prometheus": "cards"}   # which report format asks for which


class _Shared:
    """Per view of the rows: the builders expected to ask, those already built, what is
    waiting for its reader."""

    def __init__(self) -> None:
        self.expected: set[str] = set()
        self.built: set[str] = set()
        self.waiting: dict[str, Any] = {}


_VIEWS: "weakref.WeakKeyDictionary[Any, _Shared]" = weakref.WeakKeyDictionary()


def expect(rows: Any, formats: Iterable[str]) -> None:
    """The reports of ``formats`` will read ``rows`` (a run store's view): the first of
    them to ask builds what each needs in one pass. Rows held as one frame are no view
    to share (a plain frame: read at once anyway)."""
    wanted = {FOR_FORMAT[f] for f in formats if f in FOR_FORMAT}
    if len(wanted) < 2:
        return
    try:
        shared = _VIEWS.setdefault(rows, _Shared())
    except TypeError:   # (a frame: neither hashable nor a view)
        return
    shared.expected |= wanted


def drawn(rows: Any) -> Drawn:
    """The rows a map can draw (:class:`Drawn`)."""
    return _take(rows, "drawn")


def card_stats(rows: Any) -> pd.DataFrame:
    """The per-card statistics of the p2p rows (:func:`sncheck.report.cardstats.card_stats`)."""
    return _take(rows, "cards")


def _take(rows: Any, name: str) -> Any:
    try:
        shared = _VIEWS.get(rows)
    except TypeError:
        shared = None
    if shared is not None and name in shared.waiting:
        return shared.waiting.pop(name)
    names = [name]
    if shared is not None:
        names += sorted(shared.expected - shared.built - {name})
        shared.built |= set(names)
    built = _one_pass(rows, names)
    if shared is not None:
        shared.waiting.update((n, built[n]) for n in names[1:])
    return built[name]


def _one_pass(rows: Any, names: list[str]) -> dict[str, Any]:
    """Each named builder fed every piece of the p2p rows (the columns any of them reads),
    in order, then finished (in :data:`BUILDERS`' order)."""
    builders = {n: BUILDERS[n]() for n in BUILDERS if n in names}
    cols = list(dict.fromkeys(c for b in builders.values() for c in b.columns))
    reader = Reader(tuple(c for c in cols if c not in IDS))
    for table in tables(rows, "p2p", cols):
        piece = reader.of(table)
        del table
        for b in builders.values():
            b.add(piece)
        del piece
    return {n: b.finish() for n, b in builders.items()}
