"""The fault plan: every type of DESIGN.md loads, bad plans fail with file and line."""

from pathlib import Path

import pytest

from sncheck import backends
from sncheck.errors import ConfigError
from sncheck.config.faultplan import ACTED_BY, FAULT_TYPES, HOST_TOOL_FAULTS, PROBE_FAULTS, Fault, FaultPlan
from sncheck.run.inputs import load_faults, load_faults_text, load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))

DESIGN_TYPES = ("slow_card degraded_link dead_link down_host corrupt_card jittery_card high_latency_card "
                "diverge collective_corruption ecc_uncorrectable remap_pending nvlink_down ib_port_down "
                "thermal_throttle missing_tool fabric_incomplete fabric_degraded clique_split imex_down "
                "xgmi_link_down npu_alarm hccn_link_down").split()
EXTENSIONS = ["slow_nic", "high_latency_link", "slow_switch", "dead_switch", "switch_port_down"]  # beyond DESIGN.md's list; README's fault table documents each


def plan(text: str) -> FaultPlan:
    return load_faults_text("faults:\n" + text, TOPO, "plan.yaml")


def test_every_design_type_is_known_and_acted_by_the_mock():
    assert sorted(FAULT_TYPES) == sorted(DESIGN_TYPES + EXTENSIONS)
    readme = (ROOT / "README.md").read_text()
    assert all(f"| `{t}` |" in readme for t in EXTENSIONS)
    assert set(ACTED_BY["mock"]) == set(FAULT_TYPES)
    # a backend with no line acts out no fault: the run refuses each (tests/test_run_core.py)
    assert set(ACTED_BY) <= set(backends.BACKENDS)
    # the local machine breaks no links or hosts and owns its tools
    assert set(ACTED_BY["local"]) == set(PROBE_FAULTS)
    assert set(ACTED_BY["ssh"]) == set(PROBE_FAULTS) | set(HOST_TOOL_FAULTS)


def test_shipped_demo_fault_plans_load():
    # (the platform-*.yaml plans target their platforms' inventories; tested with them)
    for path in sorted((ROOT / "fixtures/faults").glob("demo-*.yaml")):
        assert load_faults(path, TOPO).faults, path


def test_host_level_types_with_parameters_and_defaults():
    p = plan("""
  - {type: collective_corruption, target: node004/gpu1}
  - {type: ecc_uncorrectable, target: node009/gpu2, count: 3}
  - {type: ecc_uncorrectable, target: node009/gpu3}
  - {type: remap_pending, target: node009/gpu1, transient: true}
  - {type: nvlink_down, target: node010/gpu0, links: 2}
  - {type: ib_port_down, target: node011, port: 4}
  - {type: thermal_throttle, target: node012/gpu3}
  - {type: missing_tool, target: node013, tool: dcgmi}
""")
    f = {(x.type, x.target): x for x in p.faults}
    assert f["ecc_uncorrectable", "node009/gpu2"].count == 3
    assert f["ecc_uncorrectable", "node009/gpu3"].count == 1
    assert f["remap_pending", "node009/gpu1"].transient
    assert f["nvlink_down", "node010/gpu0"].links == 2
    assert f["ib_port_down", "node011"].port == 4
    assert f["thermal_throttle", "node012/gpu3"].factor == 0.8
    assert f["missing_tool", "node013"].tool == "dcgmi"
    assert f["ecc_uncorrectable", "node009/gpu2"].to_dict() == {
        "type": "ecc_uncorrectable", "target": "node009/gpu2", "count": 3}
    # the transient ones end before the retest
    assert len(p.active(ended_transient=True)) == len(p.faults) - 1
    assert [x.type for x in p.on_host("node009")] == ["ecc_uncorrectable", "ecc_uncorrectable", "remap_pending"]
    assert [x.type for x in p.on_host("node009", ended_transient=True)] == ["ecc_uncorrectable"] * 2


@pytest.mark.parametrize("text, words", [
    ("{type: missing_tool, target: node013}", "faults[0].tool: required key missing"),
    ("{type: missing_tool, target: node013, tool: 'rm -rf'}", "program name"),
    ("{type: ecc_uncorrectable, target: node009/gpu2, count: 0}", "faults[0].count: must be an integer from 1 to 1000000"),
    ("{type: ecc_uncorrectable, target: node009/gpu2, count: 1.5}", "faults[0].count: must be an integer from 1 to 1000000"),
    ("{type: nvlink_down, target: node010/gpu0, links: true}", "faults[0].links: must be an integer from 1 to 1000000"),
    ("{type: ib_port_down, target: node011, port: 5}", "beyond node011's 4 rails"),
    ("{type: ib_port_down, target: node011/gpu0}", "is not a host"),
    ("{type: ecc_uncorrectable, target: node009}", "is not a card"),
    ("{type: thermal_throttle, target: node012/gpu3, factor: 1.2}", "faults[0].factor: must be a number above 0 and below 1"),
    ("{type: remap_pending, target: node009/gpu1, count: 2}", "faults[0].count: unknown key 'count' in a remap_pending fault"),
    ("{type: clique_split, target: node099}", "is not a host"),
    ("{type: npu_alarm, target: node004/gpu1, transient: yes please}", "faults[0].transient: must be true or false"),
])
def test_bad_faults_name_file_and_line(text, words):
    with pytest.raises(ConfigError) as e:
        plan("  - " + text)
    assert words in str(e.value)
    assert str(e.value).startswith("plan.yaml:2: ")


def test_backends_refuse_what_they_cannot_act_out():
    p = FaultPlan((Fault("ecc_uncorrectable", "node009/gpu2", count=1), Fault("dead_link", "a<->b")))
    assert [f.type for f in p.unsupported("local")] == ["ecc_uncorrectable", "dead_link"]
    assert [f.type for f in p.unsupported("ssh")] == ["dead_link"]
    assert p.unsupported("mock") == []
