"""hccl_test output, from the grammar in sncheck/vendors/ascend/hccl_test.py (hicann/oam-tools
src/hccl_test: hccl_opbase_rootinfo_base.cc print_execution_time, hccl_test_common.h ACLCHECK /
HCCLCHECK): the limits line, the overflow warnings, the table (success, failed, NULL rows),
the failing ranks' lines, the error lines that stop a run; sizes by a factor or a step."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator

_HEADER = f"{'data_size(Bytes):':<15} | {'aveg_time(us):':<12} | {'alg_bandwidth(GB/s):':<18} | check_result:"


def _row(size: int, t: float, bw: float, check: str) -> str:
    return f"{size:<17} | {t:<14.2f} | {bw:<20.5f} | {check}"


@generator("hccl-test")
def hccl_test(rng: random.Random) -> Iterator[Variant]:
    cases = (("all_reduce", 8192, 64 << 20, "f2", "pass"), ("all_gather", 1 << 20, 8 << 20, "i1M", "pass"),
             ("reduce_scatter", 8192, 8192, "f2", "pass"), ("alltoall", 8192, 1 << 20, "f4", "failed rank"),
             ("broadcast", 1024, 1 << 20, "f2", "null"), ("all_reduce", 8192, 1 << 20, "f2", "acl err"))
    for name, lo, hi, step, case in cases:
        sizes = [lo]
        while True:
            nxt = sizes[-1] * int(step[1:]) if step[0] == "f" else sizes[-1] + (1 << 20)
            if nxt > hi:
                break
            sizes.append(nxt)
        lines = [f"the minbytes is {lo}, maxbytes is {hi}, iters is 20, warmup_iters is 5"]
        if case == "null":
            lines.append("Warning: The calculation result overflows, No verification is performed.")
        lines.append(_HEADER)
        values: list[tuple[str, object]] = [("minbytes", lo), ("maxbytes", hi), ("iters", 20), ("len(rows)", len(sizes))]
        bad = rng.randrange(len(sizes))
        if case == "acl err":  # the run stops at the size where ACLCHECK failed: no rows after it
            sizes = sizes[: rng.randrange(1, len(sizes))]
            values = [v for v in values if v[0] != "len(rows)"] + [("len(rows)", len(sizes))]
        for i, size in enumerate(sizes):
            t = round(rng.uniform(20, 3000), 2)
            bw = round(size / t / 1e3, 5)
            check = "NULL" if case == "null" else "success"
            if case == "failed rank" and i == bad:
                lines.append(f"local rank_id 3, check result failed, {_row(size, t, bw, 'failed')}")
            lines.append(_row(size, t, bw, check))
            values += [(f"rows[size_bytes={size}].time_us", t), (f"rows[size_bytes={size}].algbw_GBps", bw),
                       (f"rows[size_bytes={size}].check", check)]
        if case == "null":
            values.append(("unchecked", len(sizes)))
        if case == "failed rank":
            values.append(("failed_checks", 1))
        if case == "acl err":
            lines.append("acl interface return err ./common/src/hccl_test_common.cc:512, retcode: 207001.")
            lines.append("memory allocation error, check whether the current memory space is sufficient.")
        yield Variant("hccl-test", f"{name} {lo}-{hi} {step} {case}", "\n".join(lines) + "\n", tuple(values),
                      fails=case in ("failed rank", "acl err"))
