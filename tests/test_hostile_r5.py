"""Hostile inputs, round 5: round 4's cases left open (H10, a future schema, duplicate faults,
rules that can never fire, a foreign state store) and new cases on today's features. Each test
names its case id; the report's table lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.model import RUN_SCHEMA, Verdict
from sncheck.store.results import from_json, read_record
from test_hardening import INV, one_line_error


def _cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def _run_dir(tmp_path: Path, name: str, **results: object) -> Path:
    """A run directory with a results.json of ``results`` over a finished run's envelope."""
    run = tmp_path / name
    (run / "rows").mkdir(parents=True)
    doc = {"schema": RUN_SCHEMA, "run_id": name, "playbook": "p", "backend": "mock", "inventory": "tiny",
           "started": "2026-12-01T00:00:00Z", "finished": "2026-12-01T00:01:00Z", "verdict": "pass",
           "gate": "critical", "layers": [], "findings": [], "isolation": [], **results}
    (run / "results.json").write_text(json.dumps(doc))
    return run


# -- H10: no layer recorded is no pass ---------------------------------------------------------

def test_h10_a_record_without_layers_is_an_error_not_a_pass(tmp_path: Path) -> None:
    """H10: a results.json with '"layers": []' (and '"verdict": "pass"') read as a pass:
    'baseline make' took it, diff and the report showed pass. Nothing measured is no pass."""
    run = _run_dir(tmp_path, "empty")
    assert read_record(run).verdict == Verdict.ERROR
    line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "b.json"))
    assert "run verdict is 'error'" in line and not (tmp_path / "b.json").exists()
    r = _cli("diff", run, run)
    assert "(error)" in r.output and "(pass)" not in r.output, r.output
    measured = _run_dir(tmp_path, "one", layers=[{"name": "connectivity", "verdict": "pass"}])
    assert read_record(measured).verdict == Verdict.PASS  # one layer that ran and found nothing


# -- the schema of a results.json --------------------------------------------------------------

@pytest.mark.parametrize("schema", ["sncheck.run/2", "other.tool/1", None, 1, ""])
def test_s01_a_results_json_of_another_schema_is_refused_not_read_as_todays(tmp_path: Path, schema) -> None:
    """S01: 'schema: sncheck.run/2' (a newer sncheck's) or another tool's was read as today's
    layout: its verdict taken, its run put into a baseline. Only the first layout (no key) is
    read as v1."""
    run = _run_dir(tmp_path, "future", schema=schema, layers=[{"name": "connectivity", "verdict": "pass"}])
    with pytest.raises(ConfigError) as e:
        read_record(run)
    assert f"schema {schema!r}" in str(e.value) and "results.json" in str(e.value)
    line = one_line_error(_cli("diff", run, run))
    assert f"schema {schema!r}" in line
    legacy = from_json({"run_id": "x", "finished": "t", "layers": [{"name": "connectivity"}]})
    assert legacy.schema == RUN_SCHEMA and legacy.verdict == Verdict.PASS


# -- duplicate faults ------------------------------------------------------------------------

def _faults(tmp_path: Path, text: str):
    from sncheck.run.inputs import load_faults_text, load_inventory
    from sncheck.topology import Topology

    inv = tmp_path / "inv.yaml"
    inv.write_text(INV)
    return load_faults_text(text, Topology(load_inventory(inv)), "plan.yaml")


@pytest.mark.parametrize("second", [
    "{type: slow_card, target: n1/gpu0, factor: 0.5}",        # compounded: 0.3 acted out
    "{type: high_latency_card, target: n1/gpu0, factor: 9}",  # the last kept, the first dropped
    "{type: slow_card, target: n1/gpu0, factor: 0.5, late: true}",
])
def test_f01_two_faults_of_one_type_on_one_card_are_refused_naming_both_lines(tmp_path: Path, second: str) -> None:
    first = second.split(",")[0] + ", target: n1/gpu0}"
    with pytest.raises(ConfigError) as e:
        _faults(tmp_path, f"faults:\n  - {first}\n  - {{type: corrupt_card, target: n1/gpu0}}\n  - {second}\n")
    msg = str(e.value)
    assert "plan.yaml:4" in msg and "the first at plan.yaml:2" in msg and "a second" in msg


def test_f01_faults_that_never_overlap_or_differ_stay_allowed(tmp_path: Path) -> None:
    plan = _faults(tmp_path, "faults:\n"
                   "  - {type: slow_card, target: n1/gpu0, factor: 0.5, transient: true}\n"
                   "  - {type: slow_card, target: n1/gpu0, factor: 0.7, late: true}\n"   # after the first ends
                   "  - {type: slow_card, target: n1/gpu1, factor: 0.7}\n"               # another card
                   "  - {type: thermal_throttle, target: n1/gpu0}\n"                     # another type
                   '  - {type: degraded_link, target: "n1/gpu0<->n1/gpu1", direction: "n1/gpu0->n1/gpu1"}\n'
                   '  - {type: degraded_link, target: "n1/gpu0<->n1/gpu1", direction: "n1/gpu1->n1/gpu0"}\n')
    assert len(plan.faults) == 6


# -- rules that can never fire ---------------------------------------------------------------

@pytest.mark.parametrize("rule, words", [
    ("{name: a, op: missing, metric: missing, statuses: [unreachable, unreachble], severity: warning}",
     "statuses: each must be one of error, timeout"),
    ("{name: a, op: missing, metric: missing, statuses: [ok], severity: warning}", "got 'ok'"),
    ("{name: a, op: ras_states, metric: ras_state, states: [DEAD, dead], severity: warning}",
     "states: each must be one of INCOMPLETE"),
])
def test_r01_a_status_or_state_no_row_holds_is_refused_at_load(tmp_path: Path, rule: str, words: str) -> None:
    """R01: a 'missing' rule over the status 'unreachble' (or a RAS rule over 'dead') loaded
    and could never fire on it: the outage it was written for read as nothing found."""
    f = tmp_path / "r.yaml"
    f.write_text(f"extends: default\nrules:\n  - {rule}\n")
    line = one_line_error(_cli("rules", "check", f))
    assert words in line and f"{f}:3" in line


# -- another program's SQLite file as the state store ----------------------------------------

def test_st01_another_programs_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """ST01: --state-dir at a directory whose state.db is another program's SQLite database
    (a browser's history, a CI tool's cache): sncheck added its tables and switched the file
    to a WAL journal (its header rewritten). Refused, named, the file byte for byte as it was."""
    import sqlite3

    sdir = tmp_path / "other"
    sdir.mkdir()
    db = sdir / "state.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (k TEXT, v TEXT)")  # 'meta' is a common name: not enough to be ours
    con.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    con.execute("INSERT INTO moz_places (url) VALUES ('https://example.org')")
    con.commit()
    con.close()
    before = db.read_bytes()
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV)
    for args in (["isolate", "n1", "-i", inv, "--via", "hostfile", "--apply", "--state-dir", sdir],
                 ["history", "--runs", "--state-dir", sdir], ["status", "--state-dir", sdir]):
        line = one_line_error(_cli(*args))
        assert f"{db}: is not sncheck's state database (it holds table 'moz_places' and 1 more)" in line, (args, line)
    assert db.read_bytes() == before
    assert sorted(p.name for p in sdir.iterdir()) == [".sncheck-isolation.lock", "state.db"]  # no -wal, no -shm
