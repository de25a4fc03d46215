"""One card in one machine (H16-02): a GPU UUID or serial that two hosts list is a
``devices_shared`` finding on each, naming the other host and the identity; the harnesses
(mock, SSH and Slurm fake tools) give each host its own UUIDs, derived from its name."""

from __future__ import annotations

import re
from pathlib import Path

from sncheck.backends.mock import MockBackend
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology
from sncheck.vendors import hostjudge
from sncheck.vendors.sim import own_ids

ROOT = Path(__file__).resolve().parents[1]
INV = ROOT / "fixtures" / "inventories"
A = "GPU-5269b708-678a-b1a8-60f0-c90406537486"
B = "GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4"


def _listing(host: str, ids: list[str], tool: str = "nvidia-smi") -> list[dict]:
    return [{"kind": "host_fact", "host": host, "fact": "gpu_report", "status": "ok", "ok": True, "tool": tool,
             "message": f"{host}: listed", "ids": ids}]


def _read(judge: hostjudge.FactJudge, listings: dict[str, list[str]], tool: str = "nvidia-smi") -> list[dict]:
    """One read of ``listings``' hosts (host -> the ids it lists) through the judge every backend shares."""
    rows: list[dict] = []

    def fan_out(todo, reached, lost) -> None:
        for h in todo:
            reached(h, "ssh", "connected", rows=_listing(h, listings[h], tool))

    judge.read(tuple(listings), fan_out, rows.append)
    return [r for r in rows if r["fact"] == "devices_shared"]


def test_two_hosts_listing_one_gpu_uuid_are_a_finding_on_each_naming_the_other_and_the_card() -> None:
    judge = hostjudge.FactJudge(None)
    shared = _read(judge, {"n1": [A, B], "n2": [A, "GPU-483e6bb6-bb11-8916-e22f-d1d69abbafaa"], "n3": []})
    assert sorted(r["host"] for r in shared) == ["n1", "n2"], shared
    one = {r["host"]: r for r in shared}
    assert not one["n1"]["ok"] and one["n1"]["tool"] == "nvidia-smi" and one["n1"]["value"] == 1
    assert f"{A} (also n2)" in one["n1"]["message"] and f"{A} (also n1)" in one["n2"]["message"]
    assert B not in one["n1"]["message"] and "cannot be trusted" in one["n2"]["message"]


def test_a_host_read_alone_is_held_to_what_the_others_listed() -> None:
    """A retest reads one host: the card another host listed at its last read is still theirs."""
    judge = hostjudge.FactJudge(None)
    assert _read(judge, {"n1": [A], "n2": [B]}) == []
    again = _read(judge, {"n2": [A]})  # n2 alone, now listing n1's card
    assert [(r["host"], f"{A} (also n1)" in r["message"]) for r in again] == [("n2", True)]
    assert _read(judge, {"n2": [B]}) == []  # its own card again: n1's no longer in question


def test_bus_ids_and_zero_placeholders_are_not_identities_across_machines() -> None:
    """Every machine numbers its PCI slots alike (AMD and Ascend list bus ids): never shared."""
    judge = hostjudge.FactJudge(None)
    assert _read(judge, {"m1": ["0000:05:00.0", "00000000:07:00.0"], "m2": ["0000:05:00.0", "00000000:07:00.0"]},
                 tool="amd-smi") == []
    assert _read(judge, {"n1": ["GPU-00000000-0000-0000-0000-000000000000", "0"],
                         "n2": ["GPU-00000000-0000-0000-0000-000000000000", "0"]}) == []
    assert _read(judge, {"n1": ["1324021012345"], "n2": ["1324021012345"]})  # a serial is one card's


def test_a_shared_uuid_is_a_critical_host_finding_under_the_shipped_rules() -> None:
    import pandas as pd

    topo = Topology(load_inventory(INV / "demo-2sn.yaml"))
    a, b = sorted(topo.inventory.hosts)[:2]
    rows = _read(hostjudge.FactJudge(topo.inventory), {a: [A], b: [A]})
    found = evaluate(load_rules("default").rules, pd.DataFrame(rows), DetectContext(topo, topo.inventory.design))
    assert {(f.entity, f.severity.value) for f in found} == {(a, "critical"), (b, "critical")}, found
    assert all(A in f.message for f in found)


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
    assert not [r for r in rows if r["fact"] == "devices_shared"]
    uuids = {r["host"]: list(r["value"].values()) for r in rows if r["fact"] == "gpu_uuid"}
    assert len(uuids) == len(topo.inventory.hosts) > 1
    every = [u for us in uuids.values() for u in us]
    assert len(every) == len(set(every)) == sum(h.cards for h in topo.inventory.hosts.values())
    host = sorted(uuids)[1]
    printed = "".join(out.stdout for _, out in mockfacts.rendered_outputs(topo, (), host))
    assert all(u in printed for u in uuids[host]), (uuids[host], printed[:400])
