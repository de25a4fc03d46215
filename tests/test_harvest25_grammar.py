"""Harvest 25's first-try misses, each read now by its tool's grammar (README "Harvest 25").

Each case is written from the layout the tool's source prints, not from the capture that showed it:
perfquery.c of OFED 1.3 (infiniband-diags before 1.5) printed ``"# Port counters: %s port %d\\n%s"`` after
mad_dump_perfcounters and mad_dump_perfcounters_ext alike, with no CapMask; OFED 1.2-1.3's libibmad
fields.c named the PortCounters ``SymbolErrors`` .. ``RcvPkts`` (no XmtWait); libibmad dump.c's
mad_dump_linkspeedext prints a LinkSpeedExtActive of 0 as ``No Extended Speed``."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text


def _dotted(name: str, value: object) -> str:
    return f"{name + ':':.<33}{value}"  # libibmad pads the name with dots to column 33


_OLD_PORT_COUNTERS = ("SymbolErrors", "LinkRecovers", "LinkDowned", "RcvErrors", "RcvRemotePhysErrors",
                      "RcvSwRelayErrors", "XmtDiscards", "XmtConstraintErrors", "RcvConstraintErrors",
                      "LinkIntegrityErrors", "ExcBufOverrunErrors", "VL15Dropped")


def test_ofed_1_2_port_counters_short_names_end_at_rcvpkts_and_read_under_sysfs_names() -> None:
    """libibmad's short names, the block whole at RcvPkts: was 'the block ends at RcvPkts, before its last
    counter: output cut short' (exit 1) and every counter kept under its raw name, none judged."""
    fields = [("PortSelect", 1), ("CounterSelect", "0x0000")] + [(n, 2 if n == "RcvErrors" else 0)
                                                                 for n in _OLD_PORT_COUNTERS]
    fields += [("XmtData", 1000), ("RcvData", 2000), ("XmtPkts", 30), ("RcvPkts", 40)]
    out = parse_text("perfquery", "\n".join(["# Port counters: Lid 9 port 1"] + [_dotted(n, v) for n, v in fields]) + "\n")
    assert out["errors"] == []
    counters = out["ports"][0]["counters"]
    assert counters["port_rcv_errors"] == 2 and counters["excessive_buffer_overrun_errors"] == 0
    assert (counters["port_xmit_data"], counters["port_rcv_packets"]) == (1000, 40)
    cut = "\n".join(["# Port counters: Lid 9 port 1"] + [_dotted(n, v) for n, v in fields[:-2]]) + "\n"
    assert parse_text("perfquery", cut)["errors"]  # ending at XmtData is still a cut


def test_extended_counters_under_the_old_port_counters_header_are_whole_at_multicast_rcv() -> None:
    """'perfquery -x' before infiniband-diags 1.5: PortXmitData first (PortCounters print SymbolErrorCounter
    first) under '# Port counters:' is PortCountersExtended, whole at PortMulticastRcvPkts; was read as
    PortCounters ending early, 'output cut short' (exit 1)."""
    ext = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts", "PortUnicastRcvPkts",
           "PortMulticastXmitPkts", "PortMulticastRcvPkts")
    lines = ["# Port counters: Lid 214 port 35", _dotted("PortSelect", 35), _dotted("CounterSelect", "0x1b01")]
    lines += [_dotted(n, 100 + i) for i, n in enumerate(ext)]
    out = parse_text("perfquery", "\n".join(lines) + "\n")
    assert out["errors"] == []
    assert out["ports"][0]["counters"]["multicast_rcv_packets"] == 107
    assert parse_text("perfquery", "\n".join(lines[:-2]) + "\n")["errors"]  # cut before its last counter
    # without a CapMask in its header (before 1.5) an extended block ends at PortMulticastRcvPkts only (old
    # libibmad dump.c: IB_PC_EXT_FIRST_F .. IB_PC_EXT_LAST_F): a cut after PortRcvPkts was read as whole
    newer = ["# Port extended counters: Lid 61 port 35"] + lines[1:]
    assert parse_text("perfquery", "\n".join(newer) + "\n")["errors"] == []
    assert parse_text("perfquery", "\n".join(newer[:7]) + "\n")["errors"]


