"""Every inventory key the schema accepts reaches the code, or is refused (issue 27 item 5:
``launcher.hostfile_slots`` was validated and silently dropped).

The keys are read off the pydantic models themselves (sncheck/config/inventory.py's
InventorySchema and every model under it): for each field a sample sets it to a value other
than the base's, and the loaded Inventory must differ from the base's. A field added to a
model without a sample here fails ``test_every_field_has_a_sample`` (say what it changes, or
refuse it with ``Schema.refused``)."""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import BaseModel

from sncheck.cli.main import main
from sncheck.config.fabric import FabricSchema, LeafSchema, SpineSchema
from sncheck.config.inventory import (BackendSchema, DesignSchema, HostSchema, InventorySchema, LauncherSchema,
                                      SshSchema, SupernodeSchema, TierSchema)
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory_text
from tests.schema_snapshot import plain

Doc = dict[str, Any]
BASE: Doc = {
    "supernodes": [{"name": "sn0", "hosts": "node[001-002]", "cards_per_host": 2}],
    "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"}},
    "backend": {"type": "ssh"},
    "ssh": {}, "launcher": {}, "hosts": {"node001": {}},
}
SPINES = {**BASE, "fabric": {"spines": [{"name": "s0"}]}}
LEAVES = {**BASE, "fabric": {"leaves": [{"name": "l0", "rail": 0, "hosts": "node[001-002]"},
                                        {"name": "l1", "ports": {"node001/nic1": 1, "node002/nic1": 2}}]}}


def at(path: tuple[Any, ...], key: str, value: Any, base: Doc = BASE) -> tuple[Doc, Doc]:
    """(base, base with ``key: value`` set in the mapping at ``path``)."""
    doc = copy.deepcopy(base)
    node = doc
    for p in path:
        node = node[p]
    node[key] = value
    return base, doc


def rail_moved() -> tuple[Doc, Doc]:
    _, doc = at(("fabric", "leaves", 0), "rail", 1, LEAVES)
    doc["fabric"]["leaves"][1]["ports"] = {"node001/nic0": 1, "node002/nic0": 2}
    return LEAVES, doc


SN, HOST, LEAF, SPINE = ("supernodes", 0), ("hosts", "node001"), ("fabric", "leaves", 0), ("fabric", "spines", 0)
SAMPLES: dict[tuple[type[BaseModel], str], Callable[[], tuple[Doc, Doc]]] = {
    (InventorySchema, "name"): lambda: at((), "name", "other"),
    (InventorySchema, "description"): lambda: at((), "description", "the lab's rack"),
    (InventorySchema, "platform"): lambda: at((), "platform", "nvidia-nvl72"),
    (InventorySchema, "checks"): lambda: at((), "checks", {"dcgmi": False}),
    (InventorySchema, "design"): lambda: at((), "design", {"scale_out": {"bandwidth": "400 Gb/s", "latency": "9 us"}}),
    (InventorySchema, "supernodes"): lambda: at((), "supernodes", [{"name": "sn0", "hosts": "node[001-003]",
                                                                     "cards_per_host": 2}]),
    (InventorySchema, "backend"): lambda: at((), "backend", "mock"),
    (InventorySchema, "ssh"): lambda: at((), "ssh", {"port": 2200}),
    (InventorySchema, "hosts"): lambda: at((), "hosts", {"node002": {"port": 2200}}),
    (InventorySchema, "launcher"): lambda: at((), "launcher", {"type": "srun"}),
    (InventorySchema, "fabric"): lambda: at((), "fabric", {"spines": 1}),
    (DesignSchema, "intra_host"): lambda: at(("design",), "intra_host", {"bandwidth": 900, "latency": 1}),
    (DesignSchema, "scale_up"): lambda: at(("design",), "scale_up", {"bandwidth": 900, "latency": 1}),
    (DesignSchema, "scale_out"): lambda: at(("design",), "scale_out", {"bandwidth": 900, "latency": 1}),
    (TierSchema, "bandwidth"): lambda: at(("design", "scale_up"), "bandwidth", "900 GB/s"),
    (TierSchema, "latency"): lambda: at(("design", "scale_up"), "latency", "2 us"),
    (SupernodeSchema, "name"): lambda: at(SN, "name", "snx"),
    (SupernodeSchema, "hosts"): lambda: at(SN, "hosts", ["node001", "node002", "node009"]),
    (SupernodeSchema, "cards_per_host"): lambda: at(SN, "cards_per_host", 4),
    (SupernodeSchema, "platform"): lambda: at(SN, "platform", "nvidia-nvl72"),
    (SupernodeSchema, "checks"): lambda: at(SN, "checks", {"ibstat": False}),
    (BackendSchema, "type"): lambda: at(("backend",), "type", "mock"),
    (BackendSchema, "dist_backend"): lambda: at(("backend",), "dist_backend", "gloo"),
    (BackendSchema, "near_budget_s"): lambda: at(("backend",), "near_budget_s", 90),
    (SshSchema, "user"): lambda: at(("ssh",), "user", "alice"),
    (SshSchema, "port"): lambda: at(("ssh",), "port", 2222),
    (SshSchema, "identity_file"): lambda: at(("ssh",), "identity_file", "/keys/id_ed25519"),
    (SshSchema, "known_hosts"): lambda: at(("ssh",), "known_hosts", "/keys/known_hosts"),
    (SshSchema, "connect_timeout"): lambda: at(("ssh",), "connect_timeout", 7),
    (SshSchema, "command_timeout"): lambda: at(("ssh",), "command_timeout", 99.5),
    (SshSchema, "forks"): lambda: at(("ssh",), "forks", 3),
    (LauncherSchema, "type"): lambda: at(("launcher",), "type", "srun"),
    (LauncherSchema, "extra_args"): lambda: at(("launcher",), "extra_args", ["--bind-to", "none"]),
    (LauncherSchema, "nccl_tests_dir"): lambda: at(("launcher",), "nccl_tests_dir", "/opt/nccl-tests"),
    (LauncherSchema, "parallel_steps"): lambda: at(("launcher",), "parallel_steps", 5),
    (HostSchema, "address"): lambda: at(HOST, "address", "127.0.1.1"),
    (HostSchema, "port"): lambda: at(HOST, "port", 2222),
    (HostSchema, "user"): lambda: at(HOST, "user", "ops"),
    (HostSchema, "identity_file"): lambda: at(HOST, "identity_file", "/keys/ops"),
    (HostSchema, "cards"): lambda: at(HOST, "cards", 1),
    (HostSchema, "imex_address"): lambda: at(HOST, "imex_address", "10.0.0.1"),
    (HostSchema, "ssh_gateway"): lambda: at(HOST, "ssh_gateway", True),
    (FabricSchema, "scalable_unit"): lambda: at(("fabric",), "scalable_unit", 1, SPINES),
    (FabricSchema, "leaves"): lambda: (SPINES, {**LEAVES, "fabric": {**LEAVES["fabric"], "spines": [{"name": "s0"}]}}),
    (FabricSchema, "spines"): lambda: at(("fabric",), "spines", 3, SPINES),
    (SpineSchema, "name"): lambda: at(SPINE, "name", "core", SPINES),
    (SpineSchema, "rails"): lambda: at(SPINE, "rails", [1], SPINES),
    (SpineSchema, "leaves"): lambda: at(SPINE, "leaves", ["su0-rail1"], SPINES),
    (LeafSchema, "name"): lambda: at(LEAF, "name", "lz", LEAVES),
    (LeafSchema, "rail"): rail_moved,
    (LeafSchema, "hosts"): lambda: at(LEAF, "hosts", ["node002", "node001"], LEAVES),
    (LeafSchema, "first_port"): lambda: at(LEAF, "first_port", 7, LEAVES),
    (LeafSchema, "ports"): lambda: at(("fabric", "leaves", 1), "ports", {"node001/nic1": 4, "node002/nic1": 2}, LEAVES),
}


