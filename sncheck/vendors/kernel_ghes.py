"""APEI GHES firmware-first error records in the kernel log, read by the ``kernel-log`` view
(:mod:`sncheck.vendors.kernel_log` asks :func:`event` about every line, its time stripped).

Where the platform's firmware handles an error first (HEST/GHES: PCIe on most servers, memory
ECC on many), the kernel prints the firmware's Common Platform Error Record. Grammar (Linux
``drivers/acpi/apei/ghes.c`` ``__ghes_print_estatus``, ``drivers/firmware/efi/cper.c``
``cper_estatus_print`` / ``cper_estatus_print_section`` / ``cper_print_pcie`` /
``cper_print_mem`` / ``cper_print_proc_generic``): every line of one record starts
``{SEQ}[Hardware Error]: `` (SEQ: ghes.c's record counter, the same on every line of a
record, so records of two CPUs interleaved stay apart), each nesting level one blank more:

- ``Hardware error from APEI Generic Hardware Error Source: N`` (the record's first line);
- ``It has been corrected by h/w and requires no further action`` (corrected records only);
- ``event severity: S``: S ``recoverable`` | ``fatal`` | ``corrected`` | ``info`` | ``unknown``
  (``cper_severity_str``);
- per section: (ACPI 6.x v3 sections) ``[im]precise tstamp: YYYY-MM-DD hh:mm:ss``;
  `` Error K, type: S``; `` fru_id: GUID``; `` fru_text: TEXT``; ``  section_type: T`` with T
  ``general processor error``, ``memory error``, ``PCIe error``, ``ARM processor error``,
  ``IA32/X64 processor error``, ``Firmware Error Record Reference``, ``CXL Protocol Error``,
  else ``section type: unknown, GUID`` with ``section length: 0x..`` and a hex dump;
- PCIe (``cper_print_pcie``): ``port_type: N, NAME`` (``PCIe end point``, ``root port``,
  ``upstream switch port``, ``downstream switch port``...), ``version: M.m``, ``command:
  0xCCCC, status: 0xSSSS``, ``device_id: SSSS:BB:DD.F``, ``slot: N``, ``secondary_bus: 0xBB``,
  ``vendor_id: 0xVVVV, device_id: 0xDDDD``, ``class_code: CCCCCC``, ``serial number: 0x..,
  0x..``, ``bridge: secondary_status: 0x.., control: 0x..``, and for a fatal section with AER
  info ``aer_uncor_status: 0x%08x, aer_uncor_mask: 0x%08x``, ``aer_uncor_severity: 0x%08x``,
  ``TLP Header: %08x %08x %08x %08x``;
- memory (``cper_print_mem``): ``error_status: 0x%016llx`` (from 5.x: ``error_status: TEXT
  (0x%016llx)``, ``cper_mem_err_status_str``), ``physical_address: 0x..``,
  ``physical_address_mask: 0x..``, the location (``cper_mem_err_location``: ``node:N card:N
  module:N rank:N bank:N bank_group:N bank_address:N device:N row:N column:N bit_position:N
  requestor_id:0x.. responder_id:0x.. target_id:0x.. chip_id:N``; older kernels ``node: N
  card: N ...``), ``error_type: N, NAME`` (``single-bit ECC``, ``multi-bit ECC``, ``scrub
  uncorrected error``...), ``DIMM location: BANK DEVICE`` or ``DIMM location: not present. DMI
  handle: 0x....``;
- processor (``cper_print_proc_generic``, ``cper-x86.c``, ``cper-arm.c``): ``name: value``
  lines (``processor_type``, ``error_type``, ``operation``, ``flags``, ``IP``...) and bit-name
  lines: kept under ``fields`` by name, not judged apart.

The AER driver decodes a PCIe section's AER registers after the record (``aer.c``
``cper_print_aer``, through ``aer_recover_queue``): ``DEV: AER: aer_status: 0x%08x, aer_mask:
0x%08x``, the bit lines, ``AER: aer_layer=L, aer_agent=A``, ``AER: aer_uncor_severity:
0x%08x``, the TLP header. Those lines are the same error's: they fill the record's section of
that device (``aer_status``, ``aer_mask``, ``bits``, ``aer_layer``, ``aer_agent``), not a
report of their own.

Events: one ``ghes`` event per section (a record cut before its first section: one for the
record), ``class`` the section's severity word (else the record's), ``kind`` (``pcie``,
``memory``, ``processor``, ``ia32-x64``, ``arm``, ``firmware``, ``cxl``, ``unknown``; None before
the section_type line), ``seq``, ``source_id``, ``record_severity``, ``section``, ``section_type``,
and the values above under their printed names; a PCIe section names its device (``port``
``SSSS:BB:DD.F``, ``bus_id`` ``SSSS:BB:DD``). ``fatal``, ``recoverable`` and ``unknown`` are
faults (``sncheck parse`` exits 1); ``corrected`` and ``info`` are counted. The rules file's
kernel-log policy (source ``ghes``) judges each by ``KIND-CLASS`` (``memory-corrected``), then
by its class.
"""

