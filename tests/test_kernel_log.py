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
