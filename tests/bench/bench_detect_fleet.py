"""Detection alone on a 16,384-card simulated fleet: 64 supernodes x 32 hosts x 8 cards,
every pair inside each scale-up domain (2.09 M pair rows), with a few faults planted.

Run: python -m pytest tests/bench/bench_detect_fleet.py --benchmark-enable -s -q
The rows are generated in a child process (vectorized, like the mock's cost model);
the child times rules evaluation plus merging and reports its own peak RSS.
"""

import json
import subprocess
import sys

CHILD = r'''
import json, resource, sys, time
import numpy as np, pandas as pd
from sncheck.health.findings import merge_findings
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory_text
from sncheck.topology import Topology, round_robin

SN, HOSTS, CARDS = 64, 32, 8
inv = load_inventory_text("design:\n  scale_up: {bandwidth: 900, latency: 2}\n  scale_out: {bandwidth: 50, latency: 12}\n"
    "supernodes:\n" + "".join(f"  - {{name: sn{s}, hosts: 'h{s:02d}n[01-{HOSTS:02d}]', cards_per_host: {CARDS}}}\n" for s in range(SN)))
topo = Topology(inv)
rng = np.random.default_rng(0)
idx = np.array([(a, b) for r in round_robin(list(range(HOSTS * CARDS))) for a, b in r])
frames = []
for s in range(SN):
    cards = np.array(topo.cards_of_supernode(f"sn{s}"))
    src, dst = cards[idx[:, 0]], cards[idx[:, 1]]
    same = idx[:, 0] // CARDS == idx[:, 1] // CARDS
    frames.append(pd.DataFrame({"src": src, "dst": dst, "tier": np.where(same, "intra_host", "scale_up")}))
rows = pd.concat(frames, ignore_index=True)
n = len(rows)
rows["link"] = rows["src"] + "<->" + rows["dst"]   # round_robin keeps natural order inside a domain
bw = 900 * (1 + 0.02 * rng.standard_normal(n))
slow = (rows["src"] == "h07n03/gpu5") | (rows["dst"] == "h07n03/gpu5")
bw[slow.to_numpy()] *= 0.6
bw[(rows["link"] == "h40n11/gpu1<->h40n11/gpu2").to_numpy()] *= 0.4
rows["bw_GBps"] = bw
rows["bw_rev_GBps"] = bw * (1 + 0.02 * rng.standard_normal(n))
rows["lat_us"] = 2 * (1 + 0.02 * rng.standard_normal(n))
rows["lat_p99_us"] = rows["lat_us"] * 1.05
rows["checksum_ok"] = ~((rows["src"] == "h60n30/gpu0") | (rows["dst"] == "h60n30/gpu0"))
rows["kind"], rows["layer"], rows["status"] = "p2p", "connectivity", "ok"
rules = load_rules("default").for_layer("connectivity")
ctx = DetectContext(topo, dict(inv.design))
t0 = time.perf_counter()
found = merge_findings(evaluate(rules, rows, ctx))
elapsed = time.perf_counter() - t0
print(json.dumps({"rows": n, "seconds": elapsed, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "culprits": sorted((f.entity, f.entity_kind) for f in found)}))
'''


def detect_fleet() -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_detect_16k_fleet(benchmark):
    out = benchmark.pedantic(detect_fleet, rounds=1, iterations=1)
    benchmark.extra_info.update({k: out[k] for k in ("rows", "seconds", "peak_rss_mb")})
    print(f"\n16,384 cards, {out['rows']} pair rows: detection {out['seconds']:.1f} s, peak RSS {out['peak_rss_mb']:.0f} MB")
    assert [tuple(c) for c in out["culprits"]] == [
        ("h07n03/gpu5", "card"), ("h40n11/gpu1<->h40n11/gpu2", "link"), ("h60n30/gpu0", "card")]
