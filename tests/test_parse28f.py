"""Issue 28's parse leftovers named by stop 45 (task parse28f): each test failed on main before its fix."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# aer.c's aer_error_severity_string before and after 6.8, with the class each names
_KERNEL_SEV = {"Uncorrected (Non-Fatal)": "non-fatal", "Uncorrected (Fatal)": "fatal", "Corrected": "corrected",
               "Uncorrectable (Non-Fatal)": "non-fatal", "Uncorrectable (Fatal)": "fatal", "Correctable": "corrected"}
# what no aer.c prints: the old twins' extra alternatives (a bare 'Uncorrected', any case)
_FOREIGN_SEV = ("Uncorrected", "Uncorrectable", "corrected", "CORRECTABLE", "uncorrected (fatal)", "Corrected (Fatal)")


def _aer_lines(sev: str) -> list[str]:
    """Every header line shape aer.c prints with ``sev``, each as its kernel prints it."""
    port = "pcieport 0000:00:1c.5: "
    return [port + f"AER: {sev} error received: id=00e5",  # 3.x-4.x
            port + f"AER: {sev} error received: 0000:00:1c.5",  # 4.x-6.7
            port + f"AER: Multiple {sev} error received: 0000:00:1c.5",
            port + f"AER: {sev} error message received from 0000:3b:00.0",  # 6.8 on, stable backports
            port + f"AER: {sev} error message received from 0000:3b:00.0 (no details found",  # 6.16 on
            "nvidia 0000:3b:00.0: " + f"AER: PCIe Bus Error: severity={sev}, type=Physical Layer, (Receiver ID)",
            port + f"PCIe Bus Error: severity={sev}, type=Transaction Layer, id=00e5(Requester ID)",
            port + f"PCIe Bus Error: severity={sev}, type=Inaccessible, (Unregistered Agent ID)"]


def test_aer_reads_one_severity_table_and_a_line_it_reads_is_the_line_it_calls_whole() -> None:
    """kernel_aer spelled aer.c's severities four times: the event regexes took any case and a bare
    'Uncorrected' / 'Uncorrectable' (read as fatal), the received line's event regex took no bare one,
    the whole-line regexes were case-sensitive and took the bare ones, the cut heads listed six. So
    'AER: Uncorrected error received: ...' was a whole line the view did not read, and 'PCIe Bus Error:
    severity=corrected, ...' a read report whose line was called cut. Now one table (aer.c's six
    strings, any case as review r3 #7 reads 'Multiple'): a header line is read exactly where it is
    whole, with the class the table names; and 6.16's received line, which ends in ' (no details
    found' (no closing parenthesis: aer_print_source prints it so), is whole, not a cut."""
    from sncheck.vendors import kernel_aer

    for sev, klass in _KERNEL_SEV.items():
        for line in _aer_lines(sev):
            e = kernel_aer.event(line, None)
            assert e and e["class"] == klass, (line, e)
            assert not kernel_aer.cut_short(line), line
    for sev in _FOREIGN_SEV:  # neither read nor called a whole AER line (the old twins did one or the other)
        for line in _aer_lines(sev):
            read, whole = bool(kernel_aer.event(line, None)), kernel_aer.whole(line) is True
            assert read == whole, (line, read, whole)


def test_a_6_16_log_ending_in_a_received_line_without_details_is_whole_and_read() -> None:
    """The same through the kernel-log view: a log whose last line (no newline after it, as pastes
    end) is 6.16's 'error message received from ... (no details found' said 'cut mid-line'; now it
    reads the report, whole. Cut inside that line it is still a cut."""
    from sncheck.vendors.kernel_log import parse_kernel_log

    line = "[ 9.5] pcieport 0000:00:01.0: AER: Correctable error message received from 0000:02:00.0 (no details found"
    got = parse_kernel_log("[ 9.4] pci 0000:02:00.0: [1234:5678] type 00 class 0x010802\n" + line)
    assert not got["errors"], got["errors"]
    assert [(e["class"], e["port"], e["reported_by"]) for e in got["events"]] == [
        ("corrected", "0000:02:00.0", "0000:00:01.0")]
    for k in range(line.index("AER") + 1, line.index(" (no")):
        assert any("mid-line" in e for e in parse_kernel_log(line[:k])["errors"]), line[:k]


# another tool's 'KEY: value' text in capitals: a Kubernetes pod's env block, a sensor dump
_UPPER_FOREIGN = ("NCCL_DEBUG: INFO\nNCCL_IB_HCA: mlx5_0,mlx5_1\nNCCL_SOCKET_IFNAME: eth0\n",
                  "GPU: 0\n    NCCL_DEBUG: INFO\n    NCCL_IB_HCA: mlx5_0\n",
                  "SENSOR_ID: CPU0_TEMP\nREADING_C: 45\nUPPER_CRITICAL_C: 95\n")


def test_amd_smi_refuses_upper_case_text_none_of_whose_keys_amd_smi_prints(tmp_path: Path) -> None:
    """amd-smi's upper-case rule (parse28e) let all-upper-case foreign text through: a pod's NCCL env
    block read as one GPU with no id, exit 0. Now one key at least must be amd-smi's, by the key
    vocabulary read from its source (sncheck/vendors/amd/amd_smi_keys.py, scripts/amd-smi-keys.py):
    exit 1, one line naming the file. A block of amd-smi's keys with an unknown key beside them
    still reads (a newer amd-smi's key)."""
    from click.testing import CliRunner
    from test_hardening import one_line_error

    from sncheck.cli.main import main
    from sncheck.vendors.parsers import parse_text

    for i, text in enumerate(_UPPER_FOREIGN):
        f = tmp_path / f"other{i}.txt"
        f.write_text(text)
        line = one_line_error(CliRunner().invoke(main, ["parse", "amd-smi", str(f), "--json"]), 1)
        assert str(f) in line and "no key amd-smi prints" in line, line
    newer = "GPU: 0\n    ASIC:\n        MARKET_NAME: MI300X\n        NEW_KEY_OF_ROCM_9: 1\n"
    assert parse_text("amd-smi", newer)["gpus"][0]["ASIC"] == {"MARKET_NAME": "MI300X", "NEW_KEY_OF_ROCM_9": 1}


def test_every_key_the_amd_checks_read_is_in_the_vocabulary_from_amd_smi_s_source() -> None:
    """The checks read amd-smi's keys by name (ECC_BLOCKS, THROTTLE_STATUS, PCIE WIDTH...): each such
    name is one amd-smi's source prints (a typo there, or a vocabulary that lost a command, shows here)."""
    import re

    from sncheck.vendors.amd.amd_smi_keys import KEYS

    named = set(re.findall(r'\.get\("([A-Z][A-Z0-9_]+)"\)', (REPO / "sncheck/vendors/amd/checks.py").read_text()))
    assert {"BDF", "ECC_BLOCKS", "THROTTLE_STATUS", "WIDTH"} <= named, named
    assert named <= KEYS, sorted(named - KEYS)


_MI50 = REPO / "fixtures/real/harvest17/rocm-smi-showtopo" / ("01_rocm_smi_showtopo_4x_mi50_gfx906_pcie_weight_40_hops_2_link_type_"
                                                           "pcie_numa_node_0_affinity_0_end_of_log_whole_gfx906-wiki-perf-vs-pcie.txt")


def test_a_pcie_only_topology_without_a_platform_is_not_judged_and_names_no_card() -> None:
    """rocm-smi --showtopo of four MI50s (no XGMI hive: every pair PCIE, harvest 17's real capture)
    with no platform said 'XGMI: 0/6 GPU pairs direct over XGMI ...; down or rerouted' (exit 1), and a
    run's row named all four cards dead (each card's every link 'down'): a PCIe-only board and a dead
    XGMI fabric read the same, and only a design that expects XGMI tells them apart. Now 'not
    judged: no XGMI link in this topology; give a platform' (exit 1: never a pass), no card named; with
    --platform amd-mi300x (XGMI on every pair) it stays the failure, its cards named."""
    from click.testing import CliRunner

    from sncheck.cli.main import main
    from sncheck.vendors.amd import checks, rocm_smi
    from sncheck.vendors.facts import Expect
    from sncheck.vendors.registry import platform

    got = CliRunner().invoke(main, ["parse", "rocm-smi-showtopo", str(_MI50)])
    assert got.exit_code == 1, got.output
    assert "XGMI: not judged: no XGMI link in this topology (all 6 GPU pairs PCIE); give a platform" in got.output
    assert "down or rerouted" not in got.output
    parsed = rocm_smi.parse_showtopo(_MI50.read_text())
    (row,) = checks.check_xgmi_topo("h1", parsed, Expect(cards=4))
    assert not row["ok"] and "not judged" in row["message"] and not row.get("cards") and not row.get("links"), row
    mi300x = CliRunner().invoke(main, ["parse", "rocm-smi-showtopo", "--platform", "amd-mi300x", str(_MI50)])
    assert mi300x.exit_code == 1 and "down or rerouted" in mi300x.output, mi300x.output
    (row,) = checks.check_xgmi_topo("h1", parsed, Expect(cards=4, platform=platform("amd-mi300x")))
    assert not row["ok"] and "down or rerouted" in row["message"] and row.get("cards"), row


def test_parse_platform_is_refused_where_it_judges_nothing_or_is_unknown() -> None:
    """--platform names a platform whose checks judge the view: another vendor's, or no platform, exit 2."""
    from click.testing import CliRunner
    from test_hardening import one_line_error

    from sncheck.cli.main import main

    other = one_line_error(CliRunner().invoke(main, ["parse", "rocm-smi-showtopo", "--platform", "nvidia-nvl72", str(_MI50)]))
    assert "--platform nvidia-nvl72 judges none of rocm-smi-showtopo's facts" in other, other
    unknown = one_line_error(CliRunner().invoke(main, ["parse", "rocm-smi-showtopo", "--platform", "mi50", str(_MI50)]))
    assert "unknown platform 'mi50'" in unknown, unknown


_NCCL = REPO / "fixtures/real/nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"


def test_nccl_tests_names_a_reporters_dots_for_rows_by_the_file_s_line(tmp_path: Path) -> None:
    """nccl-tests' '...' over result rows said 'a reporter's '...' after row 2 ...': a row count, where
    the one-line error contract names the file's line (as every other view's elision does,
    listing.elision, renumbered behind a '# source:' header by after_end.in_file). Now 'line K is a
    reporter's '...' that stands for ...', K the file's line."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    lines = _NCCL.read_text().split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.strip().startswith("64 "))  # the 64-byte row left out
    f = tmp_path / "elided.txt"
    f.write_text("\n".join(lines[:k] + ["..."] + lines[k + 1:]))
    got = CliRunner().invoke(main, ["parse", "nccl-tests", str(f)])
    assert got.exit_code == 1, got.output
    said = [ln for ln in got.output.splitlines() if ln.startswith("sncheck:") and "reporter's" in ln]
    assert said == [f"sncheck: {f}: line {k + 1} is a reporter's '...' that stands for rows between 32 and 128 bytes "
                    "(step 2 factor): lines of the output were left out, it is not whole"], said


def test_a_journal_line_journalctl_or_its_pager_cut_is_read_as_cut(tmp_path: Path) -> None:
    """journalctl without --full ellipsizes a message wider than the screen with '…' (systemd
    logs-show.c print_multiline -> ellipsize_mem: at 90% of the width, the message's tail after it);
    its pager, less -S, marks a line it chopped with '>'. Both read as whole lines: an Xid whose text
    lost its middle, an AER header without its agent, exit 0 where nothing else failed. Now a report's
    line holding '…' (printk writes none) is cut, and so is an AER line ending '>' that aer.c's formats
    say is not whole, each named by its line in the file (exit 1). A '…' or '>' on any other line (a
    hung task's '<TASK>', a USB message) is no report's: not said."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    day = "Dec 06 12:00:0{} gpu7 kernel: "
    log = ["# source: a journalctl -k excerpt", day.format(1) + "usb 1-1: new high-speed USB device … using xhci_hcd",
           day.format(2) + "pcieport 0000:00:01.0: AER: Corrected error message received from 0000:3b:00.0",
           day.format(3) + "nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver I>",
           day.format(4) + "nvidia 0000:3b:00.0: AER:   device [10de:2330] error status/mask=00000001/0000e000",
           day.format(5) + "nvidia 0000:3b:00.0: AER:    [ 0] RxErr                  (First)",
           day.format(6) + "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp Exc…ESR 0x514730=0x0",
           day.format(7) + " <TASK>"]
    f = tmp_path / "journal.txt"
    f.write_text("\n".join(log) + "\n")
    got = CliRunner().invoke(main, ["parse", "kernel-log", str(f)])
    said = [ln for ln in got.output.splitlines() if ln.startswith("sncheck:") and "is cut by" in ln]
    assert got.exit_code == 1 and len(said) == 2, got.output
    assert said[0].startswith(f"sncheck: {f}: line 4 is cut by a pager"), said
    assert said[1].startswith(f"sncheck: {f}: line 7 is cut by journalctl"), said
    whole = [ln.replace(" (Receiver I>", " (Receiver ID)").replace("Exc…ESR", "Exception on (GPC 0, TPC 1): ESR")
             for ln in log if "Xid" not in ln]
    f.write_text("\n".join(whole) + "\n")
    got = CliRunner().invoke(main, ["parse", "kernel-log", str(f)])
    assert got.exit_code == 0 and "is cut by" not in got.output, got.output


def test_an_aer_message_the_kernel_found_no_details_for_is_kept_beside_other_reports() -> None:
    """A received line is kept only where no report follows it; but the view kept them only where the
    log held no report at all, so a fatal message the kernel found no details for (6.16's '... (no
    details found', 6.8-6.15's 'found no error details for BDF' line after it) was dropped from a log
    that also held a corrected report: exit 0 on a fatal AER. Now such a message is an event of its own
    (details false), its class judged; one whose report follows is still that report's alone."""
    from sncheck.vendors.kernel_log import parse_kernel_log
    from sncheck.vendors.parsers import failures, parse_text

    corrected = ["[ 1.1] pcieport 0000:00:01.0: AER: Correctable error message received from 0000:02:00.0",
                 "[ 1.2] nvme 0000:02:00.0: AER: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
                 "[ 1.3] nvme 0000:02:00.0: AER:   device [144d:a808] error status/mask=00000001/0000e000",
                 "[ 1.4] nvme 0000:02:00.0: AER:    [ 0] RxErr                  (First)"]
    for tail in (["[ 2.1] pcieport 0000:00:03.1: AER: Uncorrectable (Fatal) error message received from 0000:3b:00.0"
                  " (no details found"],
                 ["[ 2.1] pcieport 0000:00:03.1: AER: Uncorrected (Fatal) error message received from 0000:3b:00.0",
                  "[ 2.2] pcieport 0000:00:03.1: AER: found no error details for 0000:3b:00.0"]):
        got = parse_kernel_log("\n".join(corrected + tail) + "\n")
        assert [(e["class"], e["port"], e.get("details")) for e in got["events"]] == [
            ("corrected", "0000:02:00.0", None), ("fatal", "0000:3b:00.0", False)], got["events"]
        assert any("fatal" in f for f in failures(parse_text("kernel-log", "\n".join(corrected + tail) + "\n")))
