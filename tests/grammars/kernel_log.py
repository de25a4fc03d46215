"""Kernel logs, from the kernel-log grammar (sncheck/vendors/kernel_log.py GRAMMAR): NVIDIA's
Xid (MIG-attributed, with a cause), SXid reports with their Data and Severity lines,
RmInitAdapter failures, a GPU fallen off the bus with no Xid line (three lines or one), an SXid's
Data line alone, the driver's loading line, PCIe AER reports in the old and new kernel
layouts with their error bits, and noise lines; in each time format the grammar allows.
(amdgpu RAS lines: their own generator, beside sncheck/vendors/amd/kernel_ras.py's grammar.)
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from grammars import Variant, generator

_MON = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_TIMES = ("none", "mono", "ctime", "iso", "journal", "short-iso", "decode")
_CORRECTED_BITS = [(0, "Receiver Error", "RxErr"), (6, "Bad TLP", "BadTLP"), (7, "Bad DLLP", "BadDLLP"),
                   (12, "Replay Timer Timeout", "Timeout"), (8, "RELAY_NUM Rollover", "Rollover")]
# aer.c's aer_error_severity_string by (fatal, 6.8 on): kernel_aer.SEVERITY
_SEV = {(False, False): "Corrected", (True, False): "Uncorrected (Fatal)", (False, True): "Correctable",
        (True, True): "Uncorrectable (Fatal)"}
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
    if style == "decode":  # dmesg --decode --time-format iso: facility and level first (util-linux dmesg.c)
        return f"kern  :{'err' if i % 2 else 'warn':<6s}: 2025-03-04T09:{sec // 60 % 60:02d}:{sec % 60:02d},{i:06d}+00:00 "
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
        # the open modules' 'pid=PID, name=NAME, ', and the older proprietary drivers' 'pid=PID, ' with no name
        # (510.73.08: harvest 28; harvest 12's 'pid=0, ')
        pid = self.rng.choice(("pid=1818990, name=python3, ", "pid='<unknown>', name=<unknown>, ", "", "pid=1896, "))
        msg = {79: "GPU has fallen off the bus.", 48: "An uncorrectable double bit error (DBE) has been detected on GPU "
               "in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.", 45: "Ch 00000001",
               94: "Contained: CE User Channel (0x9). RST: No, D-RST: No", 13: "Graphics SM Warp Exception on (GPC 1, TPC "
               "0, SM 0): Out Of Range Address"}[code]
        self.lines.append(f"NVRM: Xid ({attr}): {code}, {pid}{msg}" + (f" caused by previous Xid {cause}" if cause else ""))
        i = self.events
        self.values += [(f"events[{i}].code", code), (f"events[{i}].bus_id", bus), (f"events[{i}].source", "xid")]
        if pid.startswith("pid=18"):
            self.values.append((f"events[{i}].pid", pid[4:pid.index(",")]))
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

    def sxid_interleaved(self, switches: int) -> None:
        """Switches serviced side by side (harvest7's service VM): every switch's report line, then their Severity
        lines, then their Data lines, in another order, and a second Severity / Data pair each (two logged error
        entries a report, error_nvswitch.c): one report a switch."""
        heads = [f"nvidia-nvswitch{k}: SXid (PCI:0000:00:{7 + k:02x}.0): 11004, " for k in range(switches)]
        self.lines += [h + f"Non-fatal, Link {40 + k} ingress invalid ACL (First)" for k, h in enumerate(heads)]
        for _ in range(2):
            order = list(range(switches))[::-1]
            self.lines += [heads[k] + f"Severity 0 Engine instance {40 + k} Sub-engine instance 00" for k in order]
            self.lines += [heads[k] + "Data {0x00000008, 0xff9fc39c, 0x00000008, 0xff9fc39c, 0x00000000, 0x00000000, "
                           "0x00000000, 0x00000000, 0x00000000}" for k in order]
        for k in range(switches):
            i = self.events
            self.values += [(f"events[{i}].link", 40 + k), (f"events[{i}].device", f"nvidia-nvswitch{k}"),
                            (f"events[{i}].engine_instance", 40 + k)]
            self.events += 1
            self.faults += 1

    def fallen(self, dev: str, one_line: bool) -> None:
        """A GPU lost at the driver's probe, no Xid line: osinit.c's three lines, or the one-line form."""
        if one_line:
            self.lines.append(f"NVRM: GPU {dev}: GPU has fallen off the bus.")
        else:
            self.lines += [f"NVRM: The NVIDIA GPU {dev}", "NVRM: (PCI ID: 10de:2330) installed in this system has",
                           "NVRM: fallen off the bus and is not responding to commands."]
            self.values.append((f"events[{self.events}].pci_id", "10de:2330"))
        i = self.events
        self.values += [(f"events[{i}].code", 79), (f"events[{i}].bus_id", dev[:10]), (f"events[{i}].xid_line", False)]
        self.events += 1
        self.faults += 1

    def sxid_data_only(self, switch: int, bus: str) -> None:
        """An SXid's register dump whose report line the log does not hold (an excerpt kept it alone)."""
        self.lines.append(f"nvidia-nvswitch{switch}: SXid (PCI:{bus}.0): 12028, Data {{0x000001c0, 0x00bd5c8a, "
                          "0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}")
        i = self.events
        self.values += [(f"events[{i}].code", 12028), (f"events[{i}].device", f"nvidia-nvswitch{switch}"),
                        (f"events[{i}].data_only", True)]
        self.events += 1
        self.faults += 1

    def rm_init(self, dev: str) -> None:
        self.lines += [f"NVRM: GPU {dev}: RmInitAdapter failed! (0x24:0x72:1568)",
                       f"NVRM: GPU {dev}: rm_init_adapter failed, device minor number 5"]
        i = self.events
        self.values += [(f"events[{i}].device", dev), (f"events[{i}].code", "0x24:0x72:1568"), (f"events[{i}].minor", 5)]
        self.events += 1
        self.faults += 1

    def aer_excerpt(self, port: str) -> None:
        """A reporter's excerpt of a fatal report: the continuation lines' device prefix cut, the bit
        lines joined into one with the long names beside the short, 'severity=' left out."""
        pre = f"pcieport {port}: "
        self.lines += [pre + "AER: Uncorrectable (Fatal) error received from " + port,
                       pre + "PCIe Bus Error: Uncorrectable (Fatal), type=Transaction Layer",
                       "  device [8086:6f04] error status/mask=00044000/00000000",
                       "  [14] CmpltTO (Completion Timeout, First)   [18] MalfTLP",
                       "  TLP Header: 0xffffffff 0xffffffff 0xffffffff 0xffffffff   (device unresponsive)"]
        i = self.events
        self.values += [(f"events[{i}].class", "fatal"), (f"events[{i}].status", "00044000"),
                        (f"events[{i}].bits[bit=14].name", "CmpltTO"), (f"events[{i}].bits[bit=14].first", True),
                        (f"events[{i}].bits[bit=18].name", "MalfTLP"), (f"len(events[{i}].bits)", 2)]
        self.events += 1
        self.faults += 1

    def aer_status_only(self, port: str) -> None:
        """A reporter's paste that kept a fatal report's header and status line and lost its bit
        lines: the bits are the status's (aer.c prints one line per bit of status & ~mask)."""
        bits = sorted(self.rng.sample(_FATAL_BITS, 2))
        status = sum(1 << b for b, _, _ in bits) | 1 << 12  # bit 12 (TLP) masked: not the report's
        pre = f"pcieport {port}: "
        self.lines += [pre + "PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)",
                       pre + f"  device [8086:6f03] error status/mask={status:08x}/00001000"]
        i = self.events
        self.values += [(f"events[{i}].class", "fatal"), (f"len(events[{i}].bits)", 2)]
        self.values += [(f"events[{i}].bits[bit={b}].name", short) for b, _, short in bits]
        self.events += 1
        self.faults += 1

    def aer(self, port: str, fatal: bool, old_kernel: bool, nbits: int, glued: bool = False) -> None:
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
            tlp = pre + "  TLP Header: 34000000 02000010 00000000 00000000"
            if glued:  # its line end lost: the record after it glued to the bit line, stamp and caller id (harvest7)
                self.lines[-1] += " [  200.105524,009][  T292] " + tlp
            else:
                self.lines.append(tlp)
            self.values.append((f"events[{self.events}].tlp_header", "34000000 02000010 00000000 00000000"))
        i = self.events
        self.values += [(f"events[{i}].class", "fatal" if fatal else "corrected"), (f"events[{i}].port", port),
                        (f"len(events[{i}].bits)", nbits), (f"events[{i}].status", f"{status:08x}")]
        self.values += [(f"events[{i}].bits[bit={b}].name", (long if old_kernel else short)) for b, long, short in bits]
        self.events += 1
        self.faults += fatal

    def aer_native(self, port: str, dev: str, fatal: bool, multiple: bool, spec: bool = False) -> None:
        """A report of the AER driver itself (no GHES record), as 6.x aer.c prints it: 'AER: ' (dev_fmt)
        on every line; the receiving port's 'error message received from' line (aer_print_port_info),
        then aer_print_error's lines on the device in error (an endpoint below the port, or the port).
        ``spec``: 6.8's severity strings ('Correctable', 'Uncorrectable (Fatal)': kernel_aer.SEVERITY)."""
        sev = _SEV[fatal, spec]
        bits = self.rng.sample(_FATAL_BITS if fatal else _CORRECTED_BITS, self.rng.randint(1, 3))
        first = self.rng.choice(bits)[0]
        at = f"{'pcieport' if dev == port else 'nvidia'} {dev}: AER: "
        self.lines += [f"pcieport {port}: AER: {'Multiple ' if multiple else ''}{sev} error message received from {dev}",
                       at + f"PCIe Bus Error: severity={sev}, type={'Transaction Layer' if fatal else 'Physical Layer'}, "
                       f"({'Requester ID' if fatal else 'Receiver ID'})"]
        status = sum(1 << b for b, _, _ in bits)
        self.lines.append(at + f"  device [10de:2330] error status/mask={status:08x}/0000e000")
        self.lines += [at + f"   [{b:2d}] {short:<22s}" + (" (First)" if b == first else "") for b, _, short in sorted(bits)]
        i = self.events
        self.values += [(f"events[{i}].class", "fatal" if fatal else "corrected"), (f"events[{i}].port", dev),
                        (f"events[{i}].reported_by", port), (f"events[{i}].multiple", multiple),
                        (f"events[{i}].agent", "Requester ID" if fatal else "Receiver ID"),
                        (f"events[{i}].vendor_device", "10de:2330"), (f"events[{i}].status", f"{status:08x}"),
                        (f"events[{i}].mask", "0000e000"), (f"len(events[{i}].bits)", len(bits))]
        self.values += [(f"events[{i}].bits[bit={b}].name", short) for b, _, short in bits]
        self.values += [(f"events[{i}].bits[bit={b}].first", b == first) for b, _, _ in bits]
        self.events += 1
        self.faults += fatal

    def aer_no_details(self, port: str, dev: str, fatal: bool, spec: bool) -> None:
        """A message the kernel found no details for: 6.16's received line ending ' (no details found'
        (aer_print_source: no closing parenthesis), or 6.8-6.15's 'found no error details for' after it;
        the view keeps it beside the log's other reports, last, ``details`` false."""
        sev = _SEV[fatal, spec]
        head = f"pcieport {port}: AER: {sev} error message received from {dev}"
        self.lines += [head + " (no details found"] if spec else [head, f"pcieport {port}: AER: found no error details for {dev}"]
        i = self.events
        self.values += [(f"events[{i}].class", "fatal" if fatal else "corrected"), (f"events[{i}].port", dev),
                        (f"events[{i}].details", False), (f"events[{i}].reported_by", port)]
        self.events += 1
        self.faults += fatal

    def variant(self, style: str, case: str) -> Variant:
        """The log as printed in ``style`` (its stamps), with the values and faults it holds."""
        text = "".join(_stamp(style, i) + ln + "\n" for i, ln in enumerate(self.lines))
        values = self.values + [("len(events)", self.events), ("len(faults)", self.faults)]
        return Variant("kernel-log", f"{style} {case}", text, tuple(values), fails=self.faults > 0, stream=True)


@generator("kernel-log")
def kernel_log(rng: random.Random) -> Iterator[Variant]:
    for style in _TIMES:
        for case in rng.sample(("xid", "sxid", "aer", "rm_init", "quiet", "mixed", "fallen", "sxid-data", "aer-excerpt",
                                    "aer-native"), 3):
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
            if case in ("sxid", "mixed") and rng.random() < 0.5:
                log.sxid_interleaved(rng.randint(2, 4))
            if case in ("aer", "mixed"):
                log.aer(f"0000:{rng.randrange(0, 200):02x}:02.0", False, rng.random() < 0.4, rng.randint(1, 2))
                if rng.random() < 0.6:
                    log.aer(f"0000:{rng.randrange(0, 200):02x}:03.1", True, rng.random() < 0.4, rng.randint(1, 2),
                            glued=rng.random() < 0.3)
            if case == "rm_init":
                log.rm_init(f"0000:{rng.randrange(16, 250):02x}:00.0")
            if case == "aer-native":
                port = f"0000:{rng.randrange(0, 200):02x}:01.0"
                below = f"0000:{rng.randrange(16, 250):02x}:00.0"
                spec = rng.random() < 0.5  # 6.8's 'Correctable' / 'Uncorrectable (...)'
                log.aer_native(port, below, False, False, spec)
                log.aer_native(port, rng.choice((port, below)), True, rng.random() < 0.5, spec)
                # a message the kernel found no details for: its event after the reports', last in the case
                log.aer_no_details(port, f"0000:{rng.randrange(16, 250):02x}:00.0", rng.random() < 0.5, spec)
            if case == "aer-excerpt":
                log.aer_excerpt(f"0000:{rng.randrange(0, 200):02x}:01.2")
                if rng.random() < 0.5:
                    log.aer_status_only(f"0000:{rng.randrange(0, 200):02x}:01.1")
            if case == "fallen":
                log.fallen(f"0000:{rng.randrange(16, 250):02x}:00.0", rng.random() < 0.4)
            if case == "sxid-data":
                log.sxid_data_only(rng.randrange(8), f"0000:{rng.randrange(1, 9):02x}:00")
            for _ in range(rng.randint(0, 2)):
                log.noise()
            yield log.variant(style, case)


# ------------------------------------------------------------------ mlx5 health and hung tasks
# (sncheck/vendors/infiniband/kernel_mlx5.py and sncheck/vendors/kernel_hung.py: their grammars)

_SYNDROMES = {0x1: "firmware internal error", 0x7: "irisc not responding", 0x8: "unrecoverable hardware error",
              0xA: "ICM fetch PCI error", 0x10: "High temperature"}


class _Host(_Log):
    def mlx5(self, style: str, port: str, head: str, sensor: int, synd: int | None, outcome: str | None) -> None:
        """One mlx5 health report of a kernel era: ``3x`` dev_err lines, ``5x`` mlx5_core_err's
        ``FUNC:LINE:(pid N): `` (some builds with the device name first), ``6x`` mlx5_log's
        health buffer and core lines without the pid."""
        def core(func: str, line: int, msg: str) -> str:
            pre = {"3x": "", "5x": f"{func}:{line}:(pid {self.rng.choice((0, 141, 519))}): ",
                   "5x-named": f"{port}:{func}:{line}:(pid 0): ", "6x": f"{func}:{line}: "}[style]
            return f"mlx5_core {port}: {pre}{msg}"

        def buf(line: int, msg: str) -> str:
            return f"mlx5_core {port}: {msg}" if style in ("3x", "6x") else core("print_health_info", line, msg)

        i = self.events
        if head == "fatal":
            self.lines.append(core("poll_health", 803, f"Fatal error {sensor} detected"))
            self.values += [(f"events[{i}].class", "fatal"), (f"events[{i}].code", sensor)]
        else:
            miss = "device's health compromised" + ("" if style == "3x" else " - reached miss count")
            self.lines.append(core("poll_health", 739, miss))
            self.values.append((f"events[{i}].class", "health-compromised"))
        if synd is None and style == "6x":
            self.lines.append(buf(432, "PCI slot is unavailable"))
            self.values.append((f"events[{i}].pci_unavailable", True))
        elif synd is not None:
            text = _SYNDROMES[synd] if style != "3x" or synd != 0x10 else "High temprature"
            if style == "6x":
                self.lines.append(buf(427, f"Health issue observed, {text}, severity(3) ERROR:"))
            self.lines += [buf(380, f"assert_var[{k}] 0x{self.rng.getrandbits(32):08x}") for k in range(5)]
            self.lines += [buf(383, "assert_exit_ptr 0x008033a8"), buf(385, "assert_callra 0x0080365c")]
            self.lines.append(buf(388, "fw_ver 28.39.1002"))
            if style == "6x":
                self.lines.append(buf(389, f"time {1704271398 + i}"))
            self.lines.append(buf(390, "hw_id 0x0000020d"))
            if style == "6x":
                self.lines += [buf(391, "rfr 0"), buf(392, "severity 3 (ERROR)")]
            self.lines += [buf(393, "irisc_index 3"), buf(394, f"synd 0x{synd:x}: {text}"),
                           buf(395, "ext_synd 0x8f3c")]
            if style != "3x":
                self.lines.append(buf(396, "raw fw_ver 0x1c2703ea"))
            self.values += [(f"events[{i}].synd", synd), (f"events[{i}].syndrome", text),
                            (f"events[{i}].ext_synd", "0x8f3c"), (f"events[{i}].fw_version", "28.39.1002")]
        if outcome is not None:
            self.lines.append(core("mlx5_health_try_recover", 340, "handling bad device here"))
            self.lines.append(core("mlx5_health_try_recover", 350, "starting health recovery flow"))
            self.lines.append(core("mlx5_health_try_recover", 356, {
                "succeeded": "health recovery succeeded", "failed": "health recovery failed",
                "unloaded": "health recovery failed"}[outcome]))
            if outcome == "unloaded":
                self.lines.append(core("mlx5_fw_fatal_reporter_err_work", 690, "Driver is in error state. Unloading"))
        self.values += [(f"events[{i}].source", "mlx5"), (f"events[{i}].port", port),
                        (f"events[{i}].recovery", outcome)]
        self.events += 1
        self.faults += 1

    def recovered(self, port: str) -> None:
        """A recovery's success with its error before the log (an earlier run's read)."""
        self.lines.append(f"mlx5_core {port}: mlx5_health_try_recover:360:(pid 141): health recovery succeeded")
        self.values += [(f"events[{self.events}].class", "recovered"), (f"events[{self.events}].port", port)]
        self.events += 1

    def hung(self, era: str, comm: str, pid: int, secs: int, module: str | None, blocker: bool) -> None:
        """One hung-task report of a kernel era: ``4x`` (the old sched line, stack words,
        ``[<addr>]`` frames), ``5x`` (the old sched line), ``6x`` (``task:`` line, ``<TASK>``)."""
        release = {"4x": "4.4.146-1.el7.elrepo.x86_64", "5x": "5.4.0-7634-generic", "6x": "6.8.0-54-generic"}[era]
        taint = self.rng.choice(("G           OE", "P           O", ""))
        self.lines += [f"INFO: task {comm}:{pid} blocked for more than {secs} seconds.",
                       f"      Tainted: {taint}     {release} #1" if taint else f"      Not tainted {release} #2",
                       '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.']
        frames = ["__schedule+0x2e3/0x740", "? __switch_to_asm+0x40/0x70", "schedule+0x42/0xb0",
                  "schedule_preempt_disabled+0xe/0x10", "__mutex_lock.constprop.0+0x263/0x490"]
        if module:
            frames += [f"uvm_gpu_retain_by_uuid+0x1e/0x40 [{module}]", f"? alloc_internal.part.0+0x24/0x30 [{module}]"]
        frames += ["__x64_sys_ioctl+0x95/0xd0", "do_syscall_64+0x5c/0xc0"]
        if era == "6x":
            self.lines += [f"task:{comm:<15} state:D stack:0     pid:{pid:<5} tgid:{pid:<5} ppid:2      flags:0x00004000",
                           "Call Trace:", " <TASK>"] + [f" {f}" for f in frames] + [
                           "RIP: 0033:0x7effb1291117", "RSP: 002b:00007efe5c7fccf0 EFLAGS: 00000246", " </TASK>"]
        elif era == "5x":
            self.lines += [f"{comm:<15} D    0 {pid:5d}   2788 0x00000000", "Call Trace:"] + [f" {f}" for f in frames]
        else:
            self.lines += [f"{comm:<15} D ffff883f2cc43bd8     0 {pid:5d}   5396 0x00000084",
                           " ffff883f2cc43bd8 ffffffff8170e16e ffff883f33d62c80 ffff883f2cc44000", "Call Trace:"]
            self.lines += [f" [<ffffffff{self.rng.getrandbits(32):08x}>] {f}" for f in frames]
        i = self.events
        if blocker:
            self.lines.append(f"INFO: task {comm}:{pid} is blocked on a mutex likely owned by task nvidia-smi:4711.")
            self.values.append((f"events[{i}].blocked_by", "nvidia-smi:4711"))
        self.values += [(f"events[{i}].source", "hung_task"), (f"events[{i}].process", comm), (f"events[{i}].pid", pid),
                        (f"events[{i}].seconds", secs), (f"events[{i}].kernel", release),
                        (f"len(events[{i}].trace)", sum(not f.startswith("? ") for f in frames))]
        if module:
            self.values.append((f"events[{i}].module", module))
        self.events += 1
        self.faults += 1


@generator("kernel-log")
def host_reports(rng: random.Random) -> Iterator[Variant]:
    for style in _TIMES:
        for case in rng.sample(("mlx5", "hung", "both", "recovered"), 2):
            log = _Host(rng)
            for _ in range(rng.randint(0, 2)):
                log.noise()
            if case in ("mlx5", "both"):
                for _ in range(rng.randint(1, 2)):
                    era = rng.choice(("3x", "5x", "5x-named", "6x"))
                    head = rng.choice(("fatal", "compromised"))
                    synd = rng.choice((None, *_SYNDROMES)) if era == "6x" else rng.choice(tuple(_SYNDROMES))
                    log.mlx5(era, f"0000:{rng.randrange(16, 250):02x}:00.{rng.randrange(2)}", head,
                             rng.randint(1, 5), synd, rng.choice((None, "succeeded", "failed", "unloaded")))
            if case in ("hung", "both"):
                for _ in range(rng.randint(1, 2)):
                    era = rng.choice(("4x", "5x", "6x"))
                    log.hung(era, rng.choice(("python3", "kworker/u16:2", "nvc:[driver]", "irq/105-pciehp")),
                             rng.randrange(100, 900000), rng.choice((120, 122, 245, 491)),
                             rng.choice((None, "nvidia_uvm", "mlx5_ib")), era == "6x" and rng.random() < 0.5)
            if case == "recovered":
                log.recovered(f"0000:{rng.randrange(16, 250):02x}:00.0")
            for _ in range(rng.randint(0, 1)):
                log.noise()
            yield log.variant(style, case)


# ------------------------------------------------------------------ APEI GHES records
# (sncheck/vendors/kernel_ghes.py: ghes.c __ghes_print_estatus, cper.c cper_estatus_print and its
# section printers, aer.c cper_print_aer)

_PORT_TYPES = {0: "PCIe end point", 4: "root port", 5: "upstream switch port", 6: "downstream switch port"}
_MEM_TYPES = {2: "single-bit ECC", 3: "multi-bit ECC", 14: "scrub uncorrected error"}


class _Ghes(_Log):
    def record(self, seq: int, severity: str, sections: list[tuple[str, str]], new_kernel: bool) -> list[str]:
        """One record's lines (its sections: (kind, severity)) and their values; the AER decode
        lines a PCIe section's device gets after it are returned, to place after the record."""
        pfx = f"{{{seq}}}[Hardware Error]: "
        out = [pfx + f"Hardware error from APEI Generic Hardware Error Source: {seq % 3}"]
        if severity == "corrected":
            out.append(pfx + "It has been corrected by h/w and requires no further action")
        out.append(pfx + f"event severity: {severity}")
        decode: list[str] = []
        for k, (kind, sev) in enumerate(sections):
            i = self.events
            if new_kernel and self.rng.random() < 0.5:
                out.append(pfx + f" precise tstamp: 2025-03-04 09:1{k}:00")
                self.values.append((f"events[{i}].tstamp", f"2025-03-04 09:1{k}:00"))
            out.append(pfx + f" Error {k}, type: {sev}")
            if self.rng.random() < 0.4:
                out.append(pfx + f" fru_text: Card0{k}, ChnB, DIMM0")
                self.values.append((f"events[{i}].fru_text", f"Card0{k}, ChnB, DIMM0"))
            p = pfx + "  "
            self.values += [(f"events[{i}].source", "ghes"), (f"events[{i}].class", sev), (f"events[{i}].seq", seq),
                            (f"events[{i}].section", k), (f"events[{i}].record_severity", severity),
                            (f"events[{i}].source_id", seq % 3)]
            if kind == "pcie":
                port = f"0000:{self.rng.randrange(0, 250):02x}:{self.rng.randrange(32):02x}.{self.rng.randrange(8)}"
                ptype = self.rng.choice(tuple(_PORT_TYPES))
                out += [p + "section_type: PCIe error", p + f"port_type: {ptype}, {_PORT_TYPES[ptype]}",
                        p + "version: 3.0", p + "command: 0x0547, status: 0x4010", p + f"device_id: {port}",
                        p + "slot: 0", p + "secondary_bus: 0x03", p + "vendor_id: 0x1002, device_id: 0x74a1",
                        p + "class_code: 120000", p + "bridge: secondary_status: 0x2000, control: 0x0003"]
                self.values += [(f"events[{i}].kind", "pcie"), (f"events[{i}].port", port),
                                (f"events[{i}].bus_id", port[:10]), (f"events[{i}].port_type", ptype),
                                (f"events[{i}].vendor_device", "1002:74a1"), (f"events[{i}].status", "0x4010")]
                if sev == "fatal":
                    out += [p + "aer_uncor_status: 0x00004000, aer_uncor_mask: 0x00000000",
                            p + "aer_uncor_severity: 0x00062030", p + "TLP Header: 40000001 0000000f f7c00000 00000000"]
                    self.values += [(f"events[{i}].aer_uncor_status", "0x00004000"),
                                    (f"events[{i}].tlp_header", "40000001 0000000f f7c00000 00000000")]
                elif sev != "corrected" or self.rng.random() < 0.5:  # aer_recover_queue: the AER driver's decode
                    dev = f"pcieport {port}: "
                    decode += [dev + "AER: aer_status: 0x00004000, aer_mask: 0x00000000",
                               dev + "   [14] CmpltTO                (First)",
                               dev + "AER: aer_layer=Transaction Layer, aer_agent=Requester ID"]
                    self.values += [(f"events[{i}].aer_status", "0x00004000"), (f"events[{i}].bits[bit=14].name", "CmpltTO"),
                                    (f"events[{i}].aer_agent", "Requester ID")]
            elif kind == "memory":
                etype = self.rng.choice(tuple(_MEM_TYPES))
                status = "Storage error in DRAM memory (0x0000000000000400)" if new_kernel else "0x0000000000000400"
                loc = ("node:1 card:0 module:0 rank:1 bank:3 bank_group:1 bank_address:3 device:0 row:51198 column:696 "
                       if new_kernel else "node: 1 card: 0 module: 0 rank: 1 bank: 3 device: 0 row: 51198 column: 696 ")
                out += [p + "section_type: memory error", p + f"error_status: {status}",
                        p + "physical_address: 0x000000105e4b1fc0", p + loc.rstrip(),
                        p + f"error_type: {etype}, {_MEM_TYPES[etype]}", p + "DIMM location: CPU 1 DIMM A2"]
                self.values += [(f"events[{i}].kind", "memory"), (f"events[{i}].error_status", "0x0000000000000400"),
                                (f"events[{i}].physical_address", "0x000000105e4b1fc0"),
                                (f"events[{i}].location.row", 51198), (f"events[{i}].location.rank", 1),
                                (f"events[{i}].error_type", etype), (f"events[{i}].dimm", "CPU 1 DIMM A2")]
            else:  # a processor section: its name: value lines kept by name
                out += [p + "section_type: general processor error", p + "processor_type: 0, IA32/X64",
                        p + "error_type: 0x01", p + "cache error", p + "operation: 1, data read",
                        p + "IP: 0xffffffff81012345"]
                self.values += [(f"events[{i}].kind", "processor"), (f"events[{i}].fields.operation", "1, data read")]
            self.events += 1
            self.faults += sev not in ("corrected", "info")
        return out + decode


@generator("kernel-log")
def ghes_records(rng: random.Random) -> Iterator[Variant]:
    for style in rng.sample(_TIMES, 4):
        log = _Ghes(rng)
        for _ in range(rng.randint(0, 2)):
            log.noise()
        new_kernel = rng.random() < 0.6
        seq = rng.randrange(1, 400)
        first = log.events
        records = []
        for r in range(rng.randint(1, 2)):
            severity = rng.choice(("corrected", "recoverable", "fatal", "corrected"))
            kinds = [rng.choice(("pcie", "memory", "pcie", "processor")) for _ in range(rng.randint(1, 2))]
            records.append(log.record(seq + r, severity, [(k, severity) for k in kinds], new_kernel))
        if len(records) == 2 and rng.random() < 0.5:  # two CPUs' records interleaved: their sequence numbers part them
            a, b = records
            head = [ln for ln in a if "[Hardware Error]" in ln]
            lines = [x for pair in zip(head, b) for x in pair] + head[len(b):] + b[len(head):] + a[len(head):]
            log.lines += lines
            # an event starts at its record's first line (section 0) or at its 'Error K' line: the
            # interleaving orders them so
            starts = [(int(m.group(1)), 0 if m.group(2) else int(m.group(3))) for ln in lines
                      if (m := re.match(r"\{(\d+)\}\[Hardware Error\]: (?:(Hardware error from)|\s*Error (\d+),)", ln))
                      and (m.group(2) or m.group(3) != "0")]
            was = sorted(starts)  # record() numbered them record by record, section by section
            where = {was.index(x) + first: starts.index(x) + first for x in starts}
            log.values = [(re.sub(r"^(len\()?events\[(\d+)\]", lambda m: f"{m.group(1) or ''}events[{where.get(int(m.group(2)), int(m.group(2)))}]", at), v)
                          for at, v in log.values]
            case = "interleaved"
        else:
            log.lines += [ln for rec in records for ln in rec]
            case = "records"
        for _ in range(rng.randint(0, 1)):
            log.noise()
        yield log.variant(style, f"ghes {case} {'5.x+' if new_kernel else '3.x-4.x'}")


@generator("kernel-log")
def masked_xids(rng: random.Random) -> Iterator[Variant]:
    """An Xid whose GPU address a reporter masked ('NVRM: Xid (PCI:...): 145, ...', nccl-issue2241): the
    driver's report all the same (kernel_rc.c's layout), its GPU unknown."""
    code = rng.choice((13, 45, 79, 145))
    mask = rng.choice(("...", "xxxx:xx:xx", "****"))
    lines = [f"kernel: NVRM: Xid (PCI:{mask}): {code}, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)",
             "kernel: NVRM: Xid (PCI:0000:3b:00): 137, RLW_RXPIPE interrupt hit on link 11 on GPU0: PRIV Error"]
    yield Variant("kernel-log", f"Xid {code} with its PCI address masked as {mask}", "\n".join(lines) + "\n",
                  (("len(events)", 2), ("events[0].code", code), ("events[0].bus_id", None),
                   ("events[1].bus_id", "0000:3b:00")), fails=True, stream=True)


@generator("kernel-log")
def fallen_off_331(rng: random.Random) -> Iterator[Variant]:
    """Drivers of the 331 era: 'NVRM: GPU at dddd:bb:dd.f has fallen off the bus.' (no ': GPU', Bumblebee-issue554):
    the GPU lost, read as the Xid 79 it is."""
    bus = rng.choice(("01", "02", "3b"))
    lines = [f"[   49.261458] NVRM: GPU at 0000:{bus}:00.0 has fallen off the bus.",
             "[   49.261465] NVRM: os_pci_init_handle: invalid context!"]
    yield Variant("kernel-log", "331-era fallen off the bus", "\n".join(lines) + "\n",
                  (("len(events)", 1), ("events[0].code", 79), ("events[0].bus_id", f"0000:{bus}:00")),
                  fails=True, stream=True)



@generator("kernel-log")
def kmsg_records(rng: random.Random) -> Iterator[Variant]:
    """A /dev/kmsg reader's records (the kernel's dev-kmsg ABI: 'PRI,SEQ,USEC,FLAGS;MESSAGE', a record's
    dictionary on ' KEY=value' lines after it): read as dmesg's '[SEC.USEC]' lines."""
    code, bus, usec = rng.choice((13, 43, 79)), rng.choice(("38", "3b", "c1")), rng.randrange(10**6, 10**10)
    lines = [f"6,3964,{usec - 5000},-;nvidia-nvswitch2: open (major=510)",
             f"4,3965,{usec},-;NVRM: Xid (PCI:0000:{bus}:00): {code}, pid=2815167, name=pt_main_thread, Ch 00000008",
             " SUBSYSTEM=pci", f" DEVICE=+pci:0000:{bus}:00.0"]
    yield Variant("kernel-log", f"kmsg records, Xid {code}", "\n".join(lines) + "\n",
                  (("len(events)", 1), ("events[0].code", code), ("events[0].bus_id", f"0000:{bus}:00"),
                   ("events[0].time", f"{usec // 10**6}.{usec % 10**6:06d}")), fails=True, stream=True)
