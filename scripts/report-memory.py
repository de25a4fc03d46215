"""The report phase's memory, view by view, over a run directory (issue 31):

    python3 scripts/report-memory.py RUN_DIR html junit prom drop p2p view card_p2p skew

Each step in turn, in this process: its CPU time, RSS before it, the high-water mark
during it (reset first with /proc/self/clear_refs) and RSS after. ``html``, ``junit``,
``prom``: the writers (files under /tmp/report-memory/); ``p2p``: the pair rows the two
views read; ``view``: the connectivity view; ``card_p2p``, ``skew``: Prometheus' card
series; ``let_go``: the view lets go of the p2p rows it kept (as sncheck.prom does after
``card_p2p``); ``drop``: a fresh, unread view of the rows. TM=1 adds tracemalloc's peak."""
import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

from sncheck.report import connectivity, html, junit, prometheus, tables
from sncheck.store.results import read_record
from sncheck.store.rundir import read_frames

run, out = Path(sys.argv[1]), Path("/tmp/report-memory")
out.mkdir(exist_ok=True)
record = read_record(run / "results.json")
rows = read_frames(run)


def rss() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def hwm() -> float:
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1]) / 1024


SUPERNODE = prometheus._supernode_of_host(record)  # noqa: SLF001 -- a measuring script: the card series' input
DESIGN = html._design(record)  # noqa: SLF001 -- a measuring script: the connectivity view's input
STEPS = {
    "p2p": lambda: tables.of_kind(rows, "p2p", tables.REPORT_P2P),
    "view": lambda: connectivity.connectivity_view(record, rows, DESIGN),
    "card_p2p": lambda: prometheus.card_p2p(rows, SUPERNODE, {}),
    "skew": lambda: prometheus.card_skew(rows, SUPERNODE, {}),
    "let_go": lambda: tables.let_go(rows, "p2p"),   # as sncheck.prom does between its card series
    "html": lambda: html.write(record, rows, out / "report.html"),
    "junit": lambda: junit.write(record, rows, out / "junit.xml"),
    "prom": lambda: prometheus.write(record, rows, out / "sncheck.prom"),
}
for step in sys.argv[2:]:
    gc.collect()
    open("/proc/self/clear_refs", "w").write("5")
    start, cpu = rss(), time.process_time()
    if os.environ.get("TM") == "1":
        tracemalloc.start()
    if step == "drop":
        rows = read_frames(run)
    else:
        STEPS[step]()
    traced = f", tracemalloc peak {tracemalloc.get_traced_memory()[1] / 2**20:.0f} MB" if tracemalloc.is_tracing() else ""
    tracemalloc.stop()
    print(f"{step:9s} cpu {time.process_time() - cpu:5.2f} s, rss before {start:5.0f} MB, peak {hwm():5.0f} "
          f"(+{hwm() - start:4.0f}), after {rss():5.0f} MB{traced}", flush=True)