from __future__ import annotations

import re
from typing import Any

PATTERN = r"\[Hardware Error\]"  # every line of a record (the AER decode after it: kernel_aer's 'AER:')
_LINE = re.compile(r"^\{(?P<seq>\d{1,10})\}\[Hardware Error\]: ?(?P<rest>.*)$")
_HEAD = re.compile(r"^Hardware error from APEI Generic Hardware Error Source: (\d{1,10})$")
_SEVERITY = re.compile(r"^event severity: (\w+)$")
_SECTION = re.compile(r"^Error (\d{1,4}), type: (\w+)$")
_TYPE = re.compile(r"^section[_ ]type: (.+?)$")
_TSTAMP = re.compile(r"^((?:im)?precise) tstamp: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$")
_FIELD = re.compile(r"^([A-Za-z][\w ./-]{0,40}?):\s*(.*)$")
_KINDS = {"PCIe error": "pcie", "memory error": "memory", "general processor error": "processor",
          "IA32/X64 processor error": "ia32-x64", "ARM processor error": "arm",
          "Firmware Error Record Reference": "firmware", "CXL Protocol Error": "cxl"}
KINDS = (*_KINDS.values(), "unknown")
SEVERITIES = ("fatal", "recoverable", "corrected", "info", "unknown")
_HEX = r"0x[0-9a-fA-F]+"
_PCIE = {  # cper_print_pcie: printed name -> (pattern of its value, the names its groups are kept under)
    "port_type": (r"(\d+), (.+)", ("port_type", "port_type_name")),
    "version": (r"(\d+\.\d+)", ("version",)),
    "command": (rf"({_HEX}), status: ({_HEX})", ("command", "status")),
    "device_id": (r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])", ("port",)),
    "slot": (r"(\d+)", ("slot",)),
    "secondary_bus": (rf"({_HEX})", ("secondary_bus",)),
    "vendor_id": (rf"({_HEX}), device_id: ({_HEX})", ("vendor_id", "device_id")),
    "class_code": (r"([0-9a-fA-F]{6})", ("class_code",)),
    "serial number": (rf"({_HEX}), ({_HEX})", ("serial_lower", "serial_upper")),
    "bridge": (rf"secondary_status: ({_HEX}), control: ({_HEX})", ("bridge_secondary_status", "bridge_control")),
    "aer_uncor_status": (rf"({_HEX}), aer_uncor_mask: ({_HEX})", ("aer_uncor_status", "aer_uncor_mask")),
    "aer_uncor_severity": (rf"({_HEX})", ("aer_uncor_severity",)),
    "TLP Header": (r"([0-9a-fA-F]{8}(?: [0-9a-fA-F]{8}){3})", ("tlp_header",)),
}
_MEMORY = {  # cper_print_mem
    "error_status": (rf"(?:(.+?) \()?({_HEX})\)?", ("error_status_name", "error_status")),
    "physical_address": (rf"({_HEX})", ("physical_address",)),
    "physical_address_mask": (rf"({_HEX})", ("physical_address_mask",)),
    "error_type": (r"(\d+), (.+)", ("error_type", "error_type_name")),
    "DIMM location": (r"(.+?)", ("dimm",)),
}
_LOCATION_KEYS = ("node", "card", "module", "rank", "bank", "bank_group", "bank_address", "device", "row", "column",
                  "bit_position", "requestor_id", "responder_id", "target_id", "chip_id")
