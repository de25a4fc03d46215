"""Hostile inputs, round 7: round 6's leftovers (history of an empty or unknown entity; YAML
numbers read as another number wherever sncheck reads one) and attacks on what the last two
sessions changed. Each test names its case id; the report's table lists them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.config import yamlio
from sncheck.errors import ConfigError
from sncheck.health.summaries import Summary
from sncheck.store.state import StateStore
from test_hardening import one_line_error

ROOT = Path(__file__).resolve().parents[1]
DEMO = (ROOT / "fixtures" / "inventories" / "demo-2sn.yaml").read_text()


def _cli(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


# -- H01..H05: history of an empty, unknown or mistaken ENTITY --------------------------------

@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of two runs: node001/gpu0 measured in the older one only."""
    with StateStore(tmp_path) as st:
        for i, entity in enumerate(("node001/gpu0", "node002/gpu0")):
            run_id = f"2026120{i + 1}T000000Z-000{i}"
            st.record_run({"run_id": run_id, "verdict": "pass", "started": f"2026-12-0{i + 1}T00:00:00Z",
                           "playbook": "p", "inventory": "demo-2sn", "backend": "mock"})
            st.record_summaries(run_id, [Summary("card", entity, "p2p_bandwidth/scale_up", 450.0, 1.0, 3)])
    return tmp_path


@pytest.mark.parametrize("entity", ["", "  "])
def test_h01_history_of_an_empty_entity_is_refused_not_the_run_list(store: Path, entity: str) -> None:
    """H01: `history ''` listed the runs (exit 0), as if no ENTITY had been given."""
    line = one_line_error(_cli("history", entity, "--state-dir", store))
    assert "an empty ENTITY" in line and str(store) in line, line


def test_h02_history_of_an_unknown_entity_is_refused_with_the_nearest_names(store: Path) -> None:
    """H02: `history node01` said 'node01: nothing recorded', exit 0: a mistyped name read as a
    clean history. Now exit 2 naming what was asked and the nearest names the store holds."""
    r = _cli("history", "node002/gpu", "--state-dir", store)
    assert r.exit_code == 2 and "'node002/gpu': no such entity" in r.output \
        and "did you mean 'node002/gpu0'" in r.output, r.output
    r = _cli("history", "node002/gpu", "--state-dir", store, "--json")
    assert r.exit_code == 2 and "no such entity" in r.output, r.output


def test_h03_an_entity_measured_before_the_last_runs_is_no_error(store: Path) -> None:
    """H03: the refusal is for names no run holds; one measured only before --last N is real."""
    r = _cli("history", "node001/gpu0", "--state-dir", store, "--last", 1)
    assert r.exit_code == 0 and "nothing recorded in the last 1 runs" in r.output, r.output
    r = _cli("history", "node001/gpu0", "--state-dir", store)
    assert r.exit_code == 0 and "20261201T000000Z-0000" in r.output, r.output


def test_h04_a_run_id_given_as_entity_is_said_to_be_one(store: Path) -> None:
    line = one_line_error(_cli("history", "20261202T000000Z-0001", "--state-dir", store))
    assert "that is a run id, not an entity" in line, line


def test_h05_runs_and_an_entity_together_are_refused(store: Path) -> None:
    """H05: `history --runs node001/gpu0` listed the runs and dropped the entity unsaid."""
    line = one_line_error(_cli("history", "--runs", "node001/gpu0", "--state-dir", store))
    assert "'node001/gpu0') or --runs, not both" in line, line


# -- Y01..Y08: a number YAML reads as another (hex, octal, binary, base 60) -------------------

