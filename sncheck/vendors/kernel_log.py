"""Kernel log events, shared by every vendor: NVIDIA Xid and SXid (NVSwitch), PCIe AER, amdgpu
RAS, mlx5 (ConnectX) health and port state, PCIe links below capability and hung tasks.

``parse_kernel_log`` reads ``dmesg`` or ``journalctl -k`` text (any of their time
formats: ``[  12.34]``, ``dmesg -T``, ``--time-format iso``, ``-o short-iso``, a /dev/kmsg
record's ``PRI,SEQ,USEC,-;``) into one
event per kernel report:

* ``xid``: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.``:
  the code and the GPU's PCI bus id (``0000:3b:00``; older drivers omit ``PCI:``);
* ``sxid``: ``nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 46 ...``:
  the code, the switch's bus id and its class (``fatal`` / ``non-fatal``); the ``Data {...}``
  lines that follow one report are part of it, not reports of their own;
* ``aer``: ``pcieport 0000:00:03.1: AER: PCIe Bus Error: severity=Uncorrected (Fatal), ...``:
  the class (``fatal``, ``non-fatal``, ``corrected``) and the device that printed it. Only
  where a log has no such line (older kernels print less) does an ``AER: ... error
  received: <device>`` line count, naming the device in it;
* ``amdgpu``: RAS counts, ACA banks, resets, ring timeouts (:mod:`sncheck.vendors.amd.kernel_ras`);
* ``mlx5``: ``mlx5_core 0000:3b:00.0: poll_health:803:(pid 0): Fatal error 1 detected``, the
  firmware heartbeat lost, the health buffer (syndrome, ext_synd, firmware) and the recovery's
  outcome (:mod:`sncheck.vendors.infiniband.kernel_mlx5`): the NIC's report, the host's finding;
* ``nic_link``: a ConnectX port's state, ``mlx5_core 0000:53:00.0 enp83s0f0np0: Link down`` (and
  ``up``) and the RDMA core's ``mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN`` (6.15+): counted,
  the policy's count and window judge a flapping port; ``pcie_link``: the PCI core's ``N Gb/s
  available PCIe bandwidth, limited by ...`` of a link below its device's capability
  (:mod:`sncheck.vendors.kernel_links`);
* ``hung_task``: ``INFO: task python3:1234 blocked for more than 122 seconds.`` and the lines
  after it (:mod:`sncheck.vendors.kernel_hung`): the host's;
* ``ghes``: APEI GHES firmware-first records, ``{12}[Hardware Error]: Hardware error from APEI
  Generic Hardware Error Source: 0`` and the record's lines (severity, sections: PCIe with its
  device and AER registers, memory with its address, location and DIMM, processor), one event
  per section, the AER driver's decode after it folded in (:mod:`sncheck.vendors.kernel_ghes`).

Each report's every value is kept (the error bits and port of an AER report, an Xid's MIG
instance and cause, an SXid's link, the GPU failing RmInitAdapter and its code, the driver
version loaded before it): :data:`GRAMMAR` lists them, with the sources they were read in.

Severity is not decided here: the rules file's kernel-log policy does that
(:mod:`sncheck.health.kernel`). ``faults`` lists every Xid, SXid and uncorrected AER
report, so ``sncheck parse kernel-log`` exits 1 on them; corrected AER is counted only.

``read_command`` is the bounded read an SSH host runs: the journal when it has kernel
entries (``--after-cursor`` of the last run's cursor), else ``dmesg --time-format iso``
(the lines after the last run's newest stamp are kept by :func:`since`; the read prints the
boot time first, ``# boot: EPOCH``, so dmesg's uptime stamps place too, and the host's clock,
``# now: EPOCH``, so a clock gone back behind that stamp is told), filtered to these
reports, at most :data:`MAX_LINES` lines, then an end marker, so a read cut short is told
from a quiet log.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timezone
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end, kernel_aer, kernel_ghes, kernel_hung, kernel_links, listing
from sncheck.vendors.delivery import JOURNAL_UNIT
from sncheck.vendors.amd import kernel_ras
from sncheck.vendors.infiniband import kernel_mlx5
from sncheck.vendors.nvidia import kernel_nvrm


TOOL = "kernel-log"
# reports that name no GPU (the host's finding): an NVSwitch tray's SXid, a NIC's mlx5 health or port state, a hung task
HOST_SOURCES = ("sxid", "mlx5", "nic_link", "hung_task")
# the sources whose bus id is a GPU's by what the driver says (an AER or GHES record's bus id may
# be a root port's or a NIC's: a GPU only where one of these, or a card listing, names it)
GPU_SOURCES = ("xid", "rm_init", "amdgpu")
END_MARKER = "# end of kernel log"
MAX_LINES = 2000
BOOT_DROP_S = 1.0  # printk stamps of two CPUs may interleave a little out of order; a reboot starts again near 0
PATTERN = (rf"{kernel_nvrm.PATTERN}|{kernel_aer.PATTERN}|{kernel_mlx5.PATTERN}|{kernel_links.PATTERN}|{kernel_hung.PATTERN}|"
           rf"{kernel_ghes.PATTERN}|"
           r"^-- cursor:|^dmesg:|dmesg: |Operation not permitted|"
           r"^Failed to|amdgpu.*([Hh]ardware [Ee]rror|GPU reset|timeout, signaled|RAS records|poison consumption|"
           r"page fault|Process |Fatal error during GPU init|probe .*failed with error)|aca entry\[|ACA\[")  # every line kernel_ras reads (an ACA register's: any)

# syslog / the journal's default format ('Dec  2 11:38:27 worker4 kernel: '), then one of dmesg's stamps
_SYSLOG = re.compile(r"^(?P<syslog>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel: ?")
# dmesg --decode (-x): facility and level before the stamp, 'kern  :err   : ' (util-linux sys-utils/dmesg.c,
# print_record: "%-6s:%-6s: " of facility_names[] and level_names[])
_DECODE = re.compile(r"^(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|res\d+|local[0-7]) *:"
                     r"(?:emerg|alert|crit|err|warn|notice|info|debug) *: ")
_TIME = re.compile(r"^(?:\[\s*(?P<mono>\d+\.\d+)\]|\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d "
                   r"\d\d:\d\d:\d\d \d{4})\]|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?"
                   r"(?:[+-]\d\d:?\d\d|Z)?))\s*")
# Other shapes of a kernel line, told only to say a log is a kernel's (hostile round 17's refusal of a
# file no line of which is one): dmesg -r's raw level '<6>'; --reltime '[Dec 6 20:00]'; -d/--time-format
# delta '[  +0.000003]' or '[<    0.000003>]' (util-linux dmesg.c print_record); journalctl -o short-precise
# ('Dec 06 20:00:00.123456 host kernel:') and short-full ('Sun 2026-12-06 20:00:00 UTC host kernel:');
# and under dmesg -t (no stamp) a dev_printk line ('mlx5_core 0000:0c:00.0: ', dev_driver_string and
# dev_name; a USB device's 'usb 1-1.2: ', drivers/usb/core/hub.c's dev_info) or the pr_fmt prefixes of
# the drivers this view reads (nvidia-uvm's, uvm_common.h) and the kernel's first lines
_KERNELISH = re.compile(
    r"^(?:<\d{1,3}>|\[[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d(?::\d\d)?\]|\[\s*\+\d+\.\d+\]|\[<\s*\d+\.\d+>\]"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\.\d+ \S+ kernel:|[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \S+ kernel:"
    r"|[\w.-]+ [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: |usb \d+-\d+(?:\.\d+)*: "
    r"|(?:NVRM|nvidia-nvlink|nvidia-modeset|nvidia-uvm|EXT4-fs \([^)]*\)|"
    r"pci_bus [0-9a-f]{4}:[0-9a-f]{2}|nvme nvme\d+|ACPI|PCI): |Linux version \d)")
# a /dev/kmsg record as a reader keeps it (Documentation/ABI/testing/dev-kmsg): 'PRI,SEQ,USEC,FLAGS[,..];MESSAGE',
# USEC the monotonic stamp dmesg prints as '[SEC.USEC]' (util-linux dmesg reads the same records); a record's
# continuation lines (its dictionary, ' SUBSYSTEM=pci') start with a space
_KMSG = re.compile(r"^(\d{1,4}),(\d+),(\d+),[^;\s]*;")
_KMSG_DICT = re.compile(r"^ [A-Z_]+=")


def _kmsg_stamp(m: re.Match) -> str:
    """The record's stamp as dmesg prints it: '[SEC.USEC] '."""
    sec, usec = divmod(int(m.group(3)), 1_000_000)
    return f"[{sec:5d}.{usec:06d}] "


