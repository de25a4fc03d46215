"""Reading the measurement rows for the report's views: one kind's rows, a column with a
default, rows as plain records, and the small numeric helpers the views share."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sncheck.store.frames import RowFrames, kind_rows


def of_kind(rows: Any, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """``rows``: the run's frames per kind (or one frame with a ``kind`` column).
    ``columns``: the ones the view reads (the run store reads only those from its parts);
    a column the rows lack comes back all missing."""
    if isinstance(rows, RowFrames):
        return rows.kind(kind, columns)
    df = kind_rows(rows, kind)
    return df if columns is None else RowFrames({kind: df}).kind(kind, columns)


def pieces(rows: Any, kind: str, columns: Sequence[str]) -> Iterator[pd.DataFrame]:
    """The ``columns`` of ``kind`` a piece at a time, in the rows' order: a run store's
    view reads a part at a time and keeps nothing (``RowFrames.pieces``); one frame of
    rows is one piece."""
    if isinstance(rows, RowFrames):
        yield from rows.pieces(kind, columns)
        return
    df = of_kind(rows, kind, columns)
    if len(df):
        yield df


def tables(rows: Any, kind: str, columns: Sequence[str]) -> Iterator[Any]:
    """As :func:`pieces`, but a run store's view gives each piece as its Arrow table
    (``RowFrames.tables``: a reader of millions of rows takes its dictionaries as they are)."""
    if isinstance(rows, RowFrames):
        yield from rows.tables(kind, columns)
        return
    yield from pieces(rows, kind, columns)


def let_go(rows: Any, kind: str) -> None:
    """The run store's view lets go of the rows of ``kind`` it read and kept for the
    reports (a report that asks again reads them again): the p2p rows' last reader in
    the default order (html, junit, prometheus) frees them before the next kind is read
    (at 131,072 cards, 2 GB of pairs beside the stress layer's rank rows)."""
    if isinstance(rows, RowFrames):
        rows.forget(kind)


def holds(df: pd.DataFrame, cols: Sequence[str]) -> bool:
    """Whether ``df`` has rows and each of ``cols`` holds a value in some row (a column
    the rows lack comes back from :func:`of_kind` all missing)."""
    return not df.empty and all(c in df.columns and df[c].notna().any() for c in cols)


def column(df: pd.DataFrame, name: str, default: Any = None) -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series(default, index=df.index, dtype=object if default is None else None)


def records(df: pd.DataFrame, cols: Sequence[str]) -> list[dict]:
    """Rows as plain dicts with every column present, NaN as None."""
    out = []
    for rec in df.reindex(columns=list(cols)).to_dict("records"):
        out.append({k: (None if isnan(v) else v) for k, v in rec.items()})
    return out


def isnan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def floats(col: pd.Series) -> np.ndarray:
    """A column as float64 values, NaN where missing: a float column's own array (no copy
    of a fleet's millions of rows; callers take what they need from it), else converted."""
    if col.dtype == np.float64:
        return col.to_numpy()
    return pd.to_numeric(col, errors="coerce").to_numpy(float)


def status_ok(df: pd.DataFrame) -> pd.Series:
    """True where a row's status is ok (a row without a status column counts as ok)."""
    if "status" not in df.columns:
        return pd.Series(True, index=df.index)
    return df["status"].fillna("ok").eq("ok")


def number(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
