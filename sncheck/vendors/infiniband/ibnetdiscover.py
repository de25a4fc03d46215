"""Parse ``ibnetdiscover`` (the topology file) and ``iblinkinfo`` (infiniband-diags).

Grammar, from rdma-core's ``infiniband-diags/ibnetdiscover.c`` (``dump_topology``,
``out_switch``, ``out_ca``, ``out_switch_port``, ``out_ca_port``), default options (no ``-g``
grouping, no ``-s``/``-l``/``-H`` lists); ``--full`` adds `` s=<speed> w=<width> v=<vlcap>``::

    #
    # Topology file: generated on <ctime>
    #
    # Initiated from node <16 hex> port <16 hex>
    <blank>
    vendid=0x<hex>
    devid=0x<hex>
    [sysimgguid=0x<hex>]                        (only when nonzero)
    switchguid=0x<hex>(<port guid hex>)  |  caguid=0x<hex>  |  rtguid=0x<hex>
    Switch\\t<ports> "S-<16 hex>"\\t\\t# "<node description>" (enhanced|base) port 0 lid <n> lmc <n>
    Ca\\t<ports> "H-<16 hex>"\\t\\t# "<node description>"          (Rt / "R-" for a router)
    a connected port of a switch:
    [<p>][ext N]\\t"<S|H|R>-<16 hex>"[<rp>][ext N][(<remote port guid hex>) ]\\t\\t# "<remote desc>" lid <n> <width><speed>
    a connected port of a CA or router:
    [<p>](<port guid hex>) \\t"<S|H|R>-<16 hex>"[<rp>][ext N][ (<remote port guid hex>) ]\\t\\t# lid <n> lmc <n> "<remote desc>" lid <n> <width><speed>

Width: ``1x 2x 4x 8x 12x ??``; speed: ``SDR DDR QDR FDR10 FDR EDR HDR NDR ???``. Only connected
ports are listed. The file has no end marker: it is whole when every link is listed from both
ends, each end's record present (a cut file leaves a link whose far node has no record, or
whose far node does not list it back). ``ibwarn:``/``ibpanic:``/``ibnetdiscover:`` lines and a
record line the grammar does not hold go to ``errors``.

``iblinkinfo`` (``iblinkinfo.c``: ``print_node_header``, ``print_port``), default and ``-l``::

    Switch: 0x<16 hex> <desc>:                 (a CA: ``CA: <desc>:``; none with -l)
    [0x<16 hex> ]<lid> <port>[<ext>] ==(<width> <speed> <state>/<physstate>)==>  <rlid> <rport>[<ext>] "<rdesc>" (<why not max>)
    ... ==(              Down/ Polling)==>             [  ] "" ( )        (a down port)
    ... ==(...)==>      "Port not available"

One entry per port: its state, and the far end when it is linked. No end line and no count:
the judge's expectation (``--expect``) counts the ports. Both grammars, with where each
line comes from, are in :mod:`sncheck.vendors.infiniband.ibnetdiscover_grammar`.
"""

from __future__ import annotations

from collections import Counter

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import listing
from sncheck.vendors.delivery import command_line
from sncheck.vendors.infiniband.ibnetdiscover_ports import is_ports_report, parse_ports_report

_TYPES = {"Switch": "switch", "Ca": "ca", "Rt": "router"}
_PREFIX = {"S": "switch", "H": "ca", "R": "router"}
_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]{16})"\s*#\s*"(.*)"(.*)$')
_SWITCH_TAIL = re.compile(r"^\s*(enhanced|base) port 0 lid (\d+) lmc (\d+)")
_INITIATED = re.compile(r"^# Initiated from node ([0-9a-fA-F]+) port [0-9a-fA-F]+")
# ibnetdiscover.c: "# Max of %d hops discovered" (the farthest node's hops from the one it ran from)
_HOPS = re.compile(r"^#\s*Max of (\d+) hops discovered")
_GUID_LINE = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=(0x[0-9a-fA-F]+)")
_PORT = re.compile(
    r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s+"([SHR])-([0-9a-fA-F]{16})"\[(\d+)\](?:\[ext \d+\])?'
    r'\s*(?:\(([0-9a-fA-F]+)\))?\s*#\s*(.*)$')
