"""Scale-out and copy-engine tests through the SSH fan-out: ib_write_bw and ib_write_lat
between rail-aligned host pairs of the cross-supernode schedule, nvbandwidth in each host.

Real sshd hosts on loopback; fake tools replay real captures (perftest/01 healthy HDR
200, perftest/03 a 92.57 Gb/s RoCE run as the slow link, perftest/04 the latency report,
nvbandwidth/01, and ibstat through tests/fake_tool.py). The fake perftest server and
client meet over a real TCP connection on the port sncheck chose for the rail.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pandas as pd
import pytest
from fake_tool import install_fake_tools
from sshd_harness import install_fake_tool
from vendor_ssh import real

from sncheck.vendors.infiniband.scaleout import BASE_PORT, nic_rails, perftest_argv
from sncheck.backends.ssh import SshBackend
from sncheck.health.findings import merge_findings
from sncheck.health.invariants import status_findings
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory, load_playbook_text
from sncheck.probeplan import connectivity_plan, rail_pair_rounds
from sncheck.errors import ConfigError
from sncheck.store.rundir import read_rows
from sncheck.topology import Topology
from sncheck.vendors.infiniband import perftest

FAKE = Path(__file__).resolve().parent / "fake_perftest.py"
HEALTHY_BW = "perftest/01_ib_write_bw_loopback_8M_server_client_concat.txt"
SLOW_BW = "perftest/03_ib_write_bw_roce_dgx_spark_run_infinitely_gbits.txt"
LAT = "perftest/04_ib_read_lat_roce_cx5_libibverbs_warnings.txt"
NVBW = "nvbandwidth/01_v0.10_2gpu_ce_with_cov.txt"


def test_latency_report_parses_from_a_real_capture() -> None:
    p = perftest.parse_ib_lat(real(LAT))
    assert (p["device"], p["link_type"], p["mtu"], p["test"]) == ("mlx5_5", "Ethernet", 1024, "RDMA_Read Latency Test")
    assert p["rows"] == [{"bytes": 2, "iterations": 1000, "t_min_us": 6.66, "t_max_us": 20.37, "t_typical_us": 6.74,
                          "t_avg_us": 6.82, "t_stdev_us": 0.78, "p99_us": 7.15, "p999_us": 20.37}]
    assert p["errors"] == [] and len(p["warnings"]) == 7  # libibverbs and CPU-frequency lines are warnings
    ok = perftest.check_ib_write_lat("a", p, design_us=15.0, peer="b")[0]
    assert (ok["fact"], ok["value"], ok["expected"], ok["ok"]) == ("ib_lat", 6.74, 15.0, True)
    assert perftest.check_ib_write_lat("a", p, design_us=5.0)[0]["ok"] is False
    cut = perftest.parse_ib_lat(real(LAT).split(" 2       1000")[0])
    assert cut["rows"] == [] and perftest.check_ib_write_lat("a", cut, design_us=15.0)[0]["ok"] is False
    with pytest.raises(Exception):
        perftest.parse_ib_lat("hello\n")


def test_rail_pairs_follow_the_bounded_cross_supernode_plan() -> None:
    topo = Topology(load_inventory(Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "demo-2sn.yaml"))
    plan = connectivity_plan(topo)
    rounds = rail_pair_rounds(plan)
    cross = [r for r in plan.rounds if r.phase == "scale_out"]
    assert sum(len(r) for r in rounds) == sum(len(r.pairs) for r in cross)  # one perftest per planned pair
    for rnd in rounds:
        ends = [(h, p.rail) for p in rnd for h in (p.client, p.server)]
        assert len(ends) == len(set(ends))  # no NIC twice in a round
        for p in rnd:
            assert topo.supernode_of_host(p.client) != topo.supernode_of_host(p.server)
            assert p.link == f"{p.client}/gpu{p.rail}<->{p.server}/gpu{p.rail}"


def test_tools_option_is_validated() -> None:
    pb = load_playbook_text("layers:\n  - connectivity: {tools: [ib_write_bw, nvbandwidth]}\n")
    assert pb.layers[0].options["tools"] == ("ib_write_bw", "nvbandwidth")
    with pytest.raises(ConfigError, match=r"tools\[0\]: 'iperf' is not one of ib_write_bw, ib_write_lat, nvbandwidth, transferbench"):
        load_playbook_text("layers:\n  - connectivity: {tools: [iperf]}\n")


def test_nic_rails_in_natural_order() -> None:
    text = real("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")
    rails = nic_rails(text)
    assert len(rails) == 12 and rails[0][0] == "mlx5_0"
    names = [n for n, _ in rails]
    assert names.index("mlx5_2") < names.index("mlx5_10")


def _install_perftest(host, replay: Path, tools: tuple[str, ...] = ("ib_write_bw", "ib_write_lat")) -> None:
    for tool in tools:
        install_fake_tool(host, tool, (
            f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} "
            f"{shlex.quote(str(replay))} {tool} \"$@\"\n"))


def _replay(host, cluster, slow: dict[str, str] | None = None) -> Path:
    d = host.directory / "perftest-replay"
    d.mkdir(parents=True, exist_ok=True)
    for side in ("client", "server"):
        (d / f"{side}.ib_write_bw.txt").write_text(real(HEALTHY_BW))
        (d / f"{side}.ib_write_lat.txt").write_text(real(LAT))
    for server, device in (slow or {}).items():  # this client's pair with `server` on `device` is slow
        (d / f"client.ib_write_bw.{cluster[server].address}.{device}.txt").write_text(real(SLOW_BW))
    return d


def _cluster(sshd_cluster, tmp_path: Path, design: str, cards: int = 2, slow_to: str = "n3"):
    """n1, n2 (sn0) and n3, n4 (sn1), fake ibstat/nvidia-smi/dcgmi; perftest everywhere,
    n2's last rail to ``slow_to`` slow, no ib_write_lat on n4; nvbandwidth but on n3."""
    cluster = sshd_cluster(4, ["n1", "n2", "n3", "n4"])
    for h in cluster:
        install_fake_tools(h, cards)  # ibstat: one HCA per card (mlx5_0, mlx5_1, ...) at 200 Gb/s
    _install_perftest(cluster["n1"], _replay(cluster["n1"], cluster))
    _install_perftest(cluster["n2"], _replay(cluster["n2"], cluster, slow={slow_to: f"mlx5_{cards - 1}"}))
    _install_perftest(cluster["n3"], _replay(cluster["n3"], cluster))
    _install_perftest(cluster["n4"], _replay(cluster["n4"], cluster), tools=("ib_write_bw",))  # no ib_write_lat
    for h in ("n1", "n2", "n4"):  # n3 has no nvbandwidth
        d = cluster[h].directory / "nvbw"
        d.mkdir()
        (d / "out.txt").write_text(real(NVBW))
        install_fake_tool(cluster[h], "nvbandwidth",
                          "#!/bin/sh\n"
                          "[ \"$*\" = '-t host_to_device_memcpy_ce device_to_host_memcpy_ce "
                          "device_to_device_memcpy_read_ce' ] || { echo \"unexpected: $*\" >&2; exit 2; }\n"
                          f"exec cat {shlex.quote(str(d / 'out.txt'))}\n")
    return cluster, _inventory(tmp_path, cluster, design, cards, "n[1-2]", "n[3-4]")


