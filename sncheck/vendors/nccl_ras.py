"""NCCL RAS status (``ncclras``, NCCL 2.24+): the text report and the JSON one (2.28+).

The grammar is NCCL's own (src/ras/client_support.cc). The text report has a job summary,
a table of communicator groups with their status and errors, then two sections:

* ``Errors``: ``INCOMPLETE`` (job processes that sent no data: ``Process P on node N
  managing GPU G``), ``DEAD`` (processes unreachable over the RAS network), and per
  communicator ``#G-C (hash) INCOMPLETE`` (ranks missing: ``Rank R -- GPU G managed by
  process P on node N``) or ``ERROR`` (``Rank R reported E -- GPU ...``);
* ``Warnings``: ``TIMEOUT`` and per communicator ``#G-C (hash) MISMATCH``: ranks with a
  different status or different operation counts (``N ranks have launched up to
  operation K`` then the outlier ranks, or ``Rank R has launched up to operation K --
  GPU ...``).

RAS names at most 10 outliers (and none beyond a quarter of the communicator); the
ranks it does not name are not guessed. A rank line names the communicator rank, its
GPU (the CUDA index) and its node (an IP address).

The JSON report lists every communicator with its ranks (status flags, collective
counts) and ``missing_ranks`` (``unresponsive``, ``considered_dead``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

STATES = ("INCOMPLETE", "MISMATCH", "NOCOMM", "DEAD", "ERROR")

_COMM = re.compile(r"^#(\d+)-(\d+) \(([0-9a-fA-F]+)\) (INCOMPLETE|ERROR|MISMATCH)\s*$")
_RANK = re.compile(r"^\s+Rank (\d+)(?: (?P<what>has status \S+|has launched up to operation \d+|"
                   r"has not launched any operations|reported [^-]+?))?"
                   r" -- (?:GPU (?P<gpu>\d+)(?: \(NVML \d+\))? managed by process (?P<pid>\d+) on node (?P<node>\S+)"
                   r"|\[process information not found\])\s*$")
_PROC = re.compile(r"^\s+Process (\d+) on node (\S+) managing GPUs? ([\d,]+)")
_COUNTS = re.compile(r"^\s+(\d+) ranks have (?:launched up to operation (\d+)|not launched any operations)")
_TABLE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(NOCOMM|INIT|RUNNING|FINALIZE|ABORT)\s+(\S+)\s*$")


@dataclass
class RasRecord:
    """One state RAS reports about one rank or process."""
    state: str                  # INCOMPLETE | MISMATCH | NOCOMM | DEAD | ERROR
    comm: str | None            # the communicator hash (None: job-wide, a process)
    rank: int | None            # the communicator rank (None: a process line)
    gpu: int | None
    node: str | None
    pid: int | None
    detail: str                 # the words RAS gave
    ahead: bool = False         # MISMATCH: the named ranks launched more operations than the rest

    def to_dict(self) -> dict:
        return asdict(self)


def looks_like_text(text: str) -> bool:
    return "Communicators..." in text or ("Job summary" in text and "Group     Comms" in text)


def parse_text(text: str) -> dict:
    """The report as ``{"groups": [...], "records": [RasRecord, ...], "errors": [...]}``."""
    records: list[RasRecord] = []
    groups = []
    section = None
    comm = state = None
    context: list[str] = []
    majority_op: int | None = None
    counts: list[tuple[int, int]] = []
    headers: list[tuple[str, str, int, list[str]]] = []  # (comm, state, records before it, its lines)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped in ("Errors", "Warnings") and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"="}:
            section, comm, state = stripped, None, None
            continue
        if m := _TABLE.match(line):
            groups.append({"group": int(m[1]), "comms": int(m[2]), "nodes": int(m[3]), "ranks_per_comm": int(m[5]),
                           "status": m[7], "errors": m[8].split(",")})
            continue
        if section is None:
            continue
        if stripped in ("INCOMPLETE", "DEAD", "TIMEOUT"):
            comm, state, context, counts = None, stripped, [], []
            continue
        if m := _COMM.match(line):
            comm, state, context, counts = m[3].lower(), m[4], [], []
            headers.append((comm, state, len(records), context))
            continue
        if state is None:
            continue
        if m := _COUNTS.match(line):
            counts.append((int(m[1]), int(m[2] or 0)))
            continue
        if m := _RANK.match(line):
            what = (m["what"] or "").strip()
            rank_state = "NOCOMM" if "status NOCOMM" in what else state
            detail = "; ".join(context + ([what] if what else []))
            op = re.search(r"operation (\d+)", what)
            majority_op = max(counts)[1] if counts else None
            mine = int(op[1]) if op else None
            if mine is None and counts:  # the outliers listed under a count line share its value
                mine = counts[-1][1]
            ahead = state == "MISMATCH" and majority_op is not None and mine is not None and mine > majority_op
            records.append(RasRecord(rank_state, comm, int(m[1]), _int(m["gpu"]), m["node"], _int(m["pid"]),
                                     detail or state, ahead))
            continue
        if m := _PROC.match(line):
            if state in ("INCOMPLETE", "DEAD") and comm is None:
                for gpu in m[3].split(","):
                    records.append(RasRecord(state, None, None, int(gpu), m[2], int(m[1]), "; ".join(context) or state))
            continue
        if stripped and not stripped.startswith("["):
            context.append(stripped)
    for k, (c, st, before, words) in enumerate(headers):
        after = headers[k + 1][2] if k + 1 < len(headers) else len(records)
        if not any(r.comm == c for r in records[before:after]):  # a state with no rank named
            records.append(RasRecord(st, c, None, None, None, None, "; ".join(words) or st))
    errors = [] if groups or "No communicator data collected" in text else \
        ["no communicator table (the report was cut short, or this is not RAS output)"]
    return {"format": "text", "groups": groups, "records": records, "errors": errors}


def parse(text: str) -> dict:
    """``sncheck parse nccl-ras FILE``: the report (text or JSON) as JSON. ``errors``
    lists what the report shows wrong (a group not OK, a state on a rank), so the
    command exits 1 on a report of trouble; records are plain dicts."""
    import json

    from sncheck.errors import ParseError

    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            out = parse_json(json.loads(stripped))
        except (json.JSONDecodeError, ValueError) as e:
            raise ParseError(f"not NCCL RAS JSON: {e}") from e
    elif looks_like_text(text):
        out = parse_text(text)
    else:
        raise ParseError("not NCCL RAS output (no 'Communicators...' report, no RAS JSON)")
    errors = list(out["errors"])
    errors += [f"group {g['group']}: {g['status']} {','.join(g['errors'])}" for g in out["groups"]
               if g["errors"] != ["OK"] or g["status"] not in ("RUNNING", "FINALIZE")]
    errors += [f"{r.state}: " + (f"rank {r.rank}" if r.rank is not None else "a process")
               + (f" (GPU {r.gpu} on node {r.node})" if r.gpu is not None else "") + f": {r.detail}"
               for r in out["records"] if not out["groups"]]
    return {"tool": "nccl-ras", **out, "records": [r.to_dict() for r in out["records"]], "errors": errors}


def parse_json(data: dict) -> dict:
    """The JSON report (``SET FORMAT json``, then ``STATUS``)."""
    records: list[RasRecord] = []
    errors: list[str] = []
    comms = data.get("communicators")
    if not isinstance(comms, list):
        raise ValueError("RAS JSON without a communicators list")
    for c in comms:
        if not isinstance(c, dict):
            raise ValueError("RAS JSON: a communicator is not an object")
        comm = str(c.get("hash", "?")).lower().removeprefix("0x")
        ranks = [r for r in c.get("ranks") or [] if isinstance(r, dict)]
        counts = {}
        for r in ranks:
            cc = r.get("collective_counts") or {}
            counts[r.get("rank")] = tuple(sorted((k, v) for k, v in cc.items() if isinstance(v, int)))
        # Operation counts that differ: the ranks off the most common value are the outliers.
        values = list(counts.values())
        common = max(set(values), key=values.count) if values else None
        for r in ranks:
            st = r.get("status") or {}
            where = (r.get("rank"), r.get("cuda_dev"), r.get("host"), r.get("pid"))
            if counts.get(r.get("rank")) != common:
                ahead = sum(v for _, v in counts[r.get("rank")]) > sum(v for _, v in common or ())
                records.append(_json_record("MISMATCH", comm, where, "different operation counts", ahead))
            if st.get("async_error") not in (0, 7, None) or st.get("init_state") not in (0, 7, None):
                records.append(_json_record("ERROR", comm, where, f"init_state {st.get('init_state')}, "
                                            f"async_error {st.get('async_error')}"))
            if st.get("abort_flag"):
                records.append(_json_record("ERROR", comm, where, "communicator aborted"))
        for r in c.get("missing_ranks") or []:
            if not isinstance(r, dict):
                continue
            st = r.get("status") or {}
            where = (r.get("rank"), r.get("cuda_dev"), r.get("host"), r.get("pid"))
            if st.get("considered_dead"):
                records.append(_json_record("DEAD", comm, where, "process considered dead"))
            elif st.get("unresponsive"):
                records.append(_json_record("INCOMPLETE", comm, where, "missing communicator data (unresponsive)"))
            else:
                records.append(_json_record("NOCOMM", comm, where, "process answered but is not in the communicator"))
    return {"format": "json", "groups": [], "records": records, "errors": errors}


def _json_record(state: str, comm: str, where: tuple, detail: str, ahead: bool = False) -> RasRecord:
    rank, gpu, host, pid = where
    host = host if isinstance(host, str) and host != "unknown" else None
    return RasRecord(state, comm, _int(rank), _int(gpu), host, _int(pid) if pid != -1 else None, detail, ahead)


def _int(v) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None
