"""CPU seconds and RSS per phase of ``sncheck run`` (process_time, wrappers, no profiler; issue 31):

    python3 scripts/gate-phases.py -- run pre-upgrade-gate -i inv.yaml --faults faults.yaml ...

(the arguments after ``--`` are sncheck's). To stderr at the end: one JSON line of CPU seconds
per wrapped phase (nested phases count in their callers too: the mock's p2p inside the
connectivity layer, the Parquet writes inside both), then RSS after each layer, its judging,
the retests, evidence and each writer, with the high-water mark so far; and the RSS held
when the reports start and the reports' own peak (sampled every 5 ms). README "Fleet
scale", round 8."""

import atexit
import importlib
import json
import os
import resource
import runpy
import sys
import threading
import time

START = time.process_time()
cpu: dict[str, float] = {}
depth: dict[str, int] = {}
marks: list[tuple[str, int, int]] = []
sampled = {"on": False, "peak": 0}
REPORTED = ("html.write_html", "prometheus.write_prometheus", "evidence.collect_evidence", "runner.Run.retest",
            "golden.run", "stress.run", "connectivity.run", "runner.Run._detect")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def high() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def sample() -> None:
    while True:
        if sampled["on"]:
            sampled["peak"] = max(sampled["peak"], rss())
        time.sleep(0.005)


def wrap(modname: str, qual: str) -> None:
    owner = importlib.import_module(modname)
    attr = qual
    if "." in qual:
        cls, attr = qual.split(".")
        owner = getattr(owner, cls)
    fn = getattr(owner, attr)
    key = f"{modname.split('.')[-1]}.{qual}"

    def timed(*a, **k):
        t = time.process_time()
        depth[key] = depth.get(key, 0) + 1
        try:
            return fn(*a, **k)
        finally:
            depth[key] -= 1
            if depth[key] == 0:
                cpu[key] = cpu.get(key, 0.0) + time.process_time() - t
                if key in REPORTED:
                    marks.append((key, rss(), high()))

    setattr(owner, attr, timed)


import sncheck.cli.main  # noqa: E402,F401 -- the imports, timed apart

IMPORTS = time.process_time() - START
for m, q in [("sncheck.run.runner", "Run.resolve"), ("sncheck.run.runner", "Run._detect"),
             ("sncheck.run.runner", "Run.retest"), ("sncheck.backends.mock", "MockBackend.p2p"),
             ("sncheck.backends.mock", "MockBackend.host_facts"), ("sncheck.backends.mock", "MockBackend.collectives"),
             ("sncheck.backends.mock", "MockBackend.golden"), ("sncheck.layers.connectivity", "run"),
             ("sncheck.layers.stress", "run"), ("sncheck.layers.golden", "run"),
             ("sncheck.report.html", "write_html"), ("sncheck.report.prometheus", "write_prometheus"),
             ("sncheck.report.junit", "write_junit"), ("sncheck.store.rundir", "RunStore._write_part"),
             ("sncheck.store.evidence", "collect_evidence")]:
    wrap(m, q)
import sncheck.run.runner as runner  # noqa: E402

runner.collect_evidence = sys.modules["sncheck.store.evidence"].collect_evidence
reports = runner.write_reports


def write_reports(*a, **k):
    held = rss()
    sampled["peak"], sampled["on"] = held, True
    try:
        return reports(*a, **k)
    finally:
        sampled["on"] = False
        marks.append((f"reports (RSS at their start {held} MB), their peak {sampled['peak']} MB", rss(), high()))


runner.write_reports = write_reports


def report() -> None:
    out = {"imports": round(IMPORTS, 2), **{k: round(v, 2) for k, v in cpu.items()},
           "total": round(time.process_time() - START, 2), "peak_mb": high()}
    print(json.dumps(out), file=sys.stderr)
    for key, now, peak in marks:
        print(f"{key:40s} rss now {now} MB, peak so far {peak} MB", file=sys.stderr)


threading.Thread(target=sample, daemon=True).start()
atexit.register(report)
sys.argv = ["sncheck", *sys.argv[sys.argv.index("--") + 1:]]
runpy.run_module("sncheck", run_name="__main__")
