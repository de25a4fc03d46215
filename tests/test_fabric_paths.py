"""The explainer's paths (sncheck/health/pairview.FabricPaths): each card's host and
supernode code, which supernodes are one host, and each card's code by name, as their plain
definitions give them, on every shipped inventory and the outsider scenarios' (a lone host,
one-host supernodes beside a supernode of four, solo MI300X units)."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from sncheck.health.pairview import FabricPaths
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology

INVENTORIES = sorted(glob.glob("fixtures/inventories/*.yaml") + glob.glob("tests/data/scenarios-r6/inv-*.yaml"))


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_each_card_s_host_supernode_and_code_are_their_plain_definitions(path: str) -> None:
    topo = Topology(load_inventory(path))
    paths = FabricPaths(topo)
    table = topo.card_table
    assert paths.host.tolist() == [paths.hosts.index(h) for h in table["host"]]
    assert paths.sn.tolist() == [paths.supernodes.index(s) for s in table["supernode"]]
    assert paths.host.dtype == paths.sn.dtype == np.int64
    hosts_in = {s: {h for h, t in zip(table["host"], table["supernode"]) if t == s} for s in paths.supernodes}
    assert paths.one_host_domain.tolist() == [len(hosts_in[s]) <= 1 for s in paths.supernodes]
    assert paths.code == {c: i for i, c in enumerate(table.index)} and paths.code is paths.code
