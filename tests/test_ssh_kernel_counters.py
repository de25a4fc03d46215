"""Kernel logs and fabric error counters judged over real sshd hosts with fake tools (issue 21).

The hosts are real sshd servers on 127.0.1.x (tests/sshd_harness.py); their ``nvidia-smi``,
``ibstat`` and ``dcgmi`` are tests/fake_tool.py (whole listings of the inventory's cards,
so the bus id of each card is known), and a fake ``dmesg`` replays a kernel log. The
kernel log lines follow the NVIDIA driver's format (``NVRM: Xid (PCI:dddd:bb:dd): N, ...``,
as in fixtures/real/kernel-log/) with ``dmesg --time-format iso`` stamps; written for
these tests.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from fake_tool import install_fake_tools
from sshd_harness import install_fake_tool
from test_ssh_backend import backend_for, collect, install_python, rules_without_timing_peers, write_inventory

from sncheck.cli.main import main
from sncheck.health.findings import merge_findings
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.store.rundir import read_rows
from sncheck.vendors import registry

pytestmark = pytest.mark.sshd

REPO = Path(__file__).resolve().parents[1]
# node1's card 1: the fake nvidia-smi -q lists it as GPU 00000000:2A:00.0 (sncheck.vendors.nvidia.sim)
XID79_ON_GPU1 = ("2026-11-30T01:02:03,000000+00:00 NVRM: Xid (PCI:0000:2a:00): 79, pid=2712, name=python3, "
                 "GPU has fallen off the bus.\n"
                 "2026-11-30T01:02:03,000100+00:00 NVRM: GPU 0000:2a:00.0: GPU has fallen off the bus.\n"
                 "2026-11-30T01:02:04,000000+00:00 usb 1-1: new high-speed USB device number 2 using xhci_hcd\n")
PLAYBOOK = ("name: ssh-kernel\nlayers:\n  - connectivity: {bw_bytes: 64K, lat_iters: 3, bw_iters: 1}\n"
            "gate: warning\n")


def replay_kernel_log(host, text: str) -> None:
    """A fake ``dmesg`` that prints ``text`` (whatever its arguments) and a ``journalctl``
    without kernel entries, so the read falls back to dmesg as on a host without a journal."""
    data = host.directory / "dmesg.txt"
    data.write_text(text)
    install_fake_tool(host, "dmesg", f"#!/bin/sh\nexec cat {shlex.quote(str(data))}\n")
    install_fake_tool(host, "journalctl", "#!/bin/sh\nexit 0\n")


def xid_cluster(sshd_cluster, tmp_path: Path):
    """Two fake-tool hosts of 2 cards with Python, node1's kernel log holding an Xid 79 on
    gpu1, and their inventory."""
    pytest.importorskip("torch")
    cluster = sshd_cluster(2, ["node1", "node2"])
    for host in cluster:
        install_fake_tools(host, cards=2)
        install_python(host)
    replay_kernel_log(cluster["node1"], XID79_ON_GPU1)
    return cluster, write_inventory(tmp_path / "inv.yaml", cluster, cards=2)


def run_gate(tmp_path: Path, cluster, inv: Path, state: Path, name: str, playbook: str = PLAYBOOK,
             rules: Path | None = None):
    pb = tmp_path / "pb.yaml"
    pb.write_text(playbook)
    out = tmp_path / name
    r = CliRunner().invoke(main, ["run", str(pb), "-i", str(inv), "--backend", "ssh",
                                  "--rules", str(rules or rules_without_timing_peers(tmp_path / "rules.yaml")),
                                  "--known-hosts", str(cluster.known_hosts), "--ssh-config", str(cluster.ssh_config),
                                  "--state-dir", str(state), "--via", "hostfile", "--out", str(out), "-q"])
    return r, json.loads((out / "results.json").read_text()), read_rows(out)


def test_xid79_isolates_that_card_and_a_second_night_without_new_lines_is_clean(sshd_cluster, tmp_path):
    cluster, inv = xid_cluster(sshd_cluster, tmp_path)
    state = tmp_path / "state"

    r, res, rows = run_gate(tmp_path, cluster, inv, state, "night1")
    assert r.exit_code == 1, r.output
    xid = [f for f in res["findings"] if f["rule"] == "kernel-xid"
           or any(x["rule"] == "kernel-xid" for x in f["evidence"].get("related", []))]
    assert [(f["entity"], f["entity_kind"], f["severity"]) for f in xid] == [("node1/gpu1", "card", "critical")], \
        res["findings"]
    assert "Xid 79" in xid[0]["message"] and "fallen off the bus" in xid[0]["message"]
    assert xid[0]["evidence"]["action"] == "reboot" and xid[0]["evidence"]["confirm"] == "none"
    assert not [f for f in res["findings"] if f["rule"] == "kernel-not-judged"]  # the shipped rules take every report
    # isolated by masking the card (hard evidence, no retest), never the host
    steps = [(i["entity"], i["entity_kind"], i["action"]) for i in res["isolation"]]
    assert steps == [("node1/gpu1", "card", "quarantine"), ("node1/gpu1", "card", "isolate")], steps
    assert not [i for i in res["isolation"] if i["entity_kind"] == "host"]
    # the counters were read before and after the layer's traffic
    reads = sorted((r["host"], r["value"].get("read", 0)) for r in rows
                   if r["kind"] == "host_fact" and r["fact"] == "nvlink_errors" and r["layer"] == "connectivity")
    assert reads == [("node1", 0), ("node1", 1), ("node2", 0), ("node2", 1)]
    kept = json.loads((state / "kernel-log-cursors.json").read_text())["ssh-test"]["node1"]
    # the read's newest stamp: the driver's one-line 'GPU has fallen off the bus' after the Xid, a line
    # the bounded read keeps (the kernel-log view reads it: a lost GPU with no Xid line is that form)
    assert kept == {"time": "2026-11-30T01:02:03,000100+00:00", "bus_ids": {"0000:19:00": 0, "0000:2a:00": 1},
                    "reports": [{"source": "xid", "code": 79, "bus_id": "0000:2a:00", "card": 1,
                                 "time": "2026-11-30T01:02:03.000000+00:00"}]}  # for a count over a window

    # The next night the same log holds no new line: nothing to judge, no finding.
    rows = night(inv, cluster, state)
    assert not [f for f in _findings(rows, topo_of(inv)) if "kernel" in f.rule]
    kernel = [r for r in rows if r["fact"] == "kernel_log" and r["host"] == "node1"]
    assert kernel and kernel[0]["ok"] and kernel[0]["value"]["events"] == []
    assert "since the last run" in kernel[0]["message"]

    # A new Xid after that counts again (on card 0 this time), the old one still does not.
    replay_kernel_log(cluster["node1"], XID79_ON_GPU1 + XID79_ON_GPU1.replace("2026-11-30T01", "2026-12-01T01")
                      .replace("0000:2a:00", "0000:19:00"))
    found = _findings(night(inv, cluster, state), topo_of(inv))
    assert [(f.entity, f.rule, f.severity) for f in found] == [("node1/gpu0", "kernel-xid", "critical")], found


def night(inv: Path, cluster, state: Path) -> list[dict]:
    """Another night's host facts over SSH, with the state dir of the first (its cursors)."""
    ssh = backend_for(inv, cluster, state_dir=str(state))
    try:
        return collect(ssh.host_facts, tuple(cluster.names))
    finally:
        ssh.close()


