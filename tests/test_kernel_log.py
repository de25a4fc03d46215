"""The kernel log lines an evidence bundle keeps (vendors.kernel_log.evidence_command)."""

import os
import subprocess

from sncheck.vendors import registry
from sncheck.vendors.kernel_log import evidence_command


def test_the_evidence_read_keeps_every_vendors_driver_lines(tmp_path) -> None:
    """The kernel log an evidence bundle keeps (SSH hosts) names every vendor's driver, not
    only NVIDIA's: an amdgpu reset on an MI300X host is kept, an unrelated line is not."""
    fake = tmp_path / "dmesg"
    fake.write_text("#!/bin/sh\nprintf '%s\\n' '[ 1.0] amdgpu 0000:05:00.0: amdgpu: GPU reset begin!' "
                    "'[ 2.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.' "
                    "'[ 3.0] usb 1-1: new high-speed USB device' "
                    "'[ 4.0] pcieport 0000:00:03.1: AER: Corrected error received'\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    out = subprocess.run(["sh", "-c", evidence_command(registry.kernel_log_words())], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert "amdgpu: GPU reset" in out and "NVRM: Xid" in out and "AER:" in out
    assert "USB" not in out


def test_what_only_looks_like_a_lost_gpu_or_a_second_report() -> None:
    """The classes harvest5 added, attacked: a message that shares the fallen-off-the-bus
    message's first words is no event; the driver's one-line companion of its own Xid 79, an
    SXid's register dump before its report line and a reset's outcome line are not second reports."""
    from sncheck.vendors.kernel_log import parse_kernel_log

    unsupported = ("NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)\nNVRM: installed in this system is not "
                   "supported by the\nNVRM: NVIDIA 470.256.02 driver release.\n")
    assert parse_kernel_log(unsupported)["events"] == []
    head_cut = parse_kernel_log("[ 9.1] NVRM: fallen off the bus and is not responding to commands.\n")["events"]
    assert [(e["code"], e["bus_id"], e["xid_line"]) for e in head_cut] == [(79, None, False)]  # the GPU is not known
    twice = parse_kernel_log("NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
                             "the bus.\nNVRM: GPU 0000:91:00.0: GPU has fallen off the bus.\n"
                             "NVRM: GPU 0000:92:00.0: GPU has fallen off the bus.\n")["events"]
    assert [(e["bus_id"], e.get("xid_line", True)) for e in twice] == [("0000:91:00", True), ("0000:92:00", False)]
    dump_first = parse_kernel_log(
        "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000}\n"
        "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 37 LTSSM Fault Up\n"
        "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000}\n")["events"]
    assert [(e["class"], e["link"], "data_only" in e) for e in dump_first] == [("fatal", 37, False)]
    resets = parse_kernel_log(
        "kern  :err   : 2025-03-04T09:00:01,000001+00:00 amdgpu 0000:e3:00.0: amdgpu: GPU reset begin!\n"
        "kern  :err   : 2025-03-04T09:00:01,000002+00:00 amdgpu 0000:1b:00.0: amdgpu: GPU reset begin!\n"
        "kern  :err   : 2025-03-04T09:00:05,000003+00:00 amdgpu 0000:e3:00.0: amdgpu: GPU reset(2) failed\n")["events"]
    assert [(e["bus_id"], e["class"], e["outcome"]) for e in resets] == [("0000:e3:00", "reset-failed", "failed"),
                                                                          ("0000:1b:00", "reset", None)]
    assert resets[0]["time"].startswith("2025-03-04T09:00:01")  # dmesg --decode's facility and level are not the time


def test_apei_ghes_records_attacked() -> None:
    """Firmware-first records (sncheck/vendors/kernel_ghes.py) attacked: an amdgpu ACA dump that
    prints the same '{N}[Hardware Error]: ' is amdgpu's, not a record; a record's lines found without
    its first line still make a report (severity unknown until its lines say); the AER driver's
    decode of another device is not folded into a record's section; a fatal record is a fault and
    a corrected one is not; two records' lines interleaved stay apart by their sequence numbers."""
    from sncheck.vendors.kernel_log import parse_kernel_log

    aca = parse_kernel_log("[76914.152926] amdgpu 0000:1b:00.0: {1}[Hardware Error]: Accelerator Check Architecture "
                           "events logged\n[76914.152940] amdgpu 0000:1b:00.0: {1}[Hardware Error]: aca entry[00]."
                           "STATUS=0xbaa000000000080b\n")["events"]
    assert aca and {e["source"] for e in aca} == {"amdgpu"}
    headless = parse_kernel_log("{7}[Hardware Error]:   section_type: memory error\n"
                                "{7}[Hardware Error]:   physical_address: 0x0000000012345000\n")
    [e] = headless["events"]
    assert (e["source"], e["head_missing"], e["kind"], e["class"], e["physical_address"]) == \
        ("ghes", True, "memory", None, "0x0000000012345000")
    assert headless["faults"]  # a record of no known severity is not taken as corrected
    pre = "{3}[Hardware Error]: "
    record = [pre + "Hardware error from APEI Generic Hardware Error Source: 1", pre + "event severity: fatal",
              pre + " Error 0, type: fatal", pre + "  section_type: PCIe error", pre + "  device_id: 0000:41:00.0",
              pre + "  aer_uncor_status: 0x00000020, aer_uncor_mask: 0x00000000",
              pre + "  TLP Header: 40000001 0000000f f7c00000 00000000",
              "pcieport 0000:40:01.1: AER: aer_status: 0x00000020, aer_mask: 0x00000000"]
    fatal = parse_kernel_log("\n".join(record) + "\n")
    [e] = fatal["events"]
    assert (e["class"], e["port"], e["bus_id"], e["aer_uncor_status"], e["tlp_header"]) == \
        ("fatal", "0000:41:00.0", "0000:41:00", "0x00000020", "40000001 0000000f f7c00000 00000000")
    assert "aer_status" not in e and len(fatal["faults"]) == 1  # 40:01.1's decode is not 41:00.0's
    other = "{4}[Hardware Error]: "
    mixed = [record[0], other + "Hardware error from APEI Generic Hardware Error Source: 2", record[1],
             other + "It has been corrected by h/w and requires no further action", other + "event severity: corrected",
             record[2], other + " Error 0, type: corrected", other + "  section_type: memory error", *record[3:7],
             other + "  error_type: 2, single-bit ECC"]
    events = parse_kernel_log("\n".join(mixed) + "\n")["events"]
    assert [(e["seq"], e["class"], e["kind"]) for e in events] == [(3, "fatal", "pcie"), (4, "corrected", "memory")]
    assert events[1]["error_type_name"] == "single-bit ECC" and "error_type" not in events[0]
    assert parse_kernel_log("\n".join(mixed) + "\n")["faults"] == [
        "APEI firmware-first fatal PCIe error on 0000:41:00.0"]


def test_apei_ghes_decode_goes_to_the_newest_section_of_its_device_and_reads_a_padded_bit_line() -> None:
    """Review of 654d237: the AER driver's decode was matched to any earlier record's section at
    that device (another boot's too) by a scan of every record (quadratic in the records); a bit
    line's name was read by a lazy pattern before blanks (cubic on a run of them); a headless
    record whose first line held is its section's 'Error K, type: corrected' lost that severity."""
    from sncheck.vendors.kernel_log import parse_kernel_log

    def record(seq: int, severity: str) -> list[str]:
        pre = "{%d}[Hardware Error]: " % seq
        return [pre + "Hardware error from APEI Generic Hardware Error Source: 1", pre + f"event severity: {severity}",
                pre + f" Error 0, type: {severity}", pre + "  section_type: PCIe error",
                pre + "  device_id: 0000:41:00.0"]

    decode = ["pcieport 0000:41:00.0: AER: aer_status: 0x00001000, aer_mask: 0x00000000",
              "pcieport 0000:41:00.0: AER:    [12] Replay Timer Timeout" + " " * 3000 + "(First)"]
    events = parse_kernel_log("\n".join(record(1, "corrected") + record(2, "corrected") + decode + decode) + "\n")[
        "events"]
    old, new = [e for e in events if e["source"] == "ghes"]
    assert "aer_status" not in old and new["aer_status"] == "0x00001000"  # the newest, once: no older one taken
    assert new["bits"] == [{"bit": 12, "name": "Replay Timer Timeout", "first": True}]
    [e] = parse_kernel_log("{9}[Hardware Error]:  Error 0, type: corrected\n"
                           "{9}[Hardware Error]:   section_type: memory error\n")["events"]
    assert (e["head_missing"], e["class"], e["kind"]) == (True, "corrected", "memory")


def test_an_aer_report_without_its_bit_lines_takes_its_bits_from_the_status() -> None:
    """Harvest 12 (vgpu_unlock issue 114): a reporter's paste put the fatal report's bit line,
    hand-written '[5 ] SDES', above its 'PCIe Bus Error' header; the report was read with no bit.
    aer.c prints one bit line per bit of status & ~mask, named from its tables: the status names
    them. Printed bit lines stay the report's own; a masked bit is not the report's."""
    from sncheck.vendors.kernel_log import parse_kernel_log

    text = ("pcieport 0000:00:01.1:    [5 ] SDES        (First)\n"
            "pcieport 0000:00:01.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)\n"
            "pcieport 0000:00:01.1:  device [8086:6f03] error status/mask=00005020/00001000\n")
    [e] = parse_kernel_log(text)["events"]
    assert [(b["bit"], b["name"], b["first"]) for b in e["bits"]] == [(5, "SDES", None), (14, "CmpltTO", None)]
    corrected = ("pcieport 0000:00:1c.5: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=00e5(Receiver ID)\n"
                 "pcieport 0000:00:1c.5:   device [8086:9d15] error status/mask=00000001/00002000\n"
                 "pcieport 0000:00:1c.5:    [ 0] Receiver Error        \n")
    [c] = parse_kernel_log(corrected)["events"]
    assert c["bits"] == [{"bit": 0, "name": "Receiver Error", "first": False}]  # as printed, none added


def test_an_aer_header_line_cut_after_pcie_bus_error_is_a_cut() -> None:
    """Harvest 15's captures moved the seeded random cuts: harvest 8's dmesg cut mid-line at
    '[    3.499304] pcieport 0000:00:1d.0: PCIe Bus Error' exited 0, the last word 'Error' ending
    a bit line too ('[ 0] Receiver Error        '). aer.c prints the phrase only as the head of
    'PCIe Bus Error: severity=SEV, type=LAYER, ...' (aer_print_error): without its type it is cut.
    The same line whole, or ended by its newline where a reporter stopped, is not."""
    from sncheck.vendors.parsers import failures, parse_text

    report = ("[    3.499207] pcieport 0000:00:1d.0: AER: Multiple Corrected error received: id=00e8\n"
              "[    3.499241] pcieport 0000:00:1d.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
              "id=00e8(Receiver ID)\n"
              "[    3.499242] pcieport 0000:00:1d.0:   device [8086:a29a] error status/mask=00000001/00002000\n"
              "[    3.499242] pcieport 0000:00:1d.0:    [ 0] Receiver Error        \n")
    for cut in ("PCIe Bus Error", "PCIe Bus Error:", "PCIe Bus Error: severity=Corrected",
                "PCIe Bus Error: severity=Corrected, type"):
        got = parse_text("kernel-log", report + "[    3.499304] pcieport 0000:00:1d.0: " + cut)
        assert any("cut short" in f for f in failures(got)), (cut, failures(got))
    whole = "[    3.499304] pcieport 0000:00:1d.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=00e8(Receiver ID)"
    assert not failures(parse_text("kernel-log", report + whole + "\n"))
    assert not failures(parse_text("kernel-log", report + "[    3.499304] pcieport 0000:00:1d.0: PCIe Bus Error\n"))
