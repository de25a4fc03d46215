"""The kernel-log policy (issue 28 item 5): the rules file's tables judge every Xid, SXid,
RmInitAdapter, PCIe AER and amdgpu RAS report; an operator overrides a code with a count
and a window (``extends: default``), judged on the kernel log's own timestamps and across
runs; a DCGM test's skip stays "not measured" unless the rules allow it by name.

The real captures are judged as a run judges a host's read (sncheck/backends/hostreads.py:
the parsed events, each named to a card where the host's listing maps its bus id; here none
is mapped, so each names its host) and the expected severities and actions are read from
the raw text against the shipped table (fixtures/rules/default.yaml), not from sncheck."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import pytest

from sncheck.errors import ConfigError
from sncheck.health.invariants import status_findings
from sncheck.health.kernel import choose, entries, in_window
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import RuleSet, evaluate, load_rules
from sncheck.rows import host_fact_row
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology
from sncheck.vendors import kernel_log
from sncheck.vendors.parsers import strip_source_header

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
XID13_3_IN_24H = ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n"
                  "      13: {severity: warning, count: 3, window: 24h}\n")


def topo(tmp_path: Path, cards: int = 2) -> Topology:
    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\nsupernodes:\n  - {name: sn0, hosts: \"n[1-2]\", cards_per_host: %d}\n" % cards)
    return Topology(load_inventory(inv))


def rules_file(tmp_path: Path, text: str, name: str = "mine.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return load_rules(str(path))


@functools.cache
def shipped() -> RuleSet:
    return load_rules("default")


def judge(rows: list[dict], t: Topology, rules=None) -> list:
    kernel_rules = [r for r in (rules or shipped()).rules if r.op == "kernel_events"]  # no other op reads them
    return [f for f in evaluate(kernel_rules, pd.DataFrame(rows), DetectContext(t, t.inventory.design))
            if f.rule.startswith("kernel")]


def kernel_row(host: str, events: list[dict], earlier: list[dict] | None = None, boot: int | None = None,
               driver: str | None = None) -> dict:
    value = {"events": events, "earlier": earlier or [], "boot": boot, "driver_version": driver}
    return host_fact_row(host, "kernel_log", value, None, True, tool="kernel-log")


def xid(code: int, time: str | None, card: int | None = 1, **more) -> dict:
    return {"source": "xid", "code": code, "class": None, "bus_id": "0000:2a:00", "card": card,
            "text": f"NVRM: Xid (PCI:0000:2a:00): {code}, ...", "time": time, **more}


def read(rel: str) -> dict:
    return kernel_log.parse_kernel_log(strip_source_header((REAL / rel).read_text(encoding="utf-8")))


def verdicts(found: list) -> set[tuple]:
    return {(f.entity, f.evidence["source"], int(f.evidence["key"]) if f.evidence["key"].isdigit() else
             f.evidence["key"], f.severity, f.evidence["action"]) for f in found}


# --------------------------------------------------------------------------- real captures, shipped table

@pytest.mark.parametrize("rel, expected", [
    # the root port's AER: a corrected Replay Timer Timeout, then a fatal Surprise Down, then the GPU falls off
    ("r4/kernel-xid/01_dmesg_aer_fatal_surprise_down_then_xid79_tesla_0000_02_00_gpu-burn-issue1.txt",
     {("n1", "aer", "corrected", "info", "ignore"), ("n1", "aer", "fatal", "critical", "reboot"),
      ("n1", "xid", 79, "critical", "reboot")}),
    # another GPU than the Xid's never initialises (RmInitAdapter), the Xid's has a DBE and a failed retirement
    ("r4/kernel-xid/02_journal_xid48_dbe_xid64_page_retirement_failed_0000_07_00_rminitadapter_failed_"
     "gpu-operator-issue1146.txt",
     {("n1", "rm_init", "rm_init", "critical", "reboot"), ("n1", "xid", 48, "critical", "reset_gpu"),
      ("n1", "xid", 64, "critical", "reset_gpu")}),
    ("r4/kernel-xid/03_dmesg_ctime_xid119_gsp_rpc_timeout_0000_61_00_nvidia-docker-issue1648.txt",
     {("n1", "xid", 119, "critical", "reset_gpu")}),
    # Xid 45 only: the cleanup after Xid 149 / 145, which the excerpt does not hold
    ("r4/kernel-xid/04_journal_xid45_after_xid149_xid145_nvlink_4gpus_590.48.01_open-gpu-kernel-modules-"
     "issue1150.txt", {("n1", "xid", 45, "info", "ignore")}),
    # three Non-fatal SXid 22013 reports of the tray (links 44-46): the class decides
    ("r4/kernel-xid/05_dmesg_sxid22013_nvswitch3_0000_04_00.0_minion_dlreq_links44-46_570.195.03_nvtrust-"
     "issue124.txt", {("n1", "sxid", "non-fatal", "warning", "contact_support")}),
    ("kernel-log/01_dmesg_ctime_xid13_x3_xid109_gpud_readme.txt",
     {("n1", "xid", 13, "info", "restart_app"), ("n1", "xid", 109, "critical", "reset_gpu")}),
    ("kernel-log/02_dmesg_xid79_then_sxid20034_fatal_nvswitch_gpud_readme.txt",
     {("n1", "xid", 79, "critical", "reboot"), ("n1", "sxid", "fatal", "critical", "reset_gpu")}),
    # MI300X: an ERREVENT on dd:00 (fatal), ACA banks: 1b:00's STATUS has UC (bit 61), 9d:00's is corrected
    ("harvest/kernel-log/01_dmesg_amdgpu_erREVENT_athub_aca_banks_mi300x_rocm6.2.3_rocm-issue4021_head.txt",
     {("n1", "amdgpu", "fatal", "critical", "reset_gpu"), ("n1", "amdgpu", "aca", "critical", "reset_gpu"),
      ("n1", "amdgpu", "aca", "info", "ignore")}),
    # 1533 correctable XGMI errors and the reset that followed: recorded
    ("harvest/kernel-log/02_dmesg_amdgpu_xgmi_wafl_1533_correctable_socket6_die1_mode1_reset_mi300x_"
     "rocm-issue4021_tail.txt",
     {("n1", "amdgpu", "aca", "info", "ignore"), ("n1", "amdgpu", "correctable", "info", "ignore"),
      ("n1", "amdgpu", "reset", "info", "ignore")}),
])
def test_real_kernel_logs_are_judged_by_the_shipped_table(tmp_path: Path, rel: str, expected: set) -> None:
    parsed = read(rel)
    found = judge([kernel_row("n1", [{**e, "card": None} for e in parsed["events"]], boot=parsed["boot"],
                              driver=parsed["driver_version"])], topo(tmp_path))
    assert verdicts(found) == expected, [f.message for f in found]
    for f in found:  # a critical report is the driver's record of a fault: isolated at once
        assert (f.evidence.get("confirm") == "none") == (f.severity == "critical"), f


def test_the_count_over_a_window_on_a_real_dmesg_T_log(tmp_path: Path) -> None:
    """gpud's capture: three Xid 13 within a second (dmesg -T). 'Xid 13 three times in 24 h is a
    warning' makes it one; two of them stay info; a 5-second window still holds all three."""
    parsed = read("kernel-log/01_dmesg_ctime_xid13_x3_xid109_gpud_readme.txt")
    events = [{**e, "card": 0} for e in parsed["events"]]
    t, mine = topo(tmp_path), rules_file(tmp_path, XID13_3_IN_24H)
    [f13] = [f for f in judge([kernel_row("n1", events)], t, mine) if f.evidence["code"] == 13]
    assert (f13.entity, f13.severity, f13.evidence["in_window"], f13.evidence["count"]) == ("n1/gpu0", "warning", 3, 3)
    assert "3 reports within 24h" in f13.message and f13.evidence["action"] == "restart_app"  # the base's action
    two = [e for e in events if e["code"] != 13][:0] + [e for e in events if e["code"] == 13][:2]
    [f2] = judge([kernel_row("n1", two)], t, mine)
    assert (f2.severity, f2.evidence["in_window"]) == ("info", 2) and "3 make it warning" in f2.message
    five_s = rules_file(tmp_path, XID13_3_IN_24H.replace("24h", "5s"), "five.yaml")
    assert [f.severity for f in judge([kernel_row("n1", events)], t, five_s) if f.evidence["code"] == 13] == ["warning"]


