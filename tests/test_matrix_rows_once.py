"""A matrix prints each row once (TransferBench's PrintResults, nvbandwidth's matrix printer): a row
label read twice in one matrix is another copy spliced in, the output not as printed: exit 1, never
its last copy's values (review18 #7; IB counters and nccl-tests rows already hold this rule)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sncheck.vendors.parsers import parse_text

ROOT = Path(__file__).resolve().parent.parent


def _twice(text: str, pattern: str, edit=lambda line: line) -> str:
    lines, out, done = text.split("\n"), [], False
    for line in lines:
        out.append(line)
        if not done and re.search(pattern, line):
            out.append(edit(line))
            done = True
    assert done, pattern
    return "\n".join(out)


@pytest.mark.parametrize("view, glob, pattern, said", [
    ("transferbench", "fixtures/real/harvest26/transferbench/02_*", r"│ GPU 05\s+│", "matrix row 'GPU 05' printed twice"),
    ("nvbandwidth", "fixtures/real/nvbandwidth/*", r"^\s*1\s+[0-9]", "row 1 printed twice"),
])
def test_a_row_printed_twice_is_the_output_not_as_printed(view: str, glob: str, pattern: str, said: str) -> None:
    path = sorted(ROOT.glob(glob))[0]
    whole = parse_text(view, path.read_text())
    assert not whole.get("errors"), whole.get("errors")
    spliced = parse_text(view, _twice(path.read_text(), pattern, lambda ln: re.sub(r"\d+\.\d+", "10.42", ln, 1)))
    assert any(said in e for e in spliced.get("errors", [])), spliced.get("errors")