# the link's width and speed, then --full's ' s=%d w=%d v=%d' and an Xsigo far end's ' slot %d' / ' (scp)':
# the whole tail, so a line cut inside it ('4xFDR' of '4xFDR10', 'v=' of 'v=4') is not read as whole
_LINK_TAIL = r"(\S+?)(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|\?\?\?)(?: s=\d+ w=\d+ v=\d+)?(?: slot \d+| \(scp\))?$"
_SW_PORT_TAIL = re.compile(r'^"(.*)" lid (\d+) ' + _LINK_TAIL)
_CA_PORT_TAIL = re.compile(r'^lid (\d+) lmc (\d+) "(.*)" lid (\d+) ' + _LINK_TAIL)
_TOOL_ERROR = re.compile(r"^(?:ibwarn|ibpanic|ibnetdiscover|iblinkinfo|ibnd_\w+|src/\S+):|Failed|"
                         r"can't open|No such|Permission denied", re.I)


# the command line a reporter pasted above the output ('$ iblinkinfo', 'root@h:~# sudo ibnetdiscover -p'):
# delivery's one grammar of it, the output's first line (one after a record is another command's)
_COMMAND = command_line(r"ibnetdiscover|iblinkinfo")


def _after_command(text: str) -> str:
    """The output without the command line pasted above it (its first line that is not blank)."""
    head, _, rest = text.lstrip("\n").partition("\n")
    return rest if _COMMAND.match(head) else text


def _other(line: str) -> str:
    """A line no record holds: the tool's own error line as it is, anything else named so."""
    return line if _TOOL_ERROR.search(line) else f"a line the grammar does not hold: {line[:120]!r}"


def _guid(hex_text: str) -> str:
    return f"0x{int(hex_text, 16):016x}"


def parse_ibnetdiscover(text: str) -> dict[str, Any]:
    """``ibnetdiscover``: every node with its connected ports (``links``); ``-p``'s ports report
    as ``ports`` (:mod:`sncheck.vendors.infiniband.ibnetdiscover_ports`)."""
    text = _after_command(text)
    if is_ports_report(text):
        return parse_ports_report(text, _other)
    nodes: list[dict[str, Any]] = []
    errors: list[str] = []
    node: dict[str, Any] | None = None
    started = False
    initiator = None
    hops = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            node = None  # a blank line ends a record
            continue
        if listing.is_elision(line):
            continue  # a reporter's '...': listing.elided says so, once, with its line
        if line.startswith("#"):
            started |= line.startswith("# Topology file")
            if m := _INITIATED.match(line):
                initiator = _guid(m.group(1))
            elif m := _HOPS.match(line):
                hops = int(m.group(1))
            continue
        if m := _HEADER.match(line):
            node = _node(m, errors)
            nodes.append(node)
        elif _GUID_LINE.match(line):
            continue
        elif node is not None and (m := _PORT.match(line)):
            link = _link(node, m)
            if link is None:
                errors.append(f"{node['guid']} port {m.group(1)}: a port line the grammar does not hold: {line!r}")
            else:
                node["links"].append(link)
        else:
            errors.append(_other(line))
    if not nodes and not errors:
        raise ParseError("no 'Switch' or 'Ca' records found", tool="ibnetdiscover")
    if nodes and not started:
        errors.append("no '# Topology file' header: not the start of an ibnetdiscover output")
    if initiator and nodes and all(n["guid"] != initiator for n in nodes):
        errors.append(f"no record of the node it was run from ({initiator}): cut short")
    if hops and len(nodes) == 1:  # 'Max of N hops' (fabric->maxhops_discovered) past 0: a node N hops away
        errors.append(f"the header says {hops} hop(s) discovered and one node is recorded: cut short")
    if len(nodes) > 1:  # discovery reaches a node through a link: one without any was cut
        errors += [f"{n['guid']} ({n['desc']}): a record with no link: cut short" for n in nodes if not n["links"]]
    # ibnetdiscover visits each node once (a BFS marks it found): a node recorded twice is two
    # outputs spliced together, and its links would count twice
    seen = Counter(n["guid"] for n in nodes)
    twice = sorted(g for g, k in seen.items() if k > 1)
    errors += [f"{g}: recorded {seen[g]} times, which ibnetdiscover never prints: "
               "outputs spliced together?" for g in twice[:3]] + ([f"and {len(twice) - 3} more nodes recorded twice"]
                                                                if len(twice) > 3 else [])
    return {"tool": "ibnetdiscover", "nodes": nodes, "errors": errors + _unmatched(nodes)}