def _inventory(tmp_path: Path, cluster, design: str, cards: int, sn0: str, sn1: str) -> Path:
    """An SSH inventory of the sshd ``cluster``: two supernodes, hostlists ``sn0`` and ``sn1``."""
    inv = tmp_path / "inv.yaml"
    hosts = "\n".join(f"  {h.name}: {{address: {h.address}, port: {h.port}}}" for h in cluster)
    inv.write_text(f"name: scaleout-ssh\ndesign:\n{design}"
                   f"supernodes:\n  - {{name: sn0, hosts: \"{sn0}\", cards_per_host: {cards}}}\n"
                   f"  - {{name: sn1, hosts: \"{sn1}\", cards_per_host: {cards}}}\n"
                   f"backend: {{type: ssh, dist_backend: gloo}}\nhosts:\n{hosts}\n")
    return inv


def _scale_out_rows(cluster, topo: Topology, plan) -> tuple[list[dict], SshBackend]:
    """The rows of the SSH backend's scale-out tests over the sshd ``cluster``, and the
    (closed) backend, which keeps the raw outputs."""
    backend = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config),
                         command_timeout=30)
    rows: list[dict] = []
    try:
        assert backend.scale_out(plan, rows.append) is True
    finally:
        backend.close()
    return rows, backend


