"""Mock host facts: tool output rendered from real captures, read by the SSH backend's checks."""

from dataclasses import replace
from pathlib import Path

import pytest

from sncheck.backends import mockfacts
from sncheck.backends.mock import MockBackend
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import registry
from sncheck.vendors.nvidia import checks as nvidia_checks
from sncheck.vendors.nvidia import sim as nvidia_sim
from sncheck.vendors.parsers import strip_source_header
from sncheck.vendors.sim import HostState, capture

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))
DEFAULT = registry.vendor_of(None).commands_for(None)  # an inventory without platform:
SIM_WORDS = ("simulat", "mock", "fake", mockfacts.PLACEHOLDER)


def facts(faults: str = "", hosts=None, confirm: bool = False) -> list[dict]:
    plan = load_faults_text(f"faults:\n{faults}" if faults else "faults: []", TOPO)
    b = MockBackend(TOPO, plan, seed=0)
    if confirm:
        b.begin_confirmation()
    rows: list[dict] = []
    b.host_facts(tuple(hosts or TOPO.hosts), rows.append)
    return rows


def failed(rows: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["host"], r["fact"]): r for r in rows if not r["ok"]}


def test_clean_hosts_pass_every_check_the_ssh_backend_runs():
    rows = facts()
    assert not failed(rows)
    per_host = {f for r in rows if r["host"] == "node001" for f in [r["fact"]]}
    expected = {f for cmd in DEFAULT for f in cmd.facts} | {"reachable", "kernel_log"}  # the log as an SSH host's
    assert per_host == expected
    assert all(not any(w in r["message"].lower() for w in SIM_WORDS) for r in rows)


@pytest.mark.parametrize("fault, host, fact, words, entity", [
    ("{type: ecc_uncorrectable, target: node009/gpu2, count: 3}", "node009", "ecc", "DRAM Uncorrectable 3",
     "node009/gpu2"),
    ("{type: remap_pending, target: node009/gpu1}", "node009", "remapped_rows", "row remap pending", "node009/gpu1"),
    ("{type: nvlink_down, target: node010/gpu0, links: 2}", "node010", "nvlink",
     "GPU 0 link 16 inactive, GPU 0 link 17 inactive", "node010/gpu0"),
    ("{type: nvlink_down, target: node010/gpu3, links: 40}", "node010", "nvlink", "all links are inactive",
     "node010/gpu3"),
    ("{type: ib_port_down, target: node011, port: 2}", "node011", "ib_ports", "mlx5_1 port 1 Down/Polling",
     "node011/nic1"),
    ("{type: thermal_throttle, target: node012/gpu3, factor: 0.8}", "node012", "clock_reasons",
     "HW Thermal Slowdown active", "node012/gpu3"),
    ("{type: missing_tool, target: node013, tool: dcgmi}", "node013", "dcgmi_diag",
     "dcgmi not found on the PATH (exit 127)", None),
    ("{type: down_host, target: node014}", "node014", "reachable", "node014: unreachable", None),
])
def test_each_host_fault_fails_its_fact_only_on_its_host(fault, host, fact, words, entity):
    bad = failed(facts("  - " + fault))
    assert list(bad) == [(host, fact)], bad
    row = bad[host, fact]
    # the tool's output says which device (nvidia-smi's GPU sections, the rail's CA); the
    # missing tool and the unreachable host are the host's
    assert row.get("entity") == entity
    assert words in row["message"] and row["message"].startswith((entity or host) + ":")
    assert not any(w in row["message"].lower() for w in SIM_WORDS)
    assert "cards" not in row  # one row per device, the device named in the row
    # transient: gone by the confirmation retest
    assert not failed(facts("  - " + fault.replace("}", ", transient: true}"), confirm=True))
    assert failed(facts("  - " + fault, confirm=True)) == bad


def test_missing_nvidia_smi_skips_its_later_commands_as_ssh_does():
    bad = failed(facts("  - {type: missing_tool, target: node002, tool: nvidia-smi}", hosts=["node002"]))
    nvsmi = {f for cmd in DEFAULT if cmd.tool == "nvidia-smi" for f in cmd.facts}
    assert {f for _, f in bad} == nvsmi
    assert {r["status"] for r in bad.values()} == {"missing_tool"}


