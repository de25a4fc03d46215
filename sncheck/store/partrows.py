"""A few rows of a Parquet part, read for themselves (evidence bundles, issue 31).

An evidence bundle keeps a few hundred rows of a kind, every column, and a finding's rows
lie in nearly every part (a card's pairs are in every round). Decoding a whole part for
them (pyarrow reads a row group whole: every column of a 1 M-row part, its link text
included) was 20 of the 131,072-card gate's 34 s of evidence; DuckDB reads a part's row
numbers first and decodes the other columns only where a wanted row lies (0.06-0.19 s
against 0.16-0.74 s a part there). The rows come back in the file's own Arrow types, as
pyarrow's read would give them (a dictionary column holds only the values of the rows
read: the same values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sncheck.errors import ConfigError

# Rows asked fewer than one in this many of a part's: read for themselves. Through one connection
# (Reader) DuckDB's read of a quarter of a part's rows costs less than decoding it whole (the
# 16,384-card gate's evidence, 4 findings: PartFrames.rows_at 1.68 s CPU at one in 64, 1.20-1.34
# at one in 4, the bundles identical).
SPARSE = 4
SPARSE_MIN = 1 << 16  # a smaller part is decoded whole (cheaper than starting DuckDB's reader)


def sparse(asked: int, rows: int) -> bool:
    """Whether ``asked`` rows of a part of ``rows`` are few enough to be read alone."""
    return rows >= SPARSE_MIN and asked * SPARSE < rows


class Reader:
    """Rows of several parts read for themselves through one DuckDB connection, opened at
    the first read and closed with the reader (``with Reader() as r: r.rows(path, at)``). A
    bundle's rows lie in nearly every part, and a connection each cost as much as the read:
    the 16,384-card gate's evidence read 20 parts in 1.74 s CPU with a connection each,
    0.86 s through one."""

    def __init__(self) -> None:
        self._con: Any = None

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def rows(self, path: Path, at: np.ndarray) -> pa.Table:
        """The rows at positions ``at`` (ascending, within the file) of the Parquet file
        ``path``, every column, in the file's Arrow schema (ConfigError naming the file if
        it cannot be read)."""
        import duckdb  # noqa: PLC0415 -- duckdb: only these reads (and the SQL engine) need it

        try:
            schema = pq.read_schema(path)
            if self._con is None:
                self._con = duckdb.connect()
                self._con.execute("SET threads=1")
            rel = self._con.sql(
                "SELECT * EXCLUDE (file_row_number) FROM read_parquet($path, file_row_number = true) "
                "WHERE file_row_number IN (SELECT unnest($at::BIGINT[])) ORDER BY file_row_number",
                params={"path": str(path), "at": np.asarray(at, dtype=np.int64).tolist()})
            # (DuckDB 1.1 has fetch_arrow_table; 2.0 names it to_arrow_table and warns on the old name)
            table = (getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table)()
            if table.num_rows != len(at):
                raise ConfigError(f"not a readable part of a run's rows: {table.num_rows} of the {len(at)} rows "
                                  "asked were found", str(path))
            return table.cast(schema)
        except (OSError, pa.ArrowException, duckdb.Error) as e:
            raise ConfigError(f"not a readable part of a run's rows: {e}", str(path)) from e


def rows_of_file(path: Path, at: np.ndarray) -> pa.Table:
    """:meth:`Reader.rows` of one file, through a connection of its own."""
    with Reader() as reader:
        return reader.rows(path, at)
