"""The harnesses (mock, SSH and Slurm fake tools) give each host its own GPU UUIDs, derived
from its name: one card is in one machine (H16-02)."""

from __future__ import annotations

import re
from pathlib import Path

from sncheck.backends.mock import MockBackend
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology
from sncheck.vendors.sim import own_ids

ROOT = Path(__file__).resolve().parents[1]
INV = ROOT / "fixtures" / "inventories"
A = "GPU-5269b708-678a-b1a8-60f0-c90406537486"
B = "GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4"


def test_own_ids_is_one_to_one_on_a_host_other_on_each_host_and_keeps_other_uuids() -> None:
    text = f"GPU UUID : {A}\nGPU UUID : {B}\nClusterUUID : 00000001-0000-0000-0000-000000000001\nMIG-{A[4:]}\n"
    one, two = own_ids(text, "node1"), own_ids(text, "node2")
    ids = [re.findall(r"GPU-[0-9a-f-]{36}", t) for t in (one, two)]
    assert len(set(ids[0] + ids[1])) == 4 and A not in one and B not in two
    assert own_ids(one, "node1") == text  # its own inverse: what a harness wrote can be read back
    assert "ClusterUUID : 00000001-0000-0000-0000-000000000001" in one and f"MIG-{A[4:]}" in one
    assert own_ids(A.upper(), "node1") == own_ids(A, "node1").upper()


def test_the_mock_gives_every_host_its_own_gpus_and_no_finding() -> None:
    """The mock renders one state once for many hosts: the rows' UUIDs (ids, gpu_uuid) are each
    host's own, the evidence's text the same as the rows, and a fleet of them shares nothing."""
    from sncheck.backends import mockfacts

    topo = Topology(load_inventory(INV / "demo-2sn.yaml"))
    backend = MockBackend(topo, load_faults_text("faults: []\n", topo))
    rows: list[dict] = []
    backend.host_facts(tuple(topo.inventory.hosts), rows.append)
    uuids = {r["host"]: list(r["value"].values()) for r in rows if r["fact"] == "gpu_uuid"}
    assert len(uuids) == len(topo.inventory.hosts) > 1
    every = [u for us in uuids.values() for u in us]
    assert len(every) == len(set(every)) == sum(h.cards for h in topo.inventory.hosts.values())
    host = sorted(uuids)[1]
    printed = "".join(out.stdout for _, out in mockfacts.rendered_outputs(topo, (), host))
    assert all(u in printed for u in uuids[host]), (uuids[host], printed[:400])
