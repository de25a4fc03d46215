"""Hostile inputs, round 10: hostile tools over real SSH and the gate's honesty. New instances of
the outside probe's SSH and GATE classes (``../shared/adversarial-r3``): tools that print a whole
listing and fail, print to stderr only, print another vendor's output, NUL bytes, bytes that are
not UTF-8, a 2 MB line, a child that keeps the pipe open, a clock gone back 3 days, two inventory
names for one machine, a Python 3.6, a tool that is a directory, no GPUs; then rules, bounds and
bands that are not what they seem, scoped runs, runs killed between their layers and judging, and
a results.json edited to say pass. Each test names its case id; the README's round 10 table lists
them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_hardening import one_line_error

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "inventories" / "demo-2sn.yaml"
REAL = ROOT / "fixtures" / "real"
Q_CMD = '"-q") exec cat "$D/q" ;;'  # the fake nvidia-smi's -q line (test_ssh_backend.FAKE_NVIDIA_SMI)


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- hostile tools over real sshd on loopback -------------------------------------------------------

def _two_hosts(sshd_cluster, tmp_path: Path, extra: str = ""):
    """node1 and node2, healthy A100 hosts of one card (the SSH tests' fake nvidia-smi), and
    their inventory."""
    from test_ssh_backend import install_profile, write_inventory

    cluster = sshd_cluster(2, ["node1", "node2"])
    for h in cluster:
        install_profile(h, "a100", cards=1)
    return cluster, write_inventory(tmp_path / "inv.yaml", cluster, extra=extra)


def _q_does(host, line: str) -> None:
    """node's fake ``nvidia-smi -q`` runs ``line`` (sh) instead of printing its listing."""
    tool = host.bin_dir / "nvidia-smi"
    text = tool.read_text()
    assert Q_CMD in text
    tool.write_text(text.replace(Q_CMD, f'"-q") {line} ;;'))


def _facts(inv: Path, cluster) -> tuple[dict[str, list[dict]], list]:
    """Every host's host facts that are not a pass, and the shipped rules' findings."""
    from test_ssh_backend import failed_facts
    from vendor_ssh import host_facts

    rows, findings = host_facts(inv, cluster)
    return failed_facts(rows), findings


Q_FACTS = {"gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons"}


@pytest.mark.sshd
def test_h10_01_a_whole_listing_from_a_tool_that_exits_1_is_not_a_pass(sshd_cluster, tmp_path: Path) -> None:
    """H10-01: `nvidia-smi -q` prints node2's whole, clean listing, then exits 1."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    _q_does(cluster["node2"], 'cat "$D/q"; exit 1')
    bad, findings = _facts(inv, cluster)
    assert set(bad) == {"node2"}, bad
    assert [(r["fact"], r["ok"]) for r in bad["node2"]] == [("gpu_report", False)]
    assert "exit 1: no error text" in bad["node2"][0]["message"]
    assert [(f.entity, f.severity.value) for f in findings] == [("node2", "critical")], findings


@pytest.mark.sshd
def test_h10_02_a_listing_printed_to_stderr_only_is_not_measured(sshd_cluster, tmp_path: Path) -> None:
    """H10-02: `nvidia-smi -q` prints its listing to stderr, nothing to stdout, and exits 0."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    _q_does(cluster["node2"], 'cat "$D/q" >&2; exit 0')
    bad, findings = _facts(inv, cluster)
    assert {(r["fact"], r["status"]) for r in bad["node2"]} == {(f, "parse_failed") for f in Q_FACTS}
    assert {f.rule for f in findings} == {"not-run-parse-failed"} and all(f.not_measured for f in findings)


@pytest.mark.sshd
def test_h10_03_amd_smi_output_on_an_nvidia_host_is_not_read_as_nvidia_smi(sshd_cluster, tmp_path: Path) -> None:
    """H10-03: an NVIDIA host whose `nvidia-smi -q` prints amd-smi's static listing (a wrapper
    pointing at the wrong vendor's tool)."""
    from sncheck.vendors.parsers import strip_source_header

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    amd = next((REAL / "harvest9" / "amd-smi").glob("01_*"))
    (cluster["node2"].directory / "data" / "q").write_text(strip_source_header(amd.read_text()))
    bad, findings = _facts(inv, cluster)
    assert {(r["fact"], r["status"]) for r in bad["node2"]} == {(f, "parse_failed") for f in Q_FACTS}
    assert "no 'GPU <bus id>' sections found" in bad["node2"][0]["message"]
    assert findings and all(f.not_measured and f.entity == "node2" for f in findings)


@pytest.mark.sshd
@pytest.mark.parametrize("corrupt", [b"    Retired\x00Pages\n", b"    Retired Pages\n\x00\x00\x00\x00\n"],
                         ids=["nul-in-header", "nul-line"])
def test_h10_04_nul_bytes_in_a_listing_are_no_pass(sshd_cluster, tmp_path: Path, corrupt: bytes) -> None:
    """H10-04: NUL bytes in node2's `nvidia-smi -q`, in its one section's header or on a line of
    their own: the section was read as none (every value null, 'not reported') and every fact
    passed."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    q = cluster["node2"].directory / "data" / "q"
    q.write_bytes(q.read_bytes().replace(b"    Retired Pages\n", corrupt, 1))
    bad, findings = _facts(inv, cluster)
    assert {(r["fact"], r["status"]) for r in bad["node2"]} == {(f, "parse_failed") for f in Q_FACTS}, bad
    assert "holds a NUL byte or bytes that are not UTF-8: not the tool's text" in bad["node2"][0]["message"]
    assert findings and all(f.not_measured for f in findings)
    # one parser, one judgement: `sncheck parse` of that output says the same
    r = _cli("parse", "nvidia-smi-q", q)
    assert r.exit_code == 1 and "holds a NUL byte" in r.output, r.output


@pytest.mark.sshd
def test_h10_05_a_2_mb_line_makes_a_finding_of_bounded_length(sshd_cluster, tmp_path: Path) -> None:
    """H10-05: node2's listing ends with one line of 2,000,000 characters: the finding quoted it
    whole, a 2 MB message in results.json, the report and the terminal."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    q = cluster["node2"].directory / "data" / "q"
    q.write_text(q.read_text() + "A" * 2_000_000 + "\n")
    bad, findings = _facts(inv, cluster)
    assert [r["fact"] for r in bad["node2"]] == ["gpu_report"]
    assert findings and all(len(f.message) < 4200 for f in findings), [len(f.message) for f in findings]
    assert re.search(r"\.\.\. \(cut: 2,000,\d{3} characters in all\)$", findings[0].message), findings[0].message[-80:]


@pytest.mark.sshd
def test_h10_06_bytes_that_are_not_utf8_in_a_key_are_no_pass(sshd_cluster, tmp_path: Path) -> None:
    """H10-06: bytes 0xff 0xfe inside the 'Pending Page Blacklist' key of node2's listing."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    q = cluster["node2"].directory / "data" / "q"
    q.write_bytes(q.read_bytes().replace(b"Pending Page Blacklist", b"Pending Page \xff\xfeBlacklist"))
    bad, findings = _facts(inv, cluster)
    assert {r["fact"] for r in bad["node2"]} == Q_FACTS and not any(r["ok"] for r in bad["node2"])
    assert findings and {f.entity for f in findings} == {"node2"}


@pytest.mark.sshd
def test_h10_07_a_child_that_keeps_the_pipe_open_is_bounded(sshd_cluster, tmp_path: Path) -> None:
    """H10-07: `nvidia-smi -q` prints its whole listing and exits 0, leaving a child that holds
    stdout open for 60 s: bounded by the command timeout, not measured, never a pass."""
    import time

    cluster, inv = _two_hosts(sshd_cluster, tmp_path, extra="ssh: {command_timeout: 3}\n")
    _q_does(cluster["node2"], 'cat "$D/q"; (sleep 60 &); exit 0')
    started = time.monotonic()
    bad, findings = _facts(inv, cluster)
    assert time.monotonic() - started < 30
    assert {(r["fact"], r["status"]) for r in bad["node2"]} == {(f, "timeout") for f in Q_FACTS}
    assert findings and all(f.not_measured for f in findings)


@pytest.mark.sshd
def test_h10_23_dcgmi_printing_every_test_passed_then_exiting_226_is_no_pass(sshd_cluster, tmp_path: Path) -> None:
    """H10-23: node2's `dcgmi diag -r 1` prints its whole all-pass table, then exits 226 (DCGM's
    error): the exit was said in the message, but the fact passed (its check read the result
    word alone)."""
    from sshd_harness import install_fake_tool

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    tool = cluster["node2"].bin_dir / "dcgmi"
    install_fake_tool(cluster["node2"], "dcgmi", tool.read_text().replace("exec cat", "cat") + "exit 226\n")
    bad, findings = _facts(inv, cluster)
    assert [(r["fact"], r["ok"]) for r in bad["node2"]] == [("dcgmi_diag", False)], bad
    assert "dcgmi diag: Pass: exit 226: no error text" in bad["node2"][0]["message"]
    assert [(f.entity, f.severity.value) for f in findings] == [("node2", "critical")]


XID_LINE = "{t} NVRM: Xid (PCI:0000:3b:00): {code}, pid=2712, name=python3, Graphics Exception\n"


@pytest.mark.sshd
def test_h10_08_a_clock_gone_back_3_days_does_not_hide_new_reports(sshd_cluster, tmp_path: Path) -> None:
    """H10-08: node1's clock ran 3 days fast at the last run (its dmesg stamps and the kept
    cursor are 2026-12-08), then was set right. dmesg stamps every line by the clock as it is
    now, so tonight's new Xid 79 is stamped 2026-12-05, before the cursor: it was dropped as
    old, and the night passed."""
    from datetime import datetime, timezone

    from sshd_harness import install_fake_tool
    from test_ssh_kernel_counters import _findings, night, replay_kernel_log, topo_of

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    state = tmp_path / "state"

    def clock(iso: str) -> None:
        epoch = int(datetime.fromisoformat(iso).replace(tzinfo=timezone.utc).timestamp())
        install_fake_tool(cluster["node1"], "date", f"#!/bin/sh\necho {epoch}\n")

    clock("2026-12-08T10:05:00")   # 3 days fast
    replay_kernel_log(cluster["node1"], XID_LINE.format(t="2026-12-08T10:00:00,000000+00:00", code=13))
    first = _findings(night(inv, cluster, state), topo_of(inv))
    assert [f.rule for f in first if "kernel" in f.rule] == ["kernel-xid"]

    clock("2026-12-05T10:05:00")   # set right: the old report moves back 3 days with every stamp
    replay_kernel_log(cluster["node1"], XID_LINE.format(t="2026-12-05T10:00:00,000000+00:00", code=13)
                      + XID_LINE.format(t="2026-12-05T10:03:00,000000+00:00", code=79))
    rows = night(inv, cluster, state)
    kernel = next(r for r in rows if r["fact"] == "kernel_log" and r["host"] == "node1")
    assert not kernel["ok"], kernel["message"]
    assert "the host's clock now (2026-12-05T10:05:00.000000+00:00) is behind that stamp: the clock went back since the " \
           "last run, so which reports are new cannot be told (not judged)" in kernel["message"]
    found = _findings(rows, topo_of(inv))
    assert [f.entity for f in found] == ["node1"], found

    # The next night reads from the corrected clock's stamps: nothing new, nothing said.
    clock("2026-12-06T10:05:00")
    rows = night(inv, cluster, state)
    kernel = next(r for r in rows if r["fact"] == "kernel_log" and r["host"] == "node1")
    assert kernel["ok"] and kernel["value"]["events"] == [], kernel["message"]


@pytest.mark.sshd
def test_h10_09_two_inventory_hosts_that_are_one_machine_are_refused(sshd_cluster, tmp_path: Path) -> None:
    """H10-09: node2's inventory address and port are node1's (or the ssh config sends both names
    to one HostName): node1's machine answered for both, node2's was never measured, and the run
    passed."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    one = cluster["node1"]
    text = inv.read_text()
    inv.write_text(text.replace(f"{{address: {cluster['node2'].address}, port: {cluster['node2'].port}}}",
                                f"{{address: '{one.address.upper()}.', port: {one.port}}}"))
    common = ["--backend", "ssh", "--known-hosts", cluster.known_hosts, "--ssh-config", cluster.ssh_config, "-q"]
    line = one_line_error(_cli("connectivity", "-i", inv, *common, "--out", tmp_path / "r1"))
    assert f"hosts node1 and node2 are both reached at {one.address.upper()}. port {one.port}: one machine would " \
           "be measured and judged as two hosts, and node2's own machine never" in line, line
    assert not (tmp_path / "r1").exists()
    # through the ssh config: two Host blocks, one HostName and Port
    cfg = tmp_path / "ssh_config"
    cfg.write_text(cluster.ssh_config.read_text().replace(f"HostName {cluster['node2'].address}\n  Port "
                                                          f"{cluster['node2'].port}",
                                                          f"HostName {one.address}\n  Port {one.port}"))
    bare = tmp_path / "bare.yaml"
    bare.write_text(re.sub(r"hosts:\n(  .*\n)+\Z", "", text))
    line = one_line_error(_cli("connectivity", "-i", bare, *common[:-3], "--ssh-config", cfg, "-q",
                               "--out", tmp_path / "r2"))
    assert "hosts node1 and node2 are both reached at" in line, line


