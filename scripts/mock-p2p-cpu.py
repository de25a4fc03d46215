"""CPU seconds of the mock's card pairs alone (issue 31; README "Fleet scale", round 9):

    python3 scripts/mock-p2p-cpu.py DIR OUT [null]

DIR holds ``inv.yaml`` and ``faults.yaml`` (tests/bench/bench_fleet_scale.py's
``fleet_inventory(N)`` and ``FAULTS``); a ``MockBackend`` over them (seed 1) runs every pair
of ``connectivity_plan`` into a run store at OUT (emptied first), or with ``null`` into a
sink that drops the batches. Prints the p2p CPU time (and, where the batches go to the sink
on a thread of their own, ``sncheck.backends.behind``, round 14: the caller's thread's and the
emitting thread's, and the wall time), then (store only) the parts, their rows and bytes, and
a hash of every p2p row's values, the run id aside (the same hash: the same rows)."""

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


def _time_emitting() -> list[float] | None:
    """The emitting thread's CPU seconds, summed as its calls end (None: a tree without it)."""
    try:
        from sncheck.backends import behind  # noqa: PLC0415  (a tree before round 14 has none)
    except ImportError:
        return None
    spent = [0.0]
    run = behind.Behind._run  # noqa: SLF001  (each call timed on its own thread)

    def timed(self, fn, args) -> None:
        t = time.thread_time()
        run(self, fn, args)
        spent[0] += time.thread_time() - t

    behind.Behind._run = timed  # noqa: SLF001
    return spent


def main() -> None:
    d, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    null = sys.argv[3:] == ["null"]
    shutil.rmtree(out, ignore_errors=True)
    topo = Topology(load_inventory(d / "inv.yaml"))
    backend = MockBackend(topo, load_faults(d / "faults.yaml", topo), seed=1)
    plan = connectivity_plan(topo)
    store = RunStore(out, run_id="x")
    emitting = _time_emitting()
    t0, m0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
    backend.p2p(plan, Null() if null else store)
    print(f"p2p cpu {time.process_time() - t0:.2f} s, rounds {len(plan.rounds)} pairs {plan.pair_count}")
    if emitting is not None:
        print(f"  caller's thread {time.thread_time() - m0:.2f} s, emitting thread {emitting[0]:.2f} s, "
              f"wall {time.perf_counter() - w0:.2f} s")
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
