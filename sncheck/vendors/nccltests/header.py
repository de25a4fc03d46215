"""The header nccl-tests prints before its table, and what says it is whole.

NVIDIA/nccl-tests ``src/common.cu`` (``run()``; from 2.18 ``writeDeviceReport`` in
``src/util.cu``) prints, in this order: the ``# nThread`` line, whose last field is
``validation: %d`` (2.0 to 2.12, rccl-tests' ``nThreads:`` form too), ``graph: %d`` (2.13 on)
or ``unalign: %d`` (2.19); the optional ``# Blocking Enabled`` / ``# Per-Iteration Report`` /
``# Parallel Init`` lines; ``#``; ``# Using devices``; then each process's block of
``nThreads x nGpus`` ``#  Rank`` lines (one snprintf buffer a process, ``rank =
proc*nThreads*nGpus + i``, gathered to rank 0 in process order by ``MPI_Gather``: ranks from 0,
ascending, a process's block whole, each line ending with the bus id ``[...]`` and the device's
name; a block over 2048 bytes ends ``...``); NCCL's banner; ``#``; the column header
(``print_header``/``writeResultHeader``); then the rows.

So a header with lines dropped from its middle (a splice: text left out from inside the
header up to the column header or the first row) shows: the ``# nThread`` line ends before
its last field, no ``# Using devices``, no ``Rank`` line, a first rank other than 0, ranks out
of order, a process's block short of ``nThreads x nGpus`` lines, a Rank line without its bus
id and name, or rows with no column header above them.

Held where the header is as printed (its ``# nThread`` line keeps its ``#``): a document whose
author stripped the ``#`` (an mkdocs block) edited the header too. A reporter's elision of
whole processes keeps the rules (the first rank and each listed process's block whole):
harvest7's 16-rank guide lists ranks 0, 7, 8 and 15 of one GPU a process; rccl-tests'
``nRanks: N`` states the processes, so its device list must hold ``N x nThreads x nGpus``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from sncheck.vendors.delivery import ELISION

THREADS_LINE = re.compile(
    r"^nThreads?:?\s+(\d+)\s+nGpus:?\s+(\d+)(?:\s+nRanks:?\s+(\d+))?"
)
RANK_LINE = re.compile(
    r"^Rank\s+(\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?(?:Pid\s+(?P<pid>\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)"
    r"(?:\s+\[([^\]]*)\])?\s*(.*)"
)
# the nThread line's last field, by version (the module docstring)
_THREADS_END = re.compile(r"\b(?:validation|graph|unalign):?\s+\d+\s*$")


def column_header_check(content: str) -> str | None:
    """For a column-header line, the kind of its check column: 'wrong' or 'error'."""
    tokens = content.split()
    if (
        not {"time", "cputime"} & set(tokens)
        or "algbw" not in tokens
        or not ({"size", "bytes"} & set(tokens))
    ):
        return None
    if "#wrong" in tokens or "wrong" in tokens:
        return "wrong"
    return "error"


def incomplete(lines: Sequence[tuple[int, str]], is_row: Callable[[str], bool]) -> list[str]:
    """What shows lines missing from the first run's header (see the module): ``lines`` are the
    log's (number, line without its launcher label, '#' kept); ``is_row``: a result row."""
    start = next((k for k, (_, line) in enumerate(lines)
                  if line.startswith("#") and line.lstrip("#").strip().startswith("nThread")), None)
    if start is None:
        return []  # no header as printed: a paste of the table, or an author's edited copy
    at, first = lines[start]
    threads = THREADS_LINE.match(first.lstrip("#").strip())
    if threads is None:
        return [f"line {at}: the '# nThread' line is cut before its nGpus: the header's lines were left out from "
                "there, not whole"]
    out = []
    if not _THREADS_END.search(first):
        out.append(f"line {at}: the '# nThread' line ends before its last field (validation, graph or unalign): "
                   "the header's lines were left out from there, not whole")
    using = elided = table = False
    ranks: list[int] = []
    for k, line in lines[start + 1:]:
        content = line.lstrip("#").strip()
        if column_header_check(content):
            table = True
            break
        if not line.startswith("#") and is_row(content):
            out.append(f"line {k}: a result row with no column header above it (common.cu prints the header "
                       "first): the header's lines were left out, not whole")
            table = True
            break
        if content == "Using devices":
            using = True
        elif ELISION.match(content) or content.endswith("..."):
            elided = True  # a reporter's '...', or a process's list over 2048 bytes (common.cu)
        elif (m := RANK_LINE.match(content)) and m.group(6) is not None and m.group(7).strip():
            ranks.append(int(m.group(1)))
        elif line.startswith("#") and re.match(r"Rank\s+\d+", content):
            out.append(f"line {k}: a Rank line without its device, bus id or name ({content[:60]!r}): cut, not whole")
    if not table:
        return out  # the log stops in its header: said by the view's end
    if not using:
        out.append("no '# Using devices' line after '# nThread' (common.cu prints it before the ranks): the "
                   "header's lines were left out, not whole")
    if not ranks:
        return out + ["no '#  Rank' line in the header (common.cu prints one a GPU): not whole"] if using else out
    if elided:
        return out
    per = int(threads.group(1)) * int(threads.group(2))
    if ranks[0] != 0:
        out.append(f"the device list starts at rank {ranks[0]}, not 0 (rank 0's process prints first): lines left "
                   "out, not whole")
    if any(b <= a for a, b in zip(ranks, ranks[1:])):
        out.append("the device list's ranks are not in ascending order (gathered in process order): lines left "
                   "out or spliced, not whole")
    short = sorted(p for p, n in Counter(r // per for r in ranks).items() if n != per) if per else []
    if short:
        out.append(f"process {short[0]}'s block of Rank lines holds other than nThreads x nGpus = {per} (each "
                   "process prints its own whole): lines left out, not whole")
    if threads.group(3) is not None and len(ranks) != per * int(threads.group(3)):
        out.append(f"{len(ranks)} Rank lines, where nRanks {threads.group(3)} x nThreads x nGpus is "
                   f"{per * int(threads.group(3))}: lines left out, not whole")
    return out
