"""ibstat, from the grammar in sncheck/vendors/infiniband/ibstat.py (linux-rdma/rdma-core
infiniband-diags/ibstat.c: ca_dump and port_dump): one block a CA, its fixed fields, one
block a port with its fixed fields (Effective speed where the verb answers), tabs as it
prints them; 1 to 12 CAs, InfiniBand and Ethernet link layers, ports down."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator

_STATES = [("Active", "LinkUp"), ("Down", "Polling"), ("Down", "Disabled"), ("Initializing", "LinkUp")]


@generator("ibstat")
def ibstat(rng: random.Random) -> Iterator[Variant]:
    for cas in (1, 2, 8, 12):
        for layer in ("InfiniBand", "Ethernet"):
            ports_per_ca = rng.choice((1, 1, 2))
            effective = rng.random() < 0.5  # ibv_query_port_speed answered (rdma-core 50+)
            down = (rng.randrange(cas), 1) if rng.random() < 0.4 else None
            lines, values = [], [("len(cas)", cas)]
            for c in range(cas):
                name = f"mlx5_{c}"
                lines += [f"CA '{name}'", "\tCA type: MT4129", f"\tNumber of ports: {ports_per_ca}",
                          "\tFirmware version: 28.39.1002", "\tHardware version: 0",
                          f"\tNode GUID: 0x{0xb83fd20300a1b200 + c:016x}",
                          "\tSystem image GUID: 0xb83fd20300a1b200"]
                for p in range(1, ports_per_ca + 1):
                    state, phys = _STATES[rng.randrange(1, 4)] if down == (c, p) else _STATES[0]
                    rate = 400 if layer == "InfiniBand" else 100
                    lines += [f"\tPort {p}:", f"\t\tState: {state}", f"\t\tPhysical state: {phys}",
                              f"\t\tRate: {rate}"]
                    if effective:
                        lines.append(f"\t\tEffective speed: {rate * 0.98:g}")
                    lines += [f"\t\tBase lid: {0 if layer == 'Ethernet' else 100 + c}", "\t\tLMC: 0",
                              f"\t\tSM lid: {0 if layer == 'Ethernet' else 1}", "\t\tCapability mask: 0xa751e848",
                              f"\t\tPort GUID: 0x{0xb83fd20300a1b200 + c:016x}", f"\t\tLink layer: {layer}"]
                    values.append((f"cas[name={name}].ports[port={p}].state", state))
                values.append((f"cas[name={name}].num_ports", ports_per_ca))
            values.append((f"cas[name=mlx5_{cas - 1}].ports[0].link_layer", layer))
            yield Variant("ibstat", f"{cas} CAs x{ports_per_ca} {layer}{' port down' if down else ''}",
                          "\n".join(lines) + "\n", tuple(values), fails=down is not None, count=cas)


@generator("ibstatus")
def ibstatus(rng: random.Random) -> Iterator[Variant]:
    """infiniband-diags/scripts/ibstatus port_status(): 7 sysfs fields a port, then a blank line."""
    for cas in (1, 4, 8):
        down = rng.randrange(cas) if rng.random() < 0.5 else None
        lines, values = [], [("len(cas)", cas)]
        for c in range(cas):
            state, phys = ("1: DOWN", "3: Disabled") if c == down else ("4: ACTIVE", "5: LinkUp")
            lines += [f"Infiniband device 'mlx5_{c}' port 1 status:",
                      f"\tdefault gid:\t fe80:0000:0000:0000:b83f:d203:00a1:b2{c:02x}", f"\tbase lid:\t 0x{c + 1:x}",
                      "\tsm lid:\t\t 0x1", f"\tstate:\t\t {state}", f"\tphys state:\t {phys}",
                      "\trate:\t\t 200 Gb/sec (4X HDR)", "\tlink_layer:\t InfiniBand", ""]
            values.append((f"cas[name=mlx5_{c}].ports[0].state", state.split(": ")[1]))
        yield Variant("ibstatus", f"{cas} CAs{' one down' if down is not None else ''}", "\n".join(lines) + "\n",
                      tuple(values), fails=down is not None, count=cas)


def _banner(test: str, layer: str) -> list[str]:
    rule = "-" * 87
    return [rule, f"                    {test}", rule,
            " Dual-port       : OFF\t\tDevice         : mlx5_0",
            " Number of qps   : 1\t\tTransport type : IB",
            " Connection type : RC\t\tUsing SRQ      : OFF",
            " PCIe relax order: ON",
            " TX depth        : 128",
            " CQ Moderation   : 1",
            f" Mtu             : 4096[B]\n Link type       : {layer}",
            " Max inline data : 0[B]",
            " rdma_cm QPs\t : OFF",
            " Data ex. method : Ethernet",
            rule,
            " local address: LID 0x01 QPN 0x0129 PSN 0x57279d RKey 0x184300 VAddr 0x00ec99bedad000",
            " remote address: LID 0x02 QPN 0x0129 PSN 0x531b7 RKey 0x184300 VAddr 0x00ffeec955d000",
            rule]


@generator("ib-write-bw")
def ib_write_bw(rng: random.Random) -> Iterator[Variant]:
    """perftest_parameters.h RESULT_FMT(_G)(_PER_PORT), REPORT_FMT(_PER_PORT), the closing RESULT_LINE."""
    for unit in ("MiB/sec", "Gb/sec", "MB/sec"):
        for mode in ("one size", "all sizes", "cpu util"):
            sizes = [65536] if mode != "all sizes" else [2 ** k for k in range(1, 24)]
            lines = _banner("RDMA_Write BW Test", rng.choice(("IB", "Ethernet")))
            # a paste that lost the '#' before 'iterations' (ucx-issue8852) is the same header
            hash_ = "" if mode == "all sizes" else "#"
            head = f" #bytes     {hash_}iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"
            lines.append(head + ("    CPU_Util[%]" if mode == "cpu util" else ""))
            values = [("len(rows)", len(sizes)), ("test", "RDMA_Write BW Test")]
            for size in sizes:
                gbps = min(392.0, size / 180.0)
                avg = gbps if unit == "Gb/sec" else gbps * 1e9 / 8 / 2 ** 20
                row = f" {size:<7d}    {5000:<10d}       {avg * 1.01:<7.2f}            {avg:<7.2f}\t\t     {avg / size:<7.6f}"
                lines.append(row + (f"\t    {rng.uniform(1, 99):<3.2f}" if mode == "cpu util" else ""))
            lines.append("-" * 87)
            last = sizes[-1]
            gbps = min(392.0, last / 180.0)
            printed = float(f"{gbps if unit == 'Gb/sec' else gbps * 1e9 / 8 / 2 ** 20:.2f}")
            # Gb/sec as printed; MB/sec and MiB/sec converted unrounded, the printed figure kept beside
            values.append((f"rows[bytes={last}].bw_avg_Gbps", printed * (1.0 if unit == "Gb/sec" else 8 * 2 ** 20 / 1e9)))
            if unit != "Gb/sec":
                values.append((f"rows[bytes={last}].printed_avg", printed))
            yield Variant("ib-write-bw", f"{unit} {mode}", "\n".join(lines) + "\n", tuple(values),
                          count=len(sizes))
    # a run that failed after its header (perftest_resources.c's post-send error, then
    # write_bw.c's run_iter_bw failure; stderr, pasted with stdout): its cut after the header
    # read as a whole run before
    lines = _banner("RDMA_Write BW Test", "IB")
    lines += [" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
              " Couldn't post send: qp 0 scnt=128 ", " Failed to complete run_iter_bw function successfully"]
    yield Variant("ib-write-bw", "post send failed", "\n".join(lines) + "\n", (("len(rows)", 0),), fails=True)


@generator("ib-write-lat")
def ib_write_lat(rng: random.Random) -> Iterator[Variant]:
    """RESULT_FMT_LAT and REPORT_FMT_LAT, the closing RESULT_LINE."""
    for sizes in ([2], [2 ** k for k in range(1, 12)]):
        lines = _banner("RDMA_Write Latency Test", "IB")
        lines.append(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                     "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
        for size in sizes:
            t = 1.6 + size / 5000
            lines.append(f" {size:<7d} {1000}          {t:<7.2f}        {t * 4:<7.2f}      {t * 1.02:<7.2f}  \t       "
                         f"{t * 1.05:<7.2f}     \t{0.05:<7.2f}\t\t{t * 1.3:<7.2f} \t\t{t * 3:<7.2f}")
        lines.append("-" * 87)
        t = 1.6 + sizes[-1] / 5000
        yield Variant("ib-write-lat", f"{len(sizes)} sizes", "\n".join(lines) + "\n",
                      (("len(rows)", len(sizes)), (f"rows[bytes={sizes[-1]}].t_typical_us", float(f"{t * 1.02:.2f}"))),
                      count=len(sizes))


_EXT = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts", "PortUnicastRcvPkts",
        "PortMulticastXmitPkts", "PortMulticastRcvPkts")
_ERR = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
        "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
        "PortRcvConstraintErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped")


@generator("perfquery")
def perfquery(rng: random.Random) -> Iterator[Variant]:
    """perfquery.c headers and libibmad's mad_dump_perfcounters_ext / mad_dump_perfcounters fields."""
    for extended in (True, False):
        for ports in (1, 2, 4):
            bad = (rng.randrange(ports), rng.choice(_ERR)) if rng.random() < 0.5 else None
            lines, values = [], [("len(ports)", ports)]
            for p in range(1, ports + 1):
                fields = [("PortSelect", str(p)), ("CounterSelect", "0x0000")]
                errs = [(n, str(rng.randrange(1, 90)) if bad == (p - 1, n) else "0") for n in _ERR]
                data = [(n, str(rng.randrange(10 ** 6, 10 ** 14))) for n in _EXT]
                if extended:
                    lines.append(f"# Port extended counters: Lid {1700 + p} port {p} (CapMask: 0x5300 CapMask2: 0x0000002)")
                    fields += data + [("CounterSelect2", "0x00000000")] + errs + [("PortXmitWait", "22730501"),
                                                                                  ("QP1Dropped", "0")]
                else:
                    lines.append(f"# Port counters: Lid {1700 + p} port {p} (CapMask: 0x1600)")
                    fields += errs[:10] + [("CounterSelect2", "0x00")] + errs[10:] + data[:4] + [("PortXmitWait", "7")]
                lines += [f"{n + ':':.<33}{v}" for n, v in fields]
                values.append((f"ports[port={p}].lid", 1700 + p))
            # one port of -x: its QP1Dropped after PortXmitWait is what older libibmad does not print
            end = len(lines) - 1 if extended and ports == 1 else None
            # an error counter above zero is a value, judged as ib-counters' (sncheck.cli.parse_counters)
            yield Variant("perfquery", f"{'-x ' if extended else ''}{ports} ports{' one error' if bad else ''}",
                          "\n".join(lines) + "\n", tuple(values), count=ports, end=end)
    # before infiniband-diags 1.5 (OFED 1.3 perfquery.c): '# Port counters: %s port %d' over -x's counters too, no
    # CapMask; OFED 1.2-1.3 libibmad's short PortCounters names, the block ending at RcvPkts (harvest25)
    data = [(n, str(rng.randrange(10 ** 6, 10 ** 13))) for n in _EXT]
    fields = [("PortSelect", "35"), ("CounterSelect", "0x1b01")] + data
    yield Variant("perfquery", "-x under the old header", "\n".join(
        ["# Port counters: Lid 214 port 35"] + [f"{n + ':':.<33}{v}" for n, v in fields]) + "\n",
        (("ports[0].port", 35), ("ports[0].counters.port_xmit_data", int(data[0][1])),
         ("ports[0].counters.multicast_rcv_packets", int(data[-1][1]))), count=1)
    xmt = str(rng.randrange(10 ** 6, 10 ** 9))
    fields = [("PortSelect", "1"), ("CounterSelect", "0x0000")] + [(n, "0") for n in _OLD_ERR] + [
        ("XmtData", xmt), ("RcvData", "2411533950"), ("XmtPkts", "22945597"), ("RcvPkts", "26264095")]
    yield Variant("perfquery", "OFED 1.2 short names", "\n".join(
        ["# Port counters: Lid 936 port 1"] + [f"{n + ':':.<33}{v}" for n, v in fields]) + "\n",
        (("ports[0].counters.port_xmit_data", int(xmt)), ("ports[0].counters.excessive_buffer_overrun_errors", 0),
         ("ports[0].counters.port_rcv_packets", 26264095)), count=1)
    # perfquery -D: libibmad portid2str's 'DR path slid %u; dlid %u; %s' for the port, no lid (harvest25)
    fields = [("PortSelect", "1"), ("CounterSelect", "0x0000")] + [(n, "0") for n in _ERR[:10]] + [
        ("CounterSelect2", "0x00")] + [(n, "0") for n in _ERR[10:]] + [(n, "864") for n in _EXT[:4]] + [
        ("PortXmitWait", "0")]
    yield Variant("perfquery", "-D directed route", "\n".join(
        ["# Port counters: DR path slid 0; dlid 0; 0 port 1 (CapMask: 0x1600)"]
        + [f"{n + ':':.<33}{v}" for n, v in fields]) + "\n",
        (("ports[0].port", 1), ("ports[0].lid", None), ("ports[0].counters.port_rcv_packets", 864)), count=1)
    # -E / -D: perfquery.c common_func's '# <set> counters: Lid N port P' and libibmad's detail counters
    for name, counters in (("PortRcvErrorDetails", _RCV_DETAILS), ("PortXmitDiscardDetails", _XMIT_DETAILS)):
        ports = rng.choice((1, 2))
        bad = (rng.randrange(ports), rng.choice(counters)) if rng.random() < 0.5 else None
        lines, values = [], [("len(ports)", ports)]
        for p in range(1, ports + 1):
            lines.append(f"# {name} counters: Lid {1700 + p} port {p}")
            fields = [("PortSelect", str(p)), ("CounterSelect", "0x0000")]
            fields += [(n, "3" if bad == (p - 1, n) else "0") for n in counters]
            lines += [f"{n + ':':.<33}{v}" for n, v in fields]
            values.append((f"ports[port={p}].lid", 1700 + p))
        if bad:  # a detail counter above zero is a value, judged as the others (sncheck.cli.parse_counters)
            values.append((f"ports[port={bad[0] + 1}].counters.{bad[1]}", 3))
        yield Variant("perfquery", f"{name} {ports} ports{' one error' if bad else ''}", "\n".join(lines) + "\n",
                      tuple(values), count=ports)
    # perfquery.c's failures: libibumad's port open (ibwarn), then ibpanic/iberror instead of any block
    failed = ("ibwarn: [28754] mad_rpc_open_port: can't open UMAD port ((null):0)\n"
              "perfquery: iberror: failed: Failed to open '(null)' port '0'\n")
    yield Variant("perfquery", "UMAD port not opened", failed, (("len(ports)", 0),), fails=True,
                  finding="perfquery: iberror: failed")


