"""A tier's index of pair ends by card and its first look, on a synthetic fleet tier (issue 31,
round 15, judge33): CPU seconds and the RSS the held index adds, one tree per process.

    PYTHONPATH=TREE python3 scripts/ends-index.py PAIRS CARDS

PAIRS random pairs of CARDS cards, sorted by their first end as a tier's are, each one row
(pairview.Derived ratios over a design of 100). Prints the index's build CPU and the RSS it
holds, the first look's medians (``FirstLook``), its sorted spread, 17 ``pairs_of`` reads of
256 cards, the process's peak RSS, and check sums (the same in every tree)."""

import resource
import sys
import time

import numpy as np

from sncheck.health.firstlook import FirstLook
from sncheck.health.pairview import Derived, FrameTier


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 2**20


def cpu(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


n, cards = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
a, b = rng.integers(0, cards, n), rng.integers(0, cards, n)
a, b = np.minimum(a, b), np.maximum(a, b)
o = np.argsort(a, kind="stable")
a, b = a[o].astype(np.int32), b[o].astype(np.int32)
del o
values = rng.normal(100, 3, n)
x = FrameTier("t", a, b, Derived(values, 100.0, False), Derived(values, 100.0, False, failed=True), cards,
              np.zeros(n, bool), 1.0, values, 100.0)
start = rss()
_, t_index = cpu(lambda: x.by_card(hold=True))
held = rss() - start
look, t_look = cpu(lambda: FirstLook(x, cards, 1 << 21, hold=True))
s, t_spread = cpu(lambda: look.spread(x))
some, t_pairs = cpu(lambda: [x.pairs_of(np.arange(c, c + 256)) for c in range(0, cards, cards // 16)])
print(f"index {t_index:.2f} s CPU (+{held} MB held), first look {t_look:.2f} s, spread {t_spread:.2f} s, "
      f"pairs_of x{len(some)} {t_pairs:.2f} s; peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB "
      f"(start {start} MB); sums {np.nansum(look.med):.6f} {s[len(s) // 2]:.6f} {sum(map(len, some))}")
