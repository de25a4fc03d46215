"""The kernel-log policy end to end on real captures (issue 28 item 5, its Done-when): for each
class of report (an Xid by its code, the NVLink5 Xids 144-150, amdgpu ring timeouts and RAS,
PCIe AER), a run's judgement of the capture and ``sncheck parse kernel-log FILE --rules R``
agree, under the shipped rules and under an override (severity, count, window) that changes the
verdict the way it says; then the attacks: a malformed override, a log without timestamps, a
clock that goes back, a flood of one code.

A run's judgement: the host read's path (sncheck/backends/hostreads.py ``_check_kernel``: the
capture as sncheck's read prints it, with its end marker; each report named to the card whose
bus id it carries, the GPUs the capture's Xid and amdgpu lines name standing for the host's
card listing), then the rules. The expected verdicts are read from the raw text against the
tables (fixtures/rules/default.yaml and the override), not from sncheck."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from sncheck.backends.hostreads import _check_kernel
from sncheck.health import kernel
from sncheck.health.metrics import DetectContext, rows_context
from sncheck.health.rules import RuleSet, evaluate
from sncheck.topology import Topology
from sncheck.vendors import kernel_log
from sncheck.vendors.facts import Expect
from sncheck.vendors.parsers import parse_text, strip_source_header

from test_kernel_policy import REAL, rules_file, shipped, topo
HEAD = "extends: default\nrules:\n"


def run_verdicts(text: str, rules: RuleSet, t: Topology) -> set[tuple]:
    """(GPU bus id or 'log', table key, severity, action, reports, in_window) of a run's judgement."""
    parsed = kernel_log.parse_kernel_log(text + "\n" + kernel_log.END_MARKER + "\n")
    gpus = sorted({e["bus_id"] for e in parsed["events"] if e["source"] in ("xid", "amdgpu") and e.get("bus_id")})
    [row] = _check_kernel(lambda buses, _gpus: {b: i for i, b in enumerate(gpus) if b in buses}, True, None, [], None)(
        "n1", parsed, Expect(cards=8))
    assert row["status"] == "ok", row
    kernel_rules = [r for r in rules.rules if r.op == "kernel_events"]  # the others judge no kernel report
    found = evaluate(kernel_rules, pd.DataFrame([row]), DetectContext(t, t.inventory.design))
    bus_of = {f"n1/gpu{i}": b for i, b in enumerate(gpus)} | {"n1": "log"}
    return {(bus_of[f.entity], f.evidence["key"], f.severity, f.evidence["action"], f.evidence["reports"],
             f.evidence.get("in_window")) for f in found if f.rule.startswith("kernel")}


def parse_verdicts(raw: str, rules: RuleSet) -> tuple[int, set[tuple]]:
    """``sncheck parse kernel-log FILE --rules R``'s exit status and verdicts (the function it calls:
    tests/test_kernel_policy.py runs the command itself)."""
    data = parse_text("kernel-log", raw)
    judged = kernel.judged(data, list(rules.rules), rows_context())
    failed = bool(data.get("errors")) or any(j["severity"] in ("warning", "critical") for j in judged)
    return int(failed), {(j["entity"], j["key"], j["severity"], j["action"], j["reports"], j["in_window"])
                         for j in judged}


def agree(raw: str, rules: RuleSet, t: Topology) -> tuple[int, set[tuple]]:
    code, parsed = parse_verdicts(raw, rules)
    assert run_verdicts(strip_source_header(raw), rules, t) == parsed
    return code, parsed


