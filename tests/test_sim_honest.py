"""An honest simulator: every fault type x platform pair is acted out in the rendered tool
output, for every target, or refused when the fault plan loads (exit 2, file:line)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.config.faultplan import FAULT_TYPES, HOST_TOOL_FAULTS
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.errors import ConfigError
from sncheck.topology import Topology
from sncheck.vendors import sim
from sncheck.vendors.sim import fault_table
from sncheck.vendors.amd import rocm_smi
from sncheck.vendors.amd import sim as amd_sim

ROOT = Path(__file__).resolve().parent.parent
INV = ROOT / "fixtures" / "inventories"
# one inventory per column of the README's table, and a host and card of it
PLATFORMS = {"demo-2sn": ("node003", None), "nvl72-rack": ("tray04", "nvidia-nvl72"),
             "mi300x-pod": ("mi03", "amd-mi300x"), "cm384": ("cm005", "ascend-cm384")}
PARAMS = {"missing_tool": ", tool: ibstat", "ib_port_down": ", port: 2"}


def _plan(inventory: str, ftype: str):
    topo = Topology(load_inventory(INV / f"{inventory}.yaml"))
    host, _ = PLATFORMS[inventory]
    target = host if FAULT_TYPES[ftype].target == "host" else f"{host}/gpu1"
    return topo, load_faults_text(f"faults:\n  - {{type: {ftype}, target: {target}{PARAMS.get(ftype, '')}}}\n",
                                  topo, "plan.yaml")


@pytest.mark.parametrize("inventory", sorted(PLATFORMS))
@pytest.mark.parametrize("ftype", HOST_TOOL_FAULTS)
def test_every_tool_fault_is_acted_out_or_refused_on_every_platform(inventory, ftype):
    host, platform = PLATFORMS[inventory]
    try:
        topo, plan = _plan(inventory, ftype)
    except ConfigError as e:  # refused: says which fault, which platform, where
        assert str(e).startswith("plan.yaml:2: ") and ftype in str(e) and (platform or "no platform") in str(e)
        assert ftype not in sim.acted_out(platform) or ftype == "missing_tool"
        return
    assert ftype in sim.acted_out(platform)
    clean = MockBackend(topo, load_faults_text("faults: []", topo))
    hurt = MockBackend(topo, plan)
    rows_clean: list[dict] = []
    rows_hurt: list[dict] = []
    clean.host_facts((host,), rows_clean.append)
    hurt.host_facts((host,), rows_hurt.append)
    assert not [r for r in rows_clean if not r["ok"]]
    bad = [r for r in rows_hurt if not r["ok"]]
    assert bad, f"{ftype} on {platform}: no fact failed, the fault was dropped"
    device = {"xgmi_link_down": f"{host}/gpu0<->{host}/gpu1", "hccn_link_down": f"{host}/nic1"}
    if FAULT_TYPES[ftype].target == "card":  # the card's own device, never its host
        assert {r.get("entity") for r in bad} == {device.get(ftype, f"{host}/gpu1")}, [r["message"] for r in bad]


def test_ecc_on_an_nvl72_tray_is_acted_out_and_an_npu_fault_there_is_refused(tmp_path):
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {type: ecc_uncorrectable, target: tray02/gpu3, count: 2}\n"
                      "  - {type: npu_alarm, target: tray02/gpu1}\n")
    r = CliRunner().invoke(main, ["connectivity", "-i", str(INV / "nvl72-rack.yaml"), "--backend", "mock",
                                  "--faults", str(faults), "--out", str(tmp_path / "run"), "-q"])
    assert r.exit_code == 2, r.output
    assert f"{faults}:3: npu_alarm cannot be acted out on nvidia-nvl72" in r.output
    assert "Traceback" not in r.output
    topo = Topology(load_inventory(INV / "nvl72-rack.yaml"))
    rows: list[dict] = []
    plan = load_faults_text("faults:\n  - {type: ecc_uncorrectable, target: tray02/gpu3, count: 2}\n", topo)
    MockBackend(topo, plan).host_facts(("tray02",), rows.append)
    bad = {(r.get("entity"), r["fact"]) for r in rows if not r["ok"]}
    assert bad == {("tray02/gpu3", "ecc")}


def test_every_target_of_a_tray_is_acted_out():
    topo = Topology(load_inventory(INV / "nvl72-rack.yaml"))
    for gpus in ((0, 3), (1, 3), (0, 1, 2, 3), (2,)):
        text = "".join(f"  - {{type: fabric_degraded, target: tray05/gpu{g}}}\n" for g in gpus)
        rows: list[dict] = []
        MockBackend(topo, load_faults_text("faults:\n" + text, topo)).host_facts(("tray05",), rows.append)
        named = sorted(r["entity"] for r in rows if r["fact"] == "fabric_health" and not r["ok"])
        assert named == [f"tray05/gpu{g}" for g in gpus]


def test_a_card_the_platforms_output_does_not_list_is_refused():
    topo = Topology(load_inventory_text_cards(5))
    with pytest.raises(ConfigError, match=r"plan.yaml:2: fabric_degraded on card 4 cannot be acted out on "
                                          r"nvidia-nvl72: its tool output lists 4 cards"):
        load_faults_text("faults:\n  - {type: fabric_degraded, target: t01/gpu4}\n", topo, "plan.yaml")


def load_inventory_text_cards(cards: int):
    from sncheck.run.inputs import load_inventory_text

    return load_inventory_text("platform: nvidia-nvl72\nsupernodes:\n"
                               f"  - {{name: r0, hosts: 't[01-02]', cards_per_host: {cards}}}\n")


def test_readme_table_is_the_simulators_own():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- fault-table: [^>]*-->\n(.*?)<!-- /fault-table -->", readme, re.S)
    assert m, "README has no fault-table section"
    assert m.group(1) == fault_table()


def test_rocm_smi_showtopo_keeps_its_header_when_gpu0_is_involved():
    text = amd_sim.showtopo([(0, 1)])
    for table in ("Weight", "Hops", "Link Type"):
        header = text.split(f"{table} between two GPUs")[1].splitlines()[1]
        assert header.split() == [f"GPU{i}" for i in range(8)], header
    parsed = rocm_smi.parse_showtopo(text)
    assert parsed["errors"] == [] and parsed["gpus"] == [f"GPU{i}" for i in range(8)]
    assert parsed["link_type"]["GPU0"]["GPU1"] == "PCIE" and parsed["hops"]["GPU1"]["GPU0"] == 3
    assert parsed["link_type"]["GPU0"]["GPU2"] == "XGMI"


@pytest.mark.parametrize("inventory", sorted(p.stem for p in INV.glob("*.yaml")))
def test_clean_hosts_of_every_shipped_inventory_fail_no_fact(inventory):
    topo = Topology(load_inventory(INV / f"{inventory}.yaml"))
    rows: list[dict] = []
    MockBackend(topo, load_faults_text("faults: []", topo)).host_facts(tuple(topo.inventory.hosts), rows.append)
    assert {r["host"] for r in rows} == set(topo.inventory.hosts)
    assert [r["message"] for r in rows if not r["ok"] and r["status"] != "skipped"] == []
