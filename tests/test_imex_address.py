"""An IMEX node down is named at its tray by the node's address (the inventory's
``imex_address``, else its SSH ``address``), and by IMEX node order only when no tray has
that address, saying which way it was found; where the two disagree, the addresses win
and nothing is guessed. Every path that runs the domain step is covered: the node check
of one tray, the Slurm backend's step, the mock, and real SSH to sshd trays.

The IMEX views are the real 18-node ``nvidia-imex-ctl -N`` capture (p6e-gb200) with
node #8 (172.31.52.239) UNAVAILABLE and its row and column N (sim_fabric.imex); the
trays are cabled as the capture lists them (tray{k+1} is node #k), and the inventory
lists them in another order."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory_text
from sncheck.run.nodecheck import NodeReport, check_facts
from sncheck.vendors import registry
from sncheck.vendors.nvidia import fabric, sim_fabric
from sncheck.vendors.parsers import strip_source_header

from imex_replay import replay_runner, slurm_fact_rows

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "nvl72" / "01_imex_ctl_N_18node_p6e_gb200.txt"
NODES = [(n["index"], n["address"]) for n in fabric.parse_imex_ctl(strip_source_header(CAPTURE.read_text()))["nodes"]]
TRAYS = [f"tray{k + 1:02d}" for k, _ in NODES]   # as cabled: tray{k+1} is IMEX node #k
IMEX_OF = {t: a for t, (_, a) in zip(TRAYS, NODES)}
DOWN = 8                                          # node #8 172.31.52.239: tray09's
SHUFFLED = TRAYS[:]
random.Random(72).shuffle(SHUFFLED)


def test_the_capture_and_the_shuffle_make_the_order_wrong() -> None:
    assert len(NODES) == 18 and NODES[DOWN] == (8, "172.31.52.239")
    # the inventory's 9th host is not tray09: mapping by host order would drain the wrong tray
    assert SHUFFLED[DOWN] != "tray09" and sorted(SHUFFLED) == TRAYS


def inventory_text(order: list[str], key: str | None = "imex_address", only: list[str] | None = None,
                   extra: dict[str, str] | None = None) -> str:
    """An NVL72 rack listing ``order``; each tray in ``only`` (default all) gets its real IMEX
    address under ``key`` (None: none); ``extra`` adds raw override text per tray."""
    lines = ["name: rack", "platform: nvidia-nvl72", "supernodes:",
             f"  - {{name: rack0, hosts: \"{','.join(order)}\"}}", "backend: {type: mock}", "hosts:"]
    for t in TRAYS:
        fields = []
        if key and t in (only if only is not None else TRAYS):
            fields.append(f"{key}: {IMEX_OF[t]}")
        if extra and t in extra:
            fields.append(extra[t])
        if fields:
            lines.append(f"  {t}: {{{', '.join(fields)}}}")
    if lines[-1] == "hosts:":
        lines.pop()
    return "\n".join(lines) + "\n"


def _runner(host: str):
    """What each NVL72 fact command prints on ``host`` (cabled as tray{k+1}) while node #8 is down."""
    return replay_runner(host, TRAYS.index(host), registry.platform("nvidia-nvl72"), (DOWN,))


def node_check(inv, trays=TRAYS) -> dict[str, list]:
    """Each tray's node check over its own view: the imex_node problems it reports."""
    out = {}
    for tray in trays:
        report = NodeReport(tray, 4, "inventory")
        check_facts(tray, 4, time.monotonic() + 60, report, inventory=inv, run=_runner(tray))
        out[tray] = [p for p in report.problems if p.rule == "imex_node"]
    return out


def slurm_rows(inv, monkeypatch) -> list[dict]:
    """The Slurm backend's host facts (the srun step faked: each tray's own rows)."""
    return slurm_fact_rows(inv, _runner, monkeypatch)


def imex_nodes(rows: list[dict]) -> dict[str, str]:
    return {r["host"]: r["message"] for r in rows if r.get("fact") == "imex_node"}


# --------------------------------------------------------------------------- by address

