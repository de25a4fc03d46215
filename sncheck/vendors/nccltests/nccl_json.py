"""nccl-tests' JSON forms, read into the same result as its text log.

- ``-J FILE`` (nccl-tests 2.17 on): one object, ``{"args": [...], "config": {"devices": [...]},
  "results": [{"size", "count", "type", "redop", "root", "out_of_place": {"time", "alg_bw",
  "bus_bw", "nwrong"}, "in_place": {...}}], "out_of_bounds": {"count", "okay"},
  "average_bus_bandwidith": {"bandwidith", "okay"}, "errors": [...], "end_time"}``. nccl-tests
  writes ``"nan"`` for a NaN and spells the footer keys so.
- JSON lines (rccl-tests forks): one object per line and half, ``{"name", "size", "type",
  "redop", "inPlace": 0|1, "time", "algBw", "busBw", "wrong", "ranks", ...}``.

A document without its footer (``end_time`` or the average) was cut short; a ``nwrong`` that
is not a whole non-negative number, or a NaN bandwidth, is an error.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BINARY = re.compile(r"(?<![A-Za-z0-9])(all_reduce|all_gather|alltoallv?|reduce_scatter|sendrecv|broadcast|"
                     r"reduce|gather|scatter|hypercube)_perf(?:_mpi)?(?![A-Za-z0-9])")


def load(text: str) -> Any | None:
    """The JSON document (or list of JSON lines) ``text`` holds, or None when it is a text log.
    A cut document is returned as ``{"_cut": text}`` so the parser can say so."""
    body = text.strip()
    if not body.startswith("{"):  # a text log may start with "[1,0]<stdout>:"
        return None
    try:
        return json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        pass
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    rows = []
    for ln in lines:
        try:
            rows.append(json.loads(ln))
        except (json.JSONDecodeError, RecursionError):
            rows.append({"_cut": ln})
    if rows and all(isinstance(r, dict) for r in rows) and any("_cut" not in r for r in rows):
        return rows
    return {"_cut": body}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _half(doc: Any, errors: list[str], where: str, keys=("time", "alg_bw", "bus_bw", "nwrong")) -> dict[str, Any]:
    if not isinstance(doc, dict):
        return {"time_us": None, "algbw_GBps": None, "busbw_GBps": None, "wrong": None, "max_error": None}
    time_key = "cpu_time" if "cpu_time" in doc else keys[0]
    vals = [_number(doc.get(k)) for k in (time_key, keys[1], keys[2])]
    for name, v, raw in zip(("time", "algbw", "busbw"), vals, (doc.get(time_key), doc.get(keys[1]), doc.get(keys[2]))):
        if raw is not None and (v is None or not math.isfinite(v) or v < 0):
            errors.append(f"{where}: {name} {raw!r} is not a measurement")
    raw_wrong = doc.get(keys[3])
    wrong = _number(raw_wrong)
    if raw_wrong is not None and (wrong is None or not math.isfinite(wrong) or wrong < 0 or wrong != int(wrong)):
        errors.append(f"{where}: #wrong {raw_wrong!r} is not a count")
        wrong = None
    clean = [v if v is not None and math.isfinite(v) and v >= 0 else None for v in vals]
    return {"time_us": clean[0], "algbw_GBps": clean[1], "busbw_GBps": clean[2],
            "wrong": int(wrong) if wrong is not None else None, "max_error": None}


def parse(doc: Any, hint: str | None, tool: str) -> dict[str, Any]:
    errors: list[str] = []
    if isinstance(doc, dict) and "_cut" in doc:
        return {"tool": tool, "format": "json", "collective": hint, "ranks": None, "rows": [],
                "avg_busbw_GBps": None, "out_of_bounds": None,
                "errors": ["the JSON document is cut short (it does not load)"]}
    if isinstance(doc, list):
        return _parse_lines(doc, hint, tool)
    if not isinstance(doc, dict):
        errors.append("the JSON document is not an nccl-tests report")
        doc = {}
    rows = []
    results = doc.get("results")
    for i, r in enumerate(results if isinstance(results, list) else []):
        if not isinstance(r, dict):
            continue
        where = f"results[{i}] (size {r.get('size')})"
        size, count = r.get("size"), r.get("count")
        if not isinstance(size, int) or size < 0 or not isinstance(count, int) or count < 0:
            errors.append(f"{where}: size or count is not a count")
        root = str(r.get("root", "")).strip()
        rows.append({"size_bytes": size, "count": count, "type": r.get("type"),
                     "redop": (str(r.get("redop")).strip() or None) if r.get("redop") is not None else None,
                     "root": int(root) if re.fullmatch(r"-?\d+", root) else None,
                     "out_of_place": _half(r.get("out_of_place"), errors, where),
                     "in_place": _half(r.get("in_place"), errors, where)})
    bounds = doc.get("out_of_bounds")
    avg = doc.get("average_bus_bandwidith", doc.get("average_bus_bandwidth"))
    oob = bounds.get("count") if isinstance(bounds, dict) else None
    avg_bw = _number(avg.get("bandwidith", avg.get("bandwidth"))) if isinstance(avg, dict) else None
    if isinstance(oob, int) and oob > 0:
        errors.append(f"{oob} out-of-bounds values (wrong results) reported")
    if avg_bw is None or "end_time" not in doc:
        errors.append("the JSON report has no footer (average bus bandwidth, end_time): cut short")
    reported = doc.get("errors")
    errors += [str(e) for e in (reported if isinstance(reported, list) else [reported] if reported else [])
               if str(e).strip()]
    args = " ".join(str(a) for a in doc.get("args") or []) if isinstance(doc.get("args"), list) else ""
    m = _BINARY.search(args)
    devices = (doc.get("config") or {}).get("devices") if isinstance(doc.get("config"), dict) else None
    return {"tool": tool, "format": "json", "collective": m.group(1) if m else hint,
            "ranks": len(devices) if isinstance(devices, list) and devices else None, "rows": rows,
            "avg_busbw_GBps": avg_bw if avg_bw is not None and math.isfinite(avg_bw) else None,
            "out_of_bounds": oob, "errors": errors}


def _parse_lines(records: list[dict[str, Any]], hint: str | None, tool: str) -> dict[str, Any]:
    errors: list[str] = []
    by_size: dict[str, dict[str, Any]] = {}
    names, ranks = set(), None
    for i, r in enumerate(records):
        if "_cut" in r:
            errors.append(f"line {i + 1}: not a whole JSON record (cut short): {r['_cut'][:60]!r}")
            continue
        where = f"record {i + 1} (size {r.get('size')})"
        names.add(str(r.get("name", "")))
        ranks = r.get("ranks", ranks)
        key = json.dumps([r.get("size"), r.get("type"), r.get("redop"), r.get("numCycle")], default=str)
        row = by_size.setdefault(key, {"size_bytes": r.get("size"), "count": r.get("count"),
                                       "type": r.get("type"), "redop": r.get("redop"), "root": r.get("root"),
                                       "out_of_place": _half(None, [], ""), "in_place": _half(None, [], "")})
        half = _half(r, errors, where, keys=("time", "algBw", "busBw", "wrong"))
        row["in_place" if r.get("inPlace") in (1, True, "1") else "out_of_place"] = half
    m = next((_BINARY.search(n) for n in sorted(names) if _BINARY.search(n)), None)
    name = m.group(1) if m else next((re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower() for n in sorted(names) if n), None)
    return {"tool": tool, "format": "json-lines", "collective": name or hint,
            "ranks": ranks if isinstance(ranks, int) else None, "rows": list(by_size.values()),
            "avg_busbw_GBps": None, "out_of_bounds": None, "errors": errors}
