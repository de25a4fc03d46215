"""The reports' pass reads a run store's p2p pieces from their Arrow tables (issue 31: at
131,072 cards the pandas frames' categoricals, and each builder's own codes of them, cost as
much as the read): :class:`sncheck.report.p2pread.Reader` gives a table the same piece its
pandas frame gives (:meth:`Piece.of_frame`, the builders' functions of a frame before),
codes in the same order, and takes the tables' dictionaries as they are only where that holds."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from sncheck.report.p2pread import IDS, Piece, Reader
from sncheck.store import parts
from sncheck.store.frames import to_frame
from sncheck.store.rundir import RunStore

METRICS = ("bw_GBps", "bw_rev_GBps", "lat_us", "lat_p99_us")
TIERS = ["intra_host", "scale_up", "scale_out", "nvlink_x"]


def _same(a: Piece, b: Piece) -> None:
    assert (a.n, a.named) == (b.n, b.named)
    assert a.cards.tolist() == b.cards.tolist()
    assert np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst)
    assert a.src.dtype == b.src.dtype == np.int32
    for reader in ("by_tier", "drawn"):
        assert np.array_equal(a.tiers[reader][0], b.tiers[reader][0]), reader
        assert a.tiers[reader][0].dtype == np.int16
        assert a.tiers[reader][1].tolist() == b.tiers[reader][1].tolist(), reader
        assert a.rows_of_tier(reader)[0][0] == b.rows_of_tier(reader)[0][0]
    assert np.array_equal(a.ok, b.ok)
    assert set(a.values) == set(b.values)
    for m in a.values:
        assert a.values[m].dtype == np.float64
        assert np.array_equal(a.values[m], b.values[m], equal_nan=True), m


def _dict_column(rnd: random.Random, n: int, names: list[str], missing: float, chunks: int) -> pa.ChunkedArray:
    """A dictionary column over ``names`` (some never used), each row missing with chance ``missing``."""
    dictionary = pa.array(names, pa.string())
    out = []
    for c in range(chunks):
        idx = [None if rnd.random() < missing else rnd.randrange(len(names)) for _ in range(n // chunks)]
        out.append(pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), dictionary))
    return pa.chunked_array(out, pa.dictionary(pa.int32(), pa.string()))


def _table(seed: int, *, missing_end: float = 0.0, missing_tier: float = 0.0, every_card: bool = False) -> pa.Table:
    rnd = random.Random(seed)
    cards = [f"h{h}/gpu{g}" for h in range(rnd.randint(1, 6)) for g in range(rnd.randint(1, 4))]
    rnd.shuffle(cards)
    n, chunks = 60 * len(cards), rnd.randint(1, 3)
    names = cards if every_card else cards + [f"x{i}/gpu0" for i in range(rnd.randint(0, 5))]   # (unused names)
    src = _dict_column(rnd, n, names, missing_end, chunks)
    dst = _dict_column(rnd, n, names, missing_end, chunks)
    if every_card:   # every card held by some row, none missing: the dictionary's indices as they are
        src = pa.chunked_array([pa.DictionaryArray.from_arrays(
            pa.array([i % len(names) for i in range(len(c))], pa.int32()), c.dictionary) for c in src.chunks],
            src.type)
    tier_names = rnd.sample(TIERS, rnd.randint(1, len(TIERS)))
    cols = {"src": src, "dst": dst, "tier": _dict_column(rnd, n, tier_names, missing_tier, chunks),
            "status": _dict_column(rnd, n, ["ok", "timeout", "unreachable"], 0.05, chunks)}
    for m in METRICS:
        cols[m] = pa.chunked_array([pa.array([None if rnd.random() < 0.1 else rnd.uniform(0, 500)
                                              for _ in range(len(c))], pa.float64()) for c in src.chunks])
    return pa.table(cols)


@pytest.mark.parametrize("seed", range(12))
def test_a_table_reads_as_its_frame(seed) -> None:
    """Cards some rows leave out, a dictionary's names no row holds, missing probes and
    values: the piece read from the dictionaries is the frame's (and is read so)."""
    reader = Reader(METRICS)
    for i, table in enumerate([_table(seed), _table(seed + 100, missing_end=0.05), _table(seed + 200, every_card=True),
                               _table(seed)]):
        assert reader._of_table(table) is not None
        _same(reader.of(table), Piece.of_frame(to_frame([table], "p2p"), METRICS))


@pytest.mark.parametrize("seed", range(4))
def test_a_missing_tier_goes_through_its_frame(seed) -> None:
    """A piece with a row of no tier is read as a frame is (the map's reader gives it
    intra_host or scale_up by host; the card series' reader names it "nan")."""
    reader = Reader(METRICS)
    table = _table(seed, missing_tier=0.1)
    assert reader._of_table(table) is None
    piece = reader.of(table)
    _same(piece, Piece.of_frame(to_frame([table], "p2p"), METRICS))
    assert "nan" in piece.tiers["by_tier"][1] and "nan" not in piece.tiers["drawn"][1]