def test_the_window_spans_runs_by_the_logs_own_time(tmp_path: Path) -> None:
    """Reports kept from earlier runs count; what decides is when the log says they happened."""
    t, mine = topo(tmp_path), rules_file(tmp_path, XID13_3_IN_24H)
    earlier = [xid(13, "2026-11-29T10:00:00.000000+00:00"), xid(13, "2026-11-29T20:00:00.000000+00:00")]
    tonight = [xid(13, "2026-11-30T09:59:59,000000+00:00")]
    [f] = judge([kernel_row("n1", tonight, earlier)], t, mine)
    assert (f.entity, f.severity, f.evidence["in_window"], f.evidence["earlier"]) == ("n1/gpu1", "warning", 3, 2)
    later = [xid(13, "2026-11-30T10:00:01,000000+00:00")]  # the first one is now 24 h and 1 s old
    assert [(f.severity, f.evidence["in_window"]) for f in judge([kernel_row("n1", later, earlier)], t, mine)] == \
        [("info", 2)]
    # earlier reports alone are not judged again; another card's reports are not this card's
    assert judge([kernel_row("n1", [], earlier)], t, mine) == []
    other = [{**e, "card": 0} for e in earlier]
    assert [f.severity for f in judge([kernel_row("n1", tonight, other)], t, mine)] == ["info"]


