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
    # the real registry's table, cached by an earlier test, is not the one built here
    monkeypatch.setattr(parsers, "_commands_by_view", parsers._commands_by_view.__wrapped__)
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
    assert state.OWN_TABLES >= {"runs", "journal", "summaries"} and "IF" not in state.OWN_TABLES
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


# -- O01..O04: an option that takes one value, given twice -----------------------------------

@pytest.mark.parametrize("args, named", [
    (["run", "pre-upgrade-gate", "--out", "{t}/a", "--out", "{t}/b"], "option --out given twice"),      # O01
    (["run", "pre-upgrade-gate", "--rules", "default", "--rules={t}/mine.yaml"], "option --rules given twice"),  # O02
    (["run", "-i", "{t}/a.yaml", "--inventory={t}/b.yaml", "--out", "{t}/c"], "option -i/--inventory given twice"),   # O03
    (["fabric", "check", "--since", "{t}/a", "--since", "{t}/b"], "option --since given twice"),         # O04: a subgroup
    (["history", "--last", "3", "--last=4"], "option --last given twice"),
])
def test_o01_o04_an_option_taking_one_value_given_twice_is_refused_before_anything_runs(
        tmp_path: Path, args: list[str], named: str) -> None:
    """O01-O04: Click kept the last value silently: '--out a --out b' wrote b, '--rules mine
    --rules default' judged by the shipped rules alone. Now one line naming the option, exit 2,
    and nothing written."""
    from test_hardening import one_line_error_usage
    r = _cli(*[a.replace("{t}", str(tmp_path)) for a in args])
    line = one_line_error_usage(r)
    assert named in line and "give it once" in line, line
    assert list(tmp_path.iterdir()) == []  # no run directory, no state


def test_o05_lists_counts_and_a_repeated_flag_are_still_taken(tmp_path: Path) -> None:
    """O05: options declared multiple (--via, --compare, --design) and a flag said twice as
    written ('-q -q') are no repeat; a value that looks like an option is a value."""
    from sncheck.cli.repeats import refuse_repeats
    run = main.get_command(None, "run")  # (get_command reads no context)
    refuse_repeats(None, run, ["pre-upgrade-gate", "-q", "-q", "--out", "--out", "--seed", "1"])
    refuse_repeats(None, run, ["--", "--out", "a", "--out", "b"])  # after '--': arguments
    iso = main.get_command(None, "isolate")
    refuse_repeats(None, iso, ["n1", "--via", "slurm", "--via", "hostfile"])
    import click
    with pytest.raises(click.UsageError, match="option --out given twice"):
        refuse_repeats(None, run, ["--out=a", "--out", "b"])
    refuse_repeats(None, run, ["pre-upgrade-gate", "-q", "--quiet"])  # one flag, two spellings, one sense


def test_o06_shell_completion_is_not_refused() -> None:
    """O06 (review): completing 'sncheck run --out a --out b <TAB>' printed 'Error: option --out
    given twice' instead of the completions: a completion parse refuses nothing."""
    import click
    run = main.get_command(None, "run")
    refuse_repeats_ctx = click.Context(main, info_name="sncheck", resilient_parsing=True)
    from sncheck.cli.repeats import refuse_repeats
    refuse_repeats(refuse_repeats_ctx, run, ["--out", "a", "--out", "b"])
    with pytest.raises(click.UsageError, match="option --out given twice"):
        refuse_repeats(click.Context(main, info_name="sncheck"), run, ["--out", "a", "--out", "b"])


# -- S01..S03: a state directory that is another program's ---------------------------------

