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
