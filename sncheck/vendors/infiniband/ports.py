"""A port's state as the verbs and SMP tools print it: ``ibv_devinfo`` (view ``ibv-devinfo``)
and ``ibportstate`` (view ``ibportstate``).

``ibv_devinfo [-v]`` (linux-rdma/rdma-core ``libibverbs/examples/devinfo.c`` at 691953d, the
layout unchanged since rdma-core v15 / libibverbs 1.1.8):

- per device ``hca_id:\\t<name>``, then ``\\t<key>:\\t+<value>`` lines (``transport``,
  ``fw_ver``, ``node_guid``, ``sys_image_guid``, ``vendor_id``, ``vendor_part_id``, ``hw_ver``,
  ``board_id``, ``phys_port_cnt``; ``-v`` adds ``max_*`` and capability flag lines, indented
  deeper), then per port ``\\t\\tport:\\t<n>`` and ``\\t\\t\\t<key>:\\t+<value>`` lines:
  ``state: PORT_ACTIVE (4)`` (``PORT_DOWN (1)``, ``PORT_INIT (2)``, ``PORT_ARMED (3)``,
  ``PORT_ACTIVE_DEFER (5)``), ``max_mtu``/``active_mtu: 4096 (5)``, ``sm_lid``, ``port_lid``,
  ``port_lmc``, ``link_layer: InfiniBand|Ethernet``, with ``-v`` ``active_width: 4X (2)``,
  ``active_speed: 25.0 Gbps (32)``, ``phys_state: LINK_UP (5)`` (IB transport only), GIDs;
  a blank line ends each device.
- errors (stderr): ``No IB devices found``, ``Failed to open device``, ``Failed to query port``.
- whole: every device has ``phys_port_cnt`` ports listed, each with its ``state`` and through its
  ``link_layer`` (print_hca_cap prints it for every port after ``port_lmc``; harvest 9: a cut
  between a port's state and its link_layer read as whole); under ``-v`` (a device printing
  ``max_mr_size`` first) each port's lines go on to ``active_speed`` and, on an InfiniBand
  transport, ``phys_state`` before its GIDs (review1: a cut between them read as whole).
- vocabulary (devinfo.c ``link_layer_str``, ``ibv_port_state_str``, ``port_phy_state_str``):
  ``phys_port_cnt`` a count, ``link_layer`` InfiniBand|Ethernet (IB before rdma-core 17, Unknown,
  Unspecified), the states' names as above: a value outside it (``phys_port_cnt: ``, ``link_layer:
  Infini``) is its line cut and the paste ended with a newline (cuts15: the listing's ``formats``); so
  is a lone ``hca`` (the next device's first line cut: that device lost).
- failures (exit 1): a port whose state is not ``PORT_ACTIVE``; a ``phys_state`` other than
  ``LINK_UP``; the error lines.

``ibportstate [-C CA] [-P PORT] LID PORTNUM [query]`` (rdma-core ``infiniband-diags/
ibportstate.c``, libibmad ``mad_dump_field``; the same since infiniband-diags 1.5):

- ``CA/RT PortInfo:`` or ``Switch PortInfo:`` (``Initial ... PortInfo:`` before a change,
  ``Peer PortInfo:`` for a switch port's peer, ``After PortInfo set:``), then
  ``# Port info: Lid 3 port 1`` (``DR path slid ...`` for directed routes), then fields
  ``Name:....value`` (dots pad to column 33): ``LinkState`` (``Active``, ``Down``, ``Init``,
  ``Armed``), ``PhysLinkState`` (``LinkUp``, ``Polling``, ``Disabled``...), ``Lid``, ``SMLid``,
  ``LMC``, ``LinkWidthSupported``/``Enabled``/``Active`` (``4X``), ``LinkSpeedSupported``/
  ``Enabled``/``Active`` (``2.5 Gbps or 5.0 Gbps``), ``LinkSpeedExt*`` (``14.0625 Gbps``,
  ``53.125 Gbps``...), ``LinkSpeedExt*2`` (``106.25 Gbps``), ``Mkey``, ``MkeyLeasePeriod``,
  ``ProtectBits``.
- ``# MLNX ext Port info: Lid L port N`` (``-D``/Mellanox extended, ``StateChangeEnable``,
  ``LinkSpeed*`` as hex masks): read, not judged (no link state in it).
- ``ibwarn: [pid] FUNC: Peer ports operating at active width W rather than ...`` (and speed):
  a mismatch between the two ends; ``ibpanic: ... failed`` / ``ibportstate: iberror: ...``.
- whole: every port up to ``LinkSpeedActive``; a CA's (``CA/RT``) down to ``ProtectBits``
  (the M_Key lines are printed for a CA and a switch's port 0). ``main()`` prints, in order:
  the ``... PortInfo:`` line, the port's block, its ``# MLNX ext`` block (Mellanox devices:
  ``StateChangeEnable`` .. ``LinkSpeedActive``, libibmad ``mad_dump_mlnx_ext_port_info``),
  then for a change (``Initial ... PortInfo:``) ``After PortInfo set:`` and the port's block
  again (``Port is already in enable state`` for ``on`` instead; a ``disable`` / ``off`` prints
  ``Disable may be irreversible`` before it: kept in ``warnings``), and for a query of an Active
  switch port other than 0 ``Peer PortInfo:`` and the peer's block. So an MLNX ext block with
  no port block before it, a ``... PortInfo:`` line with no block after it, a change without
  its ``After PortInfo set:`` block and an Active switch port without its peer are cut short.
  In 1.5 (infiniband-diags 1.5.x ibportstate.c, code corpus file id 4677905677) the line is ``CA PortInfo:``
  / ``Switch PortInfo:`` (``Initial CA PortInfo:``) and show_port_info prints LinkState .. LMC and the widths and
  speeds, down to LinkSpeedActive, a CA's too: no M_Key lines, no Ext speeds (harvest25's Intel HFI capture).
  Before 1.5 the line is ``PortInfo:`` alone and the block the port states and widths and speeds
  only (exadata-issue2): it names no node type, so a switch port's block cut before its ``Peer
  PortInfo:`` is a CA port's whole block (random cuts: a named exception, not a guess).
- failures (exit 1): ``LinkState`` not ``Active``, ``PhysLinkState`` not ``LinkUp``, the
  ``Peer ports operating at ...`` warnings, errors (a field given twice in one block: the first
  kept and judged, the splice an error; hostile r15).

The active speed (``speed``): ``LinkSpeedExtActive``, but libibmad's ``mad_dump_linkspeedext`` prints 0 as
``No Extended Speed`` (no speed: the port runs at ``LinkSpeedActive``, harvest25's QDR / FDR10 CA) and
``mad_dump_linkspeed`` prints 0 as ``Extended speed`` (the speed is then the Ext field's).

JSON (both): ``{"tool", "devices"|"ports": [...], "faults", "errors"}``; ``ibv-devinfo``:
``devices: [{"name", "transport", "fw_ver", "node_guid", "board_id", "vendor_part_id",
"phys_port_cnt", "ports": [{"port", "state", "state_code", "phys_state", "link_layer",
"active_mtu", "active_width", "active_speed", "port_lid", "sm_lid"}]}]``; ``ibportstate``:
``ports: [{"role": "CA/RT"|"Switch"|"Peer"|..., "lid", "port", "fields": {Name: value},
"link_state", "phys_state", "width", "speed"}]``.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError

_DEV_ERRORS = ("No IB devices found", "Failed to open device", "Failed to query", "Failed to get IB devices")
_VALUE = re.compile(r"^(?P<v>.*?)(?: \((?P<code>\d+)\))?$")


def _field(line: str) -> tuple[str, str] | None:
    key, sep, value = line.partition(":")
    if not sep or not key or " " in key.strip():
        return None
    return key.strip(), value.strip()


_PORT_KEYS = ("state", "phys_state", "link_layer", "active_mtu", "active_width", "active_speed", "port_lid", "sm_lid")


def _device(name: str | None) -> dict[str, Any]:
    return {"name": name, "transport": None, "fw_ver": None, "node_guid": None, "board_id": None,
            "vendor_part_id": None, "phys_port_cnt": None, "ports": []}


def _port(number: int | None) -> dict[str, Any]:
    return {"port": number, "state": None, "state_code": None, "phys_state": None, "link_layer": None,
            "active_mtu": None, "active_width": None, "active_speed": None, "port_lid": None, "sm_lid": None}


def _port_value(key: str, value: str) -> Any:
    """``4096 (5)`` -> ``4096``; the lids as numbers."""
    if key in ("port_lid", "sm_lid"):
        return int(value) if value.isdecimal() else value
    m = _VALUE.match(value)
    return m["v"] if m else value


def parse_ibv_devinfo(text: str) -> dict[str, Any]:
    """``ibv_devinfo [-v]`` output (see the module)."""
    devices: list[dict[str, Any]] = []
    errors: list[str] = []
    port: dict[str, Any] | None = None
    verbose: set[int] = set()  # the devices (and their ports) -v printed: each port ends at active_speed/phys_state
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if any(e in line for e in _DEV_ERRORS):
            errors.append(line[:200])
            continue
        kv = _field(line)
        if kv is None and "hca_id:".startswith(line):  # a device's first line cut short: the device lost
            errors.append(f"'{line}': a device's 'hca_id:' line cut short")
        if kv is None:
            continue  # a capability flag, a GID continuation
        key, value = kv
        if key == "hca_id":
            devices.append(_device(value))
            port = None
        elif not devices and key in _PORT_KEYS:
            # a port's lines before any hca_id: the start of the output was cut away (an excerpt);
            # what it shows is kept (and judged) under a device and port without their names
            errors.append("port lines before any 'hca_id:' line: the start of the output is cut away")
            devices.append(_device(None))
            port = _port(None)
            devices[-1]["ports"].append(port)
            port[key] = _port_value(key, value)
        elif not devices:
            continue
        elif key == "port" and value.isdecimal():
            port = _port(int(value))
            devices[-1]["ports"].append(port)
            if id(devices[-1]) in verbose:
                verbose.add(id(port))  # a -v device's port prints -v's lines too
        elif port is None and key == "max_mr_size":
            verbose.add(id(devices[-1]))  # -v: the device's attributes, then each port's -v lines
        elif port is None and key in ("transport", "fw_ver", "node_guid", "board_id", "vendor_part_id",
                                      "phys_port_cnt"):
            devices[-1][key] = int(value) if key in ("vendor_part_id", "phys_port_cnt") and value.isdecimal() else value
        elif port is not None and key in port:
            if key == "state":
                m = _VALUE.match(value)
                port["state"], port["state_code"] = (m["v"], int(m["code"]) if m["code"] else None) if m else (value, None)
            else:
                port[key] = _port_value(key, value)
    if not devices and not errors:
        raise ParseError("no hca_id line and no ibv_devinfo error", tool="ibv-devinfo")
    faults = []
    for d in devices:
        want = d["phys_port_cnt"]
        if d["name"] is None:
            pass  # the cut-away device: said above
        elif isinstance(want, int) and len(d["ports"]) < want:
            errors.append(f"{d['name']}: {len(d['ports'])} of its {want} ports listed: cut short")
        elif want is None and not d["ports"]:
            errors.append(f"{d['name']}: no phys_port_cnt and no port: cut short")
        errors += _port_numbers(d)
        for p in d["ports"]:
            where = f"{d['name']} port {p['port']}" if d["name"] is not None else "the port before the first hca_id"
            if p["state"] is None:
                if d["name"] is not None:  # the cut-away port's state line went with its start
                    errors.append(f"{where}: no state line: cut short")
            elif p["link_layer"] is None:
                # devinfo.c prints state .. port_lmc then link_layer for every port (-v: more after it)
                errors.append(f"{where}: no link_layer line (printed for every port after port_lmc): cut short")
            elif id(p) in verbose and (p["active_speed"] is None or (
                    p["phys_state"] is None and str(d["transport"]).startswith("InfiniBand"))):
                ib = str(d["transport"]).startswith("InfiniBand")
                errors.append(f"{where}: -v's lines end before its active_speed{' and phys_state' if ib else ''}: "
                              "cut short")
            if p["state"] not in (None, "PORT_ACTIVE"):
                faults.append(f"{where}: {p['state']}")
            if p["phys_state"] and p["phys_state"] != "LINK_UP":
                faults.append(f"{where}: physical state {p['phys_state']}")
    return {"tool": "ibv-devinfo", "devices": devices, "faults": faults, "errors": errors}


def _port_numbers(d: dict[str, Any]) -> list[str]:
    """devinfo.c lists a device's ports 1 to phys_port_cnt, each once: a port twice (its lines spliced
    or repeated: a port not listed in its place) or numbered outside them is no output of it."""
    if d["name"] is None:
        return []  # the cut-away device: its ports' numbers went with its start
    want, seen, out = d["phys_port_cnt"], set(), []
    for p in d["ports"]:
        n = p["port"]
        if n in seen:
            out.append(f"{d['name']}: port {n} is listed twice: output spliced or repeated")
        elif isinstance(want, int) and not 1 <= n <= want:
            out.append(f"{d['name']}: port {n} is not one of its ports 1 to {want} (phys_port_cnt)")
        seen.add(n)
    return out


_PORTINFO = re.compile(r"^(?:(?P<when>Initial|After) )?(?P<role>CA/RT|CA|Switch|Peer|MLNX ext)? ?"
                       r"(?P<what>PortInfo|MLNXExtendedPortInfo)(?: set)?:$")
_MLNX_LAST = "LinkSpeedActive"  # the last field mad_dump_mlnx_ext_port_info prints
# main()'s printf for 'disable' / 'off', between the initial block and 'After PortInfo set:' (kept, not judged)
_DISABLE_WARNING = "Disable may be irreversible"
# the '# ' lost where a paste went through markdown (a heading) or a comment (harvest25's HFI test): the same line
_PORT_HEADER = re.compile(r"^(?:# ?)?(?:MLNX ext )?Port info: (?P<where>.*?) ?port (?P<port>\d+)$")
_LID = re.compile(r"\bLid (\d+)")
_DOTTED = re.compile(r"^(?P<key>[A-Za-z][\w/]*):\.*(?P<value>.*)$")


def parse_ibportstate(text: str) -> dict[str, Any]:
    """``ibportstate`` query output (see the module)."""
    ports: list[dict[str, Any]] = []
    errors: list[str] = []
    warnings: list[str] = []
    role = "port"  # until a 'CA/RT PortInfo:' / 'Switch PortInfo:' line says which
    pending: str | None = None  # a '... PortInfo:' line whose block has not begun
    change = done = False  # 'Initial ... PortInfo:' seen; its 'After PortInfo set:' block / 'already' line
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("ibwarn:") or "Peer ports operating at" in line or line == _DISABLE_WARNING:
            warnings.append(line[:300])
            continue
        if line.startswith("ibpanic:") or "iberror:" in line or line.startswith("ibportstate: "):
            errors.append(line[:300])
            pending = None  # the query that failed prints no block
            continue
        if line == "Port is already in enable state":
            done = True
            continue
        if m := _PORTINFO.match(line):
            pending = line
            role = m["role"] or "port"
            change = change or m["when"] == "Initial"
            if m["when"] == "After" and m["what"] == "PortInfo":
                role, done = "after set", True
            continue
        if m := _PORT_HEADER.match(line):
            pending = None
            lid = _LID.search(m["where"])
            ports.append({"role": "MLNX ext" if "MLNX ext" in line else role, "lid": int(lid[1]) if lid else None, "port": int(m["port"]), "fields": {},
                          "link_state": None, "phys_state": None, "width": None, "speed": None})
            continue
        if (m := _DOTTED.match(line)) and "..." in line:
            if not ports:  # fields without their '# Port info' header (a pasted excerpt)
                ports.append({"role": role, "lid": None, "port": None, "fields": {}, "link_state": None,
                              "phys_state": None, "width": None, "speed": None})
            fields, value = ports[-1]["fields"], m["value"].strip()
            if m["key"] in fields:  # mad_dump_portinfo prints a field once a block: the first kept, the splice said
                ports[-1].setdefault("twice", []).append((m["key"], fields[m["key"]], value))
            else:
                fields[m["key"]] = value
    if not ports and not errors:
        raise ParseError("no '# Port info:' block and no ibportstate error", tool="ibportstate")
    errors += _order_errors(ports, pending, change and not done and not errors)
    # ibwarn also prints -d debug lines (umad_*): only the peer mismatch is a finding
    faults = [f"ibportstate: {w}" for w in warnings if "Peer ports operating at" in w]
    node = None  # the node type the change's initial block named: its 'After PortInfo set:' block is that port's
    _fdr10(ports)
    for p in ports:
        node = p["role"] if p["role"] in ("CA/RT", "CA", "Switch") else node
        f = p["fields"]
        p["link_state"], p["phys_state"] = f.get("LinkState"), f.get("PhysLinkState")
        ext = f.get("LinkSpeedExtActive")  # libibmad mad_dump_linkspeedext: 0 is 'No Extended Speed' (no speed)
        p["width"] = f.get("LinkWidthActive")
        p["speed"] = ext if ext and not ext.startswith("No Extended Speed") else \
            _FDR10 if p.pop("fdr10", False) else f.get("LinkSpeedActive")
        where = ("" if p["role"] == "port" else f"{p['role']} ") + f"port {p['port']}" + \
            (f" (lid {p['lid']})" if p["lid"] is not None else "")
        errors += [f"{where}: {k} is listed twice ({a}, then {b}): outputs spliced" for k, a, b in p.pop("twice", ())]
        if empty := [k for k, v in f.items() if not v]:
            errors.append(f"{where}: {empty[0]} without its value: cut short")
        if p["role"] == "MLNX ext":  # MLNXExtendedPortInfo: speeds and state-change flags, no link state
            if _MLNX_LAST not in f:
                errors.append(f"{where}: no {_MLNX_LAST} line (the last its MLNX ext block prints): cut short")
            continue
        if p["link_state"] is None or p["phys_state"] is None:
            errors.append(f"{where}: no LinkState / PhysLinkState: cut short")
            continue
        if p["link_state"] != "Active":
            faults.append(f"{where}: LinkState {p['link_state']}")
        if p["phys_state"] != "LinkUp":
            faults.append(f"{where}: PhysLinkState {p['phys_state']}")
        # Every port prints up to LinkSpeedActive; a CA's (not a switch port's) ends with ProtectBits, after a
        # change too (main() shows the same port again: harvest17's reset and disable of a CA cut before it)
        last = "ProtectBits" if p["role"] == "CA/RT" or (p["role"] == "after set" and node == "CA/RT") \
            else "LinkSpeedActive"
        if last not in f:
            errors.append(f"{where}: no {last} line (the last a {p['role']} port prints): cut short")
    return {"tool": "ibportstate", "ports": ports, "warnings": warnings, "faults": faults, "errors": errors}


# infiniband-diags iblinkinfo.c print_port: a port with no extended speed active whose Mellanox
# ExtendedPortInfo LinkSpeedActive has the FDR10 bit (ibnetdisc.h FDR10 0x01) runs FDR10 (10.3125 Gb/s
# a lane, 64b/66b) where its PortInfo LinkSpeedActive reads QDR's '10.0 Gbps'; printed so
_FDR10 = "10.0 Gbps (FDR10)"


def _fdr10(ports: list[dict[str, Any]]) -> None:
    """Mark each port block whose MLNX ext block says FDR10 active (``fdr10``): main() prints a
    port's MLNX ext block right after its block (the peer's after the peer's), and a change's
    'After PortInfo set:' block is the same port as the initial one (an 'After MLNXExtendedPortInfo
    set:' block before it is that port's new state)."""
    owner: dict[str, Any] | None = None
    initial: dict[str, Any] | None = None
    for p in ports:
        if p["role"] != "MLNX ext":
            owner = p
            if p["role"] == "after set" and initial is not None:
                p["fdr10"] = initial.get("fdr10", False)
            initial = initial or p
            continue
        try:
            active = int(p["fields"].get("LinkSpeedActive", ""), 16)
        except ValueError:
            continue  # cut before it (said by the block's own check)
        if owner is not None:
            owner["fdr10"] = bool(active & 0x01)


def _order_errors(ports: list[dict[str, Any]], pending: str | None, no_after: bool) -> list[str]:
    """What ``main()``'s order of blocks says is missing (see the module): the output's start
    or its end cut away."""
    out = []
    if ports and ports[0]["role"] == "MLNX ext":
        out.append("an MLNX ext block with no port block before it (ibportstate prints the port's first): "
                   "the start of the output is cut away")
    if pending is not None:
        out.append(f"'{pending}' without the port block it announces: cut short")
    elif no_after:
        out.append("'Initial ... PortInfo:' (a change) without its 'After PortInfo set:' block: cut short")
    last = ports[-1] if ports else None
    if last is not None and pending is None and last["role"] == "Switch" and last["port"] \
            and last["fields"].get("LinkState") == "Active":
        out.append(f"switch port {last['port']} is Active but its 'Peer PortInfo:' block is missing: cut short")
    return out
