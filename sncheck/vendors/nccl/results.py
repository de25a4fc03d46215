"""NCCL's error results as a job's log names them, and who printed each (the ``nccl-debug`` view's).

``ncclGetErrorString`` (NVIDIA/nccl ``src/init.cc``) names each result: "unhandled cuda error",
"unhandled system error", "internal error - please report this issue to the NCCL developers",
"invalid argument", "invalid usage", "remote process exited or there was a network error";
NCCL's callers print it (nccl-tests' ``Test NCCL failure``, PyTorch's ``NCCL error in:``) and
PyTorch names it too (``ncclSystemError: ...``). Who printed it, where the line says so:

- an NCCL line (``HOST:PID:TID [DEV] NCCL INFO ...``): its host and pid;
- nccl-tests (and rccl-tests) ``src/common.h`` NCCLCHECK, built against NCCL 2.13 or later:
  ``printf("%s: Test NCCL failure %s:%d '%s / %s'\\n", hostname, __FILE__, __LINE__,
  ncclGetErrorString(res), ncclGetLastError(NULL))`` (``'%s'`` alone against an older NCCL): its
  host, getHostName's (the name cut at its first '.'); the pid is on TESTCHECK's
  `` .. HOST pid PID: Test failure FILE:LINE`` lines after it, not on it;
- PyTorch (``torch/csrc/distributed/c10d/NCCLUtils.hpp`` C10D_NCCL_CHECK, ``ProcessGroupNCCL.cpp``):
  c10's ``[rankN]:`` before the line (2.3+) or the group's ``logPrefix()`` rank in it (``[Rank 3] ``,
  ``[PG 0 Rank 3] ``, ``[PG ID 0 PG GUID 0(default_pg) Rank 3] ``): its rank.

Each (result, host, pid, rank) is one entry of ``nccl_error_sources`` with the lines that printed it:
``{"result", "host", "pid", "rank", "lines"}`` (a field the line does not carry: null).
"""

from __future__ import annotations

import re
from typing import Any

RESULTS = ("unhandled cuda error", "unhandled system error", "internal error - please report",
           "remote process exited or there was a network error", "invalid usage", "invalid argument")
_RESULT = re.compile("|".join(re.escape(r) for r in RESULTS))
_RESULT_NAME = re.compile(r"\bnccl(?:UnhandledCuda|System|Internal|InvalidArgument|InvalidUsage|Remote)Error\b")
_RESULT_OF_NAME = {"ncclUnhandledCudaError": "unhandled cuda error", "ncclSystemError": "unhandled system error",
                   "ncclInternalError": "internal error - please report", "ncclInvalidArgument": "invalid argument",
                   "ncclInvalidUsage": "invalid usage",
                   "ncclRemoteError": "remote process exited or there was a network error"}
_TEST_HOST = re.compile(r"^(?P<host>[\w.-]+): Test NCCL failure ")
_TORCH_RANK = re.compile(r"^\[rank(\d+)\]:|\bRank (\d+)\] ")
_MAX_LISTED = 200


def named_results(line: str) -> list[str]:
    """The results ``line`` names, each once, in the order it names them."""
    named = [next(r for r in RESULTS if m.group(0).startswith(r)) for m in _RESULT.finditer(line)]
    named += [_RESULT_OF_NAME[m.group(0)] for m in _RESULT_NAME.finditer(line)]
    return list(dict.fromkeys(named))


def printed(sources: list[dict[str, Any]], result: str, line: str, who: dict[str, Any] | None) -> None:
    """Count ``line``'s printing of ``result`` in ``sources``: by the NCCL line's host and pid (``who``,
    the line's prefix read), else nccl-tests' host or PyTorch's rank, where the line carries them."""
    host, pid = (who["host"], who["pid"]) if who is not None else (None, None)
    rank: int | None = None
    if who is None and (m := _TEST_HOST.match(line)):
        host = m["host"]
    if who is None and (m := _TORCH_RANK.search(line)):
        rank = int(m[1] or m[2])
    for source in sources:
        if (source["result"], source["host"], source["pid"], source["rank"]) == (result, host, pid, rank):
            source["lines"] += 1
            return
    if len(sources) < _MAX_LISTED:
        sources.append({"result": result, "host": host, "pid": pid, "rank": rank, "lines": 1})


def where(sources: list[dict[str, Any]], result: str) -> str:
    """' (on node1, node2, rank 7 and 3 more)': the hosts and ranks that printed ``result``, where known."""
    said = [f"{'rank ' if k == 'rank' else ''}{v}" for k in ("host", "rank")
            for v in dict.fromkeys(s[k] for s in sources if s["result"] == result and s[k] is not None)]
    return f" (on {', '.join(said[:3])}{f' and {len(said) - 3} more' if len(said) > 3 else ''})" if said else ""
