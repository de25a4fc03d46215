"""The first look's per-card medians on a recorded run's level-kind tiers, old way and new
(issue 31, README "Round 11 (levels31)"): per tier of the bandwidth and latency searches,
pandas' grouped median of every pair end (``explain.group_median`` over both ends, the path
``card_medians`` (firstlook's, now ``endstats``) replaced) against ``card_medians`` over the tier's index of ends
by card, CPU seconds each (the index's own build apart: the search builds it for
``pairs_of`` anyway) and whether every card, median and count is the same to the bit.

Usage: PYTHONPATH=TREE python3 scripts/first-look-medians.py RUN_DIR INVENTORY
(RUN_DIR: a connectivity run's directory, as for scripts/judging-stages.py.)
"""

import sys
import time
from pathlib import Path

import numpy as np

from sncheck.health import levels, rules
from sncheck.health.explain import group_median
from sncheck.health.endstats import card_medians
from sncheck.health.metrics import DetectContext
from sncheck.run.inputs import load_inventory
from sncheck.store.rundir import read_frames
from sncheck.topology import Topology


def cpu(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def measure(tiers, *_a, **_k) -> list:
    for t, x in tiers.items():
        q = np.where(x.failed, np.nan, x.ratio)
        old, s_old = cpu(lambda: group_median(np.concatenate([x.a, x.b]), np.concatenate([q, q])))
        index, s_index = cpu(x.by_card)
        new, s_new = cpu(lambda: card_medians(index, q, levels.ENDS_AT_ONCE))
        same = all(u.tobytes() == v.tobytes() for u, v in zip(old, new))
        print(f"{t}: {len(x.a)} pairs, group_median {s_old:.2f} s, card_medians {s_new:.2f} s "
              f"(+ index {s_index:.2f} s), same to the bit: {same}")
    return []


levels.Level.run = lambda self: measure(self.tiers)  # the tiers each search is given, and no search
run, inv = Path(sys.argv[1]), load_inventory(sys.argv[2])
topo = Topology(inv)
rules.evaluate(rules.load_rules("default").judging("connectivity"), read_frames(run).where(layer="connectivity"),
               DetectContext(topo, dict(inv.design)))
