"""Parse nccl-tests and rccl-tests output (all_reduce_perf, alltoall_perf, ...).

``parse_nccl_tests(text)`` returns (the ``sncheck parse nccl-tests FILE --json`` contract)::

    {"tool": "nccl-tests",            # "rccl-tests" from parse_rccl_tests
     "collective": "all_reduce",      # null when neither the log nor the caller names it
     "ranks": 16,                     # null when the log does not show the ranks
     "rows": [{"size_bytes": 8, "count": 2, "type": "float",
               "redop": "sum",        # null when the column is absent or blank
               "root": -1,            # null when the column is absent
               "out_of_place": {"time_us": 135.8, "algbw_GBps": 0.0, "busbw_GBps": 0.0,
                                "wrong": 0, "max_error": null},
               "in_place":     {...same keys...}}],
     "avg_busbw_GBps": 70.742,        # null without the footer
     "out_of_bounds": 0,              # null without the footer
     "errors": []}                    # failure lines, truncation; empty on a clean run

``wrong`` is the integer ``#wrong`` column of newer layouts. Older layouts print an
``error`` (or NCCL 1.0 ``res``) column instead: that float goes into ``max_error`` and
``wrong`` stays null. ``N/A`` and anything the log does not show are null, never guessed.

The parser copes with ``srun --label`` and ``mpirun --tag-output`` prefixes, markdown
indentation, comment characters stripped by a document author, interleaved NCCL INFO
and MPI lines, elided ``...`` lines and truncated runs. It raises ``ParseError`` only
when the text holds neither a results table nor a recognisable error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.nccltests import nccl_json

# mpirun --tag-output "[1,0]<stdout>:" and srun --label "0: " in front of every line.
_LAUNCHER_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:(?=\s|$))\s*")
_COLLECTIVE_HEADER = re.compile(r"Collective test (?:starting|concluded):\s*(\S+)")
_BINARY_NAME = re.compile(
    r"(?<![A-Za-z0-9])(all_reduce|all_gather|alltoallv?|reduce_scatter|sendrecv|broadcast|reduce|"
    r"gather|scatter|hypercube)_perf(?:_mpi)?(?![A-Za-z0-9])"
)
_THREADS_LINE = re.compile(
    r"^nThreads?:?\s+(\d+)\s+nGpus:?\s+(\d+)(?:\s+nRanks:?\s+(\d+))?"
)
_RANK_LINE = re.compile(
    r"^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+\S+\s+device\s+\d+"
)
_OUT_OF_BOUNDS = re.compile(r"^Out of bounds values\s*:\s*(\d+)\s*(\w+)?")
_AVG_BUSBW = re.compile(r"^Avg bus bandwidth\s*:\s*(\S+)")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_UNSIGNED = re.compile(r"^[0-9]+$")
_FLOAT = re.compile(
    r"^(?:[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|nan))$",
    re.IGNORECASE,
)
_ERROR_TEXT = re.compile(
    r"NCCL failure|Test (?:NCCL |CUDA |HIP )?failure|Cuda failure|CUDA failure|HIP failure|"
    r"Segmentation fault|SIGSEGV|Bus error|core dumped|terminate called|MPI_ABORT|"
    r"exited on signal|srun: error:|returned a non-zero exit code|NCCL error"
)
_MAX_ERRORS = 50


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
    more_runs: bool = False  # a second run started after that footer; it is not parsed


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
    for raw in text.splitlines():
        _scan_line(_clean(raw), state)
        if state.more_runs:
            break
    if not state.table_seen and not state.rows and not state.errors and not state.header_seen:
        raise ParseError(
            "no nccl-tests results table and no error text found", tool=tool
        )
    if state.header_seen and not state.table_seen and not state.rows and not state.errors:
        state.errors.append("the log stops before the results table (cut short, or the run hung)")
    if (
        state.table_seen
        and state.avg_busbw is None
        and state.out_of_bounds is None
        and not state.errors
    ):
        state.errors.append(
            "truncated run: the table ends without the '# Out of bounds values' / "
            "'# Avg bus bandwidth' footer"
        )
    if state.table_seen and state.out_of_bounds is not None and state.avg_busbw is None and not state.errors:
        state.errors.append("truncated run: the '# Avg bus bandwidth' line after '# Out of bounds values' is missing")
    if state.out_of_bounds_verdict == "FAILED":
        state.errors.append(
            f"{state.out_of_bounds} out-of-bounds values (wrong results) reported"
        )
    if state.more_runs:
        state.errors.append(
            "the log holds more than one run; only the first was parsed (split the log)"
        )
    return {
        "tool": tool,
        "collective": _pick_collective(state.collective or state.binary, hint, text),
        # Rank ids run 0..n-1; the highest one still counts when an author elided the list.
        "ranks": max(state.rank_ids) + 1 if state.rank_ids else state.header_ranks,
        "rows": state.rows,
        "avg_busbw_GBps": state.avg_busbw,
        "out_of_bounds": state.out_of_bounds,
        "errors": state.errors,
    }


def _clean(raw: str) -> str:
    """Drop indentation and launcher prefixes; keep a leading '#' if there is one."""
    line = raw.strip()
    line = _LAUNCHER_PREFIX.sub("", line, count=1)
    return line.strip()


def _scan_line(line: str, state: _State) -> None:
    if not line or line.startswith("..."):
        return
    commented = line.startswith("#")
    content = line.lstrip("#").strip()
    if _scan_header_line(content, state):
        return
    if _ERROR_TEXT.search(content):
        _add_error(state, content)
        return
    if not commented:
        if (m := _BINARY_NAME.search(content)) and not state.binary and not state.table_seen:
            state.binary = m.group(1)  # the command line: "mpirun ... build/all_reduce_perf -b 8"
        row = _parse_row(content, state.check_column)
        if row is not None:
            state.rows.append(row)
            state.table_seen = True
        elif (state.table_seen or state.rows) and _row_shaped(content):
            _add_error(state, f"unreadable result row (a #wrong or bandwidth no run prints): {content!r}")


def _scan_header_line(content: str, state: _State) -> bool:
    """Handle header, device-list, column-header and footer lines. True when consumed."""
    if state.finished and _starts_run(content):
        state.more_runs = True
        return True
    if m := _COLLECTIVE_HEADER.search(content):
        state.collective = state.collective or normalize_collective(m.group(1))
        state.header_seen = True
        return True
    if m := _THREADS_LINE.match(content):
        state.header_seen = True
        if m.group(3) is not None:
            # rccl-tests prints nRanks as the MPI process count; each drives nThreads x nGpus.
            state.header_ranks = int(m.group(1)) * int(m.group(2)) * int(m.group(3))
        return True
    if m := _RANK_LINE.match(content):
        state.rank_ids.add(int(m.group(1)))
        state.header_seen = True
        return True
    if m := _OUT_OF_BOUNDS.match(content):
        state.out_of_bounds = int(m.group(1))
        state.out_of_bounds_verdict = m.group(2)
        return True
    if m := _AVG_BUSBW.match(content):
        state.avg_busbw = _to_float(m.group(1))
        state.finished = True
        return True
    column = _column_header_check(content)
    if column is not None:
        state.check_column = column
        state.table_seen = True
        return True
    return False


def _starts_run(content: str) -> bool:
    return bool(
        (_COLLECTIVE_HEADER.search(content) and "concluded" not in content)
        or _THREADS_LINE.match(content)
        or _RANK_LINE.match(content)
        or _column_header_check(content)
    )


def _column_header_check(content: str) -> str | None:
    """For a column-header line, the kind of its check column: 'wrong' or 'error'."""
    tokens = content.split()
    if (
        "time" not in tokens
        or "algbw" not in tokens
        or not ({"size", "bytes"} & set(tokens))
    ):
        return None
    if "#wrong" in tokens or "wrong" in tokens:
        return "wrong"
    return "error"


def _parse_row(content: str, check_column: str | None) -> dict[str, Any] | None:
    """One data row, or None when the line is not one."""
    tokens = content.split()
    if len(tokens) < 7 or not (
        _UNSIGNED.match(tokens[0]) and _UNSIGNED.match(tokens[1])
    ):
        return None
    if not _IDENTIFIER.match(tokens[2]):
        return None
    rest = tokens[3:]
    redop = rest.pop(0) if rest and _IDENTIFIER.match(rest[0]) else None
    root = None
    if len(rest) in (5, 9):  # an odd count: the root column sits before the halves
        root = _to_int(rest.pop(0))
        if root is None:
            return None
    if len(rest) not in (4, 8):
        return None
    halves = [
        _parse_half(rest[i : i + 4], check_column) for i in range(0, len(rest), 4)
    ]
    if any(h is None for h in halves):
        return None
    return {
        "size_bytes": int(tokens[0]),
        "count": int(tokens[1]),
        "type": tokens[2],
        "redop": redop,
        "root": root,
        "out_of_place": halves[0],
        "in_place": halves[1] if len(halves) > 1 else _empty_half(),
    }


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
            wrong = int(check) if _UNSIGNED.match(check) else None
            if wrong is None:
                return None  # "-1", "x7": no count of wrong elements
        else:
            max_error = _to_float(check)
            if max_error is None:
                return None
    return {
        "time_us": time_us,
        "algbw_GBps": algbw,
        "busbw_GBps": busbw,
        "wrong": wrong,
        "max_error": max_error,
    }


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
