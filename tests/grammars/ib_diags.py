"""infiniband-diags' fabric views, from the grammars in
sncheck/vendors/infiniband/ibnetdiscover_grammar.py and counters.py (rdma-core
infiniband-diags: ibnetdiscover.c, iblinkinfo.c, ibqueryerrors.c; the kernel's port counters
in sysfs as sncheck reads them): a fabric of leaves and spines with 1 to 72 host adapters,
links up and down, every link printed from both its ends."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from grammars import ALL, Variant, generator

from sncheck.vendors.infiniband.counters import END_MARKER

_SPEED = {"SDR": "2.5 Gbps", "QDR": "10.0 Gbps", "FDR": "14.0625 Gbps", "EDR": "25.78125 Gbps",
          "HDR": "53.125 Gbps", "NDR": "106.25 Gbps"}


@dataclass
class _Node:
    kind: str                 # "switch" or "ca"
    guid: int
    desc: str
    lid: int
    nports: int
    links: dict[int, tuple[_Node, int]] = field(default_factory=dict)  # port -> (far node, far port)

    def port_guid(self, port: int) -> int:
        return self.guid if self.kind == "switch" else self.guid + port


def _fabric(rng: random.Random, hcas: int, leaves: int, spines: int, radix: int = 40) -> list[_Node]:
    """Switches first (leaves, spines), then the host adapters, each cabled to a leaf port;
    each leaf's last ports go up, one to each spine."""
    lid = iter(range(1, 10_000))
    leaf = [_Node("switch", 0x0c42a10300b95b00 + i, f"MF0;leaf{i:02d}:MQM8700/U1", next(lid), radix)
            for i in range(leaves)]
    spine = [_Node("switch", 0x0c42a10300b96000 + i, f"MF0;spine{i}:MQM8700/U1", next(lid), max(leaves, 4))
             for i in range(spines)]
    cas = []
    for h in range(hcas):
        ca = _Node("ca", 0xb88303ffff7f0000 + 0x10 * h, f"gpu{h // 8:02d} mlx5_{h % 8}", next(lid),
                   rng.choice((1, 1, 2)))
        sw = leaf[h % leaves]
        free = next(p for p in range(1, radix + 1 - spines) if p not in sw.links)
        sw.links[free] = (ca, 1)
        ca.links[1] = (sw, free)
        cas.append(ca)
    for s, sp in enumerate(spine):
        for i, lf in enumerate(leaf):
            lf.links[radix - s] = (sp, i + 1)
            sp.links[i + 1] = (lf, radix - s)
    return leaf + spine + cas


# ----------------------------------------------------------------------------- ibnetdiscover

def _ibnetdiscover_text(nodes: list[_Node], speed: str, full: bool) -> list[str]:
    host = next(n for n in nodes if n.kind == "ca")  # run on a host: its adapter's node and port GUIDs
    lines = ["#", "# Topology file: generated on Sat Dec  5 03:35:11 2026", "#",
             f"# Initiated from node {host.guid:016x} port {host.port_guid(1):016x}"]
    extra = " s=4 w=2 v=4" if full else ""
    for n in nodes:
        lines += ["", "vendid=0x2c9", "devid=0xd2f0" if n.kind == "switch" else "devid=0x101b",
                  f"sysimgguid=0x{n.guid:x}"]
        if n.kind == "switch":
            lines += [f"switchguid=0x{n.guid:x}({n.guid:x})",
                      f'Switch\t{n.nports} "S-{n.guid:016x}"\t\t# "{n.desc}" enhanced port 0 lid {n.lid} lmc 0']
        else:
            lines += [f"caguid=0x{n.guid:x}", f'Ca\t{n.nports} "H-{n.guid:016x}"\t\t# "{n.desc}"']
        for p, (far, fp) in sorted(n.links.items()):
            name = f'"{"S" if far.kind == "switch" else "H"}-{far.guid:016x}"[{fp}]'
            if n.kind == "switch":
                guid = f"({far.port_guid(fp):x}) " if far.kind == "ca" else ""
                lines.append(f'[{p}]\t{name}{guid}\t\t# "{far.desc}" lid {far.lid} 4x{speed}{extra}')
            else:
                lines.append(f'[{p}]({n.port_guid(p):x}) \t{name}\t\t# lid {n.lid} lmc 0 "{far.desc}" lid '
                             f"{far.lid} 4x{speed}{extra}")
    return lines


