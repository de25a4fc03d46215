"""Reports at fleet size: HTML, Prometheus and JUnit for a 16,384-card result.

64 supernodes x 32 hosts x 8 cards: every pair inside each scale-up domain (2.09 M pair
rows), rail-aligned pairs to the next supernode, launch skew per card, a few faults
planted; the findings come from the real detection rules. Then each renderer runs and
writes its file.

Run: python -m pytest tests/bench/bench_report_fleet.py --benchmark-enable -s -q
Prints each renderer's wall time, the peak RSS of the child and the file sizes, and
checks the Done-when of issue 10: report.html under 5 MB with the fleet overview first,
no per-pair Prometheus series (dcgm-exporter label names), one JUnit testcase per host.
"""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

CHILD = r'''
import json, resource, sys, time
from pathlib import Path
import numpy as np, pandas as pd
from sncheck.health.findings import merge_findings
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory_text
from sncheck.report import get_renderer
from sncheck.store.results import finding_to_json, from_json
from sncheck.topology import Topology, round_robin

out = Path(sys.argv[1])
SN, HOSTS, CARDS = 64, 32, 8
inv = load_inventory_text("design:\n  scale_up: {bandwidth: 900, latency: 2}\n  scale_out: {bandwidth: 50, latency: 12}\n"
    "supernodes:\n" + "".join(f"  - {{name: sn{s}, hosts: 'h{s:02d}n[01-{HOSTS:02d}]', cards_per_host: {CARDS}}}\n" for s in range(SN)))
topo = Topology(inv)
rng = np.random.default_rng(0)
idx = np.array([(a, b) for r in round_robin(list(range(HOSTS * CARDS))) for a, b in r])
frames = []
for s in range(SN):
    cards = np.array(topo.cards_of_supernode(f"sn{s}"))
    same = idx[:, 0] // CARDS == idx[:, 1] // CARDS
    frames.append(pd.DataFrame({"src": cards[idx[:, 0]], "dst": cards[idx[:, 1]],
                                "tier": np.where(same, "intra_host", "scale_up")}))
    nxt = np.array(topo.cards_of_supernode(f"sn{(s + 1) % SN}"))
    lo, hi = (cards, nxt) if s + 1 < SN else (nxt, cards)   # ids in natural order
    frames.append(pd.DataFrame({"src": lo, "dst": hi, "tier": "scale_out"}))
rows = pd.concat(frames, ignore_index=True)
n = len(rows)
rows["link"] = topo.link_ids(rows["src"], rows["dst"])
design = np.where(rows["tier"] == "scale_out", 50.0, 900.0)
bw = design * (1 + 0.02 * rng.standard_normal(n))
touch = lambda c: ((rows["src"] == c) | (rows["dst"] == c)).to_numpy()
bw[touch("h07n03/gpu5")] *= 0.6
bw[(rows["link"] == "h40n11/gpu1<->h40n11/gpu2").to_numpy()] *= 0.4   # (both ways round)
rows["bw_GBps"] = bw
rows["bw_rev_GBps"] = bw * (1 + 0.02 * rng.standard_normal(n))
rows["lat_us"] = np.where(rows["tier"] == "scale_out", 12.0, 2.0) * (1 + 0.02 * rng.standard_normal(n))
rows["lat_p99_us"] = rows["lat_us"] * 1.05
rows["checksum_ok"] = ~touch("h60n30/gpu0")
rows["kind"], rows["layer"], rows["status"] = "p2p", "connectivity", "ok"
dead = (((rows["src"] == "h21n04/gpu2") & (rows["dst"] == "h21n17/gpu6"))
        | ((rows["src"] == "h21n17/gpu6") & (rows["dst"] == "h21n04/gpu2"))).to_numpy()
rows.loc[dead, ["status", "bw_GBps", "bw_rev_GBps", "lat_us", "lat_p99_us"]] = ["timeout", np.nan, np.nan, np.nan, np.nan]
ids = [c.id for c in topo.cards]
ranks = pd.DataFrame({"kind": "rank", "layer": "stress", "group": [f"host:{c.rsplit('/', 1)[0]}" for c in ids],
                      "card": ids, "skew_us": np.abs(rng.normal(0, 2, len(ids)))})
rules = load_rules("default").for_layer("connectivity")
found = merge_findings(evaluate(rules, rows, DetectContext(topo, dict(inv.design))))
results = {"schema": "sncheck.run/1", "run_id": "bench-fleet", "playbook": "pre-upgrade-gate",
           "backend": "mock", "inventory": "fleet-16k", "verdict": "fail" if found else "pass",
           "gate": "critical", "seed": 0,
           "design": {t: {"bandwidth_GBps": d.bandwidth_GBps, "latency_us": d.latency_us} for t, d in inv.design.items()},
           "topology": {"supernodes": [{"name": sn.name, "hosts": list(sn.hosts)} for sn in inv.supernodes],
                        "cards": len(ids)},
           "layers": [{"name": "connectivity", "verdict": "fail" if found else "pass", "summary": {"pairs": n}},
                      {"name": "stress", "verdict": "pass", "summary": {}}],
           "findings": [finding_to_json(f) for f in found], "isolation": []}
# Each host's nvidia-smi lists its GPUs' UUIDs (the gpu_uuid fact): the card series' UUID label.
uuids = pd.DataFrame({"kind": "host_fact", "layer": "connectivity", "host": list(topo.hosts), "fact": "gpu_uuid",
                      "ok": True, "status": "ok",
                      "value": [json.dumps({str(g): f"GPU-{h:08x}-{g:04x}-4000-8000-{h * CARDS + g:012x}"
                                            for g in range(CARDS)}) for h in range(len(topo.hosts))]})
allrows = pd.concat([rows, ranks, uuids], ignore_index=True)
times = {}
for fmt, name in (("html", "report.html"), ("prometheus", "sncheck.prom"), ("junit", "junit.xml")):
    t0 = time.perf_counter()
    get_renderer(fmt)(from_json(results), allrows, out / name)
    times[fmt] = time.perf_counter() - t0
print(json.dumps({"rows": n, "cards": len(ids), "seconds": times,
                  "findings": sorted((f.entity, f.entity_kind) for f in found),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

SERIES = re.compile(r"^(\w+)\{([^}]*)\} ")


def render_fleet(out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_reports_16k_fleet(benchmark, request, tmp_path):
    if not request.config.getoption("benchmark_enable"):
        pytest.skip("the 16,384-card report runs with --benchmark-enable")
    out = benchmark.pedantic(render_fleet, args=(tmp_path,), rounds=1, iterations=1)
    html, prom, junit = (tmp_path / n for n in ("report.html", "sncheck.prom", "junit.xml"))
    sizes = {p.name: p.stat().st_size for p in (html, prom, junit)}
    benchmark.extra_info.update({"rows": out["rows"], "peak_rss_mb": out["peak_rss_mb"], **sizes,
                                 **{f"{k}_s": v for k, v in out["seconds"].items()}})
    print(f"\n16,384 cards, {out['rows']} pair rows, findings {out['findings']}")
    for fmt, secs in out["seconds"].items():
        print(f"  {fmt:<10} {secs:6.1f} s")
    print(f"  report.html {sizes['report.html'] / 1e6:.2f} MB, sncheck.prom {sizes['sncheck.prom'] / 1e6:.2f} MB, "
          f"junit.xml {sizes['junit.xml'] / 1e6:.2f} MB; peak RSS {out['peak_rss_mb']:.0f} MB")
    assert {("h07n03/gpu5", "card"), ("h21n04/gpu2<->h21n17/gpu6", "link")} <= {tuple(f) for f in out["findings"]}

    # HTML: under 5 MB, the fleet overview before every other chart and table of data.
    page = html.read_text(encoding="utf-8")
    assert sizes["report.html"] < 5_000_000
    overview = page.index('id="fleet-overview"')
    assert overview < page.index('id="findings"') < page.index('id="connectivity-charts"')
    assert page[overview:].count('<rect x=') >= 64 and "\u2715" in page[overview:page.index("</section>", overview)]
    assert page.count("<svg") < 200

    # Prometheus: per card, with dcgm-exporter's label names; no pair appears in a label.
    series: dict[str, int] = {}
    for line in prom.read_text().splitlines():
        m = SERIES.match(line)
        if not m:
            continue
        labels = dict(kv.split("=", 1) for kv in re.findall(r'(\w+="[^"]*")', m.group(2)))
        assert "<->" not in m.group(2) and not {"link", "src", "dst"} & set(labels), line
        if m.group(1).startswith("sncheck_card_"):
            assert {"hostname", "gpu", "UUID", "supernode"} <= set(labels), line
        series[m.group(1)] = series.get(m.group(1), 0) + 1
    assert series["sncheck_card_launch_skew_seconds"] == 16_384
    assert series["sncheck_card_p2p_bandwidth_min_bytes_per_second"] == 16_384 * 3   # 3 tiers
    assert sum(series.values()) < 16_384 * 20

    # JUnit: one testcase per host in each family.
    root = ET.parse(junit).getroot()
    for suite in root.iter("testsuite"):
        names = [c.get("name") for c in suite.iter("testcase") if c.get("name") != "layer"]
        assert len(names) == len(set(names)) == 64 * 32, suite.get("name")
