"""A kind's id columns (cards, groups, hosts) as integer codes and their distinct names,
read a piece at a time (issue 31): evidence asks which rows name an entity for every
finding's bundle, so it reads each kind's ids once as codes. A run store's view gives each
piece as its Arrow table (``RowFrames.tables``), whose dictionary indices are the codes
as they are where every piece holds one dictionary (a run's parts name every card in one
order); a frame's categorical gives its codes and categories. At 131,072 cards the p2p
rows' src and dst read as one pandas frame of the kind took 3.7 s of evidence's 13 s CPU
(the lead's profile of main bf987ea) and stayed held by the view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sncheck.store.frames import RowFrames


def frame_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A frame's column as integer codes (-1: missing) and its distinct values (a
    categorical's categories as they are; any other column factorized once)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), col.cat.categories.to_numpy(dtype=object)
    codes, uniques = pd.factorize(col)
    return codes, np.asarray(uniques, dtype=object)


class _Column:
    """One column's codes over the pieces: each piece's names mapped onto the names seen
    so far (a piece with the names of the one before takes its codes as they are)."""

    def __init__(self) -> None:
        self.names: list[Any] = []
        self.index = pd.Index([], dtype=object)
        self.codes: list[np.ndarray] = []
        self._last: tuple[Any, np.ndarray] | None = None   # (the last piece's names, their codes here)

    def add(self, codes: np.ndarray, names: Any) -> None:
        if self._last is not None and (self._last[0] is names or _equal(self._last[0], names)):
            mapping = self._last[1]
        else:
            values = names.to_pylist() if isinstance(names, pa.Array) else list(names)
            mapping = self.index.get_indexer(pd.Index(values, dtype=object))
            new = np.flatnonzero(mapping < 0)
            if len(new):
                # (names are distinct within a piece: a dictionary's, a categorical's categories, factorize's)
                self.index = self.index.append(pd.Index([values[i] for i in new.tolist()], dtype=object))
                mapping = self.index.get_indexer(pd.Index(values, dtype=object))
            self._last = (names, mapping)
        if len(mapping) == len(self.index) and (mapping == np.arange(len(mapping))).all():
            self.codes.append(codes)
        else:
            self.codes.append(np.append(mapping, -1).astype(np.int32)[codes])   # (code -1: the appended -1)

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        codes = np.concatenate(self.codes) if self.codes else np.zeros(0, dtype=np.int32)
        return codes, self.index.to_numpy(dtype=object)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, pa.Array) and isinstance(b, pa.Array):
        return a.type == b.type and a.equals(b)
    return False


class IdCodes:
    """The codes of ``columns`` (:class:`_Column`), a piece at a time: a builder of a
    kind's one pass (:mod:`sncheck.store.passes`), read beside what the reports build of the
    same rows."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = tuple(columns)
        self._got = {c: _Column() for c in self.columns}

    def add(self, piece: Any) -> None:
        for c, col in self._got.items():
            if isinstance(piece, pd.DataFrame):
                col.add(*frame_codes(piece[c]))
                continue
            data = piece.column(c)
            if pa.types.is_dictionary(data.type) and _one_dictionary(data):
                col.add(_indices(data), data.chunk(0).dictionary)
            else:
                col.add(*frame_codes(data.to_pandas()))

    def finish(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {c: col.finish() for c, col in self._got.items()}


def id_codes(frames: RowFrames, kind: str, columns: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per column of ``columns``: every selected row's code (-1: missing) and the distinct
    names the codes index (which may hold a name no row holds, as a categorical's
    categories may), in :meth:`RowFrames.kind`'s row order; read in the kind's one pass
    (``RowFrames.shared``: at 131,072 cards evidence's read of the p2p rows' src and dst
    was 10-13 s CPU, and the reports read them again)."""
    columns = tuple(columns)
    return frames.shared(kind, f"ids {','.join(columns)}", lambda: IdCodes(columns))


def _one_dictionary(data: pa.ChunkedArray) -> bool:
    """Every chunk over one dictionary, which names nothing missing."""
    if not data.num_chunks:
        return False
    d = data.chunk(0).dictionary
    return not d.null_count and all(c.dictionary is d or c.dictionary.equals(d) for c in data.chunks[1:])


def _indices(data: pa.ChunkedArray) -> np.ndarray:
    """Each row's dictionary index (int32; -1 where missing)."""
    return np.concatenate([np.asarray((pc.fill_null(c.indices, -1) if c.null_count else c.indices).to_numpy(),
                                      dtype=np.int32) for c in data.chunks])
