"""PCIe AER reports in the kernel log, read by the ``kernel-log`` view
(:mod:`sncheck.vendors.kernel_log` asks :func:`event` about every line, its time stripped).

Grammar (Linux ``drivers/pci/pcie/aer.c``; before 4.17 ``drivers/pci/pcie/aer/aerdrv_errprint.c``),
every line prefixed by the reporting device (``pcieport 0000:00:02.0: ``, ``nvidia 0000:3b:00.0: ``):

- SEV, ``aer_error_severity_string[]``, one table (:data:`SEVERITY`) that every line below reads:
  ``"Uncorrected (Non-Fatal)", "Uncorrected (Fatal)", "Corrected"`` up to 6.7 (aerdrv_errprint.c
  from 2.6.19 on, aer.c from 4.17), ``"Uncorrectable (Non-Fatal)", "Uncorrectable (Fatal)",
  "Correctable"`` from 6.8 ("PCI/AER: Use 'Correctable' and 'Uncorrectable' spec terms for errors",
  Bjorn Helgaas, 2023-12-06: ``- pcieport 0000:00:1c.5: AER: Corrected error received: 0000:00:1c.5``
  ``+ ... AER: Correctable error received: 0000:00:1c.5``); those six alone (a bare ``Uncorrected`` is no
  severity), read in any case (review r3: a paste may change it) by every line alike;
- the receiving port's line (``aer_print_port_info``, ``aer_print_source`` from 6.16):
  ``AER: %s%s error received: id=%04x`` in 3.x-4.x (``dev_info(&dev->dev, "AER: ...")``, the
  requester id), ``%s%s error received: %04x:%02x:%02x.%d`` 4.x-6.7, ``%s%s error message
  received from %04x:%02x:%02x.%d`` from 6.8 ("PCI/AER: Decode Requester ID when no error info
  found", backported to the stable kernels with the old SEV: ``AER: Corrected error message received
  from``), ``...%d%s`` with ``found ? "" : " (no details found"`` from 6.16 ("PCI/AER: Consolidate
  Error Source ID logging in aer_isr_one_error_type()", 2025: the kernel prints no closing
  parenthesis); the first ``%s`` is ``"Multiple "`` where more errors were latched; a reporter's
  ``error received from`` (harvest 5) reads as the same;
- ``PCIe Bus Error: severity=SEV, type=LAYER, id=%04x(AGENT)`` (up to 4.x) or ``..., (AGENT)``
  (``aer_print_error``): LAYER ``Physical Layer`` | ``Data Link Layer`` |
  ``Transaction Layer``, AGENT ``Receiver ID`` | ``Requester ID`` | ``Completer ID`` |
  ``Transmitter ID``; ``type=Inaccessible, (Unregistered Agent ID)`` when the status reads 0
  (``type=Unaccessible, id=%04x(Unregistered Agent ID)`` before);
- ``  device [VVVV:DDDD] error status/mask=SSSSSSSS/MMMMMMMM``: the vendor:device and registers;
- one line per error bit set: ``   [%2d] %-22s%s``: the bit, its name (``Receiver Error``,
  ``Bad TLP``, ``Bad DLLP``, ``RELAY_NUM Rollover``, ``Replay Timer Timeout``, ``Surprise Down
  Error``, ``Completion Timeout``, ``Unsupported Request``..., from 4.17 the short names
  ``RxErr``, ``BadTLP``, ``Timeout``, ``SDES``, ``CmpltTO``, ``UnsupReq``...; ``Unknown Error
  Bit``), `` (First)`` on the First Error Pointer;
- ``  TLP Header: ...``: the header of the TLP in error;
- lines that say no detail follows the received line (``details`` false on it): ``can't find device of
  ID%04x`` (to 6.7), ``found no error details for %04x:%02x:%02x.%d`` (6.8-6.15); counted, not read:
  ``  Error of this Agent(%04x) is reported first`` / ``  Error of this Agent is reported first``.

A reporter's excerpt may cut the device prefixes (then a status, bit or TLP line continues the
report before it), join several bit lines into one, or leave out ``severity=``: read as the same.
The bit lines are the status register's: ``__aer_print_error`` prints one for each bit set in
``status & ~mask`` (``for_each_set_bit``), its name from ``aer_correctable_error_string`` or
``aer_uncorrectable_error_string``. A report whose status was read but none of its bit lines (a
paste that lost them, or put them before the header: harvest 12's ``[5 ] SDES`` above its
``PCIe Bus Error`` line) takes its bits from the status, named as the kernel's tables name them
(4.17+), ``first`` null (the First Error Pointer is not in the status) and ``from_status``.

Events: ``aer`` with ``class`` (``fatal`` | ``non-fatal`` | ``corrected``), ``bus_id`` and
``port`` (the reporting device, ``dddd:bb:dd.f``), ``type``, ``agent``, ``vendor_device``,
``status``, ``mask``, ``bits`` ([{``bit``, ``name``, ``first``}]), ``tlp_header``, and from the
``received`` line before it: ``reported_by`` (the port that received the message: the line's own
device, a root or downstream port; the ``PCIe Bus Error`` lines are printed by the device in error,
``aer_print_error(dev, ...)``) and ``multiple`` (``Multiple``: more errors latched than reported).
A ``received`` line is kept only where no ``PCIe Bus Error`` line follows (kernels that print less),
or where the kernel says none will (``details`` false: ``(no details found``, ``found no error details
for``, ``can't find device of ID``): the message is then all there is of that error, kept beside the
log's other reports.
"""