CASES = {
    # Xid by code: three Xid 13 within 5 s on 0000:cb:00 (dmesg -T), then an Xid 109 on it
    "xid": ("kernel-log/01_dmesg_ctime_xid13_x3_xid109_gpud_readme.txt",
            {("0000:cb:00", "13", "info", "restart_app", 3, None), ("0000:cb:00", "109", "critical", "reset_gpu", 1, None)},
            "      13: {severity: warning, count: 3, window: 24h}\n"
            "      109: {severity: critical, count: 2, window: 1h}\n",
            {("0000:cb:00", "13", "warning", "restart_app", 3, 3), ("0000:cb:00", "109", "info", "reset_gpu", 1, 1)}),
    # NVLink5 on GB200: Xid 149 NETIR Fatal on 0019:01:00 (a kmsg line: no timestamp)
    "nvlink5-149": ("harvest/kernel-log/10_kmsg_xid149_netir_fatal_gb200_domain_0019_link_minus1_gpud-pr1174.txt",
                    {("0019:01:00", "149", "critical", "reset_gpu", 1, None)},
                    "      149: {severity: warning, action: contact_support}\n",
                    {("0019:01:00", "149", "warning", "contact_support", 1, None)}),
    # Xid 145 RLW_RXPIPE Nonfatal: one report, of no known time, under 'two within an hour'
    "nvlink5-145": ("harvest/kernel-log/11_kmsg_xid145_rlw_rxpipe_nonfatal_link13_domain_0018_gpud-pr1174.txt",
                    {("0018:01:00", "145", "critical", "reset_gpu", 1, None)},
                    "      145: {severity: critical, count: 2, window: 1h, below: warning}\n",
                    {("0018:01:00", "145", "warning", "reset_gpu", 1, 1)}),
    # amdgpu ring timeout (kernel 6.8 journal): gfx ring timeout (no device on its line), two
    # reset lines on 08:00 a second apart
    "amdgpu-ring": ("harvest/kernel-log/08_journal_kernel6.8_amdgpu_job_timedout_gfx_ring_timeout_baco_reset_vram_lost_"
                    "reporter_elided_segfault_cosmic-comp-issue2626.txt",
                    {("log", "ring-timeout", "warning", "restart_app", 1, None),
                     ("0000:08:00", "reset", "info", "ignore", 2, None)},
                    "      ring-timeout: {severity: critical, action: reset_gpu}\n"
                    "      reset: {severity: warning, count: 2, window: 10s}\n",
                    {("log", "ring-timeout", "critical", "reset_gpu", 1, None),
                     ("0000:08:00", "reset", "warning", "ignore", 2, 2)}),
    # amdgpu RAS on MI300X: an ERREVENT on dd:00, ACA banks: 1b:00's STATUS uncorrectable, 9d:00's corrected
    "amdgpu-ras": ("harvest/kernel-log/01_dmesg_amdgpu_erREVENT_athub_aca_banks_mi300x_rocm6.2.3_rocm-issue4021_head.txt",
                   {("0000:dd:00", "fatal", "critical", "reset_gpu", 1, None),
                    ("0000:1b:00", "aca", "critical", "reset_gpu", 1, None), ("0000:9d:00", "aca", "info", "ignore", 1, None)},
                   "      fatal: {severity: warning, action: contact_support}\n"
                   "      aca:\n        - {when: {status_class: correctable}, severity: warning, action: contact_support}\n"
                   "        - {severity: critical, action: reset_gpu}\n",
                   {("0000:dd:00", "fatal", "warning", "contact_support", 1, None),
                    ("0000:1b:00", "aca", "critical", "reset_gpu", 1, None),
                    ("0000:9d:00", "aca", "warning", "contact_support", 1, None)}),
    # PCIe AER at the root port 00:02 (corrected Replay Timer Timeout, then a fatal Surprise Down); Xid 79 on 02:00
    "aer": ("r4/kernel-xid/01_dmesg_aer_fatal_surprise_down_then_xid79_tesla_0000_02_00_gpu-burn-issue1.txt",
            {("log", "corrected", "info", "ignore", 1, None), ("log", "fatal", "critical", "reboot", 1, None),
             ("0000:02:00", "79", "critical", "reboot", 1, None)},
            "      corrected: {severity: warning}\n      fatal: {severity: critical, count: 2, window: 1h}\n",
            {("log", "corrected", "warning", "ignore", 1, None), ("log", "fatal", "info", "reboot", 1, 1),
             ("0000:02:00", "79", "critical", "reboot", 1, None)}),
    # three corrected Data Link Layer errors within a second (a syslog journal) under 'three within a minute'
    "aer-corrected": ("harvest/kernel-log/05_journal_kernel6_aer_correctable_message_received_from_timeout_badtlp_amd_"
                      "root_port_pop-issue3363.txt",
                      {("log", "corrected", "info", "ignore", 3, None)},
                      "      corrected: {severity: warning, count: 3, window: 1m}\n",
                      {("log", "corrected", "warning", "ignore", 3, 3)}),
    # mlx5 on a ConnectX-5 whose link dropped: Fatal error 1, the slot unavailable, the recovery aborted
    # (the shipped table's second case); keyed by the sensor's number, it is what the override says
    "mlx5": ("harvest/kernel-log/15_writeup_connectx5_oculink_mlx5_fatal1_pci_slot_unavailable_recovery_aborted_"
             "wrapped_no_pid.txt",
             {("log", "fatal", "critical", "reboot", 1, None)},
             "      1: {severity: warning, action: drain}\n",
             {("log", "1", "warning", "drain", 1, None)}),
    # a hung task (kernel 5.4): one report, under 'two within an hour'
    "hung-task": ("harvest/kernel-log/16_dmesg_kernel5.4_hung_task_gpuwatchdog_old_sched_line_page_wait_pop-os-"
                  "system76-power-issue179.txt",
                  {("log", "hung-task", "warning", "reboot", 1, None)},
                  "      hung-task: {severity: critical, count: 2, window: 1h}\n",
                  {("log", "hung-task", "info", "reboot", 1, 1)}),
    # an APEI GHES firmware-first record (a 'kernel: ' paste): a corrected PCIe error at the root port
    # 20:03.1 (section 0) and section 1 cut inside its section_type line: two corrected reports
    "ghes": ("harvest5/kernel-log/15_kernel_prefix_aer_layer_line_then_apei_ghes_hardware_error_pcie_corrected_root_"
             "port_20_03.1_1022_1483_cut_legacy-rocm-build-issue2927.txt",
             {("log", "corrected", "info", "ignore", 2, None)},
             "      corrected: {severity: warning, count: 2, window: 1m}\n",
             {("log", "corrected", "warning", "ignore", 2, 2)}),
    # a ConnectX port flapping (harvest 28, dmesg): enp83s0f0np0 Link down three times within 16 s, up twice; the RDMA
    # port mlx5_3/1 ACTIVE twice, DOWN twice; counted per class, three downs within an hour a warning
    "nic-link": ("harvest28/kernel-log/05_dmesg_bond0_slave_mlx5_3_port_flapping_link_down_up_four_times_first_line_stamp_"
                 "opener_lost_no_gpu_or_nic_fault_report_whole_sglang-pd-disagg-notes.txt",
                 {("log", "link-down", "warning", "contact_support", 3, 3), ("log", "link-up", "info", "ignore", 2, None),
                  ("log", "port-active", "info", "ignore", 2, None), ("log", "port-down", "info", "contact_support", 2, 2)},
                 "      link-down: {severity: critical, action: drain, count: 4, window: 1h}\n"
                 "      port-down: {severity: warning, action: drain, count: 2, window: 10s}\n",
                 {("log", "link-down", "info", "drain", 3, 3), ("log", "link-up", "info", "ignore", 2, None),
                  ("log", "port-active", "info", "ignore", 2, None), ("log", "port-down", "warning", "drain", 2, 2)}),
    # the PCI core's notes (ml-engineering): two Gen5 GPUs limited to 16.0 GT/s x16 by their Gen4 switch ports; the
    # platform's design, said so by an override on the speed alone
    "pcie-link": ("harvest28/kernel-log/06_dmesg_grep_limited_by_pcie_bandwidth_252_of_504_gbps_gen4_switch_under_gen5_"
                  "gpus_04_00_and_8b_00_authors_bracketed_ellipsis_no_fault_ml-engineering-nvidia-debug.txt",
                  {("log", "downtrained", "warning", "contact_support", 2, None)},
                  "      downtrained:\n        - {when: {limited: speed}, severity: info, action: ignore}\n"
                  "        - {severity: warning, action: drain}\n",
                  {("log", "downtrained", "info", "ignore", 2, None)}),
}
RULE_OF = {"nic-link": "kernel-nic-link", "pcie-link": "kernel-pcie-link", "xid": "kernel-xid", "nvlink5-149": "kernel-xid", "nvlink5-145": "kernel-xid", "amdgpu-ring": "kernel-amdgpu",
           "amdgpu-ras": "kernel-amdgpu", "aer": "kernel-pcie-aer", "aer-corrected": "kernel-pcie-aer",
           "mlx5": "kernel-mlx5", "hung-task": "kernel-hung-task", "ghes": "kernel-apei-ghes"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_and_parse_agree_and_an_override_changes_the_verdict(tmp_path: Path, case: str) -> None:
    rel, shipped_verdicts, override, overridden = CASES[case]
    raw, t = (REAL / rel).read_text(encoding="utf-8"), topo(tmp_path, 8)
    assert agree(raw, shipped(), t)[1] == shipped_verdicts
    mine = rules_file(tmp_path, HEAD + f"  - name: {RULE_OF[case]}\n    table:\n" + override)
    code, got = agree(raw, mine, t)
    assert got == overridden
    # exit 1 exactly where a warning or critical verdict stands (or the paste is cut short)
    assert code == int(not raw.endswith("\n") or any(v[2] in ("warning", "critical") for v in got)), (code, got)


HOST_REPORTS = {  # capture -> the verdicts the shipped table gives (the NIC's and the task's: the host's)
    "12_mail_quoted_kernel6.8_mlx5_fatal1_pci_slot_unavailable_hung_task_irq_pciehp_mlx5_ib_netdev-umr-patch.txt":
        {("log", "fatal", "critical", "reboot", 1, None), ("log", "hung-task", "warning", "reboot", 1, None)},
    "13_dmesg_kernel5.8_s390_mlx5_fatal1_health_buffer_all_ones_netdev-drain-health-wq.txt":
        {("log", "fatal", "critical", "reboot", 1, None)},
    "14_commit_msg_fw28.41_mlx5_fatal3_nic_disabled_try_recover_sw_reset_nic_ifc_still_0_mlx5e-destroying-patch.txt":
        {("log", "fatal", "critical", "reboot", 1, None)},
    "17_dmesg_kernel4.4_hung_task_comm_with_colon_nvc_driver_stack_words_nvidia_uvm_k8s-device-plugin-issue77.txt":
        {("log", "hung-task", "warning", "reboot", 1, None)},
    "18_syslog_kernel4.15_hung_task_teamredminer_amdgpu_unsure_frame_rwsem_registers_teamredminer-issue44.txt":
        {("log", "hung-task", "warning", "reboot", 1, None)},
}


@pytest.mark.parametrize("name", sorted(HOST_REPORTS))
def test_mlx5_and_hung_task_reports_agree_as_the_ssh_read_keeps_them(tmp_path: Path, name: str) -> None:
    """The mlx5 health and hung-task captures: parse --rules, a run's judgement of the whole log
    and a run's judgement of the lines sncheck's own read keeps (``read_command``'s grep of
    :data:`kernel_log.PATTERN`: the report lines, not the stack traces) give the same verdicts,
    the shipped table's; none names a GPU (a NIC's bus id is not a card that fell off the bus)."""
    raw, t = (REAL / "harvest" / "kernel-log" / name).read_text(encoding="utf-8"), topo(tmp_path, 8)
    code, verdicts = agree(raw, shipped(), t)
    assert verdicts == HOST_REPORTS[name] and code == 1
    body = strip_source_header(raw).replace("\n> ", "\n").removeprefix("> ")  # the quoting a mail adds
    kept = "\n".join(line for line in body.splitlines() if re.search(kernel_log.PATTERN, line))
    assert run_verdicts(kept, shipped(), t) == verdicts


def test_a_nics_or_a_tasks_report_is_never_named_as_a_card() -> None:
    """A host's read names each report's bus id to a card (name_cards: a bus id the listing
    lacks may be a GPU that fell off the bus). An mlx5 report carries the NIC's bus id and a
    hung task none: neither is handed to the namer, and neither names a card, even where the
    namer would name any bus id it is given."""
    parsed = kernel_log.parse_kernel_log(strip_source_header((REAL / "harvest" / "kernel-log" / next(
        n for n in HOST_REPORTS if n.startswith("12_"))).read_text()).replace("> ", "") + kernel_log.END_MARKER + "\n")
    asked: list[str] = []
    [row] = _check_kernel(lambda buses, _gpus: asked.extend(buses) or {b: 0 for b in buses}, True, None, [], None)(
        "n1", parsed, Expect(cards=8))
    assert [e["source"] for e in row["value"]["events"]] == ["mlx5", "hung_task"]
    assert asked == [] and all(e["card"] is None for e in row["value"]["events"])


# --------------------------------------------------------------------------- attacks

XID13 = "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b"
XID149 = next(line for line in (REAL / "harvest/kernel-log/10_kmsg_xid149_netir_fatal_gb200_domain_0019_link_minus1_"
                                "gpud-pr1174.txt").read_text().splitlines() if "Xid" in line and not line.startswith("#"))
THREE_IN_A_DAY = HEAD + "  - name: kernel-xid\n    table:\n      13: {severity: warning, count: 3, window: 24h}\n"


def test_a_malformed_override_is_exit_2_naming_the_file_line_and_key(tmp_path: Path) -> None:
    """The command refuses the rules file before reading the log (its other refusals, each a
    ConfigError with the file and line: tests/test_kernel_policy.py's wrong-policy cases)."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "  - name: kernel-pcie-aer\n    table:\n      corrected: {severity: warning, count: -2, "
                   "window: 1h}\n")
    r = CliRunner().invoke(main, ["parse", "kernel-log", str(REAL / "r4/kernel-xid/01_dmesg_aer_fatal_surprise_down_"
                                                                   "then_xid79_tesla_0000_02_00_gpu-burn-issue1.txt"),
                                  "--rules", str(bad)])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"{bad}:4:" in r.output and "table['corrected'].count must be a whole number from 1" in r.output


def test_reports_without_timestamps_count_in_every_window(tmp_path: Path) -> None:
    """A kmsg paste carries no time: three Xid 149 could be a second or a month apart, so they
    count within any window (the policy errs toward the fault); two stay under the count."""
    mine = rules_file(tmp_path, HEAD + "  - name: kernel-xid\n    table:\n"
                      "      149: {severity: critical, count: 3, window: 1h, below: warning}\n")
    t = topo(tmp_path, 8)
    assert agree("\n".join([XID149] * 3) + "\n", mine, t)[1] == {("0019:01:00", "149", "critical", "reset_gpu", 3, 3)}
    assert agree("\n".join([XID149] * 2) + "\n", mine, t)[1] == {("0019:01:00", "149", "warning", "reset_gpu", 2, 2)}


def test_a_reboot_in_the_paste_starts_another_clock(tmp_path: Path) -> None:
    """dmesg's uptime went back (a log saved across a reboot): the two boots' stamps are not one
    clock. Two Xid 13 late in the first boot and two early in the second are not four within
    24 h (they would be, read as one clock); without the reboot they are."""
    mine, t = rules_file(tmp_path, THREE_IN_A_DAY), topo(tmp_path, 8)
    before = f"[ 5000.100000] {XID13}\n[ 5001.100000] {XID13}\n"
    rebooted = before + f"[    0.000000] Linux version 6.8.0-45-generic\n[   30.000000] {XID13}\n[   31.000000] {XID13}\n"
    assert agree(rebooted, mine, t)[1] == {("0000:cb:00", "13", "info", "restart_app", 4, 2)}
    assert [e.get("boot_back") for e in kernel_log.parse_kernel_log(rebooted)["events"]] == [1, 1, None, None]
    one_boot = before + f"[ 5030.000000] {XID13}\n[ 5031.000000] {XID13}\n"
    assert agree(one_boot, mine, t)[1] == {("0000:cb:00", "13", "warning", "restart_app", 4, 4)}
    # sncheck's read places uptime stamps by its boot time: the last boot's, so an earlier boot's
    # reports are neither placed by it nor kept for the next runs' windows
    parsed = kernel_log.parse_kernel_log("# boot: 1796029200\n" + rebooted)
    assert [kernel_log.report_key(e, parsed["boot"]) is None for e in parsed["events"]] == [True, True, False, False]
    assert len(kernel_log.kept_reports([], parsed["events"], parsed["boot"])) == 2


def test_a_wall_clock_that_steps_back_counts_by_the_stamps_not_the_order(tmp_path: Path) -> None:
    """The clock stepped back an hour and a half between reports (NTP): 10:00, 10:30, then 09:00.
    No hour holds three of them, whatever order the log lists them in."""
    mine = rules_file(tmp_path, THREE_IN_A_DAY.replace("24h", "1h"))
    t = topo(tmp_path, 8)
    stamps = ["2026-11-30T10:00:00,000000+00:00", "2026-11-30T10:30:00,000000+00:00", "2026-11-30T09:00:00,000000+00:00"]
    stepped = "".join(f"{s} host kernel: {XID13}\n" for s in stamps)
    assert agree(stepped, mine, t)[1] == {("0000:cb:00", "13", "info", "restart_app", 3, 2)}
    assert agree("".join(f"{s} host kernel: {XID13}\n" for s in sorted(stamps)), mine, t)[1] == \
        agree(stepped, mine, t)[1]
    closer = stepped.replace("T09:00", "T09:45")  # 09:45, 10:00, 10:30 within the hour ending 10:30
    assert agree(closer, mine, t)[1] == {("0000:cb:00", "13", "warning", "restart_app", 3, 3)}


def test_a_flood_of_one_code_is_one_verdict_per_gpu(tmp_path: Path) -> None:
    """600 Xid 13 a second apart on one GPU and one on another: one verdict each, every report
    counted, the most within a minute 61 (the window holds both its ends). The count is a
    bisection (tests/bench/bench_kernel_policy.py floods 20000 reports)."""
    mine = rules_file(tmp_path, THREE_IN_A_DAY.replace("24h", "1m"))
    flood = "".join(f"[{10 + i}.000000] {XID13}\n" for i in range(600)) + f"[9000.0] {XID13.replace('cb:00', 'cc:00')}\n"
    assert agree(flood, mine, topo(tmp_path, 8)) == (1, {("0000:cb:00", "13", "warning", "restart_app", 600, 61),
                                                         ("0000:cc:00", "13", "info", "restart_app", 1, 1)})


def test_corrected_memory_errors_count_over_a_window_and_an_override_changes_it(tmp_path: Path) -> None:
    """The shipped table's 'memory-corrected' entry (ten a day is a DIMM wearing out) counts the
    firmware-first records by the log's own time; a run and ``sncheck parse`` agree; an operator's
    'three within an hour is critical' takes over that one key and leaves 'corrected' as it was."""
    def log(n: int, step_min: int) -> str:
        out = []
        for i in range(n):
            stamp, pre = f"[Tue Mar  4 {9 + i * step_min // 60:02d}:{i * step_min % 60:02d}:00 2025] ", f"{{{i + 1}}}[Hardware Error]: "
            out += [stamp + pre + line for line in (
                "Hardware error from APEI Generic Hardware Error Source: 0",
                "It has been corrected by h/w and requires no further action", "event severity: corrected",
                " Error 0, type: corrected", "  section_type: memory error",
                "  physical_address: 0x000000105e4b1fc0", "  error_type: 2, single-bit ECC")]
        return "\n".join(out) + "\n"

    t = topo(tmp_path, 8)
    assert agree(log(10, 5), shipped(), t) == (1, {("log", "memory-corrected", "warning", "contact_support", 10, 10)})
    assert agree(log(9, 5), shipped(), t) == (0, {("log", "memory-corrected", "info", "contact_support", 9, 9)})
    mine = rules_file(tmp_path, HEAD + "  - name: kernel-apei-ghes\n    table:\n"
                      "      memory-corrected: {severity: critical, count: 3, window: 1h}\n")
    assert agree(log(3, 25), mine, t) == (1, {("log", "memory-corrected", "critical", "contact_support", 3, 3)})
    assert agree(log(3, 40), mine, t)[1] == {("log", "memory-corrected", "info", "contact_support", 3, 2)}  # 80 min apart
