"""A running job's communication share, and per-collective bus bandwidth, from its Flight Recorder timings.

**The grammar** (PyTorch ``torch/csrc/distributed/c10d/FlightRecorder.hpp`` and
``FlightRecorderDetail.hpp``, dump version 2.x; both the JSON and the pickle dump write
the same keys), per entry:

* ``time_created_ns``: the host clock (``c10::getTime``, ns since the epoch) when the rank
  enqueued the op: its arrival;
* ``state``: ``scheduled``, ``started`` or ``completed``, from the two times below;
* ``time_discovered_started_ns`` / ``time_discovered_completed_ns``: the host time the
  watchdog first saw the op's start / end event fire, 0 when it did not (gloo records no
  events: always 0 there, and ``state`` stays ``scheduled``);
* ``duration_ms``: only where the backend timed the op with events (NCCL with
  ``TORCH_NCCL_ENABLE_TIMING=1``: CUDA events around the kernel); absent otherwise;
* ``input_sizes`` / ``output_sizes`` (one shape per tensor) and ``input_dtypes`` (torch's
  scalar type names: ``Float``, ``BFloat16``...).

**The share.** Per process group, over the collectives every member recorded, a rank's
window runs from its arrival at the first of them to its arrival at the last. Its time
inside collectives in that window is, where every member's entries carry ``duration_ms``,
the sum of its durations; otherwise (gloo, NCCL without timing) the time it waited in each
blocking collective for the last member to arrive (the last arrival less its own, after
each host's clock offset is judged out as the straggler rule judges it,
:func:`sncheck.health.injob.clock_offsets`). The transfer after the last arrival is not
recorded there: that share is a lower bound, and says so (``basis: arrival``). A rank in
several groups adds its groups' times over the span of its windows. The share is that
time over the window; the job's is the mean over its ranks (every rank lives the same
steps).

**Bus bandwidth** (timed entries with sizes): per group, collective and size, the median
duration; algbw = S / t with S sized as nccl-tests sizes it (the whole buffer: all-gather
its output, the others their input), busbw = algbw x the nccl-tests factor of the group's
size (:data:`sncheck.rows.BUSBW_FACTOR`).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from sncheck.rows import BUSBW_FACTOR
from sncheck.health.injob import clock_offsets

DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2, "Byte": 1,
               "Char": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16, "UInt16": 2, "UInt32": 4, "UInt64": 8}
# profiling names ("nccl:all_reduce", "gloo:all_reduce", "nccl:_allgather_base",
# "nccl:reduce_scatter_tensor_coalesced", "nccl:all_to_all", "nccl:broadcast") -> nccl-tests' name
_OPS = (("reduce_scatter", "reduce_scatter"), ("reducescatter", "reduce_scatter"), ("allreduce", "all_reduce"),
        ("all_reduce", "all_reduce"), ("allgather", "all_gather"), ("all_gather", "all_gather"),
        ("alltoall", "all_to_all"), ("all_to_all", "all_to_all"), ("broadcast", "broadcast"), ("reduce", "reduce"))


def entry_times(e: dict) -> dict:
    """The timing fields of one Flight Recorder entry, as numbers (None where absent or 0)."""
    dur = e.get("duration_ms")
    ok = isinstance(dur, (int, float)) and not isinstance(dur, bool) and math.isfinite(dur) and dur >= 0
    return {"duration_ms": float(dur) if ok and dur is not None else None,
            "started_ns": _ns(e.get("time_discovered_started_ns")),
            "completed_ns": _ns(e.get("time_discovered_completed_ns"))}


def _ns(v) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def op_name(profiling_name: str) -> str | None:
    """nccl-tests' name of a Flight Recorder op (``nccl:_allgather_base`` -> ``all_gather``)."""
    name = profiling_name.rsplit(":", 1)[-1].lower()
    return next((op for key, op in _OPS if key in name), None)