from __future__ import annotations

import re
from typing import Any

# aer.c's aer_error_severity_string, the only SEV any line prints (the module's grammar), and the class each names
SEVERITY = {"Uncorrected (Non-Fatal)": "non-fatal", "Uncorrected (Fatal)": "fatal", "Corrected": "corrected",  # to 6.7
            "Uncorrectable (Non-Fatal)": "non-fatal", "Uncorrectable (Fatal)": "fatal", "Correctable": "corrected"}
_SEV = "|".join(re.escape(sev) for sev in SEVERITY)  # read in any case, as review r3 #7 has it (a paste's case)
_CLASS = {sev.lower(): klass for sev, klass in SEVERITY.items()}
# the receiving port's verb: 'error received: ' (to 6.7), 'error message received from ' (6.8 on, stable too),
# a reporter's 'error received from ' (harvest 5)
_RECEIVED_VERBS = ("received: ", "message received from ", "received from ")
_RECEIVED_VERB = r"error (?:message )?received(?::| from) "

_DEV = r"(?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
_PREFIX = re.compile(rf"(?:^|\s)(?:[\w.-]+ )?{_DEV}: ")
_DETAIL = re.compile(rf"PCIe Bus Error: (?:severity=)?(?P<sev>{_SEV}),\s*type=(?P<type>[^,]+)(?:,\s*(?:id=\w+)?"
                     r"\(?(?P<agent>[^)]*)\)?)?", re.I)
RECEIVED = re.compile(rf"AER: (?P<multiple>Multiple )?(?P<sev>{_SEV}) {_RECEIVED_VERB}"
                      r"(?:id=\w+|(?P<src>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?))", re.I)
_STATUS = re.compile(r"device \[(?P<vd>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\] error status/mask=(?P<s>[0-9a-fA-F]{8})/"
                     r"(?P<m>[0-9a-fA-F]{8})")
_BIT = re.compile(r":\s+\[\s*(?P<bit>\d{1,2})\] (?P<name>.+?)\s*(?P<first>\(First\))?\s*$")
# a bit line whose device prefix the reporter cut, maybe with the next bits joined to it and the
# long name beside the short one: '[14] CmpltTO (Completion Timeout, First)   [18] MalfTLP'
_BARE_BIT = re.compile(r"\[\s*(?P<bit>\d{1,2})\] (?P<name>[^\[(]+?)\s*(?:\((?P<note>[^)]*)\))?\s*(?=\[\s*\d{1,2}\]|$)")
_TLP = re.compile(r"TLP Header: (?P<h>[0-9a-fA-Fx ]+?)\s*(?:\([^)]*\))?$")
# a bit line, its device prefix cut too: after a blank whatever precedes it (an iso stamp's '+00:00 ')
PATTERN = r"AER:|PCIe Bus Error|error status/mask|can.t find device of ID|(^| )\[ ?[0-9]+\] [A-Za-z]|TLP Header"