_LOCATION = re.compile(rf"(?:^|(?<= ))({'|'.join(_LOCATION_KEYS)}): ?(0x[0-9a-fA-F]+|-?\d+)(?= |$)")
_INTS = ("port_type", "slot", "error_type")
# the AER driver's decode of a firmware-first PCIe section (aer.c cper_print_aer)
_DEV = r"(?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
# each line: 'DEV: ' then what it says (the bit and TLP lines without 'AER: ' on some kernels)
_AER = {name: re.compile(rf"(?:^|\s){_DEV}:\s+{what}\s*$") for name, what in (
    ("status", rf"AER: aer_status: ({_HEX}), aer_mask: ({_HEX})"),
    # (words and the blanks between them as disjoint runs: no lazy match before a '\s*$', which
    # backtracked over a run of blanks in cubic time on a hostile line)
    ("layer", r"AER: aer_layer=([^,]+), aer_agent=(\S+(?:\s+\S+)*)"),
    ("uncor", rf"AER: aer_uncor_severity: ({_HEX})"),
    ("bit", r"(?:AER:\s+)?\[\s*(?P<bit>\d{1,2})\] (?P<name>\S+(?:\s+\S+)*)"),  # '(First)' in the name's tail
    ("tlp", r"(?:AER:\s+)?(?:aer_tlp_header|TLP Header): (?P<h>[0-9a-fA-Fx]+(?: +[0-9a-fA-Fx]+)*)"))}


def state() -> dict[str, Any]:
    """What :func:`event` keeps between lines: each record's events by its sequence number,
    and the section whose AER decode the lines after an ``aer_status`` line continue."""
    return {"records": {}, "decode": None, "by_port": {}}


def event(body: str, st: dict[str, Any]) -> dict[str, Any] | None:
    """The ``ghes`` event a line starts (a record's first line, a section after its first);
    ``{}`` for a line that continues one (a record's or a section's value, the AER decode of
    a section's device); None for a line that is neither."""
    m = _LINE.match(body)
    if m is None:
        return _decode(body, st)
    # (another CPU's record line between a decode's lines leaves the decode open: each line is
    # one printk, the decode runs later on a workqueue, and its lines name their device)
    seq, rest = int(m.group("seq")), m.group("rest").strip()
    records: dict[int, list[dict[str, Any]]] = st["records"]
    if h := _HEAD.match(rest):
        records[seq] = [_record(seq, int(h.group(1)))]
        return records[seq][0]
    events = records.get(seq)
    if events is None:  # a record whose first line the log does not hold (an excerpt, a ring buffer wrapped)
        first = {**_record(seq, None), "head_missing": True}
        records[seq] = events = [first]
        if s := _SECTION.match(rest):  # its first line held is a section's: that section's severity
            first.update(section=int(s.group(1)), **{"class": s.group(2)})
        else:
            _value(first, events, rest)
            _at_port(st, first)
        return first
    last = events[-1]
    if s := _SECTION.match(rest):
        if last["section"] is None and len(events) == 1:  # the record's first section: its event already stands
            last.update(section=int(s.group(1)), **{"class": s.group(2)})
            return {}
        new = {k: v for k, v in events[0].items() if k in ("source", "code", "seq", "source_id", "record_severity",
                                                             "corrected_note", "head_missing")}
        new.update(bus_id=None, section=int(s.group(1)), section_type=None, kind=None, fields={},
                   **{"class": s.group(2)})
        if "pending_tstamp" in last:  # a v3 section's timestamp comes before its Error line
            new["tstamp"] = last.pop("pending_tstamp")
        events.append(new)
        return new
    _value(last, events, rest)
    _at_port(st, last)
    return {}


def _at_port(st: dict[str, Any], e: dict[str, Any]) -> None:
    """The newest section at its device: the one the AER driver's decode lines continue."""
    if e.get("port"):
        st["by_port"][e["port"]] = e


def _record(seq: int, source_id: int | None) -> dict[str, Any]:
    return {"source": "ghes", "code": None, "bus_id": None, "class": None, "seq": seq, "source_id": source_id,
            "record_severity": None, "corrected_note": False, "section": None, "section_type": None, "kind": None,
            "fields": {}}