_NOW = re.compile(r"^# now: (\d{1,12})$")  # sncheck's read: the host's clock as the read ran (date +%s)
_BOOT = re.compile(r"^# boot: (\d{1,12})$")  # sncheck's read: /proc/stat's btime, so dmesg's uptime stamps place
_CURSOR = re.compile(r"^-- cursor: (\S+)")
_DENIED = re.compile(r"Operation not permitted|Permission denied|read kernel buffer failed|not permitted", re.I)


# a record glued to the end of the one before it (its line end lost in the paste: harvest7's igb AER,
# '[14] CmpltTO [  200.105524,009][  T292] igb ...: AER:   TLP Header: ...'): printk's stamp, with its
# sequence and caller id where the log has them, never stands inside a record's own text
_GLUED = re.compile(r"(?<=\S)[ \t]+(?=\[\s*\d+\.\d{6}(?:,\d+)?\](?:\[\s*[TC]\d+\])?\s)")


def _records(text: str) -> list[tuple[int, str]]:
    """The log's lines, each with its number (:func:`after_end.numbered`), a line holding two records
    split into them."""
    return [(at, part) for at, raw in after_end.numbered(text)
            for part in (_GLUED.split(raw) if "[" in raw else [raw])]


# journalctl's ellipsis (systemd src/shared/logs-show.c print_multiline: without --full, a message wider
# than the screen goes through ellipsize_mem, which writes '…' in a UTF-8 locale, at 90% of the width
# with the message's tail after it, or at its end); printk writes no '…'. less -S (journalctl's pager,
# SYSTEMD_LESS=FRSXMK) marks a line it chopped at the screen's edge with '>' (its --rscroll default)
_ELLIPSIS = "\u2026"
_REPORT_LINE = re.compile(PATTERN)


