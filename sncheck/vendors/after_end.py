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


def numbered(text: str) -> list[tuple[int, str]]:
    """``text.splitlines()``, each line with its number as ``sncheck parse`` counts the text's lines
    (at LF, 1 for the first: :func:`in_file`): a form feed, a lone CR or U+2028 splits a line for
    splitlines, not for the file, so the parts share their line's number."""
    rows = text.split("\n")
    if rows[-1] == "":
        rows.pop()
    return [(at, part) for at, row in enumerate(rows, 1) for part in (row.splitlines() or [""])]


def not_read(lines: Sequence[tuple[int, str]], tool: str) -> str | None:
    """The lines after the end that are not blank or a pasted prompt, counted, the first shown with
    its number in the text the view read (``, line K``: :func:`numbered`; ``sncheck parse``
    renumbers it as the file numbers it: :func:`in_file`); None where there are none."""
    kept = [(at, ln) for at, ln in lines if ln.strip() and not PROMPT.match(ln)]
    if not kept:
        return None
    return (f"not read: {len(kept)} line{'s' if len(kept) != 1 else ''} after the end (the first: "
            f"{_shown(kept[0][1])}, line {kept[0][0]}): {tool} prints nothing there; another tool's output or a note "
            "appended, not this output")


# (greedy: the shown text may hold ', line 3): ' itself; the words after the number never do. A watch's
# earlier round says which: 'round 2: not read: ...', amd_smi_watch)
_FROM_LINE = re.compile(r"^((?:round \d+: )?not read: \d+ lines? after the end \(the first: .*, line )(\d+)(?=\): )")
# a reporter's '...' a view's parser could not read (over value lines: listing.elision), a line a pager or
# journalctl cut (kernel_log._chopped), a line that is no line of the read (infiniband.counters)
_ELIDED_LINE = re.compile(r"^((?:round \d+: )?line )(\d+)(?= is a reporter's | is cut by | is no )")


def renumbered(error: str, line: Callable[[int], int]) -> str:
    """:func:`not_read`'s finding, or a view's own :func:`sncheck.vendors.listing.elision`, with its
    line K as ``line(K)``; any other error as it was."""
    m = _FROM_LINE.match(error) or _ELIDED_LINE.match(error)
    return error if m is None else f"{m.group(1)}{line(int(m.group(2)))}{error[m.end():]}"


def in_file(error: str, first: int, origins: Sequence[int]) -> str:
    """:func:`renumbered`'s findings with their line numbered as the file numbers it: ``first``, the
    output's first line in the file (after a ``# source:`` header), ``origins`` each read line's
    line in the output (:func:`sncheck.vendors.delivery.unwrap_lines`: fences dropped, tasks
    regrouped). Any other error comes back as it was."""
    return renumbered(error, lambda k: line_in_file(k, first, origins))


def line_in_file(k: int, first: int, origins: Sequence[int]) -> int:
    """Line ``k`` of the unwrapped output as the file numbers it (:func:`in_file`'s count)."""
    return first + (origins[k - 1] if k - 1 < len(origins) else k - 1)


def job_log(stdout: str, stderr: str) -> str:
    """A launched job's output as its parser reads it: stderr first, then stdout. The launcher's and
    libraries' stderr (ssh's known-hosts line, Open MPI's help aggregation, a crash) is read for its
    failure lines wherever it stands, but is no text after the tool's end: only stdout holds the end."""
    return f"{stderr}\n{stdout}" if stderr.strip() else stdout


def read_job(parse: Callable[..., dict], stdout: str, stderr: str, **hints: object) -> dict:
    """``parse`` of a launched job's :func:`job_log`, its findings' line K (:func:`renumbered`) stdout's
    own: the end and what follows it are stdout's, and a reader opens the job's stdout file, not the
    text the view was given (stderr's lines first). A line of stderr keeps its number (stderr's own)."""
    parsed = parse(job_log(stdout, stderr), **hints)
    before = stderr.count("\n") + 1 if stderr.strip() else 0  # job_log's lines before stdout's first
    if before and isinstance(parsed.get("errors"), list):
        parsed["errors"] = [renumbered(e, lambda k: k - before if k > before else k) if isinstance(e, str) else e
                            for e in parsed["errors"]]
    return parsed


def judge(lines: Sequence[tuple[int, str]], tool: str, starts: Callable[[str], bool]) -> list[str]:
    """The finding for ``lines`` (numbered: :func:`numbered`), all that follows the end of ``tool``'s
    output: two runs where a line ``starts`` the tool's output again, else :func:`not_read`'s; []
    where nothing is there."""
    if second := next((ln for _, ln in lines if starts(ln.strip())), None):
        return [two_runs(second)]
    said = not_read(lines, tool)
    return [said] if said else []