@pytest.mark.sshd
def test_h10_10_a_python3_that_is_python_3_6_is_not_run(sshd_cluster, tmp_path: Path) -> None:
    """H10-10: node2's python3 is a Python 3.6: sncheck's probe does not compile there."""
    from sshd_harness import install_fake_tool
    from test_ssh_backend import probe_rows

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    install_fake_tool(cluster["node2"], "python3", "#!/bin/sh\necho '  File \"<string>\", line 1' >&2\n"
                                                   "echo 'SyntaxError: future feature annotations is not defined' >&2\n"
                                                   "exit 1\n")
    rows = probe_rows(inv, cluster)
    not_run = {r["entity"]: r for r in rows if r["kind"] == "not_run"}
    assert not_run["node2"]["status"] == "error"
    assert "node2: torch probe check failed: SyntaxError: future feature annotations is not defined" in \
        not_run["node2"]["message"]
    assert [r["status"] for r in rows if r["kind"] == "p2p"] == ["unreachable"]


@pytest.mark.sshd
def test_h10_11_a_tool_on_the_path_that_is_a_directory_is_missing(sshd_cluster, tmp_path: Path) -> None:
    """H10-11: node2's PATH holds a directory named ibstat (and no ibstat after it)."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    tool = cluster["node2"].bin_dir / "ibstat"
    tool.unlink()
    tool.mkdir()
    bad, findings = _facts(inv, cluster)
    assert [(r["fact"], r["status"]) for r in bad["node2"]] == [("ib_ports", "missing_tool")]
    assert [(f.entity, f.rule) for f in findings] == [("node2", "not-run-missing-tool")]


@pytest.mark.sshd
@pytest.mark.parametrize("how", ["attached-0", "no-devices"])
def test_h10_12_a_host_listing_0_gpus_with_exit_0_fails(sshd_cluster, tmp_path: Path, how: str) -> None:
    """H10-12: node2 (one card in the inventory) lists no GPU and exits 0: `Attached GPUs : 0` and
    an empty CSV, or every nvidia-smi command printing 'No devices were found'."""
    from sshd_harness import install_fake_tool

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    data = cluster["node2"].directory / "data"
    if how == "attached-0":
        q = (data / "q").read_text()
        (data / "q").write_text(re.sub(r"Attached GPUs\s*:\s*1", "Attached GPUs                             : 0",
                                       q[:q.index("\nGPU ")]) + "\n")
        (data / "csv").write_text("")
    else:
        install_fake_tool(cluster["node2"], "nvidia-smi", "#!/bin/sh\necho 'No devices were found'\nexit 0\n")
    bad, findings = _facts(inv, cluster)
    assert "card_count" in {r["fact"] for r in bad["node2"]} and "gpu_report" in {r["fact"] for r in bad["node2"]}
    assert findings and all(f.entity == "node2" and f.severity.value == "critical" for f in findings)


# -- gate honesty: rules, bounds, bands -------------------------------------------------------------

def test_h10_13_a_layer_s_only_rule_with_an_unknown_op_is_refused(tmp_path: Path) -> None:
    """H10-13: a rules file whose one golden rule names the op 'golden_bnad': the golden layer
    would be judged by nothing."""
    path = tmp_path / "r.yaml"
    path.write_text("rules:\n  - {name: p, op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}\n"
                    "  - name: g\n    op: golden_bnad\n    metric: golden_loss\n    severity: critical\n")
    line = one_line_error(_cli("rules", "check", path))
    assert f"{path}:4: rules.g.op: unknown op 'golden_bnad'" in line, line
    line = one_line_error(_cli("run", "pre-upgrade-gate", "-i", DEMO, "--backend", "mock", "--rules", path,
                               "--out", tmp_path / "run", "-q"))
    assert "unknown op 'golden_bnad'" in line and not (tmp_path / "run").exists()


@pytest.mark.parametrize("severity", ['"critical "', "CRITICAL", "Critical", '" warning"', '"critical\\t"'])
def test_h10_14_a_severity_that_is_almost_a_severity_is_refused(tmp_path: Path, severity: str) -> None:
    """H10-14: severity "critical " (a trailing blank), "CRITICAL", a leading blank or a tab, in a
    rule, in a kernel table entry and as a playbook's gate."""
    path = tmp_path / "r.yaml"
    path.write_text("extends: default\nrules:\n  - {name: x1, op: ratio_to_design, metric: p2p_bandwidth, "
                    f"below: 0.8, severity: {severity}}}\n")
    assert "rules.x1.severity: must be one of info, warning, critical" in one_line_error(_cli("rules", "check", path))
    path.write_text("extends: default\nrules:\n  - name: kernel-xid\n    table:\n"
                    f"      13: {{severity: {severity}, action: reset_gpu}}\n")
    assert "table[13].severity must be one of info, warning, critical" in one_line_error(_cli("rules", "check", path))
    pb = tmp_path / "pb.yaml"
    pb.write_text(f"name: x\nlayers: [connectivity]\ngate: {severity}\n")
    line = one_line_error(_cli("run", pb, "-i", DEMO, "--backend", "mock", "--out", tmp_path / "run", "-q"))
    assert f"{pb}:3:" in line and "gate" in line, line


