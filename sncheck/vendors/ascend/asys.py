"""Parse ``asys health`` / ``asys diagnose`` tables and ``ascend-dmi`` results.

``parse_asys`` (``asys``)::

    {"tool": "asys", "reports": [{"command": "asys health -d=0", "scope": "Device ID: 0",
       "overall": "Warning", "devices": {"0": "Healthy"}, "error_codes": ["0xa419321c"],
       "results": {"Stress Detect": "Pass, Warn, Pass, Warn"}}], "errors": []}

``parse_ascend_dmi`` (``ascend-dmi``): the P2P matrices, the bandwidth table and the
compute table::

    {"tool": "ascend-dmi", "matrices": {"Unidirectional Peer to Peer Test": {"0": {"1": 391.2}}},
     "bandwidth": [{"id": 0, "size_bytes": 536870912, "GBps": 58.125}],
     "compute": [{"device": "0/1", "tflops": 752.465, "power_W": 338.5}], "errors": []}
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError


def parse_asys(text: str) -> dict[str, Any]:
    reports: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    last_key = None
    for raw in text.splitlines():
        line = raw.strip().replace("\u202c", "")
        if line.startswith("asys "):
            cur = {"command": line, "scope": None, "overall": None, "devices": {}, "error_codes": [], "results": {}}
            reports.append(cur)
            continue
        if cur is not None and line.startswith("+"):
            cur["_open"] = False  # a border closes the rows above it
        if cur is None or not line.startswith("|"):
            continue
        cur["_open"] = True
        cur["_rows"] = cur.get("_rows", 0) + 1
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 2:
            continue
        left, right = cells[0], cells[1]
        if m := re.match(r"^ErrorCode Num:\s*(\d+)", right):
            cur["_codes"] = int(m.group(1))
        elif m := re.match(r"^Overall Health:\s*(\w+)", right):
            cur["scope"], cur["overall"] = left, m.group(1)
        elif m := re.match(r"^Device ID:\s*(\d+)$", left):
            if right == "Diagnostic Result":
                cur["scope"] = left
            else:
                cur["devices"][m.group(1)] = right
        elif re.match(r"^0x[0-9a-fA-F]+$", left):
            cur["error_codes"].append(left)
        elif right == "Diagnostic Result":
            cur["scope"] = left
        elif left and right:
            cur["results"][left] = right
            last_key = left
        elif not left and right and last_key:
            cur["results"][last_key] += f" {right}"
    if not reports:
        raise ParseError("no 'asys ...' command with a table", tool="asys")
    return {"tool": "asys", "reports": reports, "errors": [e for r in reports for e in _report_cut(r)]}


def _report_cut(report: dict[str, Any]) -> list[str]:
    """What a report's table states of itself: it closes with a border, ``ErrorCode Num: N``
    codes follow, ``Group of N Device`` rows follow. A cut shows as one of these short."""
    cmd = report["command"]
    is_open, codes, rows = report.pop("_open", None), report.pop("_codes", None), report.pop("_rows", 0)
    if not rows:
        return [f"{cmd!r}: no table after the command: output cut short"]
    out = [f"{cmd!r}: the table has no closing border: output cut short"] if is_open else []
    if codes is not None and codes != len(report["error_codes"]):
        out.append(f"{cmd!r}: ErrorCode Num: {codes} but {len(report['error_codes'])} codes listed: output cut short")
    if (m := re.match(r"^Group of (\d+) Device", report["scope"] or "")) and int(m.group(1)) != len(report["devices"]):
        out.append(f"{cmd!r}: a group of {m.group(1)} devices but {len(report['devices'])} listed: output cut short")
    return out


def parse_ascend_dmi(text: str) -> dict[str, Any]:
    matrices: dict[str, dict[str, dict[str, float]]] = {}
    bandwidth: list[dict[str, Any]] = []
    compute: list[dict[str, Any]] = []
    title = None
    cols: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if m := re.fullmatch(r"(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)", line):
            bandwidth.append({"id": int(m.group(1)), "size_bytes": int(m.group(2)), "GBps": float(m.group(4))})
            title = None
            continue
        if line.endswith("Peer to Peer Test"):
            title, cols = line, []
            matrices[title] = {}
            continue
        if title and not cols and re.fullmatch(r"\d+(\s+\d+)*", line):
            cols = line.split()
            continue
        if title and cols and (m := re.fullmatch(r"(\d+)((?:\s+[\d.]+)+)", line)):
            matrices[title][m.group(1)] = {c: float(v) for c, v in zip(cols, m.group(2).split()) if c != m.group(1)}
            continue
        if m := re.fullmatch(r"(\d+/\d+)\s+([\d,]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)", line):
            compute.append({"device": m.group(1), "tflops": float(m.group(4)), "power_W": float(m.group(5))})
    if not matrices and not bandwidth and not compute:
        raise ParseError("no ascend-dmi result table", tool="ascend-dmi")
    return {"tool": "ascend-dmi", "matrices": matrices, "bandwidth": bandwidth, "compute": compute, "errors": []}