@pytest.mark.parametrize("extra,written,read", [
    ("ssh: {port: 022}\n", "022", 18),                          # Y01: port 22 would dial 18
    ("hosts:\n  node001: {port: 0x16}\n", "0x16", 22),        # Y02: a host's port in hex
    ("hosts:\n  node001: {cards: 010}\n", "010", 8),            # Y03: a count in octal
    ("launcher: {parallel_steps: 0b11}\n", "0b11", 3),          # Y04: binary
    ("ssh: {connect_timeout: 1:30}\n", "1:30", 90),             # Y05: base 60 (a time, read as 90)
])
def test_y01_y05_an_inventory_number_yaml_reads_otherwise_is_refused_at_its_line(
        tmp_path: Path, extra: str, written: str, read: int) -> None:
    path = tmp_path / "inv.yaml"
    path.write_text(DEMO + extra)
    line = one_line_error(_cli("inventory", "check", path))
    at = len(DEMO.splitlines()) + extra.count("\n")
    assert f"{path}:{at}: {written} is read by YAML as the number {read}" in line and "decimal" in line, line


def test_y06_a_fault_plan_port_in_octal_and_a_rule_bar_in_base_60_are_refused() -> None:
    """Y06: a fault's port (the host's port-th IB port) written 010 acted on port 8."""
    from sncheck.run.inputs import load_faults_text, load_inventory_text
    from sncheck.topology import Topology
    topo = Topology(load_inventory_text(DEMO))
    with pytest.raises(ConfigError, match=r"f\.yaml:2: 010 is read by YAML as the number 8 \(octal"):
        load_faults_text("faults:\n  - {type: ib_port_down, target: node001, port: 010}\n", topo, "f.yaml")
    with pytest.raises(ConfigError, match=r"r\.yaml:4: 1:30 is read by YAML as the number 90 \(base 60\)"):
        yamlio.load_text("rules:\n  - name: x\n    op: counter_nonzero\n    bar: 1:30\n", "r.yaml")


def test_y07_a_host_key_yaml_reads_as_a_number_is_said_as_written(tmp_path: Path) -> None:
    """Y07: a host named 013 (a key) was refused as 'hosts.11: must be a string, got 11'."""
    path = tmp_path / "inv.yaml"
    path.write_text(DEMO + "hosts:\n  013: {port: 22}\n")
    line = one_line_error(_cli("inventory", "check", path))
    assert "hosts.013: must be a string" in line and "the key 013, which YAML reads as the number 11" in line, line


def test_y08_numbers_that_read_as_written_stay_numbers_and_quoted_texts_stay_text() -> None:
    """Y08: the refusal is only for other bases: +22, 1_000, 0, 0.5 and 00.5 read as their
    digits say; '022' quoted is the text; a key keeps its text (the kernel table refuses it)."""
    data = yamlio.load_text("a: +22\nb: 1_000\nc: 0\nd: 0.5\ne: '022'\nf: 00.5\n0x0d: k\n", "t.yaml").data
    assert data == {"a": 22, "b": 1000, "c": 0, "d": 0.5, "e": "022", "f": 0.5, 13: "k"}
    assert data.key_texts == {"13": "0x0d"}
    assert yamlio.written_otherwise("-0X1f") == "hexadecimal" and yamlio.written_otherwise("10") is None


# -- PQ02: a Parquet part whose names are numbers ---------------------------------------------