def topo_of(inv: Path):
    from sncheck.run.inputs import load_inventory
    from sncheck.topology import Topology

    return Topology(load_inventory(inv))


def _findings(rows: list[dict], topo) -> list:
    ctx = DetectContext(topo, topo.inventory.design)
    return merge_findings(evaluate(load_rules("default").rules, pd.DataFrame(rows), ctx))


# nvlink -e lists every link of the board: 12 on an A100 SXM (fewer reads as cut short)
NVLINK_E = "GPU {i}: NVIDIA A100-SXM4-80GB (UUID: GPU-{i})\n" + "".join(
    f"\t Link {ln}: Replay Errors: {{r{ln}}}\n\t Link {ln}: Recovery Errors: 0\n\t Link {ln}: CRC Errors: 0\n"
    for ln in range(12))


def nvlink_e(replays: dict[tuple[int, int], int]) -> str:
    return "".join(NVLINK_E.format(i=i, **{f"r{ln}": replays.get((i, ln), 0) for ln in range(12)}) for i in range(2))


def test_nvlink_replays_that_grow_by_200_during_the_run_name_that_cards_link(sshd_cluster, tmp_path):
    cluster = sshd_cluster(1, ["node1"])
    host = cluster["node1"]
    install_fake_tools(host, cards=2)
    # nvidia-smi nvlink -e: card 1 link 2 at 7 replays before the run (an old burst: info),
    # at 207 after it; card 0 link 1 at 5 both times. Every other argument: the fake tool.
    before, after = nvlink_e({(1, 2): 7, (0, 1): 5}), nvlink_e({(1, 2): 207, (0, 1): 5})
    (host.directory / "nvlink_before").write_text(before)
    (host.directory / "nvlink_after").write_text(after)
    count = host.directory / "nvlink_reads"
    install_fake_tool(host, "nvidia-smi", (
        "#!/bin/sh\n"
        f"if [ \"$*\" = \"nvlink -e\" ]; then\n"
        f"  if [ -e {shlex.quote(str(count))} ]; then exec cat {shlex.quote(str(host.directory / 'nvlink_after'))}; fi\n"
        f"  touch {shlex.quote(str(count))}; exec cat {shlex.quote(str(host.directory / 'nvlink_before'))}\n"
        "fi\n"
        f"PYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} "
        f"{shlex.quote(str(REPO / 'tests' / 'fake_tool.py'))} 2 nvidia-smi \"$@\"\n"))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=2)
    ssh = backend_for(inv, cluster)
    try:
        rows = collect(ssh.host_facts, ("node1",))      # before the run's traffic
        assert not [f for f in _findings(rows, ssh.topo) if f.severity != "info"]
        rows += collect(ssh.fabric_counters, ("node1",))  # after it
    finally:
        ssh.close()
    found = {(f.entity, f.entity_kind, f.rule, f.severity): f for f in _findings(rows, ssh.topo)}
    grew = found.pop(("node1/gpu1", "card", "nvlink-errors-grew", "critical"))
    assert "GPU 1 link 2 replay_errors +200 (7 -> 207)" in grew.message, grew.message
    assert grew.evidence["counters"][0] == {"device": "GPU 1 link 2", "counter": "replay_errors", "before": 7,
                                            "after": 207, "growth": 200}
    # card 0's counter was high before the run and did not grow: info, not a failure tonight
    old = found.pop(("node1/gpu0", "card", "fabric-errors-before-run", "info"))
    assert "GPU 0 link 1 replay_errors=5" in old.message
    assert not found, found


