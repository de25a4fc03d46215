"""The grammar of ``ethtool -S`` on an mlx5 port (:mod:`sncheck.vendors.infiniband.ethtool`)."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"ethtool-mlx5": Grammar(
    tool="ethtool -S IFACE [--all-groups] of a ConnectX (mlx5) port, also a grep-ed excerpt",
    versions="ethtool 2.6 to 6.x; mlx5 counters of Linux 4.12 to 6.x",
    sources=(
        "kernel ethtool (git.kernel.org/pub/scm/network/ethtool) ethtool.c (do_gnicstats, dump_stats: 'NIC "
        "statistics:' then '     %.*s: %llu' a counter; 6.x --all-groups 'Standard stats for %s:' with the "
        "eth-phy-, eth-mac-, rmon- groups)",
        "torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/en_stats.c @ 01dd742 (the counter names: software "
        "rx_*/tx_*, ch<N>_*, rx<N>_*, tx<N>_*; the port's _phy counters of IEEE 802.3, RFC 2863, RFC 2819, the "
        "physical layer with rx_err_lane_<N>_phy, per priority; PCIe rx/tx_pci_signal_integrity; module events; the "
        "vport group, vport_stats_desc: rx/tx_vport_{unicast,multicast,broadcast,rdma_unicast,rdma_multicast}_"
        "{packets,bytes}, mlx5's own names: a paste grep-ed for them is an mlx5 port's, harvest19)",
    ),
    lines=("'NIC statistics:' (or 6.x 'Standard stats for IFACE:'), then one '     NAME: VALUE' line a counter, VALUE "
           "an unsigned 64-bit decimal, NAME as the driver gives it (mlx5: rx_packets, rx_crc_errors_phy, "
           "rx_symbol_err_phy, link_down_events_phy, rx_discards_phy, rx_out_of_buffer, rx_err_lane_0_phy ...)"),
    end=("none: ethtool prints the driver's whole list and a grep keeps what it keeps; a last line cut mid-way is a "
         "cut; a reporter's '...' stands for counters left out (every line is one): not whole"),
    failures=("'Cannot get stats information', 'no stats available', 'Operation not supported', 'No such device' "
              "(errors); an error counter above zero (the _phy error counters, module faults, PCIe signal integrity: "
              "faults); drop counters are kept in drops, not judged; a counter named twice, or a judged one whose value is "
              "no unsigned decimal (errors)"),
    values="counters{NAME: n}, errors_nonzero{NAME: n}, drops{NAME: n}, lanes{LANE: n}, faults, errors",
)}