@pytest.mark.parametrize("column,values,held", [
    ("tier", [7, 7], "int64"),                          # a baseline of tier '7', exit 0
    ("src", [0, 1], "int64"),                           # cards '0' and '1'
    ("dst", [[1, 2], [3]], "list<element: int64>"),     # a list where a card's name stands
])
def test_pq02_a_part_with_numbers_where_its_kind_holds_names_is_refused_naming_it(
        tmp_path: Path, column: str, values: list, held: str) -> None:
    """PQ02: PQ01 refused text where numbers stand; the converse was read on: a p2p part whose
    tier held 7 made 'baseline make' a baseline of tier '7' (exit 0), and diff compared it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from test_hostile_r5 import _run_dir
    run = _run_dir(tmp_path, "a", layers=[{"name": "connectivity", "verdict": "pass"}])
    (run / "rows" / "p2p").mkdir()
    part = run / "rows" / "p2p" / "part-000001.parquet"
    table = {"kind": ["p2p"] * 2, "layer": ["connectivity"] * 2, "src": ["n1/gpu0"] * 2, "dst": ["n1/gpu1"] * 2,
             "tier": ["intra_host"] * 2, "bw_GBps": [450.0, 451.0]}
    pq.write_table(pa.table({**table, column: values}), part)
    for args in (("diff", run, run), ("baseline", "make", run, "--out", tmp_path / "b.json")):
        line = one_line_error(_cli(*args))
        assert str(part) in line and f"its column {column!r} holds {held}, where p2p rows hold text" in line, line
    assert not (tmp_path / "b.json").exists()


# -- IB01: parse ib-counters FILE --since FILE ------------------------------------------------

def test_ib01_a_counter_read_since_itself_is_refused(tmp_path: Path) -> None:
    """IB01: `parse ib-counters after.txt --since after.txt` (a typo for the earlier read, or the
    same file through a link) judged no growth: symbol_error 500 passed, exit 0."""
    read = tmp_path / "after.txt"
    read.write_text("/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:500\n"
                    "/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed:0\n# end of counters\n")
    (tmp_path / "link.txt").symlink_to(read)
    for since in (read, tmp_path / "link.txt"):
        r = _cli("parse", "ib-counters", read, "--since", since)
        assert r.exit_code == 2 and "--since names the read itself" in r.output and r.stdout.count("{") == 0, r.output
    earlier = tmp_path / "before.txt"
    earlier.write_text(read.read_text().replace(":500", ":0"))
    assert _cli("parse", "ib-counters", read, "--since", earlier).exit_code == 1  # the growth fails, as before


# -- ND01: nccl-tests, a row duplicated where another is lost ---------------------------------

NCCL = ROOT / "fixtures" / "real" / "nccl-tests"


@pytest.mark.parametrize("banner", [True, False])
def test_nd01_a_row_duplicated_beside_a_row_lost_is_not_whole(tmp_path: Path, banner: bool) -> None:
    """ND01: the loop-size check counts a sweep's rows; a row pasted twice (65536) and one lost
    (64 MiB) kept the count: 31 rows read whole, exit 0, the 64 MiB row gone. A loop stepping by
    a factor prints no size above 0 twice; an excerpt without the banner likewise."""
    lines = (NCCL / "all_reduce_perf" / "01_h100_16ranks_2nodes_float_newcols.txt").read_text().splitlines(True)
    at = {ln.split()[0]: i for i, ln in enumerate(lines) if ln.split()[2:3] == ["float"]}
    kept = [ln for i, ln in enumerate(lines) if i != at["67108864"] and (banner or "minBytes" not in ln)]
    kept.insert(kept.index(lines[at["65536"]]), lines[at["65536"]])
    path = tmp_path / "dup.txt"
    path.write_text("".join(kept))
    r = _cli("parse", "nccl-tests", path)
    assert r.exit_code == 1 and "the row of 65536 bytes is printed twice in the sweep of float" in r.output, r.output
    for view, name in (("all_gather_perf", "01_a100_8gpu_oldcols_no_redop_validation0.txt"),
                       ("all_reduce_perf", "01_h100_16ranks_2nodes_float_newcols.txt")):
        assert _cli("parse", "nccl-tests", NCCL / view / name).exit_code == 0  # sizes of 0 repeat: whole


# -- ST01: status of an unknown or empty ENTITY ------------------------------------------------

def test_st01_status_of_an_unknown_entity_is_refused_not_all_clear(store: Path) -> None:
    """ST01: `status node01` (for node001) said 'nothing is quarantined or isolated', exit 0, and
    `status ''` too: a mistyped name read as all clear (H02's class, in status)."""
    for args in (("node002/gpu",), ("--history", "node002/gpu")):
        line = one_line_error(_cli("status", *args, "--state-dir", store))
        assert "status 'node002/gpu': no such entity" in line and "did you mean 'node002/gpu0'" in line, line
    assert "an empty ENTITY" in one_line_error(_cli("status", "", "--state-dir", store))
    r = _cli("status", "node002/gpu0", "--state-dir", store)  # measured, never quarantined: all clear
    assert r.exit_code == 0 and "nothing is quarantined or isolated" in r.output, r.output


def test_st02_a_store_of_manual_isolations_only_cannot_tell_a_name(tmp_path: Path) -> None:
    """ST02: isolate's manual runs measure nothing: the store does not know the fleet's names, so
    status of a host it never isolated is all clear (not refused), as before."""
    with StateStore(tmp_path) as st:
        st.record_run({"run_id": "20261201T000000Z-0000", "verdict": "pass", "playbook": "manual isolate"})
    r = _cli("status", "node009", "--state-dir", tmp_path)
    assert r.exit_code == 0 and "nothing is quarantined or isolated" in r.output, r.output


# -- RB01: a ratio's bar no ratio can cross ----------------------------------------------------

@pytest.mark.parametrize("rule,bar,says", [
    ("p2p-bandwidth-card-slow", "below: 0", "a ratio is 0 or more, never below it, so the rule would judge nothing"),
    ("p2p-bandwidth-domain-below-design", "below: -0.9", "never below it"),   # a sign slip silenced it
    ("p2p-latency-above-design", "above: -2", "every ratio (0 or more) is above it"),
])
def test_rb01_a_ratio_bar_no_ratio_can_cross_is_refused(tmp_path: Path, rule: str, bar: str, says: str) -> None:
    """RB01: 'below: 0' (or a sign slip, -0.9) on a ratio rule loaded and judged nothing, silently,
    as 'facts: []' did before a1af340; robust_z bars may be negative and still load."""
    path = tmp_path / "r.yaml"
    path.write_text(f"extends: default\nrules:\n  - name: {rule}\n    {bar}\n")
    line = one_line_error(_cli("rules", "check", path))
    assert f"{path}:4" in line and says in line, line
    path.write_text("extends: default\nrules:\n  - name: collective-straggler\n    above: -1\n")
    assert _cli("rules", "check", path).exit_code == 0


# -- HD01, PL01: attacks that held (kept so that they keep holding) ---------------------------

def test_hd01_a_run_directory_diffed_with_its_copy_or_a_link_is_said_to_be_one_run(tmp_path: Path) -> None:
    """HD01: a copy of a run directory (same run id) or a link to it is the same run: diff says
    so (9e6e861's note), by run id, not by path."""
    import shutil

    from test_hostile_r5 import _run_dir
    run = _run_dir(tmp_path, "a", layers=[{"name": "connectivity", "verdict": "pass"}])
    shutil.copytree(run, tmp_path / "copy")
    (tmp_path / "link").symlink_to(run)
    for other in (tmp_path / "copy", tmp_path / "link"):
        r = _cli("diff", run, other)
        assert r.exit_code == 0 and "note: RUN_A and RUN_B are one run (a)" in r.output, r.output


@pytest.mark.parametrize("layout,says", [
    ("tp=8,tp=4,dp=2", "--layout names tp twice"),
    ("tp=010,pp=4,dp=2", None),              # a leading 0 on the command line is decimal 10: TP=10 divides no 8192
])
def test_pl01_plan_layout_a_degree_twice_is_refused_and_digits_read_as_decimal(layout: str, says: str | None) -> None:
    r = _cli("plan", "--params", "70B", "--layout", layout, "--hidden", 8192, "--layers", 80, "--card-memory", "80GB")
    assert r.exit_code == 2, r.output
    assert (says or "TP=10 must divide the hidden size 8192") in r.output, r.output