SYSFS_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_xmit_discards",
                  "port_xmit_data", "VL15_dropped")


def write_sysfs(root: Path, values: dict[tuple[str, str], int]) -> None:
    """/sys/class/infiniband/<dev>/ports/1/counters/<name> files, as the kernel's ABI names them."""
    for dev in ("mlx5_0", "mlx5_1"):
        d = root / "class" / "infiniband" / dev / "ports" / "1" / "counters"
        d.mkdir(parents=True, exist_ok=True)
        for name in SYSFS_COUNTERS:
            (d / name).write_text(f"{values.get((dev, name), 0)}\n")


def _counter_read(sysfs: Path, to: Path) -> Path:
    """What the run's counter command prints on the host (the same files, the same argv)."""
    argv = registry.counter_reads()["ib-counters"].counters_argv(str(sysfs))
    to.write_text(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    return to


def _said(entity: str, rule: str, severity: str, message: str, counters: list[dict]) -> tuple:
    """What a finding says, its NIC named by its rail (a run's host is the inventory's, a pasted
    read's 'log')."""
    kept = [{k: c[k] for k in ("device", "counter", "before", "after", "growth")} for c in counters]
    return rule, str(severity), entity.rsplit("/", 1)[-1], message.split(": ", 1)[1], json.dumps(kept, default=str)


def _parse_counters(*args: str) -> tuple[int, list[tuple]]:
    r = CliRunner().invoke(main, ["parse", "ib-counters", *args])
    judged = json.loads(r.stdout)["judged"] if r.stdout.strip().startswith("{") else []
    return r.exit_code, sorted(_said(j["entity"], j["rule"], j["severity"], j["message"], j["counters"]) for j in judged)


def test_ib_symbol_errors_that_grow_during_the_run_name_that_nic(sshd_cluster, tmp_path):
    """...and sncheck parse ib-counters, given the output of the same reads, judges them alike
    (issue 28: one parser, one judgement): the read before the run alone, then with --since."""
    cluster = sshd_cluster(1, ["node1"])
    install_fake_tools(cluster["node1"], cards=2)
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=2)
    sysfs = tmp_path / "sys"
    # last month's burst on mlx5_1 (rail 1), and discards on mlx5_0 that will stay under the warning's bar
    write_sysfs(sysfs, {("mlx5_1", "port_xmit_data"): 10**9, ("mlx5_1", "symbol_error"): 5,
                        ("mlx5_0", "port_xmit_discards"): 7})
    ssh = backend_for(inv, cluster, sysfs_root=str(sysfs))
    try:
        rows = collect(ssh.host_facts, ("node1",))
        before = _counter_read(sysfs, tmp_path / "before.txt")
        ib = next(r for r in rows if r["fact"] == "ib_counters")
        assert ib["ok"] and len(ib["value"]["ports"]) == 2, ib
        before_rows = list(rows)
        write_sysfs(sysfs, {("mlx5_1", "port_xmit_data"): 9 * 10**9, ("mlx5_1", "symbol_error"): 345,
                            ("mlx5_0", "port_xmit_discards"): 57})
        rows += collect(ssh.fabric_counters, ("node1",))
        after = _counter_read(sysfs, tmp_path / "after.txt")
    finally:
        ssh.close()

    def ran(rows: list[dict]) -> list[tuple]:
        return sorted(_said(f.entity, f.rule, f.severity, f.message, f.evidence["counters"])
                      for f in _findings(rows, ssh.topo) if f.evidence.get("fact") == "ib_counters")

    found = [(f.entity, f.entity_kind, f.rule, f.severity) for f in _findings(rows, ssh.topo)]
    # mlx5_1 is rail 1: the NIC of card 1; traffic counters grew too, and are no error; nic0's
    # discards grew by 50 (under the bar of 100): its value before the run is info, as nic1's is
    # beside its growth (merged per NIC)
    assert found == [("node1/nic1", "nic", "ib-port-errors-grew", "critical"),
                     ("node1/nic0", "nic", "fabric-errors-before-run", "info")], found
    f = _findings(rows, ssh.topo)[0]
    assert "mlx5_1 port 1 symbol_error +340 (5 -> 345)" in f.message and f.evidence["fact"] == "ib_counters"
    # sncheck parse: the read before the run alone is info (exit 0), as the run's is
    assert [r[:3] for r in ran(before_rows)] == [("fabric-errors-before-run", "info", "nic0"),
                                                 ("fabric-errors-before-run", "info", "nic1")]
    assert _parse_counters(str(before)) == (0, ran(before_rows))
    # with --since the earlier read: the growth, the same rule, severity, NIC and counts (exit 1)
    assert _parse_counters(str(after), "--since", str(before)) == (1, ran(rows))