def test_uptime_stamps_are_placed_by_the_boot_time_or_not_compared_with_wall_times(tmp_path: Path) -> None:
    t, mine = topo(tmp_path), rules_file(tmp_path, XID13_3_IN_24H)
    earlier = [xid(13, "2026-11-30T09:00:00.000000+00:00"), xid(13, "2026-11-30T09:30:00.000000+00:00")]
    boot = 1_796_029_200  # 2026-11-30T09:00:00Z: '[3600.5]' is 10:00:00.5, an hour after the first
    assert kernel_log.seconds("3600.5", boot) == ("wall", boot + 3600.5)
    [f] = judge([kernel_row("n1", [xid(13, "3600.5")], earlier, boot=boot)], t, mine)
    assert (f.severity, f.evidence["in_window"]) == ("warning", 3)
    [f] = judge([kernel_row("n1", [xid(13, "3600.5")], earlier)], t, mine)  # no boot time: cannot be placed
    assert (f.severity, f.evidence["in_window"]) == ("info", 1)
    # a report without a time counts in every window (it cannot be placed outside one)
    [f] = judge([kernel_row("n1", [xid(13, None)], earlier)], t, mine)
    assert (f.severity, f.evidence["in_window"]) == ("warning", 3)
    assert in_window([("uptime", 5.0), ("wall", 5.0), None], ("wall", 6.0), 10.0) == 2


