"""Hostile inputs, round 12: isolation and the scheduler, evidence and history, the gate. New
instances of the outside probe's ISO, EV and GATE classes (``../shared/adversarial-r3``): drain
reasons in Slurm that hold a newline, quotes or 2 KB, an ``scontrol`` that exits 0 beside its
error or hangs, two isolations at once over the cap, the cap at its boundary, names in Slurm's
hostlist form or Kubernetes' case; two runs into one state store, a results.json cut, linked to
another run's or a FIFO, a baseline of no run, a run diffed with itself, a renamed host, evidence
bundles named as Windows devices; a playbook that lists a layer twice, rules for another vendor's
facts, faults on a host that is down, targets that match nothing and a golden reference of
another configuration. Each test names its case id; the README's round 12 table lists them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_actions import INVENTORY, FakeCluster
from test_cli_ops import disagreements
from test_hardening import one_line_error
from test_hostile_r9 import _act, _cli

from sncheck.store.state import StateStore

ROOT = Path(__file__).resolve().parents[1]
HOSTS = [f"node{i:03d}" for i in range(1, 17)]
SMALL = ("name: small\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
         "supernodes:\n  - {name: sn0, hosts: 'h[1-3]', cards_per_host: 2}\n")


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:  # fake sinfo, scontrol, kubectl
    fc = FakeCluster.create(tmp_path / "fake", HOSTS)
    monkeypatch.setenv("PATH", f"{fc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return fc


def _fleet(tmp_path: Path, hosts: int) -> Path:
    """One supernode of ``hosts`` hosts of 4 cards."""
    inv = tmp_path / f"fleet{hosts}.yaml"
    inv.write_text(f"name: fleet{hosts}\ndesign:\n  scale_up: {{bandwidth: '450 GB/s', latency: '3 us'}}\n"
                   f"supernodes:\n  - {{name: sn0, hosts: 'node[001-{hosts:03d}]', cards_per_host: 4}}\n")
    return inv


def _wrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, script: str) -> None:
    """``tool`` replaced on PATH by ``script`` (sh), before the fake cluster's."""
    wrap = tmp_path / f"wrap-{tool}"
    wrap.mkdir()
    (wrap / tool).write_text("#!/bin/sh\n" + script + "\n")
    (wrap / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrap}{os.pathsep}{os.environ['PATH']}")


# -- drain reasons in Slurm that are not what they seem -------------------------------------------

@pytest.mark.parametrize("reason", ["\nsncheck: manual (run 20261201T000000Z-ffff)", "hold for ops\nsncheck: x"],
                         ids=["blank-line-first", "second-line"])
def test_h12_01_a_drain_reason_with_a_newline_is_not_sncheck_s(tmp_path: Path, cluster: FakeCluster,
                                                               reason: str) -> None:
    """H12-01: an operator's drain reason holding a newline, its second line reading like
    sncheck's. sinfo prints it over two lines; the first non-empty one was taken as the reason,
    so a reason beginning with a newline read as sncheck's and `release` resumed the node.
    sncheck writes no newline in a reason: a reason over lines is someone else's."""
    cluster.set_slurm("node007", state="DRAIN", reason=reason)
    state = tmp_path / "state"
    for cmd in ("release", "isolate"):
        r = _act(state, cmd, "node007", "--via", "slurm", "--apply")
        assert r.exit_code == 0, r.output
        assert "not sncheck's, so sncheck did not" in r.output, r.output
    assert cluster.slurm("node007") == {"state": "DRAIN", "reason": reason}
    assert not any(a[0] == "scontrol" for a in cluster.log())


def test_h12_02_a_drain_reason_with_quotes_is_left_alone(tmp_path: Path, cluster: FakeCluster) -> None:
    """H12-02: a foreign reason with double and single quotes and `sncheck:` inside it."""
    reason = 'ops "hold" it\'s "sncheck: later"'
    cluster.set_slurm("node007", state="DRAIN", reason=reason)
    state = tmp_path / "state"
    r = _act(state, "release", "node007", "--via", "slurm", "--apply")
    assert r.exit_code == 0 and "did not resume it" in r.output, r.output
    assert cluster.slurm("node007")["reason"] == reason
    assert [a[0] for a in cluster.log()] == ["sinfo"]


