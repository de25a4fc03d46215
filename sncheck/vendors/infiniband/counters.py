"""InfiniBand / RoCE port error counters: ``perfquery -x``, ``ibqueryerrors`` and the
``/sys/class/infiniband/<dev>/ports/<port>/counters/*`` files.

Every view gives ``ports``: one entry per port with its counters under the sysfs names
(``symbol_error``, ``link_error_recovery``, ``link_downed``, ``port_rcv_errors``,
``port_xmit_discards``, ...: :data:`PMA_TO_SYSFS` maps perfquery's and ibqueryerrors'
names onto them). No view gives ``faults``: a port's counters count since it came up (or was
last cleared), so no value is a fault by itself. The sysfs read (``ib-counters``) is what a run
reads and judges by growth (:mod:`sncheck.health.fabric`); ``sncheck parse`` judges every one
of the three views the same way (:mod:`sncheck.cli.parse_counters`, one judgement: alone, the
value before the traffic, info; with ``--since EARLIER``, each error counter's growth against
the rules' bars), as ``sncheck fabric check --since`` judges perfquery's switch ports by growth.
Until issue 28's audit perfquery and ibqueryerrors exited 1 on any error counter above zero.

* ``perfquery -x``: ``# Port extended counters: Lid 1719 port 1 (CapMask: ...)`` (``DR path slid 0; dlid 0;
  0`` for ``Lid 1719`` under ``-D``: libibmad portid2str; no lid then) then
  ``Name:....value`` lines; ``port`` from the header (from ``PortSelect`` when a paste left
  the header out). A block ends at a fixed field (rdma-core ``infiniband-diags/perfquery.c``
  ``dump_perfcounters`` / ``dump_perfcounters_ext``, libibmad's field order): PortCounters
  at ``PortXmitWait`` (``PortRcvPkts`` before libibmad printed it), PortCountersExtended at
  ``PortRcvPkts``, ``PortMulticastRcvPkts`` (CapMask bit 9) or ``QP1Dropped`` (CapMask2's
  additional counters). A block ending elsewhere was cut short. ``-E`` and ``-D`` print
  ``# PortRcvErrorDetails counters: Lid N port P`` / ``# PortXmitDiscardDetails counters: ...``
  (perfquery.c ``common_func``: ``"# %s counters: %s port %d"``) with their six / four counters
  (libibmad's IB_PC_RCV_LOCAL_PHY_ERR_F .. IB_PC_RCV_LOOPING_ERR_F, IB_PC_XMT_INACT_DISC_F ..
  IB_PC_XMT_SW_HOL_DISC_F), kept under their printed names, every one an error count; the other
  counter sets ``common_func`` prints (per-VL and per-SL counters) are not read (an error).
  Older layouts (harvest25): perfquery.c of OFED 1.3 / infiniband-diags before 1.5 printed
  ``"# Port counters: %s port %d\n%s"`` for the basic and the extended counters alike, no CapMask
  (a block whose first counter is ``PortXmitData`` is PortCountersExtended: PortCounters print
  ``SymbolErrorCounter`` first), and OFED 1.2-1.3's libibmad ``fields.c`` named the PortCounters
  ``SymbolErrors``, ``LinkRecovers``, ``LinkDowned``, ``RcvErrors``, ``RcvRemotePhysErrors``,
  ``RcvSwRelayErrors``, ``XmtDiscards``, ``XmtConstraintErrors``, ``RcvConstraintErrors``,
  ``LinkIntegrityErrors``, ``ExcBufOverrunErrors``, ``VL15Dropped``, ``XmtData``, ``RcvData``,
  ``XmtPkts``, ``RcvPkts`` (no XmtWait: the block ends at ``RcvPkts``), read under their sysfs names.
* ``ibqueryerrors``: ``Errors for "<node>"`` then ``GUID 0x... port N: [Name == v] ...``
  (switches print ``port ALL`` too); the ``## Summary`` line ends it. Only ports with
  counts are listed: that is the tool's design.
* sysfs: ``<root>/<dev>/ports/<port>/counters/<name>:<value>`` lines (``grep -H``), as
  :func:`sysfs_read_command` prints them, ending with :data:`END_MARKER`.

The rail of a device (:func:`rails`) is its place among the host's RDMA devices in
natural order (mlx5_2 before mlx5_10), as the scale-out tests number them.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from sncheck.errors import ParseError
from sncheck.topology import natural_key
from sncheck.vendors import after_end, listing
from sncheck.vendors.after_end import PROMPT
from sncheck.vendors.grammar import Grammar

_DIAGS = "linux-rdma/rdma-core infiniband-diags @ 691953d (2026-08)"
GRAMMAR = {
    "perfquery": Grammar(
        tool="perfquery [-x] [lid [port]] (infiniband-diags)",
        versions="OFED 1.2 (libibmad's short names) to infiniband-diags 1.6 and rdma-core 60",
        sources=(f"{_DIAGS} perfquery.c: '# Port counters: %s port %d (CapMask: 0x%02X)' or '# Port extended "
                 "counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)' then the counters "
                 "(libibmad dump.c mad_dump_perfcounters / _ext: 'Name:' padded with dots to the value, one a "
                 "line, PortSelect and CounterSelect first)",
                 "OFED 1.3 infiniband-diags perfquery.c (code corpus file id 4574298360): '# Port counters: %s port "
                 "%d\n%s' after mad_dump_perfcounters or mad_dump_perfcounters_ext alike, no CapMask; OFED 1.2-1.3 "
                 "libibmad fields.c (code corpus file id 7168113): PortCounters 'SymbolErrors' .. 'VL15Dropped', "
                 "'XmtData', 'RcvData', 'XmtPkts', 'RcvPkts' (no XmtWait), PortCountersExtended with the spec's names "
                 "(harvest25)"),
        lines="per port: its header (the port 'Lid %u' or under -D 'DR path slid %u; dlid %u; %s', libibmad "
              "portid2str: no lid then), then 'Name:....value' lines (decimal counts, 0x.. masks); -E / -D: "
              "'# PortRcvErrorDetails counters: %s port %d' / '# PortXmitDiscardDetails counters: ...' (perfquery.c "
              "common_func) then their counters (libibmad PortLocalPhysicalErrors .. PortLoopingErrors, "
              "PortInactiveDiscards .. PortSwHOQLifetimeLimitDiscards); the other counter sets common_func prints "
              "(per VL, per SL) are not read (errors)",
        end="each block's last field (dump_perfcounters / _ext, libibmad's order): PortCounters at PortXmitWait "
            "(PortRcvPkts before libibmad printed it, RcvPkts in OFED 1.2-1.3's names), PortCountersExtended (its "
            "first counter PortXmitData, under either header; a header without a CapMask, infiniband-diags before "
            "1.5, at PortMulticastRcvPkts: old libibmad dump.c printed IB_PC_EXT_FIRST_F .. IB_PC_EXT_LAST_F) at "
            "PortRcvPkts, PortMulticastRcvPkts "
            "(CapMask bit 9) or QP1Dropped (CapMask2's additional counters), PortRcvErrorDetails at "
            "PortLoopingErrors, PortXmitDiscardDetails at PortSwHOQLifetimeLimitDiscards; a block ending elsewhere "
            "is cut",
        failures="'ibwarn'/'ibpanic' and 'failed' lines (errors); a field printed twice in one block (dump_perfcounters "
                 "prints each once: spliced or repeated output, an error). No value is a fault by itself: sncheck parse "
                 "judges the counters as ib-counters' (alone the value before the traffic, info; --since their growth; "
                 "-E / -D's detail counters too, by the rules naming them)",
        values="ports[{lid, port, cap_mask, counter_set (PortCounters, PortCountersExtended, PortRcvErrorDetails, "
               "PortXmitDiscardDetails: which attribute the block read, so which widths its counters have), "
               "counters{<sysfs name>: value}}], errors",
    ),
    "ibqueryerrors": Grammar(
        tool="ibqueryerrors (infiniband-diags)",
        versions="infiniband-diags 1.6 to rdma-core 60",
        sources=(f"{_DIAGS} ibqueryerrors.c: 'Errors for 0x%x \"%s\"' / 'Errors for \"%s\"', '   GUID 0x%x port "
                 "ALL:%s' and '   GUID 0x%x port %d:%s' with ' [%s == %u]' per counter over its threshold, "
                 "'       Link info: ...' (-r), the summary (print_summary, in this order): '\\n## Summary: %d nodes "
                 "checked, %d bad nodes found', '##          %d ports checked, %d ports have errors beyond threshold', "
                 "'## %s' (the thresholds: 'Thresholds: [name = v]...'), '##          %d PMA query failures' (only "
                 "when above zero), then report_suppressed's '## Suppressed:' with each suppressed field's name, "
                 "always",
                 f"{_DIAGS} ibqueryerrors.c at linux-rdma/rdma-core 691953d (2026-08): -r/--report-port's "
                 "print_port_config after each numbered port's line, '       Link info: %6d' (the port's LID, a "
                 "switch's own) then '%4d[%2s] ==%s==>  %s': the port and its ext number, the link '(%3s %18s "
                 "%6s/%8s)' (width, speed, state/phys state) or a down port's '(              %6s/%8s)', the remote "
                 "'0x%016lx %6d %4d[%2s] \"%s\" (%s %s)' (guid, LID, port, ext, name, get_max_msg's 'Could be' width "
                 "and speed) or none '           [  ] \"\" ( )'; --counters' print_data_cnts: 'Data Counters for "
                 "0x%lx \"%s\"' and its ports' ' [%s == %lu (%5.3f%s)]' data counts (the same with --data after "
                 "an error port's counts)"),
        lines="per node with errors: its 'Errors for' line (--counters: 'Data Counters for'), then a line per port "
              "(ALL first on a switch), each numbered port's 'Link info:' line after it under -r; then the summary lines",
        end="the '## Suppressed:' line after the '## Summary' and ports-checked lines (print_summary ends with "
            "report_suppressed, always; a paste cut before it may have lost the PMA query failures line); only nodes "
            "and ports with errors are listed: that is the tool's design",
        failures="PMA query failures; 'Failed' and SA errors; a 'Link info:' line not as print_port_config prints "
                 "it or not after its port's line (cut or edited: its link not read); "
                 "a port line ending inside a '[NAME == N]' count, or "
                 "counts on a line of no port (a port's line wrapped or cut: errors). The counters it lists are over its "
                 "thresholds since they were cleared: sncheck parse judges them as ib-counters' (alone info; "
                 "--since their growth; a port listed now and not before: its growth unknown, not judged)",
        values="ports[{device (the node's name), guid, port, counters{<sysfs name>: value}, link{lid, width, speed, "
               "state, phys_state, "
               "remote{guid, lid, port, name} or null, could_be} (-r)}], summary{nodes, bad_nodes, ports, "
               "bad_ports}, errors",
    ),
    "ib-counters": Grammar(
        tool="the port counters in sysfs, as sncheck's read prints them (grep -H of /sys/class/infiniband/*/ports/*/"
             "counters/*)",
        versions="Linux 4.x to 6.x (ib_core port counters; mlx5 hw_counters are not read)",
        sources=("torvalds/linux drivers/infiniband/core/sysfs.c: the counters/ attribute group (symbol_error, "
                 "link_error_recovery, link_downed, port_rcv_errors, port_rcv_remote_physical_errors, "
                 "port_rcv_switch_relay_errors, port_xmit_discards, port_xmit_constraint_errors, "
                 "port_rcv_constraint_errors, local_link_integrity_errors, excessive_buffer_overrun_errors, "
                 "VL15_dropped, port_xmit_data, port_rcv_data, port_xmit_packets, port_rcv_packets, "
                 "port_xmit_wait, ...), one decimal value a file",
                 "sncheck/vendors/infiniband/counters.py sysfs_read_command: the grep -H line format and the "
                 "end line"),
        lines="'<root>/<dev>/ports/<port>/counters/<name>:<value>' lines",
        end="sncheck's '# end of counters' line (END_MARKER)",
        failures="a value that is no count, a read error, a counter read twice (grep -H prints each file once), a line before the end that is no counter line (a "
                 "wrapped paste's tail, another tool's line: errors, exit 1). The counters count since the port came up: "
                 "no value is a fault by itself. sncheck parse judges the read as a run judges its reads (the "
                 "rules' counter_growth rules, sncheck.health.fabric.judge_reads): alone as the read before the "
                 "traffic (a counter above zero: info, exit 0), with --since EARLIER by each error counter's growth",
        values="ports[{device, port, counters{<name>: value}}], errors; sncheck parse adds judged[{entity, rule, "
               "severity, message, counters}]",
    ),
}

END_MARKER = "# end of counters"
SYSFS = "/sys/class/infiniband"

# perfquery / ibqueryerrors (PMA attribute names) -> sysfs counter file names; the short names (SymbolErrors ..
# RcvPkts) are OFED 1.2-1.3 libibmad's (fields.c: "SymbolErrors", "LinkRecovers", .. "XmtData", "RcvPkts"), the spec's
# names since libibmad 1.3 (PortXmitWait added with them)
PMA_TO_SYSFS = {
    "SymbolErrorCounter": "symbol_error", "SymbolErrors": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery", "LinkRecovers": "link_error_recovery",
    "LinkDownedCounter": "link_downed", "LinkDowned": "link_downed",
    "PortRcvErrors": "port_rcv_errors", "RcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors", "RcvRemotePhysErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors", "RcvSwRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards", "PortXmtDiscards": "port_xmit_discards", "XmtDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors", "XmtConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors", "RcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors", "LinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors", "ExcBufOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
    "PortXmitWait": "port_xmit_wait",
    "QP1Dropped": "qp1_dropped",
    "PortXmitData": "port_xmit_data", "PortRcvData": "port_rcv_data", "XmtData": "port_xmit_data", "RcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_packets", "PortRcvPkts": "port_rcv_packets",
    "XmtPkts": "port_xmit_packets", "RcvPkts": "port_rcv_packets",
    "PortUnicastXmitPkts": "unicast_xmit_packets", "PortUnicastRcvPkts": "unicast_rcv_packets",
    "PortMulticastXmitPkts": "multicast_xmit_packets", "PortMulticastRcvPkts": "multicast_rcv_packets",
}
ERROR_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                  "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
                  "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
                  "excessive_buffer_overrun_errors", "VL15_dropped")
# Every counter a read names (the sysfs counters/ files; perfquery's fields by their sysfs name).
COUNTERS = tuple(dict.fromkeys((*ERROR_COUNTERS, *PMA_TO_SYSFS.values())))

# The field each kind of perfquery block may end with (see the module docstring).
_PQ_LAST = {"basic": ("PortXmitWait", "PortRcvPkts", "RcvPkts"),
            "extended": ("PortRcvPkts", "PortMulticastRcvPkts", "QP1Dropped"),
            "PortRcvErrorDetails": ("PortLoopingErrors",), "PortXmitDiscardDetails": ("PortSwHOQLifetimeLimitDiscards",)}
# -E / -D's counters (libibmad's names as printed): each an error count
_PQ_CAPS = re.compile(r"CapMask: (0x[0-9A-Fa-f]+)(?: CapMask2: (0x[0-9A-Fa-f]+))?")
_CAP_XMIT_WAIT, _CAP_EXT_WIDTH, _CAP2_ADDL_EXT = 0x1000, 0x200, 0x2  # the header's bits perfquery.c tests


def _pq_ends(kind: str | None, header: str, fields: set[str]) -> tuple[str, ...]:
    """The fields a block of ``kind`` may end with, narrowed by its header's CapMask bits and
    the fields it printed (once CounterSelect2 is printed, the block runs to QP1Dropped)."""
    if kind is None:
        return _PQ_LAST["basic"] + _PQ_LAST["extended"]
    if kind not in ("basic", "extended"):
        return _PQ_LAST[kind]
    m = _PQ_CAPS.search(header)
    if kind == "extended" and header and m is None:
        # perfquery before it printed the CapMask (infiniband-diags < 1.5): libibmad's mad_dump_perfcounters_ext
        # printed IB_PC_EXT_FIRST_F .. IB_PC_EXT_LAST_F, every extended counter to PortMulticastRcvPkts
        return ("PortMulticastRcvPkts",)
    cap = int(m.group(1), 16) if m else 0
    cap2 = int(m.group(2), 16) if m and m.group(2) else 0
    if kind == "basic":
        return ("PortXmitWait",) if cap & _CAP_XMIT_WAIT else _PQ_LAST["basic"]
    if "CounterSelect2" in fields or cap2 & _CAP2_ADDL_EXT:
        return ("QP1Dropped",)
    return _PQ_LAST["extended"][1:] if cap & _CAP_EXT_WIDTH else _PQ_LAST["extended"]
# the port as libibmad's portid2str names it: 'Lid %u' or, addressed by directed route (-D), 'DR path slid %u; dlid
# %u; %s' (the path's hops, '0,1,3'): no lid then (harvest25's Elasticsearch monitor)
_PQ_WHERE = r"(?:Lid (\d+)|DR path slid \d+; dlid \d+; [\d,]+)"
_PQ_HEADER = re.compile(rf"^# Port (?:extended )?counters: {_PQ_WHERE} port (\d+|ALL|255)\b", re.I)
_PQ_OTHER_HEADER = re.compile(rf"^# (\w+) counters: {_PQ_WHERE} port (\d+|ALL|255)\b")  # common_func's sets
_PQ_LINE = re.compile(r"^([A-Za-z0-9]+):\.*\s*(\S+)\s*$")
# print_results' node line, and print_data_cnts' under --counters ('Data Counters for 0x%lx "%s"': its ports' data counts)
_IQE_NODE = re.compile(r'^(?:Errors|Data Counters) for (?:(0x[0-9a-fA-F]+) )?"(.*)"\s*$')
# print_port_config (-r/--report-port), after a port's line: '       Link info: %6d' (the port's LID, a switch's
# own), '%4d[%2s] ==%s==>  %s' (port, its ext number, the link, the remote end); the link '(%3s %18s %6s/%8s)' (width,
# speed, state/phys state) or, down, '(              %6s/%8s)'; the remote '0x%016lx %6d %4d[%2s] "%s" (%s %s)' (guid,
# LID, port, ext, name, get_max_msg's 'Could be' width and speed) or '           [  ] "" ( )' (none)
_IQE_LINK = re.compile(r"^Link info:\s+(\d+)\s*(\d+)\[\s*(\d*)\] ==\((.*)\)==>\s+(.*?)\s*$")
_IQE_LINK_UP = re.compile(r"^\s*(\S+)\s+(.+?)\s+(\w+)/\s*(\w+)$")
_IQE_LINK_DOWN = re.compile(r"^\s*(\w+)/\s*(\w+)$")
_IQE_REMOTE = re.compile(r'^(0x[0-9a-fA-F]+)\s+(\d+)\s+(\d+)\[\s*(\d*)\] "(.*)" \((.*)\)$')
_IQE_NO_REMOTE = re.compile(r'^\[\s*\] "" \( ?\)$')
_IQE_PORT = re.compile(r"^GUID (0x[0-9a-fA-F]+) port (\d+|ALL):(.*)$")
_IQE_COUNT = re.compile(r"\[(\w+) == (\d+)(?: \([^)]*\))?\]")
_SYSFS_LINE = re.compile(r"^(?:.*/)?([^/\s]+)/ports/(\d+)/counters/(\w+):\s*(\S+)\s*$")
_TOOL_ERROR = re.compile(r"^(?:ibwarn|ibpanic|perfquery|ibqueryerrors|grep|sh):|Permission denied|"
                         r"No such file|can't open|Failed", re.I)


def _number(text: str) -> int | None:
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value if value >= 0 else None


def _result(tool: str, ports: list[dict], errors: list[str], **extra: Any) -> dict[str, Any]:
    # no faults: the counters are judged as ib-counters' are (sncheck.cli.parse_counters)
    return {"tool": tool, "ports": ports, **extra, "errors": errors}


def parse_perfquery(text: str) -> dict[str, Any]:
    """``perfquery -x`` (or without ``-x``): one entry per ``# Port ... counters`` block."""
    ports: list[dict[str, Any]] = []
    errors: list[str] = []
    kinds: list[str | None] = []  # per block: "basic", "extended", or None (no header: from its fields)
    last: list[str] = []  # per block: the last field it printed
    headers: list[str] = []
    fields: list[set[str]] = []
    unread = False  # inside a counter set perfquery prints and this view does not read
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _PQ_HEADER.match(line):
            unread = False
            port = m.group(2)
            ports.append({"device": None, "lid": int(m.group(1)) if m.group(1) else None,
                          "port": int(port) if port.isdecimal() else port, "counters": {}})
            kinds.append("extended" if "extended" in line.lower() else "basic")
            last.append("")
            headers.append(line)
            fields.append(set())
        elif m := _PQ_OTHER_HEADER.match(line):
            if m.group(1) not in _PQ_LAST:
                errors.append(f"a {m.group(1)} block (perfquery's per-VL or per-SL counters): not read")
                unread = True  # its field lines are its own, never another port's or a headerless block
                continue
            unread = False
            port = m.group(3)
            ports.append({"device": None, "lid": int(m.group(2)) if m.group(2) else None,
                          "port": int(port) if port.isdecimal() else port, "counters": {}})
            kinds.append(m.group(1))
            last.append("")
            headers.append(line)
            fields.append(set())
        elif unread and _PQ_LINE.match(line):
            continue
        elif (m := _PQ_LINE.match(line)) and (ports or m.group(1) == "PortSelect"):
            name = m.group(1)
            if name == "PortSelect" and (not ports or last[-1]):
                # a block pasted without its '# Port counters' line: the port from PortSelect
                value = _number(m.group(2))
                ports.append({"device": None, "lid": None, "port": value, "counters": {}})
                kinds.append(None)
                last.append("")
                headers.append("")
                fields.append(set())
            last[-1] = name
            if name in fields[-1] and name not in ("PortSelect", "CounterSelect"):
                # dump_perfcounters prints each field once a block: twice is output spliced or repeated, and its
                # last value kept would lose the first (reviews17 #6)
                errors.append(f"port {ports[-1]['port']}: {name} printed twice in one block: output spliced or "
                              "repeated, its values not whole")
            fields[-1].add(name)
            if kinds[-1] is None and name in ("SymbolErrorCounter", "SymbolErrors", "PortXmitData"):
                kinds[-1] = "extended" if name == "PortXmitData" else "basic"
            elif kinds[-1] == "basic" and name == "PortXmitData" and fields[-1] <= {"PortSelect", "CounterSelect", name}:
                # PortCounters print SymbolErrorCounter first: PortXmitData first is PortCountersExtended under the
                # '# Port counters:' header perfquery printed for both before infiniband-diags 1.5 (harvest25)
                kinds[-1] = "extended"
            if name in ("PortSelect", "CounterSelect", "CounterSelect2"):
                continue
            value = _number(m.group(2))
            if value is None:
                errors.append(f"port {ports[-1]['port']}: {name} is not a count: {m.group(2)!r}")
                continue
            ports[-1]["counters"][PMA_TO_SYSFS.get(name, name)] = value
        elif _TOOL_ERROR.search(line):
            errors.append(line)
    if not ports and not errors:
        raise ParseError("no '# Port counters' blocks found", tool="perfquery")
    for p, kind in zip(ports, kinds):
        # the attribute the block reads (their widths differ: PORT_COUNTER_BITS); a block with no header, PortCounters
        p["counter_set"] = {"extended": "PortCountersExtended", "basic": "PortCounters", None: "PortCounters"}.get(kind, kind)
    errors += [f"port {p['port']}: no counters after its header (cut short?)" for p in ports if not p["counters"]]
    errors += [f"port {p['port']}: the block ends at {end}, before its last counter: output cut short"
               for p, kind, end, header, seen in zip(ports, kinds, last, headers, fields)
               if p["counters"] and end not in _pq_ends(kind, header, seen)]
    return _result("perfquery", ports, errors)