def test_a_report_is_judged_by_the_meaning_its_driver_gives_it(tmp_path: Path) -> None:
    """Xid 154 says the action the GPU needs; R610 added actions 5-7. On 590 an action 6 is not
    one the driver defines; where the log does not say the driver, the most severe meaning."""
    t = topo(tmp_path)
    line = "GPU recovery action changed from 0x0 (None) to 0x6 (Bus Reset)"
    e = {**xid(154, None), "recovery_action": 6, "message": line}
    [on610] = judge([kernel_row("n1", [e], driver="610.43.02")], t)
    [on590] = judge([kernel_row("n1", [e], driver="590.48.01")], t)
    [unknown] = judge([kernel_row("n1", [e])], t)
    assert (on610.severity, on610.evidence["action"]) == ("critical", "reboot")
    assert (on590.severity, on590.evidence["action"]) == ("warning", "contact_support")
    assert unknown.severity == "critical" and "driver version is not in the log" in unknown.message
    parsed = kernel_log.parse_kernel_log("[ 9.0] NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed "
                                         "from 0x0 (None) to 0x2 (OS Reboot)\n")
    [real154] = judge([kernel_row("n1", [{**parsed["events"][0], "card": 0}], driver="610.43.02")], t)
    assert (real154.entity, real154.severity, real154.evidence["action"]) == ("n1/gpu0", "critical", "reboot")
    table = entries({154: [{"when": {"recovery_action": 1}, "severity": "critical", "drivers": ">=550"},
                           {"severity": "info"}]})
    assert choose(table, {"code": 154, "recovery_action": 1}, "535.161.08")[2].severity == "info"
    assert choose(table, {"code": 154, "recovery_action": 1}, "550.90.07")[2].severity == "critical"


# --------------------------------------------------------------------------- the rules file

def test_extends_changes_one_entry_and_keeps_the_rest(tmp_path: Path) -> None:
    base, mine = shipped(), rules_file(tmp_path, XID13_3_IN_24H)
    assert [r.name for r in mine.rules] == [r.name for r in base.rules]
    xid_rule = next(r for r in mine.rules if r.name == "kernel-xid")
    assert xid_rule.params["table"][13] == {"severity": "warning", "action": "restart_app", "count": 3, "window": "24h",
                                            "summary": "graphics engine exception (application error)"}
    assert xid_rule.params["table"][79] == next(r for r in base.rules if r.name == "kernel-xid").params["table"][79]
    assert mine.extends == (str(Path(base.path).resolve()),) or Path(mine.extends[0]).name == "default.yaml"
    off = rules_file(tmp_path, "extends: default\nrules:\n  - {name: kernel-amdgpu, enabled: false}\n"
                     "  - {name: my-aer, op: kernel_events, metric: kernel_events, source: aer, severity: info}\n",
                     "off.yaml")
    names = [r.name for r in off.rules]
    assert "kernel-amdgpu" not in names and names[-1] == "my-aer"


def test_a_list_override_keeps_the_defaults_summary_and_action(tmp_path: Path) -> None:
    """An entry split into cases by an override (a driver range, then the rest) kept neither the
    shipped entry's summary nor its action: the finding said only 'NVIDIA Xid' and took the
    rule's action (contact_support) for an Xid 79 whose table says reboot. Each case keeps what
    it does not give; a case that gives its own keeps its own; a list over a list matches cases
    by their when and drivers."""
    mine = rules_file(tmp_path, "extends: default\nrules:\n  - name: kernel-xid\n    table:\n"
                      "      79:\n        - {drivers: '<535', severity: warning, count: 2, window: 24h}\n"
                      "        - {severity: critical, action: reset_gpu}\n"
                      "      154:\n        - {when: {recovery_action: 2}, severity: warning}\n"
                      "        - {when: {recovery_action: 9}, severity: info}\n"
                      "        - {severity: critical, summary: mine}\n")
    table = next(r for r in mine.rules if r.name == "kernel-xid").params["table"]
    fell = "GPU has fallen off the bus"
    assert table[79] == [{"drivers": "<535", "severity": "warning", "count": 2, "window": "24h", "action": "reboot",
                          "summary": fell},
                         {"severity": "critical", "action": "reset_gpu", "summary": fell}]
    assert table[154][0] == {"when": {"recovery_action": 2}, "severity": "warning", "action": "reboot",
                             "summary": "the node needs a reboot"}
    assert table[154][1] == {"when": {"recovery_action": 9}, "severity": "info"}  # no such case in the base
    assert table[154][2] == {"severity": "critical", "summary": "mine", "action": "contact_support"}  # the catch-all's
    # judged: an Xid 79 on driver 550 takes the second case, with the default's summary
    [f] = judge([kernel_row("n1", [xid(79, "2026-01-01T00:00:00+00:00")], driver="550.54.15")], topo(tmp_path), mine)
    assert (f.severity, f.evidence["action"]) == ("critical", "reset_gpu") and fell in f.message, f.message
    [f] = judge([kernel_row("n1", [xid(79, "2026-01-01T00:00:00+00:00")], driver="470.82.01")], topo(tmp_path), mine)
    assert (f.severity, f.evidence["action"]) == ("info", "reboot") and fell in f.message, f.message