@generator("ibnetdiscover")
def ibnetdiscover(rng: random.Random) -> Iterator[Variant]:
    for hcas, leaves, spines in ((1, 1, 0), (8, 1, 1)) + (((72, 4, 2),) if ALL else ((16, 2, 1),)):
        speed = rng.choice(("EDR", "HDR", "NDR", "FDR10", "QDR"))
        full = rng.random() < 0.4
        nodes = _fabric(rng, hcas, leaves, spines)
        lines = _ibnetdiscover_text(nodes, speed, full)
        last, first = nodes[-1], nodes[0]
        far, fp = last.links[1]
        values = [("len(nodes)", len(nodes)), (f"nodes[guid=0x{first.guid:016x}].lid", first.lid),
                  (f"nodes[guid=0x{last.guid:016x}].links[0].remote_desc", far.desc),
                  (f"nodes[guid=0x{last.guid:016x}].links[0].remote_port", fp),
                  (f"nodes[guid=0x{last.guid:016x}].links[0].speed", speed),
                  (f"nodes[guid=0x{last.guid:016x}].links[0].port_guid", f"0x{last.port_guid(1):016x}")]
        yield Variant("ibnetdiscover", f"{hcas} HCAs {leaves}x{spines} {speed}{' --full' if full else ''}",
                      "\n".join(lines) + "\n", tuple(values))
    nodes = _fabric(rng, 4, 1, 0)
    lines = _ibnetdiscover_text(nodes, "HDR", False)
    yield Variant("ibnetdiscover", "ibwarn after the file", "\n".join(lines + [
        "ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,9)"]) + "\n",
        (("len(nodes)", 5),), fails=True, end=len(lines))


def _ports_report_lines(nodes: list[_Node], speed: str, bare: bool = False) -> list[str]:
    """dump_ports_report through ibnd_iter_nodes: the nodes in the reverse of their discovery (the
    host's adapter, found first, last), each node's ports from its highest down to 1: every port
    of a switch (recv_port0_info queries them all), linked or not; a CA's linked ports. ``bare``:
    a port without a far end shows its description without quotes (the exporter's test3)."""
    types = {"switch": "SW", "ca": "CA"}
    lines = []
    for n in nodes[::-1]:
        listed = range(1, n.nports + 1) if n.kind == "switch" else sorted(n.links)
        for p in sorted(listed, reverse=True):
            head = f"{types[n.kind]} {n.lid:5d} {p:2d} 0x{n.port_guid(p):016x} 4x {speed}"
            if p not in n.links:
                lines.append(f"{head}{'':36s}" + (n.desc if bare else f"'{n.desc}'"))
                continue
            far, fp = n.links[p]
            lines.append(f"{head} - {types[far.kind]} {far.lid:5d} {fp:2d} 0x{far.port_guid(fp):016x} "
                         f"( '{n.desc}' - '{far.desc}' )")
    return lines


