"""The card table (sncheck.prom's per-card series) of a run directory's p2p rows, its steps timed
in process CPU, no profiler (issue 31, round 14, stats32):

    PYTHONPATH=TREE python3 scripts/card-table-steps.py RUN LABEL

Prints LABEL, the CPU seconds of ``p2pstats.card_stats`` (the reports' pass with the card table's
builder alone: the p2p rows read a piece at a time) and of its steps ``_tier_pairs``,
``_ends_by_card`` and ``_medians`` (a step a tree lacks is left out)."""
import sys
import time

from sncheck.report import cardstats, p2pstats
from sncheck.store.rundir import read_frames

T: dict[str, float] = {}


def wrap(name: str) -> None:
    f = getattr(cardstats, name, None)
    if f is None:
        return

    def g(*a, **k):
        c = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[name] = T.get(name, 0) + time.process_time() - c
    setattr(cardstats, name, g)


for step in ("_tier_pairs", "_ends_by_card", "_medians"):
    wrap(step)
rows = read_frames(sys.argv[1])
c = time.process_time()
p2pstats.card_stats(rows)
print(sys.argv[2], "card_stats", round(time.process_time() - c, 2), {k: round(v, 2) for k, v in T.items()})
