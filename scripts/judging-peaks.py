"""A connectivity run directory judged as ``LayerContext.detect`` judges it (the default rules,
then the verdict's invariants), with RSS per stage and where the peak is (issue 31):

    PYTHONPATH=TREE python3 scripts/judging-peaks.py RUN_DIR INVENTORY    [env STEP=25 TOP=4]

A thread samples RSS every 5 ms and, at each new high (by STEP MB), takes the main thread's
stack; to stderr: each stage's RSS before and after, its peak and CPU seconds, the culprits,
then the stacks of the TOP highest marks. RUN_DIR: a connectivity run (tests/bench/bench_judging.py's
``record``, or ``sncheck run`` of its playbook). README "Fleet scale", round 16.
"""

import os
import sys
import threading
import time
import traceback
from pathlib import Path

from sncheck.health import invariants
from sncheck.health.findings import merge_findings
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory
from sncheck.store.rundir import read_frames, trim_heap
from sncheck.topology import Topology

STEP = int(os.environ.get("STEP", "25"))
MAIN = threading.main_thread().ident
marks: list[tuple[int, float, list]] = []
state = {"peak": 0}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 2**20


def sample() -> None:
    top = 0
    while True:
        r = rss()
        state["peak"] = max(state["peak"], r)
        if r >= top + STEP:
            top = r
            frame = sys._current_frames().get(MAIN)  # noqa: SLF001 -- the sampled thread's stack: no public door
            marks.append((r, time.process_time(), traceback.extract_stack(frame) if frame else []))
        time.sleep(0.005)


def stage(name: str, fn):
    state["peak"] = before = rss()
    t = time.process_time()
    out = fn()
    print(f"{name}: {before} -> {rss()} MB, peak {state['peak']} MB, {time.process_time() - t:.1f} s CPU",
          file=sys.stderr, flush=True)
    return out


threading.Thread(target=sample, daemon=True).start()
run, inv = Path(sys.argv[1]), load_inventory(sys.argv[2])
topo = Topology(inv)
ctx = DetectContext(topo, dict(inv.design))
rules = load_rules("default").judging("connectivity")
mine = read_frames(run).where(layer="connectivity")
trim_heap()
found = stage("evaluate", lambda: evaluate(rules, mine, ctx))
found += stage("invariants", lambda: invariants.layer_findings("connectivity", mine, ctx, rules=len(rules)))
print(sorted((f.entity, str(f.entity_kind)) for f in merge_findings(found, topo.supernode_of_host) if f.names_culprit),
      file=sys.stderr)
for r, cpu, stack in sorted(marks, key=lambda m: -m[0])[:int(os.environ.get("TOP", "4"))]:
    print(f"=== {r} MB at {cpu:.1f} s CPU", file=sys.stderr)
    for fs in stack[-12:]:
        if "sncheck" in fs.filename or "pandas" in fs.filename:
            where = fs.filename.split("site-packages/")[-1].split("/sncheck/")[-1]
            print(f"   {where}:{fs.lineno} {fs.name}: {fs.line}", file=sys.stderr)