def test_imex_address_names_the_tray_in_a_shuffled_inventory_on_node_check_and_slurm(monkeypatch) -> None:
    inv = load_inventory_text(inventory_text(SHUFFLED))
    assert inv.hosts["tray09"].imex_address == "172.31.52.239"
    checks = node_check(inv)
    assert {t for t, ps in checks.items() if ps} == {"tray09"}, {t: ps for t, ps in checks.items() if ps}
    msg = checks["tray09"][0].message
    assert "IMEX node #8 172.31.52.239 is UNAVAILABLE in 1 of 1 trays'" in msg
    assert "node #8 is tray09 (by address 172.31.52.239, its inventory imex_address)" in msg
    named = imex_nodes(slurm_rows(inv, monkeypatch))
    assert list(named) == ["tray09"], named
    assert "is UNAVAILABLE in 18 of 18 trays'" in named["tray09"] and "by address 172.31.52.239" in named["tray09"]


def test_ssh_address_stands_in_when_no_imex_address_is_given(monkeypatch) -> None:
    # IMEX on the interface sncheck reaches the tray at: its SSH address is the node's
    inv = load_inventory_text(inventory_text(SHUFFLED, key="address"))
    named = imex_nodes(slurm_rows(inv, monkeypatch))
    assert list(named) == ["tray09"], named
    assert "node #8 is tray09 (by address 172.31.52.239, its inventory address)" in named["tray09"]


def test_mock_acts_the_imex_addresses_out_and_names_the_tray_by_address() -> None:
    from sncheck.backends.mock import MockBackend
    from sncheck.run.inputs import load_faults_text
    from sncheck.topology import Topology

    topo = Topology(load_inventory_text(inventory_text(SHUFFLED)))
    plan = load_faults_text("faults:\n  - {type: imex_down, target: tray09}\n", topo)
    rows: list[dict] = []
    MockBackend(topo, plan, seed=1).host_facts(tuple(topo.inventory.hosts), rows.append)
    named = imex_nodes(rows)
    assert list(named) == ["tray09"], named
    place = SHUFFLED.index("tray09")  # the mock's IMEX lists the inventory's hosts in its order
    assert f"IMEX node #{place} 172.31.52.239 is UNAVAILABLE in 18 of 18 trays'" in named["tray09"]
    assert "by address 172.31.52.239, its inventory imex_address" in named["tray09"]
    assert not [r for r in rows if not r["ok"] and r["host"] != "tray09"]


@pytest.mark.sshd
def test_imex_address_over_ssh_to_trays_listed_out_of_order(sshd_cluster, tmp_path: Path) -> None:
    from vendor_ssh import host_facts, install_replay

    cluster = sshd_cluster(18, TRAYS)
    for name in TRAYS:
        install_replay(cluster[name], "nvidia-imex-ctl", {"-N": sim_fabric.imex(down=(DOWN,))})
    hosts = "\n".join(f"  {h.name}: {{address: {h.address}, port: {h.port}, imex_address: {IMEX_OF[h.name]}}}"
                      for h in cluster)
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"name: nvl72-ssh\nplatform: nvidia-nvl72\nsupernodes:\n"
                   f"  - {{name: rack0, hosts: \"{','.join(SHUFFLED)}\"}}\n"
                   f"backend: {{type: ssh, dist_backend: gloo}}\nhosts:\n{hosts}\n")
    rows, findings = host_facts(inv, cluster, fabric_retry_s=0.0)
    named = imex_nodes(rows)
    assert list(named) == ["tray09"], named
    assert "IMEX node #8 172.31.52.239 is UNAVAILABLE in 18 of 18 trays'" in named["tray09"]
    assert "node #8 is tray09 (by address 172.31.52.239, its inventory imex_address)" in named["tray09"]
    assert "tray09" in {f.entity for f in findings if "IMEX node #8" in f.message}
    assert SHUFFLED[DOWN] not in {f.entity for f in findings if "IMEX node #8" in f.message}


# --------------------------------------------------------------------------- by order, or not at all

