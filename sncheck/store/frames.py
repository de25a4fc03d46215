"""Rows as columns: a batch of one row kind becomes an Arrow table with the kind's
declared types (:data:`sncheck.rows.SCHEMA`); tables become pandas frames for the
detectors, and :class:`RowFrames` holds one frame per kind.

Names that repeat (cards, links, groups, statuses) are dictionary-encoded, so in
pandas they are categoricals: millions of rows cost a few bytes each.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.types import union_categoricals

from sncheck.rows import KIND_LAYER, batch_length, columns_of
from sncheck.store.passes import Make, one_pass

ARROW_TYPES = {
    "id": pa.dictionary(pa.int32(), pa.string()),
    "text": pa.string(),
    "json": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
}


class RowTypeError(ValueError):
    """A row field that cannot take its declared type (a bug in whoever emitted it)."""


def _json_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, np.generic):
        v = v.item()
    return json.dumps(v, default=str)


def _column(kind: str, name: str, value: Any, n: int, type_name: str | None) -> pa.Array:
    """One column of ``n`` values as an Arrow array of the declared type."""
    target = ARROW_TYPES[type_name] if type_name else None
    try:
        if value is None or (isinstance(value, float) and math.isnan(value) and type_name != "float"):
            return pa.nulls(n, target or pa.null())
        if type_name == "json":
            values = [value] * n if _scalar(value) else list(value)
            return pa.array(_json_texts(values), pa.string())
        if _scalar(value):
            if type_name == "id":  # one dictionary entry, n zero indices
                return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([str(value)]))
            if isinstance(value, str):
                return pa.array([value] * n, target)
            return pa.array(np.full(n, value), target, from_pandas=True)
        if isinstance(value, pd.Categorical):
            arr = pa.array(value)
        elif isinstance(value, (pa.Array, pa.ChunkedArray)):
            arr = value
        elif isinstance(value, np.ndarray) and value.dtype.kind != "O":
            arr = pa.array(value, from_pandas=True)  # NaN is a missing value (None)
        else:
            values = list(value)
            try:
                arr = pa.array(values, target if type_name != "id" else None, from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError):  # 1 for True, 2.0 for 2: cast below
                arr = pa.array(values, from_pandas=True)
        if target is not None and arr.type != target:
            if type_name == "id":
                if not pa.types.is_dictionary(arr.type):
                    arr = arr.cast(pa.string()).dictionary_encode()
                arr = arr.cast(target)
            else:
                arr = arr.cast(target)
        return arr
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as e:
        raise RowTypeError(f"{kind} rows: column {name!r} cannot hold these values as {type_name}: {e}") from e


def _json_texts(values: list) -> list[str | None]:
    """Each value's JSON text; an object that several rows hold is encoded once (a simulated
    fleet's hosts share their facts' values: 20 MB of NVLink counters at 16,384 cards).
    ``values`` holds every object while this runs, so no two of them share an ``id``."""
    texts: dict[int, str | None] = {}
    out = []
    for v in values:
        key = id(v)
        if key not in texts:
            texts[key] = _json_text(v)
        out.append(texts[key])
    return out


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bytes, int, float, bool)) or getattr(v, "ndim", 1) == 0


def batch_table(kind: str, columns: Mapping[str, Any], **constants: Any) -> pa.Table:
    """A batch of ``kind`` rows as a table: declared columns in order (nulls where the
    batch has none), then any further columns the batch carries."""
    cols = {**columns, **constants}
    cols.setdefault("layer", KIND_LAYER.get(kind))
    cols["kind"] = kind
    n = batch_length(columns) if columns else 1
    declared = columns_of(kind)
    names = [name for name, _ in declared] + [k for k in cols if k not in dict(declared)]
    types = dict(declared)
    arrays = [_column(kind, name, cols.get(name), n, types.get(name)) for name in names]
    return pa.Table.from_arrays(arrays, names=names)


def rows_table(kind: str, rows: list[dict]) -> pa.Table:
    """Row dicts of one kind as a table (the one-row ``emit`` path)."""
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    return batch_table(kind, {k: [r.get(k) for r in rows] for k in keys if k != "kind"})


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with every column of ``schema`` (nulls where missing), in its order."""
    if table.schema.equals(schema):
        return table
    cols = []
    for field in schema:
        if field.name in table.column_names:
            col = table.column(field.name)
            cols.append(col if col.type == field.type else col.cast(field.type))
        else:
            cols.append(pa.nulls(len(table), field.type))
    return pa.Table.from_arrays(cols, schema=schema)


