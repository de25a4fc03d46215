"""Device-level host facts: a fact about one card, NIC or link names that device, never its
host, on every platform; isolating it masks the card and never drains the host."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.actions.base import ActionContext, ActionRequest, Isolated
from sncheck.actions.files import render_cvd_env, service_view
from sncheck.actions.kubernetes import desired_taint
from sncheck.actions.slurm import SlurmAction
from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology
from sncheck.vendors import hostjudge
from sncheck.vendors.facts import Expect
from sncheck.vendors.infiniband.checks import check_ib_ports
from sncheck.vendors.infiniband.ibstat import parse_ibstat
from sncheck.vendors.sim import capture

ROOT = Path(__file__).resolve().parent.parent
INV = ROOT / "fixtures" / "inventories"


def bad_facts(inventory: str, faults: str) -> dict[tuple[str, str], dict]:
    topo = Topology(load_inventory(INV / f"{inventory}.yaml"))
    plan = load_faults_text("faults:\n" + faults, topo)
    rows: list[dict] = []
    hosts = sorted({f.host for f in plan.faults})
    MockBackend(topo, plan, seed=0).host_facts(tuple(hosts), rows.append)
    return {(r.get("entity") or r["host"], r["fact"]): r for r in rows if not r["ok"]}


def test_nvl72_tray_with_two_limited_capacity_gpus_gives_two_card_warnings_and_keeps_the_tray(tmp_path):
    # gpu1 and gpu3: the second of the two was dropped before (the renderer lost count)
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {type: fabric_degraded, target: tray05/gpu1}\n"
                      "  - {type: fabric_degraded, target: tray05/gpu3}\n")
    out, state = tmp_path / "run", tmp_path / "state"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(INV / "nvl72-rack.yaml"), "--backend", "mock",
                                  "--faults", str(faults), "--seed", "2", "--out", str(out), "-q",
                                  "--state-dir", str(state), "--apply", "--via", "hostfile",
                                  "--via", "cuda_visible_devices", "--via", "slurm"])
    assert r.exit_code == 1, r.output  # a warning quarantines; the retest confirms it
    res = json.loads((out / "results.json").read_text())
    found = {(f["entity"], f["entity_kind"], f["severity"]) for f in res["findings"]}
    assert found == {("tray05/gpu1", "card", "warning"), ("tray05/gpu3", "card", "warning")}, res["findings"]
    assert all("Limited Capacity" in f["message"] for f in res["findings"])
    acted = {(e["entity"], e["action"]) for e in res["isolation"]}
    assert ("tray05/gpu1", "isolate") in acted and ("tray05/gpu3", "isolate") in acted
    assert not any(e["entity"] == "tray05" for e in res["isolation"])
    # masked, not drained: the tray keeps its two healthy GPUs in service
    assert "tray05 slots=2" in (out / "hostfile.txt").read_text()
    assert (out / "exclude_hosts.txt").read_text() == ""
    assert json.loads((out / "cuda_visible_devices.json").read_text())["tray05"] == "0,2"
    audit = [json.loads(ln) for ln in (state / "audit.jsonl").read_text().splitlines()]
    slurm = [a for a in audit if a["via"] == "slurm"]
    assert slurm and all(a["outcome"] == "skipped" and a["argv"] == [] for a in slurm)


@pytest.mark.parametrize("inventory, fault, entity, fact, words", [
    # the examples, one per platform, plus the faults the NVL72 tray dropped before
    ("nvl72-rack", "{type: fabric_degraded, target: tray05/gpu1}", "tray05/gpu1", "fabric_health",
     "Bandwidth Limited Capacity"),
    ("nvl72-rack", "{type: ecc_uncorrectable, target: tray02/gpu3, count: 2}", "tray02/gpu3", "ecc",
     "DRAM Uncorrectable 2"),
    ("nvl72-rack", "{type: remap_pending, target: tray03/gpu0}", "tray03/gpu0", "remapped_rows", "row remap pending"),
    ("nvl72-rack", "{type: ib_port_down, target: tray04, port: 2}", "tray04/nic1", "ib_ports", "mlx5_1 port 1 Down"),
    ("nvl72-rack", "{type: nvlink_down, target: tray07/gpu2, links: 3}", "tray07/gpu2", "nvlink", "link 17 inactive"),
    ("nvl72-rack", "{type: thermal_throttle, target: tray06/gpu1}", "tray06/gpu1", "clock_reasons",
     "HW Thermal Slowdown active"),
    ("cm384", "{type: npu_alarm, target: cm020/gpu7}", "cm020/gpu7", "npu_health", "NPU 3 chip 1 (phy 7): Alarm"),
    ("cm384", "{type: hccn_link_down, target: cm006/gpu2}", "cm006/nic2", "roce_link", "NPU 2: link DOWN"),
    ("cm384", "{type: ecc_uncorrectable, target: cm007/gpu9, count: 2}", "cm007/gpu9", "ecc", "HBM Double Bit"),
    ("mi300x-pod", "{type: xgmi_link_down, target: mi02/gpu0}", "mi02/gpu0<->mi02/gpu1", "xgmi_links",
     "GPU0-GPU1 PCIE (hops 3, weight 52)"),
    ("mi300x-pod", "{type: ecc_uncorrectable, target: mi03/gpu5, count: 4}", "mi03/gpu5", "ecc",
     "GPU 5 UMC: 4 uncorrectable"),
    ("mi300x-pod", "{type: thermal_throttle, target: mi04/gpu2}", "mi04/gpu2", "throttle", "GPU 2: THROTTLED"),
    ("mi300x-pod", "{type: ib_port_down, target: mi05, port: 2}", "mi05/nic1", "ib_ports", "mlx5_3 port 1 Down"),
])
def test_a_fact_about_one_device_names_that_device(inventory, fault, entity, fact, words):
    bad = bad_facts(inventory, f"  - {fault}\n")
    # every failed fact names the device (npu-smi's info and -t health; hccn_tool's link and
    # net_health both say so), none the host or another device
    assert (entity, fact) in bad and {e for e, _ in bad} == {entity}, {k: r["message"] for k, r in bad.items()}
    row = bad[entity, fact]
    assert words in row["message"] and row["message"].startswith(entity + ": ")
    assert row["entity_kind"] == ("link" if "<->" in entity else "nic" if "/nic" in entity else "card")


def test_several_bad_devices_of_one_host_give_one_row_each():
    bad = bad_facts("mi300x-pod", "  - {type: ecc_uncorrectable, target: mi03/gpu1}\n"
                                  "  - {type: ecc_uncorrectable, target: mi03/gpu6, count: 3}\n")
    assert sorted(bad) == [("mi03/gpu1", "ecc"), ("mi03/gpu6", "ecc")]
    assert "GPU 6 UMC: 3 uncorrectable" in bad["mi03/gpu6", "ecc"]["message"]
    assert "GPU 6" not in bad["mi03/gpu1", "ecc"]["message"]


def _ibstat(text: str, cards: int) -> dict:
    rows = hostjudge.per_device(check_ib_ports("n1", parse_ibstat(text), Expect(cards)))
    return {(r.get("entity") or r["host"]): r for r in rows}


def _down(text: str, *cas: str) -> str:
    out, ca = [], None
    for line in text.splitlines():
        if line.startswith("CA '"):
            ca = line.split("'")[1]
        if ca in cas and line.strip().startswith("State:"):
            line = line.replace("Active", "Down")
        out.append(line)
    return "\n".join(out) + "\n"


def test_ibstat_names_the_rail_only_when_it_can_tell_it():
    real = capture("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")  # 8 x 400G rails + 4 x 100G
    assert list(_ibstat(real, 8)) == ["n1"] and _ibstat(real, 8)["n1"]["ok"]
    one = _ibstat(_down(real, "mlx5_10"), 8)  # rails by name: mlx5_0, 3, 4, 5, 6, 9, 10, 11
    assert list(one) == ["n1/nic6"] and "mlx5_10 port 1 Down" in one["n1/nic6"]["message"]
    two = _ibstat(_down(real, "mlx5_0", "mlx5_11"), 8)
    assert sorted(two) == ["n1/nic0", "n1/nic7"]
    # a management adapter, every rail at once, or rails the listing cannot tell: the host
    assert list(_ibstat(_down(real, "mlx5_1"), 8)) == ["n1"]
    rails = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert list(_ibstat(_down(real, *rails), 8)) == ["n1"]
    assert list(_ibstat(_down(real, "mlx5_10"), 4)) == ["n1"]  # 8 fast adapters for 4 cards: which rail?
    assert not _ibstat(_down(real, "mlx5_10"), 8)["n1/nic6"]["ok"]


def test_a_retest_that_lists_other_gpus_is_a_finding_not_a_pass():
    judge = hostjudge.FactJudge(None)
    first = [{"host": "n1", "fact": "gpu_report", "status": "ok", "ok": True, "tool": "nvidia-smi",
              "ids": ["GPU-a", "GPU-b"]}]
    assert judge.seen("n1", list(first)) == first
    assert judge.seen("n1", list(first)) == first  # the same devices again: nothing new
    other = [dict(first[0], ids=["GPU-a", "GPU-c"])]
    rows = judge.seen("n1", list(other))
    changed = [r for r in rows if r["fact"] == "devices_changed"]
    assert len(changed) == 1 and not changed[0]["ok"] and changed[0]["host"] == "n1"
    assert "gone: GPU-b" in changed[0]["message"] and "new: GPU-c" in changed[0]["message"]
    assert not [r for r in judge.seen("n2", list(other)) if r["fact"] == "devices_changed"]  # n2's first read


def test_mock_retest_lists_the_same_devices():
    topo = Topology(load_inventory(INV / "nvl72-rack.yaml"))
    b = MockBackend(topo, load_faults_text("faults:\n  - {type: remap_pending, target: tray03/gpu0}\n", topo))
    rows: list[dict] = []
    b.host_facts(("tray03",), rows.append)
    b.begin_confirmation()
    b.host_facts(("tray03",), rows.append)
    assert any(r.get("ids") for r in rows) and not any(r["fact"] == "devices_changed" for r in rows)


def test_isolating_a_card_or_nic_masks_that_card_with_the_vendors_variable():
    inv = load_inventory(INV / "mi300x-pod.yaml")
    view = service_view(inv, {"mi02/nic3": Isolated("mi02/nic3", "nic"), "mi04/gpu1": Isolated("mi04/gpu1", "card")})
    assert view.excluded_hosts == () and view.visible["mi02"] == (0, 1, 2, 4, 5, 6, 7)
    env = render_cvd_env(view)
    assert "mi02) export HIP_VISIBLE_DEVICES=0,1,2,4,5,6,7 ;;" in env and "export CUDA_VISIBLE_DEVICES" not in env
    cm = load_inventory(INV / "cm384.yaml")
    env = render_cvd_env(service_view(cm, {"cm006/nic2": Isolated("cm006/nic2", "nic")}))
    assert "cm006) export ASCEND_RT_VISIBLE_DEVICES=0,1,3,4,5,6,7,8,9,10,11,12,13,14,15 ;;" in env
    nv = load_inventory(INV / "nvl72-rack.yaml")
    env = render_cvd_env(service_view(nv, {"tray05/gpu1": Isolated("tray05/gpu1", "card")}))
    assert "tray05) export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,2,3 ;;" in env
    ctx = ActionContext({"tray05/nic2": Isolated("tray05/nic2", "nic")}, nv)
    assert desired_taint(ctx, "tray05") == "gpu2"  # Kubernetes: a taint naming the card, no cordon
    req = ActionRequest("tray05/nic2", "nic", "isolate")
    assert SlurmAction().plan(req, ctx).skip and req.host == "tray05"


def _without(text: str, ca: str) -> str:
    """``text`` with adapter ``ca``'s whole section gone (as when a NIC falls off the bus)."""
    sections = re.split(r"(?m)^(?=CA ')", text)
    return "".join(s for s in sections if not s.startswith(f"CA '{ca}'"))


def test_a_nic_gone_from_ibstat_on_a_nic_per_card_platform_is_not_a_pass():
    """HGX has one NIC per GPU: 7 of its 8 rail adapters listed, every port listed up,
    passed (the rails could not be told, so nothing was judged missing)."""
    from sncheck.vendors import registry

    real = capture("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")  # 8 x 400G rails + 4 x 100G
    hgx = Expect(8, registry.platform("nvidia-hgx"))
    whole = check_ib_ports("n1", parse_ibstat(real), hgx)
    assert [r["ok"] for r in whole] == [True], whole
    gone = check_ib_ports("n1", parse_ibstat(_without(real, "mlx5_5")), hgx)
    assert [r["ok"] for r in gone] == [False]
    assert "7 MT4129 adapters listed" in gone[0]["message"] and "NIC is missing" in gone[0]["message"]
    # a management adapter gone is no rail missing; nor is a rail on a platform that does not say
    assert check_ib_ports("n1", parse_ibstat(_without(real, "mlx5_1")), hgx)[0]["ok"]
    assert check_ib_ports("n1", parse_ibstat(_without(real, "mlx5_5")), Expect(8))[0]["ok"]
