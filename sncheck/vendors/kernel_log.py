"""Kernel log events, shared by every vendor: NVIDIA Xid and SXid (NVSwitch), PCIe AER.

``parse_kernel_log`` reads ``dmesg`` or ``journalctl -k`` text (any of their time
formats: ``[  12.34]``, ``dmesg -T``, ``--time-format iso``, ``-o short-iso``) into one
event per kernel report:

* ``xid``: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.``:
  the code and the GPU's PCI bus id (``0000:3b:00``; older drivers omit ``PCI:``);
* ``sxid``: ``nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 46 ...``:
  the code, the switch's bus id and its class (``fatal`` / ``non-fatal``); the ``Data {...}``
  lines that follow one report are part of it, not reports of their own;
* ``aer``: ``pcieport 0000:00:03.1: AER: PCIe Bus Error: severity=Uncorrected (Fatal), ...``:
  the class (``fatal``, ``non-fatal``, ``corrected``) and the device that printed it. Only
  where a log has no such line (older kernels print less) does an ``AER: ... error
  received: <device>`` line count, naming the device in it.

Severity is not decided here: the rules file's Xid table does that
(:mod:`sncheck.health.fabric`). ``faults`` lists every Xid, SXid and uncorrected AER
report, so ``sncheck parse kernel-log`` exits 1 on them; corrected AER is counted only.

``read_command`` is the bounded read an SSH host runs: the journal when it has kernel
entries (``--after-cursor`` of the last run's cursor), else ``dmesg --time-format iso``
(the lines after the last run's timestamp are kept by :func:`since`), filtered to these
reports, at most :data:`MAX_LINES` lines, then an end marker, so a read cut short is told
from a quiet log.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.amd import kernel_ras

TOOL = "kernel-log"
END_MARKER = "# end of kernel log"
MAX_LINES = 2000
PATTERN = (r"NVRM: Xid|SXid|AER:|PCIe Bus Error|^-- cursor:|^dmesg:|dmesg: |Operation not permitted|"
           r"^Failed to|amdgpu.*([Hh]ardware [Ee]rror|GPU reset|timeout, signaled|RAS records)")

_TIME = re.compile(r"^(?:\[\s*(?P<mono>\d+\.\d+)\]|\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d "
                   r"\d\d:\d\d:\d\d \d{4})\]|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?"
                   r"(?:[+-]\d\d:?\d\d|Z)?))\s*")
_BUS = r"(?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?"
_XID = re.compile(rf"NVRM: Xid \({_BUS}\): (?P<code>\d+)(?:,\s*(?P<rest>.*))?")
_SXID = re.compile(rf"SXid \({_BUS}\): (?P<code>\d+)(?:,\s*(?P<rest>.*))?")
_DEVICE = re.compile(r"(?:^|\s)(?:[\w.-]+ )?(?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.[0-7]: ")
_AER_DETAIL = re.compile(r"PCIe Bus Error: severity=(?P<sev>Uncorrected \((?:Fatal|Non-Fatal)\)|Uncorrectable|"
                         r"Corrected|Uncorrected)", re.I)
_AER_RECEIVED = re.compile(r"AER: (?:Multiple )?(?P<sev>Uncorrected \((?:Fatal|Non-Fatal)\)|Corrected) error "
                           r"(?:message )?received: (?:id=\w+|(?P<src>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:"
                           r"[0-9a-fA-F]{2})(?:\.[0-7])?)", re.I)
_CURSOR = re.compile(r"^-- cursor: (\S+)")
_DENIED = re.compile(r"Operation not permitted|Permission denied|read kernel buffer failed|not permitted", re.I)


def bus_id(text: str | None) -> str | None:
    """A PCI address as ``dddd:bb:dd`` (lower case, 4-digit domain, no function): the
    form Xid lines print, to compare with ``nvidia-smi -q``'s ``00000000:3B:00.0``."""
    if not text:
        return None
    m = re.search(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})", text)
    if not m:
        return None
    return f"{m.group(1)[-4:]}:{m.group(2)}:{m.group(3)}".lower()


def _aer_class(sev: str) -> str:
    s = sev.lower()
    if "corrected" == s:
        return "corrected"
    return "non-fatal" if "non-fatal" in s else "fatal"