def merge_schema(schema: pa.Schema | None, table: pa.Table) -> pa.Schema:
    """The kind's schema grown by any new columns of ``table`` (null-typed ones widen)."""
    if schema is None:
        return table.schema
    fields = list(schema)
    index = {f.name: i for i, f in enumerate(fields)}
    for f in table.schema:
        if f.name not in index:
            fields.append(f)
        elif pa.types.is_null(fields[index[f.name]].type) and not pa.types.is_null(f.type):
            fields[index[f.name]] = f
    return pa.schema(fields)


def to_frame(tables: list[pa.Table], kind: str, release: bool = False, decode: bool = True) -> pd.DataFrame:
    """Tables of one kind as one pandas frame (JSON columns decoded to values; ``decode``
    False: left as their text, for a reader that decodes them itself).

    ``release``: the tables are the caller's to give up: the list is emptied and each
    column's Arrow memory is freed as it is converted (never two copies of a kind)."""
    if not tables:
        return pd.DataFrame(columns=[name for name, _ in columns_of(kind)])
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    if release:
        tables.clear()
        df = table.to_pandas(split_blocks=True, self_destruct=True)
        del table
    else:
        df = table.to_pandas(split_blocks=True)
    for name, type_name in columns_of(kind) if decode else ():
        if type_name == "json" and name in df:
            df[name] = pd.Series([json_value(v) for v in df[name]], index=df.index, dtype=object)
    return df


def json_value(text: Any) -> Any:
    """A JSON column's stored text as its value (None where missing)."""
    return None if text is None or text != text else json.loads(text)


def select_tables(tables: Iterable[pa.Table], equal: Mapping[str, Any]) -> list[pa.Table] | None:
    """The rows of ``tables`` whose columns equal the given values (a missing column: no
    rows), as tables: those kept whole are the same objects. None where Arrow cannot
    compare a value with its column (the caller compares in pandas)."""
    out = []
    for table in tables:
        keep: Any = True
        for col, value in equal.items():
            hit = _equal(table.column(col), value) if col in table.column_names else False
            if hit is None:
                return None
            if hit is False or keep is True:
                keep = hit
            elif hit is not True:
                keep = pc.and_(keep, hit)
            if keep is False:
                break
        if keep is True:
            out.append(table)
        elif keep is not False:
            chosen = table.filter(keep)
            if len(chosen):
                out.append(chosen)
    return out


def _equal(column: pa.ChunkedArray, value: Any) -> Any:
    """Where ``column == value`` (missing values: no): True for every row, False for
    none, else a boolean mask; None when the types do not compare."""
    try:
        if pa.types.is_dictionary(column.type):
            if not isinstance(value, str):
                return None
            masks = []
            for chunk in column.chunks:  # judge the dictionary, then look rows up in it
                if chunk.null_count == len(chunk) or (len(chunk.dictionary) == 1 and chunk.null_count == 0):
                    # A batch's constant (its layer, the entity a retest is about): no compute call.
                    same = chunk.null_count == 0 and chunk.dictionary[0].as_py() == value
                    masks.append(same)
                    continue
                in_dict = pc.fill_null(pc.equal(chunk.dictionary, value), False)
                if not pc.any(in_dict).as_py():
                    masks.append(pa.array(np.zeros(len(chunk), dtype=bool)))
                elif pc.all(in_dict).as_py() and chunk.null_count == 0:
                    masks.append(pa.array(np.ones(len(chunk), dtype=bool)))
                else:
                    masks.append(pc.fill_null(pc.take(in_dict, chunk.indices), False))
            if all(m is True for m in masks):
                return True if len(column) else False
            if all(m is False for m in masks):
                return False
            mask = pa.chunked_array([pa.array(np.full(len(chunk), m)) if isinstance(m, bool) else m
                                     for m, chunk in zip(masks, column.chunks)], pa.bool_())
        else:
            mask = pc.fill_null(pc.equal(column, pa.scalar(value)), False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError):
        return None
    if len(mask) == 0 or not pc.any(mask).as_py():
        return False
    return True if pc.all(mask).as_py() else mask


