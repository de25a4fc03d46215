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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sncheck.errors import ConfigError

SPARSE = 64           # rows asked fewer than one in this many of a part's: read for themselves
SPARSE_MIN = 1 << 16  # a smaller part is decoded whole (cheaper than starting DuckDB's reader)


def sparse(asked: int, rows: int) -> bool:
    """Whether ``asked`` rows of a part of ``rows`` are few enough to be read alone."""
    return rows >= SPARSE_MIN and asked * SPARSE < rows


def rows_of_file(path: Path, at: np.ndarray) -> pa.Table:
    """The rows at positions ``at`` (ascending, within the file) of the Parquet file
    ``path``, every column, in the file's Arrow schema (ConfigError naming the file if
    it cannot be read)."""
    import duckdb  # noqa: PLC0415 -- duckdb: only these reads (and the SQL engine) need it

    try:
        schema = pq.read_schema(path)
        con = duckdb.connect()
        try:
            con.execute("SET threads=1")
            rel = con.sql(
                "SELECT * EXCLUDE (file_row_number) FROM read_parquet($path, file_row_number = true) "
                "WHERE file_row_number IN (SELECT unnest($at::BIGINT[])) ORDER BY file_row_number",
                params={"path": str(path), "at": np.asarray(at, dtype=np.int64).tolist()})
            # (DuckDB 1.1 has fetch_arrow_table; 2.0 names it to_arrow_table and warns on the old name)
            table = (getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table)()
        finally:
            con.close()
        if table.num_rows != len(at):
            raise ConfigError(f"not a readable part of a run's rows: {table.num_rows} of the {len(at)} rows asked "
                              "were found", str(path))
        return table.cast(schema)
    except (OSError, pa.ArrowException, duckdb.Error) as e:
        raise ConfigError(f"not a readable part of a run's rows: {e}", str(path)) from e
