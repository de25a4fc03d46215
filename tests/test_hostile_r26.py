"""Hostile inputs, round 26: kinds a held-out set holds and rounds 3-25 did not try -- a golden
curve that covers fewer steps than the layer trains or sizes its replicas with no count, a release
after repair validated by a playbook that never measures what it releases, a run directory inside a
state directory, one state directory serving two fleets, a baseline of simulated runs judging real
hosts, a Slurm topology naming a node or a switch twice, a report file an earlier run left, and held
instances of shapes no round gave these inputs (an empty layer list, an audit log planted as a link,
a store and a record of a newer schema, JSON nested 200,000 deep, captures with CRLF, a BOM or NULs,
an InfiniBand topology that cables one port twice). Each test names its case id; the README's round
26 table lists them. New instances only: no case of an earlier round is tested again."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import _cli
from test_hostile_r24 import _from_slurm
from test_ib_fabric import INVENTORY as IB8

from sncheck.vendors.parsers import strip_source_header

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "fixtures/inventories/demo-2sn.yaml"

TINY = ("name: tiny\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
        "  scale_out: {bandwidth: '400 Gb/s', latency: '15 us'}\nsupernodes:\n"
        "  - {name: sn0, hosts: 'h[1-2]', cards_per_host: 2}\n  - {name: sn1, hosts: 'g[1-2]', cards_per_host: 2}\n")


def _file(d: Path, name: str, text: str | bytes) -> Path:
    (p := d / name).parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def _findings(run: Path) -> list[dict]:
    return json.loads((run / "results.json").read_text())["findings"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One passing mock connectivity run of the tiny fleet, recorded in a state store: its run
    directory, its baseline, the store."""
    d = tmp_path_factory.mktemp("r26")
    inv = _file(d, "tiny.yaml", TINY)
    got = _cli("connectivity", "-i", inv, "--backend", "mock", "--seed", 1, "--out", d / "run",
               "--state-dir", d / "state", "--format", "", "-q")
    assert got.exit_code == 0, got.output
    got = _cli("baseline", "make", d / "run", "--out", d / "base.json")
    assert got.exit_code == 0, got.output
    return {"dir": d, "inv": inv, "run": d / "run", "base": d / "base.json", "state": d / "state"}


def _state(clean: dict[str, Path], tmp_path: Path) -> Path:
    shutil.copytree(clean["state"], st := tmp_path / "state")
    return st


# -- golden curves --------------------------------------------------------------------------------------

def _curve(tmp_path: Path, **edit) -> Path:
    c = json.loads((REPO / "fixtures/golden/mock-2.json").read_text())
    if "config" in edit:
        edit["config"] = {**c["config"], **edit["config"]}
    return _file(tmp_path, "curve.json", json.dumps({**c, **edit}))