def test_scale_out_tests_over_real_ssh(sshd_cluster, tmp_path: Path) -> None:
    cluster, inv = _cluster(sshd_cluster, tmp_path, "  scale_up: {bandwidth: 270 GB/s, latency: 3 us}\n"
                                                    "  scale_out: {bandwidth: 400 Gb/s, latency: 15 us}\n")
    topo = Topology(load_inventory(inv))
    plan = connectivity_plan(topo, tools=("ib_write_bw", "ib_write_lat", "nvbandwidth"))
    rows, backend = _scale_out_rows(cluster, topo, plan)

    bw = [r for r in rows if r["kind"] == "host_fact" and r["fact"] == "ib_bw"]
    lat = [r for r in rows if r["kind"] == "host_fact" and r["fact"] == "ib_lat"]
    pairs = [p for rnd in rail_pair_rounds(plan) for p in rnd]
    assert len(pairs) == 8 and {r["entity"] for r in bw} == {p.link for p in pairs}  # every rail pair measured
    slow = [r for r in bw if not r["ok"]]
    assert [(r["entity"], r["entity_kind"], r["host"], r["value"], r["expected"]) for r in slow] == \
        [("n2/gpu1<->n3/gpu1", "link", "n2", 92.57, 200.0)]
    assert "n3 (rail 1: mlx5_1 -> mlx5_1)" in slow[0]["message"]
    assert all(r["value"] == pytest.approx(24056.72 * 8 * 2**20 / 1e9, abs=0.01) for r in bw if r["ok"])
    # ib_write_lat ran on every pair without n4 at either end; n4's missing tool is one not-run row
    assert {r["entity"] for r in lat} == {p.link for p in pairs if "n4" not in (p.client, p.server)}
    assert all(r["ok"] and r["value"] == 6.74 and r["expected"] == 15.0 for r in lat)
    missing = [r for r in rows if r["kind"] == "not_run"]
    assert sorted((r["entity"], r["status"]) for r in missing) == [("n3", "missing_tool"), ("n4", "missing_tool")]
    assert "ib_write_lat not found" in next(r["message"] for r in missing if r["entity"] == "n4")
    assert "nvbandwidth not found" in next(r["message"] for r in missing if r["entity"] == "n3")
    nv = {(r["host"], r["fact"]): r for r in rows if r["kind"] == "host_fact" and r["fact"].startswith("nvbandwidth")}
    assert set(nv) == {("n1", "nvbandwidth_d2d"), ("n2", "nvbandwidth_d2d"), ("n4", "nvbandwidth_d2d")}
    assert all(r["ok"] and r["value"] == 276.07 for r in nv.values())
    # the raw outputs are kept for the evidence bundles, on both ends of the pair
    kept = {(h, o["tool"]) for h, outs in backend._raw_outputs.items() for o in outs}
    assert {("n2", "ib_write_bw"), ("n3", "ib_write_bw"), ("n1", "nvbandwidth")} <= kept
    assert any(o["stdout"].count("92.57") for o in backend._raw_outputs["n2"] if o["tool"] == "ib_write_bw")

    # the shipped rules and the verdict's invariants judge the rows
    ctx = DetectContext(topo, topo.inventory.design)
    frame = pd.DataFrame(rows)
    rules = [r for r in load_rules("default").rules if r.op != "missing"]  # as LayerContext.detect does
    findings = merge_findings(evaluate(rules, frame, ctx) + status_findings(frame, ctx))
    named = sorted((f.entity, f.entity_kind, f.rule) for f in findings)
    assert named == [("n2/gpu1<->n3/gpu1", "link", "host-fact"),
                     ("n3", "host", "not-run-missing-tool"), ("n4", "host", "not-run-missing-tool")], named
    link = next(f for f in findings if f.entity_kind == "link")
    assert (link.evidence["measured"], link.evidence["expected"], link.evidence["fact"]) == (92.57, 200.0, "ib_bw")