@generator("ibnetdiscover")
def ibnetdiscover_ports(rng: random.Random) -> Iterator[Variant]:
    """-p's ports report: no header, no end line; every link listed from both its ends and every
    switch port listed, so the last line (the host adapter's port 1, its switch listed before it)
    is the end."""
    for hcas, leaves, spines in ((1, 1, 0), (8, 1, 1), (72, 4, 2) if ALL else (16, 2, 1)):
        speed = rng.choice(("EDR", "HDR", "NDR", "FDR10", "SDR"))
        nodes = _fabric(rng, hcas, leaves, spines, radix=40 if ALL else 24)  # every switch port is a line
        lines = _ports_report_lines(nodes, speed, bare=rng.random() < 0.3)
        host, leaf = nodes[-1], nodes[0]
        far, fp = host.links[1]
        values = [("format", "ports"), ("len(ports)", len(lines)),
                  (f"ports[guid=0x{host.port_guid(1):016x}].remote.port", fp),
                  (f"ports[guid=0x{host.port_guid(1):016x}].remote.desc", far.desc),
                  (f"ports[guid=0x{host.port_guid(1):016x}].speed", speed),
                  (f"ports[guid=0x{leaf.guid:016x}].lid", leaf.lid)]
        yield Variant("ibnetdiscover", f"-p ports report {hcas} HCAs {leaves}x{spines} {speed}",
                      "\n".join(lines) + "\n", tuple(values))
    nodes = _fabric(rng, 4, 1, 0, radix=16)
    lines = _ports_report_lines(nodes, "HDR")
    yield Variant("ibnetdiscover", "-p ports report, a port's far end not listed back", "\n".join(lines[1:]) + "\n",
                  (("format", "ports"),), fails=True, finding="does not list it back")
    # an excerpt of the unlinked ports: a switch's port with the ports below it missing (the exporter's test3)
    gone = [ln for ln in lines if " - " not in ln][rng.randrange(3, 10)]
    yield Variant("ibnetdiscover", "-p ports report, an unlinked switch port left out",
                  "\n".join(ln for ln in lines if ln != gone) + "\n", (("format", "ports"),), fails=True,
                  finding="not listed")


# ----------------------------------------------------------------------------- iblinkinfo

def _li_link(speed: str | None, state: str, phys: str) -> str:
    if speed is None:  # print_port: a Down port has no width or speed (C14-24.2.1)
        return f"(              {state:>6}/{phys:>8})"
    return f"({'4X':>3} {speed:>18} {state:>6}/{phys:>8})"


def _iblinkinfo_lines(nodes: list[_Node], speed: str, line_mode: bool, hoq: bool, down: set[tuple[int, int]],
                      slow: set[tuple[int, int]]) -> list[str]:
    lines = []
    for n in nodes:
        prefix = ""
        if not line_mode:
            lines.append(f"Switch: 0x{n.guid:016x} {n.desc}:" if n.kind == "switch" else f"CA: {n.desc}:")
        for p in range(1, n.nports + 1):
            if line_mode:
                prefix = f'0x{n.port_guid(p):016x} "{n.desc:>30}" '
            elif n.kind == "ca":
                prefix = f"0x{n.port_guid(p):016x} "
            else:
                prefix = ""
            far = n.links.get(p)
            if far is None or (n.guid, p) in down:
                head = f"{n.lid:6d} {p:4d}[  ] ==" + _li_link(None, "Down", "Polling") + "==>  "
                lines.append(("" if line_mode else "      ") + prefix + head + '           [  ] "" ( )')
                continue
            fn, fp = far
            why = "Could be 12X Could be 53.125 Gbps" if (n.guid, p) in slow or (fn.guid, fp) in slow else " "
            link = _li_link(_SPEED[speed], "Active", "LinkUp") + (" (HOQ:14 VL_Stall:7)" if hoq else "")
            guid = f"0x{fn.port_guid(fp):016x} " if line_mode else ""
            lines.append(("" if line_mode else "      ") + prefix + f"{n.lid:6d} {p:4d}[  ] =={link}==>  "
                         f'{guid}{fn.lid:6d} {fp:4d}[  ] "{fn.desc}" ({why})')
    return lines