def test_without_addresses_the_order_names_the_tray_and_says_so(monkeypatch) -> None:
    inv = load_inventory_text(inventory_text(TRAYS, key=None))  # listed as cabled, no addresses
    checks = node_check(inv, ["tray01", "tray09"])
    assert checks["tray01"] == [] and len(checks["tray09"]) == 1
    assert ("node #8 is tray09 (by IMEX node order, no host has that address: the rack0 hosts taken in "
            "nodes_config.cfg order)") in checks["tray09"][0].message
    named = imex_nodes(slurm_rows(inv, monkeypatch))
    assert list(named) == ["tray09"] and "by IMEX node order, no host has that address" in named["tray09"]


def test_addresses_that_contradict_the_order_stop_the_order_from_naming_anyone(monkeypatch) -> None:
    # Four trays give their address and none of them sits at its node's place in the
    # inventory's order; node #8's address is nobody's: the order is not trusted, the
    # 9th host is not drained, every tray that sees the node down carries it.
    some = [t for t in SHUFFLED if t != "tray09" and SHUFFLED.index(t) != TRAYS.index(t)][:4]
    inv = load_inventory_text(inventory_text(SHUFFLED, only=some))
    named = imex_nodes(slurm_rows(inv, monkeypatch))
    assert set(named) == set(TRAYS), named
    first = min(some, key=TRAYS.index)
    assert (f"cannot tell which tray is node #8: no host has address 172.31.52.239, and the rack0 host order "
            f"disagrees with the addresses (node #{TRAYS.index(first)} is {first} by address, "
            f"{SHUFFLED[TRAYS.index(first)]} by order)") in named[SHUFFLED[DOWN]]
    assert not any("by IMEX node order" in m for m in named.values())


def test_the_host_at_the_nodes_place_with_another_imex_address_is_not_named(monkeypatch) -> None:
    inv = load_inventory_text(inventory_text(TRAYS, key=None, extra={"tray09": "imex_address: 10.0.0.9"}))
    named = imex_nodes(slurm_rows(inv, monkeypatch))
    assert set(named) == set(TRAYS), named
    assert ("cannot tell which tray is node #8: no host has address 172.31.52.239, and tray09, the host at its "
            "place in the order, has imex_address 10.0.0.9") in named["tray01"]


# --------------------------------------------------------------------------- bad inventories

@pytest.mark.parametrize("extra, at, needle", [
    ({"tray12": f"imex_address: {IMEX_OF['tray09']}"}, "tray12",
     "hosts tray09 and tray12 have the same imex_address 172.31.52.239: each IMEX node is one tray"),
    ({"tray05": "imex_address: tray05-imex"}, "tray05",
     "hosts.tray05.imex_address: must be an IP address (as the IMEX node list names the node), got 'tray05-imex'"),
    ({"tray05": "imex_address: 172.31.52.2399"}, "tray05",
     "hosts.tray05.imex_address: must be an IP address (as the IMEX node list names the node), got '172.31.52.2399'"),
    ({"tray05": "imex_address: 7"}, "tray05", "hosts.tray05.imex_address: must be a non-empty string, got 7"),
])
def test_bad_imex_address_is_one_line_with_file_and_line_exit_2(tmp_path: Path, extra, at, needle) -> None:
    text = inventory_text(TRAYS, key=None, extra={"tray09": f"imex_address: {IMEX_OF['tray09']}", **extra})
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), start=1) if s.startswith(f"  {at}:"))
    for argv in (["inventory", "check", str(path)],
                 ["connectivity", "-i", str(path), "--backend", "mock", "--out", str(tmp_path / "run"), "-q"]):
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 2, result.output
        assert f"{path}:{line}: {needle}" in result.output, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_imex_address_takes_ipv6_and_is_kept_canonical() -> None:
    inv = load_inventory_text(inventory_text(TRAYS, key=None, extra={"tray01": "imex_address: 'FD00:0::1'"}))
    assert inv.hosts["tray01"].imex_address == "fd00::1" and inv.hosts["tray02"].imex_address is None