def parse_kernel_log(text: str) -> dict[str, Any]:
    """``dmesg`` / ``journalctl -k`` text -> its Xid, SXid and AER events (see the module)."""
    events: list[dict[str, Any]] = []
    errors: list[str] = []
    received: list[dict[str, Any]] = []
    cursor = last_time = None
    cursor_lost = False
    last_amd: dict[str, Any] | None = None  # the amdgpu event an ACA register or total line continues
    lines = 0
    ended = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line == END_MARKER:
            ended = True
            continue
        if line.startswith("# source:") or line.startswith("# "):
            continue  # the read command's own notes
        if m := _CURSOR.match(line):
            cursor = m.group(1)
            continue
        lines += 1
        t = _TIME.match(line)
        when = (t.group("iso") or t.group("ctime") or t.group("mono")) if t else None
        if t and t.group("iso"):
            last_time = t.group("iso")
        body = line[t.end():] if t else line
        if m := _XID.search(body):
            events.append({"source": "xid", "code": int(m.group("code")), "bus_id": bus_id(m.group("bus")),
                           "class": None, "time": when, "text": body[:300]})
        elif m := _SXID.search(body):
            rest = (m.group("rest") or "").strip()
            if re.match(r"Data\s*\{|Severity \d+ Engine instance", rest):
                continue  # the register dump and engine lines of the report just read
            klass = "fatal" if re.match(r"fatal\b", rest, re.I) else "non-fatal" if re.match(r"non-fatal", rest, re.I) \
                else None
            events.append({"source": "sxid", "code": int(m.group("code")), "bus_id": bus_id(m.group("bus")),
                           "class": klass, "time": when, "text": body[:300]})
        elif m := _AER_DETAIL.search(body):
            dev = _DEVICE.search(body)
            events.append({"source": "aer", "code": None, "bus_id": bus_id(dev.group("dev")) if dev else None,
                           "class": _aer_class(m.group("sev")), "time": when, "text": body[:300]})
        elif m := _AER_RECEIVED.search(body):
            src = m.group("src")
            if not src:
                dev = _DEVICE.search(body)
                src = dev.group("dev") if dev else None
            received.append({"source": "aer", "code": None, "bus_id": bus_id(src),
                             "class": _aer_class(m.group("sev")), "time": when, "text": body[:300]})
        elif (e := kernel_ras.event(body, last_amd)) is not None:
            e.update(bus_id=bus_id(e["bus_id"]), time=when, text=body[:300])  # dddd:bb:dd, as an Xid's
            events.append(e)
            last_amd = e
        elif body.startswith("Failed to seek"):  # journalctl: the last run's cursor is gone (rotated)
            cursor_lost = True
            errors.append(f"journalctl: {body[:200]} (the next run reads this boot's whole log)")
        elif body.startswith("dmesg:") or body.startswith("Failed to") or _DENIED.search(body):
            errors.append(f"the kernel log cannot be read: {body[:200]}")
    if not any(e["source"] == "aer" for e in events):
        events += received  # an older kernel: the 'error received' lines are all there is
    if text.strip() and not lines and not ended and cursor is None:
        raise ParseError("no kernel log lines and no end marker", tool=TOOL)
    faults = [describe(e) for e in events if is_fault(e)]
    return {"tool": TOOL, "events": events, "lines": lines, "cursor": cursor, "last_time": last_time,
            "complete": ended, "cursor_lost": cursor_lost, "faults": faults, "errors": errors}


def is_fault(e: dict[str, Any]) -> bool:
    """Whether ``sncheck parse`` exits 1 on the event: all but corrected AER and the amdgpu
    events that are counts only (correctable errors and their bank dumps)."""
    if e["source"] == "aer":
        return e["class"] != "corrected"
    if e["source"] == "amdgpu":
        return kernel_ras.is_fault(e)
    return True


def describe(e: dict[str, Any]) -> str:
    if e["source"] == "amdgpu":
        return kernel_ras.describe(e)
    where = f" on {e['bus_id']}" if e.get("bus_id") else ""
    if e["source"] == "aer":
        return f"PCIe AER {e['class']} error{where}"
    what = "Xid" if e["source"] == "xid" else "SXid"
    klass = f" ({e['class']})" if e.get("class") else ""
    return f"{what} {e['code']}{klass}{where}"


def since(parsed: dict[str, Any], after_time: str | None) -> dict[str, Any]:
    """``parsed`` with only the events after ``after_time`` (ISO, from the last read of a
    dmesg without a journal). Events without an ISO time are kept: they cannot be placed."""
    key = _iso_key(after_time) if after_time else None
    if key is None:  # no last read, or one that is not an ISO time (a hand-edited cursor file): keep all
        return parsed
    kept = [e for e in parsed["events"] if not ((t := _iso_key(e["time"]) if e.get("time") else None) and t <= key)]
    return {**parsed, "events": kept, "faults": [describe(e) for e in kept if is_fault(e)]}


def _iso_key(text: str) -> str | None:
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,](\d+))?", text)
    return f"{m.group(1)}.{(m.group(2) or '').ljust(9, '0')}" if m else None


def read_command(cursor: str | None = None) -> str:
    """The shell line an SSH host runs (see the module); ``cursor`` from the last run."""
    after = f" --after-cursor={shlex.quote(cursor)}" if cursor else ""
    pat = shlex.quote(PATTERN)
    return ("if [ -n \"$(journalctl -k -n 1 -q --no-pager 2>/dev/null)\" ]; then "
            "echo '# source: journalctl -k'; "
            f"journalctl -k -o short-iso --no-pager --show-cursor{after} 2>&1 | grep -E {pat} | tail -n {MAX_LINES}; "
            "else echo '# source: dmesg'; "
            f"dmesg --time-format iso 2>&1 | grep -E {pat} | tail -n {MAX_LINES}; fi; "
            f"echo {shlex.quote(END_MARKER)}")


def evidence_command(words: tuple[str, ...]) -> str:
    """The kernel log lines an evidence bundle keeps for a finding on a host: the reports
    :data:`PATTERN` reads, plus every line naming an accelerator driver (``words``: each
    vendor plug-in's ``kernel_log_words``), the last 200, bounded; a host that does not let
    us read the log says so in the text."""
    pat = shlex.quote("|".join(("AER", "not permitted", *(re.escape(w) for w in words))))
    return ("(dmesg --ctime 2>/dev/null || dmesg 2>&1 || echo 'dmesg: not permitted') "
            f"| grep -E {pat} | tail -n 200")