@pytest.mark.parametrize("bound", [".nan", ".NaN", "1.0e+309", "-.inf", "1e309"])
def test_h10_15_a_bound_that_is_no_number_is_refused(tmp_path: Path, bound: str) -> None:
    """H10-15: a rule's bound of `.nan` (nothing is below NaN: the rule judges nothing), `1.0e+309`
    (YAML reads infinity), `1e309` (YAML 1.1 reads text), and a fault's factor the same."""
    path = tmp_path / "r.yaml"
    path.write_text("extends: default\nrules:\n  - {name: x1, op: ratio_to_design, metric: p2p_bandwidth, "
                    f"below: {bound}, severity: critical}}\n")
    line = one_line_error(_cli("rules", "check", path))
    assert f"{path}:3: rules.x1.below: must be" in line, line
    faults = tmp_path / "f.yaml"
    faults.write_text(f"faults:\n  - {{type: slow_card, target: node003/gpu2, factor: {bound}}}\n")
    line = one_line_error(_cli("connectivity", "-i", DEMO, "--backend", "mock", "--faults", faults,
                               "--out", tmp_path / "run", "-q"))
    assert f"{faults}:2:" in line and "factor" in line, line


def test_h10_16_a_band_whose_low_is_above_its_high_is_refused(tmp_path: Path) -> None:
    """H10-16: a stress sweep from 1 GiB down to 8 bytes (no size in it: nothing measured, a
    pass), and a golden reference whose band is negative (no loss inside it, or every one)."""
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: x\nlayers:\n  - stress: {min_bytes: 1G, max_bytes: 8}\ngate: warning\n")
    line = one_line_error(_cli("run", pb, "-i", DEMO, "--backend", "mock", "--out", tmp_path / "r1", "-q"))
    assert f"{pb}:3: min_bytes (1073741824) is above max_bytes (8); sizes must grow" in line, line
    golden = json.loads((ROOT / "fixtures" / "golden" / "mock-demo.json").read_text())
    for band in ({"step_rel": -0.05, "final_rel": 0.03}, {"step_rel": 0.05, "final_rel": -1}):
        ref = tmp_path / "g.json"
        ref.write_text(json.dumps({**golden, "band": band}))
        pb.write_text(f"name: x\nlayers:\n  - golden: {{reference: {ref}}}\ngate: warning\n")
        line = one_line_error(_cli("run", pb, "-i", DEMO, "--backend", "mock", "--out", tmp_path / "r2", "-q"))
        assert f"{ref}: golden curve: field band." in line and "greater than or equal to 0" in line, line
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


