"""Each card's exact median over its pairs' ends (the explainer's first look,
``endstats.card_medians`` over ``endstats.Ends``; ``explain.group_median``) by engine, on
a 16,384-card fleet's scale-out tier's shape: CPU seconds (process time, the least of 3)
and whether each gives pandas' medians to the bit (issue 31: the engine, measured; README
"Fleet scale", "Engine: what judging runs on and why").

Usage: pip install --target DIR polars
       PYTHONPATH=TREE:DIR POLARS_MAX_THREADS=2 python3 scripts/judging-engines.py [CARDS PAIRS [ENGINE]]
(CARDS PAIRS: another tier's shape, e.g. 131072 40000000 for a 131,072-card fleet's largest
tier; ENGINE: only that one beside numpy's (ends, polars, duckdb, arrow), one process each for
its peak RSS under /usr/bin/time -v.)
(polars is not one of sncheck's dependencies; DuckDB and pyarrow are.)
"""

import sys
import time

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from sncheck.health.endstats import Ends, card_medians
from sncheck.health.explain import group_median

rng = np.random.default_rng(1)
CARDS, PAIRS = 16384, 2_062_368  # the scale_out tier at 16,384 cards: 2.06 M pairs, 4.12 M ends
if len(sys.argv) > 2:
    CARDS, PAIRS = int(sys.argv[1]), int(sys.argv[2])
ONLY = sys.argv[3] if len(sys.argv) > 3 else None
a, b = (rng.integers(0, CARDS, PAIRS).astype(np.int32) for _ in range(2))
q = rng.normal(1, 0.02, PAIRS)
q[rng.random(PAIRS) < 0.001] = np.nan
owner, values = np.concatenate([a, b]), np.concatenate([q, q])
keep = ~np.isnan(values)
ends = pa.table({"o": owner[keep], "v": values[keep]})


def best(fn):
    out, spent = None, []
    for _ in range(3):
        t = time.process_time()
        out = fn()
        spent.append(time.process_time() - t)
    return min(spent), out


def by_polars():
    r = pl.DataFrame({"o": owner[keep], "v": values[keep]}).group_by("o").agg(pl.col("v").median()).sort("o")
    return r["o"].to_numpy(), r["v"].to_numpy()


def by_duckdb():
    r = duckdb.sql("select o, median(v) as m from ends group by o order by o").arrow()
    r = r.read_all() if hasattr(r, "read_all") else r
    return r["o"].to_numpy(), r["m"].to_numpy()


by_first = np.lexsort((b, a))  # (a tier's pairs come sorted by their first end: its pair keys)
sa, sb, sq = a[by_first], b[by_first], q[by_first]


def by_ends():  # what judging runs (the explainer's first look, firstlook.FirstLook; levels.ENDS_AT_ONCE)
    got, med, _ = card_medians(Ends(sa, sb, CARDS), sq, 1 << 21)
    return got, med


def by_arrow():
    r = ends.group_by("o").aggregate([("v", "approximate_median")]).sort_by("o")
    return r["o"].to_numpy(), r["v_approximate_median"].to_numpy()


spent, (cards, medians, _) = best(lambda: group_median(owner, values))
print(f"numpy/pandas explain.group_median: {spent:.2f} s CPU")
for key, name, fn in (("ends", "numpy endstats.card_medians (judging's)", by_ends),
                      ("polars", "polars group_by median", by_polars), ("duckdb", "duckdb median", by_duckdb),
                      ("arrow", "pyarrow hash_approximate_median", by_arrow)):
    if ONLY is not None and key != ONLY:
        continue
    spent, (got, med) = best(fn)
    print(f"{name}: {spent:.2f} s CPU, same cards {np.array_equal(got, cards)}, same medians to the bit "
          f"{med.tobytes() == medians.tobytes()}, largest difference {np.nanmax(np.abs(med - medians)):.1e}")
