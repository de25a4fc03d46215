"""PyTorch ProcessGroupNCCL's watchdog and Flight Recorder messages: view ``torch-nccl``.

Grammar (pytorch/pytorch ``torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp`` and
``NCCLUtils.hpp``; the messages as 1.13, 2.0-2.2 and 2.3-2.8 print them):

- each message is a glog line: ``[E ProcessGroupNCCL.cpp:475] MSG`` (1.x, 2.0),
  ``[E0709 17:05:38.162814866 ProcessGroupNCCL.cpp:2271] MSG`` (2.2+), with torch's
  ``[rank3]:`` in front from 2.3 (the ``TORCH_DISTRIBUTED_DEBUG`` rank prefix), or plain text
  inside a Python exception. A line's rank is that prefix's (c10 ``SetGlobalRank``: the global rank, the
  process), else its group's. MSG starts with the group's ``logPrefix()``: ``[Rank 3] ``
  (to 2.2), ``[PG 0 Rank 3] `` (2.3), ``[PG 0 (default_pg) Rank 3] `` (2.4),
  ``[PG ID 0 PG GUID 0(default_pg) Rank 3] `` (2.5+).
- ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S, OpType=OP[, NumelIn=N,
  NumelOut=N], Timeout(ms)=T) ran for M milliseconds before timing out.`` (NumelIn/Out from 2.0).
- the rank's progress when it failed: ``Timeout at NCCL work: S, last enqueued NCCL work: E,
  last completed NCCL work: C.`` (2.2), ``Exception (either an error or timeout) detected by
  watchdog at work: S, last enqueued NCCL work: E, last completed NCCL work: C.`` (2.3),
  ``failure detected by watchdog at work sequence id: S PG status: last enqueued work: E,
  last completed work: C`` (2.4+).
- Flight Recorder: ``Received a dump signal due to a collective timeout from (this local
  rank|rank R) and we will try our best to dump the debug info. Last enqueued NCCL work: E,
  last completed NCCL work: C.``; ``Observed flight recorder dump signal from another rank via
  TCPStore.``; ``ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1``;
  ``First PG on this rank to signal dumping.``; ``Stack trace of the failed collective:`` and its
  frames, or ``Stack trace of the failed collective not found, potentially because FlightRecorder is
  disabled. ...`` (``WorkNCCL::printTraceback``, 2.5+: no trace printed, counted apart); the
  trace analyzer's (tools/flight_recorder) ``Not all ranks joining collective S at entry R`` (2.5),
  ``...: sequence number: S`` (PR 140969), ``..., sequence number: S`` (2.6+) and its field lines.
- the heartbeat monitor: ``Heartbeat monitor timed out! Process will be terminated after
  dumping debug info. workMetaList_.size()=N`` (2.3+), ``[Rank R] NCCL monitor thread
  timeout.`` (2.2); ``ProcessGroupNCCL's watchdog got stuck for N seconds``.
- the end: ``Some NCCL operations have failed or timed out. ...`` and ``To avoid data
  inconsistency, we are taking the entire process down.``; ``Process group watchdog thread
  terminated with exception: ...`` (``NCCL watchdog thread terminated ...`` before 2.2);
  ``Work WorkNCCL(...) timed out in blocking wait`` (``TORCH_NCCL_BLOCKING_WAIT``).
- an NCCL call that failed (``NCCLUtils.hpp`` ``C10D_NCCL_CHECK``): ``NCCL error in:
  FILE:LINE, <ncclGetErrorString>, NCCL version X.Y.Z`` then ``ncclSystemError: ...`` and
  ``Last error:`` with NCCL's own last WARN (kept: ``last_error``, the line after it), each line
  behind c10's ``[rankN]:`` (torch >= 2.3) or torchrun's ``[default0]:`` where they stand. The version is ``NCCLUtils.cpp`` ``getNcclVersion``'s:
  ``M.m.p``, ``M.m.p.SUFFIX`` where NCCL was built with a suffix, or ``Unknown NCCL version``
  where ``ncclGetVersion`` failed (the error kept, its ``version`` null).
- a communicator's asynchronous error the watchdog found (``checkForNCCLErrorsInternal``, 1.x
  to 2.8): ``NCCL error: <ncclGetErrorString>, NCCL version X.Y.Z`` (no FILE:LINE: ``where`` is
  null), inside ``Process group watchdog thread terminated with exception: ...``, then
  ``getNcclErrorDetailStr``'s ``ncclRemoteError: ...`` and ``Last error:`` lines.

A paste may wrap a long message at its terminal's width (20 columns and wider; a reporter's
word wrap, which drops the blank it breaks at, from about 31; an NCCL error broken after its
``NCCL error in:``, its tail indented, harvest 30): the tail lines, starting no line
of their own (no rank, glog or launcher prefix, naming no rank of their own), after a piece at
least 20 long that ends no sentence (a number's point is no full stop), are joined to the
message again, each join tried with and without a blank (past 5 pieces, matched with every blank
taken out: the numbers and names read hold none); a timeout message broken after its ``timeout:`` (the ``WorkNCCL(...)`` on the
next line, as a logger or a reporter wraps it) is joined whatever its width. A bare ``[rank3]``
(a launcher's tag, no colon) names the rank as torch's ``[rank3]:`` does.

There is no end marker: a log is a stream. Every one of these messages is a failure (exit 1):
the watchdog prints nothing on a healthy job. A paste cut inside one of them before its numbers
(the last line without its newline: a ``ProcessGroupNCCL.cpp`` error line, its group's prefix,
then the first words of a message above, ``[Rank 5] Watchdog caught collective operati``, harvest
16's LlamaFactory-issue 8261 glued after a progress bar) is that message cut: its rank kept, an error.
The ranks' ``NCCL_DEBUG`` lines in the same log (torchrun's children share one stdout,
block-buffered into a pipe or a file: NCCL's debug.cc writes each line with one vfprintf) cut into
each other mid-line are the ``nccl-debug`` view's interleaving error, the same words
(:func:`sncheck.vendors.nccl.debug_log.interleaving`): the log's values may be two ranks' halves.

JSON::

    {"tool": "torch-nccl", "ranks": [0, 3], "timeout_ms": 600000,
     "timeouts": [{"rank": 3, "pg": "0", "seq": 20585, "op": "ALLREDUCE", "numel_in": 1,
                   "numel_out": 1, "timeout_ms": 600000, "ran_ms": 600048}],
     "progress": [{"rank": 3, "pg": "0", "failed_seq": 20585, "last_enqueued": 20589,
                   "last_completed": 20584}],
     "dump_signals": [{"rank": 1, "from": "rank 7" | "this local rank", "last_enqueued": ..,
                       "last_completed": ..}],
     "flight_recorder": {"dumps": 2, "observed": 5, "stack_traces": 1,  # traces printed
                         "stack_traces_not_found": 1,  # '... not found, potentially because FlightRecorder is disabled'
                         "mismatches": [{"seq": 31117, "record_id": 31116, "pg": "0:default_pg",  # the trace
                                         "op": "nccl:all_reduce", "missing_ranks": [3, 4], "world_size": 8,  # analyzer's
                                         "expected_ranks": [0, ...], "state": "scheduled", ...}]},  # report
     "heartbeat_timeouts": [1], "process_down": 2, "nccl_errors": [{"result", "version", "where", "last_error"}],
     "nccl_version": "2.21.5", "faults": [...], "errors": []}
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.delivery import TORCH_LABEL
from sncheck.vendors.nccl.debug_log import interleaving

TOOL = "torch-nccl"
# "[PG ID 0 PG GUID 0(default_pg) Rank 3] ", "[PG 0 (default_pg) Rank 3] " (2.4), "[PG 0 Rank 3] ", "[Rank 3] "
_PG = re.compile(r"\[(?:PG (?:ID )?(?P<pg>\w+)(?: \((?P<desc>[^)\]]*)\))?(?: PG GUID (?P<guid>[^\s\]]+))? )?"
                 r"Rank (?P<rank>\d+)\]")
_TORCH_RANK = re.compile(r"\[rank(?P<rank>\d+)\](?::|\s)")
# what starts a line of its own (not the tail of a wrapped message): torch's rank prefix, glog's, a launcher's
_STARTS_LINE = re.compile(r"^(?:\[rank\d+\]:|\[[EWIF]\d*[ \]]|\[[EWIF] |[EWIF]\d{4} |\S+ \[std(?:out|err)\] )")
_WORK = re.compile(r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, NumelIn=(?P<nin>-?\d+), "
                   r"NumelOut=(?P<nout>-?\d+))?, Timeout\(ms\)=(?P<t>\d+)\)(?: ran for (?P<ran>\d+) milliseconds)?")
_PROGRESS = re.compile(r"(?:Timeout at NCCL work|detected by watchdog at work|detected by watchdog at work sequence id)"
                       r":? (?P<seq>-?\d+),?(?: PG status:)? last enqueued (?:NCCL )?work: (?P<enq>-?\d+), "
                       r"last completed (?:NCCL )?work: (?P<done>-?\d+)")
_DUMP_SIGNAL = re.compile(r"Received a dump signal due to a collective timeout from\s+(?P<src>this local rank|rank \d+)"
                          r"(?:.*?Last enqueued \w+ work: (?P<enq>-?\d+), last completed \w+ work: (?P<done>-?\d+))?")
# getNcclVersion (NCCLUtils.cpp): 'M.m.p', then '.' NCCL_SUFFIX where NCCL was built with one, or 'Unknown NCCL
# version' where ncclGetVersion failed (every release: the error is kept, its version null)
_VERSION = r"NCCL version (?:(?P<v>\d+\.\d+\.\d+(?:\.[^\s,]+)?)|Unknown NCCL version)"
_NCCL_ERROR = re.compile(r"NCCL error in: (?P<where>\S+?),? (?P<result>[^,]*(?:\([^)]*\))?),? " + _VERSION)
# checkForNCCLErrorsInternal: "NCCL error: " + ncclGetErrorWithVersion(err) (no FILE:LINE)
_NCCL_ASYNC_ERROR = re.compile(r"NCCL error: (?P<result>[^,]+(?:\([^)]*\))?), " + _VERSION)
_TIMEOUT_HEAD = "collective operation timeout:"  # a message broken here continues with its WorkNCCL(...)
_FAILED_TEXT = {
    "Heartbeat monitor timed out": "heartbeat", "NCCL monitor thread timeout": "heartbeat",
    "watchdog got stuck for": "heartbeat",
    "we are taking the entire process down": "process_down",
    "watchdog thread terminated with exception": "terminated",
    "timed out in blocking wait": "blocking_wait",
    "Observed flight recorder dump signal": "observed",
    "preparing to dump debug info": "dump",
    "Stack trace of the failed collective": "stack",
}
_MAX_LISTED = 200
_LINE_MAX = 4096
# an error line of ProcessGroupNCCL.cpp (glog's 'E' and MMDD, c10's own logger MDD: 'E602'; 1.x and 2.0 no date)
_GLOG_ERROR = re.compile(r"\[E(?:\d{3,4} [\d:.]+)? ProcessGroupNCCL\.cpp:\d+\] (?P<msg>.*)$")
# the failure messages' first words, as a cut last line may show only a head of one of them
_HEADS = ("Watchdog caught collective operation timeout", "Exception (either an error or timeout) detected by watchdog",
          "failure detected by watchdog at work", "Timeout at NCCL work", "Heartbeat monitor timed out",
          "NCCL monitor thread timeout", "Received a dump signal due to a collective timeout",
          "Process group watchdog thread terminated with exception", "Some NCCL operations have failed or timed out",
          "To avoid data inconsistency, we are taking the entire process down", "ProcessGroupNCCL preparing to dump",
          "Observed flight recorder dump signal", "Stack trace of the failed collective")


def _rank(line: str, pieces: list[str] | None = None) -> tuple[int | None, str | None]:
    """(rank, pg) of a line: the process's rank is c10's '[rankN]:' log prefix where the line has one
    (SetGlobalRank: the global rank), else its group's logPrefix rank; the group from its logPrefix.
    A process is rank 0 of its own subgroup as another process is of its own ('[rank4]:... [PG 5 Rank 0]'
    beside '[rank0]:... [PG 5 Rank 0]': two processes, xDiT-issue147)."""
    # the group's prefix is at the message's head: a word wrap may have dropped a blank inside it
    pg = _PG.search(line) or (pieces and len(pieces) > 1 and _joined_search(_PG, pieces[:3])) or None
    if m := _TORCH_RANK.match(line):
        return int(m["rank"]), pg["pg"] if pg else None
    if pg:
        return int(pg["rank"]), pg["pg"]
    return None, None


# The Flight Recorder trace analyzer's report of a collective not every rank joined (pytorch
# tools/flight_recorder/components/utils.py; one 'key: value' line a field after the head, then
# 'collective stack trace:' and its frames). The head as each version's logger prints it:
# 'Not all ranks joining collective S at entry R' (2.5, the tutorial's torchfrtrace; its 'expected
# ranks: N' is their count), 'Not all ranks joining collective: sequence number: S' (PR 140969's
# test plan), 'Not all ranks joining collective, sequence number: S' (EntryState.log, 2.6+: 'internal
# record id', 'world size', 'expected ranks: {r, ...}')
_FR_HEAD = re.compile(r"^Not all ranks joining collective(?:[:,] sequence number: (\d+)| (\d+) at entry (\d+))\s*$")
_FR_FIELD = re.compile(r"^(internal record id|group info|collective|missing ranks|input sizes|output sizes|"
                       r"world size|expected ranks|collective state):\s*(.*?)\s*$")


def _fr_mismatches(text: str) -> list[dict[str, Any]]:
    """Each analyzer report in ``text``: seq, record_id, pg, op, missing_ranks, world_size, expected_ranks,
    state, input_sizes, output_sizes (a field the report does not reach: null, and the report is cut)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := _FR_HEAD.match(line):
            cur = {"seq": int(m[1] or m[2]), "record_id": int(m[3]) if m[3] else None, "pg": None, "op": None,
                   "missing_ranks": None, "world_size": None, "expected_ranks": None, "state": None,
                   "input_sizes": None, "output_sizes": None}
            out.append(cur)
        elif cur is not None and (m := _FR_FIELD.match(line)):
            key = {"internal record id": "record_id", "group info": "pg", "collective": "op",
                   "missing ranks": "missing_ranks", "world size": "world_size", "expected ranks": "expected_ranks",
                   "collective state": "state", "input sizes": "input_sizes", "output sizes": "output_sizes"}[m[1]]
            value: Any = m[2]
            if key == "expected_ranks" and value.isdecimal():  # 2.5: 'expected ranks: %d', len(expected_ranks)
                key, value = "world_size", int(value)
            elif key in ("missing_ranks", "expected_ranks"):
                value = [int(r) for r in re.findall(r"\d+", value)]
            elif key in ("record_id", "world_size") and value.isdecimal():
                value = int(value)
            cur[key] = value
    return out


