"""NCCL RAS status (``ncclras``, NCCL 2.24+): the text report and the JSON one (2.28+).

The grammar is NCCL's own (src/ras/client_support.cc). The text report has a job summary,
a table of communicator groups with their status and errors, then two sections:

* ``Errors``: ``INCOMPLETE`` (job processes that sent no data: ``Process P on node N
  managing GPU G``), ``DEAD`` (processes unreachable over the RAS network), and per
  communicator ``#G-C (hash) INCOMPLETE`` (ranks missing: ``Rank R -- GPU G managed by
  process P on node N``) or ``ERROR`` (``Rank R reported E -- GPU ...``);
* ``Warnings``: ``TIMEOUT`` and per communicator ``#G-C (hash) MISMATCH``: ranks with a
  different status (``N ranks have status S`` then the ranks of that status: each record's
  ``detail`` ends ``status S``, a ``NOCOMM`` one's state NOCOMM; a group of one is the rank's own
  ``Rank R has status S -- GPU ...``; the groups end where the operation counts begin, in the same
  block: rasClientRunComms) or different operation counts
  (``Communicator ranks have different AllGather operation counts``: ``collective``, null where
  2.24/2.25 say ``collective`` for all of them together; ``N ranks have launched up to operation K``
  then the outlier ranks, or ``Rank R has launched
  up to operation K -- GPU ...``). A block's ``missing`` is the count of an INCOMPLETE or DEAD
  line (``Missing communicator data from N ...``, ``N job processes are considered dead``) alone.

RAS names at most 10 outliers (and none beyond a quarter of the communicator); the
ranks it does not name are not guessed. A rank line names the communicator rank, its
GPU (the CUDA index) and its node (an IP address).

The JSON report lists every communicator with its ranks (status flags, collective
counts) and ``missing_ranks`` (``unresponsive``, ``considered_dead``), after its head: ``nccl_version``,
``cuda_runtime_version``, ``cuda_driver_version``, ``timestamp`` (kept as ``nccl_version``,
``cuda_runtime``, ``cuda_driver``, ``timestamp``) and ``ras`` (``timeouts_count``: ``timeouts``, a
failure above zero as the text's TIMEOUT block is). Its counts are of the lists they precede
(``communicators_count``, ``ranks_count``, ``missing_ranks_count``) and a communicator's ranks and
missing ranks hold each of its ``size`` ranks once (``nMissingRanks = commNRanks - nRanks``,
collectives.cc): a document that says otherwise was cut or edited (an error, exit 1; hostile r15);
a rank, its ``status`` or ``collective_counts`` that is no object is no RAS JSON.

A paste that leaves a section's heading out (a reporter's ``[...]`` between the group table and a
``#G-C (hash) STATE`` block, as the RAS docs print their excerpts) still has its blocks read: the
state names the section (INCOMPLETE, ERROR: Errors; MISMATCH: Warnings).

Every value the text carries is kept: ``nccl_version`` and ``cuda_compiled`` (``NCCL version
2.26.2 compiled with CUDA 12.4``), ``cuda_runtime`` and ``cuda_driver``; RCCL's own banner (``RCCL
version 2.28.3 compiled with ROCm "7.2.0.0-43-..."``, ``HIP runtime version N, amdgpu driver version
N``) as ``nccl_version``, ``library: RCCL``, ``rocm_compiled``, ``hip_runtime``, ``amdgpu_driver``;
the job summary's headers read by their words, however a page renders their blanks; ``job`` (``nodes``,
``processes``, ``gpus`` in total, ``processes_per_node`` and ``gpus_per_process`` where every
node and process has the same), ``node_groups`` / ``process_groups`` (the distributions RAS
prints when they differ) and ``outlier_nodes`` (``node``, ``pids``); per group
``ranks_per_node`` (``8`` or ``7-8``) and ``ranks_in_group``; ``comms``: each
``#G-C (hash) STATE`` block with ``missing`` (ranks or processes it says are missing),
``collective`` and ``operation_counts`` ([{``ranks``, ``operation``}]); per record its
``operation``. Lines around the report that are PyTorch's (a watchdog timeout pasted with
it) are read by the ``torch-nccl`` view, under ``torch``; its failures are the report's. The
``ncclras`` client's own failure lines printed instead of a report (``read socket: Connection reset
by peer``, ``Connecting to H:P: ...``, ``Failed to connect to the NCCL RAS service!``: client.cc) are
kept in ``client_failed``: nothing measured, exit 1.
The grammar, with its sources, is :data:`GRAMMAR`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import jsonprefix
from sncheck.vendors.grammar import Grammar
from sncheck.vendors.nccl import watchdog
import json

GRAMMAR = {"nccl-ras": Grammar(
    tool="NCCL RAS status: `ncclras` (text), `ncclras -f json` / SET FORMAT json (2.28 on)",
    versions="NCCL 2.24 to 2.30 text; 2.28 to 2.30 JSON; RCCL 2.28 text",
    sources=(
        "NVIDIA/nccl src/ras/client_support.cc @ v2.24.3-1, v2.26.2-1, v2.27.3-1, v2.30.7-1 (rasClientRunInit: "
        "'NCCL version %s compiled with CUDA %d.%d', 'CUDA runtime version %d, driver version %d', 'Job summary' "
        "and its three table forms, 'The outlier node(s):' / '  Node %s running process(es) %s'; rasClientRunComms: "
        "'Communicators... (%.3fs)', the group table '%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s' with statusStr "
        "NOCOMM|INIT|RUNNING|FINALIZE|ABORT and errorStr OK|MISMATCH|ERROR|INCOMPLETE combinations, 'Errors' "
        "(INCOMPLETE, DEAD, '#%d-%d (%016lx) INCOMPLETE|ERROR'), 'Warnings' (TIMEOUT, '#%d-%d (%016lx) MISMATCH' "
        "with 'N ranks have status S', 'Communicator ranks have different %s operation counts', 'N ranks have "
        "launched up to operation K', 'Rank R [has ...] -- GPU G managed by process P on node N'); 2.24 "
        "listed a communicator's missing ranks on one line, '  The missing rank(s): R[, R...]', an item R or a range F-L (the RAS docs' "
        "example of 2.24, harvest7): a range is one record, rank F and last_rank L",
        "ROCm/rocm-systems projects/rccl src/ras/client_support.cc (RCCL 2.28, rasClientRunInit): 'RCCL version %s "
        "compiled with ROCm <ROCM_BUILD_INFO>', 'HIP runtime version %d, amdgpu driver version %d'; the rest NCCL's "
        "(harvest19: AMD CVS's rcclras -v captures of a MI300X cluster)",
        "NVIDIA/nccl src/ras/client.cc @ v2.30.7-1: the client's failures printed instead of a report (perror "
        "'read socket', 'Connecting to %s:%s: %s', 'Failed to connect to the NCCL RAS service!', 'NCCL unexpectedly "
        "closed the connection', 'Unexpected response from NCCL: %s', 'Connection timed out')",
        "pastes: a report from its group table on (a page that left out the head: NCCL 2.24's release blog, its "
        "blanks collapsed to one, harvest7)",
        "NVIDIA/nccl src/ras/client_support.cc @ v2.28.3-1+ (rasDumpCommsToJSON): the JSON document",
    ),
    lines=("version lines; 'Job summary' + '=====' + one of: uniform (Nodes total, Processes per node, GPUs per "
           "process, Processes total, GPUs total), per-node distribution (+ GPUs per process), or per-node and "
           "per-process distributions, then totals (Nodes, Processes, GPUs) and outlier nodes; 'Communicators... "
           "(Ts)' + '=============' + the group table (or 'No communicator data collected!'); 'Errors' + '======' "
           "and its blocks; 'Warnings' + '========' and its blocks. RAS names at most 10 outliers (none beyond a "
           "quarter of the communicator): others are counted, not named."),
    end="the 'Warnings' header (its blocks may be empty); the JSON document closes",
    failures="the client's own failure lines instead of a report (not measured); a group whose Errors is not OK or whose Status is not RUNNING/FINALIZE; every block of Errors and "
             "Warnings (INCOMPLETE, DEAD, ERROR, TIMEOUT, MISMATCH); a torch-nccl failure pasted with it",
    values=("nccl_version, cuda_compiled, cuda_runtime, cuda_driver (RCCL: library, rocm_compiled, hip_runtime, "
            "amdgpu_driver), client_failed, job, node_groups, process_groups, "
            "outlier_nodes, groups[{group, comms, nodes, ranks_per_node, ranks_per_comm, ranks_in_group, status, "
            "errors}], comms[{comm, hash, state, missing, collective, operation_counts}], records[{state, comm, "
            "rank, gpu, node, pid, detail, ahead, operation, last_rank}], torch, errors"),
)}

STATES = ("INCOMPLETE", "MISMATCH", "NOCOMM", "DEAD", "ERROR")

_COMM = re.compile(r"^#(\d+)-(\d+) \(([0-9a-fA-F]+)\) (INCOMPLETE|ERROR|MISMATCH)\s*$")
_RANK = re.compile(r"^\s+Rank (\d+)(?: (?P<what>has status \S+|has launched up to operation \d+|"
                   r"has not launched any operations|reported [^-]+?))?"
                   r" -- (?:GPU (?P<gpu>\d+)(?: \(NVML \d+\))? managed by process (?P<pid>\d+) on node (?P<node>\S+)"
                   r"|\[process information not found\])\s*$")
_PROC = re.compile(r"^\s+Process (\d+) on node (\S+) managing GPUs? ([\d,]+)")
_COUNTS = re.compile(r"^\s+(\d+) ranks have (?:launched up to operation (\d+)|not launched any operations)")
_TABLE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(NOCOMM|INIT|RUNNING|FINALIZE|ABORT)\s+(\S+)\s*$")
_VERSION = re.compile(r"^NCCL version (\d+\.\d+\.\d+)(\S*) compiled with CUDA (\d+\.\d+)")
_CUDA = re.compile(r"^CUDA runtime version (-?\d+), driver version (-?\d+)")
# RCCL's banner (ROCm/rocm-systems projects/rccl src/ras/client_support.cc rasClientRunInit: 'RCCL version
# X.Y.Z<suffix> compiled with ROCm <ROCM_BUILD_INFO>', the build string quoted; 'HIP runtime version %d, amdgpu
# driver version %d'): RCCL 2.28's report is NCCL's otherwise
_RCCL_VERSION = re.compile(r'^RCCL version (\d+\.\d+\.\d+)(\S*) compiled with ROCm "?([^"]*?)"?\s*$')
_HIP = re.compile(r"^HIP runtime version (-?\d+), amdgpu driver version (-?\d+)")
# the ncclras client's own failures (NVIDIA/nccl src/ras/client.cc @ v2.30.7-1: perror's 'read socket: <error>',
# 'write to socket: ...', 'socket: ...'; 'Resolving H:P: ...', 'Connecting to H:P: ...', 'Failed to connect to the
# NCCL RAS service!', 'NCCL unexpectedly closed the connection', 'Unexpected response from NCCL: ...', 'Connection
# timed out' (not its '; retrying...'), 'Connection closed by server', 'Invalid format|timeout: ...'), printed
# instead of a report: nothing measured
_CLIENT_FAILED = re.compile(r"^(?:read socket|write to socket|socket|setsockopt): \S|^(?:Resolving|Connecting to) \S+: |"
                            r"^Failed to connect to the NCCL RAS service!|^NCCL unexpectedly closed the connection|"
                            r"^Unexpected response from NCCL: |^Connection timed out\s*$|^Connection closed by (?:server|"
                            r"the NCCL job)|^Invalid (?:format|timeout): ")
_NUMBERS = re.compile(r"^\s*\d+(?:\s+\d+)*\s*$")
_OUTLIER = re.compile(r"^\s+Node (\S+) running process(?:es)? ([\d,]+)")
# a block's count of what is missing: 'Missing communicator data from N job process(es)' / 'from N rank(s)'
# (INCOMPLETE), 'N job process(es) is/are considered dead' (DEAD); never a MISMATCH block's 'N ranks have ...'
_MISSING = re.compile(r"^\s+(?:Missing communicator data from (\d+) (?:job )?(?:ranks?|process(?:es)?)"
                      r"|(\d+) job process(?:es)? (?:is|are) considered dead)")
# a status MISMATCH's groups ('N ranks have status S', rasClientRunComms): the ranks named under one have S
_STATUS_COUNT = re.compile(r"^\s+(\d+) ranks? ha(?:ve|s) status (\S+)\s*$")
_COLL = re.compile(r"^\s+Communicator ranks have different (\w+) operation counts")
# NCCL 2.24's per-communicator list of the ranks it has no data from (the RAS docs' example: 'The missing
# rank: 21'); later releases print a 'Rank N -- GPU ...' line a rank (_RANK)
_MISSING_RANKS = re.compile(r"^\s+The missing ranks?: (\d+(?:-\d+)?(?:,\s*\d+(?:-\d+)?)*)\s*$")
# the group table's header, however a page renders its blanks (NCCL 2.24's release blog collapses them)
_TABLE_HEAD = re.compile(r"^\s*Group\s+Comms\s+Nodes\s+Ranks\s+Ranks\s+Ranks\s+Status\s+Errors\s*$", re.MULTILINE)
_HEADINGS = ("Job summary", "Communicators...", "Errors", "Warnings")
_TORCH = re.compile(r"^\s*\[(?:rank|Rank )?\d+\]:|ProcessGroupNCCL|^\s*[EWI]\d{4} \d\d:\d\d:\d\d")


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
    operation: int | None = None  # MISMATCH: the operation this rank launched up to
    last_rank: int | None = None  # 2.24's 'The missing ranks: F-L': the range's last rank (rank its first)

    def to_dict(self) -> dict:
        return asdict(self)


def looks_like_text(text: str) -> bool:
    """A RAS text report, or the part of one from its group table on (a paste that starts there)."""
    return "Communicators..." in text or bool(_TABLE_HEAD.search(text))


def _summary(rows: list[tuple[str, list[int]]]) -> dict[str, Any]:
    """The job summary's tables (header words, number rows) as values (see the module)."""
    out: dict[str, Any] = {"job": {}, "node_groups": [], "process_groups": []}
    for head, nums in rows:
        if head == "uniform" and len(nums) == 5:
            out["job"] = {"nodes": nums[0], "processes_per_node": nums[1], "gpus_per_process": nums[2],
                          "processes": nums[3], "gpus": nums[4]}
        elif head == "totals" and len(nums) == 3:
            out["job"].update(nodes=nums[0], processes=nums[1], gpus=nums[2])
        elif head == "per node" and len(nums) in (2, 3):
            out["node_groups"].append({"nodes": nums[0], "processes_per_node": nums[1],
                                       **({"gpus_per_process": nums[2]} if len(nums) == 3 else {})})
        elif head == "per process" and len(nums) == 2:
            out["process_groups"].append({"processes": nums[0], "gpus_per_process": nums[1]})
    return out