def test_s01_a_directory_of_another_program_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """S01: '--state-dir /var/lib/slurm' (a directory of another program's files) got sncheck's
    state.db, WAL and lock among them. Now exit 2 naming the directory; nothing written."""
    from sncheck.actions.transaction import StateLock
    from sncheck.store.state import StateStore
    other = tmp_path / "slurm"
    other.mkdir()
    (other / "node_state").write_text("x")
    (other / "job_state").write_text("y")
    for opener in (StateStore, StateLock):
        with pytest.raises(ConfigError, match=r"holds 'job_state', 'node_state' and no sncheck state") as e:
            opener(other).__enter__()
        assert str(other) in str(e.value)
    assert sorted(p.name for p in other.iterdir()) == ["job_state", "node_state"]
    line = one_line_error(_cli("isolate", "node003", "-i", ROOT / "fixtures" / "inventories" / "demo-2sn.yaml",
                               "--via", "hostfile", "--apply", "--state-dir", other))
    assert str(other) in line and "another program's directory" in line, line
    assert sorted(p.name for p in other.iterdir()) == ["job_state", "node_state"]


def test_s02_a_new_an_empty_and_sncheck_s_own_directory_are_state_directories(tmp_path: Path) -> None:
    """S02: the refusal takes nothing real: a missing or empty directory, and one sncheck made
    (its database, or only its lock from an isolation interrupted before the store opened)."""
    from sncheck.actions import base, transaction
    from sncheck.store import statedir
    from sncheck.store.state import StateStore
    from sncheck.actions import ACTIONS
    renders = {n for a in ACTIONS.values() for n in getattr(a, "renders", {})}
    # (round 8: a side file of the database alone marks nothing: test_hostile_r8 H8-03)
    assert set(statedir.MARKS) == {transaction.LOCK_NAME, statedir.DB_NAME}
    # (review) everything else sncheck writes there is written under the lock, never removed;
    # a generic name of its own ('hostfile.txt') is no mark: an MPI job's directory holds one
    assert renders and not (renders | {base.AUDIT_NAME}) & set(statedir.MARKS)
    (tmp_path / "mpi").mkdir()
    for name in ("hostfile.txt", "job.sh", ".bashrc"):
        (tmp_path / "mpi" / name).write_text("")
    with pytest.raises(ConfigError, match="another program's directory"):
        StateStore(tmp_path / "mpi").__enter__()
    StateStore(tmp_path / "new").close()
    (tmp_path / "empty").mkdir()
    StateStore(tmp_path / "empty").close()
    (tmp_path / "new" / "notes.txt").write_text("an operator's note beside sncheck's state")
    StateStore(tmp_path / "new").close()
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / transaction.LOCK_NAME).write_text("")
    StateStore(tmp_path / "locked").close()


# -- P01: plan -------------------------------------------------------------------------------

def test_p01_what_is_counted_over_the_card_does_not_fit_though_activations_are_unknown() -> None:
    """P01: 70B at TP=8 with Adam needs 130 GiB a card before activations; without --hidden and
    --layers plan said 'cannot say whether it fits' and exited 0 on an 80 GB card."""
    r = _cli("plan", "--params", "70B", "--layout", "tp=8,dp=4", "--card-memory", "80GB")
    assert r.exit_code == 1 and "does NOT fit (short by 50.4 GiB per card, activations not counted)" in r.output, \
        r.output
    r = _cli("plan", "--params", "7B", "--layout", "tp=8,dp=4", "--card-memory", "80GB")
    assert r.exit_code == 0 and "cannot say whether it fits: activations unknown" in r.output, r.output


# -- FB01..FB02: the fabric's topology --------------------------------------------------------

IB_TOPOLOGY = ROOT / "fixtures" / "real" / "ib-fabric" / "01_ibnetdiscover_ibsim_2leaf_1spine_8hosts_2rails.txt"