def test_a_hanging_dmesg_times_out_for_that_host_only_and_says_so(sshd_cluster, tmp_path, monkeypatch):
    from sncheck.backends import hostreads, ssh as ssh_backend

    monkeypatch.setattr(ssh_backend, "KERNEL_LOG_TIMEOUT_S", 2.0)
    cluster = sshd_cluster(2, ["node1", "node2"])
    for host in cluster:
        install_fake_tools(host, cards=1)
    install_fake_tool(cluster["node1"], "dmesg", "#!/bin/sh\nexec sleep 600\n")
    install_fake_tool(cluster["node1"], "journalctl", "#!/bin/sh\nexit 0\n")
    replay_kernel_log(cluster["node2"], XID79_ON_GPU1.replace("0000:2a:00", "0000:19:00"))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=1)
    ssh = backend_for(inv, cluster)
    try:
        rows = collect(ssh.host_facts, ("node1", "node2"))
        assert "timed out" in ssh.kernel_log("node1")
    finally:
        ssh.close()
    kernel = {r["host"]: r for r in rows if r["fact"] == "kernel_log"}
    assert kernel["node1"]["status"] == "timeout" and "timed out" in kernel["node1"]["message"]
    assert kernel["node2"]["status"] == "ok" and kernel["node2"]["value"]["events"][0]["card"] == 0
    assert hostreads.KERNEL_LOG_TIMEOUT_S == 60.0  # the shipped bound


