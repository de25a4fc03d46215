"""nccl-tests' JSON forms, read into the same result as its text log.

- ``-J FILE`` (nccl-tests 2.17 on): one object, ``{"args": [...], "config": {"devices": [...]},
  "results": [{"size", "count", "type", "redop", "root", "out_of_place": {"time", "alg_bw",
  "bus_bw", "nwrong"}, "in_place": {...}}], "out_of_bounds": {"count", "okay"},
  "average_bus_bandwidith": {"bandwidith", "okay"}, "errors": [...], "end_time"}``. nccl-tests
  writes ``"nan"`` for a NaN and spells the footer keys so.
- JSON lines (rccl-tests ``--output_format json``, ROCm/rccl-tests PR #93, 2024-10; the source
  is not in our mirror: the PR's sample and the real captures): one object per line and half,
  ``{"#wrong": "0", "algBw", "busBw", "gpus": 4, "inPlace": 0|1, "name": "AllReduce", "redop",
  "size", "time", "type"}`` (earlier forks: ``"wrong"``, ``"ranks"``).
- the ``--json`` of an unmerged nccl-tests fork (NVIDIA/nccl-tests PR #318, 2025-06; grammar
  from the PR's sample output): the text log's preamble (command line, MPI warnings, ``NCCL
  version ...``) then one object ``{"identifier": "nccl-tests structured output", "version":
  "2.26.6", "benchmark": [{"<size>": {"count", "type", "redop", "root", "oop_time", "oop_algbw",
  "oop_busbw", "oop_error", "ip_time", "ip_algbw", "ip_busbw", "ip_error"}}, ...]}``.

A document without its footer (``end_time`` or the average) was cut short; a document that
does not close keeps every whole value printed before the cut (:mod:`sncheck.vendors.jsonprefix`)
and says it was cut; a ``nwrong`` that is not a whole non-negative number, or a NaN bandwidth,
is an error.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sncheck.vendors import jsonprefix

_BINARY = re.compile(r"(?<![A-Za-z0-9])(all_reduce|all_gather|alltoallv?|reduce_scatter|sendrecv|broadcast|"
                     r"reduce|gather|scatter|hypercube)_perf(?:_mpi)?(?![A-Za-z0-9])")


_FORK = re.compile(r'^\{"identifier": "nccl-tests structured output"', re.MULTILINE)


def load(text: str) -> Any | None:
    """The JSON document (or list of JSON lines) ``text`` holds, or None when it is a text log.
    A document cut short is returned as ``{"_cut": text}`` (nothing whole in it) or as
    ``{"_partial": value}`` (the whole values before the cut) so the parser can say so; one
    that gives a key twice in an object (:class:`jsonprefix.KeyGivenTwice`: two outputs
    spliced) as ``{"_refused": why}``, a JSON line that does as ``{"_refused": why}`` among the
    lines. The fork's document may follow a text preamble: ``{"_preamble": lines, "_doc": ...}``."""
    body = text.strip()
    if not body.startswith("{") and (fork := _FORK.search(body)):
        return {"_preamble": body[: fork.start()], "_doc": load(body[fork.start():])}
    if not body.startswith("{"):  # a text log may start with "[1,0]<stdout>:"
        return None
    twice = None
    try:
        return jsonprefix.loads(body)
    except (json.JSONDecodeError, RecursionError):
        pass
    except (jsonprefix.KeyGivenTwice, jsonprefix.NotFinite) as e:  # the document, or the first of JSON lines
        twice = str(e)
    if "\n" not in body.strip() or body.lstrip("{").lstrip().startswith('"') and body.count("\n{") == 0:
        if twice:
            return {"_refused": twice}
        try:  # one document over several lines (or one line), cut: what it printed before the cut
            value, _ = jsonprefix.load(body)
            if isinstance(value, dict) and value:
                return {"_partial": value}
        except (jsonprefix.KeyGivenTwice, jsonprefix.NotFinite) as e:  # (in what it printed before the cut)
            return {"_refused": str(e)}
        except ValueError:
            pass
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    rows = []
    for ln in lines:
        try:
            rows.append(jsonprefix.loads(ln))
        except (json.JSONDecodeError, RecursionError):
            rows.append({"_cut": ln})
        except (jsonprefix.KeyGivenTwice, jsonprefix.NotFinite) as e:
            rows.append({"_refused": str(e)})
    if rows and all(isinstance(r, dict) for r in rows) and any("_cut" not in r for r in rows):
        return rows
    return {"_refused": twice} if twice else {"_cut": body}


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
    if isinstance(doc, dict) and "_preamble" in doc:  # the fork: a text preamble, then its document
        out = parse(doc["_doc"], hint, tool)
        out["errors"] = [e for e in out["errors"] if "no footer" not in e]  # the fork prints none we know
        if m := _BINARY.search(doc["_preamble"]):
            out["collective"] = out["collective"] or m.group(1)
        return out
    if isinstance(doc, dict) and "_partial" in doc:
        out = parse(doc["_partial"], hint, tool)
        while out["rows"] and any(h.get("busbw_GBps") is None for h in (out["rows"][-1]["out_of_place"],
                                                                          out["rows"][-1]["in_place"])):
            out["rows"].pop()  # the record the cut went through: its values are not whole
        out["errors"] = ["the JSON document is cut short (it does not close): the values before the cut are kept"] \
            + [e for e in out["errors"] if "no footer" not in e]
        return out
    if isinstance(doc, dict) and "benchmark" in doc:
        return _parse_fork(doc, hint, tool)
    if isinstance(doc, dict) and "_refused" in doc:
        return {"tool": tool, "format": "json", "collective": hint, "ranks": None, "rows": [],
                "avg_busbw_GBps": None, "out_of_bounds": None,
                "errors": [f"not one JSON document: {doc['_refused']}"]}
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


