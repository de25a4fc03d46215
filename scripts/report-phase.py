"""The report phase re-rendered from a run directory, each writer timed (issue 31).

Usage: PYTHONPATH=TREE python3 scripts/report-phase.py RUN OUT [html,junit,prometheus,evidence]
Prints one JSON line: per writer its CPU seconds, its rise of VmHWM (the high-water mark reset
before each with /proc/self/clear_refs) and whether its file is byte-identical to the run's; the
phase's rise and peak. The formats go through sncheck.report.outputs (one p2p pass shared by html
and prometheus, as a run renders them); evidence is store.evidence.collect_evidence without a
backend (no raw tool outputs). The writers run in the order given: a run's is
evidence,html,junit,prometheus, the builders the formats read expected before evidence (round 15:
evidence's pass over the p2p and rank rows builds them too)."""

import gc
import json
import os
import sys
import time
from pathlib import Path

from sncheck.report import outputs
from sncheck.store.results import read_record
from sncheck.store.rundir import read_frames

run, out = Path(sys.argv[1]), Path(sys.argv[2])
which = sys.argv[3].split(",") if len(sys.argv) > 3 else ["html", "junit", "prometheus", "evidence"]
out.mkdir(parents=True, exist_ok=True)


def rss() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def hwm() -> float:
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1]) / 1024


record = read_record(run / "results.json")
rows = read_frames(run)
gc.collect()
start, stats, top = rss(), {}, 0.0
c0 = time.process_time()
reports = outputs([f for f in which if f != "evidence"])
writers = {o.name: o.write for o in reports}
for o in reports:   # as a run says it before evidence (a tree whose Output has no reads: nothing)
    for kind, makes in getattr(o, "reads", {}).items():
        rows.expect(kind, makes)
names = {"html": "report.html", "junit": "junit.xml", "prometheus": "sncheck.prom"}
for fmt in which:
    open("/proc/self/clear_refs", "w").write("5")
    before, c = rss(), time.process_time()
    if fmt == "evidence":
        from sncheck.store.evidence import collect_evidence
        collect_evidence(record.findings, record.topology, rows, out)
        same = None
    else:
        writers[fmt](record, rows, out / names[fmt])
        same = (out / names[fmt]).read_bytes() == (run / names[fmt]).read_bytes()
    top = max(top, hwm())
    stats[fmt] = {"cpu_s": round(time.process_time() - c, 2), "rise_mb": round(hwm() - before), "same": same}
print(json.dumps({"writers": stats, "cpu_s": round(time.process_time() - c0, 2), "rise_mb": round(top - start),
                  "start_mb": round(start), "peak_mb": round(top)}))
