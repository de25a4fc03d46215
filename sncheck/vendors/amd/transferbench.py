"""Parse TransferBench output: the ``a2a`` summary matrix, the ``p2p`` peak tables, and the
per-Test rows of a config file run.

``parse_transferbench`` (``transferbench``)::

    {"tool": "transferbench", "version": "v1.62.00",
     "matrices": [{"title": "Unidirectional copy peak bandwidth GB/s ...", "direction": "->",
                   "rows": {"GPU 00": {"GPU 01": 48.46, ...}}}],   # a2a: title "a2a"
     "averages": {"UniDir": {"GPU->GPU": 48.44, ...}, "BiDir": {...}},  # the p2p 'Averages' lines
     "tests": [{"test": 1, "executors": [{"executor": "GPU 00", "GBps": 56.299, "bytes": 268435456}],
                "aggregate_GBps": 55.015}],
     "aggregate_GBps": 2879.354, "average_GBps": 51.417, "errors": ["[ERROR] HIP Error: ..."]}

Self-copy cells (the diagonal, N/A or a local copy rate) are kept as printed; checks
read GPU->GPU cells off the diagonal.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError

_DEV = r"(?:CPU|GPU|NIC) \d+"


def parse_transferbench(text: str) -> dict[str, Any]:
    version = None
    matrices: list[dict[str, Any]] = []
    averages: dict[str, dict[str, float]] = {}
    tests: list[dict[str, Any]] = []
    errors: list[str] = []
    cur: dict[str, Any] | None = None
    cols: list[str] = []
    title = None
    avg_keys: list[str] = []
    out: dict[str, Any] = {"aggregate_GBps": None, "average_GBps": None}
    saw = False
    for raw in text.splitlines():
        line = raw.strip().replace("\\\\", "\\")
        if not line:
            continue
        if m := re.match(r"^TransferBench (v[\d.]+)", line):
            version, saw = m.group(1), True
            continue
        if line.startswith("TransferBench"):
            saw = True
        if "[ERROR]" in line or re.search(r"(?i)hip error|failed", line):
            errors.append(line)
            continue
        if "bandwidth GB/s" in line:
            title, saw = line, True
            continue
        if m := re.match(r"^(SRC\S*DST)\s+(.*)$", line):
            cols = re.findall(_DEV, m.group(2))
            trailing = m.group(2).split()[-2:]
            cur = {"title": title or "a2a", "rows": {}, "extra": [c for c in trailing if c in ("STotal", "Actual")]}
            matrices.append(cur)
            saw = True
            continue
        if cur is not None and (m := re.match(rf"^({_DEV})\s*(->|<-|<->)?\s+(.*)$", line)):
            cells = m.group(3).split()
            vals = [None if c == "N/A" else float(c) for c in cells[: len(cols)] if re.fullmatch(r"N/A|[\d.]+", c)]
            key = m.group(1) + (f" {m.group(2)}" if m.group(2) and m.group(2) != "->" else "")
            cur["rows"][key] = dict(zip(cols, vals))
            continue
        if re.fullmatch(r"(?:\S+->\S+\s*)+", line):
            avg_keys = line.split()
            continue
        if avg_keys and (m := re.match(r"^Averages(?: \(During (\w+)\))?:\s+(.*)$", line)):
            averages[m.group(1) or "all"] = dict(zip(avg_keys, (float(v) for v in m.group(2).split())))
            continue
        if m := re.match(r"^Test (\d+):", line):
            tests.append({"test": int(m.group(1)), "executors": [], "aggregate_GBps": None})
            saw = True
            continue
        if tests and (m := re.match(r"^Executor:\s*(.+?)\s*\|\s*([\d.]+) GB/s\s*\|\s*[\d.]+ ms\s*\|\s*(\d+) bytes", line)):
            tests[-1]["executors"].append({"executor": m.group(1), "GBps": float(m.group(2)), "bytes": int(m.group(3))})
            continue
        if tests and (m := re.match(r"^Aggregate \(CPU\)\s*\|\s*([\d.]+) GB/s", line)):
            tests[-1]["aggregate_GBps"] = float(m.group(1))
            continue
        if m := re.match(r"^Aggregate bandwidth \(GPU Timed\):\s*([\d.]+)", line):
            out["aggregate_GBps"] = float(m.group(1))
        elif m := re.match(r"^Average\s+bandwidth \(GPU Timed\):\s*([\d.]+)", line):
            out["average_GBps"] = float(m.group(1))
    if not saw:
        raise ParseError("no TransferBench header, matrix or Test rows", tool="transferbench")
    if not matrices and not tests and not errors:
        errors.append("no results (truncated output?)")
    return {"tool": "transferbench", "version": version, "matrices": matrices, "averages": averages,
            "tests": tests, **out, "errors": errors}
