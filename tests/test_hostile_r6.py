"""Hostile inputs, round 6: round 5's cases left open (rule names no view declares, a state
directory of another tool, an option given twice), the reviewers' small leftovers, and new
cases on today's features. Each test names its case id; the report's table lists them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.health.rules import load_rules_text
from sncheck.vendors import registry
from test_hardening import one_line_error

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


# -- R01..R04: a rule's facts/counters are names some view declares ---------------------------

@pytest.mark.parametrize("key,given,near", [
    ("facts", "remaped_rows", "remapped_rows"),        # R01: a misspelt fact judged nothing
    ("not_facts", "ECC", "ecc"),                        # R02: case matters: 'ECC' is no fact's name
    ("counters", "symbol_errror", "symbol_error"),      # R03: a misspelt counter judged nothing
])
def test_r01_r03_a_rule_naming_no_declared_fact_or_counter_is_refused_naming_file_and_line(
        tmp_path: Path, key: str, given: str, near: str) -> None:
    """R01-R03: 'facts: [remaped_rows]' (or a counter misspelt) loaded, and the rule judged
    nothing, silently: the gate passed a host with remapped rows. Now exit 2 at the line."""
    metric, op = ("fabric_counters", "counter_growth") if key == "counters" else \
        ("host_fact_failures", "counter_nonzero")
    path = tmp_path / "r.yaml"
    path.write_text(f"rules:\n  - name: mine\n    op: {op}\n    metric: {metric}\n    scope: "
                    f"{'nic' if key == 'counters' else 'host'}\n    severity: critical\n"
                    f"    {key}: [{near}, {given}]\n")
    line = one_line_error(_cli("rules", "check", path))
    assert f"{path}:7" in line and repr(given) in line and f"did you mean {near!r}" in line, line


def test_r04_an_extending_file_misspelling_a_counter_is_refused_and_the_shipped_rules_load(tmp_path: Path) -> None:
    """R04: the merged rule of an 'extends: default' file is checked too; every name the shipped
    rules give is declared (the check refuses nothing real)."""
    with pytest.raises(ConfigError, match=r"'lnk_downed' is no counter"):
        load_rules_text("extends: default\nrules:\n  - name: ib-port-errors-grew\n"
                        "    counters: [symbol_error, lnk_downed]\n")
    for shipped in sorted((ROOT / "fixtures" / "rules").glob("*.yaml")):
        from sncheck.health.rules import load_rules
        for rule in load_rules(str(shipped)).rules:
            for key in ("facts", "not_facts"):
                assert set(rule.params.get(key) or ()) <= registry.fact_names()
            assert set(rule.params.get("counters") or ()) <= registry.counter_names()


def test_r05_every_fact_a_row_is_made_with_is_declared() -> None:
    """R05: the registry is built from the declarations; a fact some code makes a row of by a
    literal name but nothing declares would be refused in a rule that names it rightly."""
    made = set()
    for path in (ROOT / "sncheck").rglob("*.py"):
        made |= set(re.findall(r"fact_row\(\s*\w+,\s*\"([a-z_0-9]+)\"", path.read_text()))
    assert len(made) > 30 and made <= registry.fact_names(), made - registry.fact_names()
    # the counters the grammar of nvlink -e and the IB port counters name
    assert {"replay_errors", "fec_errors_15", "VL15_dropped", "port_xmit_wait"} <= registry.counter_names()


# -- L01..L04: the reviewers' leftovers --------------------------------------------------------

def test_l01_a_default_check_declaring_no_facts_judges_only_its_own_view(monkeypatch) -> None:
    """L01: parsers._commands_by_view took a default check whose facts were empty as carried by
    every view (the empty set is a subset of each): its judgement joined every view's."""
    from sncheck.vendors import parsers
    from sncheck.vendors.facts import command
    nv = registry.vendors()["nvidia"]
    bare = command("bare", "nvidia-smi", ["nvidia-smi", "-L"], nv.commands["topo"].parse,
                   lambda host, parsed, expect: [])
    changed = dataclasses.replace(nv, commands={**nv.commands, "bare": bare},
                                  default_checks=(*nv.default_checks, "bare"))
    every = {**registry.vendors(), "nvidia": changed}
    monkeypatch.setattr(registry, "vendors", lambda: every)
    by_view = parsers._commands_by_view()
    holding = [view for view, cmds in by_view.items() if bare in cmds]
    assert holding == [parsers.view_of(bare.parse)], holding


def test_l02_the_state_stores_tables_are_what_sqlite_makes_not_words_of_sql_text(tmp_path: Path) -> None:
    """L02: OWN_TABLES took the third word of each CREATE TABLE: 'CREATE TABLE IF NOT EXISTS t'
    gave 'IF', and a store of such a migration was refused as another program's."""
    import sqlite3

    from sncheck.store import state
    made = state.tables_made({1: ("CREATE TABLE IF NOT EXISTS t (a)", 'CREATE TABLE "q u" (b INTEGER PRIMARY KEY '
                                  "AUTOINCREMENT)", "CREATE INDEX t_a ON t (a)"), 2: ("CREATE TABLE main.u (c)",)})
    assert made == {1: frozenset({"t", "q u"}), 2: frozenset({"u"})}
    assert state.OWN_TABLES == {"meta"}.union(*state.TABLES_MADE.values()) >= {"runs", "journal", "summaries"}
    # a state.db with a table of another program is still refused, one it made is not
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.execute("CREATE TABLE moz_places (id INTEGER)")
    with pytest.raises(ConfigError, match="moz_places"):
        state.StateStore(tmp_path)


def test_l03_parse_collective_lists_every_collective_it_takes() -> None:
    """L03: the error hard-coded its list beside known_collective and left out alltoallv (which
    it took): the names now come from the one list."""
    from sncheck.vendors import parsers
    from test_hardening import one_line_error_usage
    line = one_line_error_usage(_cli("parse", "nccl-tests", "/dev/null", "--collective", "allreduce"))
    for name in parsers.known_collectives():
        assert parsers.known_collective(name) == name and name in line, (name, line)
    assert "alltoallv" in line and parsers.known_collective("alltoallv_perf_mpi") == "alltoallv"
