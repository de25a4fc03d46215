"""nccl-debug at fleet size (reviews14 #4, #6): a clean log of 16,384 hosts (half print one line, half
two) and an interleaved log of 2,048 hosts x 8 ranks (each pair of lines glued at a random byte).
Before the host lookups: 35 s and 5 s CPU (every host scanned for each host seen once / each glued run).

Run: python -m pytest tests/bench/bench_nccl_debug_hosts.py --benchmark-enable -s -q
"""

import random

import pytest

from sncheck.vendors.nccl.debug_log import parse_nccl_debug


def _clean(hosts: int = 16384) -> str:
    line = "node{:05d}:4000:4000 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
    return "".join(line.format(h) * (1 + h % 2) for h in range(hosts))


def _interleaved(hosts: int = 2048) -> str:
    rng = random.Random(1)
    lines = [f"node{h:04d}:{4000 + d}:{4000 + d} [{d}] NCCL INFO Channel 00/0 : {d} -> {(d + 1) % 8} via P2P/IPC"
             for h in range(hosts) for d in range(8)]
    return "".join(a[:rng.randrange(10, len(a))] + b + "\n" for a, b in zip(lines[::2], lines[1::2]))


@pytest.mark.parametrize("log", ["clean-16k-hosts", "interleaved-2k-hosts"])
def test_nccl_debug_hosts_at_fleet_size(benchmark, request, log):
    if not request.config.getoption("benchmark_enable"):
        pytest.skip("a benchmark: run with --benchmark-enable")
    text = _clean() if log.startswith("clean") else _interleaved()
    data = benchmark.pedantic(parse_nccl_debug, args=(text,), rounds=1, iterations=1)
    print(f"\n{log}: {len(text) / 1e6:.2f} MB, {benchmark.stats.stats.mean:.2f} s")
    assert bool(data["errors"]) == log.startswith("interleaved")
