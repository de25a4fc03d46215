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
from sncheck.report.codes import Codes, IdTable, id_codes, narrow_positions
from sncheck.report.tables import column, floats, pieces, status_ok
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP

class _Builder(Protocol):
    columns: tuple[str, ...]

    def add(self, p2p: pd.DataFrame) -> None: ...


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

    def add(self, p2p: pd.DataFrame) -> None:
        self._named = [self._named[0] or bool(p2p["src"].notna().any()),
                       self._named[1] or bool(p2p["dst"].notna().any())]
        ends = IdTable(p2p["src"], p2p["dst"], dtype=np.int32)
        code = self._cards.of(ends.values)   # (this piece's codes -> the run's)
        (tier,), names = id_codes(_tiers(p2p), dtype=np.int16)
        tier = self._tiers.of(names, np.int16)[tier]
        at = narrow_positions(np.flatnonzero(tier != self._tiers.values.get_indexer([SCALE_OUT])[0]))
        got = self._got
        got["src"].append(code[ends.take(0, at)])
        got["dst"].append(code[ends.take(1, at)])
        got["tier"].append(tier[at])
        got["ok"].append(status_ok(p2p).to_numpy(bool)[at])
        for c in self.values_read:
            got[c].append(floats(p2p[c])[at])

    def finish(self) -> "Drawn":
        self.named = all(self._named)
        self.cards, self.tiers = self._cards.values, list(self._tiers.values)
        joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in self._got.items()}
        del self._got
        self.src, self.dst, self.tier, self.ok = (joined.pop(k) for k in ("src", "dst", "tier", "ok"))
        self.values = joined
        return self


def _tiers(p2p: pd.DataFrame) -> pd.Series:
    """The row's tier; where a backend left it out, intra_host or scale_up by host."""
    tier = column(p2p, "tier")
    if tier.notna().all():
        return tier if isinstance(tier.dtype, pd.CategoricalDtype) else tier.astype(str)
    same_host = _host_part(p2p["src"]) == _host_part(p2p["dst"])
    # (as names: a categorical's fill must be among its categories, a part's may lack it)
    return tier.astype(object).fillna(same_host.map({True: INTRA_HOST, False: SCALE_UP})).astype(str)


def _host_part(ids: pd.Series) -> pd.Series:
    """Each card id's host part (``h/gpu0`` -> ``h``); missing where the id is (a piece of
    the rows may name no card at all: missing, never equal)."""
    text = ids.astype(str)
    if not text.notna().any():
        return pd.Series(np.nan, index=ids.index)
    return text.str.rsplit("/", n=1).str[0]


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
    for p2p in pieces(rows, "p2p", cols):
        for b in builders.values():
            b.add(p2p)
        del p2p
    return {n: b.finish() for n, b in builders.items()}
