"""Hostile inputs, round 25: kinds a held-out set holds and rounds 3-24 did not try, weighted to
what changed last -- the nightly's host facts (ce6cfd9), baselines (`--baseline FILE|last-pass`,
`baseline make`), the stress layer's cross groups, the kernel-log policy in rules files -- and to
surfaces no round attacked: the report's user templates (`--templates`: Jinja code, a template
that does not compile, includes nothing holds), the state store's run rows as `status` prints them,
a rows file of the shared directory that is no regular file, and `parse` views given another
tool's output. Each test names its case id; the README's round 25 table lists them. New instances
only: no case of an earlier round is tested again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import _cli

REPO = Path(__file__).resolve().parents[1]

TINY = ("name: tiny\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
        "  scale_out: {bandwidth: '400 Gb/s', latency: '15 us'}\nsupernodes:\n"
        "  - {name: sn0, hosts: 'h[1-2]', cards_per_host: 2}\n  - {name: sn1, hosts: 'g[1-2]', cards_per_host: 2}\n")


def _file(d: Path, name: str, text: str) -> Path:
    (p := d / name).parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One passing mock gate of the tiny fleet, recorded in a state store: its run directory,
    its baseline, the store."""
    d = tmp_path_factory.mktemp("r25")
    inv = _file(d, "tiny.yaml", TINY)
    got = _cli("run", "pre-upgrade-gate", "-i", inv, "--backend", "mock", "--seed", 1, "--out", d / "run",
               "--state-dir", d / "state", "--format", "", "-q")
    assert got.exit_code == 0, got.output
    got = _cli("baseline", "make", d / "run", "--out", d / "base.json")
    assert got.exit_code == 0, got.output
    return {"dir": d, "inv": inv, "run": d / "run", "base": d / "base.json", "state": d / "state"}


# -- the report's user templates ----------------------------------------------------------------------

def test_h25_01_a_template_that_runs_a_command(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-01: `--templates DIR` whose `_summary.html` says `{{ cycler.__init__.__globals__.os.system(...) }}`:
    the report's Jinja environment was not sandboxed, so rendering the report ran the command
    (`touch PWNED`), exit 0. A template is configuration: it formats what the run gives it and
    reaches no Python attribute past that; refused, exit 2, naming the template, nothing run."""
    pwned = tmp_path / "PWNED"
    tpl = _file(tmp_path, "tpl/_summary.html",
                f"{{{{ cycler.__init__.__globals__.os.system('touch {pwned}') }}}}\n").parent
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--templates", tpl,
                              "--out", tmp_path / "o", "-q"))
    assert "_summary.html" in got and "unsafe" in got, got
    assert not pwned.exists()


@pytest.mark.parametrize("text, says", [
    ("<p>\n{{ x\n", "_summary.html:2: "),
    ("{% for %}\n", "_summary.html:1: "),
], ids=["unclosed", "bad-for"])
def test_h25_02_a_template_that_does_not_compile(tmp_path: Path, clean: dict[str, Path], text: str,
                                                  says: str) -> None:
    """H25-02: a user template that is no Jinja (`{{ x` left open): the run measured and judged, then
    'internal error in sncheck run: TemplateSyntaxError', exit 3, a crash log. The templates are
    compiled when the command starts: refused at the template's line, exit 2, nothing run."""
    tpl = _file(tmp_path, "tpl/_summary.html", text).parent
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--templates", tpl,
                              "--out", tmp_path / "o", "-q"))
    assert says in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, says", [
    ("{% include 'nope.html' %}\n", "'nope.html'"),
    ("{% include '../../etc/passwd' %}\n", "'../../etc/passwd'"),
    ("{% include '_summary.html' %}\n", "includes itself"),
    ("{% extends 'report.html' %}\n", "includes itself"),
], ids=["missing", "outside", "itself", "extends-its-includer"])
def test_h25_03_a_template_that_includes_what_no_template_is(tmp_path: Path, clean: dict[str, Path], text: str,
                                                             says: str) -> None:
    """H25-03: a user template including a name no template directory holds (`nope.html`, a path out
    of the directory): "cannot write the command's files: nope.html", exit 3, after the run; one
    including itself (or extending the page that includes it): RecursionError, exit 3, a crash
    log. Refused when the templates load, naming the template and what it includes, exit 2."""
    tpl = _file(tmp_path, "tpl/_summary.html", text).parent
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--templates", tpl,
                              "--out", tmp_path / "o", "-q"))
    assert "_summary.html" in got and says in got, got
    assert not (tmp_path / "o").exists()