def parse_text(text: str) -> dict:
    """The report as ``{"groups": [...], "records": [RasRecord, ...], "errors": [...], ...}``
    (the module lists every key)."""
    records: list[RasRecord] = []
    groups = []
    comms: list[dict[str, Any]] = []
    section = None
    comm = state = None
    context: list[str] = []
    majority_op: int | None = None
    counts: list[tuple[int, int]] = []
    group_status: str | None = None  # the status of the ranks named next in a status MISMATCH ('N ranks have status S')
    headers: list[tuple[str, str, int, list[str]]] = []  # (comm, state, records before it, its lines)
    head: dict[str, Any] = {"nccl_version": None, "cuda_compiled": None, "cuda_runtime": None, "cuda_driver": None}
    tables: list[tuple[str, list[int]]] = []
    table = ""                # the job summary table whose rows follow
    outliers: list[dict[str, Any]] = []
    other: list[str] = []     # lines no part of the report (a PyTorch line pasted with it)
    seen: set[str] = set()    # the report's section headings met
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        # RAS underlines a heading with as many '=' as it has letters: a shorter rule is one cut short
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"="} and \
            len(lines[i + 1].strip()) >= len(stripped)
        if _TORCH.search(line):  # PyTorch's own lines pasted in (the torch-nccl view reads them)
            other.append(line)
            continue
        if m := _VERSION.match(stripped):
            head.update(nccl_version=m[1] + m[2], cuda_compiled=m[3])
            continue
        if m := _CUDA.match(stripped):
            head.update(cuda_runtime=int(m[1]), cuda_driver=int(m[2]))
            continue
        if m := _RCCL_VERSION.match(stripped):
            head.update(nccl_version=m[1] + m[2], library="RCCL", rocm_compiled=m[3])
            continue
        if m := _HIP.match(stripped):
            head.update(hip_runtime=int(m[1]), amdgpu_driver=int(m[2]))
            continue
        if stripped == "Job summary" or stripped.startswith("Communicators...") or \
                (stripped in ("Errors", "Warnings") and underline):
            section = next(h for h in _HEADINGS if stripped.startswith(h))
            seen.add(section)
            comm, state = None, None
            continue
        if not stripped or set(stripped) == {"="}:
            continue
        if section == "Job summary":
            heading = " ".join(stripped.split())  # the header line's words, however a page renders their blanks
            if heading.startswith("Nodes Processes") or heading == "Processes GPUs":
                table = "?"
                continue
            if table == "?":  # the second header line names the table
                table = ("uniform" if "per process (total)" in heading else "totals" if "(total)" in heading
                         else "per process" if heading == "per process" else "per node")
                if heading.startswith("per node") or heading.startswith("per process") or "(total)" in heading:
                    continue
            if _NUMBERS.match(line):
                tables.append((table, [int(x) for x in line.split()]))
                continue
            if m := _OUTLIER.match(line):
                outliers.append({"node": m[1], "pids": [int(p) for p in m[2].split(",")]})
                continue
            if stripped.startswith("The outlier node"):
                continue
        if m := _TABLE.match(line):
            groups.append({"group": int(m.group(1)), "comms": int(m.group(2)), "nodes": int(m.group(3)),
                           "ranks_per_node": m.group(4), "ranks_per_comm": int(m.group(5)),
                           "ranks_in_group": int(m.group(6)), "status": m.group(7), "errors": m.group(8).split(",")})
            continue
        if section in (None, "Communicators...") and groups and (m := _COMM.match(line)):
            # a communicator's block after the group table where a paste left its section's heading out (a
            # reporter's '[...]'): its state says the section (rasClientRunComms: INCOMPLETE and ERROR under
            # Errors, MISMATCH under Warnings), so its ranks are read; the gap itself is said (not whole)
            section = "Warnings" if m[4] == "MISMATCH" else "Errors"
        if section in (None, "Job summary") or (section == "Communicators..." and not stripped.startswith(
                ("Group", "#", "No communicator"))):
            other.append(line)
            continue
        if section not in ("Errors", "Warnings"):
            continue
        if stripped in ("INCOMPLETE", "DEAD", "TIMEOUT"):
            comm, state, context, counts, group_status = None, stripped, [], [], None
            comms.append({"comm": None, "hash": None, "state": stripped, "missing": None, "collective": None,
                          "operation_counts": []})
            continue
        if m := _COMM.match(line):
            comm, state, context, counts, group_status = m[3].lower(), m[4], [], [], None
            headers.append((comm, state, len(records), context))
            comms.append({"comm": f"{m[1]}-{m[2]}", "hash": comm, "state": state, "missing": None,
                          "collective": None, "operation_counts": []})
            continue
        if state is None:
            other.append(line)
            continue
        if m := _MISSING.match(line):
            comms[-1]["missing"] = int(m[1] or m[2])
        if m := _STATUS_COUNT.match(line):
            group_status = m[2]
            continue
        if stripped == "Communicator ranks have different status":
            group_status = None  # the status groups begin: none is named yet
        if m := _COLL.match(line):
            group_status = None  # the status groups end where the operation counts begin (rasClientRunComms)
            # 2.26 on names the operation ('different AllGather operation counts'); 2.24/2.25 said 'collective'
            # (every operation counted together, the RAS docs' 2.24 example): no operation named, null
            comms[-1]["collective"] = None if m[1] == "collective" else m[1]
        if m := _COUNTS.match(line):
            counts.append((int(m[1]), int(m[2] or 0)))
            comms[-1]["operation_counts"].append({"ranks": int(m[1]), "operation": int(m[2]) if m[2] else 0})
            continue
        if m := _RANK.match(line):
            what = (m["what"] or "").strip()
            own = re.search(r"has status (\S+)", what)  # a group of one: 'Rank R has status S -- ...', its own S
            status = own[1] if own else group_status
            rank_state = "NOCOMM" if status == "NOCOMM" else state
            detail = "; ".join(context + ([what] if what else []) + ([f"status {status}"] if status and not own else []))
            op = re.search(r"operation (\d+)", what)
            majority_op = max(counts)[1] if counts else None
            mine = int(op[1]) if op else 0 if "not launched" in what else None
            if mine is None and counts:  # the outliers listed under a count line share its value
                mine = counts[-1][1]
            ahead = state == "MISMATCH" and majority_op is not None and mine is not None and mine > majority_op
            records.append(RasRecord(rank_state, comm, int(m[1]), _int(m["gpu"]), m["node"], _int(m["pid"]),
                                     detail or state, ahead, mine if state == "MISMATCH" else None))
            continue
        if m := _MISSING_RANKS.match(line):
            for part in m[1].replace(" ", "").split(","):
                first, _, last = part.partition("-")
                lo, hi = int(first), int(last or first)
                if hi < lo:
                    raise ParseError(f"line {i + 1}: the missing ranks' range {part} ends before it starts")
                # a range is one record (first, last): one per rank would be as many as its bounds say
                records.append(RasRecord(state, comm, lo, None, None, None, "; ".join(context) or state,
                                         last_rank=hi if hi != lo else None))
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
    # whole once its last section began (sncheck watch reads a cut report's records all the same); a report with
    # 'No communicator data collected!' still prints its Errors and Warnings after it (rasClientRunComms, 2.24 on)
    complete = "Warnings" in seen
    return {"format": "text", "complete": complete, **head, **_summary(tables), "outlier_nodes": outliers, "groups": groups,
            "comms": comms, "records": records, "other_lines": other, "errors": errors}