def test_h12_03_a_2kb_foreign_drain_reason_is_shown_cut(tmp_path: Path, cluster: FakeCluster) -> None:
    """H12-03: a 2 KB drain reason of someone else's: the skip's line printed all 2,048
    characters (and the audit kept them); now cut at 200 with its length, the node untouched."""
    reason = "maintenance " + "x" * 2036
    cluster.set_slurm("node007", state="DRAIN", reason=reason)
    state = tmp_path / "state"
    r = _act(state, "isolate", "node007", "--via", "slurm", "--apply")
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if "node007 (host) isolate via slurm" in ln)
    assert len(line) < 400 and "(2048 characters)" in line, line[:300]
    assert cluster.slurm("node007")["reason"] == reason


def test_h12_04_a_2kb_reason_of_sncheck_s_own_is_cut_and_stays_its_own(tmp_path: Path, cluster: FakeCluster) -> None:
    """H12-04: `isolate --reason/--rule` of 2 KB: the drain reason is one printable line of at
    most 120 characters starting `sncheck:`, so the release still knows it and resumes."""
    state = tmp_path / "state"
    r = _act(state, "isolate", "node004", "--via", "slurm", "--apply", "--rule", "r" * 2048, "--reason", "y" * 2048)
    assert r.exit_code == 0, r.output
    reason = cluster.slurm("node004")["reason"]
    assert reason.startswith("sncheck: ") and len(reason) <= 120 and reason.isprintable(), reason
    r = _act(state, "release", "node004", "--via", "slurm", "--apply")
    assert r.exit_code == 0 and "resumed node004" in r.output, r.output
    assert cluster.slurm("node004") == {"state": "IDLE", "reason": ""}


# -- the fleet cap ---------------------------------------------------------------------------------