# TORCH_NCCL_DESYNC_DEBUG's report (pytorch torch/csrc/distributed/c10d/TraceUtils.h retrieveDesyncReport,
# analyzeMissingRanks, analyzeLaggingRanks): '\n\t - [R] Timeout at collective: COL, #S', then either
# ' - To our best knowledge, ranks [a, b] are the lagging ranks that caused this timeout. They never joined any
# collectives' or ' - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:' with
# '   - [a, b] joined but didn't finish collective #S (count from 1)' and/or '     [c, d] finished collective #S,
# but didn't join collective #S+1 (count from 1)' (then dumpSnapshot's per-sequence ' - Snapshot of ranks'
# latest states:' lines, which name no lagging rank)
_DESYNC_HEAD = re.compile(r"- \[(\d+)\] Timeout at collective: (.+?), #(\d+)\s*$")
_NEVER_JOINED = re.compile(r"- To our best knowledge, ranks \[([\d, ]*)\] are the lagging ranks")
_UNFINISHED = re.compile(r"- \[([\d, ]+)\] joined but didn't finish collective #(\d+)")
_NOT_JOINED = re.compile(r"\[([\d, ]+)\] finished collective #(\d+), but didn't join collective #\d+")
# the Flight Recorder's traceback of the stuck call after 'Stack trace of the failed collective: '
# (ProcessGroupNCCL.cpp WorkNCCL::printTraceback; its frames '#N FUNC from FILE:LINE', torch's CapturedTraceback)
_FRAME = re.compile(r"^#\d+ \S.* from \S+:\d+$")


