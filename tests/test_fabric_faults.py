"""The honest simulator, both ways (issue 29 item 5): the mock acts switch, one-way, latency-only
and size-gated faults out through the fabric's paths, and a fault that no planned
measurement can show is refused when the run resolves (exit 2, the fault plan's file:line)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.run.inputs import load_faults_text, load_inventory_text
from sncheck.config.playbook import single_layer
from sncheck.errors import ConfigError
from sncheck.probeplan import ConnectivityPlan, Group, Round, StressPlan
from sncheck.run.runner import Run, RunOptions
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent


def hgx_text(hosts: int, fabric: str = "") -> str:
    sns = "".join(f"  - {{name: h{i:02d}, hosts: h{i:02d}}}\n" for i in range(1, hosts + 1))
    return f"name: hgx\nplatform: nvidia-hgx\nsupernodes:\n{sns}{fabric}backend: {{type: mock}}\n"


HGX16 = Topology(load_inventory_text(hgx_text(16, "fabric: {scalable_unit: 8, spines: 2}\n"), "hgx.yaml"))


def mock(faults: str, topo: Topology = HGX16, seed: int = 0) -> MockBackend:
    return MockBackend(topo, load_faults_text("faults:\n" + faults, topo, "plan.yaml"), seed=seed)


def p2p(b: MockBackend, pairs: list[tuple[str, str]], bw_bytes: int = 64 << 20) -> pd.DataFrame:
    rows: list[dict] = []
    b.p2p(ConnectivityPlan(rounds=(Round(0, "scale_out", tuple(pairs)),), hosts=(), bw_bytes=bw_bytes), rows.append)
    return pd.DataFrame(rows).set_index("link")


RAIL3 = [(f"h{i:02d}/gpu3", f"h{j:02d}/gpu3") for i in range(1, 17) for j in range(i + 1, 17)]


def test_a_slow_leaf_slows_exactly_the_pairs_whose_path_crosses_it():
    rows = p2p(mock("  - {type: slow_switch, target: leaf:su0-rail3, factor: 0.5}\n"), RAIL3)
    fabric = HGX16.fabric
    through = np.array(["leaf:su0-rail3" in fabric.path(a, b).switches for a, b in RAIL3])
    ratio = rows["bw_GBps"].to_numpy() / 50.0
    assert through.sum() == 28 + 64 and np.allclose(ratio[through], 0.5, rtol=0.08)
    assert np.allclose(ratio[~through], 1.0, rtol=0.08)
    # another rail's pairs never cross the leaf
    other = p2p(mock("  - {type: slow_switch, target: leaf:su0-rail3, factor: 0.5}\n"), [("h01/gpu2", "h02/gpu2")])
    assert other["bw_GBps"].iloc[0] == pytest.approx(50, rel=0.08)


def test_a_dead_spine_fails_the_leaf_pairs_routed_through_it():
    fabric = HGX16.fabric
    spine = fabric.path("h01/gpu3", "h10/gpu3").switches[-1]   # the spine of rail 3's two leaves
    pairs = RAIL3 + [(f"h{i:02d}/gpu{r}", f"h{i + 8:02d}/gpu{r}") for i in (1, 2) for r in range(8)]
    rows = p2p(mock(f"  - {{type: dead_switch, target: '{spine}'}}\n"), pairs)
    via = np.array([fabric.path(a, b).switches[-1] == spine for a, b in pairs])
    assert via.sum() > 64 and (rows["status"].to_numpy()[via] == "timeout").all()
    assert (~via).sum() > 56 and (rows["status"].to_numpy()[~via] == "ok").all()   # same leaf, or the other spine


def test_a_port_down_fails_its_nic_or_its_uplink():
    rows = p2p(mock("  - {type: switch_port_down, target: 'leaf:su0-rail3[2]'}\n"), RAIL3)   # h02/nic3's cable
    touches = np.array(["h02/gpu3" in (a, b) for a, b in RAIL3])
    assert (rows["status"].to_numpy()[touches] == "timeout").all() and (rows["status"].to_numpy()[~touches] == "ok").all()
    fabric = HGX16.fabric
    uplink = fabric.cable_at("leaf:su0-rail3[9]")   # the leaf's first uplink
    rows = p2p(mock("  - {type: switch_port_down, target: 'leaf:su0-rail3[9]'}\n"), RAIL3)
    over = np.array([uplink in fabric.path(a, b).cables for a, b in RAIL3])
    assert over.any() and (rows["status"].to_numpy()[over] == "timeout").all()
    assert (rows["status"].to_numpy()[~over] == "ok").all()


def test_a_one_way_link_fault_slows_that_way_only():
    link = "h01/gpu3<->h02/gpu3"
    rows = p2p(mock(f"  - {{type: degraded_link, target: '{link}', factor: 0.3, direction: h02/gpu3->h01/gpu3}}\n"),
               [("h01/gpu3", "h02/gpu3")])
    r = rows.loc[link]
    assert r["bw_GBps"] == pytest.approx(50, rel=0.08) and r["bw_rev_GBps"] == pytest.approx(15, rel=0.08)
    assert r["bibw_GBps"] == pytest.approx(65, rel=0.08)
    dead = p2p(mock(f"  - {{type: dead_link, target: '{link}', direction: h01/gpu3->h02/gpu3}}\n"),
               [("h01/gpu3", "h02/gpu3")])
    assert dead.loc[link, "status"] == "timeout"   # a ping-pong needs both ways


def test_a_high_latency_link_keeps_its_bandwidth():
    link = "h01/gpu3<->h02/gpu3"
    rows = p2p(mock(f"  - {{type: high_latency_link, target: '{link}', factor: 4}}\n"),
               [("h01/gpu3", "h02/gpu3"), ("h01/gpu2", "h02/gpu2")])
    assert rows.loc[link, "lat_us"] / rows.loc["h01/gpu2<->h02/gpu2", "lat_us"] == pytest.approx(4, rel=0.1)
    assert rows.loc[link, "bw_GBps"] == pytest.approx(50, rel=0.08)


def test_a_fault_above_a_message_size_spares_the_smaller_messages():
    fault = "  - {type: slow_nic, target: h01, port: 4, factor: 0.5, above: 1M}\n"
    pair = [("h01/gpu3", "h02/gpu3")]
    assert p2p(mock(fault), pair)["bw_GBps"].iloc[0] == pytest.approx(25, rel=0.08)
    assert p2p(mock(fault), pair, bw_bytes=1 << 20)["bw_GBps"].iloc[0] == pytest.approx(50, rel=0.08)
    rows: list[dict] = []
    group = Group("g", "rail", ("h01/gpu3", "h02/gpu3"))
    mock(fault).collectives(StressPlan(groups=(group,), collectives=("all_reduce",), sizes=(1 << 20, 1 << 30)),
                            rows.append)
    plain: list[dict] = []
    mock("").collectives(StressPlan(groups=(group,), collectives=("all_reduce",), sizes=(1 << 20, 1 << 30)),
                         plain.append)
    t = {r["size_bytes"]: r["time_us"] for r in rows if r["kind"] == "collective"}
    t0 = {r["size_bytes"]: r["time_us"] for r in plain if r["kind"] == "collective"}
    assert t[1 << 20] == pytest.approx(t0[1 << 20], rel=0.1)          # at the threshold: untouched
    assert t[1 << 30] / t0[1 << 30] == pytest.approx(2, rel=0.1)      # above it: half the bandwidth


@pytest.mark.parametrize("fault, message", [
    ("{type: slow_switch, target: leaf:nope}", "slow_switch target 'leaf:nope' is not a switch leaf:<name> or "
                                               "spine:<name> of this inventory's fabric (its switches: leaf:su0-rail0"),
    ("{type: slow_switch, target: 'leaf:su0-rail3[2]'}", "is not a switch leaf:<name>"),
    ("{type: switch_port_down, target: leaf:su0-rail3}", "is not a cabled switch port"),
    ("{type: switch_port_down, target: 'leaf:su0-rail3[12]'}", "is not a cabled switch port"),
    ("{type: slow_switch, target: leaf:su0-rail3, factor: 1.5}", "faults[0].factor: must be a number above 0 and below 1, got 1.5"),
    ("{type: degraded_link, target: 'h01/gpu3<->h02/gpu3', direction: h01/gpu3->h03/gpu3}",
     "direction 'h01/gpu3->h03/gpu3' must run between the link's two cards"),
    ("{type: degraded_link, target: 'h01/gpu3<->h02/gpu3', direction: h01/gpu3}", "direction: 'h01/gpu3' must be 'a->b'"),
    ("{type: degraded_link, target: 'h01/gpu3<->h02/gpu3', above: 3 parsecs}", "above: unknown size unit"),
    ("{type: dead_switch, target: leaf:su0-rail3, above: 1M}", "faults[0].above: unknown key 'above' in a dead_switch fault"),
    ("{type: degraded_link, target: 'h01/nic3<->leaf:su0-rail3[1]'}", "is not a link of this inventory"),
])
def test_bad_new_faults_are_refused_with_file_and_line(fault, message):
    with pytest.raises(ConfigError) as e:
        load_faults_text(f"faults:\n  - {fault}\n", HGX16, "plan.yaml")
    assert e.value.where == "plan.yaml:2" and message in str(e.value), str(e.value)


# -- refused: no planned measurement can show the fault ------------------------------

def run_cli(tmp_path: Path, inventory: str, faults: str, playbook: str = "pre-upgrade-gate"):
    inv = tmp_path / "inv.yaml"
    inv.write_text(inventory)
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + faults)
    return CliRunner().invoke(main, ["run", playbook, "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                     "--out", str(tmp_path / "run")])


def test_a_slow_nic_on_a_single_nvl72_rack_is_refused(tmp_path):
    rack = (ROOT / "fixtures/inventories/nvl72-rack.yaml").read_text()
    result = run_cli(tmp_path, rack, "  - {type: slow_nic, target: tray03, port: 2, factor: 0.5}\n")
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'faults.yaml'}:2: slow_nic tray03: no planned measurement can show it: inventory " \
           f"nvl72-rack has one supernode, so no pair crosses the scale-out tier" in result.output, result.output
    assert not (tmp_path / "run").exists()


def test_a_cross_rail_link_between_two_hgx_hosts_is_refused(tmp_path):
    result = run_cli(tmp_path, hgx_text(2), "  - {type: corrupt_card, target: h01/gpu1}\n"
                                            "  - {type: degraded_link, target: 'h01/gpu0<->h02/gpu3', factor: 0.4}\n")
    assert result.exit_code == 2, result.output
    assert "faults.yaml:3: degraded_link h01/gpu0<->h02/gpu3: no planned measurement can show it: the plan never " \
           "measures this pair: across supernodes it pairs card k with card k of other hosts (rail-aligned), and " \
           "h01/gpu0 and h02/gpu3 are on rails 0 and 3" in result.output, result.output


def resolve(inventory: str, faults: str, layer: str = "connectivity", options: dict | None = None,
            tmp_path: Path | None = None) -> None:
    assert tmp_path is not None
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + faults)
    with Run(single_layer(layer, options or {}), load_inventory_text(inventory, "inv.yaml"),
             RunOptions(backend="mock", faults=str(plan), out=str(tmp_path / "run"))):
        pass


def test_what_a_planned_measurement_shows_is_accepted(tmp_path):
    two = hgx_text(2)
    resolve(two, "  - {type: degraded_link, target: 'h01/gpu3<->h02/gpu3', factor: 0.4}\n", tmp_path=tmp_path)
    resolve(two, "  - {type: slow_switch, target: leaf:su0-rail3, factor: 0.5}\n", tmp_path=tmp_path)
    # a host port's cable down: h02/nic3 meets h01/gpu3 and h03/gpu3 (two hosts alone: one
    # partner, refused as its slow NIC is: tests/test_review29.py)
    resolve(hgx_text(3), "  - {type: switch_port_down, target: 'leaf:su0-rail3[2]'}\n", tmp_path=tmp_path)
    # two racks have a scale-out tier: the same slow NIC shows
    racks = "name: two\nplatform: nvidia-nvl72\nsupernodes:\n  - {name: r0, hosts: 'a[01-02]'}\n" \
            "  - {name: r1, hosts: 'b[01-02]'}\n"
    resolve(racks, "  - {type: slow_nic, target: a01, port: 2, factor: 0.5}\n", tmp_path=tmp_path)


def test_a_fault_every_layer_misses_is_refused_and_one_layer_commands_do_not_narrow_it(tmp_path):
    two = hgx_text(2)
    # every message across the two hosts is at most 1 GiB (the stress sweep's largest)
    with pytest.raises(ConfigError, match=r"no planned measurement through it moves a message over 2147483648 "
                                          r"bytes \(the largest: 1073741824\)"):
        resolve(two, "  - {type: degraded_link, target: 'h01/gpu0<->h02/gpu0', factor: 0.4, above: 2G}\n",
                tmp_path=tmp_path)
    # above 128 MiB: connectivity's 64 MiB misses it, the stress sweep's cross group of its rail shows it, on
    # rail 3 as on rail 0 (one cross group a rail since reviews19 #2: rail 3 was refused, no group crossed it)
    for k in (0, 3):
        resolve(two, f"  - {{type: degraded_link, target: 'h01/gpu{k}<->h02/gpu{k}', factor: 0.4, above: 128M}}\n",
                tmp_path=tmp_path)
    # a playbook's own options narrow its layer: a stress sweep that stops at 64 MiB
    with pytest.raises(ConfigError, match=r"over 134217728 bytes"):
        resolve(two, "  - {type: degraded_link, target: 'h01/gpu0<->h02/gpu0', factor: 0.4, above: 128M}\n",
                "stress", {"max_bytes": 64 << 20}, tmp_path=tmp_path)
    # a one-layer command and a --targets scope choose where to look; the cluster still has the leaf
    resolve(two, "  - {type: slow_switch, target: leaf:su0-rail3}\n", "golden", tmp_path=tmp_path)
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n  - {type: slow_switch, target: leaf:su0-rail3}\n")
    with Run(single_layer("connectivity"), load_inventory_text(two, "inv.yaml"),
             RunOptions(backend="mock", faults=str(plan), targets=("h01/gpu0",), out=str(tmp_path / "r"))):
        pass


# -- the switch examples, for the explanation search (issue 29 item 3) -------

FIXTURES = ROOT / "fixtures"


def _plan_rows(inventory: str, faults: str) -> tuple[Topology, pd.DataFrame]:
    from sncheck.run.inputs import load_faults
    from sncheck.run.inputs import load_inventory
    from sncheck.probeplan import connectivity_plan

    topo = Topology(load_inventory(FIXTURES / "inventories" / f"{inventory}.yaml"))
    b = MockBackend(topo, load_faults(FIXTURES / "faults" / f"{faults}.yaml", topo), seed=3)
    rows: list[dict] = []
    b.p2p(connectivity_plan(topo), rows.append)
    return topo, pd.DataFrame([r for r in rows if r.get("kind", "p2p") == "p2p"])


def test_a_rail3_leaf_at_half_under_8_hgx_hosts_slows_exactly_its_pairs():
    topo, rows = _plan_rows("hgx-2su", "hgx-slow-leaf")
    out = rows[rows["tier"] == "scale_out"]
    through = np.array(["leaf:su0-rail3" in topo.fabric.path(a, b).switches for a, b in zip(out["src"], out["dst"])])
    ratio = out["bw_GBps"].to_numpy() / 50.0
    assert through.sum() == 8 * 15 - 28 and np.allclose(ratio[through], 0.5, rtol=0.08)   # rail 3 of hgx01-08
    assert np.allclose(ratio[~through], 1.0, rtol=0.08)
    # the 8 NICs it serves are one switch for the explainer: the fabric says so
    cover = topo.fabric.covering_switches([f"hgx{i:02d}/nic3" for i in range(1, 9)])[0]
    assert cover.switch == "leaf:su0-rail3" and cover.others == 0


def test_a_dead_rail_leaf_under_9_nvl72_trays_fails_their_scale_out_pairs_only():
    topo, rows = _plan_rows("nvl72-2rack", "nvl72-dead-leaf")
    under = {f"r0tray{i:02d}/gpu2" for i in range(1, 10)}
    touches = rows["src"].isin(under) | rows["dst"].isin(under)
    out = rows["tier"] == "scale_out"
    assert (rows.loc[touches & out, "status"] == "timeout").all() and (touches & out).sum() == 9 * 18
    assert (rows.loc[~(touches & out), "status"] == "ok").all()      # NVLink inside the rack untouched
    assert topo.fabric.hosts_of("leaf:su0-rail2") == tuple(f"r0tray{i:02d}" for i in range(1, 10))