@generator("iblinkinfo")
def iblinkinfo(rng: random.Random) -> Iterator[Variant]:
    # the plain run: a few shapes; SNCHECK_GRAMMAR_ALL=1 adds a fabric of 72 adapters in both modes
    shapes = [(1, 1, 0, False), (1, 1, 0, True), (8, 1, 1, rng.random() < 0.5)]
    shapes += [(72, 4, 2, False), (72, 4, 2, True)] if ALL else []
    for hcas, leaves, spines, line_mode in shapes:
        speed = rng.choice(("EDR", "HDR", "QDR", "SDR"))
        hoq = rng.random() < 0.3
        nodes = _fabric(rng, hcas, leaves, spines, radix=rng.choice((12, 40)) if hcas < 72 else 20)
        cas = [n for n in nodes if n.kind == "ca"]
        down = {(cas[0].guid, 1)} if len(cas) > 1 and rng.random() < 0.5 else set()
        slow = {(cas[-1].guid, 1)} if rng.random() < 0.5 else set()
        order = nodes[::-1] if rng.random() < 0.5 else nodes  # ibnd_iter_nodes: the fabric's order
        lines = _iblinkinfo_lines(order, speed, line_mode, hoq, down, slow)
        ports = sum(n.nports for n in nodes)
        sw = nodes[0]
        up = min(sw.links)
        values = [("len(ports)", ports), (f"ports[guid=0x{sw.guid:016x}].lid", sw.lid),
                  (f"ports[node={cas[-1].desc}].remote.desc", cas[-1].links[1][0].desc),
                  (f"ports[node={cas[-1].desc}].remote.port", cas[-1].links[1][1]),
                  (f"ports[node={cas[-1].desc}].speed", _SPEED[speed]),
                  (f"ports[node={cas[0].desc}].state", "Down" if down else "Active")]
        if slow:
            values.append((f"ports[node={cas[-1].desc}].remote.could_be_width", "12X"))
        if hoq:
            values.append((f"ports[node={cas[-1].desc}].vl_stall_count", 7))
        if not line_mode:
            values.append((f"ports[guid=0x{sw.guid:016x}].node_type", "switch"))
        values.append((f"ports[guid=0x{sw.guid:016x}].remote.port", sw.links[up][1]))
        yield Variant("iblinkinfo", f"{hcas} HCAs {leaves}x{spines}{' -l' if line_mode else ''}"
                      f"{' -a' if hoq else ''}{' one down' if down else ''}", "\n".join(lines) + "\n",
                      tuple(values), count=ports)
    nodes = _fabric(rng, 2, 1, 0, radix=4)
    lines = _iblinkinfo_lines(nodes, "HDR", False, False, set(), set())
    lines[2] = lines[2].split("==>")[0] + '==>      "Port not available"'
    ports = sum(n.nports for n in nodes)
    yield Variant("iblinkinfo", "a far end not discovered", "\n".join(lines) + "\n",
                  (("len(ports)", ports), ("ports[1].remote_not_available", True)), count=ports)
    yield Variant("iblinkinfo", "no umad", "ibwarn: [4242] mad_rpc_open_port: can't open UMAD port ((null):0)\n"
                  "Failed to open (null) port 0\n", (("len(ports)", 0),), fails=True, count=0)


# ----------------------------------------------------------------------------- ibqueryerrors, sysfs counters

_PMA = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
        "PortRcvRemotePhysicalErrors", "PortXmitDiscards", "VL15Dropped")
_SYSFS = {"SymbolErrorCounter": "symbol_error", "LinkErrorRecoveryCounter": "link_error_recovery",
          "LinkDownedCounter": "link_downed", "PortRcvErrors": "port_rcv_errors",
          "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors", "PortXmitDiscards": "port_xmit_discards",
          "VL15Dropped": "VL15_dropped"}