def test_fb01_two_switches_of_one_description_are_two_switches() -> None:
    """FB01: unmanaged switches keep their vendor's default description; two leaves described
    alike were one 'leaf:<name>': their ports' cables merged, and one switch's perfquery
    counters overwrote the other's under the same port ids."""
    from sncheck.vendors.infiniband import discovery
    parsed = discovery.parse_topology(IB_TOPOLOGY.read_text().replace('"su0-rail1"', '"su0-rail0"'))
    ids = [s for s, _ in discovery.counter_commands(parsed)]
    assert len(ids) == len(set(ids)) == 3, ids
    assert "leaf:su0-rail0-0x0000000000200000" in ids and "leaf:su0-rail0-0x0000000000200001" in ids
    cabled = discovery.cabling(parsed, {f"h{i:02d}": 2 for i in range(1, 9)})
    assert len(set(cabled.nics.values())) == 16 and len(cabled.uplinks) == 2  # no two NICs on one port
    # a switch of its own name keeps it
    assert "spine:spine0" in ids


def test_fb03_a_guid_suffixed_name_equal_to_another_switchs_is_refused_not_merged() -> None:
    """FB03 (review): descriptions 'a', 'a' and 'a-<guid of the first>' named the first and the
    third switch alike: merged again. No name is then safe to give: refused, naming both."""
    from sncheck.errors import ParseError
    from sncheck.vendors.infiniband import discovery
    text = IB_TOPOLOGY.read_text()
    parsed = discovery.parse_topology(text.replace('"su0-rail1"', '"su0-rail0"')
                                      .replace('"spine0"', '"su0-rail0-0x0000000000200000"'))
    with pytest.raises(ParseError, match=r"both read as 'su0-rail0-0x0000000000200000'.*rename one"):
        discovery.counter_commands(parsed)
    assert any("both read as" in e for e in parsed["errors"])  # fabric check: exit 3 naming the topology


def test_fb02_two_topology_outputs_spliced_together_do_not_read_whole(tmp_path: Path) -> None:
    """FB02: 'cat before.txt after.txt' as the topology listed every node twice: each host had
    4 adapters for 2 cards, eight 'cabling' findings blamed the hosts (exit 1). ibnetdiscover
    records each node once: now exit 3, the topology named."""
    topo, inv = tmp_path / "twice.txt", tmp_path / "ib8.yaml"
    topo.write_text(IB_TOPOLOGY.read_text() * 2)
    inv.write_text("name: ib8\nsupernodes:\n  - {name: a, hosts: 'h[01-04]', cards_per_host: 2}\n"
                   "  - {name: b, hosts: 'h[05-08]', cards_per_host: 2}\nfabric:\n  spines: [spine0]\n")
    line = one_line_error(_cli("fabric", "check", "-i", inv, "--topology", topo), code=3)
    assert str(topo) in line and "recorded 2 times" in line, line


# -- INV01: one machine by two spellings ------------------------------------------------------

@pytest.mark.parametrize("second", ["H01", "h01."])
def test_inv01_one_host_by_two_spellings_is_refused(tmp_path: Path, second: str) -> None:
    """INV01: 'h01' in one supernode and 'H01' (or 'h01.') in another loaded as two hosts: DNS
    reaches one machine by both, measured twice (its pairs with itself over the network), and
    isolating 'h01' left 'H01' in service."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"name: t\nsupernodes:\n  - {{name: a, hosts: 'h01,h02', cards_per_host: 2}}\n"
                   f"  - {{name: b, hosts: '{second}', cards_per_host: 2}}\n")
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:4" in line and f"host {second!r} is in two supernodes: 'a' and 'b' (as 'h01'" in line, line


# -- SL01: Slurm's words are at the start of a line --------------------------------------------

def test_sl01_a_task_line_quoting_srun_names_no_failed_node_and_cancels_no_step() -> None:
    """SL01: the tasks' stderr reaches srun's: a task's log line quoting 'srun: error: node9:
    task 0: Exited with exit code 1' (or a stepd's CANCELLED banner) mid-line made node9 a
    failed node and its rows not_run. Slurm's log prefix starts the line."""
    from sncheck.slurm.steps import allocation_gone, cancelled, failed_nodes
    quoted = ("[rank3] retry after: srun: error: node9: task 0: Exited with exit code 1\n"
              "[rank3] saw: slurmstepd: error: *** STEP 5.0 ON node9 CANCELLED AT 2026-12-04T22:41:12 ***\n"
              "[rank3] saw: srun: error: Slurm job 5 has expired\n")
    assert failed_nodes(quoted) == {} and cancelled(quoted) is None and allocation_gone(quoted) is None
    real = quoted + "srun: error: node3: task 1: Killed\nslurmstepd-node3: error: *** STEP 5.0 ON node3 " \
                    "CANCELLED AT 2026-12-04T22:41:13 DUE TO TIME LIMIT ***\n"
    assert failed_nodes(real) == {"node3": "task 1: Killed"}
    assert cancelled(real) == type(cancelled(real))("5.0", "node3", "2026-12-04T22:41:13", "TIME LIMIT")
    # (review) a progress bar ends in '\r': srun's line after it still starts a line
    barred = " 50%|#####     | 5/10\rsrun: error: node3: task 2: Exited with exit code 1\n"
    assert failed_nodes(barred) == {"node3": "task 2: Exited with exit code 1"}