# aer.c's aer_correctable_error_string / aer_uncorrectable_error_string (4.17 on; NULL entries
# print as "Unknown Error Bit"); bits 27-31 (PCIe r6.0's) named by 6633875250b3 "PCI/AER: Support
# errors introduced by PCIe r6.0" (2025, backported to stable down to 5.15), "Unknown Error Bit" before
_CORRECTABLE = {0: "RxErr", 6: "BadTLP", 7: "BadDLLP", 8: "Rollover", 12: "Timeout", 13: "NonFatalErr",
                14: "CorrIntErr", 15: "HeaderOF"}
_UNCORRECTABLE = {0: "Undefined", 4: "DLP", 5: "SDES", 12: "TLP", 13: "FCP", 14: "CmpltTO", 15: "CmpltAbrt",
                  16: "UnxCmplt", 17: "RxOF", 18: "MalfTLP", 19: "ECRC", 20: "UnsupReq", 21: "ACSViol",
                  22: "UncorrIntErr", 23: "BlockedTLP", 24: "AtomicOpBlocked", 25: "TLPBlockedErr",
                  26: "PoisonTLPBlocked", 27: "DMWrReqBlocked", 28: "IDECheck", 29: "MisIDETLP", 30: "PCRC_CHECK",
                  31: "TLPXlatBlocked"}


# A header line whole (aer.c: aer_print_port_info / aer_isr_one_error's 'received' line, aer_print_error's
# 'PCIe Bus Error' and 'device [...] error status/mask' lines, __print_tlp_header), read after the device
# prefix and its 'AER: ' (dev_fmt, 4.20 on): each field ends where the kernel's format says
_HEADER_WHOLE = re.compile(rf"PCIe Bus Error: (?:severity=)?(?:{_SEV}),\s*type=(?:Physical Layer|Data Link Layer|"
                           r"Transaction Layer|Inaccessible|Unaccessible),\s*(?:id=[0-9a-fA-F]{4})?"
                           r"\((?:Receiver|Requester|Completer|Transmitter|Unregistered Agent) ID\)\s*$", re.I)
_WHOLE = {
    "PCIe Bus Error": _HEADER_WHOLE,
    "device [": re.compile(r"device \[[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\] error status/mask=[0-9a-fA-F]{8}/[0-9a-fA-F]{8}$"),
    "TLP Header": re.compile(r"TLP Header(?: \(Flit\))?: [0-9a-fA-F]{8}(?: [0-9a-fA-F]{8}){3}(?:\s.*)?$"),
}
_RECEIVED_WHOLE = re.compile(rf"(?:Multiple )?(?:{_SEV}) {_RECEIVED_VERB}(?:id=[0-9a-fA-F]{{4}}|"
                             r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])(?: \(no details found\)?)?$", re.I)
_RECEIVED_HEAD = re.compile(rf"(?:Multiple )?(?:{_SEV}) error", re.I)
# the kernel found no device with the error logged, so no report follows the message: 6.16's ' (no details
# found' on the received line, 6.8-6.15's 'found no error details for %04x:%02x:%02x.%d' and before it
# "can't find device of ID%04x" (find_source_device) on the line after it
_NO_DETAILS = re.compile(r"\(no details found\)?\s*$|found no error details for |can't find device of ID[0-9a-fA-F]{4}")
# what each header line begins with, for a cut before its first field ('AER: Corrected err', 'PCIe Bus Er')
_HEADS = tuple(h.lower() for h in ("PCIe Bus Error: ", "device [", "TLP Header: ", "AER: PCIe Bus Error: ", "AER: device [",
                                    "AER: TLP Header: ", *(f"AER: {many}{sev} error {verb}" for many in ("", "Multiple ")
                                                            for sev in SEVERITY for verb in _RECEIVED_VERBS)))


