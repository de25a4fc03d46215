"""Parse TransferBench output: the ``a2a`` summary matrix, the ``p2p`` peak tables, and the
per-Test rows of a config file run.

``parse_transferbench`` (``transferbench``)::

    {"tool": "transferbench", "version": "v1.62.00",
     "matrices": [{"title": "Unidirectional copy peak bandwidth GB/s ...", "direction": "->",
                   "rows": {"GPU 00": {"GPU 01": 48.46, ...}}}],   # a2a: title "a2a"
     "averages": {"UniDir": {"GPU->GPU": 48.44, ...}, "BiDir": {...}},  # the p2p 'Averages' lines
     "tests": [{"test": 1, "executors": [{"executor": "GPU 00", "GBps": 56.299, "bytes": 268435456}],
                "transfers": [{"transfer": 0, "GBps": 33.52, "ms": 2.002, "bytes": 67108864,
                               "route": "G0 -> GPU00:004 -> G1",
                               "iterations": [{"iter": 6, "GBps": 33.616, "ms": 1.996}]}],  # SHOW_ITERATIONS
                "aggregate_GBps": 55.015}],          # each Test ends with "Aggregate (CPU)"
     "scaling": {"exe": "GPU 00", "bytes": 67108864, "columns": ["CPU00", ..., "GPU03"],  # the scaling
                 "rows": [{"num_cus": 1, "GBps": {"CPU00": 14.11, ...}}],               # preset; null
                 "best": {"CPU00": {"GBps": 14.11, "num_cus": 1}, ...}},               # without it
     "aggregate_GBps": 2879.354, "average_GBps": 51.417, "errors": ["[ERROR] HIP Error: ..."]}

A Test block without its ``Aggregate (CPU)`` line, or a scaling sweep without its ``Best``
line, was cut short (an error). Self-copy cells (the diagonal, N/A or a local copy rate) are kept as printed; checks
read GPU->GPU cells off the diagonal.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError

_DEV = r"(?:CPU|GPU|NIC) \d+"
# " Transfer 00 |  33.520 GB/s |  2.002 ms |  67108864 bytes | G0 -> GPU00:004 -> G1"
_TRANSFER = re.compile(r"^Transfer (\d+)\s*\|\s*([\d.]+) GB/s\s*\|\s*([\d.]+) ms\s*\|\s*(\d+) bytes\s*\|(.*)$")
_ITER = re.compile(r"^Iter (\d+)\s*\|\s*([\d.]+) GB/s\s*\|\s*([\d.]+) ms")


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
    scaling: dict[str, Any] | None = None
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
            tests.append({"test": int(m.group(1)), "executors": [], "transfers": [], "aggregate_GBps": None})
            saw = True
            continue
        if tests and (m := re.match(r"^Executor:\s*(.+?)\s*\|\s*([\d.]+) GB/s\s*\|\s*[\d.]+ ms\s*\|\s*(\d+) bytes", line)):
            tests[-1]["executors"].append({"executor": m.group(1), "GBps": float(m.group(2)), "bytes": int(m.group(3))})
            continue
        if tests and (m := _TRANSFER.match(line)):
            tests[-1]["transfers"].append({"transfer": int(m.group(1)), "GBps": float(m.group(2)),
                                           "ms": float(m.group(3)), "bytes": int(m.group(4)),
                                           "route": m.group(5).strip(), "iterations": []})
            continue
        if tests and tests[-1]["transfers"] and (m := _ITER.match(line)):
            tests[-1]["transfers"][-1]["iterations"].append(
                {"iter": int(m.group(1)), "GBps": float(m.group(2)), "ms": float(m.group(3))})
            continue
        if tests and (m := re.match(r"^Aggregate \(CPU\)\s*\|\s*([\d.]+) GB/s", line)):
            tests[-1]["aggregate_GBps"] = float(m.group(1))
            continue
        if re.match(r"^GPU-GFX Scaling benchmark:", line):
            scaling, saw = {"exe": None, "bytes": None, "columns": [], "rows": [], "best": None}, True
            continue
        if scaling is not None and (m := re.match(r"^- Copying (\d+) bytes from GPU (\d+)", line)):
            scaling["bytes"], scaling["exe"] = int(m.group(1)), f"GPU {int(m.group(2)):02d}"
            continue
        if scaling is not None and (m := re.match(r"^NumCUs[\s,]+(.*)$", line)):
            scaling["columns"] = re.split(r"[\s,]+", m.group(1).strip())
            continue
        if scaling is not None and scaling["columns"] and (m := re.match(r"^(\d+)[\s,]+([\d.\s,]+)$", line)):
            cells = [float(c) for c in re.split(r"[\s,]+", m.group(2).strip())]
            if len(cells) != len(scaling["columns"]):
                errors.append(f"scaling: NumCUs {m.group(1)}: {len(cells)} cells for "
                              f"{len(scaling['columns'])} devices")
            scaling["rows"].append({"num_cus": int(m.group(1)), "GBps": dict(zip(scaling["columns"], cells))})
            continue
        if scaling is not None and (m := re.match(r"^Best[\s,]+(.*)$", line)):
            best = re.findall(r"([\d.]+)\(\s*(\d+)\)", m.group(1))
            scaling["best"] = {c: {"GBps": float(b), "num_cus": int(n)} for c, (b, n) in zip(scaling["columns"], best)}
            continue
        if m := re.match(r"^Aggregate bandwidth \(GPU Timed\):\s*([\d.]+)", line):
            out["aggregate_GBps"] = float(m.group(1))
        elif m := re.match(r"^Average\s+bandwidth \(GPU Timed\):\s*([\d.]+)", line):
            out["average_GBps"] = float(m.group(1))
    if not saw:
        raise ParseError("no TransferBench header, matrix or Test rows", tool="transferbench")
    if not matrices and not tests and not errors and not (scaling and scaling["rows"]):
        errors.append("no results (truncated output?)")
    for t in tests:  # a Test block ends with its "Aggregate (CPU)" line
        if t["aggregate_GBps"] is None and not errors:
            errors.append(f"Test {t['test']}: no 'Aggregate (CPU)' line (cut short)")
    if scaling is not None and scaling["best"] is None and not errors:
        errors.append("scaling: no 'Best' line after the NumCUs rows (cut short)")
    return {"tool": "transferbench", "version": version, "matrices": matrices, "averages": averages,
            "tests": tests, "scaling": scaling, **out, "errors": errors}
