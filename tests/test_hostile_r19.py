"""Hostile inputs, round 19: the run's own lifecycle and outputs, not its input files. Isolation
(`--apply` through a state directory that is a link, four isolations at once against the fleet cap),
signals at the phases between the layers (while judging, while retesting), the state store and history
(a store that is no database, a history entry that does not decode, two runs writing one store at once),
`plan` with absurd sizes, reports (HTML and JUnit of markup in a rules file, Prometheus label escaping of
an inventory name), `watch` of a FIFO, of /dev/zero and of a dump cut between two looks, node-check's
budget. Each test names its case id; the README's round 19 table lists them. New instances only: no case
of an earlier round is tested again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

from sncheck.errors import Interrupted

ROOT = Path(__file__).resolve().parents[1]
TWENTY = SMALL.replace("h[1-3]", "h[1-20]").replace("cards_per_host: 2", "cards_per_host: 8")
TWO_LAYERS = ("name: two\nlayers:\n  - connectivity: {bw_bytes: 64K}\n"
              "  - stress: {min_bytes: 8, max_bytes: 64K, iters: 2, warmup: 1}\n")


def _inv(tmp_path: Path, text: str = SMALL, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


def _mock(tmp_path: Path, *extra: object, inv: Path | None = None, out: str = "run"):
    return _cli("connectivity", "-i", inv or _inv(tmp_path), "--backend", "mock", "--seed", "1",
                "--out", tmp_path / out, "-q", *extra)


# -- isolation -------------------------------------------------------------------------------------

def test_h19_01_isolate_apply_through_a_state_dir_that_is_a_link(tmp_path: Path) -> None:
    """H19-01: `isolate h1/gpu0 --apply --state-dir LINK` (LINK a symlink to a directory): the store, the
    lock and a 'begun' audit line were written through the link, then the hostfile write refused the link
    and the command exited 3, half done. A state directory that is a link is refused before anything is
    written (as `--out LINK` is), exit 2, naming it."""
    (real := tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(real)
    line = one_line_error(_cli("isolate", "h1/gpu0", "-i", _inv(tmp_path), "--state-dir", tmp_path / "link",
                               "--via", "hostfile", "--apply"))
    assert "link" in line and "symlink" in line, line
    assert list(real.iterdir()) == []


def test_h19_02_four_isolations_at_once_stay_within_the_fleet_cap(tmp_path: Path) -> None:
    """H19-02 (held): four `isolate HOST --apply --cap 0.1` at once on one state directory of 20 hosts: at
    most 2 hosts (10%) end isolated, the others refused by the cap, the store and the hostfile agreeing."""
    inv, sd = _inv(tmp_path, TWENTY), tmp_path / "sd"
    procs = [subprocess.Popen([sys.executable, "-m", "sncheck", "isolate", h, "-i", str(inv), "--state-dir", str(sd),
                               "--via", "hostfile", "--apply", "--cap", "0.1"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
             for h in ("h1", "h2", "h3", "h4")]
    codes = [p.wait(timeout=300) for p in procs]
    outs = [p.stdout.read() for p in procs if p.stdout]
    assert sorted(codes).count(0) <= 2 and all(c in (0, 1) for c in codes), (codes, outs)  # 1: the cap refused
    assert all("Traceback" not in o for o in outs), outs
    status = _cli("status", "--state-dir", sd)
    isolated = [ln.split()[0] for ln in status.output.splitlines() if " isolate " in ln]
    assert len(isolated) == codes.count(0) <= 2, status.output
    excluded = (sd / "exclude_hosts.txt").read_text().split()
    assert sorted(excluded) == sorted(isolated), (excluded, isolated)


# -- the state store and history -------------------------------------------------------------------

def test_h19_03_a_state_db_that_is_no_database(tmp_path: Path) -> None:
    """H19-03 (held): a `state.db` of text (another program's file, a copy cut short): `status` and a run
    with `--state-dir` say so in one line, exit 2, the file left as it was."""
    (sd := tmp_path / "sd").mkdir()
    (sd / "state.db").write_bytes(b"garbage " * 300)
    line = one_line_error(_cli("status", "--state-dir", sd))
    assert "state.db" in line and "not a database" in line, line
    assert one_line_error(_mock(tmp_path, "--state-dir", sd)).startswith("sncheck: error:")
    assert (sd / "state.db").read_bytes() == b"garbage " * 300


def test_h19_04_a_state_dir_that_is_a_file_or_a_fifo(tmp_path: Path) -> None:
    """H19-04 (held): `--state-dir` a regular file or a FIFO: refused, exit 2, one line, nothing made."""
    (f := tmp_path / "file").write_text("x")
    os.mkfifo(fifo := tmp_path / "fifo")
    for sd in (f, fifo):
        for args in (("status", "--state-dir", sd),
                     ("isolate", "h1/gpu0", "-i", _inv(tmp_path), "--state-dir", sd, "--via", "hostfile", "--apply")):
            assert str(sd.name) in one_line_error(_cli(*args))
    assert f.read_text() == "x"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory holding one passing mock run of the small inventory."""
    base = tmp_path_factory.mktemp("r19store")
    r = _mock(base, "--state-dir", base / "sd")
    assert r.exit_code == 0, r.output
    return base / "sd"


def test_h19_05_history_of_an_entry_that_does_not_decode_is_no_empty_history(stored: Path, tmp_path: Path) -> None:
    """H19-05: the only run's measurement summary garbled (a disk error, an old writer): `history h1/gpu0`
    warned on stderr and then said 'h1/gpu0: nothing recorded', exit 0, as for a card never measured. A
    history whose runs were set aside says so and is no clean answer (exit 1)."""
    import shutil
    import sqlite3
    sd = tmp_path / "sd"
    shutil.copytree(stored, sd)
    with sqlite3.connect(sd / "state.db") as db:
        db.execute("update summaries set value = x'00ff00'")
    r = _cli("history", "h1/gpu0", "--state-dir", sd)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "nothing recorded" not in r.output and "do not decode" in r.output, r.output


def test_h19_06_two_runs_writing_one_state_dir_at_once(tmp_path: Path) -> None:
    """H19-06 (held): two mock runs with one `--state-dir`, started together: both pass, both recorded."""
    inv = _inv(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-m", "sncheck", "connectivity", "-i", str(inv), "--backend", "mock",
                               "--seed", str(i), "--out", str(tmp_path / f"run{i}"), "-q", "--state-dir",
                               str(tmp_path / "sd")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}) for i in (1, 2)]
    codes = [p.wait(timeout=600) for p in procs]
    assert codes == [0, 0], [p.stdout.read() for p in procs if p.stdout]
    runs = _cli("history", "--runs", "--state-dir", tmp_path / "sd")
    ids = {json.loads((tmp_path / f"run{i}" / "results.json").read_text())["run_id"] for i in (1, 2)}
    assert runs.exit_code == 0 and all(i in runs.output for i in ids), runs.output