def test_no_extended_speed_is_no_speed_the_port_runs_at_link_speed_active() -> None:
    """LinkSpeedExtActive 'No Extended Speed' (mad_dump_linkspeedext's 0): the active speed is LinkSpeedActive;
    was read as the speed 'No Extended Speed'."""
    block = ["CA/RT PortInfo:", "# Port info: Lid 2 port 1", _dotted("LinkState", "Active"),
             _dotted("PhysLinkState", "LinkUp"), _dotted("Lid", 2), _dotted("SMLid", 18), _dotted("LMC", 0),
             _dotted("LinkWidthSupported", "1X or 4X"), _dotted("LinkWidthEnabled", "1X or 4X"),
             _dotted("LinkWidthActive", "4X"), _dotted("LinkSpeedSupported", "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"),
             _dotted("LinkSpeedEnabled", "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"), _dotted("LinkSpeedActive", "10.0 Gbps"),
             _dotted("LinkSpeedExtSupported", "14.0625 Gbps"), _dotted("LinkSpeedExtEnabled", "14.0625 Gbps"),
             _dotted("LinkSpeedExtActive", "No Extended Speed"), _dotted("Mkey", "<not displayed>"),
             _dotted("MkeyLeasePeriod", 0), _dotted("ProtectBits", 0)]
    out = parse_text("ibportstate", "\n".join(block) + "\n")
    assert out["errors"] == [] and out["faults"] == []
    assert out["ports"][0]["speed"] == "10.0 Gbps"
    fdr = [line if not line.startswith("LinkSpeedExtActive") else _dotted("LinkSpeedExtActive", "14.0625 Gbps")
           for line in block]
    assert parse_text("ibportstate", "\n".join(fdr) + "\n")["ports"][0]["speed"] == "14.0625 Gbps"


def _v15_block(state: str = "Active", phys: str = "LinkUp") -> list[str]:
    """infiniband-diags 1.5's show_port_info: the port states, Lid, SMLid, LMC, widths and speeds, no M_Key."""
    return ["# Port info: Lid 1 port 1", _dotted("LinkState", state), _dotted("PhysLinkState", phys), _dotted("Lid", 1),
            _dotted("SMLid", 1), _dotted("LMC", 0), _dotted("LinkWidthSupported", "1X or 4X"),
            _dotted("LinkWidthEnabled", "1X or 4X"), _dotted("LinkWidthActive", "4X"),
            _dotted("LinkSpeedSupported", "2.5 Gbps or 5.0 Gbps"), _dotted("LinkSpeedEnabled", "2.5 Gbps or 5.0 Gbps"),
            _dotted("LinkSpeedActive", "5.0 Gbps")]


def test_infiniband_diags_1_5_ca_portinfo_and_its_change_are_read() -> None:
    """1.5's ibportstate.c prints 'CA PortInfo:' ('Initial CA PortInfo:' before a change) and a CA block ending at
    LinkSpeedActive. The 'CA' line was no line of the grammar: a change cut before its 'After PortInfo set:' block
    read as a whole query (exit 0)."""
    whole = parse_text("ibportstate", "\n".join(["CA PortInfo:"] + _v15_block()) + "\n")
    assert whole["errors"] == [] and whole["ports"][0]["role"] == "CA"
    change = ["Initial CA PortInfo:"] + _v15_block()
    assert any("After PortInfo set" in e for e in parse_text("ibportstate", "\n".join(change) + "\n")["errors"])
    after = change + ["", "After PortInfo set:"] + _v15_block("Down", "Polling")
    out = parse_text("ibportstate", "\n".join(after) + "\n")
    assert out["errors"] == [] and out["faults"]  # the port went down: a fault, the output whole


def test_a_port_info_line_that_lost_its_hash_is_the_port_header() -> None:
    """'# Port info: ...' pasted through markdown (a heading) or a comment loses its '# ': still the block's header,
    its lid and port read (they were None)."""
    lines = ["CA PortInfo:", "Port info: Lid 1 port 1"] + _v15_block()[1:]
    port = parse_text("ibportstate", "\n".join(lines) + "\n")["ports"][0]
    assert (port["lid"], port["port"]) == (1, 1)


def test_a_directed_route_header_is_a_blocks_header_with_its_capmask() -> None:
    """perfquery -D: portid2str names the port 'DR path slid 0; dlid 0; 0'. The header was no header: its CapMask
    (bit 12, PortXmitWait printed) was not read, so a block cut before PortXmitWait read as whole (exit 0)."""
    names = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
             "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
             "PortRcvConstraintErrors")
    lines = ["# Port counters: DR path slid 0; dlid 0; 0 port 1 (CapMask: 0x1600)", _dotted("PortSelect", 1),
             _dotted("CounterSelect", "0x0000")] + [_dotted(n, 0) for n in names]
    lines += [_dotted("CounterSelect2", "0x00"), _dotted("LocalLinkIntegrityErrors", 0),
              _dotted("ExcessiveBufferOverrunErrors", 0), _dotted("VL15Dropped", 0), _dotted("PortXmitData", 864),
              _dotted("PortRcvData", 1008), _dotted("PortXmitPkts", 12), _dotted("PortRcvPkts", 14)]
    whole = parse_text("perfquery", "\n".join(lines + [_dotted("PortXmitWait", 0)]) + "\n")
    assert whole["errors"] == [] and (whole["ports"][0]["lid"], whole["ports"][0]["port"]) == (None, 1)
    assert any("ends at PortRcvPkts" in e for e in parse_text("perfquery", "\n".join(lines) + "\n")["errors"])