# -- gate honesty: scoped runs ----------------------------------------------------------------------

CONNECTIVITY = "name: c\nlayers:\n  - connectivity\ngate: warning\n"


def _scoped(tmp_path: Path, name: str, *targets: str, faults: str | None = None):
    pb = tmp_path / "pb.yaml"
    pb.write_text(CONNECTIVITY)
    extra: list[object] = []
    if faults is not None:
        (tmp_path / "f.yaml").write_text(faults)
        extra = ["--faults", tmp_path / "f.yaml"]
    args = [a for t in targets for a in ("--targets", t)]
    r = _cli("run", pb, "-i", DEMO, "--backend", "mock", "--seed", 1, "--out", tmp_path / name, "-q",
             "--format", "junit", *args, *extra)
    return r, tmp_path / name


def test_h10_17_a_fault_outside_the_scope_is_said_out_of_scope_not_passed(tmp_path: Path) -> None:
    """H10-17: `--targets node002` with a fault plan whose one fault is a link of node005, which no
    pair of node002 measures: the run judges node002 (a pass for that scope), says its scope,
    and names nothing of node005 as passing (JUnit has no case for it)."""
    r, out = _scoped(tmp_path, "run", "node002",
                     faults='faults:\n  - {type: degraded_link, target: "node005/gpu0<->node005/gpu1", factor: 0.3}\n')
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert res["scope"]["hosts"] == ["node002"] and res["findings"] == []
    assert "node005" not in (out / "junit.xml").read_text()
    # the same fault in scope fails the gate
    r, out = _scoped(tmp_path, "wide", "node005",
                     faults='faults:\n  - {type: degraded_link, target: "node005/gpu0<->node005/gpu1", factor: 0.3}\n')
    assert r.exit_code == 1, r.output


