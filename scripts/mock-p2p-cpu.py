"""CPU seconds of the mock's card pairs alone (issue 31; README "Fleet scale", round 9):

    python3 scripts/mock-p2p-cpu.py DIR OUT [null]

DIR holds ``inv.yaml`` and ``faults.yaml`` (tests/bench/bench_fleet_scale.py's
``fleet_inventory(N)`` and ``FAULTS``); a ``MockBackend`` over them (seed 1) runs every pair
of ``connectivity_plan`` into a run store at OUT (emptied first), or with ``null`` into a
sink that drops the batches. Prints the p2p CPU time, then (store only) the parts, their
rows and bytes, and a hash of every p2p row's values, the run id aside (the same hash:
the same rows)."""

import hashlib
import pathlib
import shutil
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from sncheck.backends.mock import MockBackend
from sncheck.probeplan import connectivity_plan
from sncheck.run.inputs import load_faults, load_inventory
from sncheck.store.rundir import RunStore
from sncheck.topology import Topology


class Null:
    def batch(self, kind, cols, **constants) -> None:
        pass

    def __call__(self, row) -> None:
        pass


def main() -> None:
    d, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    null = sys.argv[3:] == ["null"]
    shutil.rmtree(out, ignore_errors=True)
    topo = Topology(load_inventory(d / "inv.yaml"))
    backend = MockBackend(topo, load_faults(d / "faults.yaml", topo), seed=1)
    plan = connectivity_plan(topo)
    store = RunStore(out, run_id="x")
    t0 = time.process_time()
    backend.p2p(plan, Null() if null else store)
    print(f"p2p cpu {time.process_time() - t0:.2f} s, rounds {len(plan.rounds)} pairs {plan.pair_count}")
    store.close()
    if null:
        return
    h = hashlib.sha256()
    files = sorted((out / "rows" / "p2p").glob("part-*.parquet"))
    rows = 0
    for f in files:
        t = pq.read_table(f).drop_columns(["run_id"])
        rows += len(t)
        for name in t.column_names:
            col = t.column(name)
            if pa.types.is_dictionary(col.type):
                col = col.cast(pa.string())
            h.update(name.encode())
            h.update("|".join(map(str, col.to_pylist())).encode())
    print(f"parts {len(files)} rows {rows} bytes {sum(f.stat().st_size for f in files)} sha {h.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