def _chopped(at: int, body: str) -> str | None:
    """Why the report line ``body`` (line ``at``) is not whole, where the grammar can tell: a line the
    view reads (:data:`PATTERN`) holding journalctl's '…'; an AER line that is no whole line of aer.c's
    and ends in less's '>' (kernel_aer's grammar). None for any other line."""
    if _ELLIPSIS in body and _REPORT_LINE.search(body):
        return (f"line {at} is cut by journalctl (its '…': --no-full, or a screen narrower than the line): part of "
                "a report's line was left out, it is not whole")
    if body.endswith(">") and kernel_aer.whole(body) is False:
        return (f"line {at} is cut by a pager (less -S marks a line it chopped at the screen's edge with '>'): "
                "part of an AER report's line was left out, it is not whole")
    return None


def bus_id(text: str | None) -> str | None:
    """A PCI address as ``dddd:bb:dd`` (lower case, 4-digit domain, no function): the
    form Xid lines print, to compare with ``nvidia-smi -q``'s ``00000000:3B:00.0``."""
    if not text:
        return None
    m = re.search(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})", text)
    if not m:
        return None
    return f"{m.group(1)[-4:]}:{m.group(2)}:{m.group(3)}".lower()


def parse_kernel_log(text: str) -> dict[str, Any]:
    """``dmesg`` / ``journalctl -k`` text -> its Xid, SXid and AER events (see the module)."""
    events: list[dict[str, Any]] = []
    errors: list[str] = []
    received: list[dict[str, Any]] = []
    cursor = last_time = None
    last_t: float | None = None
    boot: int | None = None  # the boot's wall time (sncheck's read prints it): an uptime stamp's epoch
    now: int | None = None   # the host's clock when it was read (sncheck's read prints it)
    cursor_lost = False
    last_amd: dict[str, Any] | None = None  # the amdgpu event an ACA register or total line continues
    last: dict[str, Any] | None = None      # the NVIDIA or AER report a Data, status or bit line continues
    driver: str | None = None               # the NVIDIA driver loaded ("NVRM: loading ..."), for the reports after it
    nv_head: dict[str, Any] = {}            # the GPU a multi-line NVRM message named on its first line
    resets: dict[str, dict[str, Any]] = {}  # amdgpu: the reset begun per GPU, its outcome line to come
    nics: dict[str, dict[str, Any]] = {}    # PCI function -> its last mlx5 health report, which its buffer lines fill
    task: dict[str, Any] | None = None      # the hung-task report whose trace the lines after it are
    ghes = kernel_ghes.state()              # APEI GHES records by sequence number, the AER decode after one
    lines = 0
    stamped = 0  # lines with a kernel log's stamp or prefix (dmesg's, journalctl's, syslog's)
    ended = False
    boots = 0                   # the uptime resets the log shows (a paste across reboots)
    last_up: float | None = None
    report_open = open_before = False  # the line before was an AER report's, its report not yet whole
    kmsg = False  # a /dev/kmsg record was read: ' KEY=value' lines are records' dictionaries
    for at, raw in _records(text):
        line = raw.strip()
        if not line or (kmsg and _KMSG_DICT.match(raw)):
            continue  # a kmsg record's dictionary line is the record's
        if k := _KMSG.match(line):
            line, kmsg = _kmsg_stamp(k) + line[k.end():], True
        open_before, report_open = report_open, False
        if line == END_MARKER:
            ended = True
            continue
        if m := _BOOT.match(line):
            boot = int(m.group(1))
            continue
        if m := _NOW.match(line):
            now = int(m.group(1))
            continue
        if line.startswith("# source:") or line.startswith("# "):
            continue  # the read command's own notes
        if m := _CURSOR.match(line):
            cursor = m.group(1)
            continue
        lines += 1
        syslog = _SYSLOG.match(line)
        rest = line[syslog.end():] if syslog else line
        if decoded := _DECODE.match(rest):
            rest = rest[decoded.end():]
        elif not syslog and rest.startswith("kernel: "):  # a syslog line pasted without its date and host
            rest = rest[len("kernel: "):]
        t = _TIME.match(rest)
        stamped += bool(t or syslog or decoded or _KERNELISH.match(line))
        when = (t.group("iso") or t.group("ctime") or t.group("mono")) if t else None
        when = syslog.group("syslog") if syslog and not (t and (t.group("iso") or t.group("ctime"))) else when
        if t and t.group("mono") and when == t.group("mono"):
            up = float(when)
            if last_up is not None and up + BOOT_DROP_S < last_up:  # uptime went back: the host rebooted
                boots += 1
                if boot is not None:  # the read's boot time is the last boot's: what it placed before is not
                    last_t = last_time = None
            last_up = up
        if when and (w := seconds(when, boot)) and w[0] == "wall" and (last_t is None or w[1] >= last_t):
            # where the next read starts (dmesg without a journal): the newest placed stamp
            last_t, last_time = w[1], (t.group("iso") if t and t.group("iso") else iso(w[1]))
        body = rest[t.end():] if t else rest
        if t and t.group("iso") and (j := JOURNAL_UNIT.match(body)):
            body = body[j.end():]  # journalctl -o short-iso: 'host kernel: ' (the read's own command) after the stamp
        if (cut := _chopped(at, body)) and cut not in errors:
            errors.append(cut)
        if m := kernel_nvrm.LOADING.search(body):
            driver = m.group("version")
            continue
        if (h := kernel_hung.event(body, task)) is not None:
            if h:
                h.update(time=when, text=body[:300], boot_seq=boots)
                events.append(h)
                task = h
            continue
        task = None  # a line that is not the report's: its trace has ended
        if (g := kernel_ghes.event(body, ghes)) is not None:
            if g:
                g.update(time=when, text=body[:300], boot_seq=boots)
                events.append(g)
            last = None  # a record's line is no AER report's continuation
            continue
        if (n := kernel_mlx5.event(body, nics)) is not None or (n := kernel_links.event(body)) is not None:
            if n:
                n.update(time=when, text=body[:300], boot_seq=boots)
                events.append(n)
            continue
        if (e := kernel_nvrm.event(body, last, driver, nv_head)) is not None or (e := kernel_aer.event(body, last)) is not None:
            if e:  # {}: a line that continues the report before it
                e.update(time=when, text=body[:300], boot_seq=boots)
                (received if e.get("received") else events).append(e)
                if e["source"] == "aer" and not e.get("received") and received and received[-1]["port"] == e["port"]:
                    # the message's receiver, printed on the line before (aer_print_port_info)
                    e.update(reported_by=received[-1]["reported_by"], multiple=received[-1]["multiple"])
                last = e
            report_open = kernel_aer.unfinished(last)
            continue
        elif (sev := kernel_aer.foreign_severity(body)) is not None:
            errors.append(f"line {at}: an AER report whose severity {sev!r} aer.c never prints "
                          "(aer_error_severity_string): not read")
        elif (e := kernel_ras.event(body, last_amd, resets)) is not None:
            e.update(bus_id=bus_id(e["bus_id"]), time=when, text=body[:300], boot_seq=boots)  # dddd:bb:dd
            events.append(e)
            last_amd = e
        elif body.startswith("Failed to seek"):  # journalctl: the last run's cursor is gone (rotated)
            cursor_lost = True
            errors.append(f"journalctl: {body[:200]} (the next run reads this boot's whole log)")
        elif body.startswith("dmesg:") or body.startswith("Failed to") or _DENIED.search(body):
            errors.append(f"the kernel log cannot be read: {body[:200]}")
    kernel_ghes.finish(events)
    kernel_aer.finish(events)
    if text and not text.endswith("\n") and kernel_aer.cut_short(tail := text.rsplit("\n", 1)[-1], open_before):
        errors.append(listing.mid_line(tail))
    if not any(e["source"] == "aer" for e in events):
        events += received  # an older kernel: the 'error received' lines are all there is
    else:  # a message the kernel found no details for: all there is of that error (kernel_aer's grammar)
        events += [r for r in received if r.get("details") is False]
    for e in events:  # how many boots before the log's last one each report's is (kept only where > 0)
        if (back := boots - e.pop("boot_seq", boots)) > 0:
            e["boot_back"] = back
    if text.strip() and not lines and not ended and cursor is None:
        raise ParseError("no kernel log lines and no end marker", tool=TOOL)
    if lines and not stamped and not events and driver is None and not ended and cursor is None and boot is None:
        # a quiet log and another tool's output read alike: nothing says this is a kernel's (hostile round 17)
        errors.append(f"none of its {lines} lines is a kernel log's: no dmesg, journalctl or syslog stamp and no "
                      "kernel report (another tool's output?): a quiet log cannot be told from it")
    faults = [describe(e) for e in events if is_fault(e)]
    return {"tool": TOOL, "driver_version": driver, "events": events, "lines": lines, "cursor": cursor,
            "last_time": last_time, "boot": boot, "now": now,
            "complete": ended, "cursor_lost": cursor_lost, "faults": faults, "errors": errors}


