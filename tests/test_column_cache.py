"""What a run's readers decoded from its parts is kept for the next reader, up to a budget,
and only while the part is the file written (issue 31, store31: sncheck/store/columncache.py)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sncheck.errors import HarnessError
from sncheck.store import columncache, parts
from sncheck.store.rundir import RunStore


@pytest.fixture
def decoded(monkeypatch):
    """The columns decoded from the parts' files, one list per read."""
    seen: list[list[str] | None] = []
    real = pq.ParquetFile.read

    def read(self, columns=None, **kw):
        seen.append(None if columns is None else list(columns))
        return real(self, columns=columns, **kw)

    monkeypatch.setattr(parts.pq.ParquetFile, "read", read)
    return seen


def _store(tmp_path, batches: int = 2, rows: int = 1000) -> RunStore:
    store = RunStore(tmp_path, run_id="r-1")
    rng = np.random.default_rng(7)
    for b in range(batches):
        store.batch("p2p", {"round": b, "src": [f"h{i % 5}/gpu0" for i in range(rows)],
                            "dst": [f"h{(i + 1) % 5}/gpu1" for i in range(rows)], "bw_GBps": rng.random(rows),
                            "lat_us": rng.random(rows), "status": "ok", "tier": "scale_out"})
    return store


def test_a_column_read_again_is_not_decoded_again(tmp_path, decoded):
    store = _store(tmp_path)
    first = store.frames().kind("p2p", ["src", "bw_GBps"])
    assert decoded == [["src", "bw_GBps"]] * 2
    decoded.clear()
    # a new view, the same columns and one more: only the new one is decoded
    again = store.frames().kind("p2p", ["bw_GBps", "lat_us", "src"])
    assert decoded == [["lat_us"]] * 2
    assert again["bw_GBps"].tolist() == first["bw_GBps"].tolist()
    assert again["src"].astype(str).tolist() == first["src"].astype(str).tolist()
    # a whole part (evidence's rows) takes what is kept and decodes the rest, keeping none of it
    decoded.clear()
    whole = store.frames().rows_at("p2p", [0, 1500])
    assert decoded and all("bw_GBps" not in d and "link" in d for d in decoded)
    assert whole["bw_GBps"].tolist() == [first["bw_GBps"][0], first["bw_GBps"][1500]]
    decoded.clear()
    store.frames().kind("p2p", ["link"])
    assert decoded == [["link"]] * 2
    store.close()


def test_a_column_is_kept_only_where_every_part_s_of_it_fits(tmp_path, decoded, monkeypatch):
    monkeypatch.setattr(columncache, "COLUMN_SHARE", 1)   # (its own rule: the last case)
    store = _store(tmp_path / "one")  # two parts of 1,000 rows: a float column is 8,000 bytes a part
    cache = store.column_cache
    cache.budget = 20_000             # room for one column of the kind, not two
    store.frames().kind("p2p", ["bw_GBps", "lat_us"])
    assert 16_000 <= cache.held <= cache.promised <= cache.budget
    decoded.clear()
    store.frames().kind("p2p", ["bw_GBps", "lat_us"])
    assert decoded == [["lat_us"]] * 2   # bw_GBps kept in both parts; lat_us in none
    # a kind larger than the budget keeps nothing, not its first parts (131,072 cards' pairs)
    store2 = _store(tmp_path / "two")
    store2.column_cache.budget = 9_000   # one part's column, not the kind's
    store2.frames().kind("p2p", ["bw_GBps"])
    assert store2.column_cache.held == 0
    # nor a column of a kind that would take more than a quarter of it, room or not (at 131,072
    # cards an int32 column of the pairs, 200 MB, fit the whole 192 MiB budget)
    monkeypatch.setattr(columncache, "COLUMN_SHARE", 4)
    store3 = _store(tmp_path / "three")
    store3.column_cache.budget = 60_000  # the kind's bw_GBps: 16,250 bytes, more than 15,000
    store3.frames().kind("p2p", ["bw_GBps"])
    assert store3.column_cache.held == 0
    store.close()
    store2.close()
    store3.close()


def test_a_part_changed_under_the_run_is_read_from_its_file(tmp_path, decoded):
    store = _store(tmp_path)
    assert store.frames().kind("p2p", ["bw_GBps"])["bw_GBps"].max() < 1
    part = tmp_path / "rows/p2p/part-000001.parquet"
    table = pq.read_table(part)
    table = table.set_column(table.schema.get_field_index("bw_GBps"), "bw_GBps", pa.array(np.full(len(table), 5.0)))
    pq.write_table(table, part)
    os.utime(part, ns=(1, 1))   # (whatever its time: another file than the one written)
    decoded.clear()
    assert store.frames().kind("p2p", ["bw_GBps"])["bw_GBps"].max() == 5.0
    assert decoded == [["bw_GBps"]]
    part.unlink()
    with pytest.raises(HarnessError, match="part-000001.*gone or changed under the run"):
        store.frames().kind("p2p", ["bw_GBps"])
    store.close()
