"""The kernel-log and fabric-counter views on real captures, and the rules that judge them
(issue 21): growth, not value; the Xid table; the entity each report names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory
from sncheck.errors import ConfigError
from sncheck.health.fabric import fabric_counters
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules, load_rules_text
from sncheck.rows import host_fact_row
from sncheck.topology import Topology
from sncheck.vendors import kernel_log
from sncheck.vendors.infiniband import counters
from sncheck.vendors.parsers import strip_source_header

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def topo(tmp_path: Path, cards: int = 2) -> Topology:
    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\nsupernodes:\n  - {name: sn0, hosts: \"n[1-2]\", cards_per_host: %d}\n" % cards)
    return Topology(load_inventory(inv))


def judge(rows: list[dict], t: Topology, rules=None) -> list:
    rs = rules or load_rules("default").rules
    return evaluate(list(rs), pd.DataFrame(rows), DetectContext(t, t.inventory.design))


# --------------------------------------------------------------------------- views

def test_kernel_log_reports_and_their_continuation_lines() -> None:
    sx = kernel_log.parse_kernel_log(real("kernel-log/02_dmesg_xid79_then_sxid20034_fatal_nvswitch_gpud_readme.txt"))
    assert [(e["source"], e["code"], e["class"]) for e in sx["events"]] == \
        [("xid", 79, None)] + [("sxid", 20034, "fatal")] * 4  # Severity/Data lines are not reports
    aer = kernel_log.parse_kernel_log(real("kernel-log/03_dmesg_aer_corrected_then_uncorrected_fatal_dpc_hotplug_"
                                           "linux_pci.txt"))
    assert [(e["class"], e["bus_id"]) for e in aer["events"]] == [("corrected", "0000:89:02"), ("fatal", "0000:89:02")]
    assert aer["faults"] == ["PCIe AER fatal error on 0000:89:02 (SDES (First))"]  # corrected is counted, not a fault
    old = kernel_log.parse_kernel_log("[ 5.1] pcieport 0000:00:1c.5: AER: Multiple Corrected error received: "
                                      "0000:00:1c.5\n[ 5.2] pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) "
                                      "error received: 0000:3b:00.0\n")
    assert [(e["class"], e["bus_id"]) for e in old["events"]] == [("corrected", "0000:00:1c"), ("non-fatal", "0000:3b:00")]
    denied = kernel_log.parse_kernel_log("dmesg: read kernel buffer failed: Operation not permitted\n"
                                         + kernel_log.END_MARKER + "\n")
    assert denied["errors"] and denied["complete"]


def test_kernel_log_since_the_last_read_and_a_quoted_cursor() -> None:
    text = ("2026-11-30T01:00:00,000000+00:00 NVRM: Xid (PCI:0000:2a:00): 79, x\n"
            "2026-11-30T02:00:00,500000+00:00 NVRM: Xid (PCI:0000:2a:00): 48, y\n" + kernel_log.END_MARKER + "\n")
    parsed = kernel_log.parse_kernel_log(text)
    assert parsed["last_time"] == "2026-11-30T02:00:00,500000+00:00"
    assert [e["code"] for e in kernel_log.since(parsed, "2026-11-30T01:00:00,000000+00:00")["events"]] == [48]
    assert kernel_log.since(parsed, parsed["last_time"])["events"] == []
    # a last read that is no ISO time (a hand-edited cursor file) places nothing: every report is kept
    assert [e["code"] for e in kernel_log.since(parsed, "yesterday")["events"]] == [79, 48]
    lost = kernel_log.parse_kernel_log("# source: journalctl -k\nFailed to seek to cursor: Invalid argument\n"
                                       + kernel_log.END_MARKER + "\n")
    assert lost["cursor_lost"] and lost["errors"]  # never a quiet night read from a cursor that is gone
    cmd = kernel_log.read_command("s=abc';rm -rf /;'")
    assert "--after-cursor='s=abc'\"'\"';rm -rf /;'\"'\"''" in cmd  # quoted for the shell, never run


def test_ib_counter_views_and_bad_counts() -> None:
    pq = counters.parse_perfquery(real("ib-counters/02_perfquery_x_lid2052_linkdowned1_xmitdiscards20046_"
                                       "infiniband_exporter.txt"))
    # a count since the port came up is no fault by itself: judged as ib-counters' (test_pma_counters)
    assert pq["ports"][0]["counters"]["link_downed"] == 1 and "faults" not in pq
    bad = counters.parse_perfquery("# Port extended counters: Lid 5 port 1 (CapMask: 0x5300)\n"
                                   "SymbolErrorCounter:......................-3\nLinkDowned:.........x7\n")
    assert bad["errors"][:2] == ["port 1: SymbolErrorCounter is not a count: '-3'",
                                 "port 1: LinkDowned is not a count: 'x7'"]  # never a count, never a pass
    assert not bad["ports"][0]["counters"]
    cut = counters.parse_ibqueryerrors(real("ib-counters/03_ibqueryerrors_sx6036_fabric_symbol65535_linkdowned_"
                                            "mailing_list.txt").split("> Errors for \"rd240")[0])
    assert any("cut short" in e for e in cut["errors"])
    sysfs = "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:4\n"
    # a count since the port came up is no fault by itself: sncheck parse judges it as a run does
    assert "faults" not in counters.parse_sysfs_counters(sysfs + counters.END_MARKER)
    assert any("cut short" in e for e in counters.parse_sysfs_counters(sysfs)["errors"])
    assert counters.rails(["mlx5_10", "mlx5_2", "mlx5_bond_0"]) == {"mlx5_2": 0, "mlx5_10": 1, "mlx5_bond_0": 2}


def test_a_perfquery_block_cut_at_any_line_but_its_last_field_is_cut_short() -> None:
    """perfquery's blocks end at a fixed field (perfquery.c): PortCounters at PortXmitWait,
    PortCountersExtended at PortRcvPkts / PortMulticastRcvPkts / QP1Dropped. A paste cut
    between lines read as whole and exited 0 (ibsim PR 1's paste, netdata issue 2620's)."""
    text = real("ib-counters/01_perfquery_x_lid1719_2ports_all_zero_infiniband_exporter.txt")
    lines = text.splitlines(keepends=True)
    assert counters.parse_perfquery(text)["errors"] == []
    for k in range(3, len(lines)):
        errors = counters.parse_perfquery("".join(lines[:k]))["errors"]
        name = lines[k - 1].split(":")[0]
        if name == "QP1Dropped":  # CapMask2 0x0000002: the block runs to QP1Dropped
            assert errors == [], (k, name)
        elif not lines[k - 1].startswith("#"):
            assert any("cut short" in e for e in errors), (k, name)
    # without CapMask's bit 9 an extended block may end at PortRcvPkts
    narrow = "".join(lines[:7]).replace("0x5300 CapMask2: 0x0000002", "0x0100 CapMask2: 0x0000000")
    assert counters.parse_perfquery(narrow)["errors"] == []
    basic = ("# Port counters: Lid 5 port 1 (CapMask: 0x0600)\nPortSelect:......1\nCounterSelect:....0x0000\n"
             "SymbolErrorCounter:....3\nPortXmitData:.....10\nPortRcvPkts:......4\n")
    assert counters.parse_perfquery(basic)["errors"] == []  # libibmad before PortXmitWait
    assert counters.parse_perfquery(basic + "PortXmitWait:.....9\n")["errors"] == []
    waits = basic.replace("0x0600", "0x1600")  # CapMask bit 12: PortXmitWait is printed
    assert any("ends at PortRcvPkts" in e for e in counters.parse_perfquery(waits)["errors"])
    # a block pasted without its header: the port from PortSelect, the kind from its fields
    bare = counters.parse_perfquery(basic.split("\n", 1)[1].replace("PortSelect:......1", "PortSelect:......7"))
    assert (bare["ports"][0]["port"], bare["ports"][0]["lid"], bare["errors"]) == (7, None, [])
    assert bare["ports"][0]["counters"]["symbol_error"] == 3 and "faults" not in bare
    cut = counters.parse_perfquery(basic.split("\n", 1)[1].rsplit("PortXmitData", 1)[0])
    assert any("ends at SymbolErrorCounter" in e for e in cut["errors"])


@pytest.mark.parametrize("tool,rel,code", [
    ("nvlink-errors", "nvidia-smi-nvlink/04_errors_h100_18links_elided.txt", 1),  # links elided: not whole
    ("perfquery", "ib-counters/01_perfquery_x_lid1719_2ports_all_zero_infiniband_exporter.txt", 0),
    ("kernel-log", "kernel-log/04_syslog_xid79_geforce_forum_post_2016.txt", 1),
])
def test_parse_exit_codes(tool: str, rel: str, code: int) -> None:
    r = CliRunner().invoke(main, ["parse", tool, str(REAL / rel), "--json"])
    assert r.exit_code == code, r.output


# --------------------------------------------------------------------------- judged

def nvlink_row(host: str, replays: int, read: int | None, card=1) -> dict:
    value = {"gpus": [{"index": 1, "card": card, "links": {"2": {"replay_errors": replays, "crc_errors": 0}}}]}
    if read is not None:
        value["read"] = read
    return host_fact_row(host, "nvlink_errors", value, None, True, tool="nvidia-smi")


def test_counters_are_read_once_per_run_and_again_when_the_reads_change(tmp_path: Path) -> None:
    """The counters of a run's reads are built once and reused by its later evaluations
    (a fleet reads a million of them); other reads, even equal ones, and another
    inventory are built again, and a caller changing its frame changes nothing later."""
    t, wide = topo(tmp_path), topo(tmp_path, cards=4)
    ctx = DetectContext(t, t.inventory.design)
    first = pd.DataFrame([nvlink_row("n1", 5, None), nvlink_row("n1", 40, 1)])
    frame = fabric_counters(first, ctx)
    assert frame.set_index("counter").loc["replay_errors", "growth"] == 35
    frame.loc[:, "growth"] = 0  # the caller's copy
    again = fabric_counters(first[first.index >= 0], ctx)  # a new frame of the same reads
    assert again.set_index("counter").loc["replay_errors", "growth"] == 35
    other = fabric_counters(pd.DataFrame([nvlink_row("n1", 5, None), nvlink_row("n1", 9, 1)]), ctx)
    assert other.set_index("counter").loc["replay_errors", "growth"] == 4
    ib = {"ports": [{"device": "mlx5_3", "port": 1, "rail": 3, "counters": {"symbol_error": 2}}],
          "error_counters": ["symbol_error"]}
    ib_rows = pd.DataFrame([host_fact_row("n1", "ib_counters", ib, None, True, tool="sysfs")])
    assert fabric_counters(ib_rows, ctx)["entity"].tolist() == ["n1"]  # rail 3 of 2 cards: the host's
    assert fabric_counters(ib_rows, DetectContext(wide, wide.inventory.design))["entity"].tolist() == ["n1/nic3"]


def kernel_row(host: str, *events: dict) -> dict:
    return host_fact_row(host, "kernel_log", {"events": list(events)}, None, True, tool="kernel-log")


def xid(code: int, card: int | None = 1, source: str = "xid", klass: str | None = None) -> dict:
    return {"source": source, "code": code, "class": klass, "bus_id": "0000:2a:00", "card": card,
            "text": f"NVRM: Xid (PCI:0000:2a:00): {code}, ...", "time": None}


def test_counters_are_judged_by_their_growth_not_their_value(tmp_path: Path) -> None:
    t = topo(tmp_path)
    found = {(f.entity, f.rule, f.severity) for f in judge([nvlink_row("n1", 500, None), nvlink_row("n1", 500, 1)], t)}
    assert found == {("n1/gpu1", "fabric-errors-before-run", "info")}  # high, but no growth tonight
    found = {(f.entity, f.rule) for f in judge([nvlink_row("n1", 5, None), nvlink_row("n1", 15, 1)], t)}
    assert ("n1/gpu1", "nvlink-errors-grew") not in found  # 10 is within the bound (more than 10 fails)
    # a counter reset during the run (500 -> 40): its growth is what it reads now
    found = {(f.entity, f.rule) for f in judge([nvlink_row("n1", 500, None), nvlink_row("n1", 40, 1)], t)}
    assert ("n1/gpu1", "nvlink-errors-grew") in found
    # a GPU the inventory has no card for is the host's
    found = {(f.entity, f.entity_kind) for f in judge([nvlink_row("n1", 0, None, card=None),
                                                       nvlink_row("n1", 300, 1, card=None)], t)}
    assert found == {("n1", "host")}


def test_the_xid_table_decides_severity_and_confirmation(tmp_path: Path) -> None:
    t = topo(tmp_path)
    found = {f.entity: f for f in judge([kernel_row("n1", xid(79), xid(13, card=0)),
                                         kernel_row("n2", xid(63, card=None), xid(20034, card=None, source="sxid",
                                                                                  klass="fatal"))], t)
             if f.rule.startswith("kernel")}
    assert (found["n1/gpu1"].severity, found["n1/gpu1"].evidence["confirm"]) == ("critical", "none")
    assert found["n1/gpu0"].severity == "info" and "application error" in found["n1/gpu0"].message
    assert {(f.entity, f.rule, f.severity) for f in judge([kernel_row("n2", xid(63, card=None))], t)} == \
        {("n2", "kernel-xid", "warning")}
    sxid = [f for f in judge([kernel_row("n2", xid(20034, card=1, source="sxid", klass="fatal"))], t)]
    assert [(f.entity, f.entity_kind, f.severity) for f in sxid] == [("n2", "host", "critical")]  # the tray
    unknown = judge([kernel_row("n1", xid(999))], t)
    assert [(f.severity, f.evidence["action"], "confirm" in f.evidence) for f in unknown] == \
        [("warning", "contact_support", False)]


def test_a_user_table_overrides_and_a_bad_one_is_refused_with_its_line(tmp_path: Path) -> None:
    t = topo(tmp_path)
    mine = load_rules_text("rules:\n  - name: my-xid\n    op: kernel_events\n    metric: kernel_events\n"
                           "    source: xid\n    severity: info\n    scope: card\n"
                           "    table: {63: {severity: critical, action: reset_gpu}}\n").rules
    assert [(f.severity, f.evidence["confirm"]) for f in judge([kernel_row("n1", xid(63))], t, mine)] == \
        [("critical", "none")]
    with pytest.raises(ConfigError, match=r"mine.yaml:8: .*severity must be one of"):
        load_rules_text("rules:\n  - name: my-xid\n    op: kernel_events\n    metric: kernel_events\n"
                        "    source: xid\n    severity: info\n    scope: card\n"
                        "    table: {63: {severity: fatal}}\n", "mine.yaml")
    with pytest.raises(ConfigError, match=r"table key .bad.: aer reports are keyed by a class \(fatal, non-fatal, corrected\)"):
        load_rules_text("rules:\n  - {name: x, op: kernel_events, metric: kernel_events, source: aer, severity: info,"
                        " table: {bad: {severity: info}}}\n")


def test_a_runs_bounded_read_keeps_every_line_the_view_reads() -> None:
    """One parser, one judgement: the grep a run's kernel-log read applies (kernel_log.PATTERN)
    keeps every line the view reads, so a host's read gives the events ``sncheck parse
    kernel-log`` gives on the whole log (generated logs of every report and time format)."""
    from grammars import variants

    def reported(events: list[dict]) -> list[dict]:
        # a hung task's stack (its Tainted, sched and Call Trace lines) is what a pasted log shows:
        # the read keeps the report lines only, and the policy keys hung tasks by class
        return [{k: x for k, x in e.items() if k not in _STACK} if e["source"] == "hung_task" else e for e in events]

    for v in variants("kernel-log"):
        kept = "".join(ln for ln in v.text.splitlines(True) if re.search(kernel_log.PATTERN, ln))
        whole, read = kernel_log.parse_kernel_log(v.text), kernel_log.parse_kernel_log(kept)
        assert (reported(read["events"]), read["driver_version"], read["faults"]) == \
            (reported(whole["events"]), whole["driver_version"], whole["faults"]), v.name
        assert [e for e in read["events"] if e["source"] == "hung_task"] == [] or \
            all(e["trace"] == [] and e["module"] is None for e in read["events"] if e["source"] == "hung_task")


_STACK = ("trace", "module", "state", "tainted", "kernel")


def test_parse_ib_counters_judges_a_read_as_a_run_and_growth_only_since_an_earlier_one(tmp_path: Path) -> None:
    """One judgement (issue 28): a read alone is the run's read before the traffic (info, exit 0);
    --since an earlier read, the growth (exit 1 over the rules' bar); an earlier read that judges
    nothing (cut, another host's ports, not the view's) is refused, exit 2, never a pass."""
    def read(name: str, **values: int) -> str:
        path = tmp_path / name
        path.write_text("".join(f"/sys/class/infiniband/{dev}/ports/1/counters/{c}:{v}\n" for dev in ("mlx5_0",)
                                for c, v in {"symbol_error": 0, "port_xmit_data": 10**6, **values}.items())
                        + counters.END_MARKER + "\n")
        return str(path)

    def parse(*args: str):
        r = CliRunner().invoke(main, ["parse", "ib-counters", *args])
        data = json.loads(r.stdout) if r.stdout.startswith("{") else {}
        return r.exit_code, [(j["rule"], j["severity"], j["entity"]) for j in data.get("judged", [])], r.output

    before, after = read("before.txt", symbol_error=4), read("after.txt", symbol_error=9, port_xmit_data=10**9)
    assert parse(before)[:2] == (0, [("fabric-errors-before-run", "info", "log/nic0")])
    code, judged, out = parse(after, "--since", before)
    assert (code, judged) == (1, [("ib-port-errors-grew", "critical", "log/nic0")]), out
    assert "symbol_error +5 (4 -> 9)" in out
    assert parse(read("same.txt", symbol_error=4), "--since", before)[:2] == \
        (0, [("fabric-errors-before-run", "info", "log/nic0")])  # nothing grew
    cut = tmp_path / "cut.txt"
    cut.write_text(Path(before).read_text().replace(counters.END_MARKER, ""))
    other = tmp_path / "other.txt"
    other.write_text(Path(before).read_text().replace("mlx5_0", "mlx5_7"))
    for earlier, says in ((cut, "not whole"), (other, "holds no error counter"), (tmp_path / "x.txt", "not ib-counters")):
        if earlier.name == "x.txt":
            earlier.write_text("hello\n")
        code, _, out = parse(after, "--since", str(earlier))
        assert code == 2 and says in out and str(earlier) in out, out
    # (perfquery and ibqueryerrors are judged so too since issue 28's audit: test_pma_counters)
    r = CliRunner().invoke(main, ["parse", "ibstat", after, "--since", before])
    assert r.exit_code == 2 and "--since judges a counter read's growth (ib-counters, perfquery, ibqueryerrors)" in r.output
