"""A kind read from many parts comes back with the codes and categories Arrow's own
dictionary unification gives (issue 31, store31: ``parts.unify_dictionaries`` does not hash
again the dictionaries that already agree, every part's card list at fleet size)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sncheck.store.parts import unify_dictionaries
from sncheck.store.rundir import RunStore, read_frames


def _dict(indices, values, nulls=None):
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32(), mask=nulls), pa.array(values, pa.string()))


CASES = {
    "equal dictionaries": [_dict([0, 1, 2], ["a", "b", "c"]), _dict([2, 2, 0], ["a", "b", "c"])],
    "equal, with missing values": [_dict([0, 1, 2], ["a", "b", "c"], np.array([False, True, False])),
                                   _dict([1, 0], ["a", "b", "c"], np.array([True, False]))],
    "one differs": [_dict([0, 1], ["a", "b"]), _dict([0, 1], ["b", "a"]), _dict([0], ["c"])],
    "a longer one": [_dict([0, 1], ["a", "b"]), _dict([2, 0], ["a", "b", "c"])],
    "values repeated in each": [_dict([0, 1, 2], ["a", "b", "a"]), _dict([2, 1], ["a", "b", "a"])],
    "a missing dictionary value": [_dict([0, 1], ["a", None]), _dict([1, 0], ["a", None])],
    "sliced chunks": [_dict([0, 1, 2, 0], ["a", "b", "c"]).slice(1, 2), _dict([2, 1, 0], ["a", "b", "c"]).slice(2)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_codes_and_categories_are_those_of_arrow_s_own_unification(case):
    chunks = CASES[case]
    table = pa.table({"id": pa.chunked_array(chunks), "n": pa.chunked_array([pa.array(range(len(c))) for c in chunks])})
    try:
        arrows = table.unify_dictionaries()
    except pa.ArrowInvalid:  # (a missing value among a dictionary's: Arrow refuses it, and so do we)
        with pytest.raises(pa.ArrowInvalid):
            unify_dictionaries(table)
        return
    mine = unify_dictionaries(table)
    assert mine.equals(arrows)
    for got, want in zip(mine.column("id").chunks, arrows.column("id").chunks):
        assert got.dictionary.equals(want.dictionary) and got.indices.equals(want.indices), case


def test_a_kind_written_in_several_parts_reads_back_as_one_set_of_categories(tmp_path):
    store = RunStore(tmp_path, run_id="r-1")
    cards = pa.array([f"h{i // 8:04d}/gpu{i % 8}" for i in range(64)])
    rng = np.random.default_rng(1)
    for _ in range(3):
        a, b = rng.integers(0, 64, 500), rng.integers(0, 64, 500)
        store.batch("p2p", {"src": pa.DictionaryArray.from_arrays(pa.array(a, pa.int32()), cards),
                            "dst": pa.DictionaryArray.from_arrays(pa.array(b, pa.int32()), cards),
                            "bw_GBps": rng.random(500), "status": "ok", "tier": "scale_out"})
    store.close()
    p2p = read_frames(tmp_path).kind("p2p", ["src", "dst", "status"])
    assert list(p2p["src"].cat.categories) == cards.to_pylist() and p2p["src"].dtype == p2p["dst"].dtype
    parts = [pa.parquet.read_table(p, columns=["src", "dst"]) for p in sorted((tmp_path / "rows/p2p").glob("part-*"))]
    assert p2p["src"].astype(str).tolist() == [s for t in parts for s in t.column("src").to_pylist()]
    assert p2p["dst"].astype(str).tolist() == [s for t in parts for s in t.column("dst").to_pylist()]
