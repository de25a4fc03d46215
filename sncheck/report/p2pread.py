"""A piece of the p2p rows as the reports' pass reads it (issue 31): each row's src and
dst as codes into the piece's cards, its tier as a code, whether its probe succeeded, and
the metrics' values, as plain arrays made once per piece for every builder of the pass
(:mod:`sncheck.report.p2pstats`).

A run store's view gives a piece as its Arrow table (``RowFrames.tables``): its id
columns' dictionary indices are taken as they are, each dictionary's names made once per
pass (a run's parts name every card in one order: at 131,072 cards the pandas frames'
categoricals, and each builder's own codes of them, cost as much as the read). Any other
piece (rows held as one frame; a table whose ids are not dictionaries, whose src and dst
differ in dictionary, whose tier is missing somewhere, that names a card "nan" beside a
missing end, or whose values are not floats) goes through its pandas frame and the same functions the builders used on it before:
:meth:`Piece.of_frame`. Both give the same codes, in the same order
(``tests/test_report_p2pread.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sncheck.report.codes import IdTable, id_codes, narrow_positions
from sncheck.report.tables import column, floats, status_ok
from sncheck.store.frames import to_frame
from sncheck.topology import INTRA_HOST, SCALE_UP

IDS = ("src", "dst", "tier", "status")


@dataclass
class Piece:
    """``cards``: the names ``src`` and ``dst`` (int32) index, as :class:`IdTable` gives
    them over both columns (a missing end: the card "nan"); ``tier`` (int16) into
    ``tiers``, per reader (``by_tier``: every tier as read, a missing one "nan"; ``drawn``:
    a missing one intra_host or scale_up by host); ``ok``; ``values`` per metric column
    (float64, NaN where missing); ``named``: whether some row names a src, some a dst."""

    n: int
    named: tuple[bool, bool]
    cards: pd.Index
    src: np.ndarray
    dst: np.ndarray
    tiers: dict[str, tuple[np.ndarray, pd.Index]]
    ok: np.ndarray
    values: dict[str, np.ndarray]

    def rows_of_tier(self, reader: str) -> list[tuple[str, np.ndarray]]:
        """(tier name, positions of its rows) for each tier of the piece, in ``tiers`` order."""
        codes, names = self.tiers[reader]
        return [(str(name), narrow_positions(np.flatnonzero(codes == t))) for t, name in enumerate(names.tolist())]

    @classmethod
    def of_frame(cls, p2p: pd.DataFrame, metrics: tuple[str, ...]) -> "Piece":
        """The piece of a frame's rows (the builders' functions of it before, unchanged)."""
        ends = IdTable(p2p["src"], p2p["dst"], dtype=np.int32)
        tier = p2p["tier"]
        if not isinstance(tier.dtype, pd.CategoricalDtype):  # a missing tier: "nan", as a categorical's
            tier = tier.fillna("nan")
        by_tier = IdTable(tier, dtype=np.int16)
        (drawn,), drawn_names = id_codes(_tiers(p2p), dtype=np.int16)
        return cls(len(p2p), (bool(p2p["src"].notna().any()), bool(p2p["dst"].notna().any())), ends.values,
                   ends.every(0), ends.every(1),
                   {"by_tier": (by_tier.every(0), by_tier.values), "drawn": (drawn, drawn_names)},
                   status_ok(p2p).to_numpy(bool), {c: floats(p2p[c]) for c in metrics})


class Reader:
    """Pieces of one pass (:meth:`of`), each dictionary's names made once: a dictionary
    equal to the last one's takes its names (and, where every card is named and none is
    missing, the very same ``cards`` index, so a builder's codes of it are a look-up)."""

    def __init__(self, metrics: tuple[str, ...]) -> None:
        self.metrics = metrics
        self._names: dict[str, tuple[pa.Array, np.ndarray, pd.Index]] = {}

    def of(self, piece: Any) -> Piece:
        if isinstance(piece, pd.DataFrame):
            return Piece.of_frame(piece, self.metrics)
        fast = self._of_table(piece)
        return fast if fast is not None else Piece.of_frame(to_frame([piece], "p2p"), self.metrics)

    def _of_table(self, table: pa.Table) -> Piece | None:
        """The piece read from the table's dictionaries; None where it must go through pandas."""
        cols = {c: table.column(c) for c in IDS}
        if not all(pa.types.is_dictionary(c.type) and pa.types.is_string(c.type.value_type) for c in cols.values()):
            return None
        if not all(pa.types.is_floating(table.column(m).type) or pa.types.is_null(table.column(m).type)
                   for m in self.metrics):
            return None
        if cols["tier"].null_count or not all(_one_dictionary(c) for c in cols.values()):
            return None
        src, dst = (self._indices(cols[c]) for c in ("src", "dst"))
        (sdict, names, full), ddict = self._dictionary("src", cols["src"]), _dictionary(cols["dst"])
        if not (ddict is sdict or ddict.equals(sdict)):
            return None   # (src and dst over one dictionary, as IdTable codes them)
        held = _held(names, full, src, dst)
        if held is None:
            return None
        (src, dst), cards = held
        tier_codes = self._indices(cols["tier"])
        _, tier_names, _ = self._dictionary("tier", cols["tier"])
        present = np.flatnonzero(np.bincount(tier_codes, minlength=len(tier_names)))
        renumber = np.full(len(tier_names), -1, dtype=np.int16)
        renumber[present] = np.arange(len(present), dtype=np.int16)
        tier = (renumber[tier_codes], pd.Index(tier_names[present], dtype=object))
        _, status_names, _ = self._dictionary("status", cols["status"])
        ok = np.append(status_names == "ok", True)[self._indices(cols["status"])]   # (a missing status: ok)
        n = len(table)
        metrics = {m: (np.full(n, np.nan) if pa.types.is_null(table.column(m).type)
                       else np.asarray(table.column(m).to_numpy(), dtype=np.float64)) for m in self.metrics}
        named = (cols["src"].null_count < n, cols["dst"].null_count < n)
        return Piece(n, named, cards, src, dst, {"by_tier": tier, "drawn": tier}, ok, metrics)

    def ids(self, name: str, col: pa.ChunkedArray) -> tuple[np.ndarray, pd.Index] | None:
        """One id column's codes (int32) and the names they index, as :class:`IdTable` gives
        them for its frame's column (the names rows hold, in the dictionary's order; a
        missing value the name "nan", last); None where the column must go through its frame
        (not a dictionary of text over one dictionary, or a name "nan" beside a missing one)."""
        if not (pa.types.is_dictionary(col.type) and pa.types.is_string(col.type.value_type)) \
                or not _one_dictionary(col):
            return None
        _, names, full = self._dictionary(name, col)
        held = _held(names, full, self._indices(col))
        return None if held is None else (held[0][0], held[1])

    def _dictionary(self, name: str, col: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, pd.Index]:
        """The column's dictionary, its names (object array) and their index, made once per
        dictionary seen."""
        d = _dictionary(col)
        last = self._names.get(name)
        if last is not None and (last[0] is d or last[0].equals(d)):
            return last
        names = np.asarray(d.to_pylist(), dtype=object)
        self._names[name] = (d, names, pd.Index(names, dtype=object))
        return self._names[name]

    @staticmethod
    def _indices(col: pa.ChunkedArray) -> np.ndarray:
        """Each row's dictionary index (int32; -1 where missing)."""
        if not col.num_chunks:
            return np.zeros(0, dtype=np.int32)
        return np.concatenate([np.asarray((pc.fill_null(c.indices, -1) if c.null_count else c.indices).to_numpy(),
                                          dtype=np.int32) for c in col.chunks])