def parse(text: str) -> dict:
    """``sncheck parse nccl-ras FILE``: the report (text or JSON) as JSON. ``errors``
    lists what the report shows wrong (a group not OK, a state on a rank), so the
    command exits 1 on a report of trouble; records are plain dicts."""

    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            out = parse_json(jsonprefix.loads(stripped))
        except (json.JSONDecodeError, ValueError) as e:
            raise ParseError(f"not NCCL RAS JSON: {e}") from e
    elif looks_like_text(text):
        out = parse_text(text)
    elif failed := [ln.strip() for ln in text.splitlines() if _CLIENT_FAILED.match(ln.strip())]:
        return {"tool": "nccl-ras", "format": "text", "complete": False, "groups": [], "comms": [], "records": [],
                "client_failed": failed, "errors": [f"the RAS client failed before any report ({failed[-1]}): "
                                                    "not measured"]}
    else:
        raise ParseError("not NCCL RAS output (no 'Communicators...' report, no RAS JSON)")
    errors = list(out["errors"])
    if out.get("complete") is False and not errors:
        errors.append("the report ends before its 'Warnings' section: cut short")
    if other := [ln for ln in out.pop("other_lines", []) if ln.strip()]:
        try:  # the PyTorch lines pasted with the report: their own view reads them
            out["torch"] = watchdog.parse_torch_nccl("\n".join(other) + "\n")
            errors += [f"torch-nccl: {e}" for e in out["torch"]["errors"] + out["torch"]["faults"]]
        except ParseError:
            pass
    errors += _blocks_missing(out)
    # the job-wide blocks (processes missing or dead, timeouts): no group's Errors column says them
    errors += [f"{c['state']}: " + (f"{c['missing']} job process(es) missing" if c["missing"] else c["state"].lower())
               for c in out.get("comms") or [] if c["comm"] is None]
    errors += [f"group {g['group']}: {g['status']} {','.join(g['errors'])}" for g in out["groups"]
               if g["errors"] != ["OK"] or g["status"] not in ("RUNNING", "FINALIZE")]
    errors += [f"{r.state}: " + (f"rank {r.rank}" if r.rank is not None else "a process")
               + (f" (GPU {r.gpu} on node {r.node})" if r.gpu is not None else "") + f": {r.detail}"
               for r in out["records"] if not out["groups"]]
    return {"tool": "nccl-ras", **out, "records": [r.to_dict() for r in out["records"]], "errors": errors}


