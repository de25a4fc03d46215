"""An ``NCCL_DEBUG`` log of connection and network lines each holding a long run of blanks after
the net's name (reviews13's hostile input): ``sncheck parse nccl-debug`` on 250 and 2,500 lines of
4 KB ('via NET/a<4000 blanks>b', 'Using network a<4000 blanks>b').

    python -m pytest tests/bench/bench_nccl_debug_lines.py -q --benchmark-enable -s

The text after 'via' is split and 'Using network' matched greedily (sncheck/vendors/nccl/debug_log.py
``_via``): time grows about linearly with the lines; a lazy name before '\\s*$' took 19.75 s of CPU
for the 250 lines (1 MB), quadratic in each line."""

from __future__ import annotations

import time

import pytest

from sncheck.vendors.parsers import parse_text

PRE = "h1:1:1 [0] NCCL INFO "


@pytest.mark.parametrize("n", [250, 2_500])
def test_long_blank_runs_after_a_net_name_parse_in_linear_time(benchmark, n: int) -> None:  # type: ignore[no-untyped-def]  # pytest-benchmark's fixture is untyped
    text = (PRE + "Channel 00/0 : 0[0] -> 1[0] [send] via NET/a" + " " * 4000 + "b\n"
            + PRE + "Using network a" + " " * 4000 + "b\n") * (n // 2)
    start = time.process_time()
    out = benchmark.pedantic(lambda: parse_text("nccl-debug", text), rounds=1, iterations=1)
    benchmark.extra_info["cpu_s"] = cpu = time.process_time() - start
    print(f"\n{n} lines of 4 KB ({len(text) / 1e6:.1f} MB): parsed in {cpu:.2f} s of CPU")
    assert out["transports"] == {"NET/a": n // 2} and out["net"] is None
