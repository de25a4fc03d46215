"""The fabric read from a real InfiniBand subnet (issue 29 item 1): ibsim serves a 2-leaf,
1-spine fabric of 8 hosts (2 rails each), the real opensm assigns LIDs, and ``sncheck fabric``
runs the real ibnetdiscover and perfquery against it (tests/ibsim_harness.py). One NIC is
miscabled; one switch port's error counter grows between two checks."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory_text
from sncheck.fabric import Fabric
from sncheck.vendors.parsers import parse_text

import ibsim_harness
from ibsim_harness import IbSim, net_file

INVENTORY = """name: ib8
design:
  scale_up:  {bandwidth: 450 GB/s, latency: 3 us}
  scale_out: {bandwidth: 400 Gb/s, latency: 15 us}
supernodes:
  - {name: a, hosts: 'h[01-04]', cards_per_host: 2}
  - {name: b, hosts: 'h[05-08]', cards_per_host: 2}
fabric:
  spines: [spine0]
"""
MOVED = "h05/nic1"        # plugged into the last free port of its leaf instead of its own
COUNTED = ("su0-rail0", 3)  # the switch port whose SymbolErrorCounter grows: h03/nic0's cable


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    """The declared fabric and a subnet cabled as declared but for one NIC."""
    missing = ibsim_harness.available()
    assert missing is None, missing   # never a skip: scripts/setup.sh installs them
    declared = Fabric(load_inventory_text(INVENTORY, "ib8.yaml")).declared_cabling()
    leaf, _ = declared.nics[MOVED]
    cabled = replace(declared, nics={**declared.nics, MOVED: (leaf, 12)})
    work = tmp_path_factory.mktemp("ibsim")
    (work / "inv.yaml").write_text(INVENTORY)
    with IbSim(work / "sim", net_file(cabled)) as sim:
        yield sim, work


def cli(sim: IbSim, monkeypatch, *args: str):
    for k, v in sim.tool_env.items():  # the tools sncheck starts attach to this subnet
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(sim.dir)
    return CliRunner().invoke(main, list(args))


def test_ibnetdiscover_and_iblinkinfo_of_the_subnet_parse_whole(fabric):
    sim, _ = fabric
    topo = parse_text("ibnetdiscover", sim.run(["ibnetdiscover"]).stdout)
    assert topo["errors"] == []
    switches = {n["desc"]: n for n in topo["nodes"] if n["type"] == "switch"}
    assert sorted(switches) == ["spine0", "su0-rail0", "su0-rail1"] and all(n["lid"] for n in switches.values())
    cas = [n for n in topo["nodes"] if n["type"] == "ca"]
    assert len(cas) == 16 and {n["desc"] for n in cas} == {f"h0{h} mlx5_{r}" for h in range(1, 9) for r in (0, 1)}
    leaf = switches["su0-rail1"]
    assert {x["port"]: x["remote_desc"] for x in leaf["links"]}[12] == "h05 mlx5_1"
    assert {(x["port"], x["remote_desc"], x["remote_port"]) for x in switches["spine0"]["links"]} == \
        {(1, "su0-rail0", 9), (2, "su0-rail1", 9)}
    links = parse_text("iblinkinfo", sim.run(["iblinkinfo"]).stdout)
    assert links["errors"] == []
    up = {(p["node"], p["port"]): p for p in links["ports"]}
    assert up[("su0-rail1", 12)]["state"] == "Active" and up[("su0-rail1", 12)]["remote"]["desc"] == "h05 mlx5_1"
    assert up[("su0-rail1", 5)]["state"] == "Down" and up[("su0-rail1", 5)]["remote"] is None
    # a cut topology is never read as the fabric: the far end of a link has no record
    text = sim.run(["ibnetdiscover"]).stdout
    cut = parse_text("ibnetdiscover", text[: text.rindex("\nvendid=")])
    assert any("has no record" in e or "does not list it back" in e for e in cut["errors"])


def test_the_miscabled_port_is_the_one_cabling_finding(fabric, monkeypatch):
    sim, work = fabric
    result = cli(sim, monkeypatch, "fabric", "check", "-i", str(work / "inv.yaml"), "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert [(f["entity"], f["rule"]) for f in out["findings"]] == [("h05/nic1<->leaf:su0-rail1[5]", "cabling")]
    assert "found on leaf:su0-rail1[12], declared on leaf:su0-rail1[5]; nothing is on leaf:su0-rail1[5]" in \
        out["findings"][0]["message"]
    assert out["summary"] == {"nics_found": 16, "nics_declared": 16, "uplinks_found": 2, "strays": 0}


def test_a_switch_port_whose_error_counters_grow_is_named(fabric, monkeypatch):
    sim, work = fabric
    before = work / "before.json"
    first = cli(sim, monkeypatch, "fabric", "check", "-i", str(work / "inv.yaml"), "--save", str(before))
    assert first.exit_code == 1 and before.is_file(), first.output
    assert json.loads(before.read_text())["ports"]["leaf:su0-rail0[3]"]["symbol_error"] == 0
    sim.set_counter(*COUNTED, "SymbolErrorCounter", 12)   # during the run
    sim.set_counter("spine0", 2, "LinkDownedCounter", 1)
    after = cli(sim, monkeypatch, "fabric", "check", "-i", str(work / "inv.yaml"), "--since", str(before), "--json")
    assert after.exit_code == 1, after.output
    grew = {f["entity"]: f for f in json.loads(after.stdout)["findings"] if f["rule"] == "switch-port-counter-growth"}
    assert sorted(grew) == ["h03/nic0<->leaf:su0-rail0[3]", "leaf:su0-rail1[9]<->spine:spine0[2]"]
    port = grew["h03/nic0<->leaf:su0-rail0[3]"]
    assert port["evidence"]["switch_port"] == "leaf:su0-rail0[3]"
    assert port["evidence"]["counters"] == {"symbol_error": {"before": 0, "after": 12, "growth": 12}}
    assert "switch port leaf:su0-rail0[3] (h03/nic0<->leaf:su0-rail0[3])" in port["message"]


def test_parse_perfquery_since_judges_the_growth_fabric_check_finds(fabric, monkeypatch, tmp_path):
    """One judgement (issue 28): the real perfquery's read of a switch before and after a link
    went down, given to ``sncheck parse perfquery --since``, fails on the growth that ``fabric
    check --since`` names at that port; alone, the after read (a count above zero) is info, exit 0
    (it exited 1 on any error counter above zero)."""
    from sncheck.vendors.infiniband.discovery import counter_commands, parse_topology  # noqa: PLC0415

    sim, work = fabric
    argv = dict(counter_commands(parse_topology(sim.run(["ibnetdiscover"]).stdout)))["leaf:su0-rail1"]
    saved, before, after = work / "pq-before.json", tmp_path / "before.txt", tmp_path / "after.txt"
    assert cli(sim, monkeypatch, "fabric", "check", "-i", str(work / "inv.yaml"), "--save", str(saved)).exit_code == 1
    before.write_text(sim.run(list(argv)).stdout)
    sim.set_counter("su0-rail1", 5, "LinkDownedCounter", 3)
    after.write_text(sim.run(list(argv)).stdout)
    checked = cli(sim, monkeypatch, "fabric", "check", "-i", str(work / "inv.yaml"), "--since", str(saved), "--json")
    grew = [f["evidence"]["counters"] for f in json.loads(checked.stdout)["findings"]
            if f["rule"] == "switch-port-counter-growth" and f["evidence"]["switch_port"] == "leaf:su0-rail1[5]"]
    assert checked.exit_code == 1 and grew == [{"link_downed": {"before": 0, "after": 3, "growth": 3}}], checked.output
    parsed = CliRunner().invoke(main, ["parse", "perfquery", str(after), "--since", str(before)])
    assert parsed.exit_code == 1 and "port 5 link_downed +3 (0 -> 3)" in parsed.output, parsed.output
    alone = CliRunner().invoke(main, ["parse", "perfquery", str(after)])
    assert alone.exit_code == 0 and '"severity": "info"' in alone.stdout, alone.output


def test_discover_writes_the_fabric_as_an_inventory_block_that_loads_back(fabric, monkeypatch):
    sim, _ = fabric
    result = cli(sim, monkeypatch, "fabric", "discover")
    assert result.exit_code == 0, result.output
    block = yaml.safe_load(result.stdout)
    leaves = {x["name"]: x["ports"] for x in block["fabric"]["leaves"]}
    assert leaves["su0-rail1"]["h05/nic1"] == 12 and leaves["su0-rail0"]["h03/nic0"] == 3
    assert block["fabric"]["spines"] == [{"name": "spine0", "leaves": ["su0-rail0", "su0-rail1"]}]
    found = Fabric(load_inventory_text(INVENTORY.split("fabric:")[0] + yaml.safe_dump(block), "found.yaml"))
    assert found.cable_of("h05/nic1") == "h05/nic1<->leaf:su0-rail1[12]"
    # uplinks in the grammar's own numbering: after each leaf's highest host port (12 on rail 1 now)
    assert found.declared_cabling().uplinks == {("su0-rail0", 9): ("spine0", 1), ("su0-rail1", 13): ("spine0", 2)}


def test_no_tool_and_a_cut_topology_are_never_a_pass(tmp_path, monkeypatch):
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY)
    monkeypatch.setenv("PATH", str(tmp_path))  # no infiniband-diags here
    result = CliRunner().invoke(main, ["fabric", "check", "-i", str(inv)])
    assert result.exit_code == 3 and "ibnetdiscover not found on this machine" in result.output, result.output
    cut = tmp_path / "cut.txt"
    cut.write_text('#\n# Topology file: generated on x\n#\nvendid=0x0\nswitchguid=0x1(1)\n'
                   'Switch\t12 "S-0000000000000001"\t\t# "su0-rail0" base port 0 lid 1 lmc 0\n'
                   '[1]\t"H-0000000000000002"[1](3) \t\t# "h01 mlx5_0" lid 2 4xSDR\n')
    result = CliRunner().invoke(main, ["fabric", "check", "-i", str(inv), "--topology", str(cut)])
    assert result.exit_code == 3 and "does not read whole" in result.output and "has no record" in result.output
