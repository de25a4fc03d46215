"""A quiet kernel log in each shape dmesg and journalctl print reads as a kernel's (exit 0), while
another tool's output is still refused (hostile round 17, H17-21). ac33b8d counted only the stamps
the view reads times from, so a healthy host's log under dmesg -t/-r/--reltime/-d or journalctl
-o short-precise/short-full exited 1 'none of its N lines is a kernel log's' (reviews13, 20:21)."""

from __future__ import annotations

import pytest

from sncheck.vendors.parsers import parse_text

EVENT = "mlx5_core 0000:0c:00.0: Port module event: module 0, Cable plugged"


@pytest.mark.parametrize("text", [
    f"{EVENT}\nnvidia-nvlink: Nvlink Core is being initialized, major device number 509\n"
    "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.\n",  # dmesg -t
    f"<6>[    5.123456] {EVENT}\n",                                                     # dmesg -r
    f"[Dec 6 20:00] {EVENT}\n",                                                          # dmesg --reltime
    f"[  +0.000003] {EVENT}\n",                                                          # dmesg -d
    f"[<    0.000003>] {EVENT}\n",                                                       # dmesg -d (older)
    f"Dec 06 20:00:00.123456 node1 kernel: {EVENT}\n",                                   # journalctl short-precise
    f"Sun 2026-12-06 20:00:00 UTC node1 kernel: {EVENT}\n",                              # journalctl short-full
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n",
    "Linux version 6.8.0-51-generic (buildd@lcy02-amd64-091) (x86_64-linux-gnu-gcc-13) #52-Ubuntu SMP\n",
])
def test_a_quiet_kernel_log_in_each_shape_reads(text: str) -> None:
    doc = parse_text("kernel-log", text)
    assert not doc["errors"] and not doc["faults"], doc


@pytest.mark.parametrize("text", [
    "GPU[0]\t\t: Temperature (Sensor edge) (C): 35.0\nGPU[0]\t\t: Average Graphics Package Power (W): 91.0\n",
    "        GPU0    GPU1    CPU Affinity\nGPU0     X      NV18    0-55\n",
    "GPU  POWER  GPU_TEMP  MEM_TEMP  GFX_UTIL\n  0  123 W     40 °C     35 °C       0 %\n",
    "Device: 0\nName: something: else\n",
])
def test_another_tools_output_is_still_no_kernel_log(text: str) -> None:
    doc = parse_text("kernel-log", text)
    assert any("is a kernel log's" in e for e in doc["errors"]), doc
