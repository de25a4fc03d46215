"""Review of the parser landings of issue 28 (ibnetdiscover -p, rocm-smi --json, amd-smi summary,
npu-smi process rows, torch-nccl, perfquery -E/-D, elision) and the five small gaps known from
the last stop: each case an input that fell short on main before its fix."""

from __future__ import annotations

from sncheck.health.cabling import counter_growth_findings, growth_bars
from sncheck.health.rules import load_rules_text
from sncheck.health.rules import load_rules


def _bars(text: str | None = None):
    return growth_bars((load_rules_text(text) if text else load_rules()).rules)


# ---------------------------------------------------------------- gap 1: fabric check --since's bars

def test_fabric_growth_is_judged_by_the_rules_bars_and_severities():
    """A switch port's discards grew by 5 (the shipped ib-port-discards-grew allows 100): no
    finding; port_rcv_errors grew by 1 (ib-port-errors-grew: above 0, critical): critical, as a
    run judges its NICs' reads (main: a warning for both, whatever the rules said)."""
    before = {"leaf:a[1]": {"port_xmit_discards": 10, "port_rcv_errors": 0},
              "leaf:a[2]": {"port_xmit_discards": 10, "port_rcv_errors": 0}}
    after = {"leaf:a[1]": {"port_xmit_discards": 15, "port_rcv_errors": 0},
             "leaf:a[2]": {"port_xmit_discards": 500, "port_rcv_errors": 1}}
    (f,) = counter_growth_findings(before, after, None, _bars())
    assert f.entity == "leaf:a[2]" and str(f.severity) == "critical" and not f.not_judged
    assert f.evidence["counters"] == {"port_xmit_discards": {"before": 10, "after": 500, "growth": 490},
                                      "port_rcv_errors": {"before": 0, "after": 1, "growth": 1}}
    assert f.evidence["rules"] == ["ib-port-discards-grew", "ib-port-errors-grew"]
    assert "port_xmit_discards 10 -> 500 (over ib-port-discards-grew +100)" in f.message


def test_fabric_growth_no_rule_judges_is_not_judged_never_a_pass():
    rules = ("rules:\n  - {name: only-discards, op: counter_growth, metric: fabric_counters, "
             "counters: [port_xmit_discards], above: 100, severity: warning, scope: nic, summary: discards}\n")
    before, after = {"leaf:a[1]": {"symbol_error": 0}}, {"leaf:a[1]": {"symbol_error": 7}}
    (f,) = counter_growth_findings(before, after, None, _bars(rules))
    assert f.not_judged and "no rule judges the growth of symbol_error" in f.message
    gone = counter_growth_findings({"leaf:a[1]": {"symbol_error": 0}, "leaf:a[2]": {"symbol_error": 0}},
                                   {"leaf:a[1]": {"symbol_error": 0}}, None, _bars())
    assert [(g.entity, g.not_judged) for g in gone] == [("leaf:a[2]", True)]   # a port read before and not now
