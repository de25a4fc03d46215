"""A run's input files, loaded against what the plug-ins know.

``config/`` is the layer under the vendors and the backends (tests/test_layers.py): its
loaders never import them, they are told the backend names, the vendors' platforms and
scale-out tools, and how a platform's tools would show a fault. These loaders tell them,
from the registries (:data:`sncheck.backends.BACKENDS`, :mod:`sncheck.vendors.registry`,
:func:`sncheck.vendors.sim.cannot_act_out`); the CLI, the run and the tests load through
them.
"""

from __future__ import annotations

from pathlib import Path

from sncheck.backends import BACKENDS
from sncheck.config import faultplan, inventory, playbook
from sncheck.config.faultplan import FaultPlan
from sncheck.config.inventory import Inventory
from sncheck.config.playbook import Playbook
from sncheck.config.yamlio import Source
from sncheck.topology import Topology
from sncheck.vendors import registry, sim


def parse_inventory(src: Source) -> Inventory:
    return inventory.parse_inventory(src, backends=tuple(BACKENDS), platforms=registry.platforms())


def load_inventory(path: str | Path) -> Inventory:
    return inventory.load_inventory(path, backends=tuple(BACKENDS), platforms=registry.platforms())


def load_inventory_text(text: str, name: str = "<inventory>") -> Inventory:
    return inventory.load_inventory_text(text, name, backends=tuple(BACKENDS), platforms=registry.platforms())


def parse_playbook(src: Source) -> Playbook:
    return playbook.parse_playbook(src, scale_out_tools=registry.scale_out_tools())


def load_playbook(ref: str) -> Playbook:
    """A playbook file, or a shipped playbook by name (``pre-upgrade-gate``)."""
    return playbook.load_playbook(ref, scale_out_tools=registry.scale_out_tools())


def load_playbook_text(text: str, name: str = "<playbook>") -> Playbook:
    return playbook.load_playbook_text(text, name, scale_out_tools=registry.scale_out_tools())


def parse_faults(src: Source, topo: Topology) -> FaultPlan:
    return faultplan.parse_faults(src, topo, sim.cannot_act_out)


def load_faults(path: str | Path, topo: Topology) -> FaultPlan:
    """A fault plan for ``topo``; a fault its hosts' tools could not show is refused."""
    return faultplan.load_faults(path, topo, sim.cannot_act_out)


def load_faults_text(text: str, topo: Topology, name: str = "<faults>") -> FaultPlan:
    return faultplan.load_faults_text(text, topo, sim.cannot_act_out, name)