def pieces_of(columns: tuple[str, ...]) -> Reader:
    """The reader of a pass whose builders read ``columns`` (a store pass's ``decoder``:
    each piece decoded once for all of them)."""
    return Reader(tuple(c for c in columns if c not in IDS))


def _held(names: np.ndarray, full: pd.Index, *codes: np.ndarray) -> tuple[list[np.ndarray], pd.Index] | None:
    """Dictionary indices (-1: missing) as :class:`IdTable` codes the columns: into the names
    some row holds, in the dictionary's order, a missing value the name "nan" after them (every
    name held and none missing: the indices and ``full`` as they are). None where a name "nan"
    stands beside a missing value (IdTable would make them one)."""
    used = np.zeros(len(names) + 1, dtype=bool)   # (the last entry: a missing value, code -1)
    for c in codes:
        used[c] = True
    if used[:-1].all() and not used[-1]:
        return list(codes), full
    if used[-1] and "nan" in full:
        return None
    keep = np.flatnonzero(used[:-1])
    remap = np.full(len(names) + 1, -1, dtype=np.int32)
    remap[keep] = np.arange(len(keep), dtype=np.int32)
    values = names[keep]
    if used[-1]:
        remap[-1] = len(keep)
        values = np.append(values, "nan")
    return [remap[c] for c in codes], pd.Index(values, dtype=object)


def _dictionary(col: pa.ChunkedArray) -> pa.Array:
    """The one dictionary of a column's chunks (``RowFrames.tables`` unifies them)."""
    return col.chunk(0).dictionary if col.num_chunks else pa.array([], pa.string())


def _one_dictionary(col: pa.ChunkedArray) -> bool:
    """Whether every chunk of the column indexes one dictionary, of no missing name."""
    d = _dictionary(col)
    return not d.null_count and all(c.dictionary is d or c.dictionary.equals(d) for c in col.chunks[1:])


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
