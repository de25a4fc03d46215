"""Parse ``hccn_tool`` views (the RoCE NIC of each NPU), one function per view
(:mod:`.sweep` runs one view on every device).

``parse_net_health`` -> ``{"net_health": "Success" | "Init" | "Socket fail" | ...}``;
``parse_link`` -> ``{"link": "UP" | "DOWN"}``; ``parse_fec`` -> ``{"fec": "rs FEC mode"}``;
``parse_optical`` -> ``{"present": "present", "values": {"Rx Power0": 1.0189, ...}
(mW, mV, C, dB as numbers), "thresholds": {"RxPower Low": 0.1445, ...}, "flags":
{"Rx Los Flag": 255, ...}}``; ``parse_stat`` -> counters; ``parse_link_stat`` ->
``{"link_up_count": 2, "changes": [["Tue Jun  6 16:32:12 2023", "LINK UP"], ...]}``;
``parse_lldp`` -> ``{"tlvs": {"Port ID TLV": ["Ifname: 400GE1/1/20:2"], ...}}``;
``parse_ip`` / ``parse_route`` / ``parse_status`` / ``parse_hw_stats`` / ``parse_ping``
/ ``parse_hccn_conf`` likewise (see each function). Net health, link, FEC and optical carry
``faults``: what the run's roce_* facts fail on, so ``sncheck parse`` exits 1 on the same
output (one parser, one judgement). The grammars are in :mod:`.hccn_tool_grammar`.

hccn_tool reaches the NIC through DCMI: where DCMI cannot reach the driver it prints DCMI's
init failure instead of the view (``dcmi module initialize failed. ret is -8005``, as npu-smi
does). Every view reads that as no value, ``tool_failed`` holding the lines and ``errors``
saying the device was not measured (exit 1; the sweep's section of that device likewise)::

    {"tool": "hccn-ip", "ipaddr": null, "netmask": null,
     "tool_failed": ["dcmi module initialize failed. ret is -8005"],
     "errors": ["hccn_tool failed before printing its output (dcmi module ...): not measured"]}
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import listing
from sncheck.vendors.ascend import npu_smi
from sncheck.vendors.ascend.hccn_tool_grammar import FAILURE_LINES, LINK, NET_HEALTH, NET_HEALTH_WORDED

_NUM = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*(mW|mV|mA|C|dB|nm)?$")
_PREFIX = re.compile(r"^\[dev(?:id|ice)? \d+\]\s?")


def own_failure(text: str) -> list[str]:
    """hccn_tool's own failure lines in ``text`` (main.c prints one of cmd.c's table for a
    failing command: :data:`.hccn_tool_grammar.FAILURE_LINES`), in order."""
    return [ln for ln in (raw.strip() for raw in text.splitlines()) if ln in FAILURE_LINES]


def dcmi_failed(empty: dict[str, Any], tool: str) -> Callable[[Callable[[str], dict[str, Any]]],
                                                              Callable[[str], dict[str, Any]]]:
    """:func:`.npu_smi.dcmi_failed` with hccn_tool's own failure lines read as DCMI's are."""
    return npu_smi.dcmi_failed(empty, tool, own_failure)


def _lines(text: str) -> list[str]:
    out = []
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw.strip())
        if line and not line.startswith(("$", "/usr/", "```")) and "hccn_tool" not in line[:40]:
            out.append(line)
    return out


def _single(text: str, key: str, tool: str) -> str:
    for line in _lines(text):
        m = re.match(rf"^{key}\s*:\s*(.*)$", line, re.I)
        if m:
            return m.group(1).strip()
    raise ParseError(f"no '{key}:' line", tool=tool)


@dcmi_failed({"net_health": None, "faults": []}, "hccn_tool")
def parse_net_health(text: str) -> dict[str, Any]:
    status = _single(text, "net health status", "hccn-net-health")
    if status not in NET_HEALTH and status not in NET_HEALTH_WORDED:  # g_net_health_status is a closed table
        return {"tool": "hccn-net-health", "net_health": None, "faults": [],
                "errors": [f"net health status {status[:40]!r}: no status hccn_tool prints ({', '.join(NET_HEALTH)}): "
                           "the line cut inside its value, or edited"]}
    # what the run's roce_net_health fact fails on (checks.check_net_health), said by parse too
    return {"tool": "hccn-net-health", "net_health": status,
            "faults": [] if status == "Success" else [f"net health {status}"], "errors": []}


@dcmi_failed({"link": None, "faults": []}, "hccn_tool")
def parse_link(text: str) -> dict[str, Any]:
    status = _single(text, "link status", "hccn-link")
    if status not in LINK:  # tool_link_get_linkstatus prints UP or DOWN, nothing else
        return {"tool": "hccn-link", "link": None, "faults": [],
                "errors": [f"link status {status[:40]!r}: no status hccn_tool prints ({', '.join(LINK)}): the line cut "
                           "inside its value, or edited"]}
    return {"tool": "hccn-link", "link": status, "faults": [] if status == "UP" else [f"link {status}"], "errors": []}


@dcmi_failed({"fec": None, "faults": []}, "hccn_tool")
def parse_fec(text: str) -> dict[str, Any]:
    mode = _single(text, "fec mode", "hccn-fec")
    return {"tool": "hccn-fec", "fec": mode, "faults": [] if mode.lower().startswith("rs") else [f"fec {mode}"],
            "errors": []}


def optical_faults(p: dict[str, Any]) -> list[str]:
    """What an optical module's own readings show wrong: not present, a lane's Tx/Rx power
    outside the module's own thresholds (mW), a LoS/LoL flag set (the run's roce_optical)."""
    problems = []
    if p.get("present") not in (None, "present"):
        problems.append(f"module {p['present']}")
    th, vals = p.get("thresholds") or {}, p.get("values") or {}
    for prefix, lo_key, hi_key in (("Rx Power", "RxPower Low", "RxPower High"), ("Tx Power", "TxPower Low", "TxPower High")):
        for k, v in vals.items():
            if k.startswith(prefix) and isinstance(v, float):
                if lo_key in th and v < th[lo_key]:
                    problems.append(f"{k} {v:g} mW < {th[lo_key]:g}")
                if hi_key in th and v > th[hi_key]:
                    problems.append(f"{k} {v:g} mW > {th[hi_key]:g}")
    problems += [f"{k} 0x{v:x}" for k, v in (p.get("flags") or {}).items() if v]
    return problems


_OPTICAL_KEY = re.compile(r"^(?:[TR]x (?:Power|Bias)\d?|Vcc|temperature|xsfp .*|(?:Host|Media) SNR Lane\d)$", re.I)


@dcmi_failed({"present": None, "values": {}, "thresholds": {}, "flags": {}, "faults": []}, "hccn_tool")
def parse_optical(text: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    thresholds: dict[str, float] = {}
    flags: dict[str, int | None] = {}  # None: a flag that is not hex
    present = None
    errors: list[str] = []
    for line in _lines(text):
        if listing.is_elision(line):
            continue  # a reporter's '...': listing.elided says so, once
        m = re.match(r"^([A-Za-z][A-Za-z0-9 ]*?)\s*:\s*(.*)$", line)
        if not m:
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        if not value:
            continue  # the block's title line 'optical info:'; any other bare key is no line of the tool's (prose)
        if key == "present":
            present = value
        elif key.endswith(" Thres"):
            n = _NUM.match(value)
            if n:
                thresholds[key[: -len(" Thres")]] = float(n.group(1))
        elif key.endswith("Flag"):
            try:
                flags[key] = int(value, 16)
            except ValueError:
                flags[key] = None
        else:
            n = _NUM.match(value)
            values[key] = float(n.group(1)) if n else value
    if present is None and not (thresholds or flags or any(_OPTICAL_KEY.match(k) for k in values)):
        # another tool's 'key: value' lines (nvidia-smi -q, amd-smi static) are no module's readings
        raise ParseError("no optical module fields (present, Tx/Rx Power, thresholds, flags)", tool="hccn-optical")
    if present == "present" and "Rx LoL Flag" not in flags:
        # a present module's readings run through its four LoS/LoL flags (SNR lines may follow)
        errors.append("no 'Rx LoL Flag' line after the module's readings: output cut short")
    out = {"tool": "hccn-optical", "present": present, "values": values, "thresholds": thresholds,
           "flags": flags, "errors": errors}
    out["faults"] = optical_faults(out)
    return out


@dcmi_failed({"counters": {}}, "hccn_tool")
def parse_stat(text: str) -> dict[str, Any]:
    counters = {}
    for line in _lines(text):
        m = re.match(r"^(\w+):(\d+)$", line)
        if m:
            counters[m.group(1)] = int(m.group(2))
    if not counters:
        raise ParseError("no 'name:count' lines", tool="hccn-stat")
    return {"tool": "hccn-stat", "counters": counters, "errors": []}


@dcmi_failed({"current_time": None, "link_up_count": None, "link_down_count": None, "changes": []}, "hccn_tool")
def parse_link_stat(text: str) -> dict[str, Any]:
    count = down = now = None
    records = False
    changes = []
    for line in _lines(text):
        if m := re.match(r"^current time\s*:\s*(.*\S)", line):
            now = m.group(1)
        elif m := re.match(r"^link up count\s*:\s*(\d+)", line):
            count = int(m.group(1))
        elif m := re.match(r"^link down count\s*:\s*(\d+)", line):
            down = int(m.group(1))
        elif re.match(r"^link change records\s*:", line):
            records = True
        elif m := re.match(r"^(\w{3} \w{3}\s+\d+ [\d:]+ \d{4})\s+(LINK \w+)$", line.strip()):
            changes.append([m.group(1), m.group(2)])
    if count is None and not changes:
        raise ParseError("no 'link up count' line", tool="hccn-link-stat")
    # the records' count is stated nowhere (older versions print no down count, and the
    # records are capped): the header through 'link change records :' is what must be there
    errors = [] if records else ["no 'link change records :' line: output cut short"]
    return {"tool": "hccn-link-stat", "current_time": now, "link_up_count": count, "link_down_count": down,
            "changes": changes, "errors": errors}


@dcmi_failed({"tlvs": {}}, "hccn_tool")
def parse_lldp(text: str) -> dict[str, Any]:
    tlvs: dict[str, list[str]] = {}
    cur = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.strip().startswith("$"):
            continue
        if line.strip().endswith("TLV") and not line.startswith((" ", "\t")):
            cur = line.strip()
            tlvs[cur] = []
        elif cur:
            tlvs[cur].append(line.strip())
    if not tlvs:
        raise ParseError("no LLDP TLVs", tool="hccn-lldp")
    # an LLDPDU ends with its End of LLDPDU TLV (IEEE 802.1AB): without it the output was cut
    cut = [] if "End of LLDPDU TLV" in tlvs else ["no 'End of LLDPDU TLV': output cut short"]
    return {"tool": "hccn-lldp", "tlvs": tlvs, "errors": cut}


@dcmi_failed({"ipaddr": None, "netmask": None}, "hccn_tool")
def parse_ip(text: str) -> dict[str, Any]:
    f = dict(re.findall(r"^\s*(ipaddr|netmask):(\S+)", text, re.M))
    if not f:
        raise ParseError("no ipaddr/netmask", tool="hccn-ip")
    # hccn_tool prints the netmask after the address, always
    cut = [] if "netmask" in f else ["no 'netmask:' line after the address: output cut short"]
    return {"tool": "hccn-ip", "ipaddr": f.get("ipaddr"), "netmask": f.get("netmask"), "errors": cut}


@dcmi_failed({"routes": []}, "hccn_tool")
def parse_route(text: str) -> dict[str, Any]:
    """Rows of eight cells under route(8)'s header only: another tool's table of eight cells
    (dcgmi's, nccl-tests') is no routing table."""
    routes: list[dict[str, str]] = []
    header = False
    for line in _lines(text):
        cells = line.split()
        if cells == ["Destination", "Gateway", "Genmask", "Flags", "Metric", "Ref", "Use", "Iface"]:
            header = True
        elif header and len(cells) == 8:
            routes.append(dict(zip(("destination", "gateway", "genmask", "flags", "metric", "ref", "use", "iface"), cells)))
    if not routes:
        raise ParseError("no routing table rows under route's 'Destination Gateway Genmask ...' header",
                         tool="hccn-route")
    return {"tool": "hccn-route", "routes": routes, "errors": []}


_SETTING = re.compile(r"^([A-Z][\w -]*?):(.*)$")
_SETTINGS_FAILED = re.compile(r"^(?:Netdev status:\s*)?(?:Cannot get|No data available)")


@dcmi_failed({"device": None, "speed_Mbps": None, "duplex": None, "link_detected": None, "supported_fec": None, "advertised_fec": None, "settings": {}, "faults": []}, "hccn_tool")
def parse_status(text: str) -> dict[str, Any]:
    """``hccn_tool -i N -status -g``: 'Netdev status:' and the device's ``ethtool ethN``
    (``Settings for ethN:``, a ``key: value`` line a setting, link modes continued on
    indented lines, ``Link detected: yes|no`` last). The grammar is in :mod:`.hccn_tool_grammar`."""
    settings: dict[str, str] = {}
    errors: list[str] = []
    device = None
    last = None
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw.strip())
        if not line or line.startswith(("$", "/usr/", "```")) or "hccn_tool" in line[:40]:
            continue
        line = line.split(" #", 1)[0].rstrip()  # a reporter's '# note' (ethtool prints no '#')
        if _SETTINGS_FAILED.match(line):
            errors.append(f"ethtool could not read the port ('{line[:120]}'): not measured")
            continue
        if listing.is_elision(line):
            continue  # a reporter's '...' (not a link mode continued): listing.elided says so, once
        if m := re.match(r"^(?:Netdev status:\s*)?Settings for (\S+?):$", line):
            device = m.group(1)
            continue
        m = _SETTING.match(line)
        if m and device is not None:
            last = m.group(1)
            settings[last] = m.group(2).strip()
        elif device is not None and last is not None and settings.get(last) is not None:
            settings[last] = f"{settings[last]} {line}".strip()  # a link mode list continued
    if device is None:
        raise ParseError("no 'Settings for <dev>:' line", tool="hccn-status")
    speed = re.fullmatch(r"(\d+)Mb/s", settings.get("Speed", ""))
    link = settings.get("Link detected")
    if link is None:
        errors.append("no 'Link detected:' line (ethtool prints it last): output cut short")
    # the port is down: what hccn-link's 'link status: DOWN' says, said here too
    faults = ["link not detected"] if link == "no" else []
    return {"tool": "hccn-status", "device": device, "speed_Mbps": int(speed.group(1)) if speed else None,
            "duplex": settings.get("Duplex"), "link_detected": {"yes": True, "no": False}.get(link or ""),
            "supported_fec": settings["Supported FEC modes"].split() if "Supported FEC modes" in settings else None,
            "advertised_fec": settings["Advertised FEC modes"].split() if "Advertised FEC modes" in settings else None,
            "settings": settings, "faults": faults, "errors": errors}


@dcmi_failed({"counters": {}}, "hccn_tool")
def parse_hw_stats(text: str) -> dict[str, Any]:
    # a whole line '[devid N] name: count': '\s' would run from another tool's ']' over the
    # newline into its next line (amd-smi static's 'SUBVENDOR_ID: 0x1002' read as 0)
    c = {k: int(v) for k, v in re.findall(r"^[ \t]*\[dev(?:id|ice)? \d+\][ \t]*(\w+):[ \t]*(\d+)[ \t]*$", text, re.M)}
    if not c:
        raise ParseError("no '[devid n] name: count' lines", tool="hccn-hw-stats")
    return {"tool": "hccn-hw-stats", "counters": c, "errors": []}


_PING_SUMMARY = re.compile(r"(?<!\d)(\d+) packets transmitted, (\d+) received, ([\d.]+)% packet loss")


@dcmi_failed({"sent": None, "received": None, "loss_pct": None, "times_ms": [], "faults": []}, "hccn_tool")
def parse_ping(text: str) -> dict[str, Any]:
    # (?<!\d): a match starts only where a run of digits does; without it a run of n digits
    # was tried from each of its n starts, each scanning to its end (20 KB of '0': 8.8 s).
    m = _PING_SUMMARY.search(text)
    if not m:
        raise ParseError("no ping summary", tool="hccn-ping")
    times = [float(t) for t in re.findall(r"time=([\d.]+)ms", text)]
    sent, received = int(m.group(1)), int(m.group(2))
    lost = [f"{sent - received} of {sent} packets lost"] if received < sent else []
    return {"tool": "hccn-ping", "sent": sent, "received": received, "loss_pct": float(m.group(3)),
            "times_ms": times, "faults": lost, "errors": []}


def parse_hccn_conf(text: str) -> dict[str, Any]:
    devices: dict[str, dict[str, str]] = {}
    for key, dev, value in re.findall(r"^(\w+?)_(\d+)=(\S+)", text, re.M):
        devices.setdefault(dev, {})[key] = value
    if not devices:
        raise ParseError("no key_<n>=value lines", tool="hccn-conf")
    return {"tool": "hccn-conf", "devices": devices, "errors": []}


VIEWS: dict[str, Callable[[str], dict[str, Any]]] = {
    "net_health": parse_net_health, "link": parse_link, "optical": parse_optical, "fec": parse_fec,
    "stat": parse_stat, "link_stat": parse_link_stat,
}
