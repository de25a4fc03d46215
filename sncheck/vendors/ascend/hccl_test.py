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

_HEADER = re.compile(r"data_size\(Bytes\)\s*:?\s*\|\s*av\w*_time\(us\)", re.I)
_ROW = re.compile(r"^\s*(\d+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*(\w+)\s*$")
_LIMITS = re.compile(r"minbytes is (\d+), maxbytes is (\d+), iters is (\d+), warmup_iters is (\d+)")
_PROGRAM = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|all_to_all|broadcast|reduce|sendrecv)_test\b")
_NP = re.compile(r"mpirun\s+(?:.*\s)?-n[p]?\s+(\d+)")


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
        if re.search(r"(?i)\berror\b|hccl.*fail|errno|segmentation", line):
            errors.append(line)
    if not saw_header and not rows and not failed_lines and not errors:
        raise ParseError("no hccl_test header or rows", tool="hccl-test")
    if saw_header and not rows:
        errors.append("header but no result rows (the test did not finish)")
    failed = sum(1 for r in rows if r["check"].lower() == "failed") + len(failed_lines)
    if failed:
        errors.append(f"{failed} failed data checks (wrong data on a rank)")
    return {"tool": "hccl-test", "collective": collective, "ranks": ranks,
            "minbytes": limits[0] if limits else None, "maxbytes": limits[1] if limits else None,
            "iters": limits[2] if limits else None, "warmup_iters": limits[3] if limits else None,
            "rows": rows, "failed_checks": failed,
            "unchecked": sum(1 for r in rows if r["check"].upper() == "NULL"),
            "failed_lines": failed_lines, "errors": errors}