def _blocks_missing(out: dict) -> list[str]:
    """The Errors / Warnings blocks the group table promises and the report lacks: every
    communicator of a group shares its errors (rasAuxCommsCompareRev keys the groups on them),
    and each prints its '#G-C (hash) STATE' block, so one missing is a report cut short."""
    have = {(c["comm"], c["state"]) for c in out.get("comms") or []}
    missing = [f"#{g['group']}-{k} {st}" for g in out["groups"] for st in g["errors"] if st != "OK"
               for k in range(g["comms"]) if (f"{g['group']}-{k}", st) not in have]
    if not missing:
        return []
    return [f"the group table names {len(missing)} block(s) the report lacks ({', '.join(missing[:4])}"
            f"{', ...' if len(missing) > 4 else ''}): cut short"]


def parse_json(data: dict) -> dict:
    """The JSON report (``SET FORMAT json``, then ``STATUS``)."""
    records: list[RasRecord] = []
    errors: list[str] = []
    comms = data.get("communicators")
    if not isinstance(comms, list):
        raise ValueError("RAS JSON without a communicators list")
    errors += _count_of(data, "communicators_count", comms, "communicator(s)", "the document")
    for c in comms:
        if not isinstance(c, dict):
            raise ValueError("RAS JSON: a communicator is not an object")
        comm = str(c.get("hash", "?")).lower().removeprefix("0x")
        ranks = _rank_list(c, "ranks", comm, "collective_counts")
        errors += _shape_errors(c, comm, ranks, _rank_list(c, "missing_ranks", comm))
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
            st = r.get("status") or {}
            where = (r.get("rank"), r.get("cuda_dev"), r.get("host"), r.get("pid"))
            if st.get("considered_dead"):
                records.append(_json_record("DEAD", comm, where, "process considered dead"))
            elif st.get("unresponsive"):
                records.append(_json_record("INCOMPLETE", comm, where, "missing communicator data (unresponsive)"))
            else:
                records.append(_json_record("NOCOMM", comm, where, "process answered but is not in the communicator"))
    ras = data.get("ras")
    if (timeouts := _int(ras.get("timeouts_count") if isinstance(ras, dict) else None)):  # the text report's TIMEOUT block, as a count
        errors.append(f"TIMEOUT: {timeouts} communication timeout(s) while gathering communicator data")
    # the document's head (rasClientRunJson / rasDumpCommsToJSON): what the text prints as its version lines
    return {"format": "json", "nccl_version": data.get("nccl_version"), "cuda_runtime": _int(data.get("cuda_runtime_version")),
            "cuda_driver": _int(data.get("cuda_driver_version")), "timestamp": data.get("timestamp"),
            "timeouts": timeouts, "groups": [], "records": records, "errors": errors}