def _sampled_cluster(sshd_cluster, tmp_path: Path, cards: int, bad: str, rail: int, design: str):
    """n[1-3] (sn0) and n[4-6] (sn1), ``cards`` rails, ib_write_bw everywhere; ``bad``'s
    NIC on ``rail`` is slow whoever its peer and whichever end runs the client."""
    names = [f"n{i}" for i in range(1, 7)]
    cluster = sshd_cluster(6, names)
    for h in cluster:
        install_fake_tools(h, cards)
        d = h.directory / "perftest-replay"
        d.mkdir(parents=True, exist_ok=True)
        for side in ("client", "server"):
            (d / f"{side}.ib_write_bw.txt").write_text(real(HEALTHY_BW))
            (d / f"{side}.ib_write_lat.txt").write_text(real(LAT))
        for peer in ([n for n in names if n != bad] if h.name == bad else [bad]):
            (d / f"client.ib_write_bw.{cluster[peer].address}.mlx5_{rail}.txt").write_text(real(SLOW_BW))
        _install_perftest(h, d, tools=("ib_write_bw",))
    return cluster, _inventory(tmp_path, cluster, design, cards, "n[1-3]", "n[4-6]")


@pytest.mark.parametrize("coverage", [2, "all"])
def test_a_slow_nic_sampled_in_two_pairs_is_named_by_both(sshd_cluster, tmp_path: Path, coverage) -> None:
    """n[1-3] (sn0) and n[4-6] (sn1), two rails: the plan has 18 rail pairs, each NIC
    meets 3 peers. By default (tools_coverage 2) 12 pairs run, each NIC meets 2 peers;
    ``all`` runs the 18. n5's rail-1 NIC is slow whoever its peer: both (or all three) of
    its pairs are slow links with n5/gpu1 as their common end, and each of its peers
    passes with its other peer."""
    bad, rail = "n5", 1
    cluster, inv = _sampled_cluster(sshd_cluster, tmp_path, 2, bad, rail,
                                    '  scale_up: {bandwidth: 270 GB/s, latency: 3 us}\n'
                                    '  scale_out: {bandwidth: 400 Gb/s, latency: 15 us}\n')
    topo = Topology(load_inventory(inv))
    options = load_playbook_text(f"layers:\n  - connectivity: {{tools: [ib_write_bw], tools_coverage: {coverage}}}\n"
                                 ).layers[0].options
    plan = connectivity_plan(topo, **options)
    rows, _ = _scale_out_rows(cluster, topo, plan)
    bw = [r for r in rows if r["kind"] == "host_fact" and r["fact"] == "ib_bw"]
    assert not [r for r in rows if r["kind"] == "not_run"]
    assert len(bw) == (12 if coverage == 2 else 18) and len({r["entity"] for r in bw}) == len(bw)
    met: dict[str, set[str]] = {}
    for r in bw:
        a, b = r["entity"].split("<->")
        met.setdefault(a, set()).add(b)
        met.setdefault(b, set()).add(a)
    assert len(met) == 12 and min(len(v) for v in met.values()) == (2 if coverage == 2 else 3)
    slow = sorted(r["entity"] for r in bw if not r["ok"])
    assert len(slow) == len(met[f"{bad}/gpu{rail}"]) >= 2  # every pair of the bad NIC, and only those
    assert set.intersection(*(set(e.split("<->")) for e in slow)) == {f"{bad}/gpu{rail}"}
    for peer in met[f"{bad}/gpu{rail}"]:  # its peers are exonerated by their other pairs
        assert any(r["ok"] and peer in r["entity"].split("<->") for r in bw), peer

    ctx = DetectContext(topo, topo.inventory.design)
    rules = [r for r in load_rules("default").rules if r.op != "missing"]
    frame = pd.DataFrame(rows)
    findings = merge_findings(evaluate(rules, frame, ctx) + status_findings(frame, ctx))
    assert sorted((f.entity, f.entity_kind, f.rule, f.evidence["measured"]) for f in findings) == \
        [(e, "link", "host-fact", 92.57) for e in slow]