def test_h12_05_two_isolations_at_once_in_threads_hold_the_cap(tmp_path: Path) -> None:
    """H12-05: two threads start `isolate --apply` together, 3 cards of 3 hosts each, on a
    fleet of 10 hosts (40 cards, the cap 4): each within it alone, 6 of 40 together. One is
    refused; the store and the device map agree."""
    inv = _fleet(tmp_path, 10)
    for t in range(2):
        state = tmp_path / f"try{t}" / "state"
        batches = [[f"node{h:03d}/gpu0" for h in hs] for hs in ((1, 2, 3), (4, 5, 6))]
        gate = threading.Barrier(2)
        codes: list[int] = []

        def isolate(cards: list[str]) -> None:
            gate.wait()
            proc = subprocess.run([sys.executable, "-m", "sncheck", "isolate", *cards, "-i", str(inv),
                                   "--via", "cuda_visible_devices", "--apply", "--state-dir", str(state)],
                                  capture_output=True, text=True, timeout=60, check=False,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            codes.append(proc.returncode)

        threads = [threading.Thread(target=isolate, args=(b,)) for b in batches]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(codes) == [0, 1], codes
        with StateStore(state) as st:
            out = [s["entity"] for s in st.current_status() if s["applied"]]
        assert sorted(out) in [sorted(b) for b in batches], out
        visible = json.loads((state / "cuda_visible_devices.json").read_text())
        assert sorted(h for h, cards in visible.items() if cards == "1,2,3") == sorted(c.split("/")[0] for c in out)
        assert disagreements(state) == []


@pytest.mark.parametrize("hosts", [9, 10, 11])
def test_h12_06_the_cap_at_its_boundary(tmp_path: Path, hosts: int) -> None:
    """H12-06: 10% of 10 hosts is one host, of 9 (0.9) and of 11 (1.1) one host too (a positive
    cap allows one host and its cards); cards likewise: 4 cards on 4 hosts pass, 5 do not."""
    inv, state = _fleet(tmp_path, hosts), tmp_path / "state"
    assert _act(state, "isolate", "node001", "--via", "hostfile", "--apply", inventory=inv).exit_code == 0
    r = _act(state, "isolate", "node002", "--via", "hostfile", "--apply", inventory=inv)
    assert r.exit_code == 1 and f"2 of {hosts} hosts" in r.output, r.output
    cards = [f"node{h:03d}/gpu1" for h in range(2, 7)]
    cstate = tmp_path / "cards"
    r = _act(cstate, "isolate", *cards[:4], "--via", "cuda_visible_devices", "--apply", inventory=inv)
    assert r.exit_code == 0, r.output
    r = _act(cstate, "isolate", cards[4], "--via", "cuda_visible_devices", "--apply", inventory=inv)
    assert r.exit_code == 1 and f"5 of {4 * hosts} cards" in r.output, r.output


def test_h12_07_a_cap_of_0_1_passes_and_10_percent_minus_1_101_percent_do_not(tmp_path: Path,
                                                                              cluster: FakeCluster) -> None:
    """H12-07: `--cap 0.1` is the default written out; `10%`, `-1`, `101%` are refused, exit 2,
    naming --cap, nothing run and no state directory made."""
    state = tmp_path / "state"
    for cap in ("10%", "-1", "101%"):
        r = _act(state, "isolate", "node001", "--via", "slurm", "--apply", "--cap", cap)
        assert r.exit_code == 2 and "--cap" in r.output and "Traceback" not in r.output, r.output
    assert cluster.log() == [] and not state.exists()
    r = _act(state, "isolate", "node001", "--via", "slurm", "--apply", "--cap", "0.1")
    assert r.exit_code == 0 and cluster.slurm("node001")["state"] == "DRAIN", r.output


def test_h12_08_releasing_a_card_of_an_isolated_host_keeps_the_host_out(tmp_path: Path,
                                                                         cluster: FakeCluster) -> None:
    """H12-08: node001/gpu2 isolated, then node001; `release node001/gpu2`: the card's record
    ends, the host stays isolated, drained, and out of the hostfile."""
    state = tmp_path / "state"
    via = ("--via", "hostfile", "--via", "cuda_visible_devices", "--via", "slurm")
    assert _act(state, "isolate", "node001/gpu2", *via, "--apply").exit_code == 0
    assert _act(state, "isolate", "node001", *via, "--apply").exit_code == 0
    r = _act(state, "release", "node001/gpu2", *via, "--apply")
    assert r.exit_code == 0, r.output
    with StateStore(state) as st:
        assert [(s["entity"], s["action"]) for s in st.current_status()] == [("node001", "isolate")]
    assert "node001" not in (state / "hostfile.txt").read_text()
    assert cluster.slurm("node001")["state"] == "DRAIN"
    assert disagreements(state, cluster) == []


# -- a scheduler that answers wrong or not at all ------------------------------------------------

@pytest.mark.parametrize("printed", ['echo "slurm_update error: Invalid node name specified" >&2',
                                     'echo "scontrol: error: Unable to contact slurm controller"'],
                         ids=["stderr", "stdout"])
def test_h12_09_scontrol_exit_0_beside_its_error_is_no_drain(tmp_path: Path, cluster: FakeCluster,
                                                              monkeypatch: pytest.MonkeyPatch, printed: str) -> None:
    """H12-09: `scontrol update` prints its error and exits 0, draining nothing: sncheck said
    'ok: drained node003', recorded it applied, and counted it against the cap, while Slurm kept
    scheduling on it. Now: failed, exit 3, not applied; a later host within the cap goes out."""
    _wrap(tmp_path, monkeypatch, "scontrol", f"{printed}\nexit 0")
    state = tmp_path / "state"
    r = _act(state, "isolate", "node003", "--via", "slurm", "--apply")
    assert r.exit_code == 3, r.output
    assert "draining node003 failed" in r.output and "(exit 0)" in r.output, r.output
    with StateStore(state) as st:
        assert [(s["entity"], s["applied"]) for s in st.current_status()] == [("node003", False)]
    assert cluster.slurm("node003")["state"] == "IDLE"


def test_h12_10_scontrol_that_hangs_times_out(tmp_path: Path, cluster: FakeCluster,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """H12-10: `scontrol update` never returns (slurmctld wedged, a child holding the pipe):
    the command timeout ends it, exit 3 naming the timeout, the isolation not applied."""
    import sncheck.actions.base as base

    monkeypatch.setattr(base, "DEFAULT_TIMEOUT", 2.0)
    _wrap(tmp_path, monkeypatch, "scontrol", "sleep 30 &\nsleep 30")
    state = tmp_path / "state"
    started = time.monotonic()
    r = _act(state, "isolate", "node003", "--via", "slurm", "--apply")
    assert time.monotonic() - started < 20
    assert r.exit_code == 3 and "timed out" in r.output, r.output
    with StateStore(state) as st:
        assert [(s["entity"], s["applied"]) for s in st.current_status()] == [("node003", False)]


@pytest.mark.parametrize("name", ["node[001-003]", "node[001-002]/gpu0", "node001,node002", "node00[1]"])
def test_h12_11_a_slurm_hostlist_is_no_entity(tmp_path: Path, cluster: FakeCluster, name: str) -> None:
    """H12-11: Slurm's hostlist form given to isolate and release: refused, one line naming it,
    nothing run, no state directory (never expanded into three drains, never one odd name)."""
    state = tmp_path / "state"
    for cmd in ("isolate", "release"):
        line = one_line_error(_act(state, cmd, name, "--via", "slurm", "--apply"))
        assert repr(name) in line and "is not a card, host or switch" in line, line
    assert cluster.log() == [] and not state.exists()


def test_h12_12_a_kubernetes_node_named_in_upper_case_is_not_applied(tmp_path: Path, cluster: FakeCluster) -> None:
    """H12-12: the inventory says `Node01`, Kubernetes knows `node01` (node names are lower
    case): kubectl's NotFound is the failure, exit 3, not applied, nothing tainted or cordoned,
    and the cap does not count it."""
    st = cluster.state()
    st["k8s"] = {"node01": {"taints": [], "unschedulable": False, "annotations": {}}}
    cluster.write_state(st)
    inv = tmp_path / "k.yaml"
    inv.write_text("name: k\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
                   "supernodes:\n  - {name: sn0, hosts: 'Node01,node02', cards_per_host: 4}\n")
    state = tmp_path / "state"
    r = _act(state, "isolate", "Node01", "--via", "kubernetes", "--apply", "--cap", "0.5", inventory=inv)
    assert r.exit_code == 3 and 'nodes "Node01" not found' in r.output, r.output
    assert cluster.k8s("node01") == {"taints": [], "unschedulable": False, "annotations": {}}
    with StateStore(state) as store:
        assert [(s["entity"], s["applied"]) for s in store.current_status()] == [("Node01", False)]


# -- runs, history, evidence ------------------------------------------------------------------------

def _conn(inv: Path, out: Path, *extra: object):
    return _cli("connectivity", "-i", inv, "--backend", "mock", "--seed", "1", "-q", "--out", out, *extra)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two passing runs of one small inventory, one failing run, their state store."""
    root = tmp_path_factory.mktemp("runs")
    inv = root / "small.yaml"
    inv.write_text(SMALL)
    dead = root / "dead.yaml"
    dead.write_text('faults:\n  - {type: dead_link, target: "h1/gpu0<->h1/gpu1"}\n')
    state = root / "state"
    assert _conn(inv, root / "a", "--state-dir", state).exit_code == 0
    assert _conn(inv, root / "b", "--state-dir", state).exit_code == 0
    assert _conn(inv, root / "bad", "--faults", dead).exit_code == 1
    return {"inv": inv, "a": root / "a", "b": root / "b", "bad": root / "bad", "state": state, "root": root}


def test_h12_13_two_runs_into_one_state_store_at_once(tmp_path: Path) -> None:
    """H12-13: two runs started together with one --state-dir: both recorded with their
    summaries, `history --runs` lists both, nothing half written."""
    inv = tmp_path / "small.yaml"
    inv.write_text(SMALL)
    state = tmp_path / "state"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "sncheck", "connectivity", "-i", str(inv), "--backend", "mock",
                               "--seed", str(k), "-q", "--out", str(tmp_path / f"r{k}"), "--state-dir", str(state)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) for k in (1, 2)]
    outs = [p.communicate(timeout=300)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    ids = {json.loads((tmp_path / f"r{k}" / "results.json").read_text())["run_id"] for k in (1, 2)}
    with StateStore(state) as st:
        assert {r["run_id"] for r in st.runs()} == ids
        assert all(st.run_summaries(i) for i in ids)
    r = _cli("history", "--runs", "--state-dir", state)
    assert r.exit_code == 0 and all(i in r.output for i in ids), r.output


def test_h12_14_a_results_json_cut_in_half(runs: dict[str, Path], tmp_path: Path) -> None:
    """H12-14: a run directory whose results.json is cut in half (a copy interrupted): diff,
    baseline make and plan --measured refuse it, exit 2, naming the file and its line."""
    cut = tmp_path / "cut"
    subprocess.run(["cp", "-r", str(runs["a"]), str(cut)], check=True)
    data = (cut / "results.json").read_bytes()
    (cut / "results.json").write_bytes(data[: len(data) // 2])
    for args in (("diff", cut, runs["b"]), ("baseline", "make", cut, "--out", tmp_path / "b.json"),
                 ("plan", "--params", "1B", "--layout", "tp=1,dp=1", "--measured", cut)):
        line = one_line_error(_cli(*args))
        assert f"{cut / 'results.json'}:" in line and "not valid JSON" in line, (args, line)
    assert not (tmp_path / "b.json").exists()


def test_h12_15_a_results_json_linked_to_another_run_s(runs: dict[str, Path], tmp_path: Path) -> None:
    """H12-15: run a's directory with its results.json replaced by a link to the failing run's:
    `diff` read the failing run's record beside a's rows and said 'one run' of two runs whose
    tiers differed; `baseline make` and `plan --measured` read the same mixture. Refused, exit 2,
    naming the link and its target; a link inside its own directory is still read."""
    mixed = tmp_path / "mixed"
    subprocess.run(["cp", "-r", str(runs["a"]), str(mixed)], check=True)
    (mixed / "results.json").unlink()
    (mixed / "results.json").symlink_to(runs["bad"] / "results.json")
    for args in (("diff", mixed, runs["bad"]), ("baseline", "make", mixed, "--out", tmp_path / "b.json"),
                 ("plan", "--params", "1B", "--layout", "tp=1,dp=1", "--measured", mixed)):
        line = one_line_error(_cli(*args))
        assert "outside its run directory" in line and str(runs["bad"] / "results.json") in line, (args, line)
    own = tmp_path / "own"
    subprocess.run(["cp", "-r", str(runs["a"]), str(own)], check=True)
    (own / "results.json").rename(own / "record.json")
    (own / "results.json").symlink_to("record.json")
    r = _cli("diff", own, runs["b"])
    assert r.exit_code == 0, r.output


def test_h12_16_a_results_json_that_is_a_fifo(runs: dict[str, Path], tmp_path: Path) -> None:
    """H12-16: results.json a FIFO no one writes: each reader refuses it at once, exit 2."""
    fifo = tmp_path / "fifo"
    subprocess.run(["cp", "-r", str(runs["a"]), str(fifo)], check=True)
    (fifo / "results.json").unlink()
    os.mkfifo(fifo / "results.json")
    started = time.monotonic()
    for args in (("diff", fifo, runs["b"]), ("baseline", "make", fifo, "--out", tmp_path / "b.json"),
                 ("plan", "--params", "1B", "--layout", "tp=1,dp=1", "--measured", fifo)):
        assert "FIFO" in one_line_error(_cli(*args)), args
    assert time.monotonic() - started < 30


def test_h12_17_a_baseline_from_no_matching_run(runs: dict[str, Path], tmp_path: Path) -> None:
    """H12-17: `baseline make --from-state` where no run is of the inventory, or of the backend,
    or passed: exit 2, one line, no file written, nothing stored."""
    out = tmp_path / "b.json"
    for extra in (("-i", INVENTORY), ("--backend", "local")):
        line = one_line_error(_cli("baseline", "make", "--from-state", runs["state"], *extra, "--out", out))
        assert "no runs with summaries" in line, line
    assert not out.exists()


def test_h12_18_a_run_diffed_with_itself(runs: dict[str, Path]) -> None:
    """H12-18: `diff` of a run with itself (its directory twice, with a trailing slash, and by
    its id against its directory): one note saying so, exit 0, nothing moved."""
    run_id = json.loads((runs["a"] / "results.json").read_text())["run_id"]
    for a, b in ((runs["a"], runs["a"]), (runs["a"], f"{runs['a']}/"), (run_id, runs["a"])):
        r = _cli("diff", a, b, "--state-dir", runs["state"])
        assert r.exit_code == 0, r.output
        assert "RUN_A and RUN_B are one run" in r.output and "moved beyond the noise (|z| >= 4 and >= 2%): 0" \
            in r.output, r.output


def test_h12_19_history_of_a_host_the_inventory_renamed(runs: dict[str, Path], tmp_path: Path) -> None:
    """H12-19: h3 renamed h9 in the inventory: `history h9` is refused as a name no recorded run
    measured (exit 2, naming the nearest); `history h3` still shows its runs; a run of the
    renamed inventory judges h9 without h3's history (no drift borrowed from another name)."""
    line = one_line_error(_cli("history", "h9", "--state-dir", runs["state"]))
    assert "'h9'" in line, line
    r = _cli("history", "h3/gpu0", "--state-dir", runs["state"])
    assert r.exit_code == 0 and "2 runs" in r.output, r.output
    inv = tmp_path / "renamed.yaml"
    inv.write_text(SMALL.replace("'h[1-3]'", "'h1,h2,h9'"))
    r = _conn(inv, tmp_path / "run", "--state-dir", runs["state"])
    assert r.exit_code == 0, r.output
    assert "drift" not in (tmp_path / "run" / "results.json").read_text()


def test_h12_20_evidence_bundles_named_as_windows_devices(tmp_path: Path) -> None:
    """H12-20: hosts `con`, `nul.txt` and `aux` with findings: their bundle folders and tool
    files were `nul.txt-<hash>` and `con.<tool>.txt`, which Windows opens as its NUL and CON
    devices (a run directory on a share, or unzipped there, lost them). No name in the
    evidence folder is a device name before its first dot now; each finding keeps its own."""
    from sncheck.store.evidence import _DEVICES, entity_dir, safe_name

    inv = tmp_path / "win.yaml"
    inv.write_text(SMALL.replace("'h[1-3]'", "'con,nul.txt,aux,k'"))
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {type: corrupt_card, target: con/gpu0}\n  - {type: down_host, target: nul.txt}\n"
                      "  - {type: slow_card, target: aux/gpu1, factor: 0.3}\n")
    out = tmp_path / "run"
    assert _conn(inv, out, "--faults", faults).exit_code == 1
    names = [p.name for p in (out / "evidence").rglob("*")]
    assert names and not [n for n in names if n.split(".", 1)[0].upper() in _DEVICES], names
    doc = json.loads((out / "results.json").read_text())
    bundles = {f["entity"]: f["evidence"]["files"][0].split("/")[1] for f in doc["findings"] if f.get("evidence")}
    assert len(set(bundles.values())) == len(bundles) >= 2, bundles
    for name in ("con", "NUL", "com1", "lpt9.x", "aux.", "Prn.txt"):
        assert safe_name(name).split(".", 1)[0].upper() not in _DEVICES, name
        assert entity_dir(name).split(".", 1)[0].upper() not in _DEVICES, name
    assert safe_name("console") == "console" and safe_name("node001/gpu0") == "node001_gpu0"


# -- the gate ---------------------------------------------------------------------------------------

def test_h12_21_a_playbook_that_lists_a_layer_twice_or_none(tmp_path: Path) -> None:
    """H12-21: `layers: [connectivity, connectivity]` ran the layer twice into one name: two
    'connectivity' layers in results.json, JUnit and diff keyed by it, the rows of both under
    one layer. Refused at the line, exit 2, nothing written; `layers: []` and no `layers` too."""
    inv = tmp_path / "small.yaml"
    inv.write_text(SMALL)
    cases = {"twice": ("name: t\nlayers:\n  - connectivity\n  - connectivity\n", ":2: layers: connectivity is listed twice"),
             "options": ("name: t\nlayers:\n  - stress: {max_bytes: 1M}\n  - golden\n  - stress:\n      max_bytes: 2M\n",
                         ":5: layers: stress is listed twice"),
             "none": ("name: t\nlayers: []\n", ":2: layers: must be a non-empty list"),
             "missing": ("name: t\ngate: warning\n", "layers: required key missing")}
    for name, (text, said) in cases.items():
        pb = tmp_path / f"{name}.yaml"
        pb.write_text(text)
        out = tmp_path / f"out-{name}"
        line = one_line_error(_cli("run", pb, "-i", inv, "--backend", "mock", "--seed", "1", "-q", "--out", out))
        assert said in line, (name, line)
        assert not out.exists(), name


ASCEND_RULES = ("rules:\n  - name: ascend-npu-health\n    op: counter_nonzero\n    metric: host_fact_failures\n"
                "    facts: [npu_health, npu_health_codes, roce_link, roce_net_health]\n    severity: critical\n"
                "    scope: host\n    confirm: none\n    summary: npu fault\n")


def _ascend_rules_run(tmp_path: Path, fault: str) -> dict:
    """demo-2sn on the mock with ``fault`` planted, judged by a rules file of Ascend's host facts
    alone: exit 1 asserted, its results.json returned."""
    rules, faults, out = tmp_path / "ascend.yaml", tmp_path / "f.yaml", tmp_path / "run"
    rules.write_text(ASCEND_RULES)
    faults.write_text(f"faults:\n  - {fault}\n")
    r = _cli("connectivity", "-i", INVENTORY, "--backend", "mock", "--faults", faults, "--rules", rules,
             "--seed", "1", "-q", "--out", out)
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_h12_22_rules_for_another_vendor_s_facts_only(tmp_path: Path) -> None:
    """H12-22: a rules file whose one rule judges Ascend's facts (npu-smi health, RoCE links),
    on NVIDIA hosts with an uncorrectable ECC error: exit 0, PASS, no finding. A host fact that
    fails and no enabled rule takes is 'not judged' on its host (as a kernel report no rule
    takes), at the gate's severity: the gate fails, nothing is isolated for it."""
    doc = _ascend_rules_run(tmp_path, "{type: ecc_uncorrectable, target: node009/gpu2, count: 3}")
    # (the card's Xid 48s in the host's kernel log, which no rule takes either, are 'not judged' on the host too:
    # one finding, the other related to it)
    every = [g for f in doc["findings"] for g in (f, *(f["evidence"].get("related") or []))]
    said = {(f.get("entity", "node009"), f["rule"]) for f in every}
    assert ("node009", "fact-not-judged") in said and ("node009", "kernel-not-judged") in said, said
    judged = next(f for f in every if f["rule"] == "fact-not-judged")
    assert judged["evidence"]["facts"] == ["ecc"] and judged["severity"] == "warning", judged
    assert doc["verdict"] == "fail" and not [e for e in doc["isolation"] if e["action"] == "isolate"]


def test_h12_23_two_faults_that_contradict_on_one_entity(tmp_path: Path) -> None:
    """H12-23: a slow card and a high-latency card planted on a host that is down for the whole
    run: nothing measures them, the run said only 'host-unreachable', and a test of the slow
    card passed on it. Refused at the fault's line naming the down_host's (exit 2); with the
    down host transient it runs."""
    inv = tmp_path / "small.yaml"
    inv.write_text(SMALL)
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {type: slow_card, target: h1/gpu0, factor: 0.5}\n"
                      "  - {type: high_latency_card, target: h1/gpu0, factor: 3}\n  - {type: down_host, target: h1}\n")
    line = one_line_error(_conn(inv, tmp_path / "run", "--faults", faults))
    assert f"{faults}:2: slow_card on h1/gpu0: h1 is down for the whole run (down_host at {faults}:4)" in line, line
    faults.write_text('faults:\n  - {type: degraded_link, target: "h2/gpu0<->h3/gpu0", factor: 0.5}\n'
                      "  - {type: down_host, target: h3}\n")
    assert "degraded_link on h2/gpu0<->h3/gpu0: h3 is down" in one_line_error(
        _conn(inv, tmp_path / "run", "--faults", faults))
    faults.write_text("faults:\n  - {type: slow_card, target: h1/gpu0, factor: 0.3}\n"
                      "  - {type: down_host, target: h1, transient: true}\n")
    assert _conn(inv, tmp_path / "run", "--faults", faults).exit_code == 1


