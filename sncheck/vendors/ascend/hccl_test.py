"""Parse hccl_test output (hicann/oam-tools: ``all_reduce_test``, ``all_gather_test``, ...).

hccl_test prints only ``data_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s) |
check_result`` per size; there is no busbw, so sncheck computes it from algbw with the
nccl-tests factors (:data:`sncheck.rows.BUSBW_FACTOR`) and the rank count. Every rank's
output is scanned: a failing rank prints ``check result failed`` (or a row whose
check_result is ``failed``); that is wrong data. check_result ``NULL`` means the check was
skipped (an overflow limit) and is kept as such, never as a pass.

``parse_hccl_test`` (``hccl-test``)::

    {"tool": "hccl-test", "collective": "all_reduce", "ranks": 8,
     "minbytes": 8192, "maxbytes": 67108864, "iters": 20, "warmup_iters": 5,
     "rows": [{"size_bytes": 8192, "time_us": 764.55, "algbw_GBps": 0.00998,
               "busbw_GBps": 0.017465, "check": "success"}],
     "failed_checks": 0, "unchecked": 0, "failed_lines": [], "errors": []}
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.rows import BUSBW_FACTOR
from sncheck.vendors.grammar import Grammar

GRAMMAR = {"hccl-test": Grammar(
    tool="hccl_test (all_reduce_test, all_gather_test, reduce_scatter_test, alltoall_test, broadcast_test, ...)",
    versions="hccl_test of CANN 7.0 to 8.3 (oam-tools 2025; the doc's 'avg_time(us):' header too)",
    sources=(
        "hicann/oam-tools src/hccl_test/common/src/hccl_opbase_rootinfo_base.cc @ 0d015da: print_execution_time "
        "(the header, the rows, the failing rank's line), no_verification / is_initdata_overflow (the warnings)",
        "hicann/oam-tools src/hccl_test/common/src/hccl_test_common.h @ 0d015da: ACLCHECK / HCCLCHECK (the error "
        "lines), the defaults (iters 20, warmup 10, 64 MB)",
        "hicann/oam-tools docs/zh/hccl_test/execution.md: the limits line and an 8-NPU example (fixtures/real/ascend/09)",
    ),
    lines=("'the minbytes is N, maxbytes is N, iters is N, warmup_iters is N'; optionally 'Warning: The calculation "
           "result overflows, No verification is performed.' or 'Warning: The initdata overflows, ...'; the header "
           "'%-15s | %-12s | %-18s | %s' of 'data_size(Bytes):', 'aveg_time(us):' (the doc: 'avg_time(us):'), "
           "'alg_bandwidth(GB/s):', 'check_result:'; a row a size '%-17llu | %-14.2f | %-20.5f | success|failed|NULL' "
           "(bytes, us, GB/s; NULL: not verified), from the root rank only; sizes from minbytes by the factor (-f) or "
           "the step (-i) while at most maxbytes"),
    end="the row of the last size at most maxbytes (the next size, read off the last rows' factor or step, passes it)",
    failures=("a row 'failed' and each rank's 'local rank_id N, check result failed, SIZE | T | BW | failed' (errors: "
              "wrong data); 'acl interface return err FILE:LINE, retcode: N.' (with 'memory allocation error, ...'), "
              "'hccl interface return err FILE:LINE, retcode: N' (errors: the run stopped); a header without rows, the "
              "last row short of maxbytes (errors: cut short); NULL rows are kept as unchecked, never a pass of the check"),
    values=("collective, ranks (from an mpirun -n line or --ranks), minbytes, maxbytes, iters, warmup_iters, "
            "rows[{size_bytes, time_us, algbw_GBps, busbw_GBps, check}], failed_checks, unchecked, failed_lines, errors"),
)}

_HEADER = re.compile(r"data_size\(Bytes\)\s*:?\s*\|\s*av\w*_time\(us\)", re.I)
_ROW = re.compile(r"^\s*(\d+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*(\w+)\s*$")
_LIMITS = re.compile(r"minbytes is (\d+), maxbytes is (\d+), iters is (\d+), warmup_iters is (\d+)")
_PROGRAM = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|all_to_all|broadcast|reduce|sendrecv)_test\b")
_NP = re.compile(r"mpirun\s+(?:.*\s)?-n[p]?\s+(\d+)")


def _reached_max(sizes: list[int], maxbytes: int) -> bool:
    """Whether the rows run to the end the limits line states: hccl_test steps from minbytes
    by a factor (-f) or a step (-i) while the size is at most maxbytes, so the last row is
    whole when the next size, read off the last two rows, would pass maxbytes (one row: by
    the default factor of 2)."""
    last = sizes[-1]
    if last >= maxbytes:
        return True
    if len(sizes) >= 2 and sizes[-2] > 0:
        a, b = sizes[-2], last
        stepped = len(sizes) >= 3 and b - a == a - sizes[-3]  # three rows tell a step from a factor
        nxt = b * b // a if not stepped and b % a == 0 and b // a > 1 else b + (b - a)
        return nxt > maxbytes
    return last * 2 > maxbytes


def parse_hccl_test(text: str, collective: str | None = None, ranks: int | None = None) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    failed_lines: list[str] = []
    errors: list[str] = []
    limits = None
    saw_header = False
    if collective is None and (m := _PROGRAM.search(text)):
        collective = {"alltoall": "all_to_all"}.get(m.group(1), m.group(1))
    if ranks is None and (m := _NP.search(text)):
        ranks = int(m.group(1))
    for raw in text.splitlines():
        line = raw.strip()
        if m := _LIMITS.search(line):
            limits = tuple(int(x) for x in m.groups())
            continue
        if _HEADER.search(line):
            saw_header = True
            continue
        if "check result failed" in line.lower():
            failed_lines.append(line)
            continue
        if m := _ROW.match(line):
            size, t, algbw, check = int(m.group(1)), float(m.group(2)), float(m.group(3)), m.group(4)
            factor = BUSBW_FACTOR.get(collective or "", None)
            busbw = algbw * factor(ranks) if factor and ranks else None
            rows.append({"size_bytes": size, "time_us": t, "algbw_GBps": algbw,
                         "busbw_GBps": round(busbw, 6) if busbw is not None else None, "check": check})
            continue
        # ACLCHECK / HCCLCHECK print 'acl|hccl interface return err FILE:LINE, retcode: N' and
        # return: the test stops there
        if re.search(r"(?i)\berror\b|interface return err\b|hccl.*fail|errno|segmentation", line):
            errors.append(line)
    if not saw_header and not rows and not failed_lines and not errors:
        raise ParseError("no hccl_test header or rows", tool="hccl-test")
    if saw_header and not rows:
        errors.append("header but no result rows (the test did not finish)")
    elif limits and rows and not _reached_max([r["size_bytes"] for r in rows], limits[1]):
        errors.append(f"the last row is {rows[-1]['size_bytes']} bytes, the test runs to {limits[1]} "
                      "(maxbytes): output cut short")
    failed = sum(1 for r in rows if r["check"].lower() == "failed") + len(failed_lines)
    if failed:
        errors.append(f"{failed} failed data checks (wrong data on a rank)")
    return {"tool": "hccl-test", "collective": collective, "ranks": ranks,
            "minbytes": limits[0] if limits else None, "maxbytes": limits[1] if limits else None,
            "iters": limits[2] if limits else None, "warmup_iters": limits[3] if limits else None,
            "rows": rows, "failed_checks": failed,
            "unchecked": sum(1 for r in rows if r["check"].upper() == "NULL"),
            "failed_lines": failed_lines, "errors": errors}