def test_perftest_command_lines() -> None:
    assert perftest_argv("ib_write_bw", "mlx5_3", BASE_PORT + 3, "10.0.0.2") == [
        "ib_write_bw", "-d", "mlx5_3", "-p", "18518", "-s", "8388608", "-n", "5000", "-F", "--report_gbits",
        "10.0.0.2"]
    assert perftest_argv("ib_write_lat", "mlx5_0", BASE_PORT) == [
        "ib_write_lat", "-d", "mlx5_0", "-p", "18515", "-s", "2", "-n", "1000", "-F"]


def test_a_slow_rail_pair_fails_the_gate_and_is_isolated_after_its_retest(sshd_cluster, tmp_path: Path) -> None:
    """The whole chain through the CLI: the connectivity layer runs the tools after the torch
    probe, the rules name the slow rail pair, the retest runs that pair's ib_write_bw again
    (confirmed: the link is isolated), and its evidence holds the replayed tool output."""
    pytest.importorskip("torch")
    from click.testing import CliRunner
    from test_ssh_backend import install_python, rules_without_timing_peers

    from sncheck.cli.main import main

    # loopback gloo for the torch probe: design values any working pair meets
    # one card per host keeps the torch probe small (4 gloo ranks); the bounded plan then
    # pairs n1 with n3 and n2 with n4 across the supernodes
    cluster, inv = _cluster(sshd_cluster, tmp_path, '  scale_up: {bandwidth: "0.001 GB/s", latency: "100 ms"}\n'
                                                    '  scale_out: {bandwidth: "0.001 GB/s", latency: "100 ms"}\n',
                            cards=1, slow_to="n4")
    for h in cluster:
        install_python(h)
    playbook = tmp_path / "pb.yaml"
    playbook.write_text("name: scale-out\nlayers:\n  - connectivity: {bw_bytes: 64K, lat_iters: 5, bw_iters: 2, "
                        "tools: [ib_write_bw]}\ngate: critical\n")
    out = tmp_path / "run"
    # The torch probe's four gloo ranks on this machine's two cores do not time alike: with the
    # timing peer rules on, a pair of them read slow on a quiet machine (2 runs of 4) and, by
    # parsimony, the card at both slow pairs (n2/gpu0: its torch pair and this rail pair) took the
    # rail pair's finding. This test is the perftest chain's; the timing rules are tested on
    # deterministic data elsewhere (tests/test_ssh_backend.rules_without_timing_peers).
    result = CliRunner().invoke(main, ["run", str(playbook), "-i", str(inv), "--backend", "ssh",
                                       "--rules", str(rules_without_timing_peers(tmp_path / "rules.yaml")),
                                       "--known-hosts", str(cluster.known_hosts),
                                       "--ssh-config", str(cluster.ssh_config), "--out", str(out)])
    assert result.exit_code == 1, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["layers"][0]["summary"]["tools"] == ["ib_write_bw"]
    # each NIC has one peer in this plan: the default coverage (2) runs both rail pairs
    assert results["layers"][0]["summary"]["perftest"] == {
        "pairs": 2, "plan_pairs": 2, "rounds": 1, "plan_rounds": 1, "coverage": 2, "nics": 4, "min_peers": 1}
    said = ("2 of 2 rail pairs (1 of 1 rounds), each NIC against at least 1 distinct peers (tools_coverage 2)")
    assert results["layers"][0]["summary"]["perftest_plan"] == said
    assert said in (out / "report.html").read_text()  # the report's connectivity summary
    link = "n2/gpu0<->n4/gpu0"
    finding = next(f for f in results["findings"] if f["entity"] == link)
    # The pair's ib_write_bw is the link's finding, or folded into it when the torch probe's
    # loopback latency on a busy machine also put the pair above its one peer (seen in a full
    # suite: 5.3 s against 100 ms): either way the link, with the perftest figures.
    said_by = [finding, *finding["evidence"].get("related", [])]
    bw = next((f for f in said_by if f["rule"] == "host-fact"), None)
    assert finding["entity_kind"] == "link" and bw is not None, finding
    assert (bw["evidence"]["measured"], bw["evidence"]["expected"]) == (92.57, 200.0), finding
    # no other rail pair is named by its ib_write_bw
    assert not [f for f in results["findings"] if f.get("evidence", {}).get("fact") == "ib_bw" and f["entity"] != link]
    decisions = {d["entity"]: d["action"] for d in results["isolation"]}
    assert decisions.get(link) == "isolate", results["isolation"]
    retest = [r for r in read_rows(out) if r.get("confirms") == link and r["kind"] == "host_fact"]
    assert [(r["fact"], r["value"], r["ok"]) for r in retest] == [("ib_bw", 92.57, False)]
    # the evidence bundle is the culprit's (the link's), whether or not the ib_write_bw finding was folded into it
    files = [out / f for f in finding["evidence"]["files"]]
    assert files and all(f.exists() for f in files)
    assert any("92.57" in f.read_text() and "ib_write_bw" in f.read_text() for f in files if f.suffix == ".txt")