STRESS_ONLY = ("name: ssh-stress-only\nlayers:\n  - stress: {min_bytes: 4K, max_bytes: 16K, iters: 2, warmup: 1, "
               "collectives: [all_reduce]}\ngate: warning\n")


def test_a_stress_only_night_reads_the_kernel_log_and_counters_before_and_after(sshd_cluster, tmp_path):
    """Issue 21 gap (a): a playbook without a connectivity layer (nightly-stress) still reads
    every host's kernel log since the last run and its counters before and after the layers;
    the Xid is judged, and isolated by masking the card, as in a gate."""
    cluster, inv = xid_cluster(sshd_cluster, tmp_path)
    r, res, rows = run_gate(tmp_path, cluster, inv, tmp_path / "state", "run", STRESS_ONLY)
    assert r.exit_code == 1, r.output
    reads = sorted((r["host"], r["fact"], r["value"].get("read", 0)) for r in rows
                   if r["kind"] == "host_fact" and r["fact"] in ("nvlink_errors", "ib_counters"))
    assert reads == [(h, f, n) for h in ("node1", "node2") for f in ("ib_counters", "nvlink_errors") for n in (0, 1)]
    kernel = {r["host"]: r for r in rows if r["kind"] == "host_fact" and r["fact"] == "kernel_log"}
    assert set(kernel) == {"node1", "node2"} and kernel["node1"]["value"]["events"][0]["card"] == 1
    xid = [f for f in res["findings"] if f["rule"] == "kernel-xid"]
    assert [(f["entity"], f["severity"]) for f in xid] == [("node1/gpu1", "critical")], res["findings"]
    steps = [(i["entity"], i["action"]) for i in res["isolation"] if i["entity"] == "node1/gpu1"]
    assert ("node1/gpu1", "isolate") in steps and not [i for i in res["isolation"] if i["entity_kind"] == "host"]
    # the shipped group rule judged these real rows: two hosts' groups, each the other's one peer, at
    # latency-bound sizes on a shared machine are no finding (reviews16 #9: it named node1 or node2)
    assert not [f for f in res["findings"] if f["rule"] == "collective-group-slow"], res["findings"]


def fallen_off(host, listed: int, cards: int) -> None:
    """node's ``nvidia-smi -q`` lists only its first ``listed`` GPUs (the rest fell off the
    bus: gone from the listing, Attached GPUs counted down), every other command all ``cards``."""
    tool = f"{shlex.quote(sys.executable)} {shlex.quote(str(REPO / 'tests' / 'fake_tool.py'))}"
    install_fake_tool(host, "nvidia-smi", (
        "#!/bin/sh\n"
        f"export PYTHONPATH={shlex.quote(str(REPO))}\n"
        f"if [ \"$*\" = \"-q\" ]; then exec {tool} {listed} nvidia-smi \"$@\"; fi\n"
        f"exec {tool} {cards} nvidia-smi \"$@\"\n"))


