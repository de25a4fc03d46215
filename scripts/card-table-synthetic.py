"""The card table (sncheck.prom's per-card series) over one synthetic tier (issue 31).

Usage: PYTHONPATH=TREE python3 scripts/card-table-synthetic.py PAIRS OUT.pkl
PAIRS random pairs over 131,072 cards (5% measured twice, 1% failed) as one tier of TierRows'
rows; prints card_stats' CPU and the process' VmHWM and pickles the table (compare two trees'
with pandas.testing.assert_frame_equal)."""

import sys
import time

import numpy as np
import pandas as pd

from sncheck.report import cardstats
from sncheck.report.codes import Codes

n, m, out = 131072, int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(5)
a, b = (rng.integers(0, n, m).astype(np.int32) for _ in range(2))
rep = rng.random(m) < 0.05   # some pairs measured twice
a, b = np.concatenate([a, a[rep]]), np.concatenate([b, b[rep]])
k = len(a)
bw, p99, failed = rng.random(k) * 1e11, rng.random(k) * 1e-5, rng.random(k) < 0.01
bw[failed] = p99[failed] = np.nan
cards = Codes()
cards.values = pd.Index([f"h{i // 8}/gpu{i % 8}" for i in range(n)], dtype=object)
by_tier = {"scale_out": [{"a": a, "b": b, "bw": bw, "p99": p99, "failed": failed,
                          "row": np.arange(k, dtype=np.int32)}]}
c = time.process_time()
df = cardstats.card_stats(cards, by_tier)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).strip()
print("cpu", round(time.process_time() - c, 2), "rows", k, peak)
df.to_pickle(out)
