"""Hostile inputs, round 5: round 4's cases left open (H10, a future schema, duplicate faults,
rules that can never fire, a foreign state store) and new cases on today's features. Each test
names its case id; the report's table lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError, HarnessError
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
    skipped = [{"name": "connectivity", "verdict": "skipped"}, {"name": "stress", "verdict": "skipped"}]
    assert read_record(_run_dir(tmp_path, "skipped", layers=skipped)).verdict == Verdict.ERROR
    partly = [{"name": "connectivity", "verdict": "pass"}, {"name": "stress", "verdict": "skipped"}]
    assert read_record(_run_dir(tmp_path, "partly", layers=partly)).verdict == Verdict.PASS


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


# -- kernel-log policy overrides -------------------------------------------------------------

def test_k01_a_driver_range_no_version_satisfies_is_refused(tmp_path: Path) -> None:
    """K01: 'drivers: ">=560,<550"' on an Xid entry loaded; with the driver known the entry
    never applied (its Xids fell to the rule's default severity), unknown it applied as the
    most severe: a policy override that could never fire as written."""
    from sncheck.health.kernel import _range, _satisfiable

    f = tmp_path / "r.yaml"
    f.write_text('extends: default\nrules:\n  - name: kernel-xid\n    table:\n'
                 '      13: {severity: critical, drivers: ">=560,<550"}\n')
    line = one_line_error(_cli("rules", "check", f))
    assert "table[13].drivers '>=560,<550' holds for no driver version" in line and f"{f}:4" in line
    assert [r for r in (">=550", ">=535.104,<560", "==550,>=550", ">=560,<=560", ">=550.90,<550.91")
            if not _satisfiable(_range(r))] == []  # type: ignore[arg-type]
    assert [r for r in ("<550,>=560", ">550,<551", "<0") if _satisfiable(_range(r))] == []  # type: ignore[arg-type]
    f.write_text('extends: default\nrules:\n  - name: kernel-xid\n    table:\n'
                 f'      13: {{severity: critical, drivers: ">={"9" * 5000}"}}\n')
    assert len(one_line_error(_cli("rules", "check", f))) < 400  # the value quoted, not 5000 digits
    many = ",".join(f">=0.{i}" for i in range(20000))  # its check of each bound against each: minutes
    f.write_text('extends: default\nrules:\n  - name: kernel-xid\n    table:\n'
                 f'      13: {{severity: critical, drivers: "{many}"}}\n')
    line = one_line_error(_cli("rules", "check", f))
    assert "at most 4 bounds" in line and len(line) < 400, line
    f.write_text('extends: default\nrules:\n  - name: kernel-xid\n    table:\n'
                 f'      13: {{severity: critical, drivers: ">={"9" * 60},<1"}}\n')
    assert len(one_line_error(_cli("rules", "check", f))) < 400  # unsatisfiable: quoted cut too


# -- the fabric: topology and switch-port counters files -------------------------------------

IB8 = ("name: ib8\nsupernodes:\n  - {name: a, hosts: 'h[01-04]', cards_per_host: 2}\n"
       "  - {name: b, hosts: 'h[05-08]', cards_per_host: 2}\nfabric:\n  spines: [spine0]\n")


def test_fb01_an_empty_topology_file_could_not_be_read_exit_3_naming_it(tmp_path: Path) -> None:
    """FB01: 'fabric check --topology empty.txt' exited 1 (as if it had findings) with a line
    that named no file; a garbled one exits 3 naming it, as the help says."""
    inv, topo = tmp_path / "ib8.yaml", tmp_path / "empty.txt"
    inv.write_text(IB8)
    topo.write_text("")
    line = one_line_error(_cli("fabric", "check", "-i", inv, "--topology", topo), code=3)
    assert f"the fabric's topology ({topo}) does not read" in line


@pytest.mark.parametrize("ports, words", [
    ({"leaf:a[1]": {"symbol_error": "5"}}, "counter 'symbol_error' is not a count"),
    ({"leaf:a[1]": {"symbol_error": True}}, "counter 'symbol_error' is not a count"),
    ({"leaf:a[1]": {"symbol_error": -1}}, "counter 'symbol_error' is not a count"),
    ({"leaf:a[1]": None}, "is not a count"),
])
def test_fb02_a_saved_counter_that_is_not_a_count_is_refused_not_dropped(tmp_path: Path, ports, words) -> None:
    """FB02: a counters file whose value was text ("5") or a bool had it dropped, and with it
    the judgement of that port's growth: the check passed."""
    from sncheck.cli.fabric import COUNTERS_SCHEMA, _load_counters

    f = tmp_path / "before.json"
    f.write_text(json.dumps({"schema": COUNTERS_SCHEMA, "ports": ports}))
    with pytest.raises(ConfigError) as e:
        _load_counters(str(f))
    assert words in str(e.value) and str(f) in str(e.value)


def test_fb03_counters_of_another_fabric_judge_nothing_and_are_refused() -> None:
    """FB03: '--since' a counters file saved on another fabric (or emptied): every port read now
    was 'not read before', no growth was judged, and the check exited 0."""
    from sncheck.cli.fabric import growth_findings
    from sncheck.fabric import Cabling

    now = {"leaf:a[1]": {"symbol_error": 9}, "leaf:a[2]": {"symbol_error": 0}}
    with pytest.raises(ConfigError) as e:
        growth_findings({"leaf:other[1]": {"symbol_error": 0}}, now, Cabling({}, {}), "before.json", "default")
    assert "holds no counter of the 2 switch ports read now" in str(e.value)
    for saved in ({"leaf:a[1]": {}}, {"leaf:a[1]": {"other": 0}}):  # a port in common, but no counter
        with pytest.raises(ConfigError, match="holds no counter"):
            growth_findings(saved, now, Cabling({}, {}), "before.json", "default")
    with pytest.raises(HarnessError, match="no switch port's counters were read now"):
        growth_findings({"leaf:a[1]": {"symbol_error": 1}}, {}, Cabling({}, {}), "before.json", "default")
    f, other = growth_findings({"leaf:a[1]": {"symbol_error": 1}}, now, Cabling({}, {}), "before.json", "default")
    assert f.entity == "leaf:a[1]" and not f.not_judged  # one port in common: judged
    # the other, not read before: not judged (46ade99: it was skipped, a pass)
    assert other.entity == "leaf:a[2]" and other.not_judged


# -- plan ----------------------------------------------------------------------------------

PLAN = ("plan", "--params", "70B", "--hidden", "8192", "--layers", "80", "--card-memory", "80GB")


@pytest.mark.parametrize("extra, words", [
    (("--layout", "tp=3,pp=4,dp=2"), "TP=3 must divide the hidden size 8192"),
    (("--layout", "tp=8,pp=4,dp=2", "--heads", "12", "--recompute", "none"), "TP=8 must divide the 12 attention heads"),
    (("--layout", "tp=2,pp=4,dp=2", "--heads", "6", "--recompute", "none"), "the 6 attention heads must divide"),
    (("--layout", "tp=8,pp=4,dp=2", "--global-batch", "3"), "global batch (3 sequences) must be a positive multiple"),
    (("--layout", "tp=8,pp=4,dp=2", "--domain", "8", "--design", "scale_up=450GB/s@1us", "--design",
      "scale_up=1GB/s@1us"), "--design names scale_up twice"),
])
def test_pl01_a_layout_megatron_could_not_run_is_refused(extra: tuple[str, ...], words: str) -> None:
    """PL01-04: TP=3 over hidden 8192, TP=8 over 12 heads, a global batch of 3 over 2 replicas
    were planned and said to fit (exit 0 or 1): Megatron refuses each at start. A tier given
    twice to --design took the last without a word."""
    line = one_line_error(_cli(*PLAN, *extra))
    assert words in line


# -- history, diff, isolation --------------------------------------------------------------

def test_hs01_an_empty_run_name_is_refused_not_taken_for_the_only_run(tmp_path: Path) -> None:
    """HS01: 'diff "" ""' compared the state store's first run with itself ('' is a prefix of
    every run id), or the working directory's run (Path('') is '.')."""
    from sncheck.health.history import RunRef

    with pytest.raises(ConfigError) as e:
        RunRef("", tmp_path)
    assert "an empty run name" in str(e.value)
    run = _run_dir(tmp_path, "r", layers=[{"name": "connectivity"}])
    assert RunRef(str(run), None).run_id == "r"


def test_i01_a_blank_reason_or_rule_is_refused_and_a_mechanism_named_twice_applied_once(tmp_path: Path) -> None:
    """I01: 'isolate n1 --reason ""' recorded a decision with no why in the state store and the
    audit; '--via hostfile --via hostfile' applied the hostfile twice."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV)
    for opt in ("--reason", "--rule"):
        r = _cli("isolate", "n1", "-i", inv, "--via", "hostfile", "--apply", opt, " ", "--state-dir", tmp_path / "s")
        assert r.exit_code == 2 and "must not be blank" in r.output, r.output
    assert not (tmp_path / "s").exists()
    r = _cli("release", "n1", "-i", inv, "--reason", "", "--state-dir", tmp_path / "s")
    assert r.exit_code == 2 and not (tmp_path / "s").exists()
    r = _cli("isolate", "n1", "-i", inv, "--via", "hostfile", "--via", "hostfile", "--apply",
             "--state-dir", tmp_path / "s")
    assert r.exit_code == 0 and r.output.count("isolate via hostfile: ok") == 1, r.output


# -- help text -------------------------------------------------------------------------------

def test_c01_every_help_text_renders_its_examples_verbatim() -> None:
    """C01: 'fabric check --help' printed '\\b Examples:   sncheck fabric check -i ...' run
    together on one line: its docstring held a backslash and a 'b', not Click's \\b mark."""
    import click

    def walk(cmd: click.Command, path: list[str]) -> list[tuple[str, str]]:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            return [x for name in cmd.list_commands(ctx)
                    for x in walk(cmd.get_command(ctx, name), [*path, name])]  # type: ignore[arg-type]
        return [(" ".join(path), _cli(*path, "--help").output)]

    helps = walk(main, [])
    assert len(helps) > 20
    assert [p for p, text in helps if "\\b" in text] == []


# -- sncheck parse: options a view does not read ----------------------------------------------

NCCL_LOG = Path(__file__).resolve().parent.parent / \
    "fixtures/real/nccl-tests/all_gather_perf/01_a100_8gpu_oldcols_no_redop_validation0.txt"


@pytest.mark.parametrize("args, words", [
    (("nccl-tests", NCCL_LOG, "--collective", "allreduce"), "'allreduce' is no collective"),
    (("nccl-tests", NCCL_LOG, "--ranks", "8"), "--ranks counts the ranks of hccl-test output, not nccl-tests"),
    (("ibstat", NCCL_LOG, "--collective", "all_reduce"), "--collective names the collective of nccl-tests"),
    (("ibstat", NCCL_LOG, "--rules", "default"), "--rules judges a kernel log (TOOL kernel-log) or a counter read "
                                                 "(ib-counters, perfquery, ibqueryerrors), not ibstat"),
    # (perfquery takes --since since issue 28's audit: judged as ib-counters)
    (("ibstat", NCCL_LOG, "--since", NCCL_LOG), "--since judges a counter read's growth (ib-counters, perfquery, "
                                                "ibqueryerrors), not ibstat"),
])
def test_p01_an_option_the_view_does_not_read_is_refused_not_ignored(args, words: str) -> None:
    """P01: 'parse nccl-tests --collective bogus' printed '"collective": "bogus"' and exited 0
    (hccl-test's busbw left null by a typo); '--ranks 8' on nccl-tests was ignored."""
    r = _cli("parse", *args)
    assert r.exit_code == 2 and words in r.output, r.output
    for ok in ("all_gather", "all_gather_perf", "alltoallv"):
        assert _cli("parse", "nccl-tests", NCCL_LOG, "--collective", ok).exit_code == 0, ok


def test_n01_a_host_named_as_a_supernode_of_other_hosts_is_refused(tmp_path: Path) -> None:
    """N01: a host 'sn0' inside supernode 'sn0' of two hosts loaded: 'isolate sn0' took the host,
    and a finding on the supernode and one on the host shared one entity name in the store. A
    one-host supernode named as its host (hgx-2su.yaml) stays allowed."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV.replace('hosts: "n[1-2]"', 'hosts: "sn0,n2"'))
    line = one_line_error(_cli("inventory", "check", inv))
    assert "host 'sn0' has the name of supernode 'sn0' of 2 hosts" in line and f"{inv}:" in line
    inv.write_text(INV.replace('{name: sn0, hosts: "n[1-2]", cards_per_host: 2}',
                               '{name: n1, hosts: n1, cards_per_host: 2}\n  - {name: n2, hosts: n2, cards_per_host: 2}'))
    assert _cli("inventory", "check", inv).exit_code == 0


def test_f02_a_late_fault_in_a_run_without_a_retest_is_refused(tmp_path: Path) -> None:
    """F02: 'late: true' (begins at the confirmation retest) in a playbook with 'confirm: false'
    was never acted out: the run passed, exit 0, as if the fault had been tried."""
    inv, pb, plan = tmp_path / "inv.yaml", tmp_path / "pb.yaml", tmp_path / "f.yaml"
    inv.write_text(INV)
    pb.write_text("name: noconf\nlayers: [connectivity]\ngate: warning\nconfirm: false\n")
    plan.write_text("faults:\n  - {type: slow_card, target: n1/gpu0, factor: 0.3, late: true}\n")
    line = one_line_error(_cli("run", pb, "-i", inv, "--backend", "mock", "--faults", plan, "--seed", "1",
                               "--out", tmp_path / "r", "-q"))
    assert f"{plan}:2: slow_card n1/gpu0 is late" in line and "confirm: false" in line
    assert not (tmp_path / "r").exists()
