"""``sncheck inventory from-slurm``: parsers on the loopback cluster's real output, and the
inventory it writes running the mock connectivity layer unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sncheck.config import hostlist
from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory
from sncheck.slurm.cluster import compress, parse_gres_gpus, parse_scontrol_records, supernode_groups


@pytest.mark.parametrize("gres,gpus", [
    ("gpu:4", 4), ("gpu:a100:8(S:0-1)", 8), ("gpu:a100:2,gpu:v100:2,mps:400", 4), ("gpu", 1),
    ("(null)", None), ("mps:100", None), ("", None), ("gpu:h100:8(S:0-1),nic:2", 8),
])
def test_gres_gpu_counts(gres: str, gpus: int | None) -> None:
    assert parse_gres_gpus(gres) == gpus


@pytest.mark.parametrize("names,expr", [
    (["node1", "node2", "node3"], "node[1-3]"),
    (["node001", "node002", "node004"], "node[001-002,004]"),
    (["a1", "b2", "login"], "a1,b2,login"),
    (["gpu9", "gpu10", "gpu11"], "gpu[9-11]"),
])
def test_compress_round_trips(names: list[str], expr: str) -> None:
    assert compress(names) == expr
    assert hostlist.expand(expr) == names


def test_records_keep_values_with_spaces() -> None:
    line = ("NodeName=node3 Arch=x86_64 Gres=gpu:4 NodeAddr=10.0.0.3 OS=Linux 6.1.0 #1 SMP PREEMPT "
            "Reason=maintenance by ops [root@2026-11-30T10:00:00]")
    rec = parse_scontrol_records(line)[0]
    assert rec["OS"] == "Linux 6.1.0 #1 SMP PREEMPT" and rec["Reason"].startswith("maintenance by ops")


def test_groups_prefer_blocks_then_leaf_switches() -> None:
    tree = ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-2]\nSwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[3-4]\n"
            "SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[0-1]\n")
    assert supernode_groups(tree, ["n1", "n2", "n3", "n4"]) == ({"s0": ["n1", "n2"], "s1": ["n3", "n4"]}, "tree")
    block = "BlockName=b1 BlockIndex=0 Nodes=n[1-4] BlockSize=4\n"
    assert supernode_groups(block, ["n1", "n2", "n3", "n4"]) == ({"b1": ["n1", "n2", "n3", "n4"]}, "block")
    assert supernode_groups("", ["n1", "n2"]) == ({"all": ["n1", "n2"]}, "none")


@pytest.mark.slurm
def test_from_slurm_inventory_runs_mock_connectivity_unchanged(slurm_cluster, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cluster = slurm_cluster()  # 4 nodes x gpu:4, leaf0 = node[1-2], leaf1 = node[3-4]
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    out = tmp_path / "cluster.yaml"
    res = CliRunner().invoke(main, ["inventory", "from-slurm", "--out", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "Design values are sncheck's defaults" in text
    doc = yaml.safe_load(text)
    assert doc["backend"] == {"type": "slurm"}
    assert doc["supernodes"] == [{"name": "leaf0", "hosts": "node[1-2]", "cards_per_host": 4},
                                 {"name": "leaf1", "hosts": "node[3-4]", "cards_per_host": 4}]
    res = CliRunner().invoke(main, ["inventory", "check", str(out)], catch_exceptions=False)
    assert res.exit_code == 0 and "2 supernodes, 4 hosts, 16 cards" in res.output, res.output
    assert load_inventory(out).design["scale_up"].bandwidth_GBps == 450

    run_dir = tmp_path / "run"
    res = CliRunner().invoke(main, ["connectivity", "-i", str(out), "--backend", "mock", "--seed", "1",
                                    "--out", str(run_dir), "-q"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == "pass" and results["inventory"] == "slurm"
    assert results["layers"][0]["summary"]["pairs"] > 0

    # A partition: only its nodes (here the only partition, by name).
    res = CliRunner().invoke(main, ["inventory", "from-slurm", "--partition", "debug", "--scale-up", "900 GB/s,2 us"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(res.output)
    assert doc["name"] == "slurm-debug" and doc["design"]["scale_up"] == {"bandwidth": "900 GB/s", "latency": "2 us"}
    res = CliRunner().invoke(main, ["inventory", "from-slurm", "--partition", "nope"])
    assert res.exit_code in (2, 3) and "Traceback" not in res.output, res.output
