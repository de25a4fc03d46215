"""What a file holds after a tool's output has ended: one judgement for every view with an end.

A tool prints nothing after its end (nccl-tests' ``# Avg bus bandwidth`` footer and the lines
common.cu prints after it; the last border of the ``nvidia-smi`` table; the ``Link layer`` line
of ibstat's last port; dcgmi's footer border). What a file holds there was not read, and is
one of:

- blank lines, or the shell prompt a reporter pasted after the output (:data:`delivery.PS1`
  alone on its line): nothing lost;
- the same tool's output begun again (the view's own start: a banner, a header, the tool's
  command line behind a prompt): **two runs in one file** (:func:`two_runs`); the first is
  read and the file must be split, never the second silently dropped;
- the same tool's records with no start of their own (a second srun task's table regrouped
  after the first one's footer): :func:`records_without_start`;
- anything else: **not read: N lines after the end** (:func:`not_read`): text no run of the
  tool prints there (another tool's output appended, a note), a finding, exit 1.

The view says what its own grammar prints after its end (nccl-tests' ``# Collective test
concluded``, NCCL's log lines) and gives only the rest here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sncheck.vendors.delivery import PS1

PROMPT = re.compile(rf"^\s*{PS1}\s*$")  # a prompt alone: the reporter's, after the output
TWO_RUNS = "two runs in one file"


def _shown(line: str) -> str:
    return repr(line.strip()[:60])


def two_runs(second: str) -> str:
    """The file holds a second run of the tool after the first one's end, begun at ``second``."""
    return (f"{TWO_RUNS}: the log holds more than one run (the second begins at {_shown(second)}); "
            "only the first was read (split the file)")


def records_without_start(count: int, noun: str, end: str) -> str:
    """``count`` of the tool's ``noun`` after its ``end`` with no start of their own: another
    task's or run's output, not read."""
    return (f"{count} {noun}(s) after the run's {end}, with no header of their own: another task's or run's "
            "output, not read (split the log per task)")


def not_read(lines: Sequence[str], tool: str, numbers: Sequence[int] | None = None) -> str | None:
    """The lines after the end that are not blank or a pasted prompt, counted, the first shown;
    None where there are none. ``numbers``: each line's number in the text the view read (1 for
    its first), so the finding says where the unread text begins (``, line K``; ``sncheck
    parse`` renumbers it as the file numbers it: :func:`in_file`)."""
    kept = [(at, ln) for at, ln in zip(numbers or [0] * len(lines), lines) if ln.strip() and not PROMPT.match(ln)]
    if not kept:
        return None
    where = f", line {kept[0][0]}" if numbers is not None else ""
    return (f"not read: {len(kept)} line{'s' if len(kept) != 1 else ''} after the end (the first: "
            f"{_shown(kept[0][1])}{where}): {tool} prints nothing there; another tool's output or a note appended, "
            "not this output")


# (greedy: the shown text may hold ', line 3): ' itself; the words after the number never do)
_FROM_LINE = re.compile(r"^(not read: \d+ lines? after the end \(the first: .*, line )(\d+)(?=\): )")


def in_file(error: str, first: int, origins: Sequence[int]) -> str:
    """:func:`not_read`'s finding with its line numbered as the file numbers it: ``first``, the
    output's first line in the file (after a ``# source:`` header), ``origins`` each read line's
    line in the output (:func:`sncheck.vendors.delivery.unwrap_lines`: fences dropped, tasks
    regrouped). Any other error comes back as it was."""
    m = _FROM_LINE.match(error)
    if m is None:
        return error
    at = int(m.group(2)) - 1
    return f"{m.group(1)}{first + (origins[at] if at < len(origins) else at)}{error[m.end():]}"


def job_log(stdout: str, stderr: str) -> str:
    """A launched job's output as its parser reads it: stderr first, then stdout. The launcher's and
    libraries' stderr (ssh's known-hosts line, Open MPI's help aggregation, a crash) is read for its
    failure lines wherever it stands, but is no text after the tool's end: only stdout holds the end."""
    return f"{stderr}\n{stdout}" if stderr.strip() else stdout


def judge(lines: Sequence[str], tool: str, starts: Callable[[str], bool]) -> list[str]:
    """The finding for ``lines``, all that follows the end of ``tool``'s output: two runs where a
    line ``starts`` the tool's output again, else :func:`not_read`'s; [] where nothing is there."""
    if second := next((ln for ln in lines if starts(ln.strip())), None):
        return [two_runs(second)]
    said = not_read(lines, tool)
    return [said] if said else []
