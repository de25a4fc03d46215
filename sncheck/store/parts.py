"""A run's rows read back from their Parquet parts when asked for, never held.

A fleet's run writes tens of millions of pair rows (16,384 cards: 4.2 M p2p rows); no
reader may hold them all, and none needs every column. :class:`PartFrames` is the
:class:`~sncheck.store.frames.RowFrames` of a run store or a run directory that holds
nothing: ``kind(kind, columns)`` reads the parts that may hold the selection (a part
remembers the layers and retests it was written with), only the columns asked for, and
hands the frame to the caller (kept by this view only, for the readers of one
evaluation; a new view reads again). Id columns come back as pandas categoricals, and
``src`` and ``dst`` share one set of categories, so cards compare and group by their
integer codes (never millions of strings).

The store API the report and Prometheus read: /work/team/store-api.md (README "Run
store").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Sequence, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sncheck.errors import ConfigError, HarnessError
from sncheck.rows import columns_of
from sncheck.store import partrows
from sncheck.store.columncache import ColumnCache, Identity, identity
from sncheck.store.passes import Make, Passes
from sncheck.store.frames import ARROW_TYPES, RowFrames, conform, merge_schema, pick, select_tables, to_frame

SELECTED_BY = ("layer", "confirms")  # the columns readers select parts by
SHARED = ("src", "dst")              # id columns that name the same things: one category set
# Rows a piece of PartFrames.pieces holds at least (but the last): each part's ids are a
# dictionary of every card (131,072 at fleet size), turned into categories once a piece
# (per part: 0.3 s a part, 194 p2p parts, 68 s of one read at 131,072 cards).
PIECE_ROWS = 1 << 21
T = TypeVar("T")


def _distinct(column: pa.ChunkedArray) -> frozenset:
    """The distinct values of a column as text (None: a missing value); an id column's
    from the codes its rows use, without a string per row."""
    if not pa.types.is_dictionary(column.type):
        return frozenset(pc.unique(column.cast(pa.string())).to_pylist())
    out: set = set()
    for chunk in column.chunks:
        used = pc.unique(chunk.indices)
        out.update(chunk.dictionary.cast(pa.string()).take(used).to_pylist())
    return frozenset(out)


class Part:
    """A Parquet part: its path, rows, column names, and the values of the columns a
    reader selects by that its rows hold (None: not known, it may hold any). A part this
    run wrote keeps what its reads decoded in its run's ``cache`` (its file as written:
    ``identity``; :mod:`sncheck.store.columncache`)."""

    __slots__ = ("path", "rows", "names", "values", "own", "cache", "identity", "kin")

    def __init__(self, path: Path, rows: int, names: Sequence[str], values: dict[str, frozenset] | None,
                 own: bool = False, cache: ColumnCache | None = None, written: Identity | None = None,
                 kin: Sequence["Part"] = ()) -> None:
        self.path, self.rows, self.names, self.values = path, rows, tuple(names), values
        self.own = own  # written by this process (of_table), not found in a run directory
        self.cache: ColumnCache | None = cache if written is not None else None
        self.identity: Identity | None = written
        self.kin = kin  # every part of its kind (the store's list, growing as parts are written)

    @classmethod
    def of_table(cls, path: Path, table: pa.Table, cache: ColumnCache | None = None,
                 kin: Sequence["Part"] = ()) -> "Part":
        """A part as written from ``table`` (its selecting values: a pass over small codes);
        ``kin``: the parts of its kind, for its ``cache`` to weigh a column of them all."""
        values = {}
        for name in SELECTED_BY:
            if name in table.column_names:
                values[name] = _distinct(table.column(name))
        written = identity(path.stat()) if cache is not None else None
        return cls(path, len(table), table.column_names, values, own=True, cache=cache, written=written, kin=kin)

    @classmethod
    def on_disk(cls, path: Path) -> "Part":
        """A part found in a run directory (its footer read; ConfigError if it cannot be)."""
        _regular(path)
        try:
            meta = pq.read_metadata(path)
        except (OSError, pa.ArrowException) as e:
            raise ConfigError(f"not a readable part of a run's rows: {e}", str(path)) from e
        return cls(path, meta.num_rows, meta.schema.to_arrow_schema().names, None)

    def may_hold(self, equal: Mapping[str, Any]) -> bool:
        if self.values is None:
            return True
        return all(v in self.values[c] for c, v in equal.items() if c in self.values)

    def all_match(self, equal: Mapping[str, Any]) -> bool:
        """Whether every row of the part equals ``equal`` (known from its values alone)."""
        return self.values is not None and all(self.values.get(c) == {v} for c, v in equal.items())

    def read(self, columns: Sequence[str] | None) -> pa.Table:
        """The part's ``columns`` (None: every column), in that order: those its run's cache
        keeps for the file as written from there, the others decoded (and, named, kept)."""
        names = None if columns is None else list(dict.fromkeys(c for c in columns if c in self.names))
        try:
            now = identity(_regular(self.path))
            cache = self.cache if now == self.identity else None
            want = list(self.names) if names is None else names
            kept = cache.columns(str(self.path), now, want) if cache is not None else {}
            todo = [n for n in want if n not in kept]
            read = self._decode(todo if kept else names) if todo or not want else None
            if cache is not None and names is not None and read is not None:
                # (a whole part, evidence's rows: not kept) the kind's rows weigh its columns
                cache.keep(str(self.path), now, read, self.path.parent.name,
                           (sum(p.rows for p in self.kin) or self.rows) / max(self.rows, 1))
            if not kept:
                assert read is not None  # (every column asked for was decoded)
                return read
            got = {**kept, **({f.name: (f, c) for f, c in zip(read.schema, read.columns)} if read is not None else {})}
            return pa.Table.from_arrays([got[n][1] for n in want], schema=pa.schema([got[n][0] for n in want]))
        except ConfigError as e:
            if not self.own:  # a part found in a run directory: the input's fault
                raise
            raise self._changed(e) from e

    def read_rows(self, at: np.ndarray, reader: partrows.Reader | None = None) -> pa.Table:
        """The rows at positions ``at`` (ascending) of every column: where they are few,
        read for themselves (:mod:`sncheck.store.partrows`; through ``reader``, shared with
        the other parts read, where given), else the part decoded whole."""
        if not partrows.sparse(len(at), self.rows):
            return self.read(None).take(pa.array(at))
        try:
            _regular(self.path)
            return reader.rows(self.path, at) if reader is not None else partrows.rows_of_file(self.path, at)
        except ConfigError as e:
            if not self.own:  # a part found in a run directory: the input's fault
                raise
            raise self._changed(e) from e

    def _changed(self, e: ConfigError) -> HarnessError:
        """A part this run wrote that cannot be read is gone or changed: the run directory
        was moved, replaced or cut under the run, no input of the user's (hostile round 11,
        H11-06)."""
        return HarnessError(f"{self.path}: a part of this run's rows is gone or changed under the run "
                            f"({e.message}); the run directory was moved, replaced or edited while it ran")

    def _decode(self, names: list[str] | None) -> pa.Table:
        try:
            # the file itself (read_table's dataset machinery cost 5x the read of one
            # column: 0.75 against 0.13 s CPU over a 16,384-card run's 127 p2p parts)
            with pq.ParquetFile(self.path, pre_buffer=False) as f:
                return f.read(columns=names, use_threads=False)
        except (OSError, pa.ArrowException) as e:
            raise ConfigError(f"not a readable part of a run's rows: {e}", str(self.path)) from e


def _regular(path: Path) -> os.stat_result:
    """Only a regular file is read as a part: a FIFO blocks its reader for ever, a device
    or a link leads out of the run directory (ConfigError naming it, never a shorter kind).
    Its status (lstat) where it is one."""
    try:
        st = path.lstat()
    except OSError as e:
        raise ConfigError(f"not a readable part of a run's rows: {e}", str(path)) from e
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError("not a regular file: a part of a run's rows is only ever one", str(path))
    return st


def read_kind(parts: Iterable[Part], held: Iterable[pa.Table], kind: str, equal: Mapping[str, Any],
              columns: Sequence[str] | None, schema: pa.Schema | None = None) -> pd.DataFrame:
    """The rows of ``kind`` in ``parts`` (and the tables ``held`` in memory) whose columns
    equal ``equal``, as one frame of ``columns`` (None: every column)."""
    parts = [p for p in parts if p.may_hold(equal)]
    held = list(held)
    if equal and all(p.all_match(equal) for p in parts) and not any(len(t) for t in held):
        equal = {}  # every row is selected (the parts' values say so): no selecting column read
    want = None if columns is None else list(dict.fromkeys([*columns, *equal]))
    tables = [_typed(p, p.read(want), kind) for p in parts]
    tables += [t.select([c for c in want if c in t.column_names]) if want is not None else t for t in held]
    if schema is None and tables:
        schema = _union_schema(tables)
    if schema is not None:
        if want is not None:
            schema = pa.schema([schema.field(c) if c in schema.names else pa.field(c, _declared(kind, c))
                                for c in want])
        tables = [conform(t, schema) for t in tables]
    if equal:
        chosen = select_tables(tables, equal)
        if chosen is None:  # a value Arrow cannot compare: pandas decides
            return pick(RowFrames({kind: _frame(tables, kind)}).where(**equal).kind(kind), columns)
        tables = chosen or [t.slice(0, 0) for t in tables[:1]]
    return pick(_frame(tables, kind), columns)


def _select(table: pa.Table, equal: Mapping[str, Any]) -> pa.Table:
    """The rows of ``table`` whose columns equal ``equal`` (Arrow, else pandas decides)."""
    if not equal:
        return table
    chosen = select_tables([table], equal)
    if chosen is None:
        kept = RowFrames({"k": to_frame([table], "k")}).where(**equal).kind("k")
        return pa.Table.from_pandas(kept, preserve_index=False) if len(kept) else table.slice(0, 0)
    return chosen[0] if chosen else table.slice(0, 0)


def _typed(part: Part, table: pa.Table, kind: str) -> pa.Table:
    """A part's columns hold what the kind declares: numbers or truths where it declares them,
    text where it declares names and text (sncheck writes every declared column so:
    frames._column). A part with another type there (another program's, or edited) is refused
    naming it and the column (ConfigError), never cast to a crash in a metric further on, nor
    read on: a tier or card column of numbers made a baseline of tier '7' and card '0', exit 0."""
    declared = dict(columns_of(kind))
    for f in table.schema:
        want = declared.get(f.name)
        if want is not None and not pa.types.is_null(f.type) and not _holds(want, f.type):
            raise ConfigError(f"not a readable part of a run's rows: its column {f.name!r} holds {f.type}, where "
                              f"{kind} rows hold {'a ' + want if want in _NUMBERS else 'text'}", str(part.path))
    return table


_NUMBERS = ("int", "float", "bool")


def _holds(want: str, held: pa.DataType) -> bool:
    if want in _NUMBERS:
        return pa.types.is_integer(held) or pa.types.is_floating(held) or pa.types.is_boolean(held)
    if pa.types.is_dictionary(held):
        held = held.value_type
    return pa.types.is_string(held) or pa.types.is_large_string(held)


def _declared(kind: str, column: str) -> pa.DataType:
    """A column's declared Arrow type (null: a column the kind does not declare)."""
    declared = dict(columns_of(kind))
    return ARROW_TYPES[declared[column]] if column in declared else pa.null()


def _union_schema(tables: list[pa.Table]) -> pa.Schema:
    schema = None
    for t in tables:
        schema = merge_schema(schema, t)
    assert schema is not None
    return schema


def _frame(tables: list[pa.Table], kind: str, decode: bool = True) -> pd.DataFrame:
    """Tables as one frame: each id column one dictionary (src and dst the same one)."""
    if not tables:
        return to_frame([], kind, decode=decode)
    return to_frame([_table(tables)], kind, release=True, decode=decode)


def _table(tables: list[pa.Table]) -> pa.Table:
    """Tables (one or more; the list is emptied) as one: each id column one dictionary
    over its chunks, ``src`` and ``dst`` the same one."""
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    tables.clear()
    return share_dictionaries(unify_dictionaries(table), SHARED)


def unify_dictionaries(table: pa.Table) -> pa.Table:
    """``table.unify_dictionaries()``, but a dictionary column whose chunks all hold one
    dictionary of distinct values (a run's parts: each names every card, in the same order)
    is given that dictionary as one object, without hashing it again per chunk. Arrow's
    unification hashes every chunk's dictionary (it found no shortcut for equal ones): at
    131,072 cards, about 12 ms a p2p part and id column, 4-5 s for src and dst over the 194
    parts of one read of the kind. The same codes and categories either way: unified, equal
    dictionaries of distinct values give the first's values in its order, codes unchanged."""
    for i, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type) or table.column(i).num_chunks < 2:
            continue
        column = table.column(i)
        first = column.chunk(0).dictionary
        if all(c.dictionary.equals(first) for c in column.chunks[1:]) and _all_distinct(first):
            one = [pa.DictionaryArray.from_arrays(c.indices, first, safe=False) for c in column.chunks]
            column = pa.chunked_array(one, field.type)
        else:
            column = column.unify_dictionaries()
        table = table.set_column(i, field, column)
    return table


