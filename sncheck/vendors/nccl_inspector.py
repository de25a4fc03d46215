"""NCCL Inspector plug-in output: one reader for ``sncheck watch`` and the ``nccl-inspector``
parse view.

Grammar (NVIDIA/nccl ``plugins/profiler/inspector/inspector_json.cc`` and ``README.md`` at
5067397, output format ``v4.0``; ``ext-profiler/inspector`` before the move, NCCL 2.27-2.30):
a stream of JSON objects (one per completed operation per rank, one object per line or
pretty-printed), each ``{"header": {...}, "metadata": {...}, "coll_perf" | "p2p_perf": {...}}``:

- ``header``: ``id`` (the communicator's hash, ``"0x..."``), ``comm_name`` (v4.0+),
  ``rank``, ``n_ranks``, ``nnodes``;
- ``metadata``: ``inspector_output_format_version`` (``v4.0``), ``git_rev``,
  ``rec_mechanism`` (``nccl_profiler_interface``), ``dump_timestamp_us``, ``hostname``, ``pid``;
- ``coll_perf``: ``coll`` (``AllReduce``, ``AllGather``, ``ReduceScatter``, ``Broadcast``,
  ``Reduce``...), ``coll_sn``, ``coll_msg_size_bytes``, ``coll_exec_time_us``,
  ``coll_timing_source`` (``kernel_gpu``, ``kernel_cpu``, ``collective_cpu``),
  ``coll_algobw_gbs``, ``coll_busbw_gbs`` (GB/s), from format ``v4.2`` ``coll_algo`` and
  ``coll_proto`` (the algorithm and protocol NCCL ran it with: ``RING``, ``LL``), and in verbose
  mode ``event_trace_sn`` / ``event_trace_ts`` with per-channel ``kernel_events``;
- ``p2p_perf`` (point-to-point, newer plug-ins): ``p2p`` (``Send``/``Recv``), ``p2p_sn``,
  ``p2p_peer``, ``p2p_msg_size_bytes``, ``p2p_exec_time_us``, ``p2p_timing_source``,
  ``p2p_algobw_gbs``, ``p2p_busbw_gbs``.

One record per rank and operation: a rank outside ``0..n_ranks-1``, a negative ``sn``, size or
time, a communicator given two sizes and one rank's operation twice with other values (two dumps
spliced) are errors (exit 1). No end marker: the log grows all job long. A stream whose last object does not close is
cut short (an error, exit 1); what it holds before is read. Inspector reports performance,
not failures: a whole stream exits 0 (``sncheck watch`` judges the bandwidth).

View JSON: ``{"tool": "nccl-inspector", "format_version": "v4.0", "records": [{"comm",
"comm_name", "rank", "n_ranks", "nnodes", "host", "pid", "kind": "coll"|"p2p", "op", "sn",
"peer", "size_bytes", "exec_time_us", "timing_source", "algbw_GBps", "busbw_GBps", "algo", "proto"}],
"communicators": N, "ranks": N, "faults": [], "errors": [...]}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import jsonprefix

TOOL = "nccl-inspector"
PERF_KEYS = ("coll_perf", "p2p_perf")


@dataclass(frozen=True)
class Tail:
    """Why the rest of a stream was not read (``why`` "" when all of it was): ``refused``, a
    record giving a key twice (:func:`jsonprefix.refused` words it), else the stream cut short."""

    why: str = ""
    refused: bool = False


def json_stream(text: str, decoder: json.JSONDecoder | None = None) -> tuple[list[Any], Tail]:
    """Every JSON document in ``text`` (one, or a stream as Inspector writes), and why
    the rest could not be read (:class:`Tail`). ``decoder``: the watcher's, which
    refuses NaN and Infinity; by default :data:`jsonprefix.DECODER`, which refuses an object
    giving a key twice (no Inspector writes one: two records spliced, or an edited one)."""
    dec = decoder or jsonprefix.DECODER
    out: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            break
        if text[i] not in "{[":  # records are objects: a stream of bare numbers is not Inspector's
            line = text.count("\n", 0, i) + 1
            return out, Tail(f"line {line}: not a JSON object")
        try:
            obj, i = dec.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError) as e:
            return out, Tail(f"line {e.lineno}: {e.msg}" if isinstance(e, json.JSONDecodeError) else "nested too deep")
        except jsonprefix.KeyGivenTwice as e:
            return out, Tail(jsonprefix.refused(f"line {text.count(chr(10), 0, i) + 1}", e), refused=True)
        try:
            out.append(jsonprefix.all_finite(obj))
        except jsonprefix.NotFinite as e:  # 1e999 or NaN: no measurement (whichever decoder read it)
            return out, Tail(f"the record ending on line {text.count(chr(10), 0, i) + 1}: {e}", refused=True)
    return out, Tail()


def unread(tail: Tail, records: int) -> str:
    """Why a stream was read only to its first ``records`` records (``tail``, from :func:`json_stream`):
    a record refused (a key given twice) is said as that, anything else is the stream cut short."""
    return f"{tail.why} (after {records} records)" if tail.refused else f"cut short after {records} records ({tail.why})"


def is_record(obj: Any) -> bool:
    """Whether ``obj`` is one Inspector record (a header and a collective or p2p perf)."""
    return isinstance(obj, dict) and "header" in obj and any(k in obj for k in PERF_KEYS)


def _num(v: Any) -> Any:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def record(obj: dict[str, Any]) -> dict[str, Any] | None:
    """One record's values under the view's names; None for an object without a perf part."""
    h: dict[str, Any] = obj["header"] if isinstance(obj.get("header"), dict) else {}
    m: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    kind = "coll" if isinstance(obj.get("coll_perf"), dict) else "p2p"
    p = obj.get(f"{kind}_perf")
    if not isinstance(p, dict):
        return None
    return {"comm": None if h.get("id") is None else str(h.get("id")), "comm_name": h.get("comm_name"),
            "rank": _num(h.get("rank")), "n_ranks": _num(h.get("n_ranks")), "nnodes": _num(h.get("nnodes")),
            "host": m.get("hostname"), "pid": _num(m.get("pid")), "format_version": m.get("inspector_output_format_version"),
            "kind": kind, "op": None if p.get(kind) is None else str(p.get(kind)), "sn": _num(p.get(f"{kind}_sn")),
            "peer": _num(p.get("p2p_peer")), "size_bytes": _num(p.get(f"{kind}_msg_size_bytes")),
            "exec_time_us": _num(p.get(f"{kind}_exec_time_us")), "timing_source": p.get(f"{kind}_timing_source"),
            "algbw_GBps": _num(p.get(f"{kind}_algobw_gbs")), "busbw_GBps": _num(p.get(f"{kind}_busbw_gbs")),
            # v4.2 on: the algorithm and protocol of the operation (null before, as the record lacks them)
            "algo": p.get(f"{kind}_algo"), "proto": p.get(f"{kind}_proto")}


def rows(objects: list[Any], dump: str) -> list[dict[str, Any]]:
    """The bus-bandwidth rows ``sncheck watch`` judges: one per collective record."""
    out = []
    for o in objects:
        r = record(o) if isinstance(o, dict) else None
        if r is None or r["kind"] != "coll" or r["busbw_GBps"] is None:
            continue
        out.append({"comm": str(r["comm"]), "source": "nccl_inspector", "collective": str(r["op"]),
                    "size_bytes": r["size_bytes"], "busbw_GBps": r["busbw_GBps"], "rank": r["rank"],
                    "n_ranks": r["n_ranks"], "host": r["host"], "device": None, "dump": dump})
    return out


def _contradictions(records: list[dict[str, Any]]) -> list[str]:
    """What no Inspector writes (inspector_json.cc): a rank outside its communicator's 0..n_ranks-1, a
    negative sequence number or size, one communicator of two sizes, and one rank's operation (its
    sequence number) twice with other values: two dumps spliced or a record edited (the same record
    again is a dump repeated). Each is said, never read as a pass."""
    out: list[str] = []
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    sizes: dict[Any, Any] = {}
    for i, r in enumerate(records, 1):
        rank, n, sn = r["rank"], r["n_ranks"], r["sn"]
        if isinstance(rank, (int, float)) and isinstance(n, (int, float)) and not 0 <= rank < n:
            out.append(f"record {i}: rank {rank} of a communicator of {n} ranks")
        for name in ("sn", "size_bytes", "exec_time_us"):
            if isinstance(r[name], (int, float)) and r[name] < 0:
                out.append(f"record {i}: {name} {r[name]} is negative")
        if sizes.setdefault(r["comm"], n) != n:
            out.append(f"record {i}: communicator {r['comm']} of {n} ranks, {sizes[r['comm']]} in an earlier record")
        key = (r["comm"], rank, r["kind"], sn)
        if sn is not None and seen.setdefault(key, r) != r:  # the same record again is a repeated dump, no lie
            out.append(f"record {i}: rank {rank}'s {r['kind']} {sn} of communicator {r['comm']} is listed twice "
                       "with other values: dumps spliced or edited")
    return out[:20]


def no_bandwidth(records: list[dict[str, Any]]) -> str | None:
    """What to say of records whose perf part gives no bus bandwidth (``coll_busbw_gbs`` /
    ``p2p_busbw_gbs``), the one value the watcher judges: a format that renamed it (a ``v5``
    writing ``busbw_GBps``) read as nothing measured, and ``watch`` passed (hostile round 17)."""
    blank = [i for i, r in enumerate(records, 1) if r["busbw_GBps"] is None]
    if not blank:
        return None
    versions = ", ".join(sorted({str(records[i - 1]["format_version"]) for i in blank}))
    kind = records[blank[0] - 1]["kind"]
    return (f"{len(blank)} of {len(records)} records give no bus bandwidth ({kind}_busbw_gbs; first: record "
            f"{blank[0]}, format version {versions}): not measured")


def parse_inspector(text: str) -> dict[str, Any]:
    """An Inspector JSON log (see the module)."""
    objects, tail = json_stream(text.strip())
    if not objects or not any(is_record(o) for o in objects):
        raise ParseError("no NCCL Inspector record (a JSON object with header and coll_perf / p2p_perf)"
                         + (f" ({tail.why})" if tail.why else ""), tool=TOOL)
    records = [r for o in objects if is_record(o) and (r := record(o)) is not None]
    errors = [unread(tail, len(records))] if tail.why else []
    others = sum(1 for o in objects if not is_record(o))
    if others:
        errors.append(f"{others} JSON objects that are not Inspector records")
    errors += _contradictions(records)
    if blank := no_bandwidth(records):
        errors.append(blank)
    versions = [r["format_version"] for r in records if r["format_version"]]
    return {"tool": TOOL, "format_version": versions[0] if versions else None, "records": records,
            "communicators": len({r["comm"] for r in records}), "ranks": len({(r["comm"], r["rank"]) for r in records}),
            "faults": [], "errors": errors}
