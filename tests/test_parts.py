"""The run store holds no rows: each kind is read back from its Parquet parts when asked
for, only the columns asked for, ids as categoricals (issue 31, sncheck/store/parts.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sncheck.errors import ConfigError, HarnessError
from sncheck.health.fabric import fabric_counters
from sncheck.health.metrics import DetectContext
from sncheck.config.inventory import Inventory
from sncheck.store.rundir import RunStore, read_frames
from sncheck.topology import Topology


def _store(tmp_path) -> RunStore:
    store = RunStore(tmp_path, run_id="r-1")
    store.batch("p2p", {"round": 0, "src": ["a/gpu0", "a/gpu1", "b/gpu0"], "dst": ["b/gpu1", "b/gpu0", "a/gpu0"],
                        "link": ["a/gpu0<->b/gpu1", "a/gpu1<->b/gpu0", "a/gpu0<->b/gpu0"],
                        "bw_GBps": [1.0, 2.0, 3.0], "status": "ok", "tier": "scale_out"})
    store.tagged(layer="confirm", confirms="a/gpu0").batch("p2p", {"round": [1], "src": ["c/gpu0"],
                                                                     "dst": ["a/gpu0"], "bw_GBps": [4.0],
                                                                     "status": ["timeout"]})
    store.batch("p2p", {"round": 2, "src": ["d/gpu0"], "dst": ["a/gpu1"], "bw_GBps": [5.0], "status": "ok"})
    return store


def test_a_kind_is_read_back_from_its_parts_with_only_the_columns_asked(tmp_path):
    store = _store(tmp_path)
    rows = store.frames("connectivity")
    p2p = rows.kind("p2p", ["src", "bw_GBps", "no_such_column"])
    assert list(p2p.columns) == ["src", "bw_GBps", "no_such_column"]
    assert p2p["bw_GBps"].tolist() == [1.0, 2.0, 3.0, 5.0] and p2p["no_such_column"].isna().all()
    assert len(rows) == 4 and rows.counts() == {"p2p": 5}
    # every column, in the declared order, from the same view
    assert rows.kind("p2p")["round"].tolist() == [0, 0, 0, 2]
    # nothing is held: a part removed from disk is an error naming it (no copy in memory,
    # and no row silently lost); a part this run wrote, gone under it, is the harness's
    # (exit 3, hostile round 11's H11-06), not the user's input
    (tmp_path / "rows/p2p/part-000003.parquet").unlink()
    with pytest.raises(HarnessError, match="part-000003.*gone or changed under the run"):
        store.frames("connectivity").kind("p2p", ["bw_GBps"])
    # a retest's rows come from its own part: the others are never opened
    (tmp_path / "rows/p2p/part-000001.parquet").write_bytes(b"not parquet")
    assert store.frame("p2p", layer="confirm", columns=["src"])["src"].tolist() == ["c/gpu0"]
    with pytest.raises(HarnessError, match="part-000001"):
        store.frames("connectivity").kind("p2p", ["src"])
    store.close()
    # the same parts read as a run directory's (sncheck.store.read_frames): the input's fault
    with pytest.raises(ConfigError, match="part-000001"):
        read_frames(tmp_path).kind("p2p", ["src"])


def test_src_and_dst_share_one_category_set(tmp_path):
    store = _store(tmp_path)
    store.close()
    p2p = read_frames(tmp_path).kind("p2p", ["src", "dst"])
    assert isinstance(p2p["src"].dtype, pd.CategoricalDtype) and p2p["src"].dtype == p2p["dst"].dtype
    same = p2p["src"].cat.codes.to_numpy() == p2p["dst"].cat.codes.to_numpy()
    assert same.tolist() == (p2p["src"].astype(object) == p2p["dst"].astype(object)).tolist()
    assert set(p2p["src"].cat.categories) == {"a/gpu0", "a/gpu1", "b/gpu0", "b/gpu1", "c/gpu0", "d/gpu0"}
    assert p2p["dst"].astype(object).tolist() == ["b/gpu1", "b/gpu0", "a/gpu0", "a/gpu0", "a/gpu1"]


def test_rows_at_gives_the_rows_of_those_positions_reading_only_their_parts(tmp_path):
    store = _store(tmp_path)
    store.close()
    for rows in (store.frames(), read_frames(tmp_path), read_frames(tmp_path).where(status="ok")):
        whole = rows.kind("p2p")
        # unsorted within one part too (part 0 holds rows 0-2)
        for at in ([0], [len(whole) - 1, 1], [2, 0], [2, 0, 1], list(range(len(whole)))):
            got = rows.rows_at("p2p", at)
            assert got["src"].astype(object).tolist() == whole["src"].astype(object).iloc[at].tolist()
            assert got["bw_GBps"].tolist() == whole["bw_GBps"].iloc[at].tolist()
    (tmp_path / "rows/p2p/part-000001.parquet").write_bytes(b"not parquet")
    assert store.frames().rows_at("p2p", [3])["bw_GBps"].tolist() == [4.0]  # part 1 not opened


def test_the_fabric_counters_are_built_once_per_run_and_again_for_new_reads(tmp_path, monkeypatch):
    import sncheck.store.rundir as rundir

    inv = Inventory("t", (), {})
    ctx = DetectContext(Topology(inv), {})
    store = RunStore(tmp_path, run_id="r-1")

    def read(n: int, errors: int) -> None:
        store.emit_rows([{"kind": "host_fact", "layer": "connectivity", "host": "h1", "fact": "nvlink_errors",
                          "status": "ok", "ok": True,
                          "value": {"read": n, "gpus": [{"index": 0, "links": {"0": {"crc_errors": errors}}}]}}])

    read(0, 1)
    read(1, 3)
    first = fabric_counters(store.frames("connectivity"), ctx)
    again = fabric_counters(store.frames("connectivity"), ctx)
    assert first["growth"].tolist() == [2] and again.equals(first) and again is not first
    assert len(store.memos) == 1
    first.loc[:, "growth"] = 99  # a caller's copy: the run's frame is untouched
    assert fabric_counters(store.frames("connectivity"), ctx)["growth"].tolist() == [2]
    read(2, 7)  # a later read (a retest's): other parts, another frame
    assert fabric_counters(store.frames("connectivity"), ctx)["growth"].tolist() == [6]
    view = store.frames("connectivity")
    trims = []
    monkeypatch.setattr(rundir, "trim_heap", lambda: trims.append(1) or True)
    store.close()
    # judged: the run's frames go with it before the reports (a view made before shares them),
    # and the heap's free pages go back to the system (once: closing again is nothing)
    store.close()
    assert store.memos == {} and trims == [1]
    assert fabric_counters(view, ctx)["growth"].tolist() == [6]   # a later reader builds its own
    # a run directory read back builds its own (no module-level cache keeps frames)
    assert fabric_counters(read_frames(tmp_path).where(layer="connectivity"), ctx)["growth"].tolist() == [6]


def test_a_batch_the_disk_refused_is_read_back_from_memory(tmp_path, monkeypatch):
    store = _store(tmp_path)
    import sncheck.store.rundir as rundir

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(rundir.pq, "write_table", full)
    with pytest.raises(HarnessError):
        store.batch("p2p", {"round": 3, "src": ["e/gpu0"], "dst": ["a/gpu0"], "bw_GBps": [6.0], "status": "ok"})
    store.batch("p2p", {"round": 4, "src": ["e/gpu1"], "dst": ["a/gpu0"], "bw_GBps": [7.0], "status": "ok"})
    p2p = store.frames("connectivity").kind("p2p", ["src", "bw_GBps"])
    assert p2p["bw_GBps"].tolist() == [1.0, 2.0, 3.0, 5.0, 6.0, 7.0]
    assert np.array_equal(store.frames().rows_at("p2p", [6])["bw_GBps"].to_numpy(), [7.0])
    assert store.write_error is not None


@pytest.mark.parametrize("special", ["fifo", "symlink", "folder", "rows"])
def test_a_part_that_is_no_regular_file_is_an_error_naming_it_never_read(tmp_path, special):
    """A FIFO named as a part blocked read_frames (and every command reading a run
    directory) for ever on its open; a link led the read out of the run directory."""
    import os

    store = _store(tmp_path / "run")
    store.close()
    part = tmp_path / "run/rows/p2p/part-000003.parquet"
    part.unlink()
    if special == "fifo":
        os.mkfifo(part)
    elif special == "symlink":
        part.symlink_to(tmp_path / "run/rows/p2p/part-000001.parquet")
    else:  # a kind's folder, or rows/ itself, a link to another run's rows
        _store(tmp_path / "other").close()
        link = tmp_path / ("run/rows/p2p" if special == "folder" else "run/rows")
        os.rename(link, tmp_path / f"{special}-moved")
        link.symlink_to(tmp_path / ("other/rows/p2p" if special == "folder" else "other/rows"))
    with pytest.raises(ConfigError) as e:
        read_frames(tmp_path / "run")
    said = {"fifo": ("not a regular file", "part-000003"), "symlink": ("not a regular file", "part-000003"),
            "folder": ("a link", "rows/p2p"), "rows": ("a link", "run/rows")}[special]
    assert all(w in str(e.value) for w in said), str(e.value)


def test_a_written_part_knows_the_layers_and_retests_its_rows_hold_and_no_others(tmp_path):
    """``Part.of_table`` reads an id column's values from the codes its rows use (no
    string per row): a dictionary entry no row uses is not a value of the part, a missing
    value is None, and a column of several chunks gives the values of all of them."""
    import pyarrow as pa

    from sncheck.store.parts import Part

    def ids(codes, names):
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(names))

    table = pa.table({"layer": pa.chunked_array([ids([0, 0], ["stress", "confirm"]), ids([1], ["x", "connectivity"])]),
                      "confirms": pa.chunked_array([ids([None, None], ["a/gpu0"]), ids([0], ["b/gpu1"])])})
    part = Part.of_table(tmp_path / "part-000001.parquet", table)
    assert part.values == {"layer": {"stress", "connectivity"}, "confirms": {None, "b/gpu1"}}
    assert part.may_hold({"layer": "stress"}) and not part.may_hold({"layer": "confirm"})
    assert not part.may_hold({"confirms": "a/gpu0"})
    # a column of plain text keeps its values as before
    plain = Part.of_table(tmp_path / "p.parquet", pa.table({"layer": ["golden", None, "golden"]}))
    assert plain.values == {"layer": {"golden", None}}


def test_a_part_stores_its_measurements_uncompressed_and_the_rest_compressed(tmp_path):
    """Floating-point measurements do not compress (snappy made them larger and cost ~9% of
    a fleet's p2p part's write, round 14): they are stored as they are, every other column
    with snappy, and read back the same."""
    import pyarrow.parquet as pq

    store = _store(tmp_path)
    store.close()
    [first, *_] = sorted((tmp_path / "rows" / "p2p").glob("part-*.parquet"))
    meta = pq.ParquetFile(first).metadata.row_group(0)
    codecs = {meta.column(i).path_in_schema: meta.column(i).compression for i in range(meta.num_columns)}
    assert codecs["bw_GBps"] == "UNCOMPRESSED"
    assert codecs["link"] == codecs["src"] == codecs["round"] == "SNAPPY"
    assert read_frames(tmp_path).kind("p2p", ["bw_GBps"])["bw_GBps"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
