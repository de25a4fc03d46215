"""Device-level host facts over real SSH (sshd on loopback, fake tools replaying real
captures): one bad GPU in a whole ``nvidia-smi -q`` is that card's finding, isolated by
masking it, never by draining its host; a retest that lists other GPUs is a finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_ssh_backend import (CSV_LINES, PROFILES, REAL, install_profile, install_python, rules_without_timing_peers,
                              write_inventory)
from test_vendor_nvidia import _install_tray, _tray_xml

from sncheck.backends.ssh import SshBackend
from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology
from sncheck.vendors.parsers import strip_source_header
from sncheck.vendors.sim import own_ids

pytestmark = pytest.mark.sshd

CLEAN8 = "nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt"       # azurehpc's good 8x A100
BAD8 = "nvidia-smi-q/09_q_d_page_retirement_8gpu_a100_pending_blacklist_4gpus.txt"  # and its bad twin
UUIDS = [  # nvidia-smi nvlink -s 05 (the same 8x A100 profile), GPU 0..7
    "GPU-5269b708-678a-b1a8-60f0-c90406537486", "GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4",
    "GPU-483e6bb6-bb11-8916-e22f-d1d69abbafaa", "GPU-6e4fbadc-10d9-a63a-8988-9a0d320ff1a0",
    "GPU-82ef2c67-965f-a411-1413-f5e1d756bcdb", "GPU-375df896-019b-a009-42e5-ce9ed21bd8cc",
    "GPU-68d0f80e-e2f6-7717-ce0c-ea5f17b6a180", "GPU-754035b4-4708-efcd-b261-623aea38bcad"]
PLAYBOOK = ("name: ssh-devices\nlayers:\n  - connectivity: {bw_bytes: 64K, lat_iters: 3, bw_iters: 1}\n"
            "gate: warning\n")


def csv(uuids: list[str]) -> list[str]:
    return [f"{i}, NVIDIA A100-SXM4-80GB, {u}, 0000000{i + 1}:00:00.0, 81920 MiB, 535.86.10, 4, 4, 16, 16, 33, "
            "62.29 W, 0" for i, u in enumerate(uuids)]


@pytest.fixture(autouse=True)
def a100x8():
    CSV_LINES["a100x8"] = csv(UUIDS)
    PROFILES["a100x8"] = {**PROFILES["a100"], "q": CLEAN8, "csv": "a100x8"}
    yield
    PROFILES.pop("a100x8")
    CSV_LINES.pop("a100x8")


def one_bad_gpu() -> str:
    """The real clean 8x A100 listing with GPU 00000004 (section 4, card 3) at a pending
    page blacklist, as its bad twin (capture 09) prints it: one word changed."""
    text = strip_source_header((REAL / CLEAN8).read_text())
    head, sep, rest = text.partition("GPU 00000004:00:00.0\n")
    section, sep2, tail = rest.partition("\n\n")
    assert "Pending Page Blacklist            : No" in section
    return head + sep + section.replace(": No", ": Yes") + sep2 + tail


def test_one_bad_gpu_is_masked_and_its_host_is_not_drained(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cluster = sshd_cluster(1, ["node1"])
    install_profile(cluster["node1"], "a100x8", cards=8)
    (cluster["node1"].directory / "data" / "q").write_text(one_bad_gpu())
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=8)
    pb = tmp_path / "pb.yaml"
    pb.write_text(PLAYBOOK)
    out, state = tmp_path / "run", tmp_path / "state"
    r = CliRunner().invoke(main, [
        "run", str(pb), "-i", str(inv), "--backend", "ssh", "--rules", str(rules_without_timing_peers(tmp_path / "r.yaml")),
        "--known-hosts", str(cluster.known_hosts), "--ssh-config", str(cluster.ssh_config), "--out", str(out), "-q",
        "--state-dir", str(state), "--apply", "--via", "hostfile", "--via", "cuda_visible_devices", "--via", "slurm"])
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    assert [(f["entity"], f["entity_kind"], f["rule"]) for f in res["findings"]] == [
        ("node1/gpu3", "card", "host-fact-hardware-fault")], res["findings"]
    assert "GPU 00000004:00:00.0: page retirement pending" in res["findings"][0]["message"]
    assert [(i["entity"], i["action"], i["applied"]) for i in res["isolation"]] == [
        ("node1/gpu3", "quarantine", False), ("node1/gpu3", "isolate", True)]
    # masked: the hostfile slot and the device list lose card 3; the host stays in service
    assert "node1 slots=7" in (out / "hostfile.txt").read_text()
    assert (out / "exclude_hosts.txt").read_text() == ""
    assert json.loads((out / "cuda_visible_devices.json").read_text()) == {"node1": "0,1,2,4,5,6,7"}
    env = (out / "cuda_visible_devices.env").read_text()
    assert "node1) export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,1,2,4,5,6,7 ;;" in env
    audit = [json.loads(ln) for ln in (state / "audit.jsonl").read_text().splitlines()]
    steps = [(a["via"], a["outcome"], a["argv"], a["message"]) for a in audit
             if a["action"] == "isolate" and a.get("phase") != "begin"]  # a begin line before each host acts
    assert [(v, o) for v, o, _, _ in steps] == [("hostfile", "ok"), ("cuda_visible_devices", "ok"),
                                                ("slurm", "skipped")]
    assert all(argv == [] for _, _, argv, _ in steps)  # no scontrol: nothing drained
    for via, outcome, _, message in steps:
        print(f"isolate node1/gpu3 via {via}: {outcome}: {message}")


def test_an_nvl72_tray_with_one_limited_capacity_gpu_masks_that_gpu(sshd_cluster, tmp_path: Path) -> None:
    """The issue's example over SSH: the real GB200 tray's nvidia-smi -q -x with GPU 1 at
    Bandwidth Limited Capacity is a warning on tray01/gpu1, confirmed by the retest and
    isolated by masking the GPU; the tray keeps its three others."""
    pytest.importorskip("torch")
    cluster = sshd_cluster(1, ["tray01"])
    _install_tray(cluster["tray01"], _tray_xml(1, limited_gpu=1))
    install_python(cluster["tray01"])
    inv = tmp_path / "inv.yaml"
    inv.write_text(  # one tray of a rack; its IMEX view lists the 18-node capture, so IMEX is off here
        "name: one-tray\nplatform: nvidia-nvl72\n"
        'design:\n  scale_up: {bandwidth: "0.001 GB/s", latency: "100 ms"}\n'
        "supernodes:\n  - {name: rack0, hosts: tray01, checks: {nvidia-imex-ctl: false}}\n"
        "backend: {type: ssh, dist_backend: gloo}\n"
        f"hosts:\n  tray01: {{address: {cluster['tray01'].address}, port: {cluster['tray01'].port}}}\n")
    pb = tmp_path / "pb.yaml"
    pb.write_text(PLAYBOOK)
    out, state = tmp_path / "run", tmp_path / "state"
    r = CliRunner().invoke(main, [
        "run", str(pb), "-i", str(inv), "--backend", "ssh", "--rules", str(rules_without_timing_peers(tmp_path / "r.yaml")),
        "--known-hosts", str(cluster.known_hosts), "--ssh-config", str(cluster.ssh_config), "--out", str(out), "-q",
        "--state-dir", str(state), "--apply", "--via", "hostfile", "--via", "cuda_visible_devices", "--via", "slurm"])
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    assert [(f["entity"], f["entity_kind"], f["severity"]) for f in res["findings"]] == [
        ("tray01/gpu1", "card", "warning")], res["findings"]
    assert "Bandwidth Limited Capacity" in res["findings"][0]["message"]
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == [("tray01/gpu1", "quarantine"),
                                                                      ("tray01/gpu1", "isolate")]
    assert "tray01 slots=3" in (out / "hostfile.txt").read_text()
    assert json.loads((out / "cuda_visible_devices.json").read_text()) == {"tray01": "0,2,3"}
    audit = [json.loads(ln) for ln in (state / "audit.jsonl").read_text().splitlines()]
    assert all(a["argv"] == [] for a in audit)  # nothing ran: no scontrol drain
    for a in audit:
        if a["action"] == "isolate" and a.get("phase") != "begin":
            print(f"isolate tray01/gpu1 via {a['via']}: {a['outcome']}: {a['message']}")


def test_several_bad_gpus_of_a_real_listing_are_one_card_each_and_a_changed_listing_is_a_finding(
        sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(1, ["node1"])
    install_profile(cluster["node1"], "a100x8", cards=8)
    data = cluster["node1"].directory / "data"
    (data / "q").write_text(strip_source_header((REAL / BAD8).read_text()))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=8)
    backend = SshBackend(Topology(load_inventory(inv)), known_hosts=str(cluster.known_hosts),
                         ssh_config=str(cluster.ssh_config))
    try:
        first: list[dict] = []
        backend.host_facts(("node1",), first.append)
        bad = sorted((r.get("entity"), r["fact"]) for r in first if not r["ok"])
        assert bad == [(f"node1/gpu{i}", "retired_pages") for i in (1, 3, 5, 7)]
        # the retest reads another machine's GPUs (a swapped board, another node behind the name)
        mine = [own_ids(u, "node1") for u in UUIDS]  # node1's own GPUs (the harness's, by its name)
        (data / "csv").write_text("\n".join(csv(mine[:7] + ["GPU-0e0e0e0e-0000-4000-8000-000000000007"])) + "\n")
        again: list[dict] = []
        backend.begin_confirmation()
        backend.host_facts(("node1",), again.append)
    finally:
        backend.close()
    changed = [r for r in again if r["fact"] == "devices_changed"]
    assert len(changed) == 1 and not changed[0]["ok"] and changed[0].get("entity") is None
    assert "the devices changed since the first read" in changed[0]["message"]
    assert f"gone: {mine[7]}" in changed[0]["message"] and "new: GPU-0e0e0e0e" in changed[0]["message"]
    assert not [r for r in first if r["fact"] == "devices_changed"]