def test_h26_01_a_golden_curve_shorter_than_the_training(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-01: a golden curve holding the first 3 steps of the shipped mock-2 curve, the playbook
    training 60 (`golden: {steps: 60, reference: CURVE}`), a card whose loss diverges: steps 4-60
    were compared with nothing, no finding, exit 0. A curve that cannot judge every step trained is
    refused when the playbook loads, naming the curve and both counts, nothing run."""
    curve = _curve(tmp_path, loss=json.loads((REPO / "fixtures/golden/mock-2.json").read_text())["loss"][:3])
    pb = _file(tmp_path, "pb.yaml", f"name: g\nlayers:\n  - golden: {{steps: 60, reference: '{curve}'}}\ngate: critical\n")
    faults = _file(tmp_path, "f.yaml", "faults:\n  - {type: diverge, target: h1/gpu0}\n")
    got = one_line_error(_cli("run", pb, "-i", clean["inv"], "--backend", "mock", "--faults", faults,
                              "--out", tmp_path / "o", "--format", "", "-q"))
    assert str(curve) in got and "3 steps" in got and "60" in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("ranks", ["two", -1, True, 2.5], ids=["text", "negative", "bool", "fraction"])
def test_h26_02_a_golden_curve_sized_with_no_count(tmp_path: Path, clean: dict[str, Path], ranks: object) -> None:
    """H26-02: a golden curve whose `config.ranks` (the replica size it is the curve of) is 'two', -1,
    true or 2.5: 'two' was read as a curve of no size and judged every replica, exit 0; the others made
    every replica 'not judged', exit 1. A wrong type is refused at its field, exit 2, nothing run."""
    curve = _curve(tmp_path, config={"ranks": ranks})
    pb = _file(tmp_path, "pb.yaml", f"name: g\nlayers:\n  - golden: {{reference: '{curve}'}}\ngate: critical\n")
    got = one_line_error(_cli("run", pb, "-i", clean["inv"], "--backend", "mock", "--out", tmp_path / "o",
                              "--format", "", "-q"))
    assert str(curve) in got and "config.ranks" in got, got
    assert not (tmp_path / "o").exists()


# -- release after repair ----------------------------------------------------------------------------

def test_h26_03_a_release_validated_by_a_playbook_that_measures_nothing_of_it(tmp_path: Path,
                                                                              clean: dict[str, Path]) -> None:
    """H26-03: `release h1/gpu0 --after-repair --playbook GOLDEN-ONLY` with the card still at 0.3x:
    'scoped validation of h1/gpu0: pass', released. A golden model trains on the card's host and
    judges a loss: it measures none of the card's links. The validation must hold the layer that
    measures each card, link and host by itself (connectivity): refused naming --playbook, exit 2,
    nothing run, the card still isolated."""
    st = _state(clean, tmp_path)
    assert _cli("isolate", "h1/gpu0", "-i", clean["inv"], "--apply", "--state-dir", st).exit_code == 0
    pb = _file(tmp_path, "golden.yaml", "name: golden-only\nlayers: [golden]\ngate: critical\n")
    faults = _file(tmp_path, "f.yaml", "faults:\n  - {type: slow_card, target: h1/gpu0, factor: 0.3}\n")
    got = one_line_error(_cli("release", "h1/gpu0", "--after-repair", "-i", clean["inv"], "--playbook", pb,
                              "--backend", "mock", "--faults", faults, "--out", tmp_path / "o", "--apply",
                              "--state-dir", st))
    assert "--playbook" in got and "connectivity" in got, got
    assert not (tmp_path / "o").exists()
    assert "h1/gpu0" in _cli("status", "--state-dir", st).output


@pytest.mark.parametrize("cmd", ["run", "release"])
def test_h26_04_a_run_directory_inside_a_state_directory(tmp_path: Path, clean: dict[str, Path], cmd: str) -> None:
    """H26-04: `connectivity --out STATE/sub` (and `release --after-repair --out STATE/sub`): the run's
    results.json, rows and reports written among the fleet's isolation store, exit 0 (H23-12 refused
    `--out STATE` itself, not a directory under it). Refused naming the state directory, exit 2."""
    st = _state(clean, tmp_path)
    if cmd == "run":
        got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--out", st / "sub", "-q", "--format", "")
    else:
        assert _cli("isolate", "h1/gpu0", "-i", clean["inv"], "--apply", "--state-dir", st).exit_code == 0
        got = _cli("release", "h1/gpu0", "--after-repair", "-i", clean["inv"], "--backend", "mock",
                   "--out", st / "sub", "--state-dir", st)
    line = one_line_error(got)
    assert "inside the state directory" in line and str(st) in line, line
    assert not (st / "sub").exists()


# -- one state directory, two fleets --------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["isolate", "run"])
def test_h26_05_a_state_directory_of_another_fleet(tmp_path: Path, clean: dict[str, Path], cmd: str) -> None:
    """H26-05: a state directory where node004 and node003/gpu2 of demo-2sn are isolated, then
    `isolate h1/gpu0 -i tiny --apply` (or `connectivity -i tiny --state-dir S --apply`) on it: the
    launcher files were 'reconciled' from the store for tiny alone -- exclude_hosts.txt no longer
    named node004, cuda_visible_devices no longer hid node003/gpu2: two isolations undone in what the
    scheduler reads, exit 0. Refused naming the entities of no card or host of this inventory, exit 2,
    the files as they were."""
    st = tmp_path / "state"
    got = _cli("isolate", "node004", "node003/gpu2", "-i", DEMO, "--apply", "--state-dir", st)
    assert got.exit_code == 0, got.output
    before = {n: (st / n).read_text() for n in ("exclude_hosts.txt", "cuda_visible_devices.json")}
    if cmd == "isolate":
        got = _cli("isolate", "h1/gpu0", "-i", clean["inv"], "--apply", "--state-dir", st)
    else:
        got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--state-dir", st, "--apply",
                   "--out", tmp_path / "o", "-q", "--format", "")
    line = one_line_error(got)
    assert "node004" in line and "'tiny'" in line, line
    assert {n: (st / n).read_text() for n in before} == before


# -- baselines -----------------------------------------------------------------------------------------

def test_h26_06_a_baseline_of_simulated_runs_judging_real_hosts(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-06: `connectivity --backend ssh --baseline B` where B was made of mock runs: the simulator's
    numbers taken as what these hosts measured when known good. A baseline says the backend its runs
    measured on; a real run given a simulated one is refused naming both, exit 2, nothing run."""
    assert json.loads(clean["base"].read_text()).get("backend") == "mock"
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "ssh", "--baseline", clean["base"],
                              "--out", tmp_path / "o", "-q", "--format", ""))
    assert "'mock'" in got and "'ssh'" in got, got
    assert not (tmp_path / "o").exists()