def test_h10_18_a_host_named_twice_in_the_scope_is_measured_once(tmp_path: Path) -> None:
    """H10-18: `--targets node002,node002 --targets node002 --targets node002/gpu1`: the plan of
    `--targets node002`, no pair twice."""
    r1, once = _scoped(tmp_path, "once", "node002")
    r2, thrice = _scoped(tmp_path, "thrice", "node002,node002", "node002", "node002/gpu1")
    assert r1.exit_code == r2.exit_code == 0, (r1.output, r2.output)
    a, b = (json.loads((d / "results.json").read_text()) for d in (once, thrice))
    assert a["layers"][0]["summary"]["pairs"] == b["layers"][0]["summary"]["pairs"] == 150
    assert a["scope"]["cards"] == b["scope"]["cards"]


@pytest.mark.parametrize("target", ["node099", "node002/gpu9", "sn7", "NODE002"])
def test_h10_19_a_scope_naming_what_the_inventory_lacks_is_refused(tmp_path: Path, target: str) -> None:
    """H10-19: `--targets` naming a host, a card or a supernode the inventory does not have."""
    r, out = _scoped(tmp_path, "run", target)
    line = one_line_error(r)
    assert f"--targets: '{target}' is not a card, host or supernode of inventory demo-2sn" in line, line
    assert not out.exists()