# the names a bit line may print: aer.c's tables before 4.17 (long) and after (short, _CORRECTABLE and
# _UNCORRECTABLE), and a bit neither names
_LONG_NAMES = ("Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover", "Replay Timer Timeout",
               "Advisory Non-Fatal", "Corrected Internal Error", "Header Log Overflow", "Undefined",
               "Data Link Protocol", "Surprise Down Error", "Poisoned TLP", "Flow Control Protocol",
               "Completion Timeout", "Completer Abort", "Unexpected Completion", "Receiver Overflow",
               "Malformed TLP", "ECRC", "Unsupported Request", "ACS Violation", "Uncorrectable Internal Error",
               "MC Blocked TLP", "AtomicOp Egress Blocked", "TLP Prefix Blocked Error", "Unknown Error Bit")
_BIT_LINE = re.compile(r"\[\s*\d{1,2}\] (?P<name>[^\[(]*?)\s*(?:\(First\))?\s*$")


def whole(line: str) -> bool | None:
    """Whether ``line`` is a whole AER line by aer.c's formats; None for a line no format starts."""
    if "pcie bus error" in line.lower():  # its device prefix may be cut off, or any text before it
        return bool(_HEADER_WHOLE.search(line))
    tail = _after_prefix(line)[1]
    aer = tail[:5].upper() == "AER: "
    body = tail[5:].strip() if aer else tail
    for head, pattern in _WHOLE.items():
        if body.startswith(head):
            return bool(pattern.match(body))
    if aer and _RECEIVED_HEAD.match(body):
        return bool(_RECEIVED_WHOLE.match(body))
    if b := _BIT_LINE.match(body):
        return b["name"] in _LONG_NAMES or b["name"] in _CORRECTABLE.values() or b["name"] in _UNCORRECTABLE.values()
    return None


def cut_short(line: str, report_open: bool = False) -> bool:
    """Whether ``line``, a log's last and without its newline, is an AER report's line cut before
    its end (the module's grammar; ``tests/test_parse_leftovers_s44.py`` cuts each header line at
    every character). Each line ends where aer.c's format ends it: the ``(AGENT)`` of ``PCIe Bus
    Error: severity=SEV, type=LAYER, (AGENT)``, the 8-digit mask of ``device [VVVV:DDDD] error
    status/mask=S/M``, the reporter's address of ``AER: SEV error received: dddd:bb:dd.f``, the
    fourth dword of ``TLP Header:``, a bit's whole name (``[ 0] RxErr``, `` (First)``); a line
    holding only the start of one after a device prefix (``AER: Corrected err``, ``PCIe Bus Er``)
    is cut too. ``report_open``: the line before was a report's and the report is not yet whole
    (:func:`unfinished`): a cut line there that is no whole AER line, its device prefix too, is
    the report's, cut."""
    if (is_whole := whole(line)) is not None:
        return not is_whole
    if report_open and line.strip():
        return True
    prefixed, tail = _after_prefix(line)
    return prefixed and bool(tail) and any(h.startswith(tail.lower()) for h in _HEADS)


def _after_prefix(line: str) -> tuple[bool, str]:
    """Whether ``line`` carries a device prefix (``_PREFIX``), and its text after it (all of it without)."""
    m = _PREFIX.search(line)
    return m is not None, (line[m.end():] if m else line).strip()


def unfinished(e: dict[str, Any] | None) -> bool:
    """Whether the AER report ``e`` has lines still to come by aer.c's order: a ``received`` line
    (the ``PCIe Bus Error`` header follows), a header with no status line (all but the
    ``Inaccessible`` form print one), a status with fewer bit lines than ``status & ~mask`` has
    bits (``__aer_print_error``: one line per bit)."""
    if e is None or e.get("source") != "aer":
        return False
    if e.get("received"):
        return e.get("details") is not False  # a message with no details found: nothing follows it
    if e.get("type") in ("Inaccessible", "Unaccessible"):
        return False
    if not e.get("status"):
        return True
    return len(e.get("bits") or []) < bin(int(e["status"], 16) & ~int(e.get("mask") or "0", 16)).count("1")


