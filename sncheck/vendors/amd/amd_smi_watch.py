"""``amd-smi monitor -w N`` (``--watch``): the rounds of one run, read as the view reads one.

Grammar (ROCm/amdsmi rocm-6.1.0, rocm-6.2.0 and amd-staging 2024-10: ``amdsmi_cli/amdsmi_helpers.py`` ``handle_watch``,
``amdsmi_commands.py`` ``monitor``; ``amdsmi_logger.py`` ``_print_tabular_output``): the line
``'CTRL' + 'C' to stop watching output:`` once, then a round every N seconds (``-W`` seconds in all,
``-i`` rounds, else until Ctrl-C), each calling ``monitor`` again with the same arguments: its header
with ``TIMESTAMP`` first (``'TIMESTAMP'.rjust(10) + '  '``; only a watch prints the column), one row a
GPU (the round's epoch seconds first), with ``-q`` its ``PROCESS INFO:`` table (its header
``TIMESTAMP`` first too), then blank lines (6.2's ``print("\\n")``). So every round prints the same
columns, GPUs and tables, and a second ``TIMESTAMP ... GPU`` header not under ``PROCESS INFO:``
begins the next round.

Read: every round by the monitor view; the **last round wins** (``gpus``, ``processes``: the newest
reading, as a run reads the card now), ``rounds`` counts them, an earlier round's errors are kept
(``round K: ...``). A last round with fewer GPUs than the first, without the process table the first
has, or with other columns is cut (a paste or a Ctrl-C stops mid-round); a last round cut inside its
header (no row under it to read) is cut too, and the round before it is the reading.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end

_HEADER = re.compile(r"^\s*TIMESTAMP\s+GPU\b")


def rounds(text: str) -> list[str] | None:
    """``text`` split before each round's header (what precedes the first, the command line and the
    Ctrl-C line, stays with it); None where there is one round or none (no watch, or one round)."""
    lines = text.splitlines(keepends=True)
    starts: list[int] = []
    title = False  # the line before was 'PROCESS INFO:': this header is the process table's
    for i, line in enumerate(lines):
        if _HEADER.match(line) and not title:
            starts.append(i)
        if line.strip():
            title = line.strip() == "PROCESS INFO:"
    if len(starts) < 2:
        return None
    bounds = [0, *starts[1:], len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]


def read(pieces: list[str], view: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """The rounds read by ``view`` (the one-round monitor view): the last one's values, ``rounds``,
    the earlier rounds' errors and what the last one lacks of the first (module docstring)."""
    results = [view(piece) for piece in pieces[:-1]]
    try:
        results.append(view(pieces[-1]))
        cut_header = ""
    except ParseError:  # the last round cut inside its header (review s44q): the one before is the reading
        cut_header = f"round {len(pieces)} is cut inside its header: cut short"
    for k, r in enumerate(results):  # a line a round names ('not read: ...'), numbered as the whole text numbers it
        before = sum(p.count("\n") for p in pieces[:k])
        r["errors"] = [after_end.renumbered(e, lambda at: at + before) for e in r["errors"]]
    first, last, n = results[0], results[-1], len(results)
    errors = [f"round {k}: {e}" for k, r in enumerate(results[:-1], 1) for e in r["errors"]]
    errors += last["errors"] + ([cut_header] if cut_header else [])
    if last["columns"] != first["columns"]:
        errors.append(f"round {n} has the columns {' '.join(last['columns'])}, round 1 "
                      f"{' '.join(first['columns'])}: not one watch run")
    if missing := [g["gpu"] for g in first["gpus"] if g["gpu"] not in {x["gpu"] for x in last["gpus"]}]:
        errors.append(f"round {n} has no row for GPU {', '.join(map(str, missing))} of round 1: cut short")
    if "processes" in first and "processes" not in last:
        errors.append(f"round {n} has no PROCESS INFO table (round 1 has one): cut short")
    return {**last, "rounds": n, "errors": errors}
