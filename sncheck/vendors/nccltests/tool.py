"""nccl-tests / rccl-tests as a vendor's collective tool (:class:`sncheck.vendors.base.CollectiveTool`).

rccl-tests is a fork of nccl-tests: the same binaries, flags and log layout. The launch
line is validation on (``-c 1``) and one GPU per process (``-g 1``)::

    all_reduce_perf -b 8 -e 1073741824 -f 2 -g 1 -c 1 -n 5 -w 2

which a launcher (:mod:`sncheck.launch.commands`) starts on the group's hosts.
"""

from __future__ import annotations

import posixpath
from typing import Any

from sncheck.rows import collective_row
from sncheck.vendors.base import CollectiveTool
from sncheck.vendors.nccltests.parse import parse_nccl_tests, parse_rccl_tests

# The binary of each collective the plans name.
BINARIES: dict[str, str] = {
    "all_reduce": "all_reduce_perf",
    "all_to_all": "alltoall_perf",
    "sendrecv": "sendrecv_perf",
}


def argv(collective: str, min_bytes: int, max_bytes: int, *, step_factor: int = 2,
         iters: int | None = None, warmup: int | None = None, directory: str | None = None) -> list[str]:
    """An nccl-tests command line with validation on (``-c 1``) and one GPU per process."""
    if collective not in BINARIES:
        raise ValueError(f"no nccl-tests binary for {collective!r}; known: {', '.join(BINARIES)}")
    if not 0 < min_bytes <= max_bytes or step_factor < 2:
        raise ValueError(f"bad size sweep {min_bytes}..{max_bytes} x{step_factor}")
    binary = BINARIES[collective]
    out = [posixpath.join(directory, binary) if directory else binary,
           "-b", str(min_bytes), "-e", str(max_bytes), "-f", str(step_factor), "-g", "1", "-c", "1"]
    if iters is not None:
        out += ["-n", str(iters)]
    if warmup is not None:
        out += ["-w", str(warmup)]
    return out


def collective_rows(parsed: dict, group: Any, collective: str, repeat: int) -> list[dict]:
    """``collective`` rows from one parsed nccl-tests log: per size, the out-of-place
    timings as the row's time/algbw/busbw, and the in-place ones alongside."""
    rows = []
    for r in parsed.get("rows") or []:
        oop, inp = r["out_of_place"], r["in_place"]
        known = [w for w in (oop.get("wrong"), inp.get("wrong")) if w is not None]
        errs = [e for e in (oop.get("max_error"), inp.get("max_error")) if e is not None]
        rows.append(collective_row(
            group.id, group.kind, parsed.get("ranks") or len(group.members), collective, r["size_bytes"],
            r["count"], r["type"], repeat, time_us=oop.get("time_us"),
            algbw=oop.get("algbw_GBps"), busbw=oop.get("busbw_GBps"),  # as nccl-tests printed them
            wrong=sum(known) if known else None, max_error=max(errs) if errs else None,
            # the in-place half where the log has it (null where it printed N/A)
            time_in_place_us=inp.get("time_us"), algbw_in_place_GBps=inp.get("algbw_GBps"),
            busbw_in_place_GBps=inp.get("busbw_GBps"),
            status="ok" if oop.get("time_us") is not None else "error"))
    return rows


NCCL_TESTS = CollectiveTool("nccl-tests", BINARIES, parse_nccl_tests, argv, collective_rows)
RCCL_TESTS = CollectiveTool("rccl-tests", BINARIES, parse_rccl_tests, argv, collective_rows)
