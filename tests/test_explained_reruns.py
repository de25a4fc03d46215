"""A culprit an earlier layer named explains a stress group's slowness or failure only where the
group, run again without the cards it sits on, is no longer slow (sncheck/layers/stress.py
without_explainers, without_named; sncheck/health/groups.py explainers). Assumed instead, it hid
every fault beside it that only that group showed (reviews17 #1): a transient NIC the retest
released silenced a 0.3x scale-out link above 128 MiB (exit 0), and a dead leaf failed the cross
group whose other cards then went unmeasured at the size a slow NIC showed at. A rerun is never
its source's peer (each would predict the other). Mock gates on r10's top-of-rack shape, ~5 s each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.groups import explainers
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology

INV = Path(__file__).parent / "data" / "scenarios-r10" / "inv-tor.yaml"
LINK = "{type: degraded_link, target: 'pc1/gpu0<->pd1/gpu0', factor: 0.3, above: 128M}"


def _gate(tmp_path: Path, *faults: str) -> tuple[int, list[dict], dict]:
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "pre-upgrade-gate", "-i", str(INV), "--backend", "mock", "--faults",
                                  str(plan), "--seed", "1", "--out", str(out), "-q"])
    results = json.loads((out / "results.json").read_text())
    stress = next(layer["summary"] for layer in results["layers"] if layer["name"] == "stress")
    named = [f for f in results["findings"] if f["severity"] in ("warning", "critical")]
    return r.exit_code, named, stress


@pytest.mark.parametrize("first", ["{type: slow_nic, target: pa1, port: 1, factor: 0.4, transient: true}",
                                   "{type: thermal_throttle, target: pa1/gpu0}"], ids=["transient-nic", "throttle"])
def test_a_culprit_on_the_cross_group_does_not_hide_a_link_only_that_group_shows(tmp_path: Path, first: str) -> None:
    code, named, stress = _gate(tmp_path, first, LINK)
    assert code == 1, named
    assert "pc1/gpu0<->pd1/gpu0" in {f["entity"] for f in named}, named
    assert "cross:gpu0~pa1/gpu0" in stress["again"], stress


def test_a_dead_leaf_does_not_hide_a_nic_slow_only_at_the_large_sizes(tmp_path: Path) -> None:
    code, named, stress = _gate(tmp_path, "{type: dead_switch, target: 'leaf:tor-c'}",
                                "{type: slow_nic, target: pb1, port: 1, factor: 0.4, above: 128M}")
    assert code == 1
    assert {"leaf:tor-c", "pb1/nic0"} <= {f["entity"] for f in named}, named
    assert stress["again"] == [f"cross:gpu{k}~pc1/gpu{k}+pc2/gpu{k}" for k in range(4)], stress  # one a rail
    assert 268435456 in stress["narrowing_sizes"], stress


def test_the_cards_a_culprit_sits_on_in_a_group() -> None:
    topo = Topology(load_inventory(INV))
    cross = [f"{h}/gpu0" for h in ("pa1", "pa2", "pb1", "pb2", "pc1", "pc2", "pd1", "pd2")]
    known = frozenset({("pa1/nic0", "nic"), ("leaf:tor-c", "switch"), ("pb2", "host"), ("pd1/gpu0<->pd2/gpu0", "link")})
    assert explainers(cross, known, topo) == {"pa1/gpu0", "pb2/gpu0", "pc1/gpu0", "pc2/gpu0", "pd1/gpu0", "pd2/gpu0"}
    # inside one host no NIC or leaf is crossed: neither sits on that group
    host = [f"pa1/gpu{i}" for i in range(4)]
    assert explainers(host, frozenset({("pa1/nic0", "nic"), ("leaf:tor-a", "switch")}), topo) == set()
