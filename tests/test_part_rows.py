"""An evidence bundle's few rows of a part are read for themselves (issue 31: decoding
every column of a 1 M-row part for a card's few rows was 20 of the 131,072-card gate's
34 s of evidence; sncheck/store/partrows.py): the same rows and values as the whole part
decoded and taken, in the order asked, for every kind's column types; a part that
cannot be read is still an error naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sncheck.store.partrows as partrows
from sncheck.errors import ConfigError, HarnessError
from sncheck.store.rundir import RunStore, read_frames

N = 300


def _store(tmp_path) -> RunStore:
    store = RunStore(tmp_path, run_id="r-1")
    rng = np.random.default_rng(3)
    cards = [f"h{i // 8}/gpu{i % 8}" for i in range(40)]
    src, dst = rng.choice(cards, N), rng.choice(cards, N)
    bw = rng.uniform(1, 400, N)
    bw[::17] = np.nan
    store.batch("p2p", {"round": np.arange(N) % 7, "src": src.tolist(), "dst": dst.tolist(),
                        "link": [f"{a}<->{b}" for a, b in zip(src, dst)], "bw_GBps": bw,
                        "status": ["timeout" if i % 23 == 0 else "ok" for i in range(N)],
                        "tier": ["scale_up" if i % 3 else "scale_out" for i in range(N)],
                        "checksum_ok": [bool(i % 5) for i in range(N)]})
    store.batch("p2p", {"round": 9, "src": ["z/gpu0"] * 5, "dst": ["h0/gpu1"] * 5, "bw_GBps": np.arange(5.0),
                        "status": "ok", "tier": "scale_out"})
    store.emit_rows([{"kind": "host_fact", "layer": "connectivity", "host": f"h{i}", "fact": "gpu_uuid",
                      "status": "ok", "ok": True, "value": {"0": f"GPU-{i}"}} for i in range(N)])
    store.close()
    return store


def _records(frame) -> list[str]:
    return [json.dumps({k: v for k, v in r.items() if v == v and v is not None}, default=str)
            for r in frame.astype(object).to_dict("records")]


@pytest.mark.parametrize("asked", [[5], [299, 3, 150], [0, 1, 2, 303, 304], [300, 120]])
def test_few_rows_read_alone_are_the_rows_of_the_whole_part(tmp_path, monkeypatch, asked):
    _store(tmp_path)
    whole = {kind: read_frames(tmp_path).rows_at(kind, asked if kind == "p2p" else [a % N for a in asked])
             for kind in ("p2p", "host_fact")}
    read = []
    real = partrows.Reader.rows
    monkeypatch.setattr(partrows.Reader, "rows", lambda self, path, at: read.append(len(at)) or real(self, path, at))
    monkeypatch.setattr(partrows, "SPARSE_MIN", 64)   # (these parts are small: read them alone too)
    monkeypatch.setattr(partrows, "SPARSE", 8)
    for kind in ("p2p", "host_fact"):
        at = asked if kind == "p2p" else [a % N for a in asked]
        alone = read_frames(tmp_path).rows_at(kind, at)
        assert list(alone.columns) == list(whole[kind].columns)
        assert _records(alone) == _records(whole[kind]), kind
        assert [str(t) for t in alone.dtypes] == [str(t) for t in whole[kind].dtypes], kind
    assert read and all(n * 8 < N for n in read)   # the large part's rows were read for themselves
    # decoded JSON values (a host fact's value) come back as the whole part's do
    facts = read_frames(tmp_path).rows_at("host_fact", [7])
    assert facts["value"].tolist() == [{"0": "GPU-7"}]


def test_many_rows_of_a_part_decode_it_whole(tmp_path, monkeypatch):
    _store(tmp_path)
    monkeypatch.setattr(partrows, "SPARSE_MIN", 64)
    monkeypatch.setattr(partrows.Reader, "rows", lambda *a: pytest.fail("read alone"))
    assert len(read_frames(tmp_path).rows_at("p2p", list(range(0, N, 4)))) == N // 4


def test_a_part_read_alone_that_cannot_be_read_names_it(tmp_path, monkeypatch):
    store = _store(tmp_path)
    monkeypatch.setattr(partrows, "SPARSE_MIN", 64)
    (tmp_path / "rows/p2p/part-000001.parquet").write_bytes(b"PAR1 not parquet PAR1")
    with pytest.raises(ConfigError, match="part-000001.*not a readable part"):
        read_frames(tmp_path).rows_at("p2p", [5])
    with pytest.raises(HarnessError, match="part-000001.*gone or changed under the run"):
        store.frames().rows_at("p2p", [5])


def test_the_rows_of_several_parts_are_read_through_one_connection(tmp_path, monkeypatch):
    """One DuckDB connection for every part read alone in one ask (a connection each cost
    as much as the read: 1.74 against 0.86 s CPU over the 16,384-card gate's evidence)."""
    store = RunStore(tmp_path, run_id="r-1")
    for k in range(3):   # three parts of N rows each
        store.batch("p2p", {"round": k, "src": [f"h{k}/gpu{i % 8}" for i in range(N)], "dst": ["h9/gpu0"] * N,
                            "bw_GBps": np.arange(N, dtype=float) + 1000 * k, "status": "ok", "tier": "scale_up"})
        store.flush()
    store.close()
    assert len(list((tmp_path / "rows/p2p").glob("*.parquet"))) == 3
    asked = [3, N + 7, 2 * N + 11, 2 * N + 12]
    whole = read_frames(tmp_path).rows_at("p2p", asked)
    import duckdb
    opened = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(1) or real(*a, **k))
    monkeypatch.setattr(partrows, "SPARSE_MIN", 64)
    monkeypatch.setattr(partrows, "SPARSE", 8)
    alone = read_frames(tmp_path).rows_at("p2p", asked)
    assert _records(alone) == _records(whole)
    assert alone["bw_GBps"].tolist() == [3.0, N + 7.0 - N + 1000, 2011.0, 2012.0]
    assert len(opened) == 1, opened