def _rank_list(c: dict, key: str, comm: str, *objects: str) -> list[dict]:
    """``c[key]``, a list of rank objects whose ``status`` (and ``objects``) are objects, as
    jsonWriteRankData / jsonWriteMissingRank print them; anything else is no RAS JSON (a status
    "ERROR" was an AttributeError, an item that is no object was dropped unsaid)."""
    items = c.get(key) or []
    if not isinstance(items, list):
        raise ValueError(f"communicator {comm}: {key} is not a list")
    for i, r in enumerate(items):
        if not isinstance(r, dict):
            raise ValueError(f"communicator {comm}: {key}[{i}] is not an object")
        for field in ("status", *objects):
            if not isinstance(r.get(field) or {}, dict):
                raise ValueError(f"communicator {comm}: rank {r.get('rank')}: {field} is not an object")
    return items


def _count_of(obj: dict, key: str, items: list, what: str, where: str) -> list[str]:
    """A count the document prints beside the list it counts (rasDumpCommsToJSON prints each from
    the list that follows it) that says otherwise: the list cut or edited."""
    n = obj.get(key)
    if isinstance(n, int) and not isinstance(n, bool) and n != len(items):
        return [f"{where}: {key} {n}, but {len(items)} {what} listed (the document cut or edited)"]
    return []