def test_remap_pending_serves_the_real_captures_section():
    state = HostState("h", 2, None, load_faults_text(
        "faults: [{type: remap_pending, target: node001/gpu1}]", TOPO).faults)
    state = replace(state, host="node001")
    text = nvidia_sim.render("query", state).stdout
    section = "\n".join(nvidia_sim._remap_pending_section())
    assert text.count(section) == 1 and "Pending                           : Yes" in section
    real = strip_source_header((ROOT / "fixtures/real" / nvidia_sim.REMAP_CAPTURE).read_text())
    assert section in real
    # the rest of the block is the H100 capture's
    assert "NVIDIA H100 80GB HBM3" in text and capture(nvidia_sim.Q_CAPTURE).count("Remapped Rows") == 8


def test_a_command_without_a_renderer_is_an_error_not_a_pass():
    q = nvidia_checks.COMMANDS["query"]
    cmd = hostfacts.FactCommand("npu_health", "npu-smi", ("npu-smi", "info", "-t", "health"),
                                q.parse, q.check, ("npu_health",))
    assert nvidia_sim.render("npu_health", mockfacts.host_state(TOPO, "node001", ())) is None
    state = mockfacts.host_state(TOPO, "node001", ())
    rows = list(hostfacts.check_host("node001", hostfacts.Expect(4), [cmd], lambda c: mockfacts.render(c, state)))
    assert [(r["ok"], r["status"]) for r in rows] == [(False, "error")]
    assert "no output for this host's platform" in rows[0]["message"]


def test_hosts_in_the_same_state_share_one_rendering():
    mockfacts._checked.cache_clear()
    facts()
    assert mockfacts._checked.cache_info().currsize == 1


def test_collective_corruption_breaks_reductions_not_payloads():
    from sncheck.probeplan import ConnectivityPlan, Group, Round, StressPlan

    plan = load_faults_text("faults: [{type: collective_corruption, target: node001/gpu1}]", TOPO)
    b = MockBackend(TOPO, plan, seed=0)
    rows: list[dict] = []
    pairs = (("node001/gpu0", "node001/gpu1"), ("node001/gpu1", "node001/gpu2"))
    b.p2p(ConnectivityPlan(rounds=(Round(0, "scale_up", pairs),), hosts=()), rows.append)
    b.collectives(StressPlan(groups=(Group("host:node001", "host", tuple(TOPO.cards_of_host("node001"))),
                                     Group("host:node002", "host", tuple(TOPO.cards_of_host("node002")))),
                             collectives=("all_reduce",), sizes=(4096,), warmup=1, iters=2), rows.append)
    assert all(r["checksum_ok"] for r in rows if r["kind"] == "p2p")
    wrong = {r["group"]: r["wrong"] for r in rows if r["kind"] == "collective"}
    assert wrong["host:node001"] > 0 and wrong["host:node002"] == 0


HGX = "platform: nvidia-hgx\nsupernodes:\n  - {name: a, hosts: h1}\n  - {name: b, hosts: h2}\n"


@pytest.mark.parametrize("inventory", ["hgx", "nvl72-rack", "mi300x-pod", "cm384"])
def test_every_platform_renders_every_fact_command_through_one_interface(inventory):
    """One interface (sncheck.vendors.sim): the host's vendor's ``sim`` module renders each
    fact command of its platform, and the SSH backend's checks pass every clean host."""
    from sncheck.run.inputs import load_inventory_text
    from sncheck.vendors.sim import simulator

    inv = load_inventory_text(HGX) if inventory == "hgx" else \
        load_inventory(ROOT / f"fixtures/inventories/{inventory}.yaml")
    topo = Topology(inv)
    host = next(iter(inv.hosts))
    plat = inv.platform_of(host)
    state = mockfacts.host_state(topo, host, ())
    sim = simulator(plat.name)
    assert sim is not None and sim.__name__ == f"sncheck.vendors.{plat.vendor}.sim"
    for cmd in registry.vendor_of(plat).commands_for(plat):
        out = sim.render(cmd.name, state)
        assert out is not None and out.exit_code == 0 and out.stdout.strip(), cmd.name
    rows: list[dict] = []
    mockfacts.host_facts(topo, (), tuple(inv.hosts), rows.append)
    assert not [r["message"] for r in rows if not r["ok"]]
    mine = {r["fact"] for r in rows if r["host"] == host}
    assert mine >= {f for cmd in registry.vendor_of(plat).commands_for(plat) for f in cmd.facts}
    assert not any(w in r["message"].lower() for r in rows for w in SIM_WORDS)