def test_h25_04_a_template_that_is_a_fifo(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-04 (held): a FIFO named like a template in the templates directory: refused by what it
    is, never opened blocking, exit 2."""
    (tpl := tmp_path / "tpl").mkdir()
    os.mkfifo(tpl / "_summary.html")
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--templates", tpl,
                              "--out", tmp_path / "o", "-q"))
    assert "_summary.html" in got and "FIFO" in got, got


# -- what the state store holds, as printed ---------------------------------------------------------

def test_h25_05_status_prints_a_run_row_as_written(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-05: the state store's run row edited to playbook 'pre<CR>sncheck: verdict pass<LF>',
    verdict 'pass<U+202E>': `history --runs` escaped them, `status` printed them raw on its 'runs
    recorded; latest' line: a forged line and a reordered one on the operator's terminal. Every
    value from the store is printed escaped."""
    state = tmp_path / "state"
    shutil.copytree(clean["state"], state)
    with sqlite3.connect(state / "state.db") as db:
        db.execute("UPDATE runs SET playbook = ?, verdict = ?", ("pre\rsncheck: verdict pass\n", "pass\u202e"))
    got = _cli("status", "--state-dir", state)
    assert got.exit_code == 0, got.output
    assert "\r" not in got.output and "\u202e" not in got.output, got.output
    assert "\nsncheck: verdict pass" not in got.output, got.output
    assert "pre\\u000dsncheck: verdict pass\\u000a" in got.output, got.output


def test_h25_06_history_of_like_wildcards(clean: dict[str, Path]) -> None:
    """H25-06 (held): `history '%'` and `history 'h1/gpu_'`: SQL LIKE wildcards name no entity,
    never every entity."""
    for entity in ("%", "h1/gpu_"):
        got = one_line_error(_cli("history", entity, "--state-dir", clean["state"]))
        assert "no such entity" in got, got


# -- parse views given another tool's output ---------------------------------------------------------

def test_h25_07_npu_smi_help_of_ibstat(tmp_path: Path) -> None:
    """H25-07: `parse npu-smi-help` of an `ibstat` listing: its 'CA type: MT4124' matched the help's
    'type:' anywhere on a line, and every word after it ('MT4124', 'Number', 'of', 'ports:',
    ...) was an npu-smi type, exit 0. The type list is the help's own line (`type:` first on it,
    under `-t type`), its types npu-smi's words: no such list, exit 1."""
    ibstat = REPO / "fixtures/real/ib/03_ibstat_a100_azure_8xIB200_ibpanic_error.txt"
    got = one_line_error(_cli("parse", "npu-smi-help", ibstat), 1)
    assert "npu-smi-help: no " in got and got.endswith(" list"), got  # (its quote of the file withheld)
    good = _cli("parse", "npu-smi-help", REPO / "fixtures/real/ascend/05_npu-smi_info_help_types_arthurchiao.txt")
    assert good.exit_code == 0 and "first-power-on-date" in json.loads(good.output)["types"], good.output


# -- the shared directory's rows file ---------------------------------------------------------------

def _tail_lines(path: Path):
    from sncheck.backends.processes import RowTail

    out: dict[str, object] = {}

    def look() -> None:
        try:
            out["lines"] = RowTail(path).lines()
        except Exception as e:  # noqa: BLE001 -- what it raised is the result
            out["raised"] = e

    t = threading.Thread(target=look, daemon=True)
    t.start()
    t.join(5.0)
    hung = t.is_alive()
    if hung and path.is_fifo():  # let the blocked open() go: a writer opens and closes the FIFO
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5.0)
    return hung, out


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_h25_08_a_rows_file_that_is_no_regular_file(tmp_path: Path, plant: str) -> None:
    """H25-08: the rows file rank 0 appends to (on the Slurm backend, in the shared directory every
    node writes) planted as a FIFO before rank 0 makes it: the login node's look at it blocked for
    ever in open(); planted as a link (to /dev/zero: one look reads without end; to a file of the
    login node: its lines read as rows), it was followed. Each look opens what is there without
    blocking and without following a link, and a rows file that is no regular file is refused
    naming it (the step's harness error)."""
    from sncheck.errors import HarnessError

    rows = tmp_path / "rows.jsonl"
    if plant == "fifo":
        os.mkfifo(rows)
    else:
        forged = _file(tmp_path, "elsewhere.jsonl", json.dumps({"kind": "p2p", "status": "ok"}) + "\n")
        rows.symlink_to(forged)
    hung, out = _tail_lines(rows)
    assert not hung, "the look at the rows file did not return"
    assert isinstance(out.get("raised"), HarnessError), out
    assert str(rows) in str(out["raised"]), out


# -- the nightly's host facts --------------------------------------------------------------------------