def _shape_errors(c: dict, comm: str, ranks: list[dict], missing: list[dict]) -> list[str]:
    """A communicator whose lists do not hold it whole: its ranks and its ``commNRanks - nRanks``
    missing ones (collectives.cc) are each of 0 to size-1 once."""
    where = f"communicator {comm}"
    out = _count_of(c, "ranks_count", ranks, "rank(s)", where)
    out += _count_of(c, "missing_ranks_count", missing, "missing rank(s)", where)
    size, seen = _int(c.get("size")), set()
    for r in ranks + missing:
        rank = _int(r.get("rank"))
        if rank in seen:
            out.append(f"{where}: rank {rank} is listed twice (among its ranks or missing ones): spliced or edited")
        elif rank is None or rank < 0 or (size is not None and rank >= size):
            out.append(f"{where}: rank {r.get('rank')!r} is outside the communicator's ranks 0 to "
                       f"{'?' if size is None else size - 1}")
        seen.add(rank)
    if size is not None and size > len(ranks) + len(missing):
        out.append(f"{where}: size {size}, but {len(ranks)} rank(s) listed and {len(missing)} missing: "
                   f"{size - len(ranks) - len(missing)} rank(s) not accounted for (the document cut or edited)")
    return out


def _json_record(state: str, comm: str, where: tuple, detail: str, ahead: bool = False) -> RasRecord:
    rank, gpu, host, pid = where
    host = host if isinstance(host, str) and host != "unknown" else None
    return RasRecord(state, comm, _int(rank), _int(gpu), host, _int(pid) if pid != -1 else None, detail, ahead)


def _int(v) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None
