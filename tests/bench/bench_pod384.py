"""The 384-card pre-upgrade-gate run on the mock backend: wall time and peak memory.

Run: python -m pytest tests/bench/bench_pod384.py --benchmark-enable -s -q
The run goes through the real CLI in a child process, so its peak RSS is its own.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import resource, sys
from sncheck.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    print("PEAK_RSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
    raise
"""


def run_pod(out: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "run", str(ROOT / "playbooks/pre-upgrade-gate.yaml"),
         "-i", str(ROOT / "fixtures/inventories/pod-384.yaml"), "--backend", "mock", "--seed", "1",
         "--out", str(out), "-q"],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak = int(proc.stderr.split("PEAK_RSS_KB")[1].split()[0])
    return {"peak_rss_mb": round(peak / 1024, 1), "results": json.loads((out / "results.json").read_text())}


def test_pod384_gate(benchmark, tmp_path):
    outcome = benchmark.pedantic(run_pod, args=(tmp_path / "run",), rounds=1, iterations=1)
    benchmark.extra_info["peak_rss_mb"] = outcome["peak_rss_mb"]
    print(f"\npod-384 pre-upgrade-gate (mock): peak RSS {outcome['peak_rss_mb']} MB")
    results = outcome["results"]
    assert results["verdict"] == "pass"
    assert results["layers"][0]["summary"]["pairs"] == 384 * 383 // 2
