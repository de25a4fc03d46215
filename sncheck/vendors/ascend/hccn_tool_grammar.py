"""The grammars of the ``hccn_tool`` views (:mod:`sncheck.vendors.ascend.hccn_tool`).

hccn_tool ships closed with the Ascend driver (``/usr/local/Ascend/driver/tools``): what is
written here comes from Huawei's hccn_tool command reference (Atlas A2/A3, CANN 23.0 and 24.1),
the CANN HCCL troubleshooting guide's examples, and every capture under ``fixtures/real/ascend/``;
its failure lines from its own source, published with the driver's in 2026 (:data:`_OWN`:
``main.c``, ``cmd.c``; :data:`FAILURE_LINES`).
Most views print ``key: value`` lines for one device (``-i N``): that shared part is written
once (:data:`_KEY_VALUE`), each view adds its keys, end and failures."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_CLOSED = ("closed: Huawei hccn_tool command reference (Atlas A2/A3, CANN 23.0 and 24.1); DCMI's init failure lines "
           "as npu-smi prints them (npu_smi_grammar)")
_CAPTURES = "closed: fixtures/real/ascend/ 11 (MindCluster doc, 23.0), 13 (ascend-fd fixture, 910A), 02a-d and 03 (910B)"
_VERSIONS = "hccn_tool of Ascend driver 23.0 to 25.x (A2 910B, A3 910C; 910A where captured)"
# the shared part: one device's output, 'key: value' lines, an optional '$ hccn_tool -i N ... -g'
# echo above it; a failure prints a line without the key (no view: a parse error, exit 1)
_KEY_VALUE = ("'key: value' lines for one device (-i N), after an optional echo of the command; a line without "
              "the view's key is no output of it")
_OWN = ("src/custom/network/hccn/ascend910B/hccn_tool/{main.c, cmd.c} (Huawei's Ascend driver sources, CANN Open "
        "Software License 2.0, the verylucky01/driver mirror): main() maps a command's failing return to one line of "
        "cmd.c's tables (uda_handle_major_err, uda_handle_param_err, g_uda_dsmi_err_list, g_uda_tool_err_list, "
        "uda_handle_exe_err; anything else 'Cmd execute failed!'), TOOL_PRINT_ERR to stderr or TOOL_PRINT_INFO to "
        "stdout, and exits with that code; record_result_fail_to_log writes only the log file")
# hccn_tool's own failure lines, as cmd.c prints them (the source: _OWN): main() prints one in place of
# a view's output (-ip -g on an NPU with no address: 'Get ipconf failed, ...'), or after the ports it
# read (-ip -g goes on to the next port and returns the last failure)
FAILURE_LINES = frozenset((
    # uda_handle_major_err, uda_handle_exe_err and the fallback
    'Get invalid major cmd type. The valid major cmd type should be "-a" or "-i".', "Get invalid major cmd.",
    "Get invalid device id.", "Get invalid major cmd number. Please check your input.", "Get invalid input param len.",
    "Cmd execute failed!", "The cmd line execute timeout!",
    # uda_handle_param_err (a query's own: its parameters; each followed by the command's parameter list)
    "Get invalid parameters!", "Get unknown option!", "The total count of input parameters is wrong!",
    # g_uda_dsmi_err_list
    "Command execute failed!", "Get gateway failed, because no gateway was preset there!",
    "Get ipconf failed, because no ip was preset there!", "Get device health status failed!",
    "The device is not exist!", "The certificates are illegal!",
    "Failed to verify the certificate chain, make sure the certificate chain is correct!",
    "Route rows reaches max! Can not add anymore!", "Command unsupported on this optical module.",
    "The number of configuration exceed the limit!",
    "Update qp udp source port didn't take effect immediately, you can try again.",
    "Set roce udp source port based on ip failed.", "I2c is busy. Please try again.",
    "Loopback can not be operated, because the xsfp has already been auto-downgraded. Please retry after disable "
    "the auto-downgrade switch.", "Control link unreachable.", "Current cdr do not support this command!",
    "This optical module does not support dumping on this page!",
    "The system is in optical module initializing, please try again later.",
    "Can not operate, because the xsfp has already been auto-downgraded. Please retry after disable the "
    "auto-downgrade switch.", "Optical module is not present.", "The VM does not support this command.",
    "Execute failed: Link status is down.", "The Certificate has expired!",
    "Diagnostic mode is not enabled, please enable it first.", "Get lock failed. Please try again.",
    "Get invalid parameters, please check tc_qos config.", "Get invalid parameters, please check prio_tc config.",
    # g_uda_tool_err_list
    "Write configurations to config file failed. User configurations cannot be persisted! pls check cmd run "
    "permission.", "Read file failed, cmd execute failed! pls check cmd run permission.",
    "Delete configurations from config file failed. User configurations cannot be persisted! pls check cmd run "
    "permission.", "Open file failed, cmd execute failed! pls check the conf path or cmd run permission.",
    "The hccn.conf can't access, cmd execute failed! pls check the conf file or cmd run permission.",
    "The conf file can't access, cmd execute failed!", "The hccn.conf has no enough space to save user configurations.",
    "Parsing configurations from config file failed, pls check the config file.", "hccn_tool is busy, please try again.",
    "permission denied: pls check this cmd run permission.", "The command is not supported on this product.",
    "The command is not supported on this optical media.", "CDR reg data is updating, please wait a moment(30s) to get.",
    "CDR reg data update data fail, please retrig or exception cdr.",
    "CDR reg data is not trigged, must trig at least once.", "Route already exist in routing table!",
    "Route not exist in routing table, can not delete!", "User aborts command.", "This device does not support IPV6!",
    "This device does not support bonding!", "The number of pfc priority queues exceeds the maximum value(4).",
    "The number of pfc priority queues exceeds the maximum value(8).",
    "Unable to configure gateway, because ip is not configured!",
    "Unable to configure IPV6 address, because mtu is less than 1280!", "IP route table already exists.",
    "The device is occupied. Please try again later.", "The confuguraion does not exist! Please preset firstly!",
    "The configuraion already exist!", "Inconsistent address and mask!",
    "Can not add or delete default route! Please use hccn_tool gateway cfg cmd!", "FIB table does not exist!",
    "Can not config broadcast address!",
))
_NO_KEY = ("DCMI's init failure printed instead of the output (hccn_tool reaches the NIC through DCMI, as npu-smi: an "
           "optional 'DrvMngGetConsoleLogLevel failed. (...)' line, then 'dcmi module initialize failed. ret is -8005' "
           "or 'dcmi model initialized failed, because the device is used. ret is -8020'), or one of hccn_tool's own "
           "failure lines (main.c/cmd.c: FAILURE_LINES, e.g. 'Get ipconf failed, because no ip was preset there!', "
           "'Get device health status failed!', 'The device is not exist!', 'Get invalid device id.', "
           "'permission denied: pls check this cmd run permission.', 'Cmd execute failed!'), in place of the output "
           "or after what it printed: tool_failed (the lines), errors: not measured (exit 1; a value read before the "
           "line kept); any other line instead of the key: no view, a parse error (exit 1)")


def _one_line(flag: str, key: str, states: str, fault: str, value: str) -> Grammar:
    return Grammar(
        tool=f"hccn_tool -i N {flag} -g", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines=f"{_KEY_VALUE}: one line '{key}: VALUE', VALUE {states}",
        end=f"the '{key}:' line with its value",
        failures=f"{fault} (faults: the run's fact on the same value); {_NO_KEY}",
        values=f"{value}, faults, errors")


# tool_net_health_exec prints TOOL_PRINT_INFO("net health status: %s", g_net_health_status[presult]) and refuses a
# presult outside the table (hccn_err "dsmi get net health status invalid": no status line). The table, as
# src/custom/network/hccn/ascend910B/hccn_tool/tool_ops*.c holds it (verylucky01/driver mirror; code corpus file ids
# 54966640125, 54781384364), in its order 0x0..0x9; the Ascend PyTorch adapter guide's table (harvest25) agrees.
NET_HEALTH = ("Success", "Socket fail", "Receive timeout", "Unreachable", "Time exceeded", "Fault", "Init",
              "Thread error", "Detect ip set", "Unknown")
# 'Socket failed': the ascend-faultdiag 910A test input (fixtures/real/ascend/13) prints it for status 1; no source
# we hold prints it, an older driver's wording or an edit: read as status 1 is (the simulator prints 'Socket fail')
NET_HEALTH_WORDED = {"Socket failed": "Socket fail"}
# tool_link_get_linkstatus (tool_ops.c, the same mirror): dsmi_get_netdev_link's flag as TOOL_PRINT_INFO("link status:
# UP") or ("link status: DOWN"), nothing else; its dsmi failure is roce_err's log line and main()'s FAILURE_LINES
LINK = ("UP", "DOWN")

GRAMMAR = {
    "hccn-net-health": _one_line("-net_health", "net health status",
                                 f"one of g_net_health_status's {', '.join(NET_HEALTH)} (tool_ops.c; 'Socket failed', "
                                 "fixture 13's wording of status 1, kept as printed); any other value is the line cut "
                                 "inside its value or edited: errors (exit 1), no status read",
                                 "any status but Success (roce_net_health)", "net_health"),
    "hccn-link": _one_line("-link", "link status", "UP or DOWN (tool_ops.c tool_link_get_linkstatus, "
                           "src/custom/network/hccn/ascend910B/hccn_tool in the verylucky01/driver mirror); any other "
                           "value is the line cut inside its value or edited: errors (exit 1), no link read",
                           "DOWN (roce_link)", "link"),
    "hccn-fec": _one_line("-fec", "fec mode", "'rs FEC mode' or 'no FEC mode'", "any mode but RS (roce_fec)", "fec"),
    "hccn-ip": Grammar(
        tool="hccn_tool -i N -ip -g", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines=f"{_KEY_VALUE}, without a blank after the colon: 'ipaddr:A.B.C.D', 'netmask:A.B.C.D' (a guide's or "
              "reporter's masked octets, 'ipaddr:10.***.***.2', kept as printed: harvest25)",
        end="the 'netmask:' line", failures=f"no netmask after the address (errors: cut short); {_NO_KEY}",
        values="ipaddr, netmask, errors"),
    "hccn-optical": Grammar(
        tool="hccn_tool -i N -optical -g", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines=("'optical info:', then key lines padded to 21 ('%-21s: VALUE [unit]'): present ('present' or 'not "
               "present'), temperature (C), vendor name / part number / serial number / org unique id, xsfp "
               "identifier, xsfp wave length (nm), manufact date code, Vcc (mV); Tx Power and Rx Power per lane "
               "('Tx Power0'..'3' on a 4-lane module, no digit on one lane; mW); the module's thresholds 'Vcc / Temp "
               "/ TxPower / RxPower High|Low Thres' (mV, C, mW); Tx Bias per lane (mA); the flags 'Tx Los Flag', "
               "'Rx Los Flag', 'Tx LoL Flag', 'Rx LoL Flag' (hex, one bit a lane); optionally 'Host SNR LaneN' / "
               "'Media SNR LaneN' (dB or 'not supported')"),
        end="a present module: its 'Rx LoL Flag' line (the SNR lines after it are optional by module); a module "
            "not present: the 'present' line",
        failures=("module not present, a lane's Tx/Rx power outside the module's own thresholds, a LoS/LoL flag "
                  "set (faults: roce_optical); a present module without its Rx LoL Flag, '...' (errors: cut short); "
                  + _NO_KEY),
        values="present, values (numbers in their unit, text as printed), thresholds, flags (ints), faults, errors"),
    "hccn-stat": Grammar(
        tool="hccn_tool -i N -stat -g", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines=("'packet statistics:', then 'name:count' lines (no blank), e.g. mac_tx/rx_mac_pause_num, "
               "mac_tx/rx_pfc_pkt_num, roce_rx/tx_err_pkt_num, roce_qp_status_err_num, nic_tx/rx_all_pkg/oct_num; "
               "the set differs by NIC and version"),
        end="none: nothing states how many counters a NIC prints (a cut between lines is a shorter list; one "
            "inside a line is told by its missing newline; a reporter's '...' stands for counters left out: not whole)",
        failures=f"none of its own (the counters are values; the run judges no fact on them); {_NO_KEY}",
        values="counters {name: count}, errors"),
    "hccn-link-stat": Grammar(
        tool="hccn_tool -i N -link_stat -g", versions=_VERSIONS,
        sources=(_CLOSED, _OWN, _CAPTURES, "Huawei CANN HCCL troubleshooting guide (2025): the newer 'link down count' "
                 "line"),
        lines=("each line prefixed '[device N]' (older) or '[devid N]': 'current time        : DATE', 'link up "
               "count       : N', 'link down count     : N' (newer versions), 'link change records :', then one "
               "'    DATE    LINK UP|LINK DOWN' a change, newest first (DATE as ctime: 'Tue Jun  6 16:32:12 2023')"),
        end="the 'link change records :' line (the records' count is stated nowhere and is capped)",
        failures=f"no 'link change records :' line (errors: cut short); {_NO_KEY}",
        values="current_time, link_up_count, link_down_count, changes [[date, 'LINK UP'|'LINK DOWN']], errors"),
}


GRAMMAR.update({
    "hccn-ping": Grammar(
        tool="hccn_tool -i N -ping -g address A.B.C.D", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines="'device N PING A.B.C.D', a 'recv seq=K,time=T ms' line a reply (ms, six decimals), then 'S packets "
              "transmitted, R received, P% packet loss'",
        end="the 'packets transmitted' summary",
        failures=f"fewer received than sent (faults); no summary (a parse error: cut or failed); {_NO_KEY}",
        values="sent, received, loss_pct, times_ms, faults, errors"),
    "hccn-lldp": Grammar(
        tool="hccn_tool -i N -lldp -g", versions=_VERSIONS,
        sources=(_CLOSED, _OWN, _CAPTURES, "IEEE 802.1AB: an LLDPDU ends with its End of LLDPDU TLV"),
        lines="a TLV name a line ('Chassis ID TLV', 'Port ID TLV', 'Time to Live TLV', 'System Name TLV', ...), its "
              "values on the lines under it, tab-indented (a system description may run over unindented lines)",
        end="'End of LLDPDU TLV'",
        failures=f"no 'End of LLDPDU TLV' (errors: cut short); {_NO_KEY}",
        values="tlvs {name: [lines]}, errors"),
    "hccn-hw-stats": Grammar(
        tool="hccn_tool -i N -hw_stats -g", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines="'[devid N] name: count' lines: pd/mr/cq/qp alloc, dealloc and active, aeqe, ceqe",
        end="none stated: the judge's count of counters (--expect N) says whether every one is listed",
        failures=f"none of its own; {_NO_KEY}", values="counters {name: count}, errors"),
    "hccn-conf": Grammar(
        tool="cat /etc/hccn.conf (what hccn_tool -i N -ip -s and friends write)", versions=_VERSIONS,
        sources=(_CLOSED, _OWN, _CAPTURES),
        lines="'key_N=value' lines, N the device: address, netmask, netdetect, gateway, send_arp_status, ...",
        end="none stated: the judge's count of devices (--expect N) says whether every one is listed (a "
            "reporter's '...' stands for a device's keys left out: not whole)",
        failures="a file: no failure line is ever written into it (hccn_tool reports its own on stderr); no "
                 "'key_N=value' line (a parse error)", values="devices {N: {key: value}}, errors"),
    "hccn-route": Grammar(
        tool="hccn_tool -i N -route -g", versions=_VERSIONS, sources=(_CLOSED, _OWN, _CAPTURES),
        lines="'Routing table:', the route(8) header 'Destination Gateway Genmask Flags Metric Ref Use Iface', a row "
              "of eight cells a route",
        end="none stated: the judge's count of routes (--expect N) says whether every one is listed",
        failures=f"no row (a parse error); {_NO_KEY}",
        values="routes [{destination, gateway, genmask, flags, metric, ref, use, iface}], errors"),
    "hccn-status": Grammar(
        tool="hccn_tool -i N -status -g", versions=_VERSIONS + "; ethtool 3.x to 6.x on the NPU",
        sources=(_CLOSED, _OWN, "closed: fixtures/real/ascend/02a (910B, a reporter's excerpt)",
                 "ethtool ethtool.c do_gset / dump_link_usettings (RMerl/asuswrt-merlin release/src/router/ethtool "
                 "copy) and netlink/settings.c: what follows 'Netdev status:' is the NPU's own 'ethtool ethN'"),
        lines=("'Netdev status:Settings for ethN:' (hccn_tool's prefix on ethtool's first line), then a tab-indented "
               "'key: value' line a setting: Supported ports '[ Backplane ]', Supported link modes (one a line, "
               "continued on indented lines), Supported pause frame use, Supports auto-negotiation, Supported FEC "
               "modes, Advertised link modes / pause frame use / auto-negotiation / FEC modes, [Link partner "
               "advertised ...], Speed 'NMb/s' or 'Unknown!', Duplex Full/Half/'Unknown! (255)', Auto-negotiation "
               "on/off, Port, PHYAD, Transceiver, [Supports Wake-on, Wake-on, Current message level with its "
               "flags continued], 'Link detected: yes|no'"),
        end="'Link detected:' (ethtool prints it last, after the link settings)",
        failures=("'Link detected: no' (faults: the port is down); ethtool's 'Cannot get device settings: ...' / "
                  "'No data available' (errors: not measured); no 'Link detected' line, '...' (errors: cut "
                  f"short); {_NO_KEY}"),
        values="device, speed_Mbps, duplex, link_detected, supported_fec, advertised_fec, settings {key: value}, "
               "faults, errors"),
})