def test_h25_09_a_nightly_whose_host_facts_did_not_run(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-09: nightly-stress (which reads the card health first since ce6cfd9) on a fleet whose h2
    has no nvidia-smi (a `missing_tool` fault): the facts of h2 were never read and the nightly
    passed, exit 0, no finding (pre-upgrade-gate says not-run-missing-tool, exit 1). A check that
    did not run is a finding in every playbook that reads it."""
    faults = _file(tmp_path, "f.yaml", "faults:\n  - {type: missing_tool, target: h2, tool: nvidia-smi}\n")
    got = _cli("run", "nightly-stress", "-i", clean["inv"], "--backend", "mock", "--faults", faults,
               "--out", tmp_path / "o", "--format", "", "-q")
    assert got.exit_code == 1, got.output
    found = json.loads((tmp_path / "o" / "results.json").read_text())["findings"]
    assert any(f["rule"] == "not-run-missing-tool" and f["entity"] == "h2" for f in found), found


# -- baselines ---------------------------------------------------------------------------------------

def test_h25_10_a_baseline_of_another_fleet(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-10 (held): `run --baseline` of a baseline made on inventory 'other-fleet': refused naming
    both, exit 2, nothing run."""
    b = json.loads(clean["base"].read_text())
    other = _file(tmp_path, "b.json", json.dumps({**b, "inventory": "other-fleet"}))
    got = one_line_error(_cli("run", "pre-upgrade-gate", "-i", clean["inv"], "--backend", "mock",
                              "--baseline", other, "--out", tmp_path / "o", "-q"))
    assert "'other-fleet'" in got and "'tiny'" in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_h25_11_baseline_make_of_one_run_twice(tmp_path: Path, clean: dict[str, Path], how: str) -> None:
    """H25-11 (held): `baseline make RUN OTHER` where OTHER is a link to RUN or a copy of it: one run
    counted twice would weigh its medians double; refused naming the run, nothing written."""
    twin = tmp_path / "twin"
    if how == "symlink":
        twin.symlink_to(clean["run"])
    else:
        shutil.copytree(clean["run"], twin)
    got = one_line_error(_cli("baseline", "make", clean["run"], twin, "--out", tmp_path / "b.json"))
    assert "counts each run once" in got, got
    assert not (tmp_path / "b.json").exists()


def test_h25_12_a_baseline_of_cards_not_here(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-12 (held): a baseline of this inventory whose card levels name cards it has not (h1/gpu0 as
    zz1/gpu0) and whose tier levels are gone: nothing compared is a critical baseline-not-judged a
    supernode, never a pass."""
    b = json.loads(clean["base"].read_text())
    for m in b["metrics"].values():
        m["tier"] = {}
        m["card"] = {t: {k.replace("h", "zz", 1): v for k, v in cards.items()} for t, cards in m["card"].items()}
    got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--baseline",
               _file(tmp_path, "b.json", json.dumps(b)), "--out", tmp_path / "o", "--format", "", "-q")
    assert got.exit_code == 1, got.output
    found = json.loads((tmp_path / "o" / "results.json").read_text())["findings"]
    assert {f["entity"] for f in found if f["rule"] == "baseline-not-judged" and f["severity"] == "critical"} \
        >= {"sn0"}, found


def test_h25_13_last_pass_with_no_state(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-13 (held): `--baseline last-pass` without `--state-dir`: nothing to compare with is a
    critical baseline-not-judged on every supernode, exit 1."""
    got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--baseline", "last-pass",
               "--out", tmp_path / "o", "--format", "", "-q")
    assert got.exit_code == 1, got.output
    found = json.loads((tmp_path / "o" / "results.json").read_text())["findings"]
    assert {f["entity"] for f in found if f["rule"] == "baseline-not-judged"} == {"sn0", "sn1"}, found


def test_h25_14_watch_baselined_on_a_gate_run(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H25-14 (held): `watch --baseline RUN` where RUN is a gate's run (no communicator's bus
    bandwidth in it): refused, exit 2, rather than judged against nothing."""
    d = tmp_path / "dumps"
    d.mkdir()
    shutil.copy(REPO / "fixtures/real/nccl-ras/02_ok_256ranks_2.26.2_issue1730.txt", d / "ras.txt")
    got = one_line_error(_cli("watch", d, "--once", "--baseline", clean["run"], "--out", tmp_path / "o", "-q"))
    assert "holds no bus bandwidth" in got, got


# -- inventories, fault plans and targets naming what is not there ----------------------------------

@pytest.mark.parametrize("supernodes, says", [
    ("  - {name: sn0, hosts: [h1, H1, h2], cards_per_host: 2}\n", "listed twice"),
    ("  - {name: sn0, hosts: 'h[1-3]', cards_per_host: 2}\n  - {name: h1, hosts: 'g[1-2]', cards_per_host: 2}\n",
     "has the name of supernode"),
], ids=["host-case", "supernode-named-as-host"])
def test_h25_15_inventory_identifiers_one_name_two_things(tmp_path: Path, supernodes: str, says: str) -> None:
    """H25-15 (held): hosts 'h1' and 'H1' (one host to DNS), a supernode named like one of the hosts:
    refused at the line, exit 2."""
    inv = _file(tmp_path, "inv.yaml", TINY.split("supernodes:\n")[0] + "supernodes:\n" + supernodes)
    got = one_line_error(_cli("inventory", "check", inv))
    assert says in got, got


@pytest.mark.parametrize("fault, says", [
    ("{type: xgmi_link_down, target: h1/gpu1}", "cannot be acted out"),
    ("{type: slow_nic, target: h1, port: 9}", "beyond h1's 2 rails"),
    ("{type: slow_switch, target: 'leaf:cross:gpu0'}", "not a switch"),
], ids=["amd-fault-on-nvidia", "port-beyond-rails", "a-stress-group-as-switch"])
def test_h25_16_a_fault_on_what_is_not_there(tmp_path: Path, clean: dict[str, Path], fault: str, says: str) -> None:
    """H25-16 (held): a fault plan naming an AMD fault on an NVIDIA host, a NIC port past the host's
    rails, a stress group as a switch: refused at its line, nothing run."""
    faults = _file(tmp_path, "f.yaml", f"faults:\n  - {fault}\n")
    got = one_line_error(_cli("run", "nightly-stress", "-i", clean["inv"], "--backend", "mock", "--faults", faults,
                              "--out", tmp_path / "o", "-q"))
    assert f"{faults}:2: " in got and says in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("target", ["cross:gpu0", "rail:sn0:gpu0", "host:h1"])
def test_h25_17_targets_naming_a_stress_group(tmp_path: Path, clean: dict[str, Path], target: str) -> None:
    """H25-17 (held): `--targets cross:gpu0` (a stress group's name, as reports print it): refused,
    exit 2, nothing run."""
    got = one_line_error(_cli("stress", "-i", clean["inv"], "--backend", "mock", "--targets", target,
                              "--out", tmp_path / "o", "-q"))
    assert got.startswith("sncheck: error: --targets: "), got
    assert not (tmp_path / "o").exists()


# -- the kernel-log policy in a rules file ------------------------------------------------------------

def test_h25_18_a_second_xid_rule_cannot_soften_the_first(tmp_path: Path) -> None:
    """H25-18 (held): a rules file extending default with a new rule of its own on the Xid source whose
    table says Xid 79 is info/ignore: the shipped kernel-xid still judges Xid 79 critical (a rule
    added never softens another; override by the rule's own name), exit 1."""
    rules = _file(tmp_path, "r.yaml", "extends: default\nrules:\n  - name: my-xid\n    op: kernel_events\n"
                  "    metric: kernel_events\n    source: xid\n    severity: info\n    scope: card\n"
                  "    summary: my Xid\n    table:\n      79: {severity: info, action: ignore, summary: fine}\n")
    log = REPO / "fixtures/real/kernel-log/02_dmesg_xid79_then_sxid20034_fatal_nvswitch_gpud_readme.txt"
    got = _cli("parse", "kernel-log", log, "--rules", rules)
    assert got.exit_code == 1, got.output
    judged = json.loads(got.stdout)["judged"]
    assert {(j["rule"], j["severity"]) for j in judged if j["key"] == "79"} >= {("kernel-xid", "critical")}, judged


# -- outputs --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["../x", "HTML"])
def test_h25_19_a_format_no_report_is(tmp_path: Path, clean: dict[str, Path], fmt: str) -> None:
    """H25-19 (held): `--format ../x` (a path, not a format) or `HTML`: refused naming the formats,
    nothing run."""
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--format", fmt,
                              "--out", tmp_path / "o", "-q"))
    assert "unknown report format" in got, got
    assert not (tmp_path / "o").exists()


def test_h25_20_diff_of_a_run_and_itself(clean: dict[str, Path]) -> None:
    """H25-20 (held): `diff RUN RUN/../RUN` (one run under two spellings): said to be one run, nothing
    changed, never two runs compared."""
    got = _cli("diff", clean["run"], clean["run"] / ".." / "run")
    assert got.exit_code == 0, got.output
    assert "RUN_A and RUN_B are one run" in got.output, got.output
