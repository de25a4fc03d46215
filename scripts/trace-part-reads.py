"""Every read of a run's Parquet parts during ``sncheck`` (issue 31; README "Fleet scale",
round 10):

    python3 scripts/trace-part-reads.py OUT.json -- run pre-upgrade-gate -i inv.yaml ...

(the arguments after ``--`` are sncheck's). To stderr at the end: the reads grouped by kind,
columns and caller (count, CPU, rows), and how many times each kind's column was decoded
again; to OUT.json the reads in order (kind, part, columns), for
``scripts/replay-part-reads.py``."""

import atexit
import collections
import json
import runpy
import sys
import time
import traceback

from sncheck.store import parts

log: list[tuple] = []
real = parts.Part.read


def read(self, columns):
    t = time.process_time()
    out = real(self, columns)
    cpu = time.process_time() - t
    stack = [f"{f.filename.split('/sncheck/')[-1]}:{f.name}" for f in traceback.extract_stack()[:-1]
             if "/sncheck/" in f.filename and "store/parts.py" not in f.filename and "store/frames.py" not in f.filename]
    log.append((self.path.parent.name, self.path.name, None if columns is None else list(columns), self.rows, cpu,
                " < ".join(stack[-3:][::-1])))
    return out


def dump() -> None:
    json.dump([(k, n, c) for k, n, c, *_ in log], open(sys.argv[1], "w"))
    groups: dict = collections.defaultdict(lambda: [0, 0.0, 0])
    again: collections.Counter = collections.Counter()
    seen: collections.Counter = collections.Counter()
    for kind, name, cols, rows, cpu, who in log:
        g = groups[(kind, who, tuple(cols or ()))]
        g[0] += 1
        g[1] += cpu
        g[2] += rows
        for c in cols or ("*every column*",):
            seen[(kind, name, c)] += 1
            if seen[(kind, name, c)] > 1:
                again[(kind, c)] += 1
    print(f"{len(log)} reads, {sum(x[4] for x in log):.2f} s CPU", file=sys.stderr)
    for (kind, who, cols), (n, cpu, rows) in sorted(groups.items(), key=lambda x: -x[1][1]):
        print(f"{kind:10s} n={n:4d} {cpu:6.2f} s rows={rows:>10d} {list(cols) or 'every column'} <- {who}", file=sys.stderr)
    print("read again (kind, column): times", sorted(again.items(), key=lambda x: -x[1]), file=sys.stderr)


parts.Part.read = read
atexit.register(dump)
sys.argv = ["sncheck", *sys.argv[sys.argv.index("--") + 1:]]
runpy.run_module("sncheck", run_name="__main__")
