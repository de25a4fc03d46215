"""Decoded columns of a run's own Parquet parts, kept for the next reader up to a byte budget.

A gate's readers decode the same columns of the same parts again and again: at 16,384
cards the ``src`` and ``dst`` of every p2p part 69 times each, ``status`` 67, ``tier`` and
``bw_GBps`` 51 (the metrics, the coverage, the golden forecast, evidence and the two
reports each read them for themselves; README "Fleet scale", round 10). A run store's
parts (:meth:`sncheck.store.parts.Part.of_table`) keep here what a read of named columns
decoded, first come first kept: a column of a kind is let in where every part's of it fits
in what is left of :data:`BUDGET` bytes, and in a quarter of it; nothing is evicted. The readers of a fleet scan
the parts in order, so a least-recently-used cache smaller than a kind would let each part
go before its next reader came and keep nothing, and a column kept for the first parts
alone would serve only the start of each scan, its memory held throughout: at 131,072 cards
(a p2p column of 200-400 MB) nothing of the pairs is kept. The run's store holds the cache and lets it go with
itself (:meth:`sncheck.store.rundir.RunStore.close` keeps it for the reports).

A part is answered from memory only while its file is the one written: the same device,
inode, size and modification time as when it was written (a part gone, replaced or edited
under the run is read from disk, which says what happened to it, as before).
"""

from __future__ import annotations

import os
import threading
from typing import Sequence

import pyarrow as pa

# Bytes of decoded columns a run keeps. At 16,384 cards the p2p columns the judging reads
# first (src, dst, tier, status, bw_GBps, bw_rev_GBps: 4.15 M rows, ~150 MB with the parts'
# card dictionaries) fit; at 131,072 cards (50 M rows) none does.
BUDGET = 192 << 20
# A column of a kind is kept only where all its parts' take at most this share of the budget:
# 16,384 cards' p2p columns 17-33 MB, rank 11-23 MB; 131,072 cards' p2p 200-400 MB, rank
# 92-184 MB (an int32 layer or status column of the 131k pairs would fit the whole budget,
# held through judging for a column read twice).
COLUMN_SHARE = 4

Identity = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


def identity(st: os.stat_result) -> Identity:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class ColumnCache:
    """Columns by part (its path) and name, with the file identity they were decoded from."""

    def __init__(self, budget: int = BUDGET) -> None:
        self.budget = budget
        self.held = 0
        self.promised = 0  # the bytes the admitted columns take in every part of their kinds
        self._admitted: set[tuple[str, str]] = set()  # (kind, column) kept in every part, budget allowing
        self._parts: dict[str, tuple[Identity, dict[str, tuple[pa.Field, pa.ChunkedArray]]]] = {}
        self._lock = threading.Lock()

    def columns(self, path: str, now: Identity, names: Sequence[str]) -> dict[str, tuple[pa.Field, pa.ChunkedArray]]:
        """The columns of ``names`` kept for the part at ``path``, if its file is still
        ``now`` (else none, and what was kept of it is let go)."""
        with self._lock:
            kept = self._parts.get(path)
            if kept is None:
                return {}
            if kept[0] != now:
                self._drop(path)
                return {}
            return {n: kept[1][n] for n in names if n in kept[1]}

    def keep(self, path: str, now: Identity, table: pa.Table, kind: str = "", scale: float = 1.0) -> None:
        """``table``'s columns (read from the part at ``path`` of ``kind``, its file ``now``).
        A column is kept only where the budget has room for it in every part of the kind
        (``scale``: the kind's rows over the part's), within 1/:data:`COLUMN_SHARE` of it:
        kept for its first parts alone, a kind larger than the budget (131,072 cards'
        pairs) would serve only the start of each later scan, its memory held throughout."""
        with self._lock:
            kept = self._parts.get(path)
            if kept is not None and kept[0] != now:
                self._drop(path)
                kept = None
            for field, column in zip(table.schema, table.columns):
                size = column.nbytes
                if (kind, field.name) not in self._admitted:
                    whole = int(size * scale)
                    if whole > self.budget // COLUMN_SHARE or self.promised + whole > self.budget:
                        continue
                    self._admitted.add((kind, field.name))
                    self.promised += whole
                if self.held + size > self.budget:
                    continue
                if kept is None:
                    kept = self._parts[path] = (now, {})
                if field.name not in kept[1]:
                    kept[1][field.name] = (field, column)
                    self.held += size

    def _drop(self, path: str) -> None:
        _, columns = self._parts.pop(path)
        self.held -= sum(c.nbytes for _, c in columns.values())

    def clear(self) -> None:
        with self._lock:
            self._parts.clear()
            self._admitted.clear()
            self.held = self.promised = 0