# OFED 1.2-1.3 libibmad fields.c's PortCounters names, in its order
_OLD_ERR = ("SymbolErrors", "LinkRecovers", "LinkDowned", "RcvErrors", "RcvRemotePhysErrors", "RcvSwRelayErrors",
            "XmtDiscards", "XmtConstraintErrors", "RcvConstraintErrors", "LinkIntegrityErrors", "ExcBufOverrunErrors",
            "VL15Dropped")
_RCV_DETAILS = ("PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors", "PortDLIDMappingErrors",
                "PortVLMappingErrors", "PortLoopingErrors")
_XMIT_DETAILS = ("PortInactiveDiscards", "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards",
                 "PortSwHOQLifetimeLimitDiscards")


# perftest's failure prints (stderr with stdout): a setup that failed alone, before any banner
# (write_lat.c / write_bw.c main, perftest_communication.c), and a test that failed after its
# column header (perftest_resources.c run_iter_lat_write, write_lat.c's 'Test exited with Error')
_SETUP_FAILED = ((" Unable to find the Infiniband/RoCE device",),
                 ("Couldn't connect to 192.168.10.2:18515", " Unable to init the socket connection"),
                 (" Couldn't get context for the device",),
                 ("Failed to exchange data between server and clients",))


@generator("ib-write-lat")
def ib_write_lat_failed(rng: random.Random) -> Iterator[Variant]:
    for lines in rng.sample(_SETUP_FAILED, 2):
        yield Variant("ib-write-lat", f"setup failed: {lines[0].strip()}", "\n".join(lines) + "\n",
                      (("len(rows)", 0), ("test", None)), fails=True, finding=lines[-1].strip())
    for done in (0, 3):  # -a: the sizes before the one that failed, then its error
        lines = _banner("RDMA_Write Latency Test", "IB")
        lines.append(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                     "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
        for size in (2 ** k for k in range(1, 1 + done)):
            t = 1.6 + size / 5000
            lines.append(f" {size:<7d} {1000}          {t:<7.2f}        {t * 4:<7.2f}      {t * 1.02:<7.2f}  \t       "
                         f"{t * 1.05:<7.2f}     \t{0.05:<7.2f}\t\t{t * 1.3:<7.2f} \t\t{t * 3:<7.2f}")
        lines += [rng.choice(("Couldn't post send: scnt=1", "poll CQ failed -1")), "Test exited with Error"]
        yield Variant("ib-write-lat", f"test failed after {done} sizes", "\n".join(lines) + "\n",
                      (("len(rows)", done), ("test", "RDMA_Write Latency Test")), fails=True,
                      finding="Test exited with Error")


@generator("ib-write-bw")
def ib_write_bw_setup_failed(rng: random.Random) -> Iterator[Variant]:
    for lines in rng.sample(_SETUP_FAILED, 1):
        yield Variant("ib-write-bw", f"setup failed: {lines[0].strip()}", "\n".join(lines) + "\n",
                      (("len(rows)", 0), ("test", None)), fails=True, finding=lines[-1].strip())


@generator("ib-write-bw")
def ib_send_bw_before_msgrate(rng: random.Random) -> Iterator[Variant]:
    """perftest before its MsgRate column (OFED 1.5 send_bw.c): 'Mtu : 2048', the address lines with commas,
    ' #bytes #iterations    BW peak[MB/sec]    BW average[MB/sec]' and four figures a row."""
    sizes = [2 ** k for k in range(1, rng.choice((6, 12)))]
    rule = "-" * 66
    lines = [rule, "                    Send BW Test", "Connection type : UD", "Inline data is used up to 1 bytes message",
             "  local address:  LID 0x02, QPN 0x70004b, PSN 0xc14da8",
             "  remote address: LID 0x0b, QPN 0x28004c, PSN 0xfaa100", "Mtu : 2048", rule,
             " #bytes #iterations    BW peak[MB/sec]    BW average[MB/sec]"]
    for size in sizes:
        lines.append(f"{size:7d}        1000     {size * 1.43:14.2f}        {size * 1.42:14.2f}")
    lines.append(rule)
    last = sizes[-1]
    yield Variant("ib-write-bw", f"before MsgRate {len(sizes)} sizes", "\n".join(lines) + "\n",
                  (("len(rows)", len(sizes)), ("mtu", 2048), (f"rows[bytes={last}].printed_avg", float(f"{last * 1.42:.2f}")),
                   (f"rows[bytes={last}].msg_rate_Mpps", None)), count=len(sizes))

