"""Platforms and the shipped platform inventories: inventory check and a mock connectivity run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli import main
from sncheck.errors import ConfigError
from sncheck.inventory import load_inventory, load_inventory_text
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
    with pytest.raises(ConfigError, match="<inventory>:1: unknown platform 'gb300'; choose one of: amd-mi300x"):
        load_inventory_text("platform: gb300\nsupernodes:\n  - {name: a, hosts: h1}\n")
    with pytest.raises(ConfigError, match="needs cards_per_host"):
        load_inventory_text("supernodes:\n  - {name: a, hosts: h1}\n")
    with pytest.raises(ConfigError, match="19 hosts; one nvidia-nvl72 scale-up domain has at most 18"):
        load_inventory_text("platform: nvidia-nvl72\nsupernodes:\n  - {name: a, hosts: 't[01-19]'}\n")
    with pytest.raises(ConfigError, match="list each host as its own supernode"):
        load_inventory_text("platform: amd-mi300x\nsupernodes:\n  - {name: a, hosts: 'm[1-2]'}\n")