def _parse_fork(doc: dict[str, Any], hint: str | None, tool: str) -> dict[str, Any]:
    """PR #318's document: one row per size, its halves as oop_* and ip_* keys."""
    errors: list[str] = []
    rows = []
    bench = doc.get("benchmark")
    for entry in bench if isinstance(bench, list) else []:
        for size, r in (entry.items() if isinstance(entry, dict) else []):
            if not isinstance(r, dict) or not str(size).isdecimal():
                continue
            halves = []
            for pre in ("oop", "ip"):
                half = _half({k[len(pre) + 1:]: v for k, v in r.items() if k.startswith(pre + "_")}, errors,
                             f"size {size} {pre}", keys=("time", "algbw", "busbw", "_none"))
                raw = r.get(f"{pre}_error")
                half["max_error"] = _number(raw) if raw not in (None, "N/A") else None
                halves.append(half)
            root = str(r.get("root", "")).strip()
            rows.append({"size_bytes": int(size), "count": r.get("count"), "type": r.get("type"),
                         "redop": r.get("redop"), "root": int(root) if re.fullmatch(r"-?\d+", root) else None,
                         "out_of_place": halves[0], "in_place": halves[1]})
    return {"tool": tool, "format": "json-fork", "version": doc.get("version"), "collective": hint, "ranks": None,
            "rows": rows, "avg_busbw_GBps": None, "out_of_bounds": None, "errors": errors}


def _parse_lines(records: list[dict[str, Any]], hint: str | None, tool: str) -> dict[str, Any]:
    errors: list[str] = []
    by_size: dict[str, dict[str, Any]] = {}
    names, ranks = set(), None
    for i, r in enumerate(records):
        if "_cut" in r:
            errors.append(f"line {i + 1}: not a whole JSON record (cut short): {r['_cut'][:60]!r}")
            continue
        if "_refused" in r:
            errors.append(jsonprefix.refused(f"line {i + 1}", r["_refused"]))
            continue
        where = f"record {i + 1} (size {r.get('size')})"
        names.add(str(r.get("name", "")))
        ranks = r.get("ranks", r.get("gpus", ranks))
        key = json.dumps([r.get("size"), r.get("type"), r.get("redop"), r.get("numCycle")], default=str)
        row = by_size.setdefault(key, {"size_bytes": r.get("size"), "count": r.get("count"),
                                       "type": r.get("type"), "redop": r.get("redop"), "root": r.get("root"),
                                       "out_of_place": _half(None, [], ""), "in_place": _half(None, [], "")})
        half = _half(r, errors, where, keys=("time", "algBw", "busBw", "#wrong" if "#wrong" in r else "wrong"))
        row["in_place" if r.get("inPlace") in (1, True, "1") else "out_of_place"] = half
    halves = [(r["out_of_place"]["busbw_GBps"] is not None, r["in_place"]["busbw_GBps"] is not None)
              for r in by_size.values()]
    if len(set(halves)) > 1 and halves[-1] != max(set(halves), key=halves.count):
        errors.append("the last size has one half of the two every other size has: cut short")
    m = next((_BINARY.search(n) for n in sorted(names) if _BINARY.search(n)), None)
    name = m.group(1) if m else next((re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower() for n in sorted(names) if n), None)
    return {"tool": tool, "format": "json-lines", "name": next((n for n in sorted(names) if n), None),
            "collective": name or hint,
            "ranks": ranks if isinstance(ranks, int) else None, "rows": list(by_size.values()),
            "avg_busbw_GBps": None, "out_of_bounds": None, "errors": errors}