def test_what_the_dictionaries_cannot_say_goes_through_the_frame() -> None:
    """src and dst over different dictionaries, a card named "nan", a metric of integers, a
    column whose chunks index two dictionaries:
    read through the frame, the same piece."""
    reader = Reader(METRICS)
    base = _table(3, missing_end=0.05)
    other = pa.chunked_array([pa.DictionaryArray.from_arrays(c.indices, pa.array(
        [s[::-1] for s in c.dictionary.to_pylist()], pa.string())) for c in base.column("dst").chunks], base.column("dst").type)
    nan_card = pa.chunked_array([pa.DictionaryArray.from_arrays(c.indices, pa.array(
        ["nan", *c.dictionary.to_pylist()[1:]], pa.string())) for c in base.column("src").chunks], base.column("src").type)
    two = pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(d, pa.string()))
                            for d in (["h1/gpu0", "h1/gpu1"], ["h1/gpu1", "h1/gpu0"])])
    ids = {"src": two, "dst": two, "tier": pa.chunked_array([pa.DictionaryArray.from_arrays(
        pa.array([0, 0], pa.int32()), pa.array(["scale_up"]))] * 2), "status": pa.chunked_array(
        [pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["ok"]))] * 2)}
    chunks = pa.table({**ids, **{m: pa.chunked_array([pa.array([1.0, 2.0])] * 2) for m in METRICS}})
    ints = pa.chunked_array([pa.array(range(len(c)), pa.int64()) for c in base.column("src").chunks])
    for table in (base.set_column(1, "dst", other),
                  base.set_column(0, "src", nan_card).set_column(1, "dst", nan_card),
                  base.set_column(base.schema.get_field_index("lat_us"), "lat_us", ints), chunks):
        assert reader._of_table(table) is None
        _same(reader.of(table), Piece.of_frame(to_frame([table], "p2p"), METRICS))


@pytest.mark.parametrize("piece_rows", [1, 50, 1 << 21])
def test_a_run_stores_pieces_read_as_their_frames(tmp_path, monkeypatch, piece_rows) -> None:
    """The run store's own pieces (``RowFrames.tables``: its parts' dictionaries unified,
    src and dst over one): each reads as the frame ``pieces`` gives for it."""
    rnd = random.Random(piece_rows)
    cards = [f"h{h}/gpu{g}" for h in range(1, 5) for g in range(3)]
    store = RunStore(tmp_path / "run", run_id="r-1")
    for part in range(4):
        rows = []
        for _ in range(30):
            a, b = rnd.sample(cards[:6 + 2 * part], 2)   # (each part names more cards)
            rows.append({"kind": "p2p", "round": part, "src": a, "dst": b, "tier": rnd.choice(TIERS[:3]),
                         "status": rnd.choice(["ok", "ok", "timeout"]), "bw_GBps": rnd.uniform(1, 400),
                         "bw_rev_GBps": rnd.choice([None, rnd.uniform(1, 400)]), "lat_us": rnd.uniform(1, 9),
                         "lat_p99_us": rnd.uniform(1, 20)})
        store.emit_rows(rows)
        store.flush()
    store.close()
    monkeypatch.setattr(parts, "PIECE_ROWS", piece_rows)
    cols = [*IDS, *METRICS]
    view = store.frames()
    tables, frames = list(view.tables("p2p", cols)), list(view.pieces("p2p", cols))
    assert len(tables) == len(frames) > 0
    reader = Reader(METRICS)
    for table, frame in zip(tables, frames):
        assert isinstance(table, pa.Table) and reader._of_table(table) is not None
        _same(reader.of(table), Piece.of_frame(frame, METRICS))


def test_a_dictionary_of_repeated_names_is_never_taken_for_a_known_one() -> None:
    """The store's check that a dictionary holds distinct names, remembered per dictionary:
    an equal one is known, one of the same length with a name twice is not."""
    known = pa.array([f"h{i}/gpu0" for i in range(100)], pa.string())
    assert parts._all_distinct(known) and parts._all_distinct(pa.array(known.to_pylist(), pa.string()))
    twice = pa.array([*known.to_pylist()[:99], "h0/gpu0"], pa.string())
    assert not parts._all_distinct(twice) and not parts._all_distinct(pa.array(["a", None], pa.string()))
    table = pa.table({"src": pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([0, 99], pa.int32()), twice)] * 2)})
    assert parts.unify_dictionaries(table).column("src").to_pylist() == ["h0/gpu0"] * 4


@pytest.mark.parametrize("seed", range(8))
def test_one_id_column_reads_as_its_frames_codes(seed) -> None:
    """``Reader.ids`` (the rank rows' card and group for the cards' launch skew) gives the
    codes and names ``IdTable`` gives the frame's column: names rows hold, a missing one "nan"."""
    from sncheck.report.codes import IdTable

    rnd = random.Random(seed)
    reader = Reader(())
    names = [f"h{i}/gpu{g}" for i in range(rnd.randint(1, 5)) for g in range(3)]
    for missing in (0.0, 0.1):
        col = _dict_column(rnd, 50, names, missing, rnd.randint(1, 3))
        got = reader.ids("card", col)
        assert got is not None
        want = IdTable(to_frame([pa.table({"card": col})], "rank")["card"], dtype=np.int32)
        assert np.array_equal(got[0], want.every(0)) and got[1].tolist() == want.values.tolist()
    text = pa.chunked_array([pa.array(["a", None, "b"])])
    assert reader.ids("group", text) is None   # (not a dictionary: through the frame)
