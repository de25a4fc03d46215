"""A results.json whose `finished` is before its `started` (round 15 review): wall clocks step back
(NTP's step, a VM resumed, an operator's `date -s`) and the run's record is no less its own. It was
refused (exit 2) by diff, baseline make and history; it is read, its duration said unknown with why."""

from __future__ import annotations

import json
from pathlib import Path

from test_hostile_r20 import _record
from test_hostile_r13 import _cli

from sncheck.model import run_duration
from sncheck.store.results import read_record

STEPPED = {"started": "2026-12-07T10:00:05Z", "finished": "2026-12-07T09:59:58Z"}


def test_a_run_whose_clock_stepped_back_is_read_with_its_duration_unknown(tmp_path: Path) -> None:
    run = _record(tmp_path)
    data = json.loads((run / "results.json").read_text())
    assert read_record(run).duration[0] is not None  # as written: started then finished
    data.update(STEPPED)
    (run / "results.json").write_text(json.dumps(data))
    record = read_record(run)
    assert record.verdict.value == "pass" and record.duration[0] is None
    assert "before started" in str(record.duration[1]) and "clock stepped back" in str(record.duration[1])
    (tmp_path / "b").mkdir()
    other = _record(tmp_path / "b")
    r = _cli("diff", run, other)
    assert r.exit_code == 0, r.output
    assert f"note: RUN_A {data['run_id']}: duration unknown: finished {STEPPED['finished']} is before started" in r.output
    d = json.loads(_cli("diff", run, other, "--json").output)
    assert d["a"]["duration_s"] is None and d["b"]["duration_s"] >= 0
    r = _cli("baseline", "make", run, other, "--out", tmp_path / "base.json")
    assert r.exit_code == 0, r.output
    assert "duration unknown" in r.output and (tmp_path / "base.json").is_file()


def test_run_duration() -> None:
    assert run_duration("2026-12-07T10:00:00Z", "2026-12-07T10:01:30Z") == (90.0, None)
    assert run_duration("2026-12-07T10:00:00Z", None) == (None, "the run did not finish")
    seconds, why = run_duration(STEPPED["started"], STEPPED["finished"])
    assert seconds is None and why and why.startswith(f"finished {STEPPED['finished']} is before started")
