"""Kernel logs, from the kernel-log grammar (sncheck/vendors/kernel_log.py GRAMMAR): NVIDIA's
Xid (MIG-attributed, with a cause), SXid reports with their Data and Severity lines,
RmInitAdapter failures, the driver's loading line, PCIe AER reports in the old and new kernel
layouts with their error bits, and noise lines; in each time format the grammar allows.
(amdgpu RAS lines: their own generator, beside sncheck/vendors/amd/kernel_ras.py's grammar.)
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator

_MON = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_TIMES = ("none", "mono", "ctime", "iso", "journal", "short-iso")
_CORRECTED_BITS = [(0, "Receiver Error", "RxErr"), (6, "Bad TLP", "BadTLP"), (7, "Bad DLLP", "BadDLLP"),
                   (12, "Replay Timer Timeout", "Timeout"), (8, "RELAY_NUM Rollover", "Rollover")]
_FATAL_BITS = [(5, "Surprise Down Error", "SDES"), (14, "Completion Timeout", "CmpltTO"),
               (18, "Malformed TLP", "MalfTLP"), (20, "Unsupported Request", "UnsupReq")]


def _stamp(style: str, i: int) -> str:
    sec = 100 + i * 7
    if style == "mono":
        return f"[{sec:5d}.{i * 1371 % 1000000:06d}] "
    if style == "ctime":
        return f"[Tue Mar  4 09:{sec // 60 % 60:02d}:{sec % 60:02d} 2025] "
    if style == "iso":
        return f"2025-03-04T09:{sec // 60 % 60:02d}:{sec % 60:02d},{i:06d}+00:00 "
    if style == "journal":
        return f"{_MON[2]} 04 09:{sec // 60 % 60:02d}:{sec % 60:02d} gpu-node-17 kernel: "
    if style == "short-iso":
        return f"2025-03-04T09:{sec // 60 % 60:02d}:{sec % 60:02d}+0000 gpu-node-17 kernel: "
    return ""


class _Log:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.values: list[tuple[str, object]] = []
        self.faults = 0
        self.events = 0

    def noise(self) -> None:
        self.lines.append(self.rng.choice((
            "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
            "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Quota mode: none.",
            "nvidia-uvm: Loaded the UVM driver, major device number 509.",
            "NVRM: Persistence mode is deprecated and will be removed in a future release.")))

    def loading(self, version: str, open_module: bool) -> None:
        kind = "Open Kernel Module for x86_64" if open_module else "x86_64 Kernel Module"
        self.lines.append(f"NVRM: loading NVIDIA UNIX {kind}  {version}  Release Build  (dvs-builder@U22-I3-H04-03-1)  "
                          "Sat Sep 20 00:47:16 UTC 2025")
        self.values.append(("driver_version", version))

    def xid(self, bus: str, code: int, mig: bool, cause: int | None, driver: str | None) -> None:
        attr = f"PCI:{bus}" + (" GPU-I:05" if mig else "")
        pid = self.rng.choice(("pid=1818990, name=python3, ", "pid='<unknown>', name=<unknown>, ", ""))
        msg = {79: "GPU has fallen off the bus.", 48: "An uncorrectable double bit error (DBE) has been detected on GPU "
               "in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.", 45: "Ch 00000001",
               94: "Contained: CE User Channel (0x9). RST: No, D-RST: No", 13: "Graphics SM Warp Exception on (GPC 1, TPC "
               "0, SM 0): Out Of Range Address"}[code]
        self.lines.append(f"NVRM: Xid ({attr}): {code}, {pid}{msg}" + (f" caused by previous Xid {cause}" if cause else ""))
        i = self.events
        self.values += [(f"events[{i}].code", code), (f"events[{i}].bus_id", bus), (f"events[{i}].source", "xid")]
        if mig:
            self.values.append((f"events[{i}].gpu_instance", 5))
        if cause:
            self.values.append((f"events[{i}].caused_by", cause))
        if driver:
            self.values.append((f"events[{i}].driver_version", driver))
        self.events += 1
        self.faults += 1

    def sxid(self, switch: int, bus: str, link: int, fatal: bool, data_first: bool) -> None:
        head = f"nvidia-nvswitch{switch}: SXid (PCI:{bus}.0): 22013, "
        data = head + "Data {0x0000002b, 0x0000002b, 0x00000000, 0x0000002b, 0x80005302, 0x00000000}"
        lines = [head + f"{'Fatal' if fatal else 'Non-fatal'}, Link {link} Minion Link DLREQ interrupt",
                 head + f"Severity {1 if fatal else 0} Engine instance {link} Sub-engine instance 00"]
        self.lines += [data] + lines if data_first else lines + [data]
        i = self.events
        self.values += [(f"events[{i}].link", link), (f"events[{i}].device", f"nvidia-nvswitch{switch}"),
                        (f"events[{i}].class", "fatal" if fatal else "non-fatal"), (f"events[{i}].engine_instance", link)]
        self.events += 1
        self.faults += 1

    def rm_init(self, dev: str) -> None:
        self.lines += [f"NVRM: GPU {dev}: RmInitAdapter failed! (0x24:0x72:1568)",
                       f"NVRM: GPU {dev}: rm_init_adapter failed, device minor number 5"]
        i = self.events
        self.values += [(f"events[{i}].device", dev), (f"events[{i}].code", "0x24:0x72:1568"), (f"events[{i}].minor", 5)]
        self.events += 1
        self.faults += 1

    def aer(self, port: str, fatal: bool, old_kernel: bool, nbits: int) -> None:
        sev = "Uncorrected (Fatal)" if fatal else "Corrected"
        bits = self.rng.sample(_FATAL_BITS if fatal else _CORRECTED_BITS, nbits)
        pre = f"pcieport {port}: "
        self.lines.append(pre + f"AER: {sev} error received: " + ("id=0010" if old_kernel else port))
        agent = "Receiver ID" if fatal else "Transmitter ID"
        layer = "Transaction Layer" if fatal else "Data Link Layer"
        self.lines.append(pre + f"PCIe Bus Error: severity={sev}, type={layer}, " + ("id=0010" if old_kernel else "")
                          + f"({agent})")
        status = sum(1 << b for b, _, _ in bits)
        self.lines.append(pre + f"  device [8086:6f04] error status/mask={status:08x}/00002000")
        for k, (bit, long, short) in enumerate(sorted(bits)):
            name = long if old_kernel else short
            self.lines.append(pre + f"   [{bit:2d}] {name:<22s}" + (" (First)" if k == 0 and fatal else ""))
        if fatal:
            self.lines.append(pre + "  TLP Header: 34000000 02000010 00000000 00000000")
        i = self.events
        self.values += [(f"events[{i}].class", "fatal" if fatal else "corrected"), (f"events[{i}].port", port),
                        (f"len(events[{i}].bits)", nbits), (f"events[{i}].status", f"{status:08x}")]
        self.values += [(f"events[{i}].bits[bit={b}].name", (long if old_kernel else short)) for b, long, short in bits]
        self.events += 1
        self.faults += fatal


@generator("kernel-log")
def kernel_log(rng: random.Random) -> Iterator[Variant]:
    for style in _TIMES:
        for case in rng.sample(("xid", "sxid", "aer", "rm_init", "quiet", "mixed"), 3):
            log = _Log(rng)
            driver = None
            if rng.random() < 0.7:
                driver = rng.choice(("570.195.03", "535.161.08", "590.48.01"))
                log.loading(driver, rng.random() < 0.5)
            for _ in range(rng.randint(0, 3)):
                log.noise()
            if case in ("xid", "mixed"):
                for _ in range(rng.randint(1, 4)):
                    code = rng.choice((79, 48, 45, 94, 13))
                    log.xid(f"0000:{rng.randrange(16, 250):02x}:00", code, code == 94, 149 if code == 45 else None, driver)
            if case in ("sxid", "mixed"):
                for link in rng.sample(range(64), rng.randint(1, 3)):
                    log.sxid(rng.randrange(8), f"0000:{rng.randrange(1, 9):02x}:00", link, rng.random() < 0.3,
                             rng.random() < 0.5)
            if case in ("aer", "mixed"):
                log.aer(f"0000:{rng.randrange(0, 200):02x}:02.0", False, rng.random() < 0.4, rng.randint(1, 2))
                if rng.random() < 0.6:
                    log.aer(f"0000:{rng.randrange(0, 200):02x}:03.1", True, rng.random() < 0.4, rng.randint(1, 2))
            if case == "rm_init":
                log.rm_init(f"0000:{rng.randrange(16, 250):02x}:00.0")
            for _ in range(rng.randint(0, 2)):
                log.noise()
            text = "".join(_stamp(style, i) + ln + "\n" for i, ln in enumerate(log.lines))
            values = log.values + [("len(events)", log.events), ("len(faults)", log.faults)]
            yield Variant("kernel-log", f"{style} {case}", text, tuple(values), fails=log.faults > 0, stream=True)
