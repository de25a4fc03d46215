"""One card in one machine (H16-02): a GPU UUID or serial that two hosts list is a
``devices_shared`` finding on each, naming the other host and the identity; the harnesses
(mock, SSH and Slurm fake tools) give each host its own UUIDs, derived from its name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


# ------------------------------------------------------------------ AMD and Ascend (round 14, parse28i)

AMD_LIST = ROOT / "fixtures" / "real" / "harvest21" / "amd-smi"


def _amd_list_ids(host: str = "") -> list[str]:
    """The ids a run's gpu_bus fact reads from a real 8 x MI300X ``amd-smi list`` (made ``host``'s own)."""
    from sncheck.vendors.amd import amd_smi, checks
    from sncheck.vendors.facts import Expect
    from sncheck.vendors.parsers import strip_source_header

    (path,) = AMD_LIST.glob("01_*.txt")
    text = strip_source_header(path.read_text())
    [row] = checks.check_gpu_list("mi01", amd_smi.parse_amd_smi(own_ids(text, host) if host else text),
                                  Expect(cards=8))
    assert row["ok"], row
    return row["ids"]


def test_amd_smi_lists_each_gpu_by_its_uuid_and_two_hosts_listing_one_are_a_finding() -> None:
    """amd-smi's UUID is the ASIC serial's (amdsmi_uuid_gen): the gpu_bus fact lists it, and two
    hosts listing one card are devices_shared; before, the fact listed only BDFs, which every
    machine numbers alike, so a cloned listing passed."""
    ids = _amd_list_ids()
    assert ids[0] == "d4ff74a1-0000-1000-80b1-dbb1e6a69543" and len(set(ids)) == 8, ids
    shared = _read(hostjudge.FactJudge(None), {"mi01": ids, "mi02": [*ids[:1], *_amd_list_ids("mi02")[1:]]},
                   tool="amd-smi")
    assert sorted(r["host"] for r in shared) == ["mi01", "mi02"], shared
    assert f"{ids[0]} (also mi02)" in {r["host"]: r for r in shared}["mi01"]["message"]
    assert _read(hostjudge.FactJudge(None), {"mi01": _amd_list_ids("mi01"), "mi02": _amd_list_ids("mi02")},
                 tool="amd-smi") == []


def test_amd_uuids_of_no_serial_and_zero_die_ids_are_placeholders_never_shared() -> None:
    """A card whose serial the driver does not give prints amdsmi_uuid_gen of serial 0 (ASIC_SERIAL
    N/A) or all ones (the amdsmi README's Navi 21: 0xffffffffffffffff): every such card of a model
    alike; an Ascend die id of zeros names none."""
    from sncheck.vendors.identity import amd_uuid_serial, unique_id

    assert amd_uuid_serial("afff74a1-0000-1000-8054-e92b0a5d57c8") == 0xAF54E92B0A5D57C8
    none = ["00ff74a1-0000-1000-8000-000000000000", "ffff73bf-0000-1000-80ff-ffffffffffff",
            "00000000 00000000 00000000 00000000 00000000"]
    assert not [i for i in none if unique_id(i)]
    assert _read(hostjudge.FactJudge(None), {"m1": none, "m2": none}, tool="amd-smi") == []
    assert unique_id("42C711D4 20B03704 4A10C8D4 14CC040A D2102003")
    assert not [i for i in ("NA", "N/A", "[N/A]", " ") if unique_id(i)]  # none printed: no identity


def test_own_ids_moves_rocm_smis_unique_id_in_its_hex_form_as_the_cards_uuid() -> None:
    """rocm-smi prints the Unique ID with hex() (rocm_smi.py showUId): no leading zeros, as the
    harvest8 capture's 0x4edfb117a17a07d. The card's serial moves as one 64-bit value, so its
    amd-smi UUID and its rocm-smi Unique ID stay one card's on a simulated host (reviews14 #2)."""
    from sncheck.vendors.identity import amd_uuid_serial

    for serial in (0x54E92B0A5D57C8, 0x4EDFB117A17A07D, 0xAF54E92B0A5D57C8):
        uuid = f"{serial >> 56:02x}ff74a1-0000-1000-80{serial >> 48 & 0xFF:02x}-{serial & (1 << 48) - 1:012x}"
        text = f"UUID: {uuid}\nGPU[0]\t\t: Unique ID: {hex(serial)}\n"
        for host in ("node1", "node7"):
            moved = own_ids(text, host)
            got = amd_uuid_serial(moved.splitlines()[0].split(": ")[1])
            assert got is not None and moved.splitlines()[1].endswith(f": Unique ID: {hex(got)}"), moved
            assert own_ids(moved, host) == text


def test_own_ids_moves_amd_and_ascend_identities_by_their_keys_one_to_one_and_back() -> None:
    """The harnesses' rewrite, key-aware: amd-smi's UUID and its ASIC serial (alike, as one card's),
    rocm-smi's Unique ID and board serial, npu-smi's VDie/NDie ID; the same hex under no such key,
    and placeholders, stay."""
    from sncheck.vendors.identity import amd_uuid_serial, own_id

    text = ("    UUID: afff74a1-0000-1000-8054-e92b0a5d57c8\n        ASIC_SERIAL: 0xAF54E92B0A5D57C8\n"
            "GPU[0]\t\t: Unique ID: 0xaf54e92b0a5d57c8\nGPU[0]\t\t: Serial Number: 692251001124\n"
            "        PRODUCT_SERIAL: N/A\n    UUID: 00ff74a1-0000-1000-8000-000000000000\n"
            "        VDie ID                        : 42C711D4 20B03704 4A10C8D4 14CC040A D2102003\n"
            "        NDie ID                        : 27216594 20401010 4E10C8D4 14CC040A A4102003\n"
            "        Die ID                         : 00000000 00000000 00000000 00000000 00000000\n"
            "        Board ID                       : 0x02\nsomething afff74a1-0000-1000-8054-e92b0a5d57c8 0xAF54E92B0A5D57C8\n")
    one, two = own_ids(text, "node1"), own_ids(text, "node2")
    assert one != two and own_ids(one, "node1") == text and own_ids(two, "node2") == text
    lines = [(a, b) for a, b in zip(text.splitlines(), one.splitlines(), strict=True)]
    moved = [i for i, (a, b) in enumerate(lines) if a != b]
    assert moved == [0, 1, 2, 3, 6, 7], one  # the placeholders, the Board ID and the keyless line stay
    uuid = one.splitlines()[0].split(": ")[1]
    serial = amd_uuid_serial(uuid)
    assert serial is not None and f"0x{serial:016X}" in one and f"0x{serial:016x}" in one  # one card's
    assert len(one.splitlines()[3].split(": ")[-1]) == 12 and one.splitlines()[3].split(": ")[-1].isdecimal()
    assert own_id("afff74a1-0000-1000-8054-e92b0a5d57c8", "node1") == uuid  # a row's bare id moves alike
    assert own_id("0000:05:00.0", "node1") == "0000:05:00.0"


@pytest.mark.parametrize(("inventory", "fact", "form"), [
    ("mi300x-pod.yaml", "gpu_bus", r"[0-9a-f]{8}-0000-1000-80[0-9a-f]{2}-[0-9a-f]{12}"),  # amd-smi list's UUIDs
    ("cm384.yaml", "die_ids", r"[0-9A-F]{8}(?: [0-9A-F]{8}){4}"),  # npu-smi -t board's VDie IDs
])
def test_the_mock_gives_every_amd_and_ascend_host_its_own_devices_and_no_finding(inventory: str, fact: str,
                                                                                 form: str) -> None:
    """The mock renders one state for every host: each host's ids are its own, as the text its
    tool prints, and the fleet shares none."""
    topo = Topology(load_inventory(INV / inventory))
    backend = MockBackend(topo, load_faults_text("faults: []\n", topo))
    rows: list[dict] = []
    backend.host_facts(tuple(topo.inventory.hosts), rows.append)
    assert not [r for r in rows if r["fact"] == "devices_shared"]
    ids = {r["host"]: r["ids"] for r in rows if r["fact"] == fact}
    assert len(ids) == len(topo.inventory.hosts) > 1
    every = [i for hs in ids.values() for i in hs]
    assert len(every) == len(set(every)) == sum(h.cards for h in topo.inventory.hosts.values()), ids
    assert all(re.fullmatch(form, i) for i in every), every[:3]


def test_own_ids_moves_amd_smi_and_rocm_smi_csv_ids_by_their_header_columns() -> None:
    """amd-smi --csv (amdsmi_logger: csv.DictWriter, the header flatten_dict's keys) and rocm-smi
    --csv print identities on value lines with no key: moved by their header's column (uuid,
    asic_serial, product_serial, Unique ID) as after their keys, one card's alike; other cells,
    placeholders and an NVIDIA --query-gpu CSV's UUID (moved once, by its GPU-) as before."""
    listing = ("gpu,bdf,uuid,kfd_id,node_id,partition_id\r\n0,0000:05:00.0,afff74a1-0000-1000-8054-e92b0a5d57c8,"
               "1,2,0\r\n1,0000:15:00.0,00ff74a1-0000-1000-8000-000000000000,3,4,0\r\n")
    static = 'gpu,market_name,asic_serial,product_serial,list\n0,"AMD, Inc",0xAF54E92B0A5D57C8,692251001124,"[1, 2]"\n'
    rocm = "device,Unique ID\ncard0,0xaf54e92b0a5d57c8\n"
    keyed = own_ids("UUID: afff74a1-0000-1000-8054-e92b0a5d57c8\nASIC_SERIAL: 0xAF54E92B0A5D57C8\n"
                    "PRODUCT_SERIAL: 692251001124\nGPU[0]\t\t: Unique ID: 0xaf54e92b0a5d57c8\n", "node1").splitlines()
    got = [own_ids(t, "node1") for t in (listing, static, rocm)]
    assert [own_ids(g, "node1") for g in got] == [listing, static, rocm]
    assert got[0].split("\r\n")[1].split(",")[2] == keyed[0].split(": ")[1]
    assert got[0].split("\r\n")[2] == "1,0000:15:00.0,00ff74a1-0000-1000-8000-000000000000,3,4,0"
    assert got[1].split("\n")[1] == f'0,"AMD, Inc",{keyed[1].split(": ")[1]},{keyed[2].split(": ")[1]},"[1, 2]"'
    assert got[2].split("\n")[1] == f"card0,{keyed[3].rsplit(': ', 1)[1]}"
    query = f"index, uuid, serial\n0, {A}, 1320123456789\n"
    assert own_ids(query, "node1") == query.replace(A, own_ids(A, "node1")) != query
