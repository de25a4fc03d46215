"""A PortCounters error counter does not wrap: it stops at its width's maximum (IBA 16.1.3.5;
the kernel's sysfs.c PORT_PMA_ATTR widths: symbol_error 16 bits, link_downed 8,
local_link_integrity_errors 4, ...). A port sitting there before the run can count any number
of errors during it and read the same after: "no growth" was a pass for the sickest port
(reviews17 #3). Its growth is unknown: not judged, gating, never a pass. A PortCountersExtended
read (perfquery -x under CapMask2's additional counters: 64 bits) has no such cap.

And NVLink 5 and the IB ports share a counter name (local_link_integrity_errors): the shipped
NVLink rule judged IB ports' counter as "NVLink errors", and the IB rule (above 0) a card's
NVLink counter; each rule now names the reads it judges (``fact``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.cabling import counter_growth_findings, growth_bars
from sncheck.health.rules import load_rules
from sncheck.model import Basis
from sncheck.vendors.portcounters import PORT_COUNTER_BITS, saturated
from sncheck.rows import host_fact_row
from test_kernel_counters import judge, topo

SYSFS = "/sys/class/infiniband/mlx5_0/ports/1/counters/{}:{}\n"


def _sysfs(tmp_path: Path, name: str, **counters: int) -> Path:
    path = tmp_path / name
    path.write_text("".join(SYSFS.format(c, v) for c, v in counters.items()) + "# end of counters\n")
    return path


def _since(tmp_path: Path, before: dict, after: dict) -> tuple[int, str, list]:
    r = CliRunner().invoke(main, ["parse", "ib-counters", str(_sysfs(tmp_path, "after.txt", **after)),
                                  "--since", str(_sysfs(tmp_path, "before.txt", **before))])
    return r.exit_code, r.output, json.loads(r.stdout)["judged"]


@pytest.mark.parametrize("counter", ["symbol_error", "link_downed", "local_link_integrity_errors",
                                     "excessive_buffer_overrun_errors", "port_xmit_discards"])
def test_a_counter_at_its_maximum_in_both_reads_is_not_judged_never_no_growth(tmp_path: Path, counter: str) -> None:
    top = (1 << PORT_COUNTER_BITS[counter]) - 1
    code, out, judged = _since(tmp_path, {counter: top, "link_error_recovery": 0},
                               {counter: top, "link_error_recovery": 0})
    assert code == 1, out
    assert "sat at their width's maximum" in out and f"{counter} {top} -> {top}" in out, out
    (grown,) = [c for j in judged for c in j["counters"] if c["counter"] == counter and j["rule"] != "fabric-errors-before-run"]
    assert grown["growth"] is None, judged


def test_reaching_the_maximum_during_the_run_is_unknown_growth_and_one_under_it_is_judged(tmp_path: Path) -> None:
    code, out, _ = _since(tmp_path, {"symbol_error": 100}, {"symbol_error": 65535})
    assert code == 1 and "symbol_error 100 -> 65535" in out and "sat at their width's maximum" in out, out
    assert "+65435" not in out, out
    # one under the cap counts: growth judged as growth
    code, out, _ = _since(tmp_path, {"symbol_error": 100}, {"symbol_error": 65534})
    assert code == 1 and "grew during the run: mlx5_0 port 1 symbol_error +65434" in out, out
    assert "sat at" not in out, out
    # a clean port at zero passes
    code, out, _ = _since(tmp_path, {"symbol_error": 0}, {"symbol_error": 0})
    assert code == 0, out


def test_the_widths_are_the_kernels_and_only_for_port_counters() -> None:
    assert (PORT_COUNTER_BITS["symbol_error"], PORT_COUNTER_BITS["link_downed"],
            PORT_COUNTER_BITS["local_link_integrity_errors"], PORT_COUNTER_BITS["VL15_dropped"]) == (16, 8, 4, 16)
    assert saturated("link_downed", 255) and not saturated("link_downed", 254)
    # traffic counters and NVLink counters have no cap here
    assert not saturated("port_xmit_data", 4294967295) and not saturated("crc_errors", 65535)


def _perfquery(tmp_path: Path, name: str, header: str, symbol_errors: int) -> Path:
    basic = ("SymbolErrorCounter LinkErrorRecoveryCounter LinkDownedCounter PortRcvErrors "
             "PortRcvRemotePhysicalErrors PortRcvSwitchRelayErrors PortXmitDiscards PortXmitConstraintErrors "
             "PortRcvConstraintErrors CounterSelect2 LocalLinkIntegrityErrors ExcessiveBufferOverrunErrors "
             "VL15Dropped PortXmitData PortRcvData PortXmitPkts PortRcvPkts PortXmitWait").split()
    extended = ("PortXmitData PortRcvData PortXmitPkts PortRcvPkts PortUnicastXmitPkts PortUnicastRcvPkts "
                "PortMulticastXmitPkts PortMulticastRcvPkts CounterSelect2 SymbolErrorCounter "
                "LinkErrorRecoveryCounter LinkDownedCounter PortRcvErrors PortRcvRemotePhysicalErrors "
                "PortRcvSwitchRelayErrors PortXmitDiscards PortXmitConstraintErrors PortRcvConstraintErrors "
                "LocalLinkIntegrityErrors ExcessiveBufferOverrunErrors VL15Dropped PortXmitWait QP1Dropped").split()
    fields = extended if "extended" in header else basic
    lines = [header, "PortSelect:......................1", "CounterSelect:...................0x0000"]
    lines += [f"{f}:".ljust(33, ".") + (str(symbol_errors) if f == "SymbolErrorCounter" else
                                         "0x00000000" if f == "CounterSelect2" else "0") for f in fields]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_perfquery_basic_at_the_cap_is_unknown_and_extended_64_bit_is_judged(tmp_path: Path) -> None:
    basic = "# Port counters: Lid 7 port 1 (CapMask: 0x1400)"
    before, after = _perfquery(tmp_path, "b0.txt", basic, 65535), _perfquery(tmp_path, "b1.txt", basic, 65535)
    r = CliRunner().invoke(main, ["parse", "perfquery", str(after), "--since", str(before)])
    assert r.exit_code == 1 and "sat at their width's maximum" in r.output, r.output
    assert json.loads(r.stdout)["ports"][0]["counter_set"] == "PortCounters"
    ext = "# Port extended counters: Lid 7 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)"
    before, after = _perfquery(tmp_path, "e0.txt", ext, 65535), _perfquery(tmp_path, "e1.txt", ext, 65535)
    r = CliRunner().invoke(main, ["parse", "perfquery", str(after), "--since", str(before)])
    assert r.exit_code == 0 and "sat at" not in r.output, r.output
    assert json.loads(r.stdout)["ports"][0]["counter_set"] == "PortCountersExtended"


def test_a_switch_port_at_the_cap_is_not_judged_by_the_fabric_check() -> None:
    bars = growth_bars(load_rules("default").rules)
    (f,) = counter_growth_findings({"leaf:x[3]": {"symbol_error": 65535}}, {"leaf:x[3]": {"symbol_error": 65535}},
                                   None, bars)
    assert f.basis == Basis.NOT_JUDGED and "at the counter's maximum" in f.message, f.message
    assert f.evidence["counters"]["symbol_error"]["growth"] is None
    assert counter_growth_findings({"leaf:x[3]": {"symbol_error": 5}}, {"leaf:x[3]": {"symbol_error": 5}},
                                   None, bars) == []


def test_an_ib_ports_counter_is_not_judged_as_nvlink_errors(tmp_path: Path) -> None:
    code, out, judged = _since(tmp_path, {"local_link_integrity_errors": 0}, {"local_link_integrity_errors": 12})
    assert code == 1, out
    assert {j["rule"] for j in judged} == {"ib-port-errors-grew"}, judged
    assert "NVLink" not in out, out


def test_a_cards_nvlink_counter_is_judged_by_the_nvlink_rule_alone(tmp_path: Path) -> None:
    """NVLink 5's local_link_integrity_errors: 3 in the run is under the NVLink rule's bar (10);
    the IB rule's bar (0) is not a card's."""
    t = topo(tmp_path)
    rows = [host_fact_row("n1", "nvlink_errors", {"read": read, "gpus": [{"index": 1, "card": 1, "links": {
        "2": {"local_link_integrity_errors": n}}}]}, None, True, tool="nvidia-smi") for read, n in ((0, 0), (1, 3))]
    assert [f for f in judge(rows, t) if f.rule != "fabric-errors-before-run"] == []
    # the IB rule's bar (0) would have named it; the NVLink rule's (10) names 11
    rows[1]["value"] = {"read": 1, "gpus": [{"index": 1, "card": 1, "links": {"2": {"local_link_integrity_errors": 11}}}]}
    assert {f.rule for f in judge(rows, t) if f.rule != "fabric-errors-before-run"} == {"nvlink-errors-grew"}