_DISTINCT: list[pa.Array] = []   # the last dictionaries found to hold distinct values, newest last
DISTINCT_KEPT = 4


def _all_distinct(dictionary: pa.Array) -> bool:
    """Whether a dictionary holds distinct values and no null. One equal to a dictionary
    found so before is known (a run's parts each hold a dictionary of every card, in one
    order: comparing it costs a fraction of hashing its 131,072 names, 18 ms a part and
    column), and is remembered in its place."""
    for i, known in enumerate(_DISTINCT):
        if known is dictionary or (known.type == dictionary.type and known.equals(dictionary)):
            _DISTINCT.append(_DISTINCT.pop(i))
            return True
    if dictionary.null_count or pc.count_distinct(dictionary).as_py() != len(dictionary):
        return False
    _DISTINCT.append(dictionary)
    del _DISTINCT[:-DISTINCT_KEPT]
    return True


def share_dictionaries(table: pa.Table, names: Sequence[str]) -> pa.Table:
    """``table`` with the dictionary columns ``names`` over one dictionary (the union of
    theirs, in order of the first's): their pandas categoricals then share categories.
    Each column's chunks must share one dictionary (``unify_dictionaries``)."""
    have = [n for n in names if n in table.column_names and pa.types.is_dictionary(table.schema.field(n).type)
            and table.column(n).num_chunks]
    if len(have) < 2:
        return table
    dicts = [table.column(n).chunk(0).dictionary for n in have]
    if pa.types.is_string(dicts[0].type) and all(d.equals(dicts[0]) for d in dicts[1:]) and _all_distinct(dicts[0]):
        return table   # (the union of equal dictionaries of distinct values: the first, as it is)
    union = pc.unique(pa.concat_arrays([d.cast(pa.string()) for d in dicts]))
    for n, d in zip(have, dicts):
        if d.equals(union):
            continue
        where = pc.index_in(d.cast(pa.string()), value_set=union).cast(pa.int32())
        col = table.column(n)
        chunks = [pa.DictionaryArray.from_arrays(pc.take(where, c.indices), union) for c in col.chunks]
        table = table.set_column(table.schema.get_field_index(n), n,
                                 pa.chunked_array(chunks, pa.dictionary(pa.int32(), pa.string())))
    return table