# -- gate honesty: a run killed between its layers and judging, a results.json edited --------------

KILLER = """
import os, signal, sys, time
from sncheck.run import runner
def retest(self, *a, **k):  # the layers are measured, judging begins: the run is killed here
    os.kill(os.getpid(), signal.{sig})
    time.sleep(30)
runner.Run.retest = retest
from sncheck.cli.main import main
sys.argv[0] = "sncheck"
main()
"""
STRESSED = "name: cs\nlayers:\n  - connectivity\n  - stress: {max_bytes: 64K}\ngate: warning\n"


def _killed(tmp_path: Path, sig: str) -> tuple[int, Path]:
    pb = tmp_path / "pb.yaml"
    pb.write_text(STRESSED)
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-c", KILLER.format(sig=sig), "run", str(pb), "-i", str(DEMO),
                        "--backend", "mock", "--seed", "1", "--faults", str(ROOT / "fixtures/faults/demo-mixed.yaml"),
                        "--out", str(out), "-q", "--state-dir", str(tmp_path / "state")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    return p.returncode, out


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_h10_20_a_run_killed_before_judging_reads_back_as_no_pass(tmp_path: Path, sig: str) -> None:
    """H10-20: a run killed (SIGKILL, SIGTERM) after its stress layer, as judging begins; then
    what reads its directory back: results.json, `baseline make`, `diff`."""
    code, out = _killed(tmp_path, sig)
    assert code == (-signal.SIGKILL if sig == "SIGKILL" else 3)
    res = json.loads((out / "results.json").read_text())
    assert res["verdict"] == "error"
    if sig == "SIGKILL":  # the last layer's snapshot: unfinished
        assert res["finished"] is None and not res.get("error")
    else:  # a SIGTERM is caught: the record ends, naming the signal and what was not judged (H19-07)
        assert res["finished"] and "interrupted (SIGTERM)" in res.get("error", ""), res
    assert [layer["name"] for layer in res["layers"]] == ["connectivity", "stress"]
    line = one_line_error(_cli("baseline", "make", out, "--out", tmp_path / "b.json"))
    assert "run verdict is 'error'; a baseline needs known-good runs" in line
    r = _cli("diff", out, out)
    assert r.exit_code == 0 and "(error) ->" in r.output and "(pass)" not in r.output, r.output