def test_xid79_on_a_gpu_gone_from_the_listing_masks_that_card_not_the_host(sshd_cluster, tmp_path):
    """Issue 21 gap (b): the usual Xid 79, the GPU gone from ``nvidia-smi -q``. Its bus id
    names it: by its place in bus order among the GPUs still listed (no earlier run), or by
    the last whole listing in the state dir. The card is masked; the host is not drained."""
    cluster, inv = xid_cluster(sshd_cluster, tmp_path)
    fallen_off(cluster["node1"], listed=1, cards=2)
    r, res, rows = run_gate(tmp_path, cluster, inv, tmp_path / "state", "night1")
    assert r.exit_code == 1, r.output
    kernel = next(r for r in rows if r["fact"] == "kernel_log" and r["host"] == "node1")
    assert kernel["value"]["events"][0]["card"] == 1, kernel
    xid = [f for f in res["findings"] if f["rule"] == "kernel-xid"
           or any(x["rule"] == "kernel-xid" for x in f["evidence"].get("related", []))]
    assert [(f["entity"], f["severity"]) for f in xid] == [("node1/gpu1", "critical")], res["findings"]
    steps = [(i["entity"], i["entity_kind"], i["action"]) for i in res["isolation"]]
    assert ("node1/gpu1", "card", "isolate") in steps, steps
    assert not [i for i in res["isolation"] if i["entity_kind"] == "host"], steps


def test_a_missing_gpu_is_named_by_bus_order_or_by_the_last_whole_listing():
    from sncheck.backends.hostreads import name_cards

    a, b, c, d = "0000:19:00", "0000:2a:00", "0000:3b:00", "0000:4c:00"
    # 3 of 4 listed, not whole: the Xid's bus id takes its rank among them
    assert name_cards({a: None, c: None, d: None}, {}, 4, [b], [b]) == {a: 0, b: 1, c: 2, d: 3}
    # two gone, both in the log: still as many as the cards
    assert name_cards({a: None, d: None}, {}, 4, [c, b], [c, b])[c] == 2
    # too few to rank (one gone, not in the log): the last whole listing names it, or nothing
    assert name_cards({a: None, d: None}, {b: 1, c: 2}, 4, [b], [b]) == {b: 1}
    assert name_cards({a: None, d: None}, {}, 4, [b], [b]) == {}
    # the last listing disagrees with the bus order: neither is trusted for the rank
    assert name_cards({a: None, c: None, d: None}, {b: 3}, 4, [b], [b]) == {}
    # a whole listing names its cards; a bus id it lacks (not a GPU of this host) names none
    assert name_cards({a: 0, b: 1}, {}, 2, ["0000:99:00"], ["0000:99:00"]) == {a: 0, b: 1}
    # an AER/GHES record at a root port is no GPU the driver named: it takes no rank, and the
    # GPU a driver report names still does when the root port is beside it in the log
    assert name_cards({a: None, c: None, d: None}, {}, 4, [b], gpu_buses=()) == {}
    assert name_cards({a: None, d: None}, {}, 4, [b, "0000:20:03"], gpu_buses={b}) == {}
    assert name_cards({a: None, c: None, d: None}, {}, 4, [b, "0000:20:03"], gpu_buses={b}) == \
        {a: 0, b: 1, c: 2, d: 3}


def test_a_count_over_a_window_spans_nights_by_the_logs_uptime_stamps(sshd_cluster, tmp_path):
    """'Xid 13 three times in 24 h is a warning' (extends: default) on a real sshd host whose
    dmesg prints uptime stamps ([  100.0]: a dmesg without --time-format iso). The read's boot
    time (/proc/stat) places them; the state dir keeps each night's reports, so the third
    report, a night later, makes the warning; one 25 h after them is alone in its window."""
    cluster = sshd_cluster(1, ["node1"])
    host = cluster["node1"]
    install_fake_tools(host, cards=2)
    inv, state = write_inventory(tmp_path / "inv.yaml", cluster, cards=2), tmp_path / "state"
    rules = tmp_path / "mine.yaml"
    rules.write_text("extends: default\nrules:\n  - name: kernel-xid\n    table:\n"
                     "      13: {severity: warning, count: 3, window: 24h}\n")

    def xid13(at: float) -> str:
        return f"[{at:12.6f}] NVRM: Xid (PCI:0000:2a:00): 13, pid=77, name=python3, Graphics SM Warp Exception\n"

    mine, topo = list(load_rules(str(rules)).rules), topo_of(inv)

    def judged(log: str) -> list[tuple]:
        replay_kernel_log(host, log)
        found = evaluate(mine, pd.DataFrame(night(inv, cluster, state)), DetectContext(topo, topo.inventory.design))
        return [(f.entity, f.severity, f.evidence.get("in_window")) for f in found if f.rule == "kernel-xid"]

    log = xid13(100.0) + xid13(200.0)
    assert judged(log) == [("node1/gpu1", "info", 2)]
    log += xid13(300.0)
    assert judged(log) == [("node1/gpu1", "warning", 3)]  # one new report, two kept from the night before
    log += xid13(300.0 + 25 * 3600)
    assert judged(log) == [("node1/gpu1", "info", 1)]
    kept = json.loads((state / "kernel-log-cursors.json").read_text())["ssh-test"]["node1"]["reports"]
    assert [(r["code"], r["card"]) for r in kept] == [(13, 1)] * 4