# -- DF01: diff says what it compares ---------------------------------------------------------

def test_df01_diff_of_two_clusters_or_of_one_run_says_so(tmp_path: Path) -> None:
    """DF01: 'sncheck diff' of a demo-2sn run and an hgx-2su run printed per-tier deltas and
    every finding of the first as 'resolved', exit 0, not a word that these were two clusters;
    a run against itself 'changed nothing' as if two nights agreed."""
    import json

    from test_hostile_r5 import _run_dir
    finding = {"entity": "n1/gpu0", "entity_kind": "card", "rule": "r", "severity": "critical", "message": "m",
               "layer": "connectivity"}
    layers = [{"name": "connectivity", "verdict": "pass"}]
    a = _run_dir(tmp_path, "a", layers=layers, findings=[finding], verdict="fail")
    b = _run_dir(tmp_path, "b", layers=layers, inventory="other-cluster")
    r = _cli("diff", a, b)
    assert r.exit_code == 0 and "note: the runs are of different inventories (tiny -> other-cluster)" in r.output, \
        r.output
    d = json.loads(_cli("diff", a, b, "--json").output)
    assert d["a"]["inventory"] == "tiny" and len(d["notes"]) == 1 and len(d["findings"]["resolved"]) == 1
    r = _cli("diff", a, a)
    assert "note: RUN_A and RUN_B are one run (a)" in r.output and "different inventories" not in r.output
    assert "note:" not in _cli("diff", a, _run_dir(tmp_path, "c", layers=layers)).output


# -- NB01: a near-bar retest whose samples are no ratio --------------------------------------

def test_nb01_a_near_bar_retest_of_zero_latencies_cannot_say_it_does_not_crash() -> None:
    """NB01: a card whose every retest latency read 0 (a timer fault: no latency is 0) made
    judge_samples divide by zero: 'internal error', exit 3, the run's other verdicts lost.
    Nothing says where the card is: the retest cannot say, the card stays quarantined."""
    import pandas as pd

    from sncheck.health.rules import load_rules
    from sncheck.run.nearbar import judge_samples
    rule = next(r for r in load_rules("default").rules if r.params.get("above") is not None and "latency" in r.metric)
    cells = pd.DataFrame({"src": ["c0", "c0", "c1", "c2"], "dst": ["c1", "c2", "c2", "c3"],
                          "value": [0.0, 0.0, 5.0, 5.0], "failed": [False] * 4})
    assert judge_samples(rule, cells, "c0") == (None, "none of its 2 samples is a finite ratio to its controls' level")
    sane = cells.assign(value=[5.0, 5.1, 5.0, 5.05])
    assert "median" in judge_samples(rule, sane, "c0")[1]  # samples that are ratios are judged


