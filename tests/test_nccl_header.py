"""nccl-tests' header with lines dropped from its middle (issue 28, parse29 item 4).

common.cu prints '# nThread ...', '#', '# Using devices', each process's block of nThreads x nGpus
'#  Rank' lines (ranks from 0, ascending), NCCL's banner, '#', the column header, then the rows
(sncheck/vendors/nccltests/header.py). A splice that leaves out text from inside that header up
to the column header or the first row read as whole in 58,628 of 64,816 splices of the real
captures (fix16). Every such splice of the generated logs that loses the nThread line's end, the
'Using devices' line, a Rank line or the column header must exit 1; the one the grammar cannot
tell is whole processes' blocks left out at a block's start (nccl-tests states no process count).
"""

from __future__ import annotations

import re

import pytest
from grammars import variants
from test_grammars import outcome

_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s")


def _splices(text: str) -> list[tuple[str, bool]]:
    """(spliced text, whether the grammar tells it) for every cut inside the header's lines from
    '# nThread' to the column header, resumed at the column header and at the first row."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if re.match(r"^# nThread", ln))
    col = next(i for i in range(start, len(lines)) if re.search(r"\bsize\b.*\btime\b.*\balgbw\b", lines[i]))
    row = next(i for i in range(col, len(lines)) if re.match(r"^\s*\d+\s+\d+\s+\w+", lines[i]))
    per = int(re.search(r"nGpus (\d+)", lines[start]).group(1)) * int(re.search(r"nThread (\d+)", lines[start]).group(1))
    offsets = [sum(len(ln) + 1 for ln in lines[:i]) for i in range(len(lines) + 1)]
    out = []
    # the header's first lines (nThread, '#', 'Using devices', the first ranks: a block's end and the next's
    # start where a process has up to 8 GPUs) and its last two: a cut in the middle of a long list reads as these
    for i in sorted(set(range(start, min(col, start + 14))) | {col - 2, col - 1}):
        ln = lines[i]
        # a cut at the line's start (i > start), and one inside it: after its first word ('# nThread': after
        # '# nThread'), and before its last; one at the line's start loses '# nThread' (a table pasted alone)
        first = ln.find("nThread") + len("nThread") if i == start else ln.find(" ") + 1
        cuts = ([0] if i > start else []) + sorted({first, ln.rstrip().rfind(" ") + 1} - {0})
        for c in cuts:
            for resume in (col, row):
                dropped = "\n".join([ln[c:]] + lines[i + 1:resume])
                m = _RANK.match(ln)
                # what is left of the line is its '#' alone, at a process's block's start: whole blocks left out
                whole_blocks = not ln[:c].strip("# ") and m is not None and int(m.group(1)) % per == 0 \
                    and int(m.group(1)) > 0 and resume == col and "Using devices" not in dropped
                lost = c > 0 and i == start or "Using devices" in dropped or "Rank" in dropped or resume == row
                told = lost and not whole_blocks and not (c > 0 and m is not None and resume == col and
                                                          ln[c:].strip() == ln.split()[-1])  # a name's last word
                out.append((text[:offsets[i] + c] + "\n" + text[offsets[resume]:], told))
    return out


@pytest.mark.parametrize("view", ["nccl-tests", "rccl-tests"])
def test_a_header_with_lines_left_out_of_its_middle_exits_1(view: str) -> None:
    wrong = []
    seen = set()
    for v in variants(view):
        if v.fails or "# nThread" not in v.text or "# Using devices" not in v.text or v.name.split()[0] in seen:
            continue
        seen.add(v.name.split()[0])  # one variant a layout
        for text, told in _splices(v.text):
            code, _ = outcome(view, text, v)
            if told and code != 1:
                wrong.append(f"{v.name}: exit {code}: ...{text[text.find('# nThread'):][:160]!r}")
    assert seen, "no whole variant with a header"
    assert not wrong, f"{len(wrong)} splices read as whole, e.g. {wrong[:3]}"