def test_h26_19_a_baseline_of_runs_on_two_backends(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-19: `baseline make MOCK_RUN SSH_RUN` (one run simulated, one measured on the hosts): their
    medians mixed into one baseline, exit 0. Refused as runs of two inventories are, naming both
    backends, nothing written."""
    got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--seed", 2, "--out", tmp_path / "r2",
               "--format", "", "-q")
    assert got.exit_code == 0, got.output
    record = json.loads((tmp_path / "r2/results.json").read_text())
    (tmp_path / "r2/results.json").write_text(json.dumps({**record, "backend": "ssh"}))
    got = one_line_error(_cli("baseline", "make", clean["run"], tmp_path / "r2", "--out", tmp_path / "b.json"))
    assert "'mock'" in got and "'ssh'" in got, got
    assert not (tmp_path / "b.json").exists()


# -- Slurm's topology naming one thing twice ------------------------------------------------------

@pytest.mark.parametrize("topology, says", [
    ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=g[1-2]\nSwitchName=s1 Level=0 LinkSpeed=1 Nodes=g[2-3]\n",
     "node g2 is under both 's0' and 's1'"),
    ("BlockName=b0 BlockIndex=0 Nodes=g[1-2] BlockSize=2\nBlockName=b1 BlockIndex=1 Nodes=g[2-3] BlockSize=2\n",
     "node g2 is under both 'b0' and 'b1'"),
    ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=g[1-2]\nSwitchName=s0 Level=0 LinkSpeed=1 Nodes=g3\n",
     "SwitchName='s0' is listed twice"),
], ids=["node-under-two-leaves", "node-in-two-blocks", "switch-twice"])
def test_h26_07_a_topology_naming_one_thing_twice(tmp_path: Path, topology: str, says: str) -> None:
    """H26-07: `scontrol show topology` listing g2 under two leaf switches (or in two blocks): g2 put
    in the first, silently; a leaf switch listed twice (two answers run together): the second's
    nodes kept, the first's written as 'unplaced', exit 0. Refused naming the node or switch, exit 2,
    nothing written."""
    got = one_line_error(_from_slurm(tmp_path, topology=topology))
    assert got.startswith("sncheck: error: scontrol show topology: ") and says in got, got
    assert not (tmp_path / "inv.yaml").exists()


# -- what an earlier run left -----------------------------------------------------------------------

def test_h26_08_force_removes_the_earlier_runs_report_css(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-08: `--out DIR --force --format ''` over an earlier run with an HTML report: report.html
    removed, its report.css left beside a run that wrote no report. --force removes every file a
    run writes."""
    out = tmp_path / "o"
    for extra in (["--format", "html"], ["--format", "", "--force"]):
        got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--out", out, "-q", *extra)
        assert got.exit_code == 0, got.output
    assert not (out / "report.html").exists() and not (out / "report.css").exists(), sorted(os.listdir(out))


# -- held: shapes no round gave these inputs ---------------------------------------------------------

@pytest.mark.parametrize("layers, says", [("[]", "non-empty list"), ("[connectivity, connectivity]", "listed twice")])
def test_h26_09_a_playbook_of_no_layer_or_one_twice(tmp_path: Path, clean: dict[str, Path], layers: str,
                                                    says: str) -> None:
    """H26-09 (held): a playbook `layers: []` or naming connectivity twice: refused at the line."""
    pb = _file(tmp_path, "pb.yaml", f"name: x\nlayers: {layers}\ngate: critical\n")
    got = one_line_error(_cli("run", pb, "-i", clean["inv"], "--backend", "mock", "--out", tmp_path / "o", "-q"))
    assert f"{pb}:2: " in got and says in got, got


def test_h26_10_an_audit_log_planted_as_a_link(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-10 (held): the state directory's audit.jsonl replaced by a link to a user's file, then
    `isolate --apply`: refused, the file untouched."""
    st = _state(clean, tmp_path)
    victim = _file(tmp_path, "victim.txt", "precious\n")
    (st / "audit.jsonl").symlink_to(victim)
    got = one_line_error(_cli("isolate", "h1/gpu0", "-i", clean["inv"], "--apply", "--state-dir", st))
    assert "audit.jsonl" in got and "symlink" in got, got
    assert victim.read_text() == "precious\n"


def test_h26_11_records_of_a_newer_sncheck(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-11 (held): a state.db of schema version 999 (`status`, `isolate --apply`) and a results.json
    of schema sncheck.run/99 (`diff`, `baseline make`): refused naming the version, exit 2."""
    import sqlite3

    st = _state(clean, tmp_path)
    with sqlite3.connect(st / "state.db") as db:
        db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    for args in (("status",), ("isolate", "h1/gpu0", "-i", clean["inv"], "--apply")):
        assert "schema version 999" in one_line_error(_cli(*args, "--state-dir", st))
    shutil.copytree(clean["run"], run := tmp_path / "run")
    record = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**record, "schema": "sncheck.run/99"}))
    for args in (("diff", clean["run"], run), ("baseline", "make", run, "--out", tmp_path / "b.json")):
        assert "'sncheck.run/99'" in one_line_error(_cli(*args))


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, '{"a":' * 100_000 + "1" + "}" * 100_000],
                         ids=["lists", "objects"])
