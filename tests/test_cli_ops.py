"""``sncheck status | isolate | release | capacity`` and the end-of-run hook, with fake
``sinfo``, ``scontrol`` and ``kubectl`` that keep state (see test_actions.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from test_actions import INVENTORY, FakeCluster

from sncheck.actions import LocalRunner
from sncheck.actions.base import read_audit
from sncheck.actions.batch import apply_run_isolation
from sncheck.model import RunRecord
from sncheck.store.results import from_json
from sncheck.cli.ops import register
from sncheck.config.inventory import Inventory
from sncheck.run.inputs import load_inventory
from sncheck.store.state import StateStore

T0 = datetime(2026, 11, 29, 10, 30, tzinfo=timezone.utc)


@pytest.fixture
def inventory() -> Inventory:
    return load_inventory(INVENTORY)


@pytest.fixture
def fake_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inventory: Inventory) -> FakeCluster:
    """Fake sinfo/scontrol/kubectl first on PATH, one node per inventory host."""
    fc = FakeCluster.create(tmp_path / "fake", list(inventory.hosts))
    monkeypatch.setenv("PATH", f"{fc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return fc


@pytest.fixture
def cli() -> Iterator[click.Group]:
    group = click.Group("sncheck")
    register(group)
    yield group


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def invoke(cli: click.Group, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_register_adds_the_four_commands(cli: click.Group) -> None:
    assert set(cli.commands) == {"status", "isolate", "release", "capacity"}
    assert "Examples" in invoke(cli, "isolate", "--help").output


# -- isolate / release -----------------------------------------------------------------

def test_isolate_dry_run_prints_commands_and_runs_nothing(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    r = invoke(cli, "isolate", "node007", "-i", str(INVENTORY), "--via", "slurm", "--via", "kubernetes",
               "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    assert "dry run: nothing was changed" in r.output
    assert "would check the drain reason: sinfo -h -N -n node007 -o %E" in r.output
    assert "scontrol update NodeName=node007 State=DRAIN 'Reason=sncheck: manual" in r.output
    assert "kubectl cordon node007" in r.output
    assert fake_cluster.log() == []
    assert fake_cluster.slurm("node007")["state"] == "IDLE"
    with StateStore(state_dir) as store:
        assert store.current_status() == [] and store.runs() == []  # a dry run records no decision
    audit = read_audit(state_dir)
    assert [(a["via"], a["outcome"], a["applied"]) for a in audit] == [("slurm", "dry-run", False),
                                                                       ("kubernetes", "dry-run", False)]


def test_isolate_apply_then_release_round_trips_slurm(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    r = invoke(cli, "isolate", "node007", "-i", str(INVENTORY), "--via", "slurm", "--reason", "bad DIMM",
               "--rule", "ops-ticket-42", "--apply", "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    node = fake_cluster.slurm("node007")
    assert node["state"] == "DRAIN" and node["reason"].startswith("sncheck: ops-ticket-42 (run ")

    r = invoke(cli, "status", "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("node007"))
    assert "host" in line and "isolate" in line and "ops-ticket-42" in line and "bad DIMM" in line
    assert "(not applied)" not in line

    r = invoke(cli, "release", "node007", "-i", str(INVENTORY), "--via", "slurm", "--apply",
               "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    assert fake_cluster.slurm("node007") == {"state": "IDLE", "reason": ""}
    assert "nothing is quarantined or isolated" in invoke(cli, "status", "--state-dir", str(state_dir)).output
    with StateStore(state_dir) as store:
        assert [h["action"] for h in store.history("node007")] == ["isolate", "release"]
        assert store.last_release("node007") is not None


def test_release_leaves_a_foreign_drain_alone(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    fake_cluster.set_slurm("node004", state="DRAIN", reason="maintenance by ops")
    r = invoke(cli, "release", "node004", "-i", str(INVENTORY), "--via", "slurm", "--apply",
               "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    assert "skipped" in r.output and "maintenance by ops" in r.output
    assert fake_cluster.slurm("node004") == {"state": "DRAIN", "reason": "maintenance by ops"}
    assert not any(c[0] == "scontrol" for c in fake_cluster.log())


def test_kubernetes_round_trip_through_the_cli(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    args = ["-i", str(INVENTORY), "--via", "kubernetes", "--apply", "--state-dir", str(state_dir)]
    assert invoke(cli, "isolate", "node003/gpu2", *args).exit_code == 0
    assert invoke(cli, "isolate", "node003/gpu3", *args).exit_code == 0
    assert fake_cluster.k8s("node003")["taints"][0]["value"] == "gpu2.gpu3"  # the store knows gpu2 is out
    assert invoke(cli, "isolate", "node008", *args).exit_code == 0
    assert fake_cluster.k8s("node008")["unschedulable"] is True

    assert invoke(cli, "release", "node003/gpu2", *args).exit_code == 0
    assert fake_cluster.k8s("node003")["taints"][0]["value"] == "gpu3"
    assert invoke(cli, "release", "node003/gpu3", "node008", *args).exit_code == 0
    assert fake_cluster.k8s("node003")["taints"] == []
    assert fake_cluster.k8s("node008") == {"taints": [], "unschedulable": False, "annotations": {}}


def test_isolate_files_then_capacity(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    r = invoke(cli, "isolate", "node003/gpu2", "-i", str(INVENTORY), "--apply", "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    assert json.loads((state_dir / "cuda_visible_devices.json").read_text())["node003"] == "0,1,3"
    assert (state_dir / "exclude_hosts.txt").read_text() == ""
    assert fake_cluster.log() == []  # the default actions write files; no cluster tool runs

    r = invoke(cli, "capacity", "-i", str(INVENTORY), "--tp", "8", "--pp", "2", "--dp", "4",
               "--state-dir", str(state_dir))
    assert r.exit_code == 1, r.output  # 63 healthy cards cannot hold 8 groups of 8 in 2 supernodes
    assert "sn0: 31/32 healthy" in r.output and "out: node003/gpu2" in r.output
    assert "does NOT fit" in r.output and "largest DP that fits: 3" in r.output

    r = invoke(cli, "capacity", "-i", str(INVENTORY), "--tp", "8", "--pp", "2", "--dp", "3",
               "--state-dir", str(state_dir), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["fits"] is True


def test_the_safety_cap_blocks_a_fabric_wide_isolation(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    cards = [f"node{h:03d}/gpu{i}" for h in range(1, 6) for i in range(4)][:19]  # 19 of 64 cards: 30%
    r = invoke(cli, "isolate", *cards, "-i", str(INVENTORY), "--via", "slurm", "--via", "kubernetes",
               "--via", "hostfile", "--apply", "--state-dir", str(state_dir))
    assert r.exit_code == 1, r.output  # the same exit code as a run whose isolation the cap blocks
    assert "fabric-wide or harness problem" in r.output and "Nothing was applied" in r.output
    assert "19 of 64 cards (29.7%)" in r.output
    assert fake_cluster.log() == []
    assert not (state_dir / "hostfile.txt").exists()
    with StateStore(state_dir) as store:
        assert store.current_status() == []
    audit = read_audit(state_dir)
    assert len(audit) == 19 * 3 and all(a["outcome"] == "skipped" and a["blocked_by_cap"] for a in audit)

    r = invoke(cli, "isolate", *cards, "-i", str(INVENTORY), "--via", "hostfile", "--apply", "--cap", "0.5",
               "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output  # an operator who means it raises the cap
    assert (state_dir / "exclude_hosts.txt").read_text().splitlines() == [f"node00{h}" for h in range(1, 5)]


def test_the_cap_counts_what_is_already_isolated(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    args = ["-i", str(INVENTORY), "--via", "hostfile", "--apply", "--state-dir", str(state_dir)]
    assert invoke(cli, "isolate", "node001", *args).exit_code == 0   # 1 of 16 hosts
    r = invoke(cli, "isolate", "node002", "node003", *args)            # 3 of 16: 18.8% > 10%, and
    assert r.exit_code == 1 and "3 of 16 hosts (18.8%)" in r.output   # two more hosts in one run


@pytest.mark.parametrize("args, message", [
    (["isolate", "node999"], "not a card, host or switch of inventory demo-2sn"),
    (["isolate", "node001/gpu0<->node001/gpu1"], "is a link; only cards, hosts and switches"),
    (["isolate", "sn0"], "is a supernode"),
    (["isolate", "node001", "--kind", "card"], "'node001' is a host, not a card"),
    (["capacity", "--tp", "2", "--ep", "3"], "EP=3 must divide TP x DP = 2"),
])
def test_bad_input_exits_2(cli, state_dir: Path, args: list[str], message: str) -> None:
    r = invoke(cli, *args, "-i", str(INVENTORY), "--state-dir", str(state_dir))
    assert r.exit_code == 2, r.output
    assert message in r.output and "sncheck: error:" in r.output


def test_a_failed_action_exits_3(cli, fake_cluster: FakeCluster, state_dir: Path) -> None:
    st = fake_cluster.state()
    del st["k8s"]["node005"]
    fake_cluster.write_state(st)
    r = invoke(cli, "isolate", "node005", "-i", str(INVENTORY), "--via", "kubernetes", "--apply",
               "--state-dir", str(state_dir))
    assert r.exit_code == 3, r.output
    assert 'nodes "node005" not found' in r.output and "1 of 1 actions failed" in r.output
    with StateStore(state_dir) as store:
        (row,) = store.current_status()
    assert row["entity"] == "node005" and row["applied"] is False  # the decision stands; nothing took effect


@pytest.mark.sshd
def test_control_host_over_ssh(cli, sshd_cluster, tmp_path: Path, state_dir: Path) -> None:
    cluster = sshd_cluster(1, names=["admin01"])
    fc = FakeCluster.create(tmp_path / "remote", ["node007"], bin_dir=cluster["admin01"].bin_dir)
    r = invoke(cli, "isolate", "node007", "-i", str(INVENTORY), "--via", "slurm", "--apply",
               "--control-host", "admin01", "--ssh-config", str(cluster.write_ssh_config()),
               "--known-hosts", str(cluster.write_known_hosts()), "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    assert fc.slurm("node007")["state"] == "DRAIN"


# -- the end of a run ---------------------------------------------------------------------

def run_results(run_id: str, isolation: list[dict], findings: list[dict] | None = None) -> RunRecord:
    return from_json({"schema": "sncheck.run/1", "run_id": run_id, "playbook": "nightly-stress", "backend": "mock",
                      "inventory": "demo-2sn", "started": f"{run_id[:8]}T01:00:00Z",
                      "finished": f"{run_id[:8]}T02:00:00Z", "layers": [], "findings": findings or [],
                      "isolation": isolation})


def finding(entity: str, kind: str, rule: str = "p2p-bandwidth-below-design") -> dict:
    return {"entity": entity, "entity_kind": kind, "layer": "connectivity", "rule": rule, "severity": "critical",
            "message": f"{entity} slow", "evidence": {"measured": 270.1, "expected": 450.0, "unit": "GB/s"}}


def entry(entity: str, kind: str, action: str, rule: str = "p2p-bandwidth-below-design") -> dict:
    return {"entity": entity, "entity_kind": kind, "action": action, "reason": f"{rule}: {entity} slow",
            "applied": False, "rule": rule}


def test_apply_run_isolation_records_and_applies(fake_cluster: FakeCluster, inventory, tmp_path: Path,
                                                 state_dir: Path) -> None:
    results = run_results("20261129T010000Z-aaaa", [
        entry("node007", "host", "quarantine", "host-unreachable"),
        entry("node007", "host", "isolate", "host-unreachable"),
        entry("node003/gpu2", "card", "quarantine"),
        entry("node003/gpu2", "card", "isolate"),
        entry("node005/gpu1", "card", "quarantine", "latency-jitter"),
        entry("node005/gpu1", "card", "release", "latency-jitter"),
    ], [finding("node007", "host", "host-unreachable"), finding("node003/gpu2", "card"),
        finding("node005/gpu1", "card", "latency-jitter")])
    run_dir = tmp_path / "run"
    done = apply_run_isolation(results, inventory, state_dir, ["slurm", "cuda_visible_devices"], apply=True,
                               runner=LocalRunner(), run_dir=run_dir, now=T0)
    records = done.records
    assert fake_cluster.slurm("node007")["reason"] == "sncheck: host-unreachable (run 20261129T010000Z-aaaa)"
    assert json.loads((run_dir / "cuda_visible_devices.json").read_text())["node003"] == "0,1,3"
    assert json.loads((state_dir / "cuda_visible_devices.json").read_text())["node007"] == ""
    assert [e.applied for e in done.steps] == [False, True, False, True, False, True]
    assert not any(e.applied for e in results.isolation)  # the record given is a value: never changed

    assert len(records) == 3 * 2
    by = {(r["entity"], r["via"]): r for r in records}
    assert by[("node007", "slurm")]["outcome"] == "ok"
    assert by[("node003/gpu2", "slurm")]["outcome"] == "skipped"
    assert by[("node005/gpu1", "cuda_visible_devices")]["outcome"] == "ok"
    for d in (state_dir, run_dir):
        every = read_audit(d)  # each host: its begin line before it acts, then an outcome line per action
        assert [a["phase"] for a in every] == ["begin", "end", "end"] * 3
        assert [a["txn"] for a in every[::3]] == [a["txn"] for a in every[1::3]] == [a["txn"] for a in every[2::3]]
        audit = [a for a in every if a["phase"] == "end"]
        assert len(audit) == 6
        assert all(a["run_id"] == "20261129T010000Z-aaaa" for a in every)
        a = next(a for a in audit if a["entity"] == "node003/gpu2")
        assert a["rule"] == "p2p-bandwidth-below-design" and a["evidence"]["measured"] == 270.1

    with StateStore(state_dir) as store:
        assert [(s["entity"], s["action"], s["applied"]) for s in store.current_status()] == [
            ("node003/gpu2", "isolate", True), ("node007", "isolate", True)]
        assert store.count("findings") == 3 and store.runs()[0]["playbook"] == "nightly-stress"
        assert store.history("node003/gpu2")[1]["evidence"]["expected"] == 450.0
        assert store.last_release("node005/gpu1") == T0


def test_apply_run_isolation_dry_run_records_decisions_but_runs_nothing(fake_cluster: FakeCluster, inventory,
                                                                        state_dir: Path) -> None:
    results = run_results("20261129T010000Z-bbbb", [entry("node007", "host", "isolate")])
    done = apply_run_isolation(results, inventory, state_dir, ["slurm", "kubernetes"], apply=False)
    assert fake_cluster.log() == []
    assert [r["outcome"] for r in done.records] == ["dry-run", "dry-run"]
    assert done.steps[0].applied is False and done.blocked is None
    with StateStore(state_dir) as store:
        (row,) = store.current_status()
    assert row["action"] == "isolate" and row["applied"] is False


def test_apply_run_isolation_is_capped(fake_cluster: FakeCluster, inventory, state_dir: Path) -> None:
    cards = [f"node{h:03d}/gpu{i}" for h in range(9, 17) for i in range(4)][:20]  # 20 of 64 cards
    results = run_results("20261129T010000Z-cccc", [entry(c, "card", "isolate") for c in cards])
    done = apply_run_isolation(results, inventory, state_dir, ["kubernetes"], apply=True)
    # entity by entity (reviews20 #17): the 6 cards the 10% cap allows (6.4 of 64) applied, the other 14 held, each said
    held = [r for r in done.records if r.get("blocked_by_cap")]
    assert len(held) == 14 and all("not applied" in r["message"] and "fabric-wide or harness problem" in r["message"]
                                   for r in held)
    assert [e.entity for e in done.steps if e.applied] == cards[:6] and "fabric-wide or harness problem" in done.blocked
    assert {r["entity"] for r in held} == set(cards[6:]) and len(fake_cluster.log()) > 0
    with StateStore(state_dir) as store:
        assert len(store.current_status()) == 20 and sum(s["applied"] for s in store.current_status()) == 6


def test_status_shows_several_runs_sharing_a_state_dir(cli, fake_cluster: FakeCluster, inventory,
                                                       state_dir: Path) -> None:
    day = timedelta(days=1)
    apply_run_isolation(run_results("20261120T010000Z-0001", [
        entry("node003/gpu2", "card", "quarantine"), entry("node003/gpu2", "card", "release")]),
        inventory, state_dir, ["hostfile"], apply=True, now=T0)
    apply_run_isolation(run_results("20261121T010000Z-0002", [
        entry("node003/gpu2", "card", "quarantine"), entry("node003/gpu2", "card", "isolate"),
        entry("node011", "host", "quarantine", "host-unreachable")]),
        inventory, state_dir, ["hostfile"], apply=True, now=T0 + day)
    apply_run_isolation(run_results("20261122T010000Z-0003", [
        entry("node006/gpu1", "card", "quarantine", "latency-jitter")]),
        inventory, state_dir, ["hostfile"], apply=True, now=T0 + 2 * day)

    r = invoke(cli, "status", "--state-dir", str(state_dir))
    assert r.exit_code == 0, r.output
    rows = {line.split()[0]: line for line in r.output.splitlines()[1:] if line.startswith("node")}
    assert set(rows) == {"node003/gpu2", "node006/gpu1", "node011"}
    assert "isolate" in rows["node003/gpu2"] and "20261121T010000Z-0002" in rows["node003/gpu2"]
    assert "quarantine" in rows["node011"] and "host-unreachable" in rows["node011"]
    assert "20261122T010000Z-0003" in rows["node006/gpu1"] and "2026-12-01T10:30:00Z" in rows["node006/gpu1"]
    assert "3 runs recorded; latest 20261122T010000Z-0003" in r.output

    r = invoke(cli, "status", "node003/gpu2", "--history", "--state-dir", str(state_dir))
    lines = [x for x in r.output.splitlines() if x.startswith("node003/gpu2")]
    assert [x.split()[2] for x in lines] == ["quarantine", "release", "quarantine", "isolate"]

    r = invoke(cli, "status", "--json", "--state-dir", str(state_dir))
    data = json.loads(r.output)
    assert len(data["status"]) == 3 and len(data["runs"]) == 3


# -- isolation as a transaction under one lock; the fleet cap (issue 30, classes 1 and 2) --------

HOSTS = [f"node{i:03d}" for i in range(1, 17)]


def disagreements(state_dir: Path, cluster: FakeCluster | None = None) -> list[str]:
    """Where the state store, the audit, the launcher files and Slurm disagree (none: [])."""
    out = []
    with StateStore(state_dir) as st:
        status = st.current_status()
        pending = st.open_txns()
    isolated = {s["entity"] for s in status if s["action"] == "isolate" and s["applied"] and s["entity_kind"] == "host"}
    if pending:
        out.append(f"transactions left open: {[t['request']['entity'] for t in pending]}")
    if (state_dir / "hostfile.txt").exists():
        offered = {ln.split()[0] for ln in (state_dir / "hostfile.txt").read_text().splitlines()
                   if ln.strip() and not ln.startswith("#")}
        if isolated & offered:
            out.append(f"hostfile.txt offers isolated {sorted(isolated & offered)}")
        if set(HOSTS) - isolated - offered:
            out.append(f"hostfile.txt leaves out {sorted(set(HOSTS) - isolated - offered)}, in service")
        excluded = set((state_dir / "exclude_hosts.txt").read_text().split())
        if excluded != isolated:
            out.append(f"exclude_hosts.txt {sorted(excluded)} but the store {sorted(isolated)}")
    if cluster is not None:
        drained = {h for h, n in cluster.state()["slurm"].items() if n["reason"].startswith("sncheck:")}
        if drained != isolated:
            out.append(f"Slurm drained {sorted(drained)} but the store {sorted(isolated)}")
    audit = read_audit(state_dir) if (state_dir / "audit.jsonl").exists() else []
    begun = {a["txn"] for a in audit if a.get("phase") == "begin"}
    ended = {a["txn"] for a in audit if a.get("phase") == "end"}
    if begun - ended:
        out.append(f"audit: {len(begun - ended)} transactions begun and never ended")
    return out


def _commands(state_dir: Path, runs: list[tuple[list[str], float]], env: dict[str, str] | None = None,
              timeout: float = 60) -> list[tuple[int, str]]:
    from adversary import start_command, wait_command

    pids = [(start_command(args, state_dir.parent / f"cmd{k}", env, delay), state_dir.parent / f"cmd{k}")
            for k, (args, delay) in enumerate(runs)]
    return [wait_command(pid, out, timeout) for pid, out in pids]


def test_concurrent_isolate_and_release_on_one_state_dir_agree(tmp_path: Path) -> None:
    """The issue's race: two `isolate --via hostfile --apply` at once both exited 0 and the
    store listed both hosts, but hostfile.txt offered one of them (3 tries of 3). Here three
    commands at once (isolate node005, isolate node006, release node003), 20 seeded tries:
    the store and the hostfile agree both ways every time."""
    from adversary import seeded_delays

    common = ["-i", str(INVENTORY), "--via", "hostfile", "--apply"]
    cap = ["--cap", "0.5"]
    delays = seeded_delays(30, 60, 0.0, 0.03)
    for t in range(20):
        state = tmp_path / f"try{t}" / "state"
        assert invoke_main("isolate", "node003", *common, "--state-dir", str(state)).exit_code == 0
        results = _commands(state, [(["isolate", "node005", *common, *cap, "--state-dir", str(state)], delays[3 * t]),
                                    (["isolate", "node006", *common, *cap, "--state-dir", str(state)],
                                     delays[3 * t + 1]),
                                    (["release", "node003", *common, "--state-dir", str(state)], delays[3 * t + 2])])
        assert [code for code, _ in results] == [0, 0, 0], results
        assert disagreements(state) == [], (t, results)
        with StateStore(state) as st:
            assert {s["entity"] for s in st.current_status()} == {"node005", "node006"}


def invoke_main(*args: str) -> Result:
    from sncheck.cli.main import main

    return CliRunner().invoke(main, list(args))


def test_the_fleet_cap_counts_what_earlier_commands_took_out(fake_cluster: FakeCluster, state_dir: Path) -> None:
    """Five one-host `isolate` commands took 5 of 16 hosts (31%) out; the 10% cap bounded
    one command only. Now the second is refused, until --force-cap gives a reason."""
    args = ["-i", str(INVENTORY), "--via", "slurm", "--via", "hostfile", "--apply", "--state-dir", str(state_dir)]
    first = invoke_main("isolate", "node001", *args)
    assert first.exit_code == 0, first.output
    for host in ("node002", "node003", "node004", "node005"):
        r = invoke_main("isolate", host, *args)
        assert r.exit_code == 1, r.output
        assert "safety cap" in r.output and "2 of 16 hosts" in r.output and "--force-cap" in r.output
    assert disagreements(state_dir, fake_cluster) == []
    with StateStore(state_dir) as st:
        assert [s["entity"] for s in st.current_status()] == ["node001"]
    r = invoke_main("isolate", "node002", *args, "--force-cap", "")
    assert r.exit_code == 2 and "needs a reason" in r.output
    r = invoke_main("isolate", "node002", *args, "--force-cap", "RMA batch 42, approved by ops")
    assert r.exit_code == 0, r.output
    assert "over the fleet cap, forced" in r.output
    forced = [a for a in read_audit(state_dir) if a.get("entity") == "node002" and a.get("phase")]
    assert forced and all(a["force_cap"] == "RMA batch 42, approved by ops" for a in forced)
    assert disagreements(state_dir, fake_cluster) == []
    # a run's own isolations count against the same cap: node009 confirmed bad is blocked
    results = run_results("20261129T010000Z-cccc", [entry("node009", "host", "isolate", "host-unreachable")])
    done = apply_run_isolation(results, load_inventory(INVENTORY), state_dir, ["slurm"], apply=True,
                               runner=LocalRunner())
    assert done.steps[0].applied is False and done.blocked and fake_cluster.slurm("node009")["state"] == "IDLE"


STEPS = [(tool, when, n) for n in (1, 2) for tool in ("sinfo", "scontrol") for when in ("before", "after")]


@pytest.mark.parametrize("sig", ["TERM", "INT"])
def test_a_signal_at_each_step_finishes_the_host_then_exits_3(fake_cluster: FakeCluster, tmp_path: Path,
                                                              sig: str) -> None:
    """SIGTERM between the drain and the record left the node drained with sncheck's reason,
    `status` saying nothing was isolated, and no audit line. Now a signal at any step of a
    two-host `isolate --via slurm --via hostfile --apply` lets the host in progress finish
    (acted, recorded, audited) and the next one is never begun; exit 3; all agree."""
    for k, (tool, when, n) in enumerate(STEPS if sig == "TERM" else STEPS[2:6]):
        state = tmp_path / f"s{k}" / "state"
        fake_cluster.write_state({"slurm": {h: {"state": "IDLE", "reason": ""} for h in HOSTS},
                                  "k8s": {h: {"taints": [], "unschedulable": False, "annotations": {}} for h in HOSTS}})
        fake_cluster.clear_log()
        args = ["isolate", "node005", "node006", "-i", str(INVENTORY), "--via", "slurm", "--via", "hostfile",
                "--cap", "0.5", "--apply", "--state-dir", str(state)]
        [(code, out)] = _commands(state, [(args, 0.0)], {"FAKE_SIGNAL_AT": f"{tool}:{when}:{sig}:{n}"})
        assert code == 3, (tool, when, n, out)
        assert f"interrupted (SIG{sig})" in out and "Traceback" not in out, out
        done = ["node005", "node006"][:n]
        with StateStore(state) as st:
            assert sorted(s["entity"] for s in st.current_status()) == done, (tool, when, n, out)
        assert disagreements(state, fake_cluster) == [], (tool, when, n, out)


@pytest.mark.parametrize("tool, when, n", STEPS[:4], ids=[f"{t}-{w}" for t, w, _ in STEPS[:4]])
def test_killed_at_each_step_the_next_command_reconciles_and_says_so(fake_cluster: FakeCluster, tmp_path: Path,
                                                                     tool: str, when: str, n: int) -> None:
    """SIGKILL cannot be held: at each step of the first host's action, the process dies.
    The next `isolate --apply` on the state dir completes what took effect (the drain was
    done: recorded) or rolls back what did not (nothing recorded), says which, and then the
    store, the audit, the hostfile and Slurm agree."""
    state = tmp_path / "state"
    args = ["-i", str(INVENTORY), "--via", "slurm", "--via", "hostfile", "--cap", "0.5", "--apply",
            "--state-dir", str(state)]
    [(code, out)] = _commands(state, [(["isolate", "node005", *args], 0.0)],
                              {"FAKE_SIGNAL_AT": f"{tool}:{when}:KILL:{n}"})
    assert code == -9, out
    with StateStore(state) as st:
        assert len(st.open_txns()) == 1  # begun, never ended
    r = invoke_main("status", "--state-dir", str(state))
    assert r.exit_code == 0
    r = invoke_main("isolate", "node009", *args)
    assert r.exit_code == 0, r.output
    drained = tool == "scontrol"  # scontrol runs to its end though sncheck died when it began
    assert ("had taken effect" if drained else "rolled back") in r.output, r.output
    with StateStore(state) as st:
        assert sorted(s["entity"] for s in st.current_status()) == (["node005", "node009"] if drained else ["node009"])
    assert disagreements(state, fake_cluster) == [], r.output


def test_special_files_in_the_state_dir_stop_the_batch_before_it_acts(fake_cluster: FakeCluster,
                                                                       state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    StateStore(state_dir).close()  # sncheck's state directory (a FIFO alone there is another program's)
    os.mkfifo(state_dir / "hostfile.txt")
    r = invoke_main("isolate", "node005", "-i", str(INVENTORY), "--via", "slurm", "--via", "hostfile", "--apply",
                    "--state-dir", str(state_dir))
    assert r.exit_code == 2 and "hostfile.txt" in r.output and "FIFO" in r.output, r.output
    assert fake_cluster.slurm("node005")["state"] == "IDLE" and not fake_cluster.log()
    (state_dir / "hostfile.txt").unlink()
    os.mkfifo(state_dir / "audit.jsonl")  # the audit: refused before any host is begun
    r = invoke_main("isolate", "node005", "-i", str(INVENTORY), "--via", "slurm", "--apply",
                    "--state-dir", str(state_dir))
    assert r.exit_code == 2 and "audit.jsonl" in r.output and "FIFO" in r.output, r.output
    assert fake_cluster.slurm("node005")["state"] == "IDLE" and not fake_cluster.log()
    with StateStore(state_dir) as st:
        assert st.open_txns() == []
    (state_dir / "audit.jsonl").unlink()
    (state_dir / ".sncheck-isolation.lock").unlink()
    (state_dir / ".sncheck-isolation.lock").symlink_to(state_dir.parent / "elsewhere")
    r = invoke_main("isolate", "node005", "-i", str(INVENTORY), "--via", "hostfile", "--apply",
                    "--state-dir", str(state_dir))
    assert r.exit_code == 2 and "symlink" in r.output, r.output
    assert not (state_dir.parent / "elsewhere").exists()


def test_a_hostfile_that_disagrees_with_the_store_is_rewritten_and_reported(state_dir: Path) -> None:
    args = ["-i", str(INVENTORY), "--via", "hostfile", "--apply", "--state-dir", str(state_dir)]
    assert invoke_main("isolate", "node005", *args).exit_code == 0
    good = (state_dir / "hostfile.txt").read_text()
    (state_dir / "hostfile.txt").write_text(good + "node005 slots=4\n")  # an old copy put back by hand
    r = invoke_main("release", "node007", *args)
    assert r.exit_code == 0 and "hostfile.txt did not match the state store" in r.output, r.output
    assert disagreements(state_dir) == []


def test_a_signal_while_waiting_for_the_lock_does_nothing_and_exits_3(state_dir: Path) -> None:
    from adversary import start_command, wait_command

    from sncheck.actions.transaction import StateLock

    state_dir.mkdir(parents=True, exist_ok=True)
    with StateLock(state_dir):  # another command holds the state directory
        out = state_dir.parent / "waiting"
        pid = start_command(["isolate", "node005", "-i", str(INVENTORY), "--via", "hostfile", "--apply",
                             "--state-dir", str(state_dir)], out)
        import time
        time.sleep(2.0)
        os.kill(pid, 15)
        code, text = wait_command(pid, out)
    assert code == 3 and "while waiting" in text and "nothing was done" in text, text
    with StateStore(state_dir) as st:
        assert st.current_status() == [] and st.open_txns() == []