def _ints(s: str) -> list[int]:
    return [int(r) for r in re.findall(r"\d+", s)]


def _ranks(ranks: list[int]) -> str:
    return "[" + ", ".join(map(str, ranks)) + "]"


def _desync(text: str) -> list[dict[str, Any]]:
    """Each desync report in ``text``: the timed-out rank, its collective and sequence number, and the
    ranks the report blames (never joined; joined but did not finish ``lag_seq``; finished it but did not
    join the next)."""
    out: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if m := _DESYNC_HEAD.search(line):
            out.append({"rank": int(m[1]), "op": m[2], "seq": int(m[3]), "never_joined": [],
                        "joined_not_finished": [], "finished_not_joined": [], "lag_seq": None})
        elif not out or len(out) > _MAX_LISTED:
            continue
        elif m := _NEVER_JOINED.search(line):
            out[-1]["never_joined"] = _ints(m[1])
        elif m := _UNFINISHED.search(line):
            out[-1]["joined_not_finished"], out[-1]["lag_seq"] = _ints(m[1]), int(m[2])
        elif m := _NOT_JOINED.search(line):
            out[-1]["finished_not_joined"], out[-1]["lag_seq"] = _ints(m[1]), int(m[2])
    return out[:_MAX_LISTED]


def _frames(text: str) -> list[str]:
    """The frames each 'Stack trace of the failed collective:' is followed by, in order."""
    out: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if "Stack trace of the failed collective:" in line:
            inside = True
        elif inside and _FRAME.match(line) and len(out) < _MAX_LISTED:
            out.append(line)
        else:
            inside = False
    return out