def test_h26_12_a_baseline_nested_200000_deep(tmp_path: Path, clean: dict[str, Path], text: str) -> None:
    """H26-12 (held): a baseline of 200,000 nested lists (or 100,000 objects): refused, never a
    RecursionError."""
    got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--baseline",
                              _file(tmp_path, "deep.json", text), "--out", tmp_path / "o", "-q"))
    assert "nested too deeply" in got, got


def test_h26_13_an_empty_out_and_a_trailing_dot(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-13 (held): `--out ''` (an unset variable) is refused; a host `h1.` beside `h1` is one host
    to DNS, refused as in two supernodes."""
    got = _cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--out", "", "-q")
    assert got.exit_code == 2 and "an empty path names no file" in got.output, got.output
    inv = _file(tmp_path, "inv.yaml", TINY.replace("hosts: 'g[1-2]'", "hosts: [g1, 'h1.']"))
    assert "host 'h1.' is in two supernodes" in one_line_error(_cli("inventory", "check", inv))


CAPTURES = [("nvidia-smi-q", "nvidia-smi-q/06_535.129.03_a10_remapped_rows_uncorrectable4_pending_yes.txt"),
            ("ibstat", "ib/04_ibstat_h100_roce_12CA_all_active_eth.txt"),
            ("nccl-tests", "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt")]


@pytest.mark.parametrize("view, capture", CAPTURES, ids=[v for v, _ in CAPTURES])
def test_h26_14_a_capture_saved_with_crlf_or_a_bom(tmp_path: Path, view: str, capture: str) -> None:
    """H26-14 (held): a real capture saved with CRLF line ends, or behind a UTF-8 BOM (a Windows
    editor, a serial console's log): read as the capture itself, the same JSON and exit code."""
    text = strip_source_header((REPO / "fixtures/real" / capture).read_text())
    want = _cli("parse", view, _file(tmp_path, "lf.txt", text), "--json")
    for name, data in (("crlf", text.replace("\n", "\r\n").encode()), ("bom", b"\xef\xbb\xbf" + text.encode())):
        got = _cli("parse", view, _file(tmp_path, f"{name}.txt", data), "--json")
        assert (got.exit_code, json.loads(got.stdout)) == (want.exit_code, json.loads(want.stdout)), name


def test_h26_15_a_capture_padded_with_nuls(tmp_path: Path) -> None:
    """H26-15 (held): a clean `nvidia-smi -q` capture with 16 NUL bytes after it (a file cut by a
    crash and zero-filled): not the tool's text, exit 1."""
    text = strip_source_header((REPO / "fixtures/real/nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt")
                               .read_text())
    assert _cli("parse", "nvidia-smi-q", _file(tmp_path, "ok.txt", text)).exit_code == 0
    got = _cli("parse", "nvidia-smi-q", _file(tmp_path, "nul.txt", text.encode() + b"\0" * 16))
    assert got.exit_code == 1 and "holds a NUL byte" in got.output, got.output


TOPOLOGY = REPO / "fixtures/real/ib-fabric/01_ibnetdiscover_ibsim_2leaf_1spine_8hosts_2rails.txt"
_H01 = '[1]\t"H-0000000000100000"[1](100001) \t\t# "h01 mlx5_0" lid 2 4xSDR\n'


@pytest.mark.parametrize("old, new, code, says", [
    (_H01, _H01 + '[1]\t"H-0000000000100004"[1](100005) \t\t# "h02 mlx5_0" lid 6 4xSDR\n', 3, "does not list it back"),
    ('[6]\t"H-0000000000100014"', '[99]\t"H-0000000000100014"', 3, "does not list it back"),
    ('# "spine0" base port 0', '# "su0-rail1" base port 0', 1, "su0-rail1-0x0000000000200002"),
], ids=["port-cabled-twice", "port-past-the-count", "two-switches-one-name"])
def test_h26_16_a_fabric_topology_that_cables_one_port_twice(tmp_path: Path, old: str, new: str, code: int,
                                                             says: str) -> None:
    """H26-16 (held): an ibnetdiscover topology whose leaf lists port 1 twice (two cables on one
    port), a port 99 on a 16-port switch, or the spine described as a leaf: never read as the
    declared fabric (exit 3: not whole; exit 1: the two switches told apart by GUID)."""
    text = TOPOLOGY.read_text()
    assert old in text
    inv = _file(tmp_path, "ib8.yaml", IB8)
    got = _cli("fabric", "check", "-i", inv, "--topology", _file(tmp_path, "t.txt", text.replace(old, new, 1)))
    assert got.exit_code == code and says in got.output, got.output


def test_h26_17_a_soak_of_a_nanosecond(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-17 (held): `stress --duration 1e-9` over a corrupting card: the sweep runs once at least,
    the card is named, exit 1."""
    faults = _file(tmp_path, "f.yaml", "faults:\n  - {type: corrupt_card, target: h1/gpu0}\n")
    got = _cli("stress", "-i", clean["inv"], "--backend", "mock", "--faults", faults, "--duration", "1e-9",
               "--out", tmp_path / "o", "--format", "", "-q")
    assert got.exit_code == 1, got.output
    assert any(f["entity"] == "h1/gpu0" for f in _findings(tmp_path / "o")), _findings(tmp_path / "o")


def test_h26_18_force_over_a_run_in_progress(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-18 (held): `--out DIR --force` while another run holds DIR's lock: refused, exit 2, the
    running run's files kept."""
    shutil.copytree(clean["run"], out := tmp_path / "o")
    fd = os.open(out / ".sncheck.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        got = one_line_error(_cli("connectivity", "-i", clean["inv"], "--backend", "mock", "--out", out,
                                  "--force", "-q", "--format", ""))
    finally:
        os.close(fd)
    assert "another sncheck run is using this run directory" in got, got
    assert (out / "results.json").read_bytes() == (clean["run"] / "results.json").read_bytes()


def test_h26_20_two_golden_curves_of_one_size(tmp_path: Path, clean: dict[str, Path]) -> None:
    """H26-20 (held): `golden: {reference: [A, B]}` where A and B are both curves of 2-rank replicas:
    refused naming both, nothing run."""
    a = _curve(tmp_path)
    b = _file(tmp_path, "b.json", json.dumps({**json.loads(a.read_text()), "name": "other"}))
    pb = _file(tmp_path, "pb.yaml", f"name: g\nlayers:\n  - golden: {{reference: ['{a}', '{b}']}}\ngate: critical\n")
    got = one_line_error(_cli("run", pb, "-i", clean["inv"], "--backend", "mock", "--out", tmp_path / "o", "-q"))
    assert "'mock-2' and 'other' are both for replicas of 2 ranks" in got, got