def _node(m: re.Match, errors: list[str]) -> dict[str, Any]:
    kind = _TYPES[m.group(1)]
    out: dict[str, Any] = {"type": kind, "guid": _guid(m.group(4)), "ports": int(m.group(2)),
                           "desc": m.group(5), "lid": None, "links": []}
    if kind == "switch":
        tail = _SWITCH_TAIL.match(m.group(6))
        if tail is None:
            errors.append(f"switch {out['guid']}: no 'port 0 lid' after its description")
        else:
            out["lid"] = int(tail.group(2))
    if _PREFIX[m.group(3)] != kind:
        errors.append(f"{out['guid']}: a {kind} record named {m.group(3)}-")
    return out


def _link(node: dict[str, Any], m: re.Match) -> dict[str, Any] | None:
    comment = m.group(7)
    link = {"port": int(m.group(1)), "remote_type": _PREFIX[m.group(3)], "remote_guid": _guid(m.group(4)),
            "remote_port": int(m.group(5))}
    if node["type"] == "switch":
        tail = _SW_PORT_TAIL.match(comment)
        if tail is None:
            return None
        link.update(remote_desc=tail.group(1), remote_lid=int(tail.group(2)), width=tail.group(3),
                    speed=tail.group(4))
    else:
        tail = _CA_PORT_TAIL.match(comment)
        if tail is None:
            return None
        link.update(lid=int(tail.group(1)), remote_desc=tail.group(3), remote_lid=int(tail.group(4)),
                    width=tail.group(5), speed=tail.group(6))
    if m.group(2):
        link["port_guid"] = _guid(m.group(2))
    return link


def _unmatched(nodes: list[dict[str, Any]]) -> list[str]:
    """Every link must be listed from its far end too: a far node without a record, or one
    that does not list the link back, is a cut (or inconsistent) output."""
    by_guid = {n["guid"]: n for n in nodes}
    out = []
    for n in nodes:
        for link in n["links"]:
            far = by_guid.get(link["remote_guid"])
            if far is None:
                out.append(f"{n['guid']} port {link['port']} links to {link['remote_guid']}, which has no record "
                           f"(cut short?)")
            elif not any(x["port"] == link["remote_port"] and x["remote_guid"] == n["guid"]
                         and x["remote_port"] == link["port"] for x in far["links"]):
                out.append(f"{n['guid']} port {link['port']} links to {link['remote_guid']} port "
                           f"{link['remote_port']}, which does not list it back (cut short?)")
    return out


# iblinkinfo.c print_node_header: "Switch: 0x<guid> <desc>:" / "CA: <desc>:" / "Router: <desc>:"
_LI_HEADER = re.compile(r"^(Switch|CA|Router):\s+(?:(0x[0-9a-fA-F]+)\s+)?(.*):\s*$")
# print_port: "[0x<port guid> ]<lid> <port>[<ext>] ==(<link>)[ (HOQ:h VL_Stall:v)]==>  <far end>"; with -l
# (line_mode) "0x<port guid> \"<desc, %30s>\" " first, and the far end's GUID before its LID
_LI_PORT = re.compile(r'^(?:(0x[0-9a-fA-F]+)\s+)?(?:"(.*)"\s+)?(\d+)\s+(\d+)\[\s*(\d*)\]\s+'
                      r'==\((.*?)\)(?: \(HOQ:(\d+) VL_Stall:(\d+)\))?==>\s*(.*)$')
_LI_PORT_START = re.compile(r'^(?:0x[0-9a-fA-F]+\s+)?(?:".*"\s+)?\d+\s+\d+\[')
_LI_STATE = re.compile(r"^(?:(\S+)\s+(.+?)\s+)?(\w+)/\s*(\w+)$")
_LI_REMOTE = re.compile(r'^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[\s*(\d*)\]\s+"(.*)"\s+\((.*)\)$')
_LI_WHY = re.compile(r"^(?:Could be (\S+))?\s*(?:Could be (.+?))?\s*$")  # get_max_msg: "(%s %s)"
_LI_DOWN_END = re.compile(r'^\[\s*\]\s+""\s+\(\s*\)$')  # a Down port: "           [  ] \"\" ( )"
_LI_NOT_AVAILABLE = '"Port not available"'  # a port up whose far end was not discovered