def parse_torch_nccl(text: str) -> dict[str, Any]:
    """PyTorch NCCL watchdog / Flight Recorder messages (see the module)."""
    data: dict[str, Any] = {"tool": TOOL, "ranks": [], "timeout_ms": None, "timeouts": [], "progress": [],
                            "dump_signals": [], "flight_recorder": {"dumps": 0, "observed": 0, "stack_traces": 0,
                                                                    "stack_traces_not_found": 0,
                                                                    "frames": _frames(text),
                                                                    "mismatches": _fr_mismatches(text)},
                            "desync": _desync(text),
                            "heartbeat_timeouts": [], "process_down": 0, "terminated": 0, "blocking_wait": 0,
                            "nccl_errors": [], "nccl_version": None, "faults": [], "errors": []}
    ranks: dict[int, None] = {}
    works: dict[tuple[int | None, int, str], dict[str, Any]] = {}  # (rank, SeqNum, OpType) -> its timeout
    seen = 0
    last_for: dict[str, Any] | None = None  # the NCCL error a 'Last error:' line after it belongs to
    awaiting = False  # 'Last error:' read: the next line is NCCL's last error
    for pieces in _logical_lines(text):
        line = "".join(pieces).strip()[:_LINE_MAX]  # the messages are short: a longer line is not one of them
        if last_for is not None:
            last_for, awaiting = _last_error(last_for, awaiting, pieces)
        # a word wrap dropped the blank it broke at: the pieces joined by a blank read as printed
        spaced = " ".join(p.strip() for p in pieces)[:_LINE_MAX] if len(pieces) > 1 else line
        line = line if line == spaced else f"{line}\n{spaced}"  # a needle is looked for in both joins
        if not line or ("NCCL" not in line and "Rank" not in line and "rank" not in line
                        and "Flight" not in line and "flight" not in line and "collective" not in line):
            continue
        rank, pg = _rank(line, pieces)
        hit = False
        if "Watchdog caught collective operation timeout" in line or "timed out in blocking wait" in line:
            if m := _joined_search(_WORK, pieces):
                work = (rank, int(m["seq"]), m["op"])
                if work in works:
                    # the same work restated ('... watchdog thread terminated with exception: [Rank 1]
                    # Watchdog caught ...', a what() line): one timeout, the PG where either line names it
                    works[work]["pg"] = works[work]["pg"] or pg
                elif len(data["timeouts"]) < _MAX_LISTED:
                    works[work] = {"rank": rank, "pg": pg, "seq": int(m["seq"]), "op": m["op"],
                                  "numel_in": _int(m["nin"]), "numel_out": _int(m["nout"]),
                                  "timeout_ms": int(m["t"]), "ran_ms": _int(m["ran"])}
                    data["timeouts"].append(works[work])
                data["timeout_ms"] = data["timeout_ms"] or int(m["t"])
            else:
                _incomplete(data, line)
            hit = True
        if "watchdog at work" in line or "Timeout at NCCL work" in line:
            if m := _joined_search(_PROGRESS, pieces):
                if len(data["progress"]) < _MAX_LISTED:
                    data["progress"].append({"rank": rank, "pg": pg, "failed_seq": int(m["seq"]),
                                             "last_enqueued": int(m["enq"]), "last_completed": int(m["done"])})
            else:
                _incomplete(data, line)
            hit = True
        if "Received a dump signal" in line and (m := _DUMP_SIGNAL.search(line)):  # (each join a line of its own)
            if len(data["dump_signals"]) < _MAX_LISTED:
                data["dump_signals"].append({"rank": rank, "from": m["src"], "last_enqueued": _int(m["enq"]),
                                             "last_completed": _int(m["done"])})
            hit = True
        if "NCCL error" in line and (m := _NCCL_ERROR.search(line) or _NCCL_ASYNC_ERROR.search(line)):
            where = m["where"] if "where" in m.groupdict() else None
            data["nccl_errors"].append({"where": where, "result": m["result"].strip(), "version": m["v"],
                                        "last_error": None})
            last_for, awaiting = _last_error(data["nccl_errors"][-1], False, pieces[1:], own=True)
            data["nccl_version"] = data["nccl_version"] or m["v"]
            hit = True
        for needle, what in _FAILED_TEXT.items():
            if needle in line:
                hit = True
                if what == "heartbeat":
                    data["heartbeat_timeouts"].append(rank)
                elif what in ("process_down", "terminated", "blocking_wait"):
                    data[what] += 1
                elif what == "stack":
                    _stack_trace(data, line)
                else:
                    data["flight_recorder"]["dumps" if what == "dump" else "observed"] += 1
        if hit:
            seen += 1
            if rank is not None:
                ranks[rank] = None
    if (cut := _cut_head(text)) is not None:
        seen += 1
        if cut[0] is not None:
            ranks[cut[0]] = None
        data["errors"].append(f"a watchdog message cut inside its first words ('{cut[1][-80:]}'): cut short")
    if not seen and not data["flight_recorder"]["mismatches"] and not data["desync"]:
        raise ParseError("no PyTorch ProcessGroupNCCL watchdog or Flight Recorder message", tool=TOOL)
    if why := interleaving(text):  # the ranks' NCCL_DEBUG lines cut into each other: nccl-debug's check
        data["errors"].append(why)
    data["ranks"] = sorted(ranks)
    data["faults"] = _faults(data)
    return data