def test_a_rail_pair_finding_is_not_folded_into_a_weaker_symptom_at_its_end() -> None:
    from sncheck.model import Finding

    host = Finding("n2", "host", "connectivity", "p2p-bandwidth-card-slow", "warning", "host n2: bandwidth low",
                   {"measured": 0.9, "every_card": True})
    pair = Finding("n2/gpu0<->n3/gpu0", "link", "connectivity", "host-fact", "critical", "ib_write_bw slow",
                   {"measured": 92.57, "expected": 200.0, "fact": "ib_bw"})
    merged = merge_findings([host, pair])
    assert sorted(f.entity for f in merged) == ["n2", "n2/gpu0<->n3/gpu0"]
    # an equal or stronger culprit at the end still takes it as its symptom
    strong = Finding("n2", "host", "connectivity", "host-fact-hardware-fault", "critical", "ib port down",
                     {"fact": "ib_ports"})
    merged = merge_findings([strong, pair])
    assert [f.entity for f in merged] == ["n2"] and merged[0].evidence["related"][0]["rule"] == "host-fact"


def test_tools_asked_of_a_backend_without_nics_fail_the_gate(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sncheck.cli.main import main

    inv = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "demo-2sn.yaml"
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: t\nlayers:\n  - connectivity: {tools: [ib_write_bw, nvbandwidth]}\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(pb), "-i", str(inv), "--backend", "mock", "--out", str(out), "-q"])
    assert result.exit_code == 1, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["layers"][0]["summary"]["tools"].startswith("not run: the mock backend")
    assert sorted((f["entity"], f["rule"]) for f in results["findings"]) == [
        ("sn0", "not-run-missing-tool"), ("sn1", "not-run-missing-tool")]