def parse_iblinkinfo(text: str) -> dict[str, Any]:
    """``iblinkinfo`` (also ``-l``): one entry per port of each node, with its state and far end.
    A port line must hold all of its grammar: a link up has its far end (or "Port not
    available"), a Down port its empty one; a node header is printed with its first port."""
    ports: list[dict[str, Any]] = []
    errors: list[str] = []
    node: dict[str, Any] | None = None
    bare: str | None = None  # a node header no port line followed yet
    for raw in _after_command(text).splitlines():
        line = raw.strip()
        if not line or listing.is_elision(line):
            continue  # (a reporter's '...': listing.elided says so, once, with its line)
        if m := _LI_HEADER.match(line):
            if bare is not None:
                errors.append(f"{bare}: a node header with no port under it: cut short")
            node = {"type": m.group(1).lower(), "guid": m.group(2), "desc": m.group(3)}
            bare = f"{m.group(1)} {m.group(3)}"
        elif (m := _LI_PORT.match(line)) and (node is not None or m.group(2) is not None):
            if m.group(2) is not None:  # -l: every line names its node
                node = {"type": None, "guid": None, "desc": m.group(2).strip()}
            assert node is not None
            bare = None
            entry = _li_port(node, m, errors)
            if entry is not None:
                ports.append(entry)
        elif _LI_PORT_START.match(line):
            errors.append(f"a port line that is not whole ({line[-60:]!r}): cut short")
        else:
            errors.append(_other(line))
    if bare is not None:
        errors.append(f"{bare}: a node header with no port under it: cut short")
    if not ports and not errors:
        raise ParseError("no 'Switch:' or 'CA:' nodes with ports found", tool="iblinkinfo")
    return {"tool": "iblinkinfo", "ports": ports, "errors": errors + _li_not_listed_back(ports)}


def _li_not_listed_back(ports: list[dict[str, Any]]) -> list[str]:
    """iblinkinfo.c prints every port of a node it prints (1..numports, print_node): a link to a
    port of a node the listing holds, where that node lists no such port, is a cut listing (an
    18-port excerpt of a 36-port switch a CA names port 36 of); a far node not listed at all is
    a partial scan's, said by nothing."""
    have = {(p["lid"], p["port"]) for p in ports}
    listed = {lid for lid, _ in have}
    return [f"{p['node']} port {p['port']} links to lid {r['lid']} port {r['port']}, which the listing of lid "
            f"{r['lid']} does not hold (cut short?)" for p in ports if (r := p["remote"]) is not None
            and r["lid"] in listed and (r["lid"], r["port"]) not in have]


def _li_port(node: dict[str, Any], m: re.Match, errors: list[str]) -> dict[str, Any] | None:
    where = f"{node['desc']} port {m.group(4)}"
    state = _LI_STATE.match(m.group(6).strip())
    if state is None:
        errors.append(f"{where}: a link field the grammar does not hold: {m.group(6)!r}")
        return None
    entry: dict[str, Any] = {
        "node": node["desc"], "node_type": node["type"], "guid": node["guid"] or m.group(1),
        "lid": int(m.group(3)), "port": int(m.group(4)), "ext_port": int(m.group(5)) if m.group(5) else None,
        "width": state.group(1), "speed": state.group(2), "state": state.group(3),
        "physical_state": state.group(4), "remote": None}
    if m.group(7):
        entry.update(hoq_life=int(m.group(7)), vl_stall_count=int(m.group(8)))
    far_text = m.group(9).strip()
    far = _LI_REMOTE.match(far_text)
    why = _LI_WHY.match(far.group(6)) if far else None
    if far is not None and why is not None:
        entry["remote"] = {"guid": far.group(1), "lid": int(far.group(2)), "port": int(far.group(3)),
                           "ext_port": int(far.group(4)) if far.group(4) else None, "desc": far.group(5),
                           "could_be_width": why.group(1), "could_be_speed": why.group(2)}
    elif state.group(3) == "Down" and _LI_DOWN_END.match(far_text):
        pass  # C14-24.2.1: a Down port has no far end, and no width or speed
    elif state.group(3) != "Down" and far_text == _LI_NOT_AVAILABLE:
        entry["remote_not_available"] = True
    else:
        errors.append(f"{where}: its far end is not whole ({far_text[-60:]!r}): cut short")
        return None
    return entry