@pytest.mark.parametrize("text, why", [
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      13: {severity: warning, window: 24h}\n",
     r"mine.yaml:4: .*a window needs a count above 1"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      13: {severity: warning, count: 3, "
     "window: 31d}\n", r"mine.yaml:4: .*window must be a duration up to 30d"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      154: []\n", "empty list"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      154: [{severity: info, drivers: '>=5x'}]\n",
     r"table\[154\]\[0\].drivers must be a driver version range"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      13: {severity: info, when: {a: [1]}}\n",
     "when must map a report's fields to values"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      13: {severity: info, count: 0}\n",
     "count must be a whole number from 1"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      13: {severity: info, below: none, "
     "count: 2}\n", "below must be one of"),
    ("extends: default\nrules:\n  - {name: kernel-xid, table: {}}\n  - {name: kernel-xid, severity: info}\n",
     "duplicate rule name"),
    ("extends: nowhere\nrules: []\n", r"mine.yaml:1: extends: no such rules file"),
    # a key no report of the rule's source carries would never apply: an Xid's class, an AER code,
    # a code written as text
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      ring-timeout: {severity: info}\n",
     r"mine.yaml:4: .*table key 'ring-timeout': xid reports are keyed by a code"),
    ("extends: default\nrules:\n  - name: kernel-pcie-aer\n    table:\n      13: {severity: info}\n",
     r"table key 13: aer reports are keyed by a class \(fatal, non-fatal, corrected\)"),
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      '13': {severity: info}\n",
     r"table key '13': xid reports are keyed by a code \(a whole number"),
    # the first entry that applies wins: one after an entry without when or drivers is dead
    ("extends: default\nrules:\n  - name: kernel-xid\n    table:\n      13: [{severity: warning, count: 3, "
     "window: 24h}, {severity: critical, count: 2, window: 1h}]\n", r"table\[13\]\[1\] is never reached"),
    ("rules:\n  - {name: x, op: kernel_events, metric: kernel_events, source: ipmi, severity: info}\n",
     "source: must be one of xid, sxid, aer, amdgpu, nvrm"),
    ("extends: default\nrules: []\nallow_skips:\n  - {tool: dcgmi, test: EUD}\n", "allow_skips\\[0\\].why: required key missing"),
    ("extends: default\nrules: []\nallow_skips:\n  - {tool: dcgm, test: x, why: y}\n", "allow_skips\\[0\\].tool: must be one of .*dcgmi"),
])
def test_a_wrong_policy_is_refused_with_its_file_and_line(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        rules_file(tmp_path, text)


def test_a_cycle_of_extends_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("extends: b.yaml\nrules: []\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\nrules: []\n")
    with pytest.raises(ConfigError, match="a cycle"):
        load_rules(str(tmp_path / "a.yaml"))


def test_the_shipped_table_covers_the_catalogs_classes() -> None:
    """Every NVIDIA Xid catalog bucket that is not 'contact support' has its code in the table
    (the codes read from the catalog's immediate-action column), and every class of the
    other sources."""
    by = {r.name: r.params["table"] for r in shipped().rules if r.op == "kernel_events"}
    assert {79: "reboot", 48: "reset_gpu", 119: "reset_gpu", 13: "restart_app", 31: "restart_app", 45: "ignore",
            145: "reset_gpu", 149: "reset_gpu"}.items() <= {k: v["action"] for k, v in by["kernel-xid"].items()
                                                           if isinstance(v, dict)}.items()
    assert set(by["kernel-pcie-aer"]) == {"fatal", "non-fatal", "corrected"}
    assert set(by["kernel-sxid"]) == {"fatal", "non-fatal"} and set(by["kernel-nvidia-driver"]) == {"rm_init",
                                                                                                   "api_mismatch"}
    assert {"uncorrectable", "correctable", "deferred", "poison", "fatal", "aca", "reset", "reset-failed",
            "ring-timeout", "page-fault", "bad-page-threshold", "init-failed"} == set(by["kernel-amdgpu"])
    assert {"fatal", "recoverable", "corrected", "info"} <= set(by["kernel-apei-ghes"])


# --------------------------------------------------------------------------- DCGM skips

def test_a_dcgm_skip_is_not_measured_unless_the_rules_allow_that_test(tmp_path: Path) -> None:
    """VirtualClient's DCGM 3.x JSON: every test Pass but 'EUD Test' Skip. Without an allowance
    the fact is not measured (critical, about the check: nothing isolated); allowing EUD by name
    records it at info; allowing another test changes nothing."""
    from sncheck.vendors.facts import Expect
    from sncheck.vendors.nvidia import dcgmi
    from sncheck.vendors.nvidia.gpu_checks import check_dcgmi

    text = strip_source_header((REAL / "dcgmi-diag/04_r3_json_1gpu_pass_eud_skip.json.txt").read_text())
    [row] = check_dcgmi("n1", dcgmi.parse_dcgmi_diag(text), Expect(cards=1))
    t = topo(tmp_path, 1)
    ctx = DetectContext(t, t.inventory.design)

    def found(skips_text: str) -> list[tuple]:
        rs = rules_file(tmp_path, "extends: default\nrules: []\n" + skips_text, "skips.yaml")
        return [(f.entity, f.rule, f.severity, f.about) for f in status_findings(pd.DataFrame([row]), ctx,
                                                                                 rs.allowed_skips)]

    assert row["skipped"] == ["EUD Test"]
    assert found("") == [("n1", "not-measured", "critical", "check")]
    allowed = "allow_skips:\n  - {tool: dcgmi, test: EUD, why: the EUD package is not installed}\n"
    assert found(allowed) == [("n1", "skip-allowed", "info", "check")]
    assert found(allowed.replace("EUD", "Memory Bandwidth")) == [("n1", "not-measured", "critical", "check")]
    assert "allow_skips" in status_findings(pd.DataFrame([row]), ctx)[0].message  # says how


def test_a_report_already_on_record_is_not_new_again() -> None:
    """The journal rotated past the last run's cursor, so the read holds this whole boot again:
    the reports the state dir already keeps are not judged (nor kept) twice; a new one is."""
    from sncheck.backends.hostreads import _check_kernel
    from sncheck.vendors.facts import Expect

    log = ("# boot: 1796029200\n[ 100.000000] NVRM: Xid (PCI:0000:2a:00): 13, pid=7, name=x, Graphics Exception\n"
           "[ 200.000000] NVRM: Xid (PCI:0000:2a:00): 13, pid=7, name=x, Graphics Exception\n" + kernel_log.END_MARKER
           + "\n")
    parsed = kernel_log.parse_kernel_log(log)
    earlier = kernel_log.kept_reports([], [{**e, "card": 1} for e in parsed["events"][:1]], parsed["boot"])
    assert earlier == [{"source": "xid", "code": 13, "bus_id": "0000:2a:00", "card": 1,
                        "time": "2026-11-30T09:01:40.000000+00:00"}]
    [row] = _check_kernel(lambda buses, _gpus: {"0000:2a:00": 1}, True, None, earlier, None)("n1", parsed, Expect(cards=2))
    assert [(e["code"], e["time"]) for e in row["value"]["events"]] == [(13, "200.000000")]
    assert row["value"]["earlier"] == earlier and row["value"]["boot"] == 1796029200


def test_a_layers_judgement_takes_the_rules_allowed_skips(tmp_path: Path) -> None:
    """The one path every layer's detection goes through (LayerContext.detect) hands the rules
    file's allowances to the invariants: the same row is not measured under the shipped rules
    and a recorded skip under rules that allow EUD."""
    from sncheck.layers.base import LayerContext
    from sncheck.vendors.facts import Expect
    from sncheck.vendors.nvidia import dcgmi
    from sncheck.vendors.nvidia.gpu_checks import check_dcgmi

    text = strip_source_header((REAL / "dcgmi-diag/04_r3_json_1gpu_pass_eud_skip.json.txt").read_text())
    [row] = check_dcgmi("n1", dcgmi.parse_dcgmi_diag(text), Expect(cards=1))
    t = topo(tmp_path, 1)

    def judged(rules) -> set[tuple]:
        # no backend: detect reads the rows only
        ctx = LayerContext(t, None, lambda r: None, t.inventory.design, rules=rules, rows=[row])
        return {(f.entity, f.rule, f.severity) for f in ctx.detect("connectivity")
                if f.evidence.get("fact") == "dcgmi_diag"}  # (its card took part in no pair: not measured too)

    allowed = rules_file(tmp_path, "extends: default\nrules: []\nallow_skips:\n  - {tool: dcgmi, test: EUD Test, "
                         "why: no EUD package}\n")
    assert ("n1", "not-measured", "critical") in judged(shipped())
    assert ("n1", "skip-allowed", "info") in judged(allowed) and ("n1", "not-measured", "critical") not in judged(allowed)


def test_parse_judges_a_pasted_log_by_the_policy(tmp_path: Path) -> None:
    """``sncheck parse kernel-log FILE --rules R``: the run's judgement of a pasted log. Xid 45
    alone (the cleanup after an NVLink Xid the excerpt lost) is info: exit 0, where the view
    alone exits 1 on any report; gpud's log under 'Xid 13 three times in 24 h' exits 1 on
    that warning even with Xid 109 made info."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    xid45 = str(REAL / "r4/kernel-xid/04_journal_xid45_after_xid149_xid145_nvlink_4gpus_590.48.01_open-gpu-kernel-"
                "modules-issue1150.txt")
    plain = CliRunner().invoke(main, ["parse", "kernel-log", xid45])
    judged = CliRunner().invoke(main, ["parse", "kernel-log", xid45, "--rules", "default"])
    assert plain.exit_code == 1 and judged.exit_code == 0, judged.output
    assert {(j["key"], j["severity"], j["action"]) for j in __import__("json").loads(judged.stdout)["judged"]} == \
        {("45", "info", "ignore")}
    mine = tmp_path / "mine.yaml"
    mine.write_text(XID13_3_IN_24H + "      109: {severity: info}\n")
    r = CliRunner().invoke(main, ["parse", "kernel-log", str(REAL / "kernel-log/01_dmesg_ctime_xid13_x3_xid109_gpud_"
                                  "readme.txt"), "--rules", str(mine)])
    assert r.exit_code == 1 and "warning: card 0000:cb:00: Xid 13" in r.stderr and "critical" not in r.stderr
    bad = CliRunner().invoke(main, ["parse", "nvidia-smi", xid45, "--rules", "default"])
    assert bad.exit_code == 2 and "--rules judges a kernel log" in bad.output