_LAST_ERROR = "Last error:"


def _last_error(error: dict[str, Any], awaiting: bool, pieces: list[str],
                own: bool = False) -> tuple[dict[str, Any] | None, bool]:
    """getNcclErrorDetailStr's tail after an NCCL error: '\\nnccl<Result>: <description>\\nLast error:\\n<ncclGetLastError>'
    (NCCLUtils.cpp): the line after 'Last error:' is NCCL's own last WARN, kept as the error's ``last_error``.
    Returns (the error still waiting for it, whether 'Last error:' was read); a line of another kind first
    (no detail, no 'Last error:') ends the wait, but for the pieces of the error's own line (``own``: the tail of
    its message a terminal wrapped, read with it)."""
    for piece in pieces:
        # a line's label is no part of it: c10's '[rankN]:' (torch >= 2.3, every stderr line), torchrun's
        # '[default0]:' left where not every line carries it (reviews14 #5: '[rank3]: Last error:' ended the wait)
        body = _LABEL.sub("", piece.strip(), count=1).strip()
        if awaiting and body:
            error["last_error"] = body[:_LINE_MAX]
            return None, False
        if body == _LAST_ERROR:
            awaiting = True
        elif body and not awaiting and not own and not _DETAIL.match(body):
            return None, False
    return error, awaiting