def _value(e: dict[str, Any], events: list[dict[str, Any]], rest: str) -> None:
    """One value line of a record into its newest event (see the module)."""
    if rest == "It has been corrected by h/w and requires no further action":
        for x in events:
            x["corrected_note"] = True
        return
    if m := _SEVERITY.match(rest):
        for x in events:
            x["record_severity"] = m.group(1)
            if x["class"] is None:
                x["class"] = m.group(1)
        return
    if m := _TSTAMP.match(rest):
        e["pending_tstamp" if e["section"] is not None else "tstamp"] = m.group(2)  # the next section's
        return
    if m := _TYPE.match(rest):
        text = m.group(1)
        e["section_type"] = text
        e["kind"] = _KINDS.get(text, "unknown")
        if text.startswith("unknown, "):
            e["section_guid"] = text.removeprefix("unknown, ")
        return
    table = _PCIE if e["kind"] == "pcie" else _MEMORY if e["kind"] == "memory" else {}
    if e["kind"] == "memory" and rest.split(":")[0] in _LOCATION_KEYS and (loc := _LOCATION.findall(rest)):
        e["location"] = {k: v.lower() if v.startswith("0x") else int(v) for k, v in loc}  # ids in hex, as printed
        return
    if m := _FIELD.match(rest):
        name, value = m.group(1), m.group(2).strip()
        if name in ("fru_id", "fru_text"):
            e[name] = value
            return
        if name in table:
            pattern, keys = table[name]
            if v := re.fullmatch(pattern, value):
                for k, g in zip(keys, v.groups()):
                    if g is not None:
                        e[k] = int(g) if k in _INTS else g.lower() if g.startswith("0x") else g
                if name == "vendor_id" and "device_id" in e:  # as the AER reports' vendor_device
                    e["vendor_device"] = f"{e['vendor_id'][2:]}:{e['device_id'][2:]}"
                if name == "device_id" and "port" in e:
                    e["port"] = e["port"].lower()
                    e["bus_id"] = e["port"][:10]
                return
        e["fields"][name] = value


def _decode(body: str, st: dict[str, Any]) -> dict[str, Any] | None:
    """The AER driver's decode of a firmware-first PCIe section: ``{}`` for its lines where the
    log holds the section of that device; None for any other line."""
    if m := _AER["status"].search(body):
        e = st["by_port"].get(m.group("dev").lower())  # the newest section at that device, undecoded
        if e is not None and "aer_status" not in e:
            e.update(aer_status=m.group(2).lower(), aer_mask=m.group(3).lower(), bits=[])
            st["decode"] = e
            return {}
        st["decode"] = None
        return None
    e = st["decode"]
    if e is None:
        return None
    if (m := _AER["bit"].search(body)) and m.group("dev").lower() == e["port"]:
        name = m.group("name")
        first = name.endswith("(First)")
        e["bits"].append({"bit": int(m.group("bit")), "name": name.removesuffix("(First)").rstrip(), "first": first})
        return {}
    if (m := _AER["layer"].search(body)) and m.group("dev").lower() == e["port"]:
        e.update(aer_layer=m.group(2).strip(), aer_agent=m.group(3).strip())
        return {}
    if (m := _AER["uncor"].search(body)) and m.group("dev").lower() == e["port"]:
        e["aer_uncor_severity"] = m.group(2).lower()
        return {}
    if (m := _AER["tlp"].search(body)) and m.group("dev").lower() == e["port"]:
        e["tlp_header"] = m.group("h").strip()
        return {}
    st["decode"] = None
    return None


def finish(events: list[dict[str, Any]]) -> None:
    """Drop the parse's own bookkeeping from the events it made."""
    for e in events:
        if e.get("source") == "ghes":
            e.pop("pending_tstamp", None)


def is_fault(e: dict[str, Any]) -> bool:
    """A fatal, recoverable (uncorrected) or unknown-severity record is a fault; corrected and
    informational ones are counted."""
    return e.get("class") not in ("corrected", "info")


def describe(e: dict[str, Any]) -> str:
    what = e.get("section_type") or "hardware error record"
    where = f" on {e['port']}" if e.get("port") else f" at {e['physical_address']}" if e.get("physical_address") else ""
    extra = f" ({e['error_type_name']})" if e.get("error_type_name") else ""
    return f"APEI firmware-first {e.get('class') or 'unknown'} {what}{where}{extra}"