def is_fault(e: dict[str, Any]) -> bool:
    """Whether ``sncheck parse`` exits 1 on the event: all but corrected AER, the amdgpu
    events that are counts only (correctable errors and their bank dumps) and a NIC port's state changes."""
    if e["source"] in ("nic_link", "pcie_link"):
        return kernel_links.is_fault(e)
    if e["source"] == "aer":
        return e["class"] != "corrected"
    if e["source"] == "amdgpu":
        return kernel_ras.is_fault(e)
    if e["source"] == "mlx5":
        return kernel_mlx5.is_fault(e)
    if e["source"] == "ghes":
        return kernel_ghes.is_fault(e)
    return True


def describe(e: dict[str, Any]) -> str:
    if e["source"] == "amdgpu":
        return kernel_ras.describe(e)
    if e["source"] == "aer":
        return kernel_aer.describe(e)
    if e["source"] == "mlx5":
        return kernel_mlx5.describe(e)
    if e["source"] == "hung_task":
        return kernel_hung.describe(e)
    if e["source"] == "ghes":
        return kernel_ghes.describe(e)
    if e["source"] in ("nic_link", "pcie_link"):
        return kernel_links.describe(e)
    return kernel_nvrm.describe(e)


def placed(e: dict[str, Any], boot: int | None = None) -> tuple[str, float] | None:
    """A report's time as :func:`seconds` gives it, but an uptime stamp of an earlier boot than
    the log's last (``boot_back``: how many boots before it, where the uptime went back) is on
    that boot's own clock, ``uptime-N``: not placed by the read's boot time (the last boot's),
    compared with no other boot's stamps."""
    back = e.get("boot_back")
    if isinstance(back, int) and not isinstance(back, bool) and back > 0:
        w = seconds(e.get("time"))
        return (f"uptime-{back}", w[1]) if w is not None and w[0] == "uptime" else w
    return seconds(e.get("time"), boot)