def test_h12_24_targets_that_match_nothing(tmp_path: Path) -> None:
    """H12-24: `--targets ''`, `','`, `' '` and `h[4-9]` (no such hosts): refused, exit 2, one
    line, no run directory; never a run of nothing that passes."""
    inv = tmp_path / "small.yaml"
    inv.write_text(SMALL)
    for k, targets in enumerate(("", ",", " ", "h[4-9]")):
        out = tmp_path / f"run{k}"
        line = one_line_error(_conn(inv, out, "--targets", targets))
        assert "--targets" in line, (targets, line)
        assert not out.exists(), targets


def test_h12_25_a_golden_reference_of_another_configuration(tmp_path: Path) -> None:
    """H12-25: the local backend's 4-rank reference (another model and backend) named for a
    mock run of 2-rank replicas: the golden layer is 'not judged' (critical, exit 1), never
    compared with a curve of another model, never a pass."""
    inv = tmp_path / "small.yaml"
    inv.write_text(SMALL.replace("'h[1-3]'", "'h[1-2]'"))
    pb = tmp_path / "g.yaml"
    pb.write_text(f"name: g\nlayers:\n  - golden: {{reference: {ROOT / 'fixtures/golden/local-4.json'}}}\n"
                  "gate: warning\n")
    out = tmp_path / "run"
    r = _cli("run", pb, "-i", inv, "--backend", "mock", "--seed", "1", "-q", "--out", out)
    assert r.exit_code == 1, r.output
    doc = json.loads((out / "results.json").read_text())
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("golden-not-judged", "critical")]
    assert "no golden reference for replicas of 2 ranks" in doc["findings"][0]["message"]


def test_h12_26_rules_that_judge_no_pair_of_the_connectivity_layer(tmp_path: Path) -> None:
    """H12-26: the same rules file of Ascend's host facts alone, a card at 0.3 of its bandwidth:
    no rule read a pair, yet the layer counted as judged by the fact rule: exit 0, PASS. A layer
    whose pairs (collectives, for stress) no enabled rule reads is not judged."""
    doc = _ascend_rules_run(tmp_path, "{type: slow_card, target: node003/gpu1, factor: 0.3}")
    assert {(f["entity"], f["rule"]) for f in doc["findings"]} == {("sn0", "layer-not-judged"),
                                                                   ("sn1", "layer-not-judged")}
    assert doc["verdict"] == "fail"