def test_every_read_of_a_host_that_hangs_costs_one_command_timeout_in_all(sshd_cluster, tmp_path):
    """Issue 30, class 7: a host whose every tool hangs (nvidia-smi, ibstat, dcgmi,
    systemctl, dmesg) waited command_timeout once per tool, one after another, and the
    evidence's kernel-log reads once per host. Now each host's reads run at once (one
    channel per tool), every host at once: one command_timeout in all."""
    import time

    timeout = 3.0
    cluster = sshd_cluster(3, ["node1", "node2", "node3"])
    for host in cluster:
        for tool in ("nvidia-smi", "ibstat", "dcgmi", "systemctl", "dmesg", "journalctl"):
            install_fake_tool(host, tool, "#!/bin/sh\nexec sleep 600\n")
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=2)
    ssh = backend_for(inv, cluster, command_timeout=timeout)
    try:
        t0 = time.monotonic()
        rows = collect(ssh.host_facts, ("node1", "node2", "node3"))
        took = time.monotonic() - t0
        t1 = time.monotonic()
        logs = [ssh.kernel_log(h) for h in ("node1", "node2", "node3")]
        evidence = time.monotonic() - t1
    finally:
        ssh.close()
    status = {(r["host"], r["fact"]): r["status"] for r in rows}
    assert all(status[(h, "card_count")] == "timeout" and status[(h, "dcgmi_diag")] == "timeout"
               and status[(h, "ib_ports")] == "timeout" for h in ("node1", "node2", "node3")), status
    assert all(status[(h, "kernel_log")] == "timeout" for h in ("node1", "node2", "node3")), status
    assert all("timed out" in (text or "") for text in logs)
    print(f"host facts with every tool hanging: {took:.1f} s (timeout {timeout} s)")
    assert took < 2.5 * timeout + 4, f"host facts took {took:.1f} s with every tool hanging ({timeout} s timeout)"
    assert evidence < 1.0, f"the kernel logs for the evidence took {evidence:.1f} s more"


def test_a_special_file_as_the_cursor_file_is_neither_read_nor_replaced(tmp_path: Path) -> None:
    """The kernel-log cursors live in the state dir beside the store; the file was read with
    read_text (a FIFO held the run at its start) and renamed over at its end (a FIFO or a
    device planted there became a JSON file). Now: read through the one reader (nothing
    kept: every line is read), and left alone at the end, with a warning."""
    from adversary import mode_of, planted, special_files

    from sncheck.backends.hostreads import CURSOR_FILE, HostReads

    for label, special in special_files(tmp_path / "specials"):
        state = tmp_path / label.replace(" ", "_")
        state.mkdir()
        with planted(special, state / CURSOR_FILE) as mode:
            reads = HostReads("inv", str(state))
            assert reads.cursors == {}
            reads.cursors = {"node1": {"cursor": "s=1"}}
            reads.save()
            assert mode_of(state / CURSOR_FILE) == mode, label
            assert [p.name for p in state.iterdir()] == [CURSOR_FILE], label  # no temporary file left
    good = tmp_path / "good"  # a regular file round-trips; another inventory's hosts are kept
    good.mkdir()
    (good / CURSOR_FILE).write_text(json.dumps({"other": {"h": {"cursor": "x"}}}))
    reads = HostReads("inv", str(good))
    reads.cursors = {"node1": {"cursor": "s=1"}}
    reads.save()
    assert HostReads("inv", str(good)).cursors == {"node1": {"cursor": "s=1"}}
    assert json.loads((good / CURSOR_FILE).read_text())["other"] == {"h": {"cursor": "x"}}