def join_frames(head: pd.DataFrame, tail: pd.DataFrame) -> pd.DataFrame:
    """``head`` then ``tail`` (frames of one kind, from :func:`to_frame`), typed as one
    conversion of both would type them: an id column stays categorical, over the union
    of both sides' categories (the codes of ``head`` are kept, not rebuilt)."""
    if not len(tail):
        return head
    if not len(head):
        return tail
    out = {}
    for name in dict.fromkeys([*head.columns, *tail.columns]):
        x = head[name] if name in head else pd.Series(None, index=range(len(head)), dtype=object)
        y = tail[name] if name in tail else pd.Series(None, index=range(len(tail)), dtype=object)
        cat_x, cat_y = isinstance(x.dtype, pd.CategoricalDtype), isinstance(y.dtype, pd.CategoricalDtype)
        if cat_x and cat_y:
            try:
                out[name] = pd.Series(union_categoricals([x.array, y.array], ignore_order=True), name=name)
                continue
            except TypeError:  # categories of other types (a part where it is all missing)
                pass
        both = pd.concat([x.reset_index(drop=True), y.reset_index(drop=True)], ignore_index=True)
        out[name] = both.astype(object).astype("category") if cat_x or cat_y else both
    return pd.DataFrame(out, copy=False)


class RowFrames:
    """The rows of a run (or part of one) as one pandas frame per kind.

    Detectors ask for a kind with :func:`kind_rows`; ``frames.frame()`` gives every
    kind in one frame (a union of columns), for small sets and tests.
    """

    def __init__(self, frames: Mapping[str, pd.DataFrame]) -> None:
        self._frames = {k: f for k, f in frames.items() if len(f)}

    def kind(self, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The rows of ``kind`` (only ``columns``, in that order, where given: a column the
        rows lack comes back all missing)."""
        return pick(self._frames.get(kind, pd.DataFrame()), columns)

    def read(self, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """As :meth:`kind`, but what is read for it is not kept by this view: for a caller
        that keeps the frame itself (a run store's view would otherwise hold it a second
        time, as long as the view lives)."""
        return self.kind(kind, columns)

    def forget(self, kind: str) -> None:
        """Let go of what this view read for ``kind`` (a later ask reads it again); rows
        it was given, not read, stay."""

    def pieces(self, kind: str, columns: Sequence[str]) -> Iterator[pd.DataFrame]:
        """The rows of ``kind`` a piece at a time, in :meth:`kind`'s order (only ``columns``;
        the values :meth:`kind` gives), for a reader that reduces them as they come: rows
        held in memory are one piece; a run store's view reads a part at a time, never
        keeping them (:meth:`sncheck.store.parts.PartFrames.pieces`)."""
        frame = self.kind(kind, columns)
        if len(frame):
            yield frame

    def tables(self, kind: str, columns: Sequence[str]) -> Iterator[Any]:
        """:meth:`pieces`, where a run store's view gives each piece as its Arrow table
        (:meth:`sncheck.store.parts.PartFrames.tables`); rows held in memory are one frame."""
        yield from self.pieces(kind, columns)

    def shared(self, kind: str, name: str, make: Make) -> Any:
        """What the builder ``name`` (``make()``: a :class:`~sncheck.store.passes.Builder`)
        builds of the rows of ``kind``, from a pass it may share with the other builders the
        rows' readers said they will ask for (:meth:`expect`; a run store's view,
        :meth:`sncheck.store.parts.PartFrames.shared`). Rows held in memory: one piece, read
        for it alone."""
        return one_pass({name: make}, lambda columns: self.tables(kind, columns))[name]

    def expect(self, kind: str, makes: Mapping[str, Make]) -> None:
        """The builders ``makes`` will ask for the rows of ``kind`` (:meth:`shared`): rows
        held in memory are no pass to share."""

    def counts(self) -> dict[str, int]:
        return {k: len(f) for k, f in self._frames.items()}

    def columns(self, kind: str) -> list[str]:
        """The columns the rows of ``kind`` carry."""
        return list(self.kind(kind).columns)

    def rows_at(self, kind: str, positions: Sequence[int],
                decode: bool = True) -> pd.DataFrame:  # noqa: ARG002 -- held rows hold their values: nothing to leave as text
        """The rows of ``kind`` at these positions (of :meth:`kind`'s order), every column
        (``decode`` False: JSON columns as their text where they are read from parts; rows
        held in memory hold their values)."""
        return self.kind(kind).iloc[list(positions)]

    @property
    def kinds(self) -> list[str]:
        return list(self._frames)

    @property
    def empty(self) -> bool:
        return not self._frames

    def __len__(self) -> int:
        return sum(len(f) for f in self._frames.values())

    def where(self, **equal: Any) -> "RowFrames":
        """Only the rows whose columns equal the given values (a missing column: no rows)."""
        out = {}
        for kind, f in self._frames.items():
            mask = np.ones(len(f), dtype=bool)
            for col, value in equal.items():
                column = f[col] if col in f else None
                if column is None or (isinstance(column.dtype, pd.CategoricalDtype) and isinstance(value, str)
                                      and value not in column.cat.categories):
                    mask[:] = False  # (a name that is not among the categories: no row, nothing scanned)
                    break
                mask &= (column == value).to_numpy(dtype=bool, na_value=False)
            # (no row: a slice, not a selection, which costs a pass over every column)
            out[kind] = f if mask.all() else f[mask] if mask.any() else f.iloc[:0]
        return RowFrames(out)

    def frame(self) -> pd.DataFrame:
        """All kinds in one frame, ids as plain strings (the shape of the old row list)."""
        parts = [f.astype({c: object for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)})
                 for f in self._frames.values()]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def frames_of(rows: list[dict]) -> RowFrames:
    """Row dicts (a small in-memory run) as frames per kind, typed like a store's."""
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        by_kind.setdefault(r.get("kind") or "unknown", []).append(r)
    return RowFrames({k: to_frame([rows_table(k, rs)], k) for k, rs in by_kind.items()})


def kind_rows(rows: pd.DataFrame | RowFrames, kind: str, columns: Sequence[str] | None = None,
              keep: bool = True) -> pd.DataFrame:
    """The rows of one kind, from :class:`RowFrames` or from one frame with a ``kind``
    column; only ``columns`` where given (a run store reads no other column). ``keep``
    False: the view keeps nothing it read for it (:meth:`RowFrames.read`)."""
    if isinstance(rows, RowFrames):
        return rows.kind(kind, columns) if keep else rows.read(kind, columns)
    if rows is None or rows.empty or "kind" not in rows:
        return pd.DataFrame() if columns is None else pd.DataFrame(columns=list(columns))
    return pick(rows[rows["kind"] == kind], columns)


def pick(frame: pd.DataFrame, columns: Sequence[str] | None) -> pd.DataFrame:
    """``frame``'s ``columns`` in that order (None: all); one it lacks is all missing
    (None, object dtype)."""
    if columns is None:
        return frame
    out = frame[[c for c in columns if c in frame.columns]]   # (no copy: pandas' copy on write)
    for c in columns:
        if c not in out.columns:
            out[c] = pd.Series(None, index=frame.index, dtype=object)
    return out[list(columns)]


def rows_where(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """``frame[keep].reset_index(drop=True)``, a column at a time: no index of the rows kept,
    nor an indexer of them, beside their columns (at fleet size each an int64 array of tens
    of millions of rows; a categorical's rows are its codes'). ``keep``: a boolean mask."""
    return pd.DataFrame({c: frame[c].array[keep] for c in frame.columns}, copy=False)


def fact_rows(rows: pd.DataFrame | RowFrames, decide: Sequence[str],
              keep: Callable[[pd.DataFrame], pd.Series | np.ndarray], decode: bool = True) -> pd.DataFrame:
    """The host_fact rows ``keep`` chooses, every column. Only the columns ``decide`` are
    read to choose them: a fleet's facts carry every card's NVLink counters as JSON, and
    only the chosen rows' values are decoded (from a run store, read back by position;
    ``decode`` False: the values read back are left as their JSON text, see
    :func:`json_value`, and rows held in memory hold their values)."""
    if not isinstance(rows, RowFrames):
        f = kind_rows(rows, "host_fact")
        return f if f.empty else f[np.asarray(keep(f), dtype=bool)]
    light = rows.kind("host_fact", decide)
    if light.empty:
        return rows.kind("host_fact").iloc[:0]
    at = np.flatnonzero(np.asarray(keep(light), dtype=bool))
    return rows.rows_at("host_fact", at.tolist(), decode=decode)
