"""CPU seconds of the run's resolve and of each of the mock's measurements, with a hash of
every row each one makes (issue 31; README "Fleet scale", round 12):

    python3 scripts/mock-phases.py DIR [PHASES]

DIR holds ``inv.yaml`` and ``faults.yaml`` (tests/bench/bench_fleet_scale.py's
``fleet_inventory(N)`` and ``FAULTS``). The pre-upgrade gate's ``Run`` is resolved (the
faults' check included), then the mock measures in order: host facts of every host, every
pair of the connectivity plan (the one resolve built, where it hands it on; built here
otherwise), the stress sweep, the golden replicas (PHASES: some of
``facts,p2p,stress,golden``, comma-separated), each into a sink that hashes the rows (its own
CPU time set aside). Prints JSON: CPU seconds per phase, rows and a hash per row kind (the
same hashes: the same rows, value for value and type for type)."""

import hashlib
import json
import pathlib
import resource
import sys
import time

import numpy as np
import pyarrow as pa

from sncheck.layers import connectivity, golden, stress
from sncheck.run.inputs import load_inventory, load_playbook
from sncheck.run.runner import Run, RunOptions


def _digest(h, v) -> None:
    if isinstance(v, pa.ChunkedArray):
        v = pa.concat_arrays(v.chunks)
    if isinstance(v, pa.Array):
        if pa.types.is_dictionary(v.type):
            v = v.dictionary.take(v.indices)
        table = pa.table({"c": v})
        out = pa.BufferOutputStream()
        with pa.ipc.new_stream(out, table.schema) as w:
            w.write_table(table)
        h.update(b"A" + str(v.type).encode() + out.getvalue().to_pybytes())
    elif isinstance(v, np.ndarray):
        h.update(b"O" + repr(v.tolist()).encode() if v.dtype == object
                 else b"N" + str(v.dtype).encode() + np.ascontiguousarray(v).tobytes())
    else:
        h.update(b"S" + repr(v).encode())


class Hashing:
    """A row sink that hashes what it is given, per row kind, and keeps its own CPU time."""

    def __init__(self) -> None:
        self.hashes: dict = {}
        self.rows: dict = {}
        self.spent = 0.0

    def __call__(self, row: dict) -> None:
        t0 = time.process_time()
        self.hashes.setdefault(row.get("kind"), hashlib.sha256()).update(repr(sorted(row.items())).encode())
        self.rows[row.get("kind")] = self.rows.get(row.get("kind"), 0) + 1
        self.spent += time.process_time() - t0

    def batch(self, kind: str, columns: dict, **constants) -> None:
        t0 = time.process_time()
        h = self.hashes.setdefault(kind, hashlib.sha256())
        for name in sorted(columns):
            h.update(name.encode())
            _digest(h, columns[name])
        h.update(repr(sorted(constants.items())).encode())
        n = max((len(v) for v in columns.values() if hasattr(v, "__len__") and not isinstance(v, str)), default=1)
        self.rows[kind] = self.rows.get(kind, 0) + n
        self.spent += time.process_time() - t0

    def tagged(self, **_constants) -> "Hashing":
        return self


def main() -> None:
    d = pathlib.Path(sys.argv[1])
    phases = sys.argv[2].split(",") if len(sys.argv) > 2 else ["facts", "p2p", "stress", "golden"]
    sink = Hashing()
    cpu: dict[str, float] = {}

    def timed(name: str, f) -> None:
        t0, s0 = time.process_time(), sink.spent
        f()
        cpu[name] = round(time.process_time() - t0 - (sink.spent - s0), 2)

    run = Run(load_playbook("pre-upgrade-gate"), load_inventory(d / "inv.yaml"),
              RunOptions(backend="mock", faults=str(d / "faults.yaml"), seed=1))
    timed("resolve", run.resolve)
    backend = run.backend
    assert backend is not None
    options = {s.name: {k: v for k, v in s.options.items() if k not in ("reference", "duration")}
               for s in run.playbook.layers}
    if "facts" in phases:
        timed("facts", lambda: backend.host_facts(tuple(run.topo.hosts), sink))
    built = getattr(run, "plans", {})   # the connectivity plan resolve built, as the layer takes it (round 12)
    for name, module, call in (("p2p", connectivity, backend.p2p), ("stress", stress, backend.collectives),
                               ("golden", golden, backend.golden)):
        if name in phases:
            ctx = run.context(sink, options.get(module.NAME, {}))
            plan = built.pop(module.NAME, None)

            def measure(module=module, call=call, ctx=ctx, plan=plan) -> None:
                call(plan if plan is not None else module.build_plan(ctx), sink)

            timed(name, measure)
    print(json.dumps({"cpu": cpu, "rows": {str(k): v for k, v in sink.rows.items()},
                      "hash": {str(k): h.hexdigest()[:16] for k, h in sorted(sink.hashes.items(), key=str)},
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}, indent=1))


if __name__ == "__main__":
    main()
