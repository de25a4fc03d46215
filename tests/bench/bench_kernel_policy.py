"""The kernel-log policy on a flood of one code: ``sncheck parse kernel-log --rules`` with a count
over a window on 5,000 and 20,000 Xid 13 reports of one GPU, a second apart (dmesg -T).

    python -m pytest tests/bench/bench_kernel_policy.py -q --benchmark-enable

The most reports within the window is a bisection per report (sncheck/health/kernel.py
``most_in_window``): time grows about linearly with the reports; it was a count over every pair
(20,000 reports: 61 s of CPU). tests/test_kernel_policy_captures.py floods 600 in the plain run.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from sncheck.health import kernel
from sncheck.health.metrics import rows_context
from sncheck.health.rules import load_rules
from sncheck.vendors.parsers import parse_text

LINE = "NVRM: Xid (PCI:0000:cb:00): 13, pid=1, name=x, Graphics Exception: ESR 0x57c730=0xc04000b"


def flood(n: int) -> str:
    t0 = datetime(2026, 11, 30)
    return "".join(f"[{(t0 + timedelta(seconds=i)).strftime('%a %b %e %H:%M:%S %Y')}] {LINE}\n" for i in range(n))


@pytest.mark.parametrize("n", [5_000, 20_000])
def test_a_flood_of_one_code_is_judged_in_linear_time(benchmark, tmp_path: Path, n: int) -> None:  # type: ignore[no-untyped-def]  # pytest-benchmark's fixture is untyped
    rules_path = tmp_path / "r.yaml"
    rules_path.write_text("extends: default\nrules:\n  - name: kernel-xid\n    table:\n"
                          "      13: {severity: warning, count: 3, window: 1m}\n")
    rules, text = list(load_rules(str(rules_path)).rules), flood(n)

    def judge() -> list[dict]:
        return kernel.judged(parse_text("kernel-log", text), rules, rows_context())

    start = time.process_time()
    [verdict] = benchmark.pedantic(judge, rounds=1, iterations=1)
    benchmark.extra_info["cpu_s"] = cpu = time.process_time() - start
    print(f"\n{n} reports of one code: judged in {cpu:.2f} s of CPU")
    assert (verdict["severity"], verdict["reports"], verdict["in_window"]) == ("warning", n, 61)
