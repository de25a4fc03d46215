"""Hostile inputs, round 9: the code that acts on the fleet and remembers it. The fleet cap
(runs at once, a switch and cards on the same hosts, a cap of 0, 10% of three hosts), dry runs
that touch nothing, drain reasons and entity names that are not what they seem, releases of
what was never isolated or is no longer in the inventory, and the state store on a bad day
(a newer schema, a cut file, a link, a full disk, writers at once). Each test names its case
id; the README's round 9 table lists them."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_actions import INVENTORY, FakeCluster
from test_cli_ops import disagreements
from test_hardening import one_line_error

from sncheck.actions.base import read_audit
from sncheck.cli.main import main
from sncheck.health.policy import needs_confirmation
from sncheck.store.state import SCHEMA_VERSION, StateStore

ROOT = Path(__file__).resolve().parents[1]
HOSTS = [f"node{i:03d}" for i in range(1, 17)]


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    """Fake sinfo/scontrol/kubectl first on PATH, one node per demo-2sn host."""
    fc = FakeCluster.create(tmp_path / "fake", HOSTS)
    monkeypatch.setenv("PATH", f"{fc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return fc


def _act(state: Path, *args: object, inventory: Path = INVENTORY):
    return _cli(*args, "-i", inventory, "--state-dir", state)


def _three_hosts(tmp_path: Path) -> Path:
    inv = tmp_path / "three.yaml"
    inv.write_text("name: three\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
                   "supernodes:\n  - {name: sn0, hosts: 'node[001-003]', cards_per_host: 4}\n")
    return inv


# -- releases of what was never isolated, or is no longer in the inventory ----------------------

def test_h9_01_a_release_of_what_was_never_isolated_makes_no_repeat_offender(tmp_path: Path,
                                                                              cluster: FakeCluster) -> None:
    """H9-01: `release node003 --apply` of a host never quarantined or isolated recorded a
    release; the next finding on node003 within the window found a 'repeat offender' and
    isolated it at once, without the retest every first offence gets."""
    state = tmp_path / "state"
    r = _act(state, "release", "node003", "--via", "slurm", "--apply")
    assert r.exit_code == 0, r.output
    assert "node003 is not quarantined or isolated" in r.output
    with StateStore(state) as st:
        assert st.last_release("node003") is None
        assert needs_confirmation("node003", st)
    # a release that ends an isolation still counts
    assert _act(state, "isolate", "node004", "--via", "slurm", "--apply").exit_code == 0
    assert _act(state, "release", "node004", "--via", "slurm", "--apply").exit_code == 0
    with StateStore(state) as st:
        assert st.last_release("node004") is not None and not needs_confirmation("node004", st)


def test_h9_02_a_host_the_inventory_no_longer_has_can_still_be_released(tmp_path: Path,
                                                                         cluster: FakeCluster) -> None:
    """H9-02: node016 isolated (drained), then the inventory shrank to node[001-015]:
    `release node016` was refused as no host of the inventory, so it stayed isolated in the
    store and drained in Slurm for good."""
    state = tmp_path / "state"
    assert _act(state, "isolate", "node016", "--via", "slurm", "--apply").exit_code == 0
    assert cluster.slurm("node016")["state"] == "DRAIN"
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(INVENTORY.read_text().replace("node[009-016]", "node[009-015]"))
    r = _act(state, "release", "node016", "--via", "slurm", "--apply", inventory=smaller)
    assert r.exit_code == 0, r.output
    assert cluster.slurm("node016")["state"] == "IDLE"
    with StateStore(state) as st:
        assert st.current_status() == []
    # with the hostfile too, and --after-repair cannot validate what the inventory lacks
    assert _act(state, "isolate", "node015", "--via", "hostfile", "--apply", inventory=smaller).exit_code == 0
    (tmp_path / "smallest.yaml").write_text(INVENTORY.read_text().replace("node[009-016]", "node[009-014]"))
    line = one_line_error(_act(state, "release", "node015", "--after-repair", "--via", "hostfile", "--apply",
                               inventory=tmp_path / "smallest.yaml"))
    assert "node015" in line, line
    r = _act(state, "release", "node015", "--via", "hostfile", "--apply", inventory=tmp_path / "smallest.yaml")
    assert r.exit_code == 0, r.output
    with StateStore(state) as st:
        assert st.current_status() == []
    # a name neither the inventory nor the store holds is still refused
    line = one_line_error(_act(state, "release", "node017", "--via", "slurm", "--apply", inventory=smaller))
    assert "'node017'" in line


# -- the fleet cap -------------------------------------------------------------------------------

def test_h9_03_a_cap_of_0_isolates_nothing(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-03: `--cap 0` allows nothing out of service: exit 1, no tool called, nothing recorded."""
    state = tmp_path / "state"
    r = _act(state, "isolate", "node001/gpu0", "--via", "slurm", "--via", "hostfile", "--apply", "--cap", "0")
    assert r.exit_code == 1 and "safety cap" in r.output, r.output
    assert cluster.log() == [] and not (state / "hostfile.txt").exists()
    with StateStore(state) as st:
        assert st.current_status() == []


