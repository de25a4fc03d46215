"""Parse ``ibstat`` and ``ibstatus`` output (InfiniBand / RoCE HCA ports).

Both return the same shape (``ibstatus`` has no CA-level fields; those are null)::

    {"tool": "ibstat",                       # or "ibstatus"
     "cas": [{"name": "mlx5_0", "ca_type": "MT4124", "num_ports": 1,
              "firmware_version": "20.41.1000", "hardware_version": "0",
              "node_guid": "0x00155dfffe3411eb", "system_image_guid": "0xb83f...",
              "ports": [{"port": 1, "state": "Active", "physical_state": "LinkUp",
                         "rate_gbps": 200, "base_lid": 13247, "lmc": 0, "sm_lid": 1,
                         "capability_mask": "0xa651ec48", "port_guid": "0x0015...",
                         "link_layer": "InfiniBand"}]}],
     "faults": [],                           # a port not Active / LinkUp: "mlx5_11 port 1: Down / Polling"
     "errors": []}                           # e.g. the "ibpanic: ..." line; CAs before it are kept

``ibstatus`` ports also carry ``default_gid``, ``state_code`` / ``physical_state_code``
(the numbers it prints before the names) and ``rate`` (the full text, "200 Gb/sec (4X HDR)").
State names are kept as each tool prints them: ``Active`` from ibstat, ``ACTIVE`` from
ibstatus. A field the output lacks is absent from the port and null on the CA. A port's
``Link layer`` is the kernel's sysfs word (InfiniBand, Ethernet, Unknown; the ibstatus script's IB):
another (``Link layer: I``) is its line cut and the paste ended with a newline (cuts15: the listing's
``formats``), an error.

A port whose logical state is not Active or whose physical state is not LinkUp (ibstat
``Down`` / ``Polling``, ibstatus ``1: DOWN`` / ``2: Polling``) is a fault, as ``ibv_devinfo``
and ``ibportstate`` read theirs: the tool shows a link that is not up. Which ports a host
must have up is the host facts' judgement (the inventory's rails); ``parse`` says what the
listing shows.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end
from sncheck.vendors.delivery import command_line
from sncheck.vendors.grammar import Grammar

GRAMMAR = {
    "ibstat": Grammar(
        tool="ibstat [CA [port]] (infiniband-diags)",
        versions="infiniband-diags 1.6 to rdma-core 60 (OFED and inbox)",
        sources=(
            "linux-rdma/rdma-core infiniband-diags/ibstat.c @ 691953d (2026-08): ca_dump ('%s '%s'' node type and "
            "name, '\t%s type: %s', 'Number of ports', 'Firmware version', 'Hardware version', 'Node GUID: "
            "0x%016x', 'System image GUID'), port_dump ('\tPort %d:' then '\t\tState' from port_state_str "
            "???/Down/Initializing/Armed/Active, 'Physical state' from port_phy_state_str No state change/Sleep/"
            "Polling/Disabled/PortConfigurationTraining/LinkUp/LinkErrorRecovery/PhyTest, 'Rate: %d' or '%d "
            "(FDR10)' or '2.5', 'Effective speed: %g' where ibv_query_port_speed answers, 'Base lid', 'LMC', "
            "'SM lid', 'Capability mask: 0x%08x', 'Port GUID: 0x%016x', 'Link layer: %s')",
            "the same file: 'ibpanic: ... stat of IB device ... failed' for a CA name that is not there",
        ),
        lines="per CA: its header and 6 fields, then per port: 'Port N:' and its fields in that order; "
              "'ibstat CA PORT' (ca_stat): \"CA: 'name'\" and that one port's block, unindented (port_dump alone); "
              "'ibstat -s': the CA blocks alone (short_format: ca_stat returns after ca_dump)",
        end=("each CA lists 'Number of ports' port blocks and each port ends with 'Link layer'; the count of CAs "
             "is the judge's (the inventory's rails). After the listing ibstat prints nothing: the ibstat command "
             "again (a prompt's or not) is two runs in one file, other lines are not read (sncheck.vendors.after_end)"),
        failures="a port not Active or not LinkUp (faults); an ibpanic/error line (errors)",
        values="cas[{name, ca_type, num_ports, firmware_version, hardware_version, node_guid, system_image_guid, "
               "ports[{port, state, physical_state, rate_gbps, effective_speed, base_lid, lmc, sm_lid, "
               "capability_mask, port_guid, link_layer}]}], faults, errors",
    ),
    "ibstatus": Grammar(
        tool="ibstatus (infiniband-diags script over /sys/class/infiniband)",
        versions="infiniband-diags 1.6 to rdma-core 60",
        sources=("linux-rdma/rdma-core infiniband-diags/scripts/ibstatus @ 691953d (port_status): \"Infiniband "
                 "device '$1' port $2 status:\" then 'default gid:', 'base lid:', 'sm lid:', 'state:' ('4: ACTIVE'), "
                 "'phys state:' ('5: LinkUp'), 'rate:' ('200 Gb/sec (4X HDR)'), 'link_layer:' (IB when sysfs has "
                 "none), each 'unknown' where sysfs has no file, then a blank line; 'Fatal error: ...'",),
        lines="per port: its header line and 7 tab-indented 'name:\t value' lines, a blank line",
        end="each port block ends with its link_layer line; the count of CAs is the judge's",
        failures="a port not ACTIVE or not LinkUp (faults); 'Fatal error' lines (errors)",
        values="cas[{name, ports[{port, default_gid, base_lid, sm_lid, state, state_code, physical_state, "
               "physical_state_code, rate, rate_gbps, link_layer}]}], faults, errors",
    ),
}

# the command pasted with its output ('[root@h ~]# ibstat', '$ sudo /usr/sbin/ibstat mlx5_0')
_COMMAND = command_line("ibstat")
_CA_LINE = re.compile(r"^CA\s+'([^']+)'\s*$")
_SHORT = re.compile(r"(?:^|[\s#$>/])ibstat\s(?:.*\s)?(?:-s|--short)(?:\s|$)")
# 'ibstat CA PORT': ca_stat's "%s: '%s'" (node type, CA name), then that one port, unindented
_ONE_PORT = re.compile(r"^(?:CA|Switch|Router|\?\?\?):\s+'([^']+)'\s*$")
_PORT_LINE = re.compile(r"^Port\s+([0-9]+):\s*$")
_KEY_VALUE = re.compile(r"^([A-Za-z][A-Za-z _]*?)\s*:\s*(.*?)\s*$")
_TOOL_ERROR = re.compile(
    r"^(?:ibpanic|ibwarn|ibstat|ibstatus):|No IB devices found|Fatal error",
    re.IGNORECASE,
)
_STATUS_HEADER = re.compile(
    r"^Infiniband device\s+'([^']+)'\s+port\s+([0-9]+)\s+status:\s*$"
)
_CODED = re.compile(r"^([0-9]+):\s*(\S.*)$")  # "4: ACTIVE"
_RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)")

_CA_FIELDS = {
    "ca type": "ca_type",
    "number of ports": "num_ports",
    "firmware version": "firmware_version",
    "hardware version": "hardware_version",
    "node guid": "node_guid",
    "system image guid": "system_image_guid",
}
_INT_FIELDS = frozenset({"num_ports", "base_lid", "lmc", "sm_lid"})


def parse_ibstat(text: str) -> dict[str, Any]:
    """Parse ``ibstat``: every CA with its ports; ``ibpanic``/``ibwarn`` lines go to ``errors``. After the
    listing, the ibstat command pasted again is a second run (only the first is read), and lines that are
    no part of the grammar are not read (:mod:`sncheck.vendors.after_end`)."""
    cas: list[dict[str, Any]] = []
    errors: list[str] = []
    port: dict[str, Any] | None = None
    after: list[tuple[int, str]] = []  # the lines since the last one the grammar reads, numbered
    alone: set[int] = set()  # the CAs of the one-port form: no CA fields, one port
    short = False  # the pasted command line says -s/--short
    for at, raw in after_end.numbered(text):
        line = raw.strip()
        if not line:
            continue
        if _COMMAND.match(line):
            if cas:
                after.append((at, line))  # the command again, behind a prompt or not: a second run begins
                break
            short = bool(_SHORT.search(line))
            continue
        if m := _CA_LINE.match(line) or _ONE_PORT.match(line):
            alone |= {len(cas)} if line.split()[0].endswith(":") else set()
            cas.append(_new_ca(m.group(1)))
            port = None
        elif _TOOL_ERROR.search(line):
            errors.append(line)
        elif cas and (m := _PORT_LINE.match(line)):
            port = {"port": int(m.group(1))}
            cas[-1]["ports"].append(port)
        elif cas and (m := _KEY_VALUE.match(line)) and not (port is not None and "link_layer" in port):
            _store(cas[-1], port, m.group(1), m.group(2))
        elif cas:  # (a 'key: value' after a port's last line, 'Link layer', is no field of it)
            after.append((at, line))
            continue
        after = []
    if not cas and not errors:
        raise ParseError("no \"CA '<name>'\" sections found", tool="ibstat")
    # -s: ca_stat returns after ca_dump, no CA lists a port; a cut leaves the first CA's ports,
    # so two CAs or more with none are the short form too (one alone is a cut unless the command says it)
    short = (short or len(cas) > 1) and not alone and not any(ca["ports"] for ca in cas)
    errors += _cut_short(cas, alone, short) + after_end.judge(after, "ibstat", lambda ln: bool(_COMMAND.match(ln)))
    return {"tool": "ibstat", "cas": cas, "faults": _ports_down(cas), "errors": errors}


def _ports_down(cas: list[dict[str, Any]]) -> list[str]:
    """Each port the listing shows not up (see the module)."""
    out = []
    for ca in cas:
        for port in ca["ports"]:
            state, phys = port.get("state"), port.get("physical_state")
            if (state and state.lower() != "active") or (phys and phys.lower() != "linkup"):
                out.append(f"{ca['name']} port {port['port']}: {state or '?'} / {phys or '?'}")
    return out


def _cut_short(cas: list[dict[str, Any]], alone: set[int], short: bool) -> list[str]:
    """ibstat has no end marker, but each CA says how many ports follow and each port block
    ends with ``Link layer``: a CA short of its ports, or a port without it, was cut. The
    one-port form (``alone``) prints no CA fields and its one port; ``-s`` (``short``) no port."""
    out = []
    for i, ca in enumerate(cas):
        if i in alone:
            if not ca["ports"]:
                out.append(f"CA {ca['name']}: its port's block is missing: output cut short")
        elif ca.get("num_ports") is None:
            out.append(f"CA {ca['name']}: no 'Number of ports' line: output cut short")
        elif short and (lost := [k for k in _CA_FIELDS.values() if ca.get(k) is None]):
            out.append(f"CA {ca['name']}: no {', '.join(lost)}: output cut short")  # ca_dump prints all 6
        elif len(ca["ports"]) < ca["num_ports"] and not short:
            out.append(f"CA {ca['name']}: {len(ca['ports'])} of its {ca['num_ports']} ports listed: output cut short")
        for port in ca["ports"]:
            if "link_layer" not in port:
                out.append(f"CA {ca['name']} port {port['port']}: ends before 'Link layer': output cut short")
    return out


def parse_ibstatus(text: str) -> dict[str, Any]:
    """Parse ``ibstatus``: one block per device port, grouped into CAs like ``parse_ibstat``."""
    cas: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    port: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _STATUS_HEADER.match(line):
            port = {"port": int(m.group(2))}
            cas.setdefault(m.group(1), _new_ca(m.group(1)))["ports"].append(port)
        elif line.startswith("Infiniband device") or "Infiniband device".startswith(line):
            errors.append(f"'{line}': a port's 'Infiniband device ... status:' line cut short (the port lost)")
        elif _TOOL_ERROR.search(line):
            errors.append(line)
        elif port is not None and (m := _KEY_VALUE.match(line)):
            port.update(_status_field(m.group(1).lower(), m.group(2)))
    if not cas and not errors:
        raise ParseError(
            "no \"Infiniband device '<name>' port N status:\" blocks found",
            tool="ibstatus",
        )
    return {"tool": "ibstatus", "cas": list(cas.values()), "faults": _ports_down(list(cas.values())), "errors": errors}


def _new_ca(name: str) -> dict[str, Any]:
    ca: dict[str, Any] = {"name": name}
    ca.update({key: None for key in _CA_FIELDS.values()})
    ca["ports"] = []
    return ca


def _store(
    ca: dict[str, Any], port: dict[str, Any] | None, key: str, value: str
) -> None:
    name = key.strip().lower()
    if port is None:
        if name in _CA_FIELDS:
            ca[_CA_FIELDS[name]] = _convert(_CA_FIELDS[name], value)
        return
    field_name = "rate_gbps" if name == "rate" else re.sub(r"\W+", "_", name)
    port[field_name] = _convert(field_name, value)


def _status_field(name: str, value: str) -> dict[str, Any]:
    """One ``ibstatus`` line as port fields named like ibstat's."""
    if name in ("state", "phys state"):
        key = "state" if name == "state" else "physical_state"
        m = _CODED.match(value)
        if m:
            return {key: m.group(2), f"{key}_code": int(m.group(1))}
        return {key: value}
    if name == "rate":
        return {"rate": value, "rate_gbps": _convert("rate_gbps", value)}
    key = re.sub(r"\W+", "_", name)
    return {key: _convert(key, value)}


def _convert(key: str, value: str) -> Any:
    if value.lower() in ("unknown", "n/a", ""):
        return None
    if key in _INT_FIELDS:
        # ibstat prints lids in decimal, ibstatus in hex ("0x33bf").
        if re.fullmatch(r"0x[0-9a-fA-F]+|[0-9]+", value):
            return int(value, 0) if value.startswith("0x") else int(value)
        return None
    if key == "rate_gbps":
        m = _RATE.match(value)
        if not m:
            return None
        return float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return value
