"""``ethtool -S IFACE`` on an mlx5 (ConnectX) port: view ``ethtool-mlx5``.

Grammar. ethtool (``ethtool.c`` ``do_gnicstats`` / ``dump_stats``, unchanged since ethtool
2.6): ``NIC statistics:`` then one ``     NAME: VALUE`` line per counter, NAME as the driver
gives it, VALUE an unsigned 64-bit decimal. ethtool 6.x's ``--all-groups`` / ``--groups``
adds the standard groups (``Standard stats for IFACE:`` then ``eth-phy-``, ``eth-mac-``,
``rmon-`` names): read the same way. ``Cannot get stats information: ...`` / ``no stats
available`` are the errors.

The names (Linux ``drivers/net/ethernet/mellanox/mlx5/core/en_stats.c`` at 01dd742, the same
set since 4.12 for the physical port): the software counters (``rx_packets``, ``rx_bytes``,
``tx_packets``..., per channel ``ch<N>_*``, ``rx<N>_*``, ``tx<N>_*``); the queue counters
``rx_out_of_buffer``, ``rx_if_down_packets``; the port's (``_phy``): IEEE 802.3
``rx_crc_errors_phy``, ``rx_symbol_err_phy``, ``rx_in_range_len_errors_phy``,
``rx_out_of_range_len_phy``, ``rx_oversize_pkts_phy``, ``rx_pause_ctrl_phy``..., RFC 2863
``rx_discards_phy``, ``tx_discards_phy``, ``tx_errors_phy``, RFC 2819
``rx_undersize_pkts_phy``, ``rx_fragments_phy``, ``rx_jabbers_phy``, the physical layer
``link_down_events_phy``, ``rx_pcs_symbol_err_phy``, ``rx_corrected_bits_phy``,
``rx_err_lane_<N>_phy`` (with the PCAM statistical group), per priority ``rx_prio<N>_*``;
PCIe ``rx_pci_signal_integrity``, ``tx_pci_signal_integrity``, ``outbound_pci_stalled_*``;
module events ``module_unplug``, ``module_bus_stuck``, ``module_high_temp``,
``module_bad_shorted``.

The vport group (``vport_stats_desc``: ``rx_vport_unicast_packets`` ... ``tx_vport_rdma_multicast_bytes``,
RoCE traffic under ``*_vport_rdma_*``) names an mlx5 port as a ``_phy`` counter does: a paste grep-ed for
them (``ethtool -S eth0 | grep rdma``, harvest19) is read without the header.

Whole: ethtool prints the driver's whole list; a paste filtered by ``grep`` holds what it
holds (no count says how many). A last line cut mid-way is reported by ``sncheck parse``.
A counter named twice (two reads spliced: the larger value is kept) and a judged counter whose
value is no unsigned decimal (``-5``, ``0x10``) are errors (exit 1), never a counter left out.
Failures (exit 1): a counter of :data:`ERROR_COUNTERS` above zero (the port's physical and
MAC error counters, module faults, PCIe signal integrity); the drop counters
(:data:`DROP_COUNTERS`: discards, out of buffer) are kept in ``drops``, not judged here: a
loaded RoCE port drops under congestion, and a run judges their growth, not their value.

JSON: ``{"tool": "ethtool-mlx5", "counters": {NAME: n}, "errors_nonzero": {NAME: n},
"drops": {NAME: n}, "lanes": {"0": n, ...}, "faults", "errors"}``.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError

TOOL = "ethtool-mlx5"
_LINE = re.compile(r"^(?P<name>[A-Za-z][\w.\-\[\]]*)\s*:\s*(?P<value>\d+)$")
_JUDGED = re.compile(r"^(?P<name>[A-Za-z][\w.\-\[\]]*)\s*:\s*(?P<value>\S.*)$")  # a counter line whose value is no count
ERROR_COUNTERS = (
    "rx_crc_errors_phy", "rx_symbol_err_phy", "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy",
    "rx_oversize_pkts_phy", "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy", "tx_errors_phy",
    "link_down_events_phy", "rx_pcs_symbol_err_phy", "rx_unsupported_op_phy",
    "module_bus_stuck", "module_high_temp", "module_bad_shorted",
    "rx_pci_signal_integrity", "tx_pci_signal_integrity",
)
DROP_COUNTERS = ("rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer", "rx_buffer_passed_thres_phy",
                 "rx_if_down_packets", "rx_steer_missed_packets", "rx_wqe_err", "tx_cqe_err")
# en_stats.c's vport group (vport_stats_desc: the NIC vport's own counters, RoCE's as *_vport_rdma_*), a name no
# other driver prints: a paste grep-ed for them (ethtool -S eth0 | grep rdma) is an mlx5 port's without a _phy line
VPORT_COUNTERS = frozenset(f"{d}x_vport_{kind}_{unit}" for d in "rt" for unit in ("packets", "bytes")
                           for kind in ("unicast", "multicast", "broadcast", "rdma_unicast", "rdma_multicast"))
_ERRORS = ("Cannot get stats", "no stats available", "Operation not supported", "No such device")


def parse_ethtool_stats(text: str) -> dict[str, Any]:
    """``ethtool -S`` output of an mlx5 port (see the module)."""
    counters: dict[str, int] = {}
    errors: list[str] = []
    header = False
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("NIC statistics:") or line.startswith("Standard stats for"):
            header = True
            continue
        if any(e in line for e in _ERRORS):
            errors.append(line[:200])
            continue
        if m := _LINE.match(line):
            if m["name"] in counters:  # the driver names each counter once: two reads spliced or pasted twice
                errors.append(f"counter {m['name']} is listed twice ({counters[m['name']]}, then {m['value']}): "
                              "two outputs spliced or repeated")
            counters[m["name"]] = max(int(m["value"]), counters.get(m["name"], 0))
        elif (m := _JUDGED.match(line)) and (m["name"] in ERROR_COUNTERS or m["name"] in DROP_COUNTERS):
            errors.append(f"counter {m['name']} reads {m['value'][:40]!r}, not ethtool's unsigned decimal: "
                          "not judged")
    if not counters and not errors:
        raise ParseError("no 'NAME: VALUE' counter line and no ethtool error", tool=TOOL)
    if not header and not errors and not any(n.endswith("_phy") or n in ERROR_COUNTERS or n in VPORT_COUNTERS
                                             for n in counters):
        raise ParseError("no 'NIC statistics:' header and no mlx5 port counter (..._phy, *_vport_*)", tool=TOOL)
    if not header and counters and not errors and not any(n in ERROR_COUNTERS for n in counters):
        # a paste grep-ed for traffic counters (| grep rdma): read, but no error counter judged (ethtool -S
        # prints every counter under its header; a header's list the reporter thinned is read as the reporter says)
        errors.append("not judged: the paste holds none of mlx5's error counters "
                      f"({', '.join(sorted(ERROR_COUNTERS)[:3])}, ...): nothing says the port is clean")
    nonzero = {n: counters[n] for n in ERROR_COUNTERS if counters.get(n)}
    lanes = {m[1]: v for n, v in counters.items() if (m := re.fullmatch(r"rx_err_lane_(\d+)_phy", n))}
    faults = [f"{n} = {v}" for n, v in nonzero.items()]
    return {"tool": TOOL, "counters": counters, "errors_nonzero": nonzero,
            "drops": {n: counters[n] for n in DROP_COUNTERS if n in counters}, "lanes": lanes,
            "faults": faults, "errors": errors}
