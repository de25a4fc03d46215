"""The measurement row schema that every backend emits.

Rows are plain JSON-able dicts, appended to ``rows.jsonl`` as they arrive and
gathered into pandas DataFrames for the detectors. The same detectors run on mock,
local and SSH rows, so every backend must keep to these shapes. Fields that a backend
cannot measure are ``None``, never a guess.

kind = "p2p"         (connectivity) one card pair in one round
    round, link, src, dst, tier, bytes,
    bw_GBps      unidirectional src->dst bandwidth, large message
    bw_rev_GBps  unidirectional dst->src bandwidth
    bibw_GBps    both directions at once (sum)
    lat_us       one-way latency: half the median ping-pong round trip, small message
    checksum_ok  the payload arrived intact (None when not checked)
    status       "ok" | "error" | "timeout" | "unreachable"
    error        message or None

kind = "host_fact"   (connectivity) one fact about one host
    host, fact, value, expected, ok, status ("ok" | "unreachable" | "missing_tool" |
    "parse_failed" | "timeout" | "error"), message, tool; optional severity "warning" on a
    failed fact that is a warning, not critical (NVL72 fabric bandwidth Limited Capacity)

kind = "collective"  (stress) one group x collective x size x repeat
    group, group_kind, ranks, collective, size_bytes, count, dtype, repeat,
    time_us (mean per timed op, slowest rank), algbw_GBps, busbw_GBps (nccl-tests
    formulas), wrong (elements that failed validation, summed over ranks), status

kind = "rank"        (stress) one rank of one collective row
    group, collective, size_bytes, repeat, card,
    skew_us (op start minus the earliest start in the group, mean over iterations),
    op_us (this rank's own start-to-end; a slow rank arrives last and waits least),
    wrong

kind = "golden"      (golden) one training step
    group, stage ("group" | "solo"), step, loss, step_time_s, comm_s, comm_share

kind = "calibration" measured design values of a tier (local backend)
    tier, bandwidth_GBps, latency_us

Rows of a confirmation retest carry ``layer: "confirm"`` and ``confirms``: the entity
under retest (see :mod:`sncheck.layers.confirm`).

kind = "not_run"     something that should have been measured and was not
    layer, entity, entity_kind, status ("unreachable" | "not_run" | "timeout" |
    "parse_failed" | "error"), message
"""

from __future__ import annotations

BUSBW_FACTOR = {
    # nccl-tests doc/PERFORMANCE.md
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


def algbw_GBps(size_bytes: int, time_us: float) -> float:
    """nccl-tests algbw: S / t, with S the per-rank buffer size in bytes, in GB/s.

    For all-reduce the printed ``size`` is count x typesize; for all-to-all nccl-tests
    prints the total buffer (count x typesize x n) as ``size``, so in both cases the
    algbw is the printed size over the time.
    """
    if time_us <= 0:
        return 0.0
    return size_bytes / (time_us * 1e-6) / 1e9


def busbw_GBps(collective: str, size_bytes: int, time_us: float, ranks: int) -> float:
    return algbw_GBps(size_bytes, time_us) * BUSBW_FACTOR[collective](ranks)


def p2p_row(round_: int, src: str, dst: str, link: str, tier: str, nbytes: int, *,
            bw: float | None = None, bw_rev: float | None = None, bibw: float | None = None,
            lat: float | None = None, checksum_ok: bool | None = None,
            status: str = "ok", error: str | None = None,
            lat_p99: float | None = None, lat_max: float | None = None) -> dict:
    """A ``p2p`` row; latencies are one way (half the ping-pong round trip): the median,
    the 99th percentile and the largest of the pair's samples."""
    return {"kind": "p2p", "layer": "connectivity", "round": round_, "link": link, "src": src,
            "dst": dst, "tier": tier, "bytes": nbytes, "bw_GBps": bw, "bw_rev_GBps": bw_rev,
            "bibw_GBps": bibw, "lat_us": lat, "lat_p99_us": lat_p99, "lat_max_us": lat_max,
            "checksum_ok": checksum_ok, "status": status, "error": error}


def host_fact_row(host: str, fact: str, value, expected, ok: bool, *, status: str = "ok",
                  message: str = "", tool: str | None = None, severity: str | None = None) -> dict:
    row = {"kind": "host_fact", "layer": "connectivity", "host": host, "fact": fact,
           "value": value, "expected": expected, "ok": ok, "status": status,
           "message": message, "tool": tool}
    if severity is not None:
        row["severity"] = severity  # "warning": a failed fact judged by the host-fact-warning rule
    return row


def not_run_row(layer: str, entity: str, entity_kind: str, status: str, message: str) -> dict:
    return {"kind": "not_run", "layer": layer, "entity": entity, "entity_kind": entity_kind,
            "status": status, "message": message}


def collective_row(group: str, group_kind: str | None, ranks: int, collective: str, size_bytes: int,
                   count: int | None, dtype: str | None, repeat: int, *, time_us: float | None,
                   wrong: int | None, status: str = "ok", algbw: float | None = None,
                   busbw: float | None = None, **extra) -> dict:
    """A ``collective`` row; algbw and busbw follow from the time unless a tool printed them."""
    if time_us is not None and algbw is None:
        algbw = algbw_GBps(size_bytes, time_us)
        busbw = busbw_GBps(collective, size_bytes, time_us, ranks)
    return {"kind": "collective", "layer": "stress", "group": group, "group_kind": group_kind,
            "ranks": ranks, "collective": collective, "size_bytes": size_bytes, "count": count,
            "dtype": dtype, "repeat": repeat, "time_us": time_us, "algbw_GBps": algbw,
            "busbw_GBps": busbw, "wrong": wrong, "status": status, **extra}


def rank_row(group: str, collective: str, size_bytes: int, repeat: int, card: str, *,
             skew_us: float, op_us: float, wrong: int | None) -> dict:
    return {"kind": "rank", "layer": "stress", "group": group, "collective": collective,
            "size_bytes": size_bytes, "repeat": repeat, "card": card, "skew_us": skew_us,
            "op_us": op_us, "wrong": wrong}


def golden_row(group: str, stage: str, step: int, loss: float, step_time_s: float, comm_s: float) -> dict:
    return {"kind": "golden", "layer": "golden", "group": group, "stage": stage, "step": step,
            "loss": loss, "step_time_s": step_time_s, "comm_s": comm_s,
            "comm_share": comm_s / step_time_s if step_time_s > 0 else None}