# -- PQ01: a Parquet part whose numbers are text ----------------------------------------------

def test_pq01_a_part_with_text_where_its_kind_holds_numbers_is_refused_naming_it(tmp_path: Path) -> None:
    """PQ01: a p2p part whose bw_GBps column held text (another program's, or edited) was read,
    and a metric's cast crashed: 'internal error in sncheck diff: ValueError: could not convert
    string to float', exit 3. Numbers as text ('451.6') passed silently. Now exit 2 naming the part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from test_hostile_r5 import _run_dir
    run = _run_dir(tmp_path, "a", layers=[{"name": "connectivity", "verdict": "pass"}])
    (run / "rows" / "p2p").mkdir()
    part = run / "rows" / "p2p" / "part-000001.parquet"
    for text in ("abc", "451.6"):
        pq.write_table(pa.table({"kind": ["p2p"], "layer": ["connectivity"], "src": ["n1/gpu0"], "dst": ["n1/gpu1"],
                                 "tier": ["intra_host"], "bw_GBps": [text]}), part)
        line = one_line_error(_cli("diff", run, run))
        assert str(part) in line and "its column 'bw_GBps' holds string, where p2p rows hold a float" in line, line


# -- KL01: kernel-log reports no rule takes --------------------------------------------------

def test_kl01_parse_kernel_log_with_rules_that_take_no_xid_says_not_judged(tmp_path: Path) -> None:
    """KL01: 'parse kernel-log dmesg --rules mine.yaml' where mine.yaml disables kernel-xid (or
    has no kernel rule at all): four Xid reports, "judged": [], exit 0: a pass from nothing
    judged. Now exit 1, a line per source no rule takes; the shipped rules take every source."""
    log = ROOT / "fixtures" / "real" / "kernel-log" / "01_dmesg_ctime_xid13_x3_xid109_gpud_readme.txt"
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: default\nrules:\n  - name: kernel-xid\n    enabled: false\n")
    r = _cli("parse", "kernel-log", log, "--rules", mine)
    assert r.exit_code == 1 and "not judged: 4 xid reports, and no kernel_events rule of these rules takes xid " \
                                "reports" in r.output, r.output
    assert '"judged": []' in r.output
    assert "not judged" not in _cli("parse", "kernel-log", log, "--rules", "default").output


def test_s03_status_of_another_programs_directory_is_no_empty_state(tmp_path: Path) -> None:
    """S03: 'sncheck status --state-dir /var/lib/slurm' (a typo'd or wrong directory) said
    'nothing is quarantined or isolated', exit 0: an operator read all clear from a directory
    sncheck never used. A new directory still reads as nothing recorded."""
    other = tmp_path / "slurm"
    other.mkdir()
    (other / "node_state").write_text("x")
    line = one_line_error(_cli("status", "--state-dir", other))
    assert str(other) in line and "another program's directory" in line, line
    r = _cli("status", "--state-dir", tmp_path / "new")  # (review) a mistyped path is not all clear either
    assert r.exit_code == 0 and f"no state directory at {tmp_path / 'new'}: nothing recorded" in r.output, r.output
    assert "nothing is quarantined" not in r.output
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("rule, key", [("host-fact-hardware-fault", "facts"), ("ib-port-errors-grew", "counters")])
def test_r06_an_empty_list_of_facts_or_counters_is_refused(rule: str, key: str) -> None:
    """R06: 'facts: []' (or 'counters: []') loaded, and the hardware-fault rule judged nothing:
    a remapped row passed. 'enabled: false' says that on purpose; 'not_facts: []' is harmless."""
    with pytest.raises(ConfigError, match=rf"{key}: an empty list names no .*set enabled: false"):
        load_rules_text(f"extends: default\nrules:\n  - name: {rule}\n    {key}: []\n")
    load_rules_text("extends: default\nrules:\n  - name: host-fact\n    not_facts: []\n")
