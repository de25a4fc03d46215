"""Platforms and the shipped platform inventories: inventory check and a mock connectivity run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory, load_inventory_text
from sncheck.vendors import registry

INV = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"


def test_registry_lists_vendors_and_platforms_without_import_side_effects() -> None:
    assert set(registry.vendors()) >= {"nvidia", "amd", "ascend"}
    assert set(registry.platforms()) >= {"nvidia-nvl72", "nvidia-hgx", "amd-mi300x", "ascend-cm384"}
    for v in registry.vendors().values():
        for p in v.platforms.values():
            assert p.vendor == v.name and set(p.checks) <= set(v.commands)
    assert registry.vendors()["ascend"].dist_backend == "hccl" and registry.vendors()["ascend"].torch_device == "npu"
    with pytest.raises(ConfigError, match="unknown platform 'nvidia-nvl36'"):
        registry.platform("nvidia-nvl36")


@pytest.mark.parametrize("name, hosts, cards, platform, scale_up", [
    ("nvl72-rack", 18, 72, "nvidia-nvl72", 900.0),
    ("cm384", 48, 768, "ascend-cm384", 196.0),
    ("mi300x-pod", 8, 64, "amd-mi300x", 64.0),
])
def test_shipped_inventories(name: str, hosts: int, cards: int, platform: str, scale_up: float) -> None:
    inv = load_inventory(INV / f"{name}.yaml")
    assert (len(inv.hosts), inv.card_count) == (hosts, cards)
    assert {inv.platform_of(h).name for h in inv.hosts} == {platform}
    assert inv.design_for("scale_up").bandwidth_GBps == scale_up
    r = CliRunner().invoke(main, ["inventory", "check", str(INV / f"{name}.yaml")])
    assert r.exit_code == 0 and f"platform {platform}" in r.output


@pytest.mark.parametrize("name", ["nvl72-rack", "mi300x-pod"])
def test_shipped_inventories_run_mock_connectivity(name: str, tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["connectivity", "-i", str(INV / f"{name}.yaml"), "--backend", "mock",
                                  "--out", str(tmp_path / "run"), "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["verdict"] == "pass"


def test_inventory_platform_rules() -> None:
    inv = load_inventory_text("platform: nvidia-hgx\ndesign:\n  scale_up: {bandwidth: 400 GB/s, latency: 2 us}\n"
                              "supernodes:\n  - {name: a, hosts: h1}\n  - {name: a2, hosts: h2}\n  - {name: b, hosts: h3, "
                              "platform: amd-mi300x, cards_per_host: 4}\n")
    assert inv.design_for("scale_up").bandwidth_GBps == 400.0       # the inventory's design wins
    assert inv.design_for("scale_out").bandwidth_GBps == 50.0       # the platform fills the rest
    assert inv.hosts["h1"].cards == 8 and inv.hosts["h3"].cards == 4
    assert inv.platform_of("h3").name == "amd-mi300x" and inv.platform_of("h1").name == "nvidia-hgx"
    with pytest.raises(ConfigError, match="<inventory>:1: platform: unknown platform 'gb300'; choose one of: amd-mi300x"):
        load_inventory_text("platform: gb300\nsupernodes:\n  - {name: a, hosts: h1}\n")
    with pytest.raises(ConfigError, match="needs cards_per_host"):
        load_inventory_text("supernodes:\n  - {name: a, hosts: h1}\n")
    with pytest.raises(ConfigError, match="19 hosts; one nvidia-nvl72 scale-up domain has at most 18"):
        load_inventory_text("platform: nvidia-nvl72\nsupernodes:\n  - {name: a, hosts: 't[01-19]'}\n")
    with pytest.raises(ConfigError, match="list each host as its own supernode"):
        load_inventory_text("platform: amd-mi300x\nsupernodes:\n  - {name: a, hosts: 'm[1-2]'}\n")


def _mock_findings(inventory: str, faults: str, tmp_path: Path) -> dict[str, list[dict]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    faults_file = tmp_path / "faults.yaml"
    faults_file.write_text(faults)
    r = CliRunner().invoke(main, ["connectivity", "-i", str(INV / f"{inventory}.yaml"), "--backend", "mock",
                                  "--faults", str(faults_file), "--seed", "1", "--out", str(tmp_path / "run"), "-q"])
    assert r.exit_code == 1, r.output
    out: dict[str, list[dict]] = {}
    for f in json.loads((tmp_path / "run" / "results.json").read_text())["findings"]:
        out.setdefault(f["entity"], []).append(f)
    return out


def _text(findings: list[dict]) -> str:
    return " ".join([f["message"] for f in findings]
                    + [r["message"] for f in findings for r in f["evidence"].get("related", [])])


def test_mock_acts_out_nvl72_platform_faults_in_real_tool_output(tmp_path: Path) -> None:
    found = _mock_findings("nvl72-rack", (INV.parent / "faults" / "platform-nvl72.yaml").read_text(), tmp_path)
    # tray-wide causes name the tray; a GPU's Limited Capacity names that GPU
    assert set(found) == {"tray03", "tray05/gpu1", "tray07"}, {k: _text(v) for k, v in found.items()}
    assert "State In Progress, Status N/A" in _text(found["tray03"])
    assert "Bandwidth Limited Capacity" in _text(found["tray05/gpu1"])
    assert "clique split in rack0" in _text(found["tray07"]) and "CliqueId 3): tray07 (1 trays, 4 GPUs)" in \
        _text(found["tray07"])


def test_mock_imex_down_is_narrowed_to_the_down_tray(tmp_path: Path) -> None:
    found = _mock_findings("nvl72-rack", "faults:\n  - {type: imex_down, target: tray09}\n", tmp_path)
    # Every tray's nvidia-imex-ctl -N shows node #8 UNAVAILABLE; the rack-wide step names
    # the tray that is node #8 (the rack's hosts in IMEX node order): tray09 alone.
    assert set(found) == {"tray09"}, {k: _text(v) for k, v in found.items()}
    assert "IMEX node #8 172.31.52.239 is UNAVAILABLE in 18 of 18 trays" in _text(found["tray09"])
    assert "by IMEX node order, no host has that address" in _text(found["tray09"])


def test_mock_acts_out_amd_and_ascend_platform_faults(tmp_path: Path) -> None:
    amd = _mock_findings("mi300x-pod", "faults:\n  - {type: xgmi_link_down, target: mi02/gpu3}\n", tmp_path / "a")
    link = "mi02/gpu2<->mi02/gpu3"  # the XGMI link itself, both cards healthy elsewhere
    assert set(amd) == {link} and "GPU2-GPU3 PCIE (hops 3, weight 52)" in _text(amd[link])


def test_mock_host_facts_act_out_ascend_platform_faults_on_cm384() -> None:
    # The host-facts step of the mock alone (a whole cm384 connectivity run takes minutes).
    import pandas as pd

    from sncheck.backends.mock import MockBackend
    from sncheck.run.inputs import load_faults_text
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import evaluate, load_rules
    from sncheck.topology import Topology

    topo = Topology(load_inventory(INV / "cm384.yaml"))
    plan = load_faults_text((INV.parent / "faults" / "platform-amd-ascend.yaml").read_text(), topo)
    rows: list[dict] = []
    MockBackend(topo, plan, seed=1).host_facts(tuple(topo.inventory.hosts), rows.append)
    bad = {(r["entity"], r["fact"]): r for r in rows if not r["ok"]}
    # the die with the Alarm, the NPU's RoCE port (its rail's NIC): never the whole node
    assert set(bad) == {("cm004/gpu5", "npu_health"), ("cm004/gpu5", "npu_health_codes"),
                        ("cm006/nic2", "roce_link"), ("cm006/nic2", "roce_net_health")}
    assert "NPU 2 chip 1 (phy 5): Alarm" in bad[("cm004/gpu5", "npu_health")]["message"]
    said = bad[("cm006/nic2", "roce_net_health")]["message"]  # tool_ops.c's status 1 (parse31), not faultdiag's wording
    assert "NPU 2: net health Socket fail" in said and "Socket failed" not in said, said
    assert {r["fact"] for r in rows if r["host"] == "cm006" and r["ok"]} >= {"ub_topology", "super_pod_domain"}
    findings = evaluate(load_rules("default").rules, pd.DataFrame(rows), DetectContext(topo, topo.inventory.design))
    assert {(f.entity, f.entity_kind) for f in findings} == {("cm004/gpu5", "card"), ("cm006/nic2", "nic")}