_LABEL = re.compile(rf"^(?:{TORCH_LABEL}:)+")
# getNcclErrorDetailStr's description line: 'ncclInvalidUsage: This usually reflects ...' (the result's name)
_DETAIL = re.compile(r"^nccl[A-Z]\w*: ")


def _cut_head(text: str) -> tuple[int | None, str] | None:
    """(rank, line) of a last line cut (no newline) inside the first words of a failure message:
    a ProcessGroupNCCL.cpp error line whose message, after its group's prefix, is a proper head
    of one of ``_HEADS`` (the whole head is read by the messages' own needles above)."""
    last = text.rsplit("\n", 1)[-1][-_LINE_MAX:]
    if not last.strip() or not (m := _GLOG_ERROR.search(last)) or not (pg := _PG.match(m["msg"])):
        return None
    msg = m["msg"][pg.end():].strip()
    if any(head.startswith(msg) and msg != head for head in _HEADS):
        return int(pg["rank"]), last.strip()
    return None


_WRAP_MIN = 20     # a physical line this long or longer may have been wrapped by the paste's terminal
_WRAP_PIECES = 16  # a message wrapped into at most this many more lines (a 2.5 timeout at 20 columns: 15)
_GLUE_PIECES = 5   # joins tried both ways up to this many pieces; past it, matched with every blank taken out


