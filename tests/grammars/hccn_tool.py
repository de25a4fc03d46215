"""hccn_tool views, from the grammar in sncheck/vendors/ascend/hccn_tool_grammar.py (closed tool:
Huawei's hccn_tool command reference, the CANN HCCL troubleshooting guide, the captures under
fixtures/real/ascend/): the one-line views (``-net_health``, ``-link``, ``-fec``: ``key: value``),
``-ip``, the ``-optical`` block (``key<padded to 21>: value unit``), the ``-stat`` counters and
the ``-link_stat`` history (with its ``[devid N]``/``[device N]`` prefix, with and without the
newer down count)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator
from grammars.npu_smi import _DCMI

from sncheck.vendors.ascend.hccn_tool_grammar import LINK, NET_HEALTH, NET_HEALTH_WORDED


def _echo(rng: random.Random, flag: str) -> list[str]:
    """The command line a paste often carries above the output."""
    return [f"/usr/local/Ascend/driver/tools/hccn_tool -i {rng.randrange(16)} {flag} -g"] if rng.random() < 0.4 else []


def _one_line(view: str, flag: str, key: str, values: tuple[str, ...], ok: str, at: str) -> None:
    """The views of one ``key: value`` line (the shared part of their grammar)."""
    def gen(rng: random.Random) -> Iterator[Variant]:
        for value in values:
            text = "\n".join(_echo(rng, flag) + [f"{key}: {value}"]) + "\n"
            yield Variant(view, value, text, ((at, value),), fails=not value.startswith(ok))
    gen.__name__ = view.replace("-", "_")
    generator(view)(gen)


# every status of g_net_health_status (hccn_tool_grammar.NET_HEALTH: tool_ops.c), and fixture 13's 'Socket failed'
_one_line("hccn-net-health", "-net_health", "net health status", (*NET_HEALTH, *NET_HEALTH_WORDED), "Success", "net_health")


@generator("hccn-net-health")
def hccn_net_health_cut_value(rng: random.Random) -> Iterator[Variant]:
    """A status cut inside its value with its line's end kept (a paste's): no status of the table, refused as that,
    never a fault named by a word the tool does not print ('net health Socket')."""
    for status in rng.sample([s for s in NET_HEALTH if len(s) > 4], 2):
        cut = status[:rng.randrange(2, len(status) - 1)].rstrip()
        text = "\n".join(_echo(rng, "-net_health") + [f"net health status: {cut}"]) + "\n"
        yield Variant("hccn-net-health", f"{status} cut to {cut!r}", text, (), fails=True,
                      finding="no status hccn_tool prints")


_one_line("hccn-link", "-link", "link status", LINK, "UP", "link")


@generator("hccn-link")
def hccn_link_cut_value(rng: random.Random) -> Iterator[Variant]:
    """tool_link_get_linkstatus prints UP or DOWN: a value cut inside ('DOW', 'U') or edited ('Up') is no status the
    tool prints, refused as that, never a fault named 'link DOW'."""
    for value in ("DOW", "U", "Up"):
        text = "\n".join(_echo(rng, "-link") + [f"link status: {value}"]) + "\n"
        yield Variant("hccn-link", f"link status {value!r}", text, (("link", None),), fails=True,
                      finding="no status hccn_tool prints")
_one_line("hccn-fec", "-fec", "fec mode", ("rs FEC mode", "no FEC mode"), "rs", "fec")


@generator("hccn-ip")
def hccn_ip(rng: random.Random) -> Iterator[Variant]:
    for _ in range(2):
        ip, mask = f"29.1.{rng.randrange(256)}.{rng.randrange(1, 255)}", rng.choice(("255.255.0.0", "255.255.255.0"))
        text = "\n".join(_echo(rng, "-ip") + [f"ipaddr:{ip}", f"netmask:{mask}"]) + "\n"
        yield Variant("hccn-ip", ip, text, (("ipaddr", ip), ("netmask", mask)))


def _opt(key: str, value: str) -> str:
    return f"{key:<21}: {value}"


@generator("hccn-optical")
def hccn_optical(rng: random.Random) -> Iterator[Variant]:
    for lanes, case in ((1, "ok"), (4, "ok"), (4, "low rx"), (4, "los"), (4, "snr")):
        lines = _echo(rng, "-optical") + ["optical info:", _opt("present", "present"), _opt("temperature", "47 C"),
                                          _opt("vendor name", "Hisense"), _opt("vendor part number", "LMQ8611-PC+"),
                                          _opt("xsfp wave length", "850 nm"), _opt("Vcc", "3262.90 mV")]
        values: list[tuple[str, object]] = [("present", "present")]
        low = rng.randrange(lanes)
        for i in range(lanes):
            n = str(i) if lanes > 1 else ""
            tx, rx = round(rng.uniform(0.5, 3.0), 4), round(rng.uniform(0.5, 3.0), 4)
            if case == "low rx" and i == low:
                rx = 0.0054
            lines += [_opt(f"Tx Power{n}", f"{tx:.4f} mW"), _opt(f"Rx Power{n}", f"{rx:.4f} mW")]
            values += [(f"values.Tx Power{n}", tx), (f"values.Rx Power{n}", rx)]
        lines += [_opt("Vcc High Thres", "3465.00 mV"), _opt("Vcc Low Thres", "3135.00 mV"),
                  _opt("Temp High Thres", "70 C"), _opt("Temp Low Thres", "0 C"),
                  _opt("TxPower High Thres", "3.5481 mW"), _opt("TxPower Low Thres", "0.2818 mW"),
                  _opt("RxPower High Thres", "3.5481 mW"), _opt("RxPower Low Thres", "0.1445 mW")]
        values += [("thresholds.RxPower Low", 0.1445), ("thresholds.TxPower High", 3.5481)]
        lines += [_opt(f"Tx Bias{str(i) if lanes > 1 else ''}", "7.9360 mA") for i in range(lanes)]
        los = "0xff" if case == "los" else "0x0"
        lines += [_opt("Tx Los Flag", "0x0"), _opt("Rx Los Flag", los), _opt("Tx LoL Flag", "0x0"),
                  _opt("Rx LoL Flag", los)]
        values.append(("flags.Rx Los Flag", int(los, 16)))
        end = len(lines)
        if case == "snr":
            lines += [_opt(f"Host SNR Lane{i}", "not supported") for i in range(lanes)]
            lines += [_opt(f"Media SNR Lane{i}", f"{rng.uniform(20, 25):.4f} dB") for i in range(lanes)]
        yield Variant("hccn-optical", f"{lanes} lanes {case}", "\n".join(lines) + "\n", tuple(values),
                      fails=case in ("low rx", "los"), end=end)
    text = "optical info:\npresent              : not present\n"
    yield Variant("hccn-optical", "not present", text, (("present", "not present"),), fails=True)


_STAT = ("mac_tx_mac_pause_num", "mac_rx_mac_pause_num", "mac_tx_pfc_pkt_num", "mac_rx_pfc_pkt_num",
         "mac_rx_fcs_err_pkt_num", "roce_rx_err_pkt_num", "roce_tx_err_pkt_num", "roce_qp_status_err_num",
         "nic_tx_all_pkg_num", "nic_tx_all_oct_num", "nic_rx_all_pkg_num", "nic_rx_all_oct_num")


@generator("hccn-stat")
def hccn_stat(rng: random.Random) -> Iterator[Variant]:
    for n in (3, len(_STAT)):
        names = rng.sample(_STAT, n)
        counts = {k: rng.choice((0, rng.randrange(1, 10 ** 9))) for k in names}
        text = "\n".join(_echo(rng, "-stat") + ["packet statistics:"] + [f"{k}:{v}" for k, v in counts.items()]) + "\n"
        # nothing states how many counters a NIC prints: a cut between lines is a shorter list
        yield Variant("hccn-stat", f"{n} counters", text, tuple((f"counters.{k}", v) for k, v in counts.items()),
                      stream=True)


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@generator("hccn-link-stat")
def hccn_link_stat(rng: random.Random) -> Iterator[Variant]:
    for prefix, newer, n in (("[device 0]", False, 2), ("[devid 3]", False, 3), ("[devid 5]", True, 5), ("", True, 0)):
        up = (n + 1) // 2
        lines = _echo(rng, "-link_stat") + [f"{prefix}current time        : Wed Jun  7 10:08:28 2023",
                                            f"{prefix}link up count       : {up}"]
        if newer:
            lines.append(f"{prefix}link down count     : {n - up}")
        lines.append(f"{prefix}link change records :")
        end = len(lines)  # the records' count is stated nowhere: a cut between them is a shorter history
        values: list[tuple[str, object]] = [("link_up_count", up), ("len(changes)", n)]
        if newer:
            values.append(("link_down_count", n - up))
        for i in range(n):
            day = 6 - i // 3
            lines.append(f"{prefix}    {_DAYS[day % 7]} Jun  {day} 16:32:{50 - i:02d} 2023    LINK {'UP' if i % 2 == 0 else 'DOWN'}")
            values.append((f"changes[{i}][1]", "LINK UP" if i % 2 == 0 else "LINK DOWN"))
        yield Variant("hccn-link-stat", f"{prefix or 'no prefix'} {n} records", "\n".join(lines) + "\n", tuple(values),
                      end=end)


@generator("hccn-ping")
def hccn_ping(rng: random.Random) -> Iterator[Variant]:
    for sent, lost in ((3, 0), (10, 0), (5, 5), (4, 1)):
        addr = f"29.1.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        lines = _echo(rng, f"-ping -g address {addr}")[:1] + [f"device 3 PING {addr}"]
        times = [round(rng.uniform(0.02, 2.0), 6) for _ in range(sent - lost)]
        lines += [f"recv seq={i},time={t:.6f}ms" for i, t in enumerate(times)]
        lines.append(f"{sent} packets transmitted, {sent - lost} received, {100 * lost / sent:.2f}% packet loss")
        yield Variant("hccn-ping", f"{sent} sent {lost} lost", "\n".join(lines) + "\n",
                      (("sent", sent), ("received", sent - lost), ("loss_pct", 100 * lost / sent),
                       ("len(times_ms)", len(times))), fails=lost > 0)


@generator("hccn-lldp")
def hccn_lldp(rng: random.Random) -> Iterator[Variant]:
    for port in ("400GE1/1/20:2", "200GE1/0/7"):
        tlvs = [("Chassis ID TLV", ["MAC: 4c:f5:5b:0a:1e:01"]), ("Port ID TLV", [f"Ifname: {port}"]),
                ("Time to Live TLV", ["121"]), ("System Name TLV", ["leaf-07"]),
                ("System Description TLV", ["Huawei Versatile Routing Platform Software"]),
                ("System Capabilities TLV", ["System capabilities: Bridge, Router", "Enabled capabilities: Bridge, Router"]),
                ("Management Address TLV", ["IPv4: 26.1.0.7"]), ("Maximum Frame Size TLV", ["9216"])]
        lines = _echo(rng, "-lldp")
        for name, body in tlvs:
            lines += [name] + [f"\t{b}" for b in body]
        lines.append("End of LLDPDU TLV")
        yield Variant("hccn-lldp", port, "\n".join(lines) + "\n",
                      (("tlvs.Port ID TLV[0]", f"Ifname: {port}"), ("len(tlvs)", len(tlvs) + 1)))


@generator("hccn-hw-stats")
def hccn_hw_stats(rng: random.Random) -> Iterator[Variant]:
    names = ("pd_alloc", "pd_dealloc", "mr_alloc", "mr_dealloc", "cq_alloc", "cq_dealloc", "qp_alloc", "qp_dealloc",
             "pd_active", "mr_active", "cq_active", "qp_active", "aeqe", "ceqe")
    for dev in (3, 15):
        counts = {k: rng.randrange(0, 40) for k in names}
        text = "\n".join(_echo(rng, "-hw_stats") + [f"[devid {dev}] {k}: {v}" for k, v in counts.items()]) + "\n"
        yield Variant("hccn-hw-stats", f"devid {dev}", text, tuple((f"counters.{k}", v) for k, v in counts.items()),
                      count=len(names))


@generator("hccn-conf")
def hccn_conf(rng: random.Random) -> Iterator[Variant]:
    for n in (1, 8, 16):
        lines = []
        for d in range(n):
            lines += [f"address_{d}=29.1.{d}.{rng.randrange(1, 255)}", f"netmask_{d}=255.255.0.0",
                      f"netdetect_{d}=29.1.0.1", f"gateway_{d}=29.1.0.1", f"send_arp_status_{d}=1"]
        yield Variant("hccn-conf", f"{n} devices", "\n".join(lines) + "\n",
                      (("len(devices)", n), (f"devices.{n - 1}.gateway", "29.1.0.1")), count=n,
                      stream=True)  # a file of key lines: nothing states the keys a device has


@generator("hccn-route")
def hccn_route(rng: random.Random) -> Iterator[Variant]:
    for n in (1, 4):
        rows = [("default", "29.1.0.1", "0.0.0.0", "UG", "eth3")] + [
            (f"192.168.{i}.0", "*", "255.255.255.0", "U", "end3v0") for i in range(n)]
        lines = _echo(rng, "-route") + ["Routing table:",
                                        "Destination     Gateway         Genmask         Flags Metric Ref    Use Iface"]
        lines += [f"{d:<16}{g:<16}{m:<16}{f:<6}0      0        0 {i}" for d, g, m, f, i in rows]
        yield Variant("hccn-route", f"{n + 1} routes", "\n".join(lines) + "\n",
                      (("len(routes)", n + 1), ("routes[0].gateway", "29.1.0.1")), count=n + 1)


_MODES = ("1000baseKX/Full", "10000baseKR/Full", "25000baseCR/Full", "100000baseKR4/Full", "200000baseCR4/Full")


@generator("hccn-status")
def hccn_status(rng: random.Random) -> Iterator[Variant]:
    """``hccn_tool -i N -status -g``: 'Netdev status:' and ethtool's settings of the NPU's port."""
    for case in ("up 200G", "up 100G with wake-on", "down"):
        dev = f"eth{rng.randrange(16)}"
        speed = {"up 200G": 200000, "up 100G with wake-on": 100000}.get(case)
        modes = rng.sample(_MODES, rng.randrange(1, 4))
        lines = _echo(rng, "-status") + [f"Netdev status:Settings for {dev}:", "\tSupported ports: [ Backplane ]",
                                          f"\tSupported link modes:   {modes[0]}"]
        lines += [f"\t                        {m}" for m in modes[1:]]
        lines += ["\tSupported pause frame use: Symmetric", "\tSupports auto-negotiation: No",
                  "\tSupported FEC modes: None        RS", "\tAdvertised link modes:  Not reported",
                  "\tAdvertised pause frame use: No", "\tAdvertised auto-negotiation: No",
                  "\tAdvertised FEC modes: RS", f"\tSpeed: {f'{speed}Mb/s' if speed else 'Unknown!'}",
                  f"\tDuplex: {'Full' if speed else 'Unknown! (255)'}", "\tAuto-negotiation: off", "\tPort: Backplane",
                  "\tPHYAD: 0", "\tTransceiver: internal"]
        if "wake-on" in case:
            lines += ["\tSupports Wake-on: d", "\tWake-on: d", "\tCurrent message level: 0x00000007 (7)",
                      "\t\t\t       drv probe link"]
        lines.append(f"\tLink detected: {'yes' if speed else 'no'}")
        values: list[tuple[str, object]] = [("device", dev), ("speed_Mbps", speed if speed else None),
                                            ("link_detected", bool(speed)), ("supported_fec[1]", "RS")]
        yield Variant("hccn-status", case, "\n".join(lines) + "\n", tuple(values), fails=not speed)
    # ethtool could not read the link settings (its GSET failed): the rest is printed, nothing measured
    lines = ["Netdev status:Settings for eth0:", "Cannot get device settings: Operation not supported",
             "\tLink detected: yes"]
    yield Variant("hccn-status", "settings unreadable", "\n".join(lines) + "\n",
                  (("device", "eth0"), ("speed_Mbps", None)), fails=True)


# hccn_tool reaches the NIC through DCMI: where DCMI cannot reach the driver, every view prints
# DCMI's init failure instead of its output (the lines npu-smi prints, tests/grammars/npu_smi.py)
_FLAGS = {"hccn-net-health": ("-net_health", "net_health"), "hccn-link": ("-link", "link"), "hccn-fec": ("-fec", "fec"),
          "hccn-optical": ("-optical", "present"), "hccn-stat": ("-stat", "len(counters)"),
          "hccn-link-stat": ("-link_stat", "link_up_count"), "hccn-lldp": ("-lldp", "len(tlvs)"),
          "hccn-ip": ("-ip", "ipaddr"), "hccn-route": ("-route", "len(routes)"), "hccn-status": ("-status", "device"),
          "hccn-hw-stats": ("-hw_stats", "len(counters)"), "hccn-ping": ("-ping", "sent")}


def _dcmi_failed(view: str, flag: str, at: str) -> None:
    def gen(rng: random.Random) -> Iterator[Variant]:
        lines = rng.choice(_DCMI)
        text = "\n".join(_echo(rng, flag) + list(lines)) + "\n"
        yield Variant(view, f"DCMI init failed: {lines[-1]}", text,
                      ((at, 0 if at.startswith("len(") else None), ("tool_failed[0]", lines[-1])),
                      fails=True, finding=f"hccn_tool failed before printing its output ({lines[-1]})",
                      stream=view == "hccn-stat")  # as -stat's other outputs: a list with no end (its grammar)
    gen.__name__ = view.replace("-", "_") + "_dcmi_failed"
    generator(view)(gen)


for _view, (_flag, _at) in _FLAGS.items():
    _dcmi_failed(_view, _flag, _at)


# hccn_tool's own failure lines (main.c/cmd.c, hccn_tool_grammar.FAILURE_LINES): main() prints one in
# place of the view's output for a command that failed; those a query (-g) meets, by view
_ANY = ("Get device health status failed!", "The device is not exist!", "Get invalid device id.", "Cmd execute failed!",
        "Command execute failed!", "permission denied: pls check this cmd run permission.",
        "hccn_tool is busy, please try again.", "The VM does not support this command.",
        "The command is not supported on this product.")
_OWN = {"hccn-ip": ("Get ipconf failed, because no ip was preset there!",),
        "hccn-optical": ("I2c is busy. Please try again.",
                         "The system is in optical module initializing, please try again later."),
        "hccn-route": ("FIB table does not exist!",)}


def _own_failed(view: str, flag: str, at: str) -> None:
    def gen(rng: random.Random) -> Iterator[Variant]:
        for line in _OWN.get(view, ()) + (rng.choice(_ANY),):
            text = "\n".join(_echo(rng, flag) + [line]) + "\n"
            yield Variant(view, f"hccn_tool failed: {line}", text,
                          ((at, 0 if at.startswith("len(") else None), ("tool_failed[0]", line)),
                          fails=True, finding=f"hccn_tool failed before printing its output ({line})",
                          stream=view == "hccn-stat")
    gen.__name__ = view.replace("-", "_") + "_own_failed"
    generator(view)(gen)


for _view, (_flag, _at) in _FLAGS.items():
    _own_failed(_view, _flag, _at)


@generator("hccn-ip")
def hccn_ip_port_failed(rng: random.Random) -> Iterator[Variant]:
    """tool_ip_get (tool_ops_ext.c) prints each port it reads and goes on past one without an
    address: main() then prints the last failure after the addresses it printed."""
    ip = f"29.1.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    line = "Get ipconf failed, because no ip was preset there!"
    text = "\n".join([f"ipaddr:{ip}", "netmask:255.255.255.0", line]) + "\n"
    yield Variant("hccn-ip", "a port's address, then a port without one", text,
                  (("ipaddr", ip), ("tool_failed[0]", line)), fails=True, end=2,
                  finding=f"hccn_tool failed after what it printed ({line})")