# -- signals between the layers --------------------------------------------------------------------

def _interrupted_at(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, attr: str, when) -> dict:
    """A two-layer mock run whose ``Run.<attr>`` is interrupted (SIGTERM) where ``when(args)`` says:
    exit 3, and the results.json it left."""
    from sncheck.run.runner import Run
    original = getattr(Run, attr)

    def cut(self, *args, **kwargs):
        if when(args):
            raise Interrupted("SIGTERM")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Run, attr, cut)
    (pb := tmp_path / "two.yaml").write_text(TWO_LAYERS)
    r = _cli("run", pb, "-i", _inv(tmp_path), "--backend", "mock", "--seed", "1", "--out", tmp_path / "run", "-q")
    assert r.exit_code == 3 and "Traceback" not in r.output, r.output
    assert (tmp_path / "run" / "results.json").exists(), "no results.json"
    return json.loads((tmp_path / "run" / "results.json").read_text())


def test_h19_07_sigterm_while_judging_a_layer_says_what_was_not_run(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """H19-07: SIGTERM while the connectivity layer is judged (after it measured, before stress): exit 3,
    but results.json was the snapshot of the run in progress: verdict error, no error, no word of the
    signal nor of the stress layer never run. The record names the signal, the phase and what was not run."""
    doc = _interrupted_at(monkeypatch, tmp_path, "_detect", lambda args: args[1] == "connectivity")
    assert doc["verdict"] == "error" and doc["finished"], doc
    assert "interrupted (SIGTERM)" in (doc["error"] or "") and "stress" in doc["error"], doc["error"]


def test_h19_08_sigterm_while_retesting_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """H19-08: SIGTERM during the confirmation retest (every layer measured): exit 3, results.json the
    last layer's snapshot, no error. The record names the signal and the phase."""
    doc = _interrupted_at(monkeypatch, tmp_path, "retest", lambda args: True)
    assert doc["verdict"] == "error" and doc["finished"], doc
    assert "interrupted (SIGTERM)" in (doc["error"] or "") and "retest" in doc["error"], doc["error"]
    assert [layer["name"] for layer in doc["layers"]] == ["connectivity", "stress"], doc["layers"]


def test_h19_09_a_results_json_cut_short_is_no_record(stored: Path, tmp_path: Path) -> None:
    """H19-09 (held): a run directory whose results.json was cut in half (a copy interrupted): `diff` and
    `baseline make` name the file and the line, exit 2, nothing written."""
    r = _mock(tmp_path)
    assert r.exit_code == 0, r.output
    res = tmp_path / "run" / "results.json"
    res.write_text(res.read_text()[: len(res.read_text()) // 2])
    for args in (("diff", tmp_path / "run", tmp_path / "run"), ("baseline", "make", tmp_path / "run", "--out",
                                                                  tmp_path / "b.json")):
        line = one_line_error(_cli(*args))
        assert "results.json:" in line and "not valid JSON" in line, line
    assert not (tmp_path / "b.json").exists()


# -- plan -----------------------------------------------------------------------------------------

_PLAN = ("plan", "--params", "70B", "--layout", "tp=8,pp=4,dp=2", "--hidden", "8192", "--layers", "80")


@pytest.mark.parametrize("change", [("--params", "0"), ("--params", "1e30"), ("--layout", "tp=0,pp=4,dp=2"),
                                    ("--layout", "tp=99999999999,pp=4,dp=2"), ("--layout", "tp=8,tp=4,dp=2"),
                                    ("--card-memory", "0GB"), ("--params", "nanB")])
def test_h19_10_plan_absurd_sizes_are_refused(change: tuple[str, str]) -> None:
    """H19-10 (held): zero or 10^30 parameters, TP 0 or 10^11, TP twice, a card of no memory, NaN: exit 2."""
    args = [*_PLAN, "--card-memory", "80GB"]
    i = args.index(change[0])
    args[i + 1] = change[1]
    assert one_line_error(_cli(*args)).startswith("sncheck: error:")


def test_h19_11_plan_a_model_larger_than_memory_does_not_fit() -> None:
    """H19-11 (held): 9e15 parameters on one card of 80 GB: 'does NOT fit', exit 1."""
    r = _cli("plan", "--params", "9e15", "--layout", "tp=1,pp=1,dp=1", "--hidden", "8192", "--layers", "80",
             "--card-memory", "80GB")
    assert r.exit_code == 1 and "does NOT fit" in r.output, r.output


def test_h19_12_plan_a_card_of_a_hundred_petabytes_is_refused() -> None:
    """H19-12: `--card-memory 99999999TB` (10^20 bytes a card): read, 'fits (headroom 102,399,998,932.8
    GiB per card)', exit 0; `1e30GB` was refused. A card's memory is bounded (at most 1 PiB) like every
    other size sncheck reads."""
    line = one_line_error(_cli(*_PLAN, "--card-memory", "99999999TB"))
    assert "99999999TB" in line and "at most" in line, line


# -- reports --------------------------------------------------------------------------------------

def test_h19_13_rules_file_markup_is_escaped_in_html_and_junit(tmp_path: Path) -> None:
    """H19-13 (held): a rule named `p2p-bw-<img-src=x-onerror=alert(1)>` with a summary holding
    `<script>`, a quote, a backslash and a newline, firing on a degraded link; an inventory named
    `<script>x</script>`: no markup in report.html, junit.xml well-formed."""
    import xml.dom.minidom
    rules = (ROOT / "fixtures/rules/default.yaml").read_text()
    rules = rules.replace("name: p2p-bandwidth-below-design", "name: p2p-bw-<img-src=x-onerror=alert(1)>", 1)
    rules = rules.replace("summary: bandwidth below design",
                          'summary: "bw <script>alert(2)</script> \\" \\\\ q\\nforged"', 1)
    (tmp_path / "rules.yaml").write_text(rules)
    (tmp_path / "f.yaml").write_text('faults:\n  - {type: degraded_link, target: "h1/gpu0<->h1/gpu1", factor: 0.3}\n')
    inv = _inv(tmp_path, SMALL.replace("name: small", "name: '<script>x</script>'"))
    r = _mock(tmp_path, "--faults", tmp_path / "f.yaml", "--rules", tmp_path / "rules.yaml", "--format",
              "html,junit", inv=inv)
    assert r.exit_code == 1, r.output
    html = (tmp_path / "run" / "report.html").read_text()
    assert "&lt;img-src=x-onerror=alert(1)&gt;" in html
    assert "<img-src" not in html and "<script>alert" not in html and "<script>x" not in html
    xml.dom.minidom.parse(str(tmp_path / "run" / "junit.xml"))


def test_h19_14_prometheus_labels_escape_quotes_backslashes_newlines(tmp_path: Path) -> None:
    """H19-14 (held): an inventory named `q"b\\s<newline>forged 1`: its label value escaped per the
    exposition format, every sample one line, no line beginning `forged`."""
    inv = _inv(tmp_path, SMALL.replace("name: small", 'name: "q\\"b\\\\s\\nforged 1"'))
    r = _mock(tmp_path, "--format", "prometheus", inv=inv)
    assert r.exit_code == 0, r.output
    text = (tmp_path / "run" / "sncheck.prom").read_text()
    assert 'inventory="q\\"b\\\\s\\nforged 1"' in text
    assert not any(ln.startswith("forged") for ln in text.splitlines())


# -- watch ----------------------------------------------------------------------------------------

def _watch_dir(tmp_path: Path) -> Path:
    (d := tmp_path / "dumps").mkdir()
    (d / "ranks.json").write_text('[{"rank": 0, "host": "n1", "local_rank": 0}]')
    return d


def _watch_once(tmp_path: Path, d: Path, out: str = "wrun") -> dict:
    p = subprocess.run([sys.executable, "-m", "sncheck", "watch", str(d), "--once", "--out", str(tmp_path / out),
                        "-q"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 1 and "Traceback" not in p.stderr, (p.returncode, p.stdout, p.stderr)
    return json.loads((tmp_path / out / "results.json").read_text())


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_h19_15_watch_a_dump_that_is_a_fifo_or_dev_zero(tmp_path: Path, kind: str) -> None:
    """H19-15 (held): `fr_0.json` a FIFO no one writes, or a link to /dev/zero: neither hangs nor fills
    memory; the rank's dump is a finding (exit 1), never a pass (a subprocess under a 300 s guard)."""
    d = _watch_dir(tmp_path)
    if kind == "fifo":
        os.mkfifo(d / "fr_0.json")
    else:
        (d / "fr_0.json").symlink_to("/dev/zero")
    doc = _watch_once(tmp_path, d)
    assert doc["verdict"] == "fail" and doc["findings"], doc


def test_h19_16_watch_a_dump_cut_between_two_looks(tmp_path: Path) -> None:
    """H19-16 (held): a dump whole at one look and truncated to half at the next (a log rotated, a job
    rewriting it): the second look says it is unreadable, exit 1, never the first look's pass."""
    d = _watch_dir(tmp_path)
    dump = {"version": "2.4", "pg_config": {}, "entries": []}
    (d / "fr_0.json").write_text(json.dumps(dump))
    first = _cli("watch", d, "--once", "--out", tmp_path / "w1", "-q")
    text = (d / "fr_0.json").read_text()
    (d / "fr_0.json").write_text(text[: len(text) // 2])
    doc = _watch_once(tmp_path, d, "w2")
    assert doc["verdict"] == "fail", (first.output, doc)


# -- node-check ------------------------------------------------------------------------------------

@pytest.mark.parametrize("budget", ["0s", "-1s", "1e9s", "nans", "99999d"])
def test_h19_17_node_check_budget_out_of_bounds(budget: str) -> None:
    """H19-17 (held): `node-check --budget` of 0, a negative, 10^9 s, NaN or 274 years: exit 2 (Slurm's
    HealthCheckProgram reads 2 as bad input, never as a healthy node), before any tool runs."""
    r = _cli("node-check", f"--budget={budget}", "--no-drain", "--cards", "2")
    assert r.exit_code == 2 and "budget" in r.output.lower() or budget in r.output, r.output
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