def since(parsed: dict[str, Any], after_time: str | None) -> dict[str, Any]:
    """``parsed`` with only the events after ``after_time`` (the last read's newest stamp, of a
    dmesg without a journal): ISO, ``dmesg -T`` and uptime stamps placed by the read's boot
    time compare. Events that cannot be placed are kept."""
    after = seconds(after_time) if after_time else None
    if after is None or after[0] != "wall":  # no last read, or a hand-edited cursor file: keep all
        return parsed
    boot = parsed.get("boot")

    def new(e: dict[str, Any]) -> bool:
        w = placed(e, boot)
        return w is None or w[0] != "wall" or round(w[1] * 1e6) > round(after[1] * 1e6)  # to the microsecond

    kept = [e for e in parsed["events"] if new(e)]
    errors = list(parsed.get("errors") or [])
    now = parsed.get("now")
    if len(kept) < len(parsed["events"]) and isinstance(now, int) and after[1] > now + CLOCK_SLACK_S:
        # The host's clock is behind the last read's newest stamp: it went back since (a clock
        # 3 days fast, then set right), and dmesg stamps every line by the clock as it is now, so
        # a report since the last run may be stamped before it. Which are new cannot be told.
        old = [e for e in parsed["events"] if not new(e)]
        errors.append(f"{_named(old)} {'is' if len(old) == 1 else 'are'} stamped before the last read's newest "
                      f"stamp ({after_time}), but the host's clock now ({iso(now)}) is behind that stamp: the "
                      "clock went back since the last run, so which reports are new cannot be told (not judged)")
    return {**parsed, "events": kept, "faults": [describe(e) for e in kept if is_fault(e)], "errors": errors}


