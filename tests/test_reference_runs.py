"""Recorded runs give identical outputs (issue 27: the moves and the typed record change
no behaviour). tests/reference_runs.py plays each case; tests/data/reference/expected.json
holds each output's sha256 and a readable summary. When a case differs, rerun with
``--dump`` before and after the change and diff the two directories."""

from __future__ import annotations

import json

import pytest

from reference_runs import CASES, EXPECTED, digest, play, summary

EXPECT = json.loads(EXPECTED.read_text())


def test_every_case_is_recorded() -> None:
    assert sorted(EXPECT) == sorted(c.name for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_outputs_unchanged(case, tmp_path) -> None:
    texts = play(case, tmp_path)
    want = EXPECT[case.name]
    assert summary(texts) == want["summary"]
    got = digest(texts)
    assert sorted(got) == sorted(want["sha256"])
    changed = [k for k in got if got[k] != want["sha256"][k]]
    assert not changed, f"{case.name}: outputs differ: {changed}"
