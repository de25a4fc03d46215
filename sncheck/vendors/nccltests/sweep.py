"""The sizes an nccl-tests run prints, and the rows a log lacks without a reporter's '...'.

nccl-tests (src/common.cu, TimeTest) prints one row per size of its loop, ``for (size =
minBytes; size <= maxBytes; size = stepfactor > 1 ? size*stepfactor : size+stepbytes)``, per
data type, reduction op and root (``-d all``, ``-o all``, ``-r all``: a sweep each), and the
loop again per ``-N`` cycle. The banner (src/util.cu writeDeviceReport) prints ``minBytes %ld
maxBytes %ld step: %ld(factor|bytes)`` before the memory check that may print ``Reducing
maxBytes to %ld due to memory limitation`` (the parser keeps the reduced one). A printed size
is the loop's rounded down to whole elements (per rank for all_gather, alltoall: it may be 0),
never above it, so rows are counted per sweep, not matched by size.

A log with the banner: each sweep holds every size of the loop (a multiple of it with
cycles). A log without it (an excerpt): the step its adjacent rows show, where every ratio is
a whole power of the smallest one; a row pair further apart is rows cut out.
"""

from __future__ import annotations

import math
from typing import Any

_MAX_LOOP = 1 << 20  # a banner's loop beyond this many sizes is not counted (no run prints so many)


def loop_sizes(config: dict[str, int]) -> int | None:
    """How many sizes the banner's loop runs (common.cu), or None where it does not say or never ends."""
    lo, hi = config.get("minBytes"), config.get("maxBytes")
    if lo is None or hi is None or lo > hi:
        return None
    factor, step = config.get("step_factor", 0), config.get("step_bytes", 0)
    if factor > 1:
        if lo == 0:
            return None  # 0 * factor: the loop never ends
        n, size = 0, lo
        while size <= hi:
            n, size = n + 1, size * factor
        return n
    if step > 0:
        n = (hi - lo) // step + 1
        return n if n <= _MAX_LOOP else None
    return None


def _sweeps(rows: list[dict[str, Any]], gaps: set[int]) -> list[tuple[int, int]]:
    """[start, end) of each sweep: a new data type, op or root, or a size below the last one;
    a reporter's '...' ends one too (what it left out is judged by the gap's own check)."""
    out, start = [], 0
    for i in range(1, len(rows) + 1):
        a = rows[i - 1]
        b = rows[i] if i < len(rows) else None
        if b is None or i in gaps or (a.get("type"), a.get("redop"), a.get("root")) != \
                (b.get("type"), b.get("redop"), b.get("root")) or b["size_bytes"] < a["size_bytes"]:
            out.append((start, i))
            start = i
    return out


def _seen_step(sizes: list[int]) -> float | None:
    """The step factor adjacent rows show: the smallest ratio, where every ratio is a whole power
    of it (the printed sizes rounded: within a quarter of a step); None where they do not agree."""
    ratios = [b / a for a, b in zip(sizes, sizes[1:]) if 0 < a < b]
    if not ratios or (r0 := min(ratios)) < 1.2:
        return None
    powers = [math.log(r) / math.log(r0) for r in ratios]
    return r0 if all(abs(p - round(p)) <= 0.25 for p in powers) else None


def rows_missing(rows: list[dict[str, Any]], config: dict[str, int], gaps: set[int]) -> list[str]:
    """One error per sweep a row of its loop is missing from, where no '...' marks the cut."""
    errors: list[str] = []
    whole_sweeps = [(s, e) for s, e in _sweeps(rows, gaps) if s not in gaps and e not in gaps]
    if (n := loop_sizes(config)) is not None:
        if n > 1 and config.get("step_factor", 0) > 1:
            errors += _repeated(rows, whole_sweeps)
        for s, e in whole_sweeps:
            if (e - s) % n:
                what = rows[s]
                errors.append(f"the sweep of {what.get('type') or 'rows'} from {what['size_bytes']} bytes shows "
                              f"{e - s} sizes, the banner's loop (minBytes {config['minBytes']} to maxBytes "
                              f"{config['maxBytes']}) prints {n}: rows are missing, cut short")
        return errors
    for s, e in whole_sweeps:
        sizes = [r["size_bytes"] for r in rows[s:e]]
        if (factor := _seen_step(sizes)) is None:
            continue
        errors += _repeated(rows, [(s, e)])
        for a, b in zip(sizes, sizes[1:]):
            if 0 < a < b and round(math.log(b / a) / math.log(factor)) >= 2:
                errors.append(f"rows between {a} and {b} bytes are missing (the rows' step {factor:g} factor): "
                              "cut short")
    return errors


def _repeated(rows: list[dict[str, Any]], sweeps: list[tuple[int, int]]) -> list[str]:
    """A size printed twice in a row of a sweep whose loop steps by a factor: the loop's next
    size is at least twice the last, so two rows round down to one size only at 0 (all_gather's
    per-rank share of a small size); a repeated size above 0 is a row duplicated, and the row
    count that would show a row cut out then holds (a row lost behind a pasted one read whole)."""
    return [f"the row of {a['size_bytes']} bytes is printed twice in the sweep of {a.get('type') or 'rows'} "
            "(its loop steps by a factor: no size above 0 repeats): a row duplicated, not the run as printed"
            for s, e in sweeps for a, b in zip(rows[s:e], rows[s + 1:e]) if 0 < a["size_bytes"] == b["size_bytes"]]