def _named(events: list[dict[str, Any]], shown: int = 3) -> str:
    """``events`` counted and named: the first ``shown`` as :func:`describe` says them, then how many more."""
    names = [describe(e) for e in events[:shown]]
    more = f"; and {len(events) - shown} more" if len(events) > shown else ""
    return f"{len(events)} report{'s' if len(events) != 1 else ''} ({'; '.join(names)}{more})"


CLOCK_SLACK_S = 300  # a host's clock this far behind the last read's newest stamp went back (NTP slews less)


_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                         "Dec"), 1)}
_ISO_PARTS = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?:(Z)|([+-])(\d\d):?(\d\d))?$")
_CTIME_PARTS = re.compile(r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})$")
_SYSLOG_PARTS = re.compile(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)$")


def seconds(stamp: str | None, boot: int | None = None) -> tuple[str, float] | None:
    """A report's time as (clock, seconds) to measure a window between reports: ``wall``
    (seconds since the epoch: an ISO stamp, ``dmesg -T``'s, or an uptime stamp of a read that
    printed its boot time) compares across reads; ``uptime`` (``[  12.34]`` without the boot
    time) and ``syslog`` (``Dec  2 11:38:27``: no year) only within one log. A stamp without
    a zone is taken as UTC (``dmesg -T`` prints local time: one host's reads agree). None
    where the report has no stamp, or one that names no real time."""
    if not stamp:
        return None
    try:
        if m := _ISO_PARTS.match(stamp):
            y, mo, d, h, mi, s, frac, z, sign, zh, zm = m.groups()
            when = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
            offset = 0 if z or not sign else (int(zh) * 3600 + int(zm) * 60) * (1 if sign == "+" else -1)
            return "wall", when.timestamp() - offset + (float(f"0.{frac}") if frac else 0.0)
        if m := _CTIME_PARTS.match(stamp):
            mon, d, h, mi, s, y = m.groups()
            return "wall", datetime(int(y), _MONTHS[mon], int(d), int(h), int(mi), int(s),
                                    tzinfo=timezone.utc).timestamp()
        if m := _SYSLOG_PARTS.match(stamp):
            mon, d, h, mi, s = m.groups()  # no year: 2000 (a leap year, so Feb 29 reads)
            return "syslog", datetime(2000, _MONTHS[mon], int(d), int(h), int(mi), int(s),
                                      tzinfo=timezone.utc).timestamp()
        up = float(stamp)
    except (KeyError, ValueError, OverflowError):
        return None
    return ("wall", boot + up) if boot is not None else ("uptime", up)


def iso(t: float) -> str:
    """Seconds since the epoch as the ISO stamp a kept report carries."""
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="microseconds")