def models(model: type[BaseModel]) -> set[type[BaseModel]]:
    """``model`` and every model its fields hold (in lists, maps, unions, Annotated)."""
    found = {model}

    def walk(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp not in found:
                found.update(models(tp))
            return
        for arg in typing.get_args(tp):
            walk(arg)
    for field in model.model_fields.values():
        walk(field.annotation)
        for meta in field.metadata:
            walk(meta)
    return found


def test_every_field_has_a_sample() -> None:
    fields = {(m, f) for m in models(InventorySchema) for f in m.model_fields}
    assert {(m.__name__, f) for m, f in fields} == {(m.__name__, f) for m, f in SAMPLES}
    assert {SupernodeSchema, HostSchema, FabricSchema, LeafSchema, SpineSchema, LauncherSchema} <= {m for m, _ in fields}


def _load(doc: Doc) -> Any:
    return plain(load_inventory_text(yaml.safe_dump(doc, sort_keys=False), "keys.yaml"))


@pytest.mark.parametrize("model, field", sorted(SAMPLES, key=lambda k: (k[0].__name__, k[1])),
                         ids=lambda x: x.__name__ if isinstance(x, type) else x)
def test_each_accepted_key_reaches_the_inventory(model: type[BaseModel], field: str) -> None:
    base, changed = SAMPLES[(model, field)]()
    assert base != changed
    assert _load(changed) != _load(base), f"{model.__name__}.{field} is accepted but changes nothing"


def test_hostfile_slots_is_refused_with_its_line(tmp_path) -> None:
    text = yaml.safe_dump(BASE, sort_keys=False) + "launcher:\n  type: mpirun\n  hostfile_slots: 4\n"
    text = text.replace("launcher: {}\n", "")
    with pytest.raises(ConfigError) as e:
        load_inventory_text(text, "inv.yaml")
    assert "hostfile_slots" in str(e.value) and "not used" in str(e.value)
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    line = text.splitlines().index("  hostfile_slots: 4") + 1
    r = CliRunner().invoke(main, ["inventory", "check", str(path)])
    assert r.exit_code == 2, r.output
    assert f"{path}:{line}: launcher.hostfile_slots: not used" in r.output