def finish(events: list[dict[str, Any]]) -> None:
    """Each report with its status read and no bit line: its bits from ``status & ~mask`` (the
    module's docstring)."""
    for e in events:
        if e.get("source") == "aer" and e.get("status") and not e.get("bits") and "bits" in e:
            set_bits = int(e["status"], 16) & ~int(e.get("mask") or "0", 16)
            names = _CORRECTABLE if e["class"] == "corrected" else _UNCORRECTABLE
            e["bits"] = [{"bit": i, "name": names.get(i, "Unknown Error Bit"), "first": None, "from_status": True}
                         for i in range(32) if set_bits >> i & 1]


_ANY_SEVERITY = re.compile(r"PCIe Bus Error: severity=(?P<sev>[^,]*),", re.I)


def foreign_severity(body: str) -> str | None:
    """The severity of a ``PCIe Bus Error: severity=SEV,`` line whose SEV is none aer.c prints
    (a bare 'Uncorrected', a paste's own word), or None: such a report is no line of the
    grammar, and reading no event from it would pass the uncorrectable bits after it."""
    m = _ANY_SEVERITY.search(body)
    return m.group("sev").strip() if m and m.group("sev").strip().lower() not in _CLASS else None


def bdf(body: str) -> str | None:
    m = _PREFIX.search(body)
    return m.group("dev").lower() if m else None


def event(body: str, last: dict[str, Any] | None) -> dict[str, Any] | None:
    """The AER event a line starts; ``{}`` for a line that continues ``last`` (the device's
    status, an error bit, the TLP header: ``last`` updated); None for a line not AER's."""
    port = bdf(body)
    if m := _DETAIL.search(body):
        return {"source": "aer", "code": None, "bus_id": port[:10] if port else None, "class": _CLASS[m.group("sev").lower()],
                "port": port, "type": m.group("type").strip(), "agent": (m.group("agent") or "").strip() or None,
                "vendor_device": None, "status": None, "mask": None, "bits": []}
    # a line without a device prefix continues the report before it (a reporter cut the prefixes)
    same = last is not None and last.get("source") == "aer" and port in (last.get("port"), None) and "bits" in last
    if same and last is not None:
        if m := _STATUS.search(body):
            last.update(vendor_device=m.group("vd").lower(), status=m.group("s").lower(), mask=m.group("m").lower())
            return {}
        if m := _BIT.search(body):
            last["bits"].append({"bit": int(m.group("bit")), "name": m.group("name"), "first": bool(m.group("first"))})
            return {}
        if port is None and (bits := list(_BARE_BIT.finditer(body.strip()))) and body.strip().startswith("["):
            last["bits"] += [{"bit": int(b["bit"]), "name": b["name"].strip(),
                              "first": "First" in (b["note"] or "")} for b in bits]
            return {}
        if m := _TLP.search(body):
            last["tlp_header"] = m.group("h").strip()
            return {}
    if last is not None and last.get("received") and _NO_DETAILS.search(body):
        last["details"] = False  # 'found no error details for ...' after the message: no report follows
        return {}
    if m := RECEIVED.search(body):
        src = m.group("src") or port
        # the port that received the message (the line's own device: a root port, a downstream port)
        # and 'Multiple': more errors were latched than this report shows (aer_print_port_info)
        return {"source": "aer", "code": None, "bus_id": src[:10].lower() if src else None,
                "class": _CLASS[m.group("sev").lower()], "port": src.lower() if src else None, "received": True,
                "reported_by": port, "multiple": bool(m.group("multiple")),
                **({"details": False} if _NO_DETAILS.search(body) else {})}
    return None


def describe(e: dict[str, Any]) -> str:
    where = f" on {e['bus_id']}" if e.get("bus_id") else ""
    bits = ", ".join(b["name"] + (" (First)" if b["first"] else "") for b in e.get("bits") or [])
    return f"PCIe AER {e['class']} error{where}" + (f" ({bits})" if bits else "")