def test_h9_04_ten_percent_of_three_hosts_is_one_host(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-04: a cap of 10% of a fleet of 3 hosts (0.3 of a host) allows one host, never two."""
    inv, state = _three_hosts(tmp_path), tmp_path / "state"
    assert _act(state, "isolate", "node001", "--via", "hostfile", "--apply", inventory=inv).exit_code == 0
    r = _act(state, "isolate", "node002", "--via", "hostfile", "--apply", inventory=inv)
    assert r.exit_code == 1 and "2 of 3 hosts" in r.output, r.output
    r = _act(state, "isolate", "node001/gpu1", "node002/gpu1", "--via", "cuda_visible_devices", "--apply",
             inventory=inv)
    assert r.exit_code == 1 and "5 of 12 cards" in r.output, r.output


def test_h9_05_two_commands_at_once_each_under_the_cap_together_over_it(tmp_path: Path) -> None:
    """H9-05: two `isolate --apply` started together, each one host (within 10% of 16 hosts
    alone), both over it together: exactly one is refused, the store and the hostfile agree."""
    from test_cli_ops import _commands

    for t in range(3):
        state = tmp_path / f"try{t}" / "state"
        common = ["-i", str(INVENTORY), "--via", "hostfile", "--apply", "--state-dir", str(state)]
        results = _commands(state, [(["isolate", "node005", *common], 0.0), (["isolate", "node012", *common], 0.0)])
        assert sorted(code for code, _ in results) == [0, 1], results
        assert disagreements(state) == []
        with StateStore(state) as st:
            assert len([s for s in st.current_status() if s["applied"]]) == 1


def test_h9_06_a_switch_and_cards_on_its_rail_are_counted_once(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-06: a leaf (rail 0 of the 16 hosts of scalable unit su0: 16 cards) and node001/gpu0, on
    that rail, counted once. Since reviews20 #17 a switch's isolation counts what it takes out: repair
    advice under every action, no card masked, so none; node001/gpu0 is the one card, node001/gpu1
    beside it (the first batch a dry run) one card again."""
    state = tmp_path / "state"
    r = _act(state, "isolate", "leaf:su0-rail0", "node001/gpu0", "--via", "hostfile", "--cap", "1")
    assert r.exit_code == 0, r.output
    audit = read_audit(state)
    assert all("1 of 64 cards" in a["cap_check"] for a in audit), audit[0]["cap_check"]
    r = _act(state, "isolate", "leaf:su0-rail0", "node001/gpu1", "--via", "hostfile", "--cap", "1")
    assert "1 of 64 cards" in read_audit(state)[-1]["cap_check"]


def test_h9_07_a_host_and_its_own_card_are_one_host(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-07: node001 and node001/gpu2 in one batch are 4 cards and 1 host, within the cap."""
    state = tmp_path / "state"
    r = _act(state, "isolate", "node001", "node001/gpu2", "--via", "hostfile", "--apply")
    assert r.exit_code == 0, r.output
    assert "4 of 64 cards (6.2%) and 1 of 16 hosts" in read_audit(state)[-1]["cap_check"]


# -- a dry run touches nothing; what reaches the tools ---------------------------------------------

def test_h9_08_without_apply_no_tool_runs_and_no_file_is_written(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-08: isolate and release without --apply through every mechanism: no sinfo, scontrol
    or kubectl call, no launcher file, no decision in the store."""
    state = tmp_path / "state"
    via = [a for v in ("slurm", "kubernetes", "hostfile", "cuda_visible_devices") for a in ("--via", v)]
    for cmd in ("isolate", "release"):
        r = _act(state, cmd, "node002", "node003/gpu1", *via)
        assert r.exit_code == 0 and "dry run: nothing was changed" in r.output, r.output
    assert cluster.log() == []
    assert sorted(p.name for p in state.iterdir() if not p.name.startswith("state.db")) == ["audit.jsonl"]
    with StateStore(state) as st:
        assert st.history() == [] and st.runs() == []


REASONS = ["it's \"bad\"", "a\nb\rc", "$(touch {x}); `touch {x}` && touch {x} | x > {x}", "\u202eevil\u0007"]


@pytest.mark.parametrize("text", REASONS, ids=["quotes", "newlines", "shell", "bidi-bel"])
def test_h9_09_a_drain_reason_with_quotes_newlines_and_metacharacters(tmp_path: Path, cluster: FakeCluster,
                                                                     text: str) -> None:
    """H9-09: --rule/--reason reach scontrol as one argument (no shell), one printable line;
    nothing they name runs; status prints each row on one line."""
    state, x = tmp_path / "state", tmp_path / "pwned"
    text = text.format(x=x)
    r = _act(state, "isolate", "node002", "--via", "slurm", "--via", "kubernetes", "--apply",
             "--rule", text, "--reason", text)
    assert r.exit_code == 0, r.output
    assert not x.exists()
    drains = [a for a in cluster.log() if a[:2] == ["scontrol", "update"]]
    assert len(drains) == 1 and drains[0][3] == "State=DRAIN" and len(drains[0]) == 5
    reason = cluster.slurm("node002")["reason"]
    assert reason.startswith("sncheck: ") and reason.isprintable(), reason
    out = _cli("status", "--state-dir", state).output
    assert len([ln for ln in out.splitlines() if "node002" in ln]) == 1, out
    assert all(ln.isprintable() for ln in out.splitlines()), out


@pytest.mark.parametrize("name", ["-h", "--all", "-oProxyCommand=touch x"])
def test_h9_10_a_node_name_that_is_an_option(tmp_path: Path, cluster: FakeCluster, name: str) -> None:
    """H9-10: an entity that reads as an option, after `--`, is no entity: exit 2, nothing run."""
    state = tmp_path / "state"
    for cmd in ("isolate", "release"):
        line = one_line_error(_cli(cmd, "-i", INVENTORY, "--state-dir", state, "--via", "slurm", "--apply",
                                   "--", name))
        assert repr(name) in line, line
    assert cluster.log() == []


@pytest.mark.parametrize("name", ["node001/../node002", "node001/", "/etc/passwd", "node001\x00", "n" * 10_000,
                                  "node001/gpu0\n", "NODE001", "node001."],
                         ids=["dotdot", "slash", "abs", "nul", "10KB", "newline", "upper", "dot"])
def test_h9_11_isolate_of_names_no_inventory_holds(tmp_path: Path, cluster: FakeCluster, name: str) -> None:
    """H9-11: `..`, `/`, NUL, 10 KB, a newline, another case: refused, one line of at most
    a few hundred characters, nothing run, no state directory made."""
    state = tmp_path / "state"
    line = one_line_error(_cli("isolate", name, "-i", INVENTORY, "--state-dir", state, "--via", "slurm", "--apply"))
    assert len(line) < 600 and "\x00" not in line, line[:200]
    assert cluster.log() == [] and not state.exists()


def test_h9_12_control_host_that_is_an_option(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-12: `--control-host -oProxyCommand=...`: refused as no host name, exit 2, before the lock."""
    state, x = tmp_path / "state", tmp_path / "pwned"
    line = one_line_error(_act(state, "isolate", "node001", "--via", "slurm", "--apply",
                               "--control-host", f"-oProxyCommand=touch {x}"))
    assert "--control-host" in line or "control host" in line, line
    assert not x.exists() and cluster.log() == []


# -- the state store on a bad day ---------------------------------------------------------------

def _store_with_rows(state: Path) -> None:
    assert _cli("isolate", "node001", "-i", INVENTORY, "--state-dir", state, "--via", "hostfile",
                "--apply").exit_code == 0


def test_h9_13_a_store_from_a_newer_schema_is_left_as_it_is(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-13: schema version SCHEMA_VERSION+1: every command refuses it, exit 2, the file unchanged."""
    state = tmp_path / "state"
    _store_with_rows(state)
    with sqlite3.connect(state / "state.db") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
        db.execute("CREATE TABLE future (x)")
    before = (state / "state.db").read_bytes()
    for args in (["status"], ["history"], ["isolate", "node002", "-i", INVENTORY, "--via", "slurm", "--apply"],
                 ["release", "node001", "-i", INVENTORY, "--via", "slurm", "--apply"]):
        line = one_line_error(_cli(*args, "--state-dir", state))
        assert "newer than this sncheck" in line, (args, line)
    assert (state / "state.db").read_bytes() == before and cluster.log() == []


@pytest.mark.parametrize("keep", [0, 100, 4096, 6000], ids=["empty", "in-header", "one-page", "mid-page"])
def test_h9_14_a_cut_state_db_is_refused_before_anything_acts(tmp_path: Path, cluster: FakeCluster,
                                                             keep: int) -> None:
    """H9-14: state.db cut to its first bytes (a copy cut short, a full disk): status, history
    and isolate say so in one line (exit 2 or 3), isolate acts on nothing."""
    state = tmp_path / "state"
    _store_with_rows(state)
    with StateStore(state) as st:  # checkpointed, the WAL gone: the cut is the database's
        st._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("state.db-wal", "state.db-shm"):
        (state / side).unlink(missing_ok=True)
    data = (state / "state.db").read_bytes()
    (state / "state.db").write_bytes(data[:keep])
    for args in (["status"], ["history"], ["isolate", "node002", "-i", INVENTORY, "--via", "slurm", "--apply"]):
        r = _cli(*args, "--state-dir", state)
        if keep == 0 and args[0] != "isolate":
            continue  # an empty file is a new database
        if keep == 0:
            assert r.exit_code == 0, r.output
            continue
        assert r.exit_code in (2, 3) and "Traceback" not in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, (args, r.output)
        assert "state" in r.output
    if keep:
        assert cluster.log() == []


def test_h9_15_a_symlinked_state_db_is_refused(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-15: state.db a link to a file elsewhere (an empty file, another store): sncheck
    writes its database through no link: exit 2 naming it, the target untouched."""
    state = tmp_path / "state"
    state.mkdir()
    target = tmp_path / "elsewhere.db"
    target.write_bytes(b"")
    (state / "state.db").symlink_to(target)
    for args in (["status"], ["isolate", "node002", "-i", INVENTORY, "--via", "hostfile", "--apply"]):
        line = one_line_error(_cli(*args, "--state-dir", state))
        assert "state.db" in line and "link" in line, line
    assert target.read_bytes() == b"" and not Path(f"{target}-wal").exists()


DISK_FULL = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
from sncheck.cli.main import main
sys.argv = ["sncheck"] + {args!r}
main()
"""


@pytest.mark.parametrize("limit,full", [(4096, True), (40_000, True), (120_000, False)])
def test_h9_16_a_full_disk_loses_nothing_and_half_applies_nothing(tmp_path: Path, cluster: FakeCluster,
                                                                  limit: int, full: bool) -> None:
    """H9-16: every file capped at LIMIT bytes (RLIMIT_FSIZE: the disk fills mid-command):
    isolate --apply ends with one line, exit 2 or 3, no traceback; the next command (the disk
    freed) reconciles, and the store, the hostfile and Slurm agree. At 120,000 bytes the
    command's writes fit (exit 0): the same agreement after it."""
    state = tmp_path / "state"
    _store_with_rows(state)
    with open(state / "audit.jsonl", "a") as f:
        f.write(" " * 1)
    args = ["isolate", "node009", "-i", str(INVENTORY), "--via", "slurm", "--via", "hostfile", "--apply",
            "--cap", "0.5", "--state-dir", str(state)]
    p = subprocess.run([sys.executable, "-c", DISK_FULL.format(limit=limit, args=args)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    out = (p.stdout + p.stderr).strip()
    assert "Traceback" not in out, out
    assert (p.returncode in (2, 3)) if full else p.returncode == 0, (p.returncode, out)
    if full:
        assert len([ln for ln in out.splitlines() if ln.startswith("sncheck:") or "error" in ln.lower()]) >= 1, out
    r = _cli("isolate", "node010", "-i", INVENTORY, "--via", "slurm", "--via", "hostfile", "--state-dir", state)
    assert r.exit_code in (0, 1), r.output
    r = _cli("release", "node001", "-i", INVENTORY, "--via", "slurm", "--via", "hostfile", "--apply",
             "--state-dir", state)
    assert r.exit_code == 0, r.output
    assert disagreements(state, cluster) == [], (p.returncode, out)


WRITER = r"""
import sys
from sncheck.store.state import StateStore
with StateStore(sys.argv[1]) as st:
    for k in range(20):
        st.record_run({{"run_id": f"{{sys.argv[2]}}-{{k}}", "playbook": "p", "backend": "mock",
                        "inventory": "i", "started": "2026-12-05T00:00:00Z", "verdict": "pass"}})
"""


def test_h9_17_writers_at_once_lose_no_row(tmp_path: Path) -> None:
    """H9-17: six processes writing 20 runs each into one new store at once: 120 runs, no error."""
    state = tmp_path / "state"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(), str(state), f"w{k}"], stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}) for k in range(6)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errs
    with StateStore(state) as st:
        assert st.count("runs") == 120


# -- killed between the steps of one Kubernetes action ------------------------------------------

def _kubectl_killed(tmp_path: Path, cluster: FakeCluster, cmd: str, call: int) -> tuple[str, Path]:
    from test_cli_ops import _commands

    state = tmp_path / "state"
    args = ["-i", str(INVENTORY), "--via", "kubernetes", "--apply", "--state-dir", str(state)]
    if cmd == "release":
        assert _cli("isolate", "node005", *args).exit_code == 0
        cluster.clear_log()
    [(code, out)] = _commands(state, [([cmd, "node005", *args], 0.0)], {"FAKE_SIGNAL_AT": f"kubectl:after:KILL:{call}"})
    assert code == -9, out
    r = _cli("isolate", "node009", *args, "--cap", "0.5")
    assert r.exit_code == 0, r.output
    return r.output, state


@pytest.mark.parametrize("call", [2, 3], ids=["after-taint", "after-second-step"])
def test_h9_18_an_isolate_killed_mid_kubernetes_is_completed_never_rolled_back(tmp_path: Path, cluster: FakeCluster,
                                                                                call: int) -> None:
    """H9-18: SIGKILL after `kubectl taint` (or the step after it) of a host's isolation: the
    node kept sncheck's taint (and cordon) but the next command read only the cordon mark,
    said 'rolled back, nothing recorded', and the node stayed out of service with no record,
    beyond any release."""
    out, state = _kubectl_killed(tmp_path, cluster, "isolate", call)
    assert "had taken effect" in out, out
    node = cluster.k8s("node005")
    assert node["unschedulable"] and "sncheck.io/cordoned" in node["annotations"], node
    with StateStore(state) as st:
        assert {s["entity"] for s in st.current_status()} == {"node005", "node009"}
    assert _cli("release", "node005", "-i", INVENTORY, "--via", "kubernetes", "--apply",
                "--state-dir", state).exit_code == 0
    node = cluster.k8s("node005")
    assert not node["unschedulable"] and not node["taints"] and not node["annotations"], node


@pytest.mark.parametrize("call", [2, 3], ids=["after-untaint", "after-second-step"])
def test_h9_19_a_release_killed_mid_kubernetes_is_completed_never_left_half(tmp_path: Path, cluster: FakeCluster,
                                                                             call: int) -> None:
    """H9-19: SIGKILL after the untaint (or the step after it) of a host's release: the node
    was back in service in part while the store still held it isolated."""
    out, state = _kubectl_killed(tmp_path, cluster, "release", call)
    assert "had taken effect" in out, out
    node = cluster.k8s("node005")
    assert not node["unschedulable"] and not node["taints"] and not node["annotations"], node
    with StateStore(state) as st:
        assert {s["entity"] for s in st.current_status()} == {"node009"}


# -- the files the actions write ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["audit.jsonl", "hostfile.txt"])
def test_h9_20_a_state_file_linked_elsewhere_is_never_written_through(tmp_path: Path, cluster: FakeCluster,
                                                                     name: str) -> None:
    """H9-20: audit.jsonl or hostfile.txt a link to a file outside the state directory: the
    target is never written (the link refused, or replaced by a file of sncheck's)."""
    state = tmp_path / "state"
    _store_with_rows(state)
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    (state / name).unlink()
    (state / name).symlink_to(target)
    r = _act(state, "isolate", "node002", "--via", "slurm", "--via", "hostfile", "--apply", "--cap", "0.5")
    assert target.read_text() == "keep me\n"
    if r.exit_code != 0:
        line = one_line_error(r)
        assert name in line and cluster.log() == [], line
    else:  # the link replaced by a file of sncheck's, written
        assert not (state / name).is_symlink() and (state / name).read_text(), name


def test_h9_21_a_pending_transaction_of_a_host_the_inventory_lost(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-21: a transaction left open (SIGKILL) for node016, then the inventory shrank: the
    next command still completes it where it took effect (the drain) and says so."""
    from test_cli_ops import _commands

    state = tmp_path / "state"
    args = ["--via", "slurm", "--cap", "0.5", "--apply", "--state-dir", str(state)]
    [(code, out)] = _commands(state, [(["isolate", "node016", "-i", str(INVENTORY), *args], 0.0)],
                              {"FAKE_SIGNAL_AT": "scontrol:after:KILL:1"})
    assert code == -9, out
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(INVENTORY.read_text().replace("node[009-016]", "node[009-015]"))
    r = _cli("isolate", "node009", "-i", smaller, *args)
    assert r.exit_code == 0 and "had taken effect" in r.output, r.output
    with StateStore(state) as st:
        assert {s["entity"] for s in st.current_status()} == {"node009", "node016"}
        assert st.open_txns() == []


# -- what the text views print ------------------------------------------------------------------

def test_h9_22_history_shows_an_operators_rule_and_an_entity_as_text(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-22: `isolate --rule` with an OSC title sequence and a right-to-left override, then
    `history node001`: the store's rule reached the terminal raw, and so did an ENTITY typed
    with one ('NAME: nothing recorded')."""
    state = tmp_path / "state"
    rule = "\x1b]0;owned\x07\u202eevil"
    assert _act(state, "isolate", "node001", "--via", "hostfile", "--apply", "--rule", rule).exit_code == 0
    for entity in ("node001", "node\x1b[2J\u202e"):
        r = _cli("history", entity, "--state-dir", state)
        assert r.exit_code == 0, r.output
        assert all(ln.isprintable() for ln in r.output.splitlines()), r.output
    assert "\\u001b]0;owned\\u0007\\u202eevil" in _cli("history", "node001", "--state-dir", state).output


def test_h9_23_a_cap_given_as_a_percentage_is_refused(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-23: `--cap 10%` (or 10, meaning ten percent): refused, exit 2, nothing run."""
    state = tmp_path / "state"
    for cap in ("10%", "10", "-0.1"):
        r = _act(state, "isolate", "node001", "--via", "slurm", "--apply", "--cap", cap)
        assert r.exit_code == 2 and "--cap" in r.output and "Traceback" not in r.output, r.output
    assert cluster.log() == [] and not state.exists()


def test_h9_24_status_shows_a_state_dir_path_on_one_line(tmp_path: Path) -> None:
    """H9-24: `status --state-dir` of a path with a newline and a bidi mark that does not exist:
    'no state directory at PATH' was printed raw, over two lines. Since hostile round 11 (H11-05)
    a path option naming a control or bidi character is refused (exit 2): the refusal too names
    the path escaped, on one line."""
    r = _cli("status", "--state-dir", tmp_path / "x\ny\u202e")
    assert r.exit_code == 2, r.output
    said = [line for line in r.output.splitlines() if "--state-dir" in line and "Usage" not in line]
    assert len(said) == 1 and "x\\u000ay\\u202e" in said[0], r.output
    assert "\u202e" not in r.output and "x\ny" not in r.output, r.output


def test_h9_25_the_cap_counts_only_the_fleet_of_the_inventory(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-25: node016 isolated, then retired from the inventory (15 hosts): the first isolation of
    the 15 counted node016 too, '2 of 15 hosts', and was refused at the 10% cap."""
    state = tmp_path / "state"
    assert _act(state, "isolate", "node016", "--via", "hostfile", "--apply").exit_code == 0
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(INVENTORY.read_text().replace("node[009-016]", "node[009-015]"))
    r = _act(state, "isolate", "node001", "--via", "hostfile", "--apply", inventory=smaller)
    assert r.exit_code == 0, r.output
    assert "4 of 60 cards (6.7%) and 1 of 15 hosts" in read_audit(state)[-1]["cap_check"]
    r = _act(state, "isolate", "node002", "--via", "hostfile", "--apply", inventory=smaller)
    assert r.exit_code == 1 and "2 of 15 hosts" in r.output, r.output


def test_h9_26_an_isolation_applied_in_part_counts_as_applied(tmp_path: Path, cluster: FakeCluster) -> None:
    """H9-26: node005 drained in Slurm and left out of the hostfile, its cordon failed (no such
    Kubernetes node): recorded 'not applied', so the next command put node005 back into the
    hostfile while Slurm kept it drained, and the cap let node006 out too (2 of 16 hosts at 10%)."""
    st = cluster.state()
    del st["k8s"]["node005"]
    cluster.write_state(st)
    state = tmp_path / "state"
    r = _act(state, "isolate", "node005", "--via", "slurm", "--via", "kubernetes", "--via", "hostfile", "--apply")
    assert r.exit_code == 3 and "1 of 3 actions failed" in r.output, r.output
    with StateStore(state) as store:
        assert [(s["entity"], s["applied"]) for s in store.current_status()] == [("node005", True)]
    r = _act(state, "isolate", "node006", "--via", "slurm", "--via", "hostfile", "--apply")
    assert r.exit_code == 1 and "2 of 16 hosts" in r.output, r.output
    assert "node005" not in (state / "hostfile.txt").read_text()
    assert disagreements(state, cluster) == []