def test_a_sixteen_card_host_lists_each_card_once_and_names_the_ecc_card():
    """A host on no platform with more cards than the -q capture's eight (round 5's r5-22:
    every clean 16-card server failed 'uuid listed twice', and r5-23's ECC card past the
    eighth was named as its host): each card has a UUID of its own."""
    topo = Topology(load_inventory(ROOT / "tests/data/scenarios-r5/inv-910b-16.yaml"))
    clean = MockBackend(topo, load_faults_text("faults: []", topo), seed=0)
    rows: list[dict] = []
    clean.host_facts(("ay2",), rows.append)
    assert rows and not failed(rows)
    uuids = [line.split(":", 1)[1].strip() for line in nvidia_sim.render("query", mockfacts.host_state(topo, "ay2", ()))
             .stdout.splitlines() if line.strip().startswith("GPU UUID")]
    assert len(uuids) == 16 == len(set(uuids))
    plan = load_faults_text("faults: [{type: ecc_uncorrectable, target: ay2/gpu12, count: 2}]", topo)
    rows = []
    MockBackend(topo, plan, seed=0).host_facts(("ay2",), rows.append)
    bad = failed(rows)
    assert list(bad) == [("ay2", "ecc")] and bad[("ay2", "ecc")].get("entity") == "ay2/gpu12"


def _host_by_host(topo: Topology, faults, hosts) -> list[dict]:
    """The host facts as each host's own state renders them (the mock before hosts of one
    plain state shared it): host_state, checks and relabelling, host by host."""
    from sncheck.vendors.hostjudge import FactJudge

    inv = topo.inventory
    judge = FactJudge(inv)
    down = {f.target for f in faults if f.type == "down_host"}
    rows: list[dict] = []

    def fan_out(todo, reached, lost) -> None:
        for h in todo:
            if h in down:
                lost(h, judge.unreachable(h, "ssh", "connect timed out"))
                continue
            checks = tuple(sorted(inv.checks_of(h).items()))
            state = mockfacts.host_state(topo, h, faults)
            reached(h, "ssh", "connected",
                    rows=[*(mockfacts._relabel(r, h, keys) for r, keys in mockfacts._checked(state, checks)),
                          *(mockfacts._relabel(r, h) for r in mockfacts._kernel_rows(state, True))])

    judge.read(tuple(hosts), fan_out, rows.append)
    return rows


MIXED = """name: mixed
design: {scale_up: {bandwidth: "450 GB/s", latency: "3 us"}, scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}}
checks: {dcgmi: false}
supernodes:
  - {name: a, hosts: 'm[01-03]', cards_per_host: 8}
  - {name: b, hosts: 'm[04-05]', cards_per_host: 4, checks: {dcgmi: true}}
  - {name: c, hosts: 'm[06-08]', cards_per_host: 8, checks: {dcgmi: true}}
backend: {type: mock}
"""


@pytest.mark.parametrize("inventory, faults", [
    ("mixed", "  - {type: missing_tool, target: m02, tool: nvidia-smi}\n  - {type: down_host, target: m07}\n"
              "  - {type: ecc_uncorrectable, target: m05/gpu1}\n"),
    ("fixtures/inventories/nvl72-2rack.yaml", "  - {type: imex_down, target: r0tray03}\n"
                                              "  - {type: ecc_uncorrectable, target: r1tray02/gpu0}\n"),
], ids=["plain-hosts", "a-platform"])
def test_hosts_sharing_a_plain_state_read_as_each_rendered_on_its_own(tmp_path, inventory, faults):
    path = ROOT / inventory
    if inventory == "mixed":
        path = tmp_path / "mixed.yaml"
        path.write_text(MIXED)
    topo = Topology(load_inventory(path))
    plan = load_faults_text(f"faults:\n{faults}", topo)
    rows: list[dict] = []
    MockBackend(topo, plan, seed=0).host_facts(tuple(topo.hosts), rows.append)
    assert rows == _host_by_host(topo, tuple(plan.active()), topo.hosts)
    assert {r["host"] for r in rows} == set(topo.hosts) and any(not r["ok"] for r in rows)
