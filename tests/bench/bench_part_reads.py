"""A fleet's pair rows read back from a run store's parts (issue 31, store31; README "Fleet
scale", round 10):

    python3 -m pytest tests/bench/bench_part_reads.py --benchmark-enable -s -q

A run store gets ``PARTS`` p2p parts of 262,144 rows whose ``src`` and ``dst`` are over the
131,072 cards of the 131k fleet (as the mock writes them: every part names every card).
Printed, CPU seconds: the first read of ``src``, ``dst``, ``status`` and ``bw_GBps`` (every
part decoded), the same read again (from the run's column cache, up to its budget), and
Arrow's own dictionary unification of the same columns, which the read no longer does where
the parts' dictionaries agree (about 12 ms a part and id column at this size). Asserted: the
two reads give the same frame (the times are printed, never asserted: a shared machine).
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from sncheck.store.rundir import RunStore

CARDS = 131_072
PARTS = 24
ROWS = 262_144
COLUMNS = ["src", "dst", "status", "bw_GBps"]


def test_pair_rows_read_twice_at_fleet_size(request, tmp_path):
    if not request.config.getoption("benchmark_enable"):
        pytest.skip("writes 24 parts of 262,144 rows: run with --benchmark-enable")
    cards = pa.array([f"h{i // 8:05d}/gpu{i % 8}" for i in range(CARDS)])
    rng = np.random.default_rng(1)
    store = RunStore(tmp_path, run_id="bench")
    for r in range(PARTS):
        store.batch("p2p", {"round": r,
                            "src": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, CARDS, ROWS, dtype=np.int32)), cards),
                            "dst": pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, CARDS, ROWS, dtype=np.int32)), cards),
                            "bw_GBps": rng.random(ROWS), "status": "ok", "tier": "scale_out"})
    t0 = time.process_time()
    first = store.frames().read("p2p", COLUMNS)
    t1 = time.process_time()
    again = store.frames().read("p2p", COLUMNS)
    t2 = time.process_time()
    table = pa.concat_tables([p.read(["src", "dst"]) for p in store.frames()._parts["p2p"]])
    t3 = time.process_time()
    table.unify_dictionaries()
    t4 = time.process_time()
    print(f"\n{PARTS} parts x {ROWS:,} rows, {CARDS:,} cards: first read {t1 - t0:.2f} s CPU, again {t2 - t1:.2f} s "
          f"(cache holds {store.column_cache.held / 2**20:.0f} MiB of {store.column_cache.budget / 2**20:.0f}); "
          f"Arrow's unification of src and dst alone {t4 - t3:.2f} s")
    assert first.equals(again)
    store.close()
