"""What the held-out replay of issue 29 (tests/unseen_scenarios.py, on the inventories of
tests/data/inventories-unseen) found, one test a class of cause."""

from pathlib import Path

from sncheck.backends.mock import MockBackend
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
NVL36X2 = Topology(load_inventory(ROOT / "tests/data/inventories-unseen/nvl36x2-pair.yaml"))


def _facts(topo: Topology, faults: str = "") -> list[dict]:
    plan = load_faults_text(f"faults:\n{faults}" if faults else "faults: []", topo)
    rows: list[dict] = []
    MockBackend(topo, plan, seed=0).host_facts(tuple(topo.hosts), rows.append)
    return rows


def test_an_nvlink_domain_of_nine_trays_lists_nine_imex_nodes():
    """A supernode of 9 NVL72-platform trays (an NVL36x2 rack's domain): the simulated
    nvidia-imex-ctl -N listed the 18 nodes of its capture on every tray, and every tray of a
    clean cluster failed 'IMEX domain UP: 18/18 nodes READY: 18 IMEX nodes, the supernode
    has 9 hosts' (36 critical host findings, the gate failed on a clean run)."""
    rows = [r for r in _facts(NVL36X2) if r["fact"] == "imex_domain"]
    assert len(rows) == 36
    assert all(r["ok"] for r in rows), [r["message"] for r in rows if not r["ok"]][:2]
    assert {r["message"].split(":")[1].strip() for r in rows} == {"IMEX domain UP"}
    assert all("9/9 nodes READY" in r["message"] for r in rows), rows[0]["message"]


def test_a_tray_down_in_a_nine_tray_domain_is_that_tray():
    rows = _facts(NVL36X2, "  - {type: imex_down, target: ra-t04}\n")
    bad = {r["host"] for r in rows if not r["ok"]}
    assert bad == {"ra-t04"}, bad