def test_h10_21_a_results_json_edited_to_say_pass_is_read_by_its_findings(tmp_path: Path) -> None:
    """H10-21: a failed run's results.json edited to `verdict: pass`, and every layer to pass,
    findings left: `baseline make` and `diff` read the verdict its findings give, never the
    word written."""
    pb = tmp_path / "pb.yaml"
    pb.write_text(STRESSED)
    out = tmp_path / "run"
    r = _cli("run", pb, "-i", DEMO, "--backend", "mock", "--seed", 1, "--out", out, "-q",
             "--faults", ROOT / "fixtures/faults/demo-mixed.yaml")
    assert r.exit_code == 1, r.output
    path = out / "results.json"
    res = json.loads(path.read_text())
    assert res["findings"]
    path.write_text(json.dumps({**res, "verdict": "pass", "layers": [{**la, "verdict": "pass"} for la in res["layers"]]}))
    line = one_line_error(_cli("baseline", "make", out, "--out", tmp_path / "b.json"))
    assert "run verdict is 'fail'; a baseline needs known-good runs" in line, line
    r = _cli("diff", out, out)
    assert "(fail) ->" in r.output and "(pass)" not in r.output, r.output


def test_h10_22_the_golden_loss_rule_disabled_leaves_the_golden_layer_not_judged(tmp_path: Path) -> None:
    """H10-22: a rules file extending the default with `golden-loss-out-of-band` disabled: the
    golden layer's only other rule judges step time, so a card whose loss diverges passed
    (exit 0, no finding, no word that the loss went unjudged)."""
    rules = tmp_path / "r.yaml"
    rules.write_text("extends: default\nrules:\n  - {name: golden-loss-out-of-band, enabled: false}\n")
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {type: diverge, target: node003/gpu2}\n")
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: g\nlayers:\n  - golden\ngate: warning\n")
    out = tmp_path / "run"
    r = _cli("run", pb, "-i", DEMO, "--backend", "mock", "--seed", 1, "--faults", faults, "--rules", rules,
             "--out", out, "-q")
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    assert {(f["entity"], f["rule"], f["about"]) for f in res["findings"]} == \
        {("sn0", "layer-not-judged", "check"), ("sn1", "layer-not-judged", "check")}, res["findings"]
    assert res["isolation"] == []
    # with the loss rule enabled, the diverging card is the finding
    r = _cli("run", pb, "-i", DEMO, "--backend", "mock", "--seed", 1, "--faults", faults, "--out", tmp_path / "on", "-q")
    assert r.exit_code == 1 and "node003/gpu2" in (tmp_path / "on" / "results.json").read_text(), r.output


def test_h10_09_one_endpoint_is_one_address_port_and_jump() -> None:
    """H10-09, the comparison: a name as DNS compares it (case, a trailing dot) and the port make
    an endpoint; the same address behind two jump hosts is two machines, and another port is
    another sshd (a container each, as the SSH tests' hosts are)."""
    from sncheck.transport import HostSpec, shared_endpoints

    jump_a, jump_b = HostSpec("ja", "10.0.0.1"), HostSpec("jb", "10.0.0.2")
    specs = {"n1": HostSpec("n1", "gpu01.example", 22), "n2": HostSpec("n2", "GPU01.Example.", 22, "other"),
             "n3": HostSpec("n3", "gpu01.example", 2222), "n4": HostSpec("n4", "localhost", 22, proxy_jump=jump_a),
             "n5": HostSpec("n5", "localhost", 22, proxy_jump=jump_b), "n6": HostSpec("n6", "LOCALHOST", 22,
                                                                                     proxy_jump=jump_a)}
    assert shared_endpoints(specs) == [("n1", "n2", "GPU01.Example. port 22"),
                                       ("n4", "n6", "LOCALHOST port 22 via 10.0.0.1")]