class PartFrames(RowFrames):
    """Rows in Parquet parts (and batches held in memory), read per kind when asked for
    (see the module docstring). ``parts``: each kind's parts; ``held``: each kind's tables
    not on disk (a full disk); ``schemas``: each kind's schema where known."""

    def __init__(self, parts: Mapping[str, list[Part]], held: Mapping[str, list[pa.Table]] | None = None,
                 schemas: Mapping[str, pa.Schema] | None = None, equal: Mapping[str, Any] | None = None,
                 memos: dict | None = None, passes: Passes | None = None) -> None:
        super().__init__({})
        self._parts = {k: list(v) for k, v in parts.items()}
        self._held = {k: list(v) for k, v in (held or {}).items()}
        self._schemas = dict(schemas or {})
        self._equal = dict(equal or {})
        self._memos = memos if memos is not None else {}
        self._passes = passes if passes is not None else Passes()
        self._read: dict[str, tuple[frozenset | None, pd.DataFrame]] = {}  # kind -> (columns read, frame)

    def _may_hold(self, kind: str) -> bool:
        return any(p.rows and p.may_hold(self._equal) for p in self._parts.get(kind, ())) or \
            any(len(t) for t in self._held.get(kind, ()))

    def _count(self, kind: str) -> int:
        """The selected rows of ``kind``: from the parts' counts where their values tell,
        else by reading the selecting columns alone."""
        if not self._may_hold(kind):
            return 0
        parts = [p for p in self._parts.get(kind, ()) if p.may_hold(self._equal)]
        if not self._equal:
            return sum(p.rows for p in parts) + sum(len(t) for t in self._held.get(kind, ()))
        if all(p.all_match(self._equal) for p in parts) and not self._held.get(kind):
            return sum(p.rows for p in parts)
        return len(self.kind(kind, list(self._equal)))

    def kind(self, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The selected rows of ``kind`` (only ``columns``, in that order, where given;
        a column the rows lack comes back all missing)."""
        if not self._may_hold(kind):
            return pd.DataFrame() if columns is None else pd.DataFrame(columns=list(columns))
        read = self._read.pop(kind, None)
        want = None if columns is None else frozenset(columns)
        if read is not None and (read[0] is None or (want is not None and want <= read[0])):
            self._read[kind] = read
        elif read is not None and read[0] is not None and want is not None:
            # only the columns not read before, beside those kept (one frame per kind)
            self._read[kind] = (want | read[0], self._widen(kind, read[1], read[0], want - read[0]))
        else:
            read = None  # (every column: read again, the frame kept before let go first)
            self._read[kind] = (want, self._read_kind(kind, columns))
        return pick(self._read[kind][1], columns)

    def _read_kind(self, kind: str, columns: Sequence[str] | None) -> pd.DataFrame:
        return read_kind(self._parts.get(kind, ()), self._held.get(kind, ()), kind, self._equal, columns,
                         self._schemas.get(kind))

    def _widen(self, kind: str, kept: pd.DataFrame, have: frozenset, new: frozenset) -> pd.DataFrame:
        """``kept`` (the selected rows' columns ``have``) with the columns ``new`` read
        beside it: the same parts and selection give the same rows in the same order.
        ``src`` and ``dst`` are read together, so they keep one set of categories."""
        if new & set(SHARED):
            new = new | (have & set(SHARED))
        order = sorted(new)
        extra = self._read_kind(kind, order)
        merged = {c: kept[c] for c in kept.columns if c not in new}
        merged.update({c: extra[c] for c in order})
        return pd.DataFrame(merged, copy=False)

    def read(self, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """As :meth:`kind`, but a frame read for it is not kept by this view (one already
        kept that holds the columns is used)."""
        read = self._read.get(kind)
        if read is not None and (read[0] is None or (columns is not None and frozenset(columns) <= read[0])):
            return pick(read[1], columns)
        if not self._may_hold(kind):
            return pd.DataFrame() if columns is None else pd.DataFrame(columns=list(columns))
        return self._read_kind(kind, columns)

    def forget(self, kind: str) -> None:
        self._read.pop(kind, None)

    def pieces(self, kind: str, columns: Sequence[str]) -> Iterator[pd.DataFrame]:
        """The selected rows of ``kind`` a few parts at a time (at least :data:`PIECE_ROWS`
        rows a piece, but for the last; each table held in memory counts as a part), in
        :meth:`kind`'s order, only ``columns``, never kept: each piece's values are those
        :meth:`kind` gives (its parts typed, conformed and selected as their read does, ids as
        the piece's own categoricals), so a reader that reduces the rows as they come holds
        one piece's (at 131,072 cards the p2p rows read whole were 2.97 GB). A frame this
        view already keeps with the columns is the one piece."""
        for piece in self.tables(kind, columns):
            yield piece if isinstance(piece, pd.DataFrame) else to_frame([piece], kind, release=True)

    def tables(self, kind: str, columns: Sequence[str]) -> Iterator[pa.Table | pd.DataFrame]:
        """:meth:`pieces` before pandas: each piece as the Arrow table its frame would be made
        from (only ``columns``, in that order; each id column one dictionary over its chunks,
        ``src`` and ``dst`` the same one), for a reader of millions of rows that takes the
        dictionaries' indices as they are (at 131,072 cards the frames' categoricals and
        columns cost about as much as the read). A frame this view already keeps with the
        columns is the one piece, as a frame."""
        read = self._read.get(kind)
        if read is not None and (read[0] is None or frozenset(columns) <= read[0]):
            if len(read[1]):
                yield pick(read[1], columns)
            return
        if not self._may_hold(kind):
            return
        want = list(dict.fromkeys([*columns, *self._equal]))
        known = self._schemas.get(kind)
        tables: list[pa.Table] = []
        for source in [*(p for p in self._parts.get(kind, ()) if p.may_hold(self._equal)), *self._held.get(kind, ())]:
            # (a part whose values say every row is selected: only the columns asked, as kind() reads it)
            whole = isinstance(source, Part) and source.all_match(self._equal)
            names = list(columns) if whole else want
            if isinstance(source, Part):
                table = _typed(source, source.read(names), kind)
            else:
                table = source.select([c for c in names if c in source.column_names])
            have = known if known is not None else table.schema
            table = conform(table, pa.schema([have.field(c) if c in have.names else pa.field(c, _declared(kind, c))
                                              for c in names]))
            table = table if whole else _select(table, self._equal).select(list(columns))
            if len(table):
                tables.append(table)
            if sum(len(t) for t in tables) >= PIECE_ROWS:
                yield _table(tables).select(list(columns))   # (_table empties the list)
        if tables:
            yield _table(tables).select(list(columns))

    def columns(self, kind: str) -> list[str]:
        """The columns the rows of ``kind`` carry (nothing read)."""
        if kind in self._schemas:
            return list(self._schemas[kind].names)
        names: dict[str, None] = {}
        for p in self._parts.get(kind, ()):
            names.update(dict.fromkeys(p.names))
        for t in self._held.get(kind, ()):
            names.update(dict.fromkeys(t.column_names))
        return list(names)

    def rows_at(self, kind: str, positions: Sequence[int], decode: bool = True) -> pd.DataFrame:
        """The selected rows of ``kind`` at these positions (of :meth:`kind`'s order), every
        column: only the parts that hold them are read (an evidence bundle's few rows,
        never the whole kind; ``decode`` False: JSON columns as their text)."""
        asked = np.asarray(positions, dtype=np.int64)
        order = np.argsort(asked, kind="stable")
        at = asked[order]  # the parts give their rows in row order: read in that order
        tables, offset = [], 0
        sources: list[Part | pa.Table] = [*(p for p in self._parts.get(kind, ()) if p.may_hold(self._equal)),
                                          *self._held.get(kind, ())]
        with partrows.Reader() as reader:   # (one connection for every part whose rows are read alone)
            for source in sources:
                table = None
                if isinstance(source, Part) and (not self._equal or source.all_match(self._equal)):
                    n = source.rows
                else:
                    table = source.read(None) if isinstance(source, Part) else source
                    table = _select(table, self._equal)
                    n = len(table)
                mine = at[(at >= offset) & (at < offset + n)] - offset
                if len(mine) and table is None and isinstance(source, Part):
                    tables.append(source.read_rows(mine, reader))   # (decoded whole only where many rows are asked)
                elif len(mine):
                    assert table is not None
                    tables.append(table.take(pa.array(mine)))
                offset += n
        schema = self._schemas.get(kind) or (_union_schema(tables) if tables else None)
        frame = _frame([conform(t, schema) for t in tables] if schema is not None else tables, kind, decode)
        # in the order asked for
        return frame.iloc[np.argsort(order)] if len(frame) == len(at) and not (np.diff(asked) >= 0).all() else frame

    def counts(self) -> dict[str, int]:
        """Rows per kind (of every row: the parts' counts, nothing read)."""
        return {k: sum(p.rows for p in self._parts.get(k, ())) + sum(len(t) for t in self._held.get(k, ()))
                for k in self._kinds_known()}

    def _kinds_known(self) -> list[str]:
        return list(dict.fromkeys([*self._parts, *self._held]))

    @property
    def kinds(self) -> list[str]:
        return [k for k in self._kinds_known() if self._count(k)]

    @property
    def empty(self) -> bool:
        return not self.kinds

    def __len__(self) -> int:
        return sum(self._count(k) for k in self._kinds_known())

    def where(self, **equal: Any) -> "PartFrames":
        return PartFrames(self._parts, self._held, self._schemas, {**self._equal, **equal}, self._memos,
                          self._passes)

    def _rows_key(self, kind: str) -> tuple:
        """The selected rows of ``kind``, named by the parts that hold them (written once,
        never changed) and the selection."""
        parts = tuple((str(p.path), p.rows) for p in self._parts.get(kind, ()) if p.may_hold(self._equal))
        held = tuple(id(t) for t in self._held.get(kind, ()))  # (the store keeps them: ids stay theirs)
        return (kind, parts, held, tuple(sorted(self._equal.items(), key=lambda x: x[0])))

    def memo(self, kind: str, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` of the selected rows of ``kind``, kept with the run (its store, or
        this view of a directory) for every later view of the same rows: a value derived
        from the rows (the fabric counters of each evaluation) is built once per run and
        dropped with it. Keyed by the rows (:meth:`_rows_key`) and ``key``."""
        full = (*self._rows_key(kind), key)
        if full not in self._memos:
            self._memos[full] = build()
        return self._memos[full]

    def shared(self, kind: str, name: str, make: Make) -> Any:
        """What the builder ``name`` builds of the selected rows of ``kind``: from the one
        pass over them that feeds every builder expected of the kind (:mod:`sncheck.store.passes`),
        kept with the run until its reader asks, keyed by the rows (:meth:`_rows_key`)."""
        return self._passes.take(self._rows_key(kind), name, make, lambda columns: self.tables(kind, columns))

    def expect(self, kind: str, makes: Mapping[str, Make]) -> None:
        self._passes.expect(self._rows_key(kind), makes)

    def frame(self) -> pd.DataFrame:
        return RowFrames({k: self.kind(k) for k in self.kinds}).frame()
