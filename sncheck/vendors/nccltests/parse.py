"""Parse nccl-tests and rccl-tests output (all_reduce_perf, alltoall_perf, ...).

``parse_nccl_tests(text)`` returns (the ``sncheck parse nccl-tests FILE --json`` contract)::

    {"tool": "nccl-tests",            # "rccl-tests" from parse_rccl_tests
     "version": "2.19.6",             # the "# nccl-tests version" line (2.18 on), else null
     "nccl_version": 22807,           # its nccl-library= code, else null
     "nccl_release": "2.9.6",         # NCCL's own 'NCCL version 2.9.6+cuda11.2' banner line, else null
     "library": {"rccl_version": "2.28.3-..", "hip_version": "7.3.53390-..", "rocm_version": "..",
                 "hostname": "..", "librccl_path": ".."},  # rccl-tests' block; null when not printed;
                                      # rccl-tests' "version" is its "rccl-tests: Version develop:83d38d9"
     "collective": "all_reduce",      # null when neither the log nor the caller names it
     "ranks": 16,                     # null when the log does not show the ranks
     "config": {"nthreads": 1, "ngpus": 8, "minBytes": 8, "maxBytes": 8589934592, "warmup_iters": 5,
                "iters": 20, "agg_iters": 1, "validation": 1, "graph": 0,   # the nThread line, null without;
                "step_factor": 2},                # or step_bytes (-i): 'step: 2(factor)'
     "devices": [{"rank": 0, "host": "node1", "device": 0, "bus_id": "0000:1b:00",
                  "name": "NVIDIA H100 80GB HBM3",
                  "group": 0, "pid": 6899}],   # the "#  Rank" lines as printed (group null before 2.13)
     "rows": [{"size_bytes": 8, "count": 2, "type": "float",
               "redop": "sum",        # null when the column is absent or blank
               "root": -1,            # null when the column is absent
               "out_of_place": {"time_us": 135.8, "algbw_GBps": 0.0, "busbw_GBps": 0.0,
                                "wrong": 0, "max_error": null},  # + i_min_us, i_max_us, i_p99_us,
               "in_place":     {...same keys...}}],              #   i_cv_pct with -I 1 (2.19)
               # + "timestamp": "2025-03-03 12:00:01" with -Z (2.18)
     "avg_busbw_GBps": 70.742,        # null without the footer
     "out_of_bounds": 0,              # null without the footer
     "errors": []}                    # failure lines, truncation; empty on a clean run

``wrong`` is the integer ``#wrong`` column of newer layouts. Older layouts print an
``error`` (or NCCL 1.0 ``res``) column instead: that float goes into ``max_error`` and
``wrong`` stays null. ``N/A`` and anything the log does not show are null, never guessed.
rccl-tests ``-O 0`` prints the in-place half alone: the out-of-place half is all null.

The parser copes with interleaved NCCL INFO and MPI lines, comment characters stripped by
a document author, elided ``...`` lines and truncated runs; the delivery (launcher labels,
quoting, fences) is undone before it (:mod:`sncheck.vendors.delivery`). It raises
``ParseError`` only when the text holds neither a results table nor a recognisable error.
The grammar it reads is :data:`sncheck.vendors.nccltests.parse_grammar.GRAMMAR`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end, listing
from sncheck.vendors.delivery import ELISION
from sncheck.vendors.nccltests import header, nccl_json, sweep
from sncheck.vendors.nccltests.header import RANK_LINE as _RANK_LINE, THREADS_LINE as _THREADS_LINE
from sncheck.vendors.nccltests.header import column_header_check as _column_header_check

# mpirun --tag-output "[1,0]<stdout>:" and srun --label "0: " in front of every line.
_LAUNCHER_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:(?=\s|$))\s*")
# MPICH hydra's -prepend-rank labels each chunk it forwards, not each line: a row printed in three
# pieces (common.cu: the size/count/type/redop/root part, then each half's timing) carries '[0] '
# before each (nccl#1453); the label at the line's start is the delivery's, these are read out of a
# line that then reads as a whole row (never out of any other line: NCCL INFO's '0[0] -> 1[1]').
# Open MPI's --tag-output does the same (orte/mca/iof/base/iof_base_output.c orte_iof_base_write_output:
# the tag '[J,R]<stdout>:' before each chunk it forwards and after each newline inside it, none at a
# chunk's end that is not a line's): '-1[1,0]<stdout>:    85.14 ...' (harvest 30's EKS p5 log)
_CHUNK_LABEL = re.compile(r"(?<=\S)(?:\[\d+\] ?|\[\d+,\d+\]<std(?:out|err)>: ?)")
_COLLECTIVE_HEADER = re.compile(r"Collective test (?:starting|concluded):\s*(\S+)")
# The collectives of the nccl-tests binaries (<name>_perf, <name>_perf_mpi): the one list.
COLLECTIVES = ("all_reduce", "all_gather", "alltoall", "alltoallv", "reduce_scatter", "sendrecv", "broadcast",
               "reduce", "gather", "scatter", "hypercube")
_BINARY_NAME = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(sorted(COLLECTIVES, key=len, reverse=True)) + r")_perf(?:_mpi)?(?![A-Za-z0-9])"
)
_STEP = re.compile(r"step:\s*(\d+)\((factor|bytes)\)")  # common.cu: "step: %ld(%s)", "factor" or "bytes"
_REDUCED = re.compile(r"^Reducing maxBytes to (\d+) due to memory limitation")
_CONFIG = re.compile(r"(minBytes|maxBytes|warmup iters|agg iters|iters|validation|graph|unalign):?\s+(\d+)")
# 2.20 builds print their git hash after the version: "2.20.0 (b4d5bee) nccl-headers=23102 ..."
# rocm-systems' rccl-tests (2.17.x) print the same line under their names: "# rccl-tests version 2.17.9-..
# rccl-headers=22803 rccl-library=22803" (real capture ROCm/rocm-systems PR 3415)
_VERSION = re.compile(r"^[nr]ccl-tests version (\S+)(?: \([0-9A-Za-z._-]+\))?(?: [nr]ccl-headers=\d+)?"
                      r"(?: [nr]ccl-library=(\d+))?")
# rccl-tests: "rccl-tests: Version develop:83d38d9" (src/common.cu: PRINT("rccl-tests: Version %s\n",
# rcclTestsGitHash)); 2025 builds add "RCCL version : 2.28.3-..", "HIP version  : ..", "ROCm version : ..",
# "Hostname     : ..", "Librccl path : .." before the table (real captures: rccl-tests/01, r3, harvest)
_RCCL_TESTS_VERSION = re.compile(r"^rccl-tests: Version (\S+)")
# NCCL's own banner on rank 0 (init.cc showVersion: 'NCCL version %d.%d.%d%s' with '+cuda%d.%d'), printed
# between the device list and the table of any nccl-tests release; RCCL prints the same line. Under
# NCCL_DEBUG=INFO (showVersion: INFO, not VERSION, above the WARN level) it is an INFO line of NCCL's log:
# 'host:21:21 [0] NCCL INFO NCCL version 2.22.3+cuda12.2' (harvest 21's EKS/EFA run)
_NCCL_BANNER = re.compile(r"^(?:\S*:\d+:\d+ \[\d+\] NCCL INFO )?NCCL version (\d+\.\d+\.\d+)(?:[+.-]\S*)?$")
_RCCL_LIBRARY = re.compile(r"^(RCCL version|HIP version|ROCm version|Hostname|Librccl path)\s*:\s*(\S.*?)\s*$")
_OUT_OF_BOUNDS = re.compile(r"^Out of bounds values\s*:\s*(\d+)\s*(\w+)?")
_AVG_BUSBW = re.compile(r"^Avg bus bandwidth\s*:\s*(\S+)\s*(FAILED|OK)?")
_NCCL_ERROR_LINE = re.compile(r"^error: (.+)")  # 2.18 writeErrors: ncclGetLastError()
_TIMESTAMP = re.compile(r"\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_UNSIGNED = re.compile(r"^[0-9]+$")
_FLOAT = re.compile(
    r"^(?:[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|nan))$",
    re.IGNORECASE,
)
_ERROR_TEXT = re.compile(
    r"NCCL failure|Test (?:NCCL |CUDA |HIP )?failure|Test timeout|Cuda failure|CUDA failure|HIP failure|"
    r"Segmentation fault|SIGSEGV|Bus error|core dumped|terminate called|MPI_ABORT|"
    r"exited on signal|srun: error:|returned a non-zero exit code|NCCL error"
)
# A wrapper's banner or command line for the next test, after this one concluded: a
# collective's name, whole or cut ("======== reduce_scatter_p").
_NEXT_TEST = re.compile(r"(?<![A-Za-z0-9])(?:all_reduce|all_gather|alltoallv?|reduce_scatter|sendrecv|broadcast|"
                        r"reduce|gather|scatter|hypercube)(?:_p\w*)?(?![A-Za-z0-9])")
_MAX_ERRORS = 50
# NCCL's own log lines ('host:pid:tid [dev] NCCL INFO ...') and UCX's (its log goes to stdout by
# default: '[1733.2:0:1733] ... UCX  WARN ...'): the job's libraries', printed after the footer too
_NCCL_LOG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b|\bUCX\s+(?:ERROR|WARN|DIAG|INFO|DEBUG)\b")
# The launcher's own lines, printed when the job ends, after the footer: Open MPI's help
# aggregation (orte/util/show_help.c, prrte's help_output: '[host:pid] N more processes have
# sent help message help-X.txt / topic' and 'Set MCA parameter "orte_base_help_aggregate" to 0
# to see all help / error messages'), the shell's `time` (real/user/sys) and ssh -t's 'Connection to
# HOST closed.' (clientloop.c), and the MPI library's Slingshot summary at MPI_Finalize, the world's
# rank 0 alone: HPE's Cassini counter report, 'MPICH Slingshot Network Summary: N network timeouts' (Cray
# MPICH; real capture harvest 30's Polaris files) and Open MPI's 'OpenMPI Slingshot Network Summary: %ld
# network timeouts' (HPE's ompi_hwpc_cxi counters, opal_output at the default report level 1). A topic
# that is an abort or a fatal error is the job's failure, never the launcher's chatter.
_LAUNCHER = re.compile(r"^(?:\[[^\]\s]+:\d+\]\s+)?(?:\d+ more process(?:es)? ha(?:s|ve) sent help message (?P<topic>.*)|"
                       r"Set MCA parameter \"\w*help_aggregate\" to 0 to see all help / error messages)\s*$|"
                       r"^(?:real|user|sys)\s+\d+m[\d.]+s\s*$|"
                       r"^(?:MPICH|OpenMPI) Slingshot Network Summary: \d+ network timeouts$|"
                       r"^Connection to \S+ closed\.$")  # ssh -t's own, at its end (clientloop.c)
_LAUNCHER_FAILURE = re.compile(r"abort|fatal", re.IGNORECASE)  # (not "error": "error in device init" is a warning)


@dataclass
class _State:
    """What the line scanner has seen so far."""

    collective: str | None = None
    check_column: str | None = None  # "wrong" or "error", from the column header
    table_seen: bool = False
    rank_ids: set[int] = field(default_factory=set)
    header_ranks: int | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    out_of_bounds_verdict: str | None = None
    errors: list[str] = field(default_factory=list)
    header_seen: bool = False  # the run's own header: nThread line, device list, Collective line
    binary: str | None = None  # the *_perf binary named on a command line in the log
    finished: bool = False  # the Avg bus bandwidth footer closed the first run
    more_runs: str = ""  # the line a second run started with after that footer; it is not parsed
    started: bool = False  # "# Collective test starting" (2.16 on): "concluded" must close the run
    concluded: bool = False
    next_test: str | None = None  # a line after the run naming the next test (a wrapper's banner)
    halves: tuple[str, ...] = ("out_of_place", "in_place")  # rccl-tests -O 0 prints the in-place half only
    per_iteration: bool = False  # 2.19 -I 1: four more cells a half
    timestamps: bool = False  # 2.18 -Z: a "%Y-%m-%d %H:%M:%S" column after the in-place half
    version: str | None = None  # "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807"
    nccl_version: int | None = None
    nccl_release: str | None = None  # "NCCL version 2.9.6+cuda11.2": the release NCCL's banner names
    library: dict[str, str] = field(default_factory=dict)  # rccl-tests' RCCL/HIP/ROCm version block
    config: dict[str, int] = field(default_factory=dict)
    rows_after_end: int = 0  # result rows after the footer, without a run's header before them
    after_end: list[tuple[int, str]] = field(default_factory=list)  # other text after the footer (not NCCL's,
    # not common.cu's), with its line's number
    # per reporter's '...' before the footer: the rows read before it -> the first such mark's line and text
    gaps: dict[int, tuple[int, str]] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)


def parse_nccl_tests(text: str, collective: str | None = None, path: str | None = None) -> dict[str, Any]:
    """Parse one nccl-tests log, or its ``-J`` JSON. The collective is the one the log names
    (``# Collective test starting/concluded:``, a ``*_perf`` binary on a command line), else
    ``collective`` (a caller's hint), else a collective name in ``path`` (the last resort)."""
    if (doc := nccl_json.load(text)) is not None:
        return nccl_json.parse(doc, collective or collective_from_path(path), tool="nccl-tests")
    return _parse(text, collective or collective_from_path(path), tool="nccl-tests")


def parse_rccl_tests(text: str, collective: str | None = None, path: str | None = None) -> dict[str, Any]:
    """Parse one rccl-tests log (or its JSON lines); the nccl-tests result, ``tool`` rccl-tests."""
    if (doc := nccl_json.load(text)) is not None:
        return nccl_json.parse(doc, collective or collective_from_path(path), tool="rccl-tests")
    return _parse(text, collective or collective_from_path(path), tool="rccl-tests")


def collective_from_path(path: str | None) -> str | None:
    """``logs/2nodes/all_reduce_perf.log`` -> ``all_reduce``: a known collective, never a guess."""
    m = _BINARY_NAME.search(path or "")
    return m.group(1) if m else None


def normalize_collective(name: str) -> str:
    """``/opt/nccl-tests/build/all_reduce_perf_mpi`` -> ``all_reduce``."""
    base = name.strip().rsplit("/", 1)[-1]
    return re.sub(r"_perf(?:_mpi)?$", "", base)


def _parse(text: str, hint: str | None, tool: str) -> dict[str, Any]:
    state = _State()
    lines = [(at, _clean(raw)) for at, raw in after_end.numbered(text)]
    for at, line in lines:
        _scan_line(line, at, state)
        if state.more_runs:
            break
    state.errors += header.incomplete(lines, lambda c: _row_of(c, _State()) is not None)
    if not state.table_seen and not state.rows and not state.errors and not state.header_seen:
        raise ParseError(
            "no nccl-tests results table and no error text found", tool=tool
        )
    _judge_end(state, tool)
    return {
        "tool": tool,
        "version": state.version,
        "nccl_version": state.nccl_version,
        "nccl_release": state.nccl_release,
        "library": state.library or None,
        "collective": _pick_collective(state.collective or state.binary, hint, text),
        # Rank ids run 0..n-1; the highest one still counts when an author elided the list.
        "ranks": max(state.rank_ids) + 1 if state.rank_ids else state.header_ranks,
        "config": state.config or None,
        "devices": state.devices,
        "rows": state.rows,
        "avg_busbw_GBps": state.avg_busbw,
        "out_of_bounds": state.out_of_bounds,
        "errors": state.errors,
    }


def _judge_end(state: _State, tool: str) -> None:
    """What the grammar's end says of the log: the footer, "concluded" after "starting", a
    next test begun after it."""
    if state.header_seen and not state.table_seen and not state.rows and not state.errors:
        state.errors.append("the log stops before the results table (cut short, or the run hung)")
    if state.table_seen and state.avg_busbw is None and state.out_of_bounds is None and not state.errors:
        state.errors.append(
            "truncated run: the table ends without the '# Out of bounds values' / "
            "'# Avg bus bandwidth' footer"
        )
    if state.table_seen and state.out_of_bounds is not None and state.avg_busbw is None and not state.errors:
        state.errors.append("truncated run: the '# Avg bus bandwidth' line after '# Out of bounds values' is missing")
    if state.started and state.finished and not state.concluded and not state.errors:
        state.errors.append("truncated run: '# Collective test starting' without its '# Collective test concluded' "
                            "line (cut short)")
    if state.out_of_bounds_verdict == "FAILED":
        state.errors.append(
            f"{state.out_of_bounds} out-of-bounds values (wrong results) reported"
        )
    step = _step(state)  # once: every gap is judged by the same step
    state.errors += [listing.elision(*state.gaps[at], why)
                     for at in sorted(state.gaps) if (why := _rows_left_out(state, at, step))]
    if state.finished:
        state.errors += sweep.rows_missing(state.rows, state.config, set(state.gaps))
    if state.rows_after_end:
        state.errors.append(after_end.records_without_start(state.rows_after_end, "result row", "footer"))
    state.errors += _unchecked(state)
    if state.more_runs:
        state.errors.append(after_end.two_runs(state.more_runs))
    elif state.next_test:
        state.errors.append(f"the next test began after this one ({state.next_test!r}) and the log ends there: cut short")
    elif said := after_end.not_read(state.after_end, tool):
        state.errors.append(said)


def _unchecked(state: _State) -> list[str]:
    """Rows whose out-of-place check cell is N/A under a banner that says ``validation: 1``:
    common.cu prints N/A only where it did not check (-c 0); the in-place half of a collective
    that has none to check (alltoall, sendrecv) prints N/A beside a checked out-of-place one."""
    if state.config.get("validation") != 1:
        return []
    bare = [r["size_bytes"] for r in state.rows if r["out_of_place"]["time_us"] is not None
            and r["out_of_place"]["wrong"] is None and r["out_of_place"]["max_error"] is None]
    if not bare:
        return []
    return [f"{len(bare)} row(s) (first: {bare[0]} bytes) show N/A for the out-of-place check while the banner "
            "says 'validation: 1': their results were not checked, not judged"]


def _step(state: _State) -> tuple[str, float] | None:
    """The size loop's step (common.cu: size*stepfactor, or size+stepbytes): from the nThread
    line, else the ratio every pair of adjacent rows shows; None when neither says."""
    cfg = state.config
    if cfg.get("step_factor", 0) > 1:
        return "factor", float(cfg["step_factor"])
    if cfg.get("step_bytes", 0) > 0:
        return "bytes", float(cfg["step_bytes"])
    sizes = [r["size_bytes"] for r in state.rows]
    ratios = sorted(b / a for i, (a, b) in enumerate(zip(sizes, sizes[1:]), 1) if 0 < a < b and i not in state.gaps)
    if not ratios:
        return None
    mid = ratios[len(ratios) // 2]  # the printed sizes are rounded: every ratio within 10% of one factor
    return ("factor", mid) if all(abs(r - mid) <= 0.1 * mid for r in ratios) else None


def _rows_left_out(state: _State, at: int, step: tuple[str, float] | None) -> str | None:
    """What the '...' read after ``at`` rows stands for, where the sizes the loop prints say a
    row is missing there (common.cu: every size from minBytes to maxBytes by the step, one row
    each; a printed size is its loop size rounded down to whole elements, never above it); None
    where the rows on either side are adjacent (the '...' stood for other lines: NCCL INFO)."""
    sizes = [r["size_bytes"] for r in state.rows]
    lo, hi = state.config.get("minBytes"), state.config.get("maxBytes")
    if not sizes:
        return "stands for every result row (the table shows none)" if state.finished else None
    a, b = (sizes[at - 1] if at > 0 else None), (sizes[at] if at < len(sizes) else None)
    if a is not None and b is None and state.finished and hi is None:  # a '...' before the footer, no bound
        return f"stands for what follows the row of {a} bytes, and the log names no maxBytes (rows may be among it)"
    if step is None:
        return None if b is None or a is None else f"sits between rows of {a} and {b} bytes, and the log names no step"

    def after(x: int) -> float:
        return x * step[1] if step[0] == "factor" else x + step[1]

    if a is None:  # before the first row: the loop starts at minBytes
        return f"stands for rows before {b} bytes (minBytes {lo})" if lo is not None and b is not None and b > lo \
            else None
    if b is None:  # after the last row: the loop ends at maxBytes
        return f"stands for rows after {a} bytes (maxBytes {hi})" if state.finished and hi is not None and \
            after(a) <= hi else None
    if b <= a:  # the next sweep (-d all, -o all): this one ran to maxBytes, the next starts at minBytes
        ended = hi is None or after(a) > hi
        return None if ended and (lo is None or b <= lo) else f"sits between rows of {a} and {b} bytes"
    # the next loop size, with room for the rounding of both printed sizes
    bound = a * step[1] ** 1.5 if step[0] == "factor" else a + 1.5 * step[1]
    return f"stands for rows between {a} and {b} bytes (step {step[1]:g} {step[0]})" if a > 0 and b > bound else None


def _clean(raw: str) -> str:
    """Drop indentation and launcher prefixes; keep a leading '#' if there is one."""
    line = raw.strip()
    line = _LAUNCHER_PREFIX.sub("", line, count=1)
    return line.strip()


def _row_of(content: str, state: _State) -> dict[str, Any] | None:
    """A result row of ``content`` (a line without its '#'), read as is or with a chunk label
    cut out; None where it is none (the one reading the scan and the header check share)."""
    row = _parse_row(content, state)
    if row is None and _CHUNK_LABEL.search(content):
        row = _parse_row(_CHUNK_LABEL.sub(" ", content), state)
    return row


def _scan_line(line: str, at: int, state: _State) -> None:
    """Read one line (``at``: its number, after_end.numbered) into ``state``."""
    if not line:
        return
    # a reporter's '...' ('...', '... 9 rows omitted ...'): lines left out; result rows among them?
    # (_rows_left_out). No row, header or footer starts with '...'
    if ELISION.match(line) or line.startswith("..."):
        if not state.finished:
            state.gaps.setdefault(len(state.rows), (at, "..." if line.startswith("...") else line))
        return
    commented = line.startswith("#")
    content = line.lstrip("#").strip()
    if _scan_header_line(content, state):
        return
    if _ERROR_TEXT.search(content) or (commented and (m := _NCCL_ERROR_LINE.match(content)) and m.group(1).strip()):
        _add_error(state, content)
        return
    if state.finished and not state.next_test and (m := _NEXT_TEST.search(content)):
        state.next_test = content[:80]  # a banner or command line of the next test; whole, it starts a run
        return
    if not commented:
        if (m := _BINARY_NAME.search(content)) and not state.binary and not state.table_seen:
            state.binary = m.group(1)  # the command line: "mpirun ... build/all_reduce_perf -b 8"
        row = _row_of(content, state)
        if row is not None and state.finished:
            # common.cu prints no row after the footer: another task's or run's table (two srun
            # tasks each printing theirs, regrouped task by task), never more rows of this run
            state.rows_after_end += 1
        elif row is not None:
            state.rows.append(row)
            state.table_seen = True
        elif (state.table_seen or state.rows) and _row_shaped(content):
            _add_error(state, f"unreadable result row (a #wrong or bandwidth no run prints): {content!r}")
        elif state.rows and not state.finished and content.strip() and all(
                _to_float(t.strip("*")) is not None or t == "N/A" for t in content.split()):  # -c 0 prints #wrong N/A
            # common.cu prints a row on one line: bare numbers below one are its wrapped tail (its head read shifted)
            _add_error(state, f"line {at}: numbers with no row's size, count and type ({content[:60]!r}): a row "
                              "wrapped or cut, not whole")
        elif state.finished and (m := _LAUNCHER.match(content)):
            if m.group("topic") and _LAUNCHER_FAILURE.search(m.group("topic")):
                _add_error(state, content)  # 'help-mpi-api.txt / mpi-abort': the job aborted
        elif state.finished and not _NCCL_LOG.search(content):
            state.after_end.append((at, content))  # common.cu prints only '#' lines there: not this run's


def _scan_header_line(content: str, state: _State) -> bool:
    """Handle header, device-list, column-header and footer lines. True when consumed."""
    if state.finished and _starts_run(content):
        state.more_runs = content
        return True
    if m := _COLLECTIVE_HEADER.search(content):
        state.collective = state.collective or normalize_collective(m.group(1))
        state.header_seen = True
        if "concluded" in content:
            state.concluded = True
        else:
            state.started = True
        return True
    if m := _VERSION.match(content):
        state.version, state.header_seen = m.group(1), True
        state.nccl_version = int(m.group(2)) if m.group(2) else None
        return True
    if m := _RCCL_TESTS_VERSION.match(content):
        state.version, state.header_seen = m.group(1), True
        return True
    if m := _NCCL_BANNER.match(content):
        state.nccl_release = state.nccl_release or m.group(1)
        return True
    if m := _RCCL_LIBRARY.match(content):
        state.library[m.group(1).lower().replace(" ", "_")] = m.group(2)
        state.header_seen = True
        return True
    if m := _THREADS_LINE.match(content):
        state.header_seen = True
        state.config = {"nthreads": int(m.group(1)), "ngpus": int(m.group(2)),
                        **{k.replace(" ", "_"): int(v) for k, v in _CONFIG.findall(content[m.end():])},
                        **{f"step_{unit}": int(v) for v, unit in _STEP.findall(content[m.end():])}}
        if m.group(3) is not None:
            # rccl-tests prints nRanks as the MPI process count; each drives nThreads x nGpus.
            state.header_ranks = int(m.group(1)) * int(m.group(2)) * int(m.group(3))
        return True
    if (m := _REDUCED.match(content)) and state.config:  # common.cu: after the banner, the loop's own bound
        state.config["maxBytes"] = int(m.group(1))
        state.config["minBytes"] = min(state.config.get("minBytes", 0), int(m.group(1)))
        return True
    if m := _RANK_LINE.match(content):
        state.rank_ids.add(int(m.group(1)))
        # the Group (2.13 on) and Pid cells are kept too (issue 28's spot-check: both were dropped)
        state.devices.append({"rank": int(m.group(1)), "host": m.group(4), "device": int(m.group(5)),
                              "bus_id": m.group(6), "name": m.group(7).strip() or None,
                              "group": int(m.group("group")) if m.group("group") else None,
                              "pid": int(m.group("pid")) if m.group("pid") else None})
        state.header_seen = True
        return True
    if m := _OUT_OF_BOUNDS.match(content):
        state.out_of_bounds = int(m.group(1))
        state.out_of_bounds_verdict = m.group(2)
        return True
    if m := _AVG_BUSBW.match(content):
        state.avg_busbw = _to_float(m.group(1))
        state.finished = True
        if m.group(2) == "FAILED":  # NCCL_TESTS_MIN_BW: below 90% of it
            _add_error(state, f"average bus bandwidth {m.group(1)} GB/s is below NCCL_TESTS_MIN_BW (FAILED)")
        return True
    column = _column_header_check(content)
    if column is not None:
        tokens = content.split()
        state.check_column = column
        state.table_seen = True
        state.per_iteration = "i_min" in tokens
        state.timestamps = "timestamp" in tokens
        if tokens.count("time") + tokens.count("cputime") == 1:
            state.halves = ("in_place",)
        return True
    if "out-of-place" not in content and re.fullmatch(r"in-place", content):
        state.halves = ("in_place",)  # the line above the column names: rccl-tests -O 0
    return False


def _starts_run(content: str) -> bool:
    return bool(
        (_COLLECTIVE_HEADER.search(content) and "concluded" not in content)
        or _THREADS_LINE.match(content)
        or _RANK_LINE.match(content)
        or _column_header_check(content)
    )


def _parse_row(content: str, state: _State) -> dict[str, Any] | None:
    """One data row, or None when the line is not one."""
    stamp = _TIMESTAMP.search(content) if state.timestamps else None
    if stamp:
        content = content[: stamp.start()]
    tokens = content.split()
    if len(tokens) < 7 or not (
        _UNSIGNED.match(tokens[0]) and _UNSIGNED.match(tokens[1])
    ):
        return None
    if not _IDENTIFIER.match(tokens[2]):
        return None
    rest = tokens[3:]
    redop = rest.pop(0) if rest and _IDENTIFIER.match(rest[0]) else None
    width = 8 if state.per_iteration else 4
    sizes = {width * n for n in range(1, len(state.halves) + 1)} | ({4, 8} if not state.per_iteration else set())
    root = None
    if len(rest) - 1 in sizes:  # one more cell than the halves: the root column sits before them
        root = _to_int(rest.pop(0))
        if root is None:
            return None
    if len(rest) not in sizes:
        return None
    halves = [_parse_half(rest[i : i + width], state.check_column) for i in range(0, len(rest), width)]
    if any(h is None for h in halves):
        return None
    names = state.halves if len(halves) == len(state.halves) else ("out_of_place", "in_place")
    row: dict[str, Any] = {
        "size_bytes": int(tokens[0]),
        "count": int(tokens[1]),
        "type": tokens[2],
        "redop": redop,
        "root": root,
        "out_of_place": _empty_half(),
        "in_place": _empty_half(),
    }
    row.update(zip(names, halves))
    if stamp:
        row["timestamp"] = stamp.group().strip()
    return row


def _row_shaped(content: str) -> bool:
    """``size count type ...``: a result row, whatever its cells hold."""
    tokens = content.split()
    return len(tokens) >= 7 and bool(_UNSIGNED.match(tokens[0]) and _UNSIGNED.match(tokens[1])) \
        and bool(_IDENTIFIER.match(tokens[2]))


def _parse_half(cells: list[str], check_column: str | None) -> dict[str, Any] | None:
    if not all(c == "N/A" or _to_float(c) is not None for c in cells[:3]):
        return None  # nan, inf or no number: not a measurement
    time_us, algbw, busbw = (_to_float(c) for c in cells[:3])
    check = cells[3].rstrip("*")  # rccl-tests stars values over its error threshold
    wrong, max_error = None, None
    if check != "N/A":
        kind = check_column or ("wrong" if _INTEGER.match(check) else "error")
        if kind == "wrong":
            wrong = _count(check)  # "%6g": a million wrong elements print as 1e+06
            if wrong is None:
                return None  # "-1", "x7": no count of wrong elements
        else:
            max_error = _to_float(check)
            if max_error is None:
                return None
    half: dict[str, Any] = {
        "time_us": time_us,
        "algbw_GBps": algbw,
        "busbw_GBps": busbw,
        "wrong": wrong,
        "max_error": max_error,
    }
    if len(cells) == 8:  # 2.19 -I 1: writePerIterReport's min, max, p99 (us) and cv (%)
        stats = [_to_float(c) for c in cells[4:]]
        if any(v is None for v in stats):
            return None
        half.update(zip(("i_min_us", "i_max_us", "i_p99_us", "i_cv_pct"), stats))
    return half


def _count(cell: str) -> int | None:
    """A whole non-negative count as "%6g" prints it ("0", "4096", "1e+06"), or None."""
    if _UNSIGNED.match(cell):
        return int(cell)
    value = _to_float(cell)
    return int(value) if value is not None and value >= 0 and value == int(value) else None


def _empty_half() -> dict[str, Any]:
    """The in-place half of a row cut off before nccl-tests printed it."""
    return {
        "time_us": None,
        "algbw_GBps": None,
        "busbw_GBps": None,
        "wrong": None,
        "max_error": None,
    }


def _add_error(state: _State, message: str) -> None:
    if message not in state.errors and len(state.errors) < _MAX_ERRORS:
        state.errors.append(message)


def _pick_collective(
    from_header: str | None, hint: str | None, text: str
) -> str | None:
    if from_header:
        return from_header
    if hint:
        return normalize_collective(hint)
    m = _BINARY_NAME.search(text)
    return m.group(1) if m else None


def _to_float(value: str) -> float | None:
    """A finite float, or None for N/A, inf, nan and non-numbers (JSON has no inf)."""
    if not _FLOAT.match(value):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _to_int(value: str) -> int | None:
    return int(value) if _INTEGER.match(value) else None
