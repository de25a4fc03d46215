"""The state store after a year of nightly runs: 365 runs of a 2,048-card cluster.

Run: python -m pytest tests/bench/bench_state_size.py --benchmark-enable -s -q

The summaries of each night are what ``sncheck run --state-dir`` keeps (see
sncheck.health.summaries): per card and tier p2p bandwidth and latency plus launch skew,
per host and tier, the worst links, per tier and per collective. They are inserted
directly (365 mock runs of 2,048 cards would take hours), with the key list of a real
summary of that shape and noisy values, plus a run row and a few findings per night.
The store must stay under 200 MB; a 16k-card fleet scales by the card count.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import numpy as np

from sncheck.model import Finding
from sncheck.store.state import StateStore

CARDS_PER_HOST, HOSTS, DOMAIN_HOSTS = 8, 256, 9   # 2,048 cards, NVL72-like domains
TIERS = ("intra_host", "scale_up", "scale_out")
LIMIT_MB = 200


def keys() -> list[tuple[str, str, str]]:
    out = []
    for h in range(HOSTS):
        host = f"node{h + 1:04d}"
        for t in TIERS:
            for m in ("p2p_bandwidth", "p2p_latency"):
                out.append(("host", host, f"{m}/{t}"))
        out.append(("host", host, "facts_bad"))
        for c in range(CARDS_PER_HOST):
            card = f"{host}/gpu{c}"
            out += [("card", card, f"{m}/{t}") for t in TIERS for m in ("p2p_bandwidth", "p2p_latency")]
            out.append(("card", card, "skew_us"))
    out += [("tier", t, m) for t in TIERS for m in ("p2p_bandwidth", "p2p_latency")]
    out += [("collective", f"{c}/{k}", m) for c in ("all_reduce", "all_to_all")
            for k in ("host", "rail", "domain", "cross") for m in ("busbw_GBps", "small_time_us")]
    out += [("link", f"node{i:04d}/gpu0<->node{i + 1:04d}/gpu0", f"p2p_{m}") for i in range(1, 49)
            for m in ("bandwidth", "latency")]
    return sorted(out)


def simulate_year(path, nights: int = 365) -> dict:
    ks = keys()
    rng = np.random.default_rng(1)
    level = np.where([k[2].startswith("p2p_bandwidth") for k in ks], 400.0, 3.0)
    t0 = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)
    with StateStore(path) as st:
        st._db.execute("PRAGMA synchronous = OFF")  # the size is measured here, not the fsyncs
        for n in range(nights):
            run_id = f"night-{n:03d}"
            started = (t0 + timedelta(days=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            st.record_run({"run_id": run_id, "playbook": "nightly", "backend": "ssh", "inventory": "fleet-2k",
                           "started": started, "finished": started, "verdict": "pass"})
            values = level * (1 + 0.02 * rng.standard_normal(len(ks)))
            spreads = level * 0.004 * (1 + 0.1 * rng.standard_normal(len(ks)))
            st.record_summary_columns(run_id, ks, values.astype(np.float32), spreads.astype(np.float32),
                                      rng.integers(3, 72, len(ks)))
            st.record_findings(run_id, [Finding(f"node{rng.integers(1, HOSTS):04d}/gpu{rng.integers(0, 8)}",
                                                "card", "connectivity", "p2p-bandwidth-card-slow", "warning",
                                                "bandwidth low",
                                                {"measured": 360.0, "expected": 400.0, "unit": "GB/s"})
                                        for _ in range(3)])
        st._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        summary = st.run_summaries(f"night-{nights - 1:03d}")
    size = sum(os.path.getsize(p) for p in path.iterdir() if p.is_file())
    return {"keys": len(ks), "bytes": size, "summary_entries": len(summary)}


def test_state_store_after_a_year_of_nightly_runs(benchmark, tmp_path):
    out = benchmark.pedantic(simulate_year, args=(tmp_path / "state",), rounds=1, iterations=1)
    mb = out["bytes"] / 1e6
    per_run_kb = out["bytes"] / 365 / 1e3
    print(f"\nstate store after 365 nightly runs of 2,048 cards ({out['keys']} summaries a run): "
          f"{mb:.1f} MB ({per_run_kb:.0f} kB a run); a 16k-card fleet: about {mb * 8:.0f} MB")
    benchmark.extra_info["store_mb"] = round(mb, 1)
    assert out["summary_entries"] == out["keys"]
    assert mb < LIMIT_MB