def comm_share(fr: pd.DataFrame) -> dict | None:
    """Each rank's and the job's communication share (None without collectives to judge)."""

    if fr is None or fr.empty or "created_ns" not in fr:
        return None
    per_rank: dict[int, dict] = {}
    for pg, g in fr.groupby("pg", sort=True, observed=True):
        t = g.pivot_table(index="seq", columns="rank", values="created_ns", aggfunc="min").dropna()
        if t.shape[1] < 2 or len(t) < 2:
            continue
        cards = g.drop_duplicates("rank").set_index("rank")
        hosts = [str(cards.loc[r, "host"]) if "host" in cards and pd.notna(cards.loc[r, "host"]) else "?"
                 for r in t.columns]
        arr = t.to_numpy(dtype=float)
        arr = arr - clock_offsets(arr, hosts)
        dur = None
        if "duration_ms" in g and g["duration_ms"].notna().any():
            d = g.pivot_table(index="seq", columns="rank", values="duration_ms", aggfunc="max")
            d = d.reindex(index=t.index, columns=t.columns)
            if d.notna().all().all():
                dur = d.to_numpy(dtype=float) * 1e6
        inside = dur[:-1] if dur is not None else (arr.max(axis=1, keepdims=True) - arr)[:-1]
        for j, rank in enumerate(t.columns):
            mine = per_rank.setdefault(int(rank), {"rank": int(rank), "card": str(cards.loc[rank, "card"]),
                                                   "mapped": bool(cards.loc[rank, "mapped"]), "inside_ns": 0.0,
                                                   "start": math.inf, "end": -math.inf, "collectives": 0,
                                                   "basis": set(), "groups": []})
            mine["inside_ns"] += float(inside[:, j].sum())
            mine["start"] = min(mine["start"], float(arr[0, j]))
            mine["end"] = max(mine["end"], float(arr[-1, j]))
            mine["collectives"] += len(t) - 1
            mine["basis"].add("duration" if dur is not None else "arrival")
            mine["groups"].append(str(pg))
    ranks = []
    for r in sorted(per_rank.values(), key=lambda x: x["rank"]):
        window = r["end"] - r["start"]
        if window <= 0:
            continue
        ranks.append({"rank": r["rank"], "card": r["card"], "mapped": r["mapped"],
                      "share": min(1.0, r["inside_ns"] / window), "inside_s": r["inside_ns"] / 1e9,
                      "window_s": window / 1e9, "collectives": r["collectives"],
                      "basis": "duration" if r["basis"] == {"duration"} else "arrival", "groups": r["groups"]})
    if not ranks:
        return None
    basis = "duration" if all(r["basis"] == "duration" for r in ranks) else "arrival"
    return {"job": float(np.mean([r["share"] for r in ranks])), "basis": basis,
            "lower_bound": basis == "arrival", "ranks": ranks, "busbw": busbw(fr)}


def busbw(fr: pd.DataFrame) -> list[dict]:
    """Per group, collective and size: the median timed duration and its bus bandwidth."""
    if "duration_ms" not in fr or not fr["duration_ms"].notna().any():
        return []
    timed = fr[fr["duration_ms"].notna() & (fr["duration_ms"] > 0)]
    members = fr.groupby("pg", observed=True)["rank"].nunique()
    out = []
    for (pg, op, sizes), g in timed.groupby(["pg", "op", "sizes"], observed=True):
        name, n = op_name(str(op)), int(members.get(pg, 0))
        size = _bytes(name, str(sizes))
        if name is None or size is None or n < 2:
            continue
        t = float(g["duration_ms"].median()) * 1e-3
        alg = size / t / 1e9
        out.append({"pg": str(pg), "collective": name, "size_bytes": size, "ranks": n, "time_ms": t * 1e3,
                    "algbw_GBps": alg, "busbw_GBps": alg * BUSBW_FACTOR[name](n) if name in BUSBW_FACTOR else None,
                    "samples": len(g)})
    return out


def _bytes(op: str | None, sizes: str) -> int | None:
    """S as nccl-tests sizes it, from the entry's [input_sizes, output_sizes, input_dtypes]."""
    try:
        ins, outs, dtypes = json.loads(sizes)
    except (ValueError, TypeError):
        return None
    shapes = outs if op == "all_gather" else ins
    if not isinstance(shapes, list) or not isinstance(dtypes, list) or not dtypes:
        return None
    width = DTYPE_BYTES.get(str(dtypes[0]))
    if width is None:
        return None
    total = 0
    for shape in shapes:
        if not isinstance(shape, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in shape):
            return None
        total += int(np.prod(shape, dtype=np.int64)) if shape else 1
    return total * width or None