def parse_ibqueryerrors(text: str) -> dict[str, Any]:
    """``ibqueryerrors``: the ports it lists with counts, per node; its summary line ends it."""
    ports: list[dict[str, Any]] = []
    errors: list[str] = []
    node = None
    summary = None
    ended = False
    for raw in text.splitlines():
        line = raw.strip().lstrip(">").strip()  # mail quotes ("> ") are not the tool's
        if not line:
            continue
        if m := _IQE_NODE.match(line):
            node = m.group(2)
        elif line.startswith("Link info:"):
            if (link := _iqe_link(line)) is None or not ports or ports[-1]["port"] != link.pop("port") \
                    or "link" in ports[-1]:
                errors.append(f"a 'Link info:' line not as ibqueryerrors prints it after its port's line "
                              f"('{line[:60]}'): cut or edited, its link not read")
            else:
                ports[-1]["link"] = link
        elif m := _IQE_PORT.match(line):
            counters = {PMA_TO_SYSFS.get(n, n): int(v) for n, v in _IQE_COUNT.findall(m.group(3))}
            port = m.group(2)
            if m.group(3).count("[") != m.group(3).count("]"):  # print_port_errors: every '[NAME == N]' on the line
                errors.append(f"GUID {m.group(1)} port {port}: its line ends inside a count ('{m.group(3)[-30:]}'): "
                              "cut or wrapped, its counts not whole")
            ports.append({"device": node, "guid": m.group(1), "port": int(port) if port.isdecimal() else port,
                          "counters": counters})
        elif m := re.match(r"^## Summary: (\d+) nodes checked, (\d+) bad nodes found", line):
            summary = {"nodes": int(m.group(1)), "bad_nodes": int(m.group(2))}
        elif m := re.match(r"^##\s+(\d+) ports checked, (\d+) ports have errors", line):
            summary = {**(summary or {}), "ports": int(m.group(1)), "bad_ports": int(m.group(2))}
        elif summary is not None and line.startswith("## Suppressed:"):
            ended = True  # print_summary's last line (report_suppressed)
        elif (m := re.match(r"^##\s+(\d+) PMA query failures", line)) and int(m.group(1)):
            errors.append(f"{m.group(1)} PMA query failures: those ports' counters were not read")
        elif _TOOL_ERROR.search(line):
            errors.append(line)
        elif line.startswith("[") and _IQE_COUNT.search(line) or re.match(r"^\w* == \d+\]", line):
            # counts with no 'GUID ... port N:' before them: a port's line broken in two (a wrapped paste)
            errors.append(f"counts with no port ('{line[:40]}'): a port's line broken in two, its counts not whole")
    if not ports and summary is None and not errors:
        raise ParseError("no 'Errors for' nodes and no summary found", tool="ibqueryerrors")
    if summary is None:
        errors.append("no '## Summary' line: the output was cut short")
    elif "ports" not in summary:  # print_summary prints both lines, then the thresholds and '## Suppressed:'
        errors.append("no '##  N ports checked' line after the summary: the output was cut short")
    elif not ended:  # the PMA query failures line, printed before it, may be what was cut
        errors.append("no '## Suppressed:' line after the summary (print_summary ends with it): the output was cut "
                      "short")
    return _result("ibqueryerrors", ports, errors, summary=summary)


