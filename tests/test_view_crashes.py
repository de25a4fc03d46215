"""A view that raises on its input did not read it (review18 #5): a number past Python's 4,300-digit
int limit in a real capture raised ValueError (OverflowError in amd-smi-xgmi) out of ~30 views; in a run
it left the fact reading and stopped the host's whole read over SSH, and `sncheck parse` said exit 2.
Now each is that output's parse error: `parse_text` raises ParseError (exit 1), a run's fact is
parse_failed and the host's other facts stand (sncheck/vendors/crash.py)."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
import yaml

from sncheck.errors import ParseError
from sncheck.vendors import facts
from sncheck.vendors.amd.checks import COMMANDS as AMD
from sncheck.vendors.facts import Expect
from sncheck.vendors.nvidia.checks import COMMANDS as NVIDIA
from sncheck.vendors.parsers import parse_text, view_of, views

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w])")


def _captures() -> dict[str, list[str]]:
    by_view: dict[str, list[str]] = {}
    for expect in sorted(ROOT.glob("fixtures/real/harvest*/expect.yaml")):
        for item in yaml.safe_load(expect.read_text()) or []:
            if isinstance(item, dict) and item.get("file") and item.get("tool") in views():
                by_view.setdefault(item["tool"], []).append(os.path.join(os.path.dirname(expect), item["file"]))
    return by_view


CAPTURES = _captures()


def _huge(path: str, seed: int) -> str | None:
    """The capture with one of its numbers turned into 5,000 nines (None: it prints none)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    found = list(NUMBER.finditer(text))
    if not found:
        return None
    m = random.Random(seed).choice(found)
    return text[:m.start()] + "9" * 5000 + text[m.end():]


REFUSED: set[str] = set()


@pytest.mark.parametrize("view", sorted(CAPTURES))
def test_a_number_no_tool_prints_is_a_parse_error_never_a_crash(view: str) -> None:
    for seed in (1, 2, 3):
        text = _huge(CAPTURES[view][0], seed)
        if text is None:
            continue
        try:  # any other exception fails the test: it left the view as a crash
            data = parse_text(view, text)
        except ParseError:
            REFUSED.add(view)  # refused, as any output the view cannot read (exit 1)
            continue
        assert isinstance(data, (dict, list)), (view, type(data))


def test_views_that_read_the_number_refuse_it() -> None:
    """The views reading such a number as one (the int()s of ~30 views) refuse it: not every
    mutation lands in a number a view reads, but many do."""
    for view in sorted(CAPTURES):
        if view not in REFUSED:
            test_a_number_no_tool_prints_is_a_parse_error_never_a_crash(view)
    assert len(REFUSED) >= 10, sorted(REFUSED)


def test_a_run_reads_such_an_output_as_that_facts_parse_failure() -> None:
    commands = [c for c in (*AMD.values(), *NVIDIA.values()) if view_of(c.parse) in CAPTURES]
    assert len(commands) >= 10
    failed = 0
    for cmd in commands:
        text = _huge(CAPTURES[view_of(cmd.parse)][0], 1)
        if text is None:
            continue
        rows = facts.evaluate("h1", cmd, Expect(cards=8), exit_code=0, stdout=text)
        assert rows, cmd.name  # the fact is on record (read, or parse_failed), never an exception
        failed += any(r.get("status") == "parse_failed" for r in rows)
    assert failed >= 1  # some view read the 5,000-digit number as a number: refused