KEPT_DAYS = 30        # how long a host's reports are kept for a count over a window (the longest window)
KEPT_REPORTS = 500    # and at most this many per host, the newest
# The scalar fields a table judges a report by (a ``when`` names only these: hostile round 18, H18-07),
# kept with each report for the next runs' counts; mlx5's ``recovery`` is the shipped table's own.
KEPT_FIELDS = ("source", "code", "class", "kind", "bus_id", "card", "driver_version", "recovery_action", "status_class",
               "block", "link", "device", "gpu_instance", "recovery", "limited")


def report_key(e: dict[str, Any], boot: int | None = None) -> tuple | None:
    """What tells one report from another across reads: its source, code, class, bus id and
    wall time to the microsecond; None for a report whose time does not place it."""
    w = placed(e, boot)
    if w is None or w[0] != "wall":
        return None
    return (e.get("source"), e.get("code"), e.get("class"), e.get("bus_id"), round(w[1] * 1e6))


def kept_reports(earlier: list[Any], events: list[dict[str, Any]], boot: int | None) -> list[dict[str, Any]]:
    """The reports a host keeps for the next runs: ``earlier`` (what was kept, as read back from
    the state dir: anything not a report is dropped) and ``events`` (this read's, named to
    their cards) whose time places them (a wall time), the scalar fields a table judges by,
    their time as ISO; none older than :data:`KEPT_DAYS` before the newest, at most
    :data:`KEPT_REPORTS`."""
    out: list[tuple[float, dict[str, Any]]] = []
    for e, b in [(e, None) for e in earlier] + [(e, boot) for e in events]:
        if not isinstance(e, dict) or not isinstance(e.get("source"), str) or not isinstance(e.get("time"), str):
            continue
        when = placed(e, b)
        if when is None or when[0] != "wall":
            continue  # an uptime stamp of a read without its boot time, a syslog stamp: not placeable
        kept = {k: e[k] for k in KEPT_FIELDS if isinstance(e.get(k), (str, int)) and not isinstance(e.get(k), bool)}
        out.append((when[1], {**kept, "time": iso(when[1])}))
    if not out:
        return []
    newest = max(t for t, _ in out)
    out = sorted((x for x in out if x[0] >= newest - KEPT_DAYS * 86400), key=lambda x: x[0])
    return [r for _, r in out[-KEPT_REPORTS:]]


# The host's grep, made to read every line as text: GNU grep takes a line holding a NUL byte (or,
# in a UTF-8 locale, bytes that are not UTF-8) for binary data and prints 'binary file matches'
# instead of it, so an Xid beside such bytes was lost and the log read clean (hostile round 20,
# H20-07). NULs are dropped (tr, POSIX) and the C locale reads any other byte as a character.
_GREP = "tr -d '\\000' | LC_ALL=C grep -E"


def read_command(cursor: str | None = None) -> str:
    """The shell line an SSH host runs (see the module); ``cursor`` from the last run."""
    after = f" --after-cursor={shlex.quote(cursor)}" if cursor else ""
    pat = shlex.quote(PATTERN)
    return ("echo \"# boot: $(awk '/^btime /{print $2}' /proc/stat 2>/dev/null)\"; echo \"# now: $(date +%s)\"; "
            "if [ -n \"$(journalctl -k -n 1 -q --no-pager 2>/dev/null)\" ]; then "
            "echo '# source: journalctl -k'; "
            f"journalctl -k -o short-iso --no-pager --show-cursor{after} 2>&1 | {_GREP} {pat} | tail -n {MAX_LINES}; "
            "else echo '# source: dmesg'; "
            f"dmesg --time-format iso 2>&1 | {_GREP} {pat} | tail -n {MAX_LINES}; fi; "
            f"echo {shlex.quote(END_MARKER)}")


def evidence_command(words: tuple[str, ...]) -> str:
    """The kernel log lines an evidence bundle keeps for a finding on a host: the reports
    :data:`PATTERN` reads, plus every line naming an accelerator driver (``words``: each
    vendor plug-in's ``kernel_log_words``), the last 200, bounded; a host that does not let
    us read the log says so in the text."""
    pat = shlex.quote("|".join(("AER", "not permitted", *(re.escape(w) for w in words))))
    return ("(dmesg --ctime 2>/dev/null || dmesg 2>&1 || echo 'dmesg: not permitted') "
            f"| {_GREP} {pat} | tail -n 200")
