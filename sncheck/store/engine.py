"""The columnar engine over a run's rows: DuckDB, reading the Parquet parts in place.

Judging a fleet reads tens of millions of pair rows (131,072 cards: 33 M p2p rows, 23 M
rank rows). No frame of them is ever built: each statistic is one SQL aggregate that
DuckDB streams over the row files (``rows/<kind>/part-*.parquet``), or over frames in
memory for a small run, a retest or a test (:class:`FrameRows`). Why DuckDB, with the
figures: README "Judging at fleet size".

A :class:`RowSource` names, per row kind, a SQL relation of the selected rows (a layer,
the entity a retest confirms); :meth:`RowSource.sql` runs a query over them. Columns a
kind's rows do not carry (an older run, a test's few columns) read as NULL, so every
query can name the declared columns (:data:`sncheck.rows.SCHEMA`).
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa

from sncheck.store.frames import RowFrames, kind_rows
from sncheck.rows import columns_of
from sncheck.store.frames import to_frame
import pyarrow.parquet as pq

THREADS = 2          # this is a control node: the engine takes two cores at most
MEMORY_LIMIT = "3GB"  # holistic aggregates (exact medians) hold one query's values


def connect() -> Any:
    """A DuckDB connection set for judging (imported here: the CLI starts without it)."""
    import duckdb  # noqa: PLC0415 -- duckdb: only the SQL engine needs it

    con = duckdb.connect()
    con.execute(f"SET threads={THREADS}")
    con.execute(f"SET memory_limit='{MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order=false")
    # nn(x): NULL for NaN. DuckDB orders NaN above every number; pandas compares it false.
    con.execute("CREATE MACRO nn(x) AS CASE WHEN isnan(x) THEN NULL ELSE x END")
    return con


def quote(value: str) -> str:
    """A SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def literal(value: float | None) -> str:
    """A SQL double literal; NULL for None and NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NULL::DOUBLE"
    return f"{float(value)!r}::DOUBLE"


class RowSource:
    """The selected rows of a run, per kind, as SQL relations (see the module docstring)."""

    def __init__(self, equal: Mapping[str, Any] | None = None) -> None:
        self.equal = {k: v for k, v in (equal or {}).items() if v is not None}
        self._con: Any = None
        self._lock = threading.Lock()
        self._relations: dict[str, str | None] = {}

    # -- what a subclass gives
    def _columns(self, kind: str) -> list[str]:
        """The columns the rows of ``kind`` carry (none: no rows)."""
        raise NotImplementedError

    def _scan(self, con: Any, kind: str) -> str:
        """A SQL relation of every row of ``kind``."""
        raise NotImplementedError

    def frame(self, kind: str) -> pd.DataFrame:
        """The selected rows of a small kind as a pandas frame (host facts, golden steps)."""
        raise NotImplementedError

    # -- shared
    @property
    def con(self) -> Any:
        if self._con is None:
            self._con = connect()
        return self._con

    def has(self, kind: str, *columns: str) -> bool:
        """Whether ``kind`` has rows with all these columns."""
        have = self._columns(kind)
        return bool(have) and all(c in have for c in columns)

    def relation(self, kind: str) -> str | None:
        """A SQL relation (in parentheses) of the selected rows of ``kind``, every declared
        column present (NULL where the rows have none); None where there are no rows."""
        with self._lock:
            if kind not in self._relations:
                self._relations[kind] = self._relation(kind)
            return self._relations[kind]

    def _relation(self, kind: str) -> str | None:
        have = self._columns(kind)
        if not have:
            return None
        declared = [name for name, _ in columns_of(kind)]
        extra = [c for c in declared if c not in have]
        cols = ", ".join(["*"] + [f"NULL AS {c}" for c in extra])
        where = " AND ".join(f"{c}::VARCHAR = {quote(v)}" if c in have else "false" for c, v in self.equal.items())
        return f"(SELECT {cols} FROM {self._scan(self.con, kind)}{' WHERE ' + where if where else ''})"

    def sql(self, query: str) -> pd.DataFrame:
        """Run ``query`` (its relations from :meth:`relation`) into a pandas frame."""
        with self._lock:
            return self.con.sql(query).df()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


class FileRows(RowSource):
    """The rows of a run directory, read in place from ``rows/<kind>/part-*.parquet``
    (the parts written so far: a run in progress flushes its store first)."""

    def __init__(self, rows_dir: Path, equal: Mapping[str, Any] | None = None) -> None:
        super().__init__(equal)
        self.rows_dir = Path(rows_dir)
        self._schemas: dict[str, list[str]] = {}

    def parts(self, kind: str) -> list[Path]:
        return sorted((self.rows_dir / kind).glob("part-*.parquet"))

    def _columns(self, kind: str) -> list[str]:
        if kind not in self._schemas:
            names: dict[str, None] = {}
            for part in self.parts(kind):  # a later part may add a column (merge_schema)
                names.update(dict.fromkeys(pq.read_schema(part).names))
            self._schemas[kind] = list(names)
        return self._schemas[kind]

    def _scan(self, con: Any, kind: str) -> str:  # noqa: ARG002 -- the engine's _scan interface: only duckdb's reads the connection
        files = ", ".join(quote(str(p)) for p in self.parts(kind))
        return f"read_parquet([{files}], union_by_name=true)"

    def frame(self, kind: str) -> pd.DataFrame:
        tables = [pq.read_table(p) for p in self.parts(kind)]
        frames = RowFrames({kind: to_frame(tables, kind)})
        return frames.where(**self.equal).kind(kind) if self.equal else frames.kind(kind)


class FrameRows(RowSource):
    """Rows held in memory (a small run, a retest window, a test): :class:`RowFrames`
    or one frame of every kind (with a ``kind`` column)."""

    def __init__(self, rows: RowFrames | pd.DataFrame, equal: Mapping[str, Any] | None = None) -> None:
        super().__init__(equal)
        self.rows = rows
        self._tables: dict[str, pa.Table | None] = {}

    def frame(self, kind: str) -> pd.DataFrame:
        f = kind_rows(self.rows, kind)
        if f.empty or not self.equal:
            return f
        return RowFrames({kind: f}).where(**self.equal).kind(kind)

    def _table(self, kind: str) -> pa.Table | None:
        if kind not in self._tables:
            f = kind_rows(self.rows, kind)
            if f.empty:
                self._tables[kind] = None
            else:
                # Arrow, NaN as NULL (DuckDB keeps a NaN a NaN, which compares above every number)
                plain = f.reset_index(drop=True)
                plain = plain.astype({c: object for c in plain.columns if plain[c].dtype == object})
                self._tables[kind] = pa.Table.from_pandas(plain, preserve_index=False)
        return self._tables[kind]

    def _columns(self, kind: str) -> list[str]:
        t = self._table(kind)
        return [] if t is None else list(t.column_names)

    def _scan(self, con: Any, kind: str) -> str:
        name = f"rows_{kind}"
        con.register(name, self._table(kind))
        return name
