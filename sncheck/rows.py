"""The measurement row schema that every backend emits.

Backends emit rows in batches (a round, a collective sweep, a host's facts) through a
:class:`RowSink`; the run store keeps them as columns, one table per kind (see
:data:`SCHEMA` and :mod:`sncheck.store.frames`), writes each batch to disk as it arrives and
hands the detectors pandas frames. A single row is a plain JSON-able dict (the
constructors below), and ``sink(row)`` still takes one. The same detectors run on mock,
local and SSH rows, so every backend must keep to these shapes. Fields that a backend
cannot measure are ``None``, never a guess.

kind = "p2p"         (connectivity) one card pair in one round
    round, link, src, dst, tier, bytes,
    bw_GBps      unidirectional src->dst bandwidth, large message
    bw_rev_GBps  unidirectional dst->src bandwidth
    bibw_GBps    both directions at once (sum)
    lat_us       one-way latency: half the median ping-pong round trip, small message
    lat_p99_us   the 99th percentile of the same ping-pongs (None where not measured)
    checksum_ok  the payload arrived intact (None when not checked)
    status       "ok" | "error" | "timeout" | "unreachable"
    error        message or None

kind = "host_fact"   (connectivity) one fact about one host
    host, fact, value, expected, ok, status ("ok" | "unreachable" | "missing_tool" |
    "parse_failed" | "timeout" | "error"), message, tool; optional severity "warning" on a
    failed fact that is a warning, not critical (NVL72 fabric bandwidth Limited Capacity);
    optional entity, entity_kind: a fact about a host pair names its link (a perftest
    pair on rail k: ``entity`` the rail-aligned card pair, ``entity_kind`` "link"), and
    ``host`` is the end that measured it; optional cards (JSON, on a failed fact whose
    tool names the cards at fault): card index -> what is wrong on that card; absent when
    the tool does not say which card (a host finding; rows since the host-fact judgement
    name each device in ``entity``/``entity_kind`` instead); optional ids (JSON): the
    devices a listing fact read (GPU UUIDs, serials or bus ids, in order), which a retest
    must read again (sncheck.vendors.hostjudge)

kind = "collective"  (stress) one group x collective x size x repeat
    group, group_kind, ranks, collective, size_bytes, count, dtype, repeat,
    time_us (mean per timed op, slowest rank), algbw_GBps, busbw_GBps (nccl-tests
    formulas), wrong (elements that failed validation, summed over ranks), status,
    max_error (older nccl-tests layouts print the maximum error instead of a count)

kind = "rank"        (stress) one rank of one collective row
    group, collective, size_bytes, repeat, card,
    skew_us (op start minus the earliest start in the group, mean over iterations),
    op_us (this rank's own start-to-end; a slow rank arrives last and waits least),
    wrong

kind = "golden"      (golden) one training step
    group, stage ("group" | "solo"), step, loss, step_time_s, comm_s, comm_share,
    comm_min_s   the least of the members' times in the gradient all-reduce: the member
                 that arrived last waits for nobody, so its time is the transfer alone
                 (None where not measured: a solo run, the mock)

kind = "calibration" measured design values of a tier (local backend)
    tier, bandwidth_GBps, latency_us

Rows of a confirmation retest carry ``layer: "confirm"`` and ``confirms``: the entity
under retest (see :mod:`sncheck.run.confirm`); a link retested again after its release was
withdrawn, ``<link> (retest N)`` (:func:`sncheck.run.retestbar.retest_tag`).

kind = "not_run"     something that should have been measured and was not
    layer, entity, entity_kind, status ("unreachable" | "not_run" | "timeout" |
    "parse_failed" | "error"), message
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Protocol, cast

BUSBW_FACTOR = {
    # nccl-tests doc/PERFORMANCE.md
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda _: 1.0,
    "reduce": lambda _: 1.0,
    "sendrecv": lambda _: 1.0,
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


def p2p_row(round_: int, src: str, dst: str, link: str, tier: str | None, nbytes: int, *,
            bw: float | None = None, bw_rev: float | None = None, bibw: float | None = None,
            lat: float | None = None, checksum_ok: bool | None = None,
            status: str = "ok", error: str | None = None,
            lat_p99: float | None = None, lat_max: float | None = None) -> dict:
    """A ``p2p`` row; latencies are one way (half the ping-pong round trip): the median,
    the 99th percentile and the largest of the pair's samples. ``tier`` is None where the
    job names no supernode for a host of the pair."""
    return {"kind": "p2p", "layer": "connectivity", "round": round_, "link": link, "src": src,
            "dst": dst, "tier": tier, "bytes": nbytes, "bw_GBps": bw, "bw_rev_GBps": bw_rev,
            "bibw_GBps": bibw, "lat_us": lat, "lat_p99_us": lat_p99, "lat_max_us": lat_max,
            "checksum_ok": checksum_ok, "status": status, "error": error}


MAX_MESSAGE = 4000  # characters of a fact's message: a tool's 2 MB line quoted whole filled every report


def bounded(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` cut to ``limit`` characters, saying how long it was (hostile round 10: a
    listing with a 2,000,000-character line made a finding whose message held it all, copied
    into results.json, the report and the terminal)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... (cut: {len(message):,} characters in all)"


def host_fact_row(host: str, fact: str, value, expected, ok: bool, *, status: str = "ok",
                  message: str = "", tool: str | None = None, severity: str | None = None,
                  cards: dict[str, str] | None = None) -> dict:
    row = {"kind": "host_fact", "layer": "connectivity", "host": host, "fact": fact,
           "value": value, "expected": expected, "ok": ok, "status": status,
           "message": bounded(message), "tool": tool}
    if severity is not None:
        row["severity"] = severity  # "warning": a failed fact judged by the host-fact-warning rule
    if cards:
        row["cards"] = cards  # card index (as text) -> what is wrong there: the tool named the cards
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


def golden_row(group: str, stage: str, step: int, loss: float, step_time_s: float, comm_s: float,
               comm_min_s: float | None = None) -> dict:
    return {"kind": "golden", "layer": "golden", "group": group, "stage": stage, "step": step,
            "loss": loss, "step_time_s": step_time_s, "comm_s": comm_s,
            "comm_share": comm_s / step_time_s if step_time_s > 0 else None, "comm_min_s": comm_min_s}


# --------------------------------------------------------------------------- schema

# Column types: "id" a repeated name (card, link, group, status...), kept dictionary-
# encoded (pandas: categorical); "text" free text; "json" any JSON value, stored as its
# JSON text; "int", "float", "bool". Every kind also has the COMMON columns.
# A p2p link is "text": each pair appears once per plan, so a dictionary of links would be
# as long as the column (and a categorical of millions of categories costs seconds to build).
COMMON: tuple[tuple[str, str], ...] = (
    ("kind", "id"), ("layer", "id"),
    ("confirms", "id"),  # the entity a confirmation retest row is about (layer "confirm")
    ("run_id", "id"),
)
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "p2p": (("round", "int"), ("link", "text"), ("src", "id"), ("dst", "id"), ("tier", "id"),
            ("bytes", "int"), ("bw_GBps", "float"), ("bw_rev_GBps", "float"), ("bibw_GBps", "float"),
            ("lat_us", "float"), ("lat_p99_us", "float"), ("lat_max_us", "float"), ("checksum_ok", "bool"), ("status", "id"),
            ("error", "text")),
    "host_fact": (("host", "id"), ("fact", "id"), ("value", "json"), ("expected", "json"), ("ok", "bool"),
                  ("status", "id"), ("message", "text"), ("tool", "id"), ("entity", "id"), ("entity_kind", "id"),
                  ("cards", "json"), ("ids", "json"),
                  ("skipped", "json")),  # the tests the tool skipped (dcgmi): not measured unless the rules allow
    "collective": (("group", "id"), ("group_kind", "id"), ("ranks", "int"), ("collective", "id"),
                   ("size_bytes", "int"), ("count", "int"), ("dtype", "id"), ("repeat", "int"),
                   ("time_us", "float"), ("algbw_GBps", "float"), ("busbw_GBps", "float"), ("wrong", "int"),
                   ("max_error", "float"), ("status", "id"), ("time_in_place_us", "float"),
                   ("algbw_in_place_GBps", "float"), ("busbw_in_place_GBps", "float")),
    "rank": (("group", "id"), ("collective", "id"), ("size_bytes", "int"), ("repeat", "int"), ("card", "id"),
             ("skew_us", "float"), ("op_us", "float"), ("wrong", "int")),
    "golden": (("group", "id"), ("stage", "id"), ("step", "int"), ("loss", "float"), ("step_time_s", "float"),
               ("comm_s", "float"), ("comm_share", "float"), ("comm_min_s", "float")),
    "calibration": (("tier", "id"), ("bandwidth_GBps", "float"), ("latency_us", "float")),
    "not_run": (("entity", "id"), ("entity_kind", "id"), ("status", "id"), ("message", "text")),
}
KIND_LAYER = {"p2p": "connectivity", "host_fact": "connectivity", "calibration": "connectivity",
              "collective": "stress", "rank": "stress", "golden": "golden"}


def columns_of(kind: str) -> tuple[tuple[str, str], ...]:
    """The declared columns of a row kind, common ones first. A row may carry more
    (kept, typed by their values); declare them here so that every part has them."""
    return COMMON + SCHEMA.get(kind, ())


# --------------------------------------------------------------------------- sinks

Columns = Mapping[str, Any]  # column -> sequence (numpy array, list, pandas Categorical) or scalar


class RowSink(Protocol):
    """Where a backend sends its rows. ``sink(row)`` takes one row; ``sink.batch(kind,
    columns, **constants)`` a whole batch as columns (scalars are broadcast);
    ``sink.tagged(**constants)`` a sink that sets those fields on every row."""

    def __call__(self, row: dict) -> None: ...

    def batch(self, kind: str, columns: Columns, **constants: Any) -> None: ...

    def tagged(self, **constants: Any) -> "RowSink": ...


def batch_length(columns: Columns) -> int:
    for v in columns.values():
        if not _is_scalar(v):
            return len(v)
    return 1


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bytes, int, float, bool)) or getattr(v, "ndim", 1) == 0


def batch_to_dicts(kind: str, columns: Columns, **constants: Any) -> list[dict]:
    """A batch as row dicts (for sinks that take rows one by one, and for tests)."""
    n = batch_length(columns)
    cols = {k: _values(v, n) for k, v in columns.items()}
    base = {"kind": kind, "layer": KIND_LAYER.get(kind)}
    out = []
    for i in range(n):
        row = dict(base)
        for k, vs in cols.items():
            row[k] = vs[i]
        row.update(constants)
        out.append(row)
    return out


def _values(v: Any, n: int) -> list:
    """A column as a list of plain Python values (NaN as None, as a row would have it)."""
    if _is_scalar(v):
        v = v.item() if hasattr(v, "item") else v
        return [v] * n
    if hasattr(v, "to_pylist"):  # Arrow
        return v.to_pylist()
    values = v.tolist() if hasattr(v, "tolist") else list(v)
    return [None if isinstance(x, float) and x != x else x for x in values]


class CallableSink:
    """A plain ``emit(row)`` callable (a list's ``append`` in tests) used as a sink."""

    def __init__(self, emit: Callable[[dict], None], **constants: Any) -> None:
        self._emit, self._constants = emit, constants

    def __call__(self, row: dict) -> None:
        self._emit({**row, **self._constants} if self._constants else row)

    def batch(self, kind: str, columns: Columns, **constants: Any) -> None:
        for row in batch_to_dicts(kind, columns, **{**constants, **self._constants}):
            self._emit(row)

    def tagged(self, **constants: Any) -> "CallableSink":
        return CallableSink(self._emit, **{**self._constants, **constants})


def as_sink(emit: Callable[[dict], None] | RowSink) -> RowSink:
    """``emit`` as a :class:`RowSink` (a run store's sink is one already)."""
    return cast(RowSink, emit) if hasattr(emit, "batch") else CallableSink(emit)


class JsonLines:
    """The rows a worker appends to a file, one JSON object a line, read in chunks as they
    arrive (a local file, or a remote one read back over SSH): :meth:`feed` takes the next
    bytes and returns each complete line, decoded; a line that is not a JSON object comes
    back as its text, for the backend to report ("parse_failed"), never dropped. A last line
    without its newline waits for the next chunk."""

    def __init__(self) -> None:
        self.partial = b""

    def feed(self, data: bytes) -> list[dict | str]:
        *complete, self.partial = (self.partial + data).split(b"\n")
        out: list[dict | str] = []
        for raw in complete:
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            out.append(row if isinstance(row, dict) else line)
        return out
