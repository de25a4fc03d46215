"""A kernel log report no rule takes is "not judged" in a run, as in ``sncheck parse kernel-log
--rules``: never a pass (sncheck.health.invariants.kernel_not_judged); and a kernel table's
code written as YAML reads another number from it (``0x0d:``) is refused at its line.

The SSH run: real sshd hosts on 127.0.1.x (tests/sshd_harness.py) with fake tools and a fake
``dmesg`` replaying an Xid 79 (tests/test_ssh_kernel_counters.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sncheck.backends.base import Backend
from sncheck.backends.local import LocalBackend
from sncheck.backends.slurm import SlurmBackend
from sncheck.backends.ssh import SshBackend
from sncheck.errors import ConfigError
from sncheck.health.invariants import KERNEL_NOT_JUDGED, kernel_not_judged
from sncheck.health.kernel import KERNEL_FACT, SOURCES, judged_sources
from sncheck.health.metrics import rows_context
from sncheck.health.rules import load_rules, load_rules_text
from sncheck.model import About, Basis, Severity
from sncheck.rows import host_fact_row
from sncheck.vendors.kernel_log import parse_kernel_log

REPO = Path(__file__).resolve().parents[1]
XID = "[  12.000000] NVRM: Xid (PCI:0000:2a:00): 79, pid=2712, name=python3, GPU has fallen off the bus.\n"
SXID = "[  13.000000] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up\n"
NO_XID = "extends: default\nrules:\n  - name: kernel-xid\n    enabled: false\n"


def _rows(text: str, earlier: str = "") -> pd.DataFrame:
    parsed = parse_kernel_log(text)
    value = {"events": [{**e, "card": 1} for e in parsed["events"]],
             "earlier": parse_kernel_log(earlier)["events"] if earlier else [], "boot": None, "driver_version": None}
    return pd.DataFrame([{**host_fact_row("node1", KERNEL_FACT, value, None, True, tool="kernel-log"),
                          "layer": "connectivity"}])


def test_a_report_no_rule_takes_is_not_judged_per_host_and_source_about_the_check() -> None:
    rows = _rows(XID + XID + SXID)
    found = kernel_not_judged("connectivity", rows, rows_context(), judged_sources(list(load_rules_text(NO_XID).rules)),
                              "warning")
    assert [(f.entity, f.rule, f.evidence["source"], f.evidence["reports"]) for f in found] == \
        [("node1", KERNEL_NOT_JUDGED, "xid", 2)]  # the SXid is judged by kernel-sxid; the card's host is named
    f = found[0]
    assert f.severity == Severity.WARNING and f.about == About.CHECK and f.basis == Basis.NOT_JUDGED
    assert "not judged: 2 xid reports" in f.message and "source: xid" in f.message and "Xid" in f.message
    # a file with no kernel rule at all: both sources; an nvrm report names its rule source
    none = kernel_not_judged("connectivity", rows, rows_context(), frozenset(), "critical")
    assert [f.evidence["source"] for f in none] == ["sxid", "xid"]
    assert all(f.severity == Severity.CRITICAL for f in none)
    # the shipped rules take them; an earlier run's reports (judged when new) are not repeated
    default = judged_sources(list(load_rules("default").rules))
    assert kernel_not_judged("connectivity", rows, rows_context(), default, "critical") == []
    assert kernel_not_judged("connectivity", _rows("", earlier=XID), rows_context(), frozenset(), "critical") == []


def test_every_shipped_rule_set_judges_every_source_of_the_runs_that_read_a_kernel_log() -> None:
    default = judged_sources(list(load_rules("default").rules))
    assert default == {s for sources in SOURCES.values() for s in sources}
    for capture in sorted((REPO / "fixtures" / "real" / "kernel-log").glob("*.txt")):
        assert {e["source"] for e in parse_kernel_log(capture.read_text())["events"]} <= default, capture.name
    # Only the SSH backend reads hosts' kernel logs, under the default rules; the backends that
    # default to local-cpu.yaml (local, Slurm on gloo) and node-check read none: they need no kernel rule.
    assert SshBackend.host_reads is not Backend.host_reads and SshBackend.default_rules is Backend.default_rules
    assert LocalBackend.host_reads is Backend.host_reads and SlurmBackend.host_reads is Backend.host_reads
    assert "kernel" not in (REPO / "sncheck" / "run" / "nodecheck.py").read_text()
    for name in ("local-cpu", "node-check"):
        assert judged_sources(list(load_rules(name).rules)) == frozenset(), name


XID_RULE = "rules:\n  - name: kernel-xid\n    op: kernel_events\n    metric: kernel_events\n    source: xid\n" \
    "    severity: warning\n    table:\n      79: {severity: critical}\n"


@pytest.mark.parametrize(("written", "read"), [("0x0d", 13), ("013", 11), ("+13", 13), ("1_3", 13), ("0b1101", 13),
                                                ("1:05", 65)])
def test_a_table_code_yaml_reads_as_another_number_is_refused_at_its_line(tmp_path: Path, written: str,
                                                                            read: int) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(f"{XID_RULE}      {written}: {{severity: critical}}\n")
    with pytest.raises(ConfigError) as e:
        load_rules(str(path))
    assert f"{path}:9" in str(e.value) and f"table key {written}: YAML reads the number {read}" in str(e.value)
    assert "decimal" in str(e.value)
    # as the kernel prints it, the code is taken; so is a file extending one that writes it so
    path.write_text(f"{XID_RULE}      13: {{severity: critical}}\n")
    assert set(load_rules(str(path)).rules[0].params["table"]) == {79, 13}


def test_a_table_code_written_so_in_a_base_file_is_refused_at_the_base_s_line(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(f"{XID_RULE}      0x0d: {{severity: critical}}\n")
    (tmp_path / "mine.yaml").write_text("extends: base.yaml\nrules:\n  - name: kernel-xid\n    severity: info\n")
    with pytest.raises(ConfigError, match=r"base\.yaml:9: .*table key 0x0d"):
        load_rules(str(tmp_path / "mine.yaml"))


@pytest.mark.sshd
def test_an_ssh_run_with_kernel_xid_disabled_fails_not_judged_naming_xid(sshd_cluster, tmp_path: Path) -> None:
    """One host of one card: its facts and kernel log are read, and no pair needs a worker."""
    from fake_tool import install_fake_tools  # noqa: PLC0415 -- sshd: this test only
    from test_ssh_backend import install_python, rules_without_timing_peers, write_inventory  # noqa: PLC0415 -- sshd
    from test_ssh_kernel_counters import XID79_ON_GPU1, replay_kernel_log, run_gate  # noqa: PLC0415 -- sshd only

    cluster = sshd_cluster(1, ["node1"])
    install_fake_tools(cluster["node1"], cards=1)
    install_python(cluster["node1"])  # the run probes torch on every host
    replay_kernel_log(cluster["node1"], XID79_ON_GPU1)
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=1)
    rules = tmp_path / "no-xid.yaml"
    rules.write_text(f"extends: {rules_without_timing_peers(tmp_path / 'base.yaml')}\n"
                     + NO_XID.removeprefix("extends: default\n"))
    r, results, _ = run_gate(tmp_path, cluster, inv, tmp_path / "state", "night", rules=rules)
    assert r.exit_code == 1, r.output
    found = [f for f in results["findings"] if f["rule"] == KERNEL_NOT_JUDGED]
    assert [(f["entity"], f["evidence"]["source"]) for f in found] == [("node1", "xid")]
    assert "not judged: 1 xid report" in found[0]["message"] and results["verdict"] != "pass"
    assert not [f for f in results["findings"] if f["rule"] == "kernel-xid"]
    assert not results["isolation"]  # nothing is isolated on a report not judged
    # the same run under the shipped rules judges the Xid: tests/test_ssh_kernel_counters.py's first night


def test_a_yes_key_is_no_number_and_every_hex_key_keeps_its_text() -> None:
    """Review of 8d53e39: `yes:` (a bool to YAML) was kept as a number's text, so its refusal
    said 'the number True'; hex keys keep their written text, each one (the texts are now one
    dict filled in place: a copy per key was quadratic, 20,000 hex keys 6.4 s -> 2.8 s CPU)."""
    from sncheck.config import yamlio
    assert yamlio.load_text("yes: 1\n13: 2\n", "t.yaml").data.key_texts == {}
    hexes = yamlio.load_text("".join(f"0x{i:x}: 1\n" for i in range(1, 200)), "t.yaml").data
    assert hexes.key_texts == {str(i): f"0x{i:x}" for i in range(1, 200)}
