"""Judging alone on recorded rows, with RSS around each stage (issue 31).

Usage: PYTHONPATH=TREE python3 scripts/judging-stages.py RUN_DIR INVENTORY
(RUN_DIR: a connectivity run's directory, as tests/bench/bench_judging.py's ``record``
makes one.) The judging bench's child: the connectivity rules over the run's rows, then
the merge; each metric's frame, ``summarise`` and the explanation search print their RSS
before and after and their peak (sampled every 5 ms), their CPU seconds, to stderr; the
last line of stdout is the bench's JSON (CPU, peak RSS, address space, the culprits).
"""

import functools
import json
import resource
import sys
import threading
import time
from pathlib import Path

from sncheck.health import culprits, p2ptiers, rules
from sncheck.health.findings import merge_findings
from sncheck.health.metrics import DetectContext
from sncheck.run.inputs import load_inventory
from sncheck.store.rundir import read_frames
from sncheck.topology import Topology

state = {"peak": 0}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 2**20


def vm(key: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) // 1024
    return -1


def sample() -> None:
    while True:
        state["peak"] = max(state["peak"], rss())
        time.sleep(0.005)


def wrap(owner, name: str, label) -> None:
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def timed(*a, **k):
        before, outer, t = rss(), state["peak"], time.process_time()
        state["peak"] = before
        try:
            return fn(*a, **k)
        finally:
            print(f"{label(a)}: {before} -> {rss()} MB, peak {state['peak']} MB, {time.process_time() - t:.1f} s CPU",
                  file=sys.stderr)
            state["peak"] = max(outer, state["peak"])

    setattr(owner, name, timed)


wrap(DetectContext, "metric", lambda a: f"metric {a[1]}")
wrap(culprits, "summarise", lambda a: f"  summarise {len(a[0])} rows")
# the p2p level kinds: their rows' values and summaries without a metric frame (health.p2ptiers)
wrap(culprits, "p2p_tiers", lambda a: f"metric {a[0]} (no frame)")
wrap(p2ptiers.P2PTiers, "summarise", lambda a: f"  summarise {len(a[0].value)} rows (no frame)")
wrap(culprits, "explain", lambda _a: "  explain")
wrap(rules, "explain_rules", lambda a: f"explain_rules {a[0][0].metric}")
threading.Thread(target=sample, daemon=True).start()

run, inv = Path(sys.argv[1]), load_inventory(sys.argv[2])
topo = Topology(inv)
ctx = DetectContext(topo, dict(inv.design))
cpu0 = time.process_time()
found = merge_findings(rules.evaluate(rules.load_rules("default").judging("connectivity"),
                                      read_frames(run).where(layer="connectivity"), ctx), topo.supernode_of_host)
print(json.dumps({"cpu_s": round(time.process_time() - cpu0, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "vm_peak_mb": vm("VmPeak"), "culprits": sorted([f.entity, f.entity_kind] for f in found)}))