@generator("ibqueryerrors")
def ibqueryerrors(rng: random.Random) -> Iterator[Variant]:
    """ibqueryerrors.c print_results / print_summary: a node's 'Errors for' line, its ports (a
    switch's 'port ALL' first), print_summary's lines ending with report_suppressed's '## Suppressed:'."""
    for nodes_checked, bad in ((1, 0), (8, 1), (72, 3)):
        for with_guid in (False, True):
            lines: list[str] = []
            values: list[tuple[str, object]] = []
            bad_ports = idx = 0
            for b in range(bad):
                sw = b % 2 == 0
                guid = 0x0c42a10300b95b00 + b
                name = f"MF0;leaf{b:02d}:MQM8700/U1" if sw else f"gpu{b:02d} mlx5_0"
                lines.append(f'Errors for 0x{guid:x} "{name}"' if with_guid else f'Errors for "{name}"')
                ports = sorted(rng.sample(range(1, 41), rng.randint(1, 3))) if sw else [1]
                counts = {p: {c: rng.randrange(1, 70000) for c in rng.sample(_PMA, rng.randint(1, 3))} for p in ports}
                first = idx + (1 if sw else 0)  # where the node's first numbered port lands in ports
                idx += len(ports) + (1 if sw else 0)
                if sw:
                    total: dict[str, int] = {}
                    for cs in counts.values():
                        for c, v in cs.items():
                            total[c] = total.get(c, 0) + v
                    lines.append(f"   GUID 0x{guid:x} port ALL:" + "".join(f" [{c} == {v}]" for c, v in total.items()))
                for p, cs in counts.items():
                    lines.append(f"   GUID 0x{guid:x} port {p}:" + "".join(f" [{c} == {v}]" for c, v in cs.items()))
                    bad_ports += 1
                p, cs = next(iter(counts.items()))
                c, v = next(iter(cs.items()))
                values += [(f"ports[{first}].device", name), (f"ports[{first}].port", p),
                           (f"ports[{first}].counters.{_SYSFS[c]}", v)]
            # print_summary, in its order: the summary, the ports line, the thresholds, the PMA query
            # failures (only above zero), report_suppressed's line (always; -s names the fields)
            suppressed = " RcvSwRelayErrors" if rng.random() < 0.5 else ""
            ports_checked = nodes_checked * 2 + 40
            lines += ["", f"## Summary: {nodes_checked} nodes checked, {bad} bad nodes found",
                      f"##          {ports_checked} ports checked, {bad_ports} ports have errors beyond threshold",
                      "## Thresholds: ", f"## Suppressed:{suppressed}"]
            end = len(lines) - 1  # the '## Suppressed:' line
            values += [("summary.nodes", nodes_checked), ("summary.bad_nodes", bad)]
            yield Variant("ibqueryerrors", f"{nodes_checked} nodes {bad} bad{' with guids' if with_guid else ''}",
                          "\n".join(lines) + "\n", tuple(values), end=end)  # (its counts: judged as ib-counters')
            if bad and nodes_checked == 8:  # ibqueryerrors.c print_summary: ports whose PMA query failed
                failed = "\n".join(lines[:end] + ["##          3 PMA query failures", lines[end]]) + "\n"
                yield Variant("ibqueryerrors", f"{nodes_checked} nodes, 3 PMA query failures", failed,
                              tuple(values), fails=True, end=end + 1, finding="3 PMA query failures")


_SYSFS_NAMES = ("VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
                "local_link_integrity_errors", "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors",
                "port_rcv_packets", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
                "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets",
                "port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets")


@generator("ib-counters")
def ib_counters(rng: random.Random) -> Iterator[Variant]:
    """sysfs_read_command's output: grep -H of every counters/ file (a directory's files in
    ls order), device by device, then the end line; a host without RDMA devices: the end line.
    An error counter above zero fails nothing by itself: sncheck parse judges the read as a run
    judges its read before the traffic (info), growth only with --since (issue 28)."""
    for devices in (1, 4) + ((8, 18) if ALL else ()):
        root = rng.choice(("/sys/class/infiniband", "/host/sys/class/infiniband"))
        lines: list[str] = []
        values: list[tuple[str, object]] = [("len(ports)", devices)]
        for d in range(devices):
            dev = f"mlx5_{d}"
            for name in _SYSFS_NAMES:
                traffic = name.endswith(("_data", "_packets")) or name == "port_xmit_wait"
                v = rng.randrange(10**6, 10**12) if traffic else (rng.randrange(1, 900) if rng.random() < 0.02 else 0)
                lines.append(f"{root}/{dev}/ports/1/counters/{name}:{v}")
                if d == devices - 1 and name in ("symbol_error", "port_rcv_data"):
                    values.append((f"ports[device={dev}].counters.{name}", v))
        lines.append(END_MARKER)
        yield Variant("ib-counters", f"{devices} devices", "\n".join(lines) + "\n", tuple(values), count=devices)
    yield Variant("ib-counters", "no RDMA device", END_MARKER + "\n", (("len(ports)", 0),), count=0)