def _logical_lines(text: str) -> list[list[str]]:
    """The log's lines, each as the physical lines a paste may have wrapped it into at the
    terminal's width. A physical line continues the one before it when that one was long (the
    terminal's width), is a watchdog message's head that did not end its sentence, and this one
    starts no line of its own (no torch rank, glog or launcher prefix, and names no rank of its own)."""
    out: list[list[str]] = []
    prev = ""
    for raw in text.split("\n"):
        if out and prev.rstrip().endswith(_TIMEOUT_HEAD) and raw.strip().startswith("WorkNCCL("):
            out[-1].append(" " + raw.strip())  # the message broken after its 'timeout:'
        elif (out and len(out[-1]) <= _WRAP_PIECES and len(prev) >= _WRAP_MIN and not _ends_sentence(prev, raw)
                and raw.strip() and not _STARTS_LINE.match(raw.strip())
                and not _PG.search(raw) and not _TORCH_RANK.search(raw)  # a rank's own line ('  what():  [Rank 1]')
                and _message_head("".join(out[-1]))):
            out[-1].append(raw)
        else:
            out.append([raw])
        prev = raw
    return out


def _ends_sentence(prev: str, raw: str) -> bool:
    """``prev`` ends its message with a full stop: not a number's point a wrap broke after
    ('[E0709 17:05:38.' then '162814866 ProcessGroupNCCL.cpp...')."""
    return prev.rstrip().endswith(".") and not (prev.endswith(".") and prev[-2:-1].isdecimal() and raw[:1].isdecimal())


def _message_head(head: str) -> bool:
    """A line whose wrapped tail may follow it: a watchdog message's, C10D_NCCL_CHECK's ``NCCL error in:``
    or the watchdog's ``NCCL error:`` (a word wrap may break either before its FILE:LINE: harvest 30's
    LUMI Q&A, 'DistBackendError: NCCL error in: ' then '  ../torch/csrc/...cpp:1691, internal error, '), or
    any glog or torch rank line (at a narrow width its first piece ends before the file name or the group's prefix)."""
    return ("ProcessGroupNCCL" in head or "Rank " in head or "NCCL error" in head
            or bool(_STARTS_LINE.match(head.strip())))


def _joined_search(rx: re.Pattern[str], pieces: list[str]) -> re.Match[str] | None:
    """``rx`` in a line a paste wrapped into ``pieces``: each wrap fell inside a word or at a blank
    the paste may have dropped, so each join is tried both ways (at most 2 ** (_GLUE_PIECES - 1));
    a line wrapped into more pieces (a narrow terminal) is matched with every blank taken out of
    it and of ``rx`` (the fields read are numbers and names, which hold no blank). Of the joins
    that match, the one that reads the most of ``rx``'s optional fields wins (a blank dropped
    before 'milliseconds' lost the time the work ran)."""
    best: re.Match[str] | None = None
    for m in _matches(rx, pieces):
        if best is None or _filled(m) > _filled(best):
            best = m
        if _filled(best) == len(best.groups()):
            break
    return best


def _filled(m: re.Match[str]) -> int:
    return sum(g is not None for g in m.groups())


