"""scripts/report-phase.py with process-CPU timers around the report phase's named steps, no
profiler (cProfile inflates Python-heavy code: at 131,072 cards it put the natural sort of the
cards at 2.5 s where it takes 0.4). Issue 31, round 12 (report31d).

Usage: cd TREE && PYTHONPATH=TREE python3 scripts/report-phase-steps.py scripts/report-phase.py RUN OUT [FORMATS]
Prints report-phase.py's line, then one JSON line of CPU seconds per step (a step a tree lacks is
said on stderr and left out)."""
import sys
import time
import runpy
import importlib
import functools
import json
import atexit
T = {}
def wrap(modname, attr):
    mod = importlib.import_module(modname)
    obj = mod
    parts = attr.split(".")
    for p in parts[:-1]:
        obj = getattr(obj, p)
    f = getattr(obj, parts[-1])
    key = f"{modname.split('.')[-1]}.{attr}"
    @functools.wraps(f)
    def g(*a, **k):
        c = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[key] = T.get(key, 0) + time.process_time() - c
    setattr(obj, parts[-1], g)
for m, a in [("sncheck.report.p2pstats", "_one_pass"), ("sncheck.report.cardstats", "card_stats"),
             ("sncheck.report.cardstats", "_ends_by_card"), ("sncheck.report.cardstats", "_tier_pairs"),
             ("sncheck.report.cardstats", "TierRows.add"), ("sncheck.report.p2pstats", "Drawn.add"),
             ("sncheck.report.p2pread", "Reader.of"),
             ("sncheck.report.connectivity", "_domain_heatmap"), ("sncheck.report.connectivity", "_Domains.members"),
             ("sncheck.report.connectivity", "_Metric.directed"), ("sncheck.report.connectivity", "_per_direction"),
             ("sncheck.report.connectivity", "_worst_candidates"), ("sncheck.report.connectivity", "_tier_refs"),
             ("sncheck.report.connectivity", "_Domains.__init__"),
             ("sncheck.report.prometheus", "card_skew"), ("sncheck.report.prometheus", "_card_info"),
             ("sncheck.report.prometheus", "_card_labels"), ("sncheck.report.prometheus", "_natural"),
             ("sncheck.report.prometheus", "_Exposition.frame"), ("sncheck.report.prometheus", "gpu_uuids"),
             ("sncheck.report.prometheus", "_busbw"), ("sncheck.report.prometheus", "_per_host"),
             ("sncheck.store.evidence", "Who.__init__"), ("sncheck.store.evidence", "_Lines.make"),
             ("sncheck.store.evidence", "row_masks"), ("sncheck.store.parts", "PartFrames.rows_at"),
             ("sncheck.report.html", "host_facts"), ("sncheck.report.curves", "collective_charts"),
             ("sncheck.report.curves", "golden_view"), ("sncheck.store.passes", "one_pass"),
             ("sncheck.report.rankstats", "Skews.add"), ("sncheck.report.rankstats", "Skews.finish"),
             ("sncheck.store.idcols", "IdCodes.add"), ("sncheck.report.prometheus", "card_p2p")]:
    try:
        wrap(m, a)
    except Exception as e:
        print("skip", m, a, e, file=sys.stderr)
atexit.register(lambda: print(json.dumps({k: round(v, 2) for k, v in sorted(T.items(), key=lambda x: -x[1])})))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