def _iqe_link(line: str) -> dict[str, Any] | None:
    """print_port_config's line as {port, lid, width, speed, state, phys_state, remote{guid, lid, port, name} or
    None, could_be}; None when it is no such line (cut inside it, or edited)."""
    if not (m := _IQE_LINK.match(line)):
        return None
    if up := _IQE_LINK_UP.match(m.group(4)):
        width, speed, state, phys = up.groups()
    elif down := _IQE_LINK_DOWN.match(m.group(4)):
        width = speed = None
        state, phys = down.groups()
    else:
        return None
    remote: dict[str, Any] | None = None
    could = ""
    if r := _IQE_REMOTE.match(m.group(5)):
        remote = {"guid": r.group(1), "lid": int(r.group(2)), "port": int(r.group(3)), "name": r.group(5)}
        could = " ".join(r.group(6).split())
    elif not _IQE_NO_REMOTE.match(m.group(5)):
        return None
    return {"port": int(m.group(2)), "lid": int(m.group(1)), "width": width, "speed": speed, "state": state,
            "phys_state": phys, "remote": remote, "could_be": could or None}


def parse_sysfs_counters(text: str) -> dict[str, Any]:
    """``<dev>/ports/<n>/counters/<name>:<value>`` lines (``grep -H``), one entry per port."""
    by_port: dict[tuple[str, int], dict[str, Any]] = {}
    errors: list[str] = []
    unread: list[tuple[int, str]] = []  # lines before the end that are no line of the read (a wrapped line's tail)
    ended = False
    for at, raw in after_end.numbered(text):
        line = raw.strip()
        if not line or PROMPT.match(line) or listing.is_elision(line):
            continue  # a reporter's '...': listing.elided says it, once, with its line
        if line == END_MARKER:
            ended = True
            continue
        if m := _SYSFS_LINE.match(line):
            dev, port, name = m.group(1), int(m.group(2)), m.group(3)
            entry = by_port.setdefault((dev, port), {"device": dev, "port": port, "counters": {}})
            value = _number(m.group(4))
            if value is None:
                errors.append(f"{dev} port {port}: {name} is not a count: {m.group(4)!r}")
                continue
            if name in entry["counters"]:
                # grep -H prints each file once: a counter twice is output spliced or repeated (reviews17 #6)
                errors.append(f"line {at}: {dev} port {port}: {name} read twice: output spliced or repeated, its "
                              "values not whole")
            entry["counters"][name] = value
        elif _TOOL_ERROR.search(line):
            errors.append(line)
        elif not ended:
            unread.append((at, line))
    if not by_port and not ended and not errors:
        raise ParseError("no '<dev>/ports/<n>/counters/<name>:<value>' lines found", tool="ib-counters")
    if unread:
        # the read prints only 'path:value' lines and its end line (sysfs_read_command): any other line
        # before the end is a line broken in two (a paste wrapped at its width) or another tool's
        errors.append(f"line {unread[0][0]} is no '<dev>/ports/<n>/counters/<name>:<value>' line ({unread[0][1][:60]!r}; "
                      f"{len(unread)} such): not read, the read's values are not whole")
    if not ended:
        errors.append(f"no '{END_MARKER}' line: the read was cut short")
    ports = [by_port[k] for k in sorted(by_port, key=lambda k: (natural_key(k[0]), k[1]))]
    # no faults: a port's counters count since it came up; sncheck parse judges them as a run does
    return {"tool": "ib-counters", "ports": ports, "errors": errors}


def sysfs_read_command(root: str = SYSFS) -> str:
    """Print every port counter file under ``root`` as ``path:value``, then the end marker.
    A host without RDMA devices prints only the marker."""
    q = shlex.quote(root.rstrip("/") or "/")
    return (f"for d in {q}/*/ports/*/counters; do [ -d \"$d\" ] && grep -H . \"$d\"/* 2>/dev/null; done; "
            f"echo {shlex.quote(END_MARKER)}")


def rails(devices: list[str]) -> dict[str, int]:
    """RDMA device -> rail: its place among the host's devices in natural order."""
    return {d: i for i, d in enumerate(sorted(set(devices), key=natural_key))}