def _matches(rx: re.Pattern[str], pieces: list[str]) -> Iterator[re.Match[str]]:
    if m := rx.search("".join(pieces)):
        yield m
    if len(pieces) > _GLUE_PIECES:
        if m := _compact(rx).search(re.sub(r"\s+", "", "".join(pieces))):
            yield m
        return
    for glue in itertools.product(("", " "), repeat=len(pieces) - 1):
        joined = pieces[0].rstrip() if glue and glue[0] else pieces[0]
        for sep, piece in zip(glue, pieces[1:]):
            joined = (joined.rstrip() + " " + piece.strip()) if sep else joined + piece
        if m := rx.search(joined):
            yield m


@functools.cache
def _compact(rx: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(rx.pattern.replace(" ", ""))


# WorkNCCL::printTraceback (2.5+): 'Stack trace of the failed collective: \n' and the trace, or, where the Flight
# Recorder holds none, 'Stack trace of the failed collective not found, potentially because FlightRecorder is
# disabled. ...': a trace NOT printed (a wrap may have dropped the blank before 'not')
_STACK_TRACE = re.compile(r"Stack trace of the failed collective ?(?:(?P<absent>not ?found)|:)")


def _stack_trace(data: dict[str, Any], line: str) -> None:
    """One printTraceback line: a trace printed (``stack_traces``) or not found (``stack_traces_not_found``);
    the message's head alone (cut before either) is a cut message."""
    if m := _STACK_TRACE.search(line):
        data["flight_recorder"]["stack_traces_not_found" if m["absent"] else "stack_traces"] += 1
    else:
        _incomplete(data, line)


def _incomplete(data: dict[str, Any], line: str) -> None:
    """A timeout or progress message without its numbers: cut (or wrapped past what can be joined)."""
    if len(data["errors"]) < _MAX_LISTED:
        data["errors"].append(f"a watchdog message without its numbers ('{line[-80:]}'): cut short")


def _int(v: str | None) -> int | None:
    return int(v) if v is not None else None


def _faults(data: dict[str, Any]) -> list[str]:
    out = [f"rank {t['rank']}: watchdog timeout of {t['op']} (SeqNum {t['seq']}) after {t['ran_ms'] or t['timeout_ms']} ms"
           for t in data["timeouts"]]
    out += [f"rank {p['rank']}: failed at work {p['failed_seq']} (last completed {p['last_completed']})"
            for p in data["progress"]]
    out += [f"rank {d['rank']}: Flight Recorder dump signal from {d['from']}" for d in data["dump_signals"]]
    out += [f"rank {r}: watchdog heartbeat timed out" for r in data["heartbeat_timeouts"]]
    out += [f"NCCL error{' in ' + e['where'] if e['where'] else ''}: {e['result']}" for e in data["nccl_errors"]]
    if data["process_down"]:
        out.append(f"the watchdog took {data['process_down']} process(es) down")
    if data["terminated"]:
        out.append(f"the watchdog thread terminated with an exception {data['terminated']} time(s)")
    if data["blocking_wait"]:
        out.append("a collective timed out in blocking wait")
    out += [f"the Flight Recorder analyzer: ranks {', '.join(map(str, m['missing_ranks'] or []))} never joined "
            f"{m['op']} (sequence number {m['seq']}{', group ' + m['pg'] if m['pg'] else ''})" for m in data["flight_recorder"]["mismatches"]]
    for d in data["desync"]:
        lag = [f"ranks {_ranks(d['never_joined'])} never joined any collective"] if d["never_joined"] else []
        lag += [f"ranks {_ranks(d['joined_not_finished'])} joined but did not finish #{d['lag_seq']}"] \
            if d["joined_not_finished"] else []
        lag += [f"ranks {_ranks(d['finished_not_joined'])} finished #{d['lag_seq']} but did not join "
                f"#{d['lag_seq'] + 1}"] if d["finished_not_joined"] and d["lag_seq"] is not None else []
        out.append(f"rank {d['rank']}: desync report at {d['op']} #{d['seq']}" + (f": {'; '.join(lag)}" if lag else ""))
    fr = data["flight_recorder"]
    if not out and any(v for k, v in fr.items() if k not in ("mismatches", "frames", "stack_traces_not_found")):
        out.append("a Flight Recorder dump was taken (a collective timed out on some rank)")
    elif not out and fr["stack_traces_not_found"]:
        out.append("a failed collective's stack trace was not found (the Flight Recorder is disabled: "
                   "TORCH_NCCL_TRACE_BUFFER_SIZE=0)")
    return list(dict.fromkeys(out))[:_MAX_LISTED]
