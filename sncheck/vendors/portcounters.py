"""InfiniBand PMA port counters' widths: vendor-neutral facts the judging reads
(:mod:`sncheck.health.fabric`, :mod:`sncheck.health.cabling`) and the IB views share
(:mod:`sncheck.vendors.infiniband.counters`)."""

from __future__ import annotations

# perfquery -E / -D's detail counters (libibmad IB_PC_RCV_LOCAL_PHY_ERR_F .. IB_PC_RCV_LOOPING_ERR_F,
# IB_PC_XMT_INACT_DISC_F .. IB_PC_XMT_SW_HOL_DISC_F), kept under their printed names
DETAIL_ERRORS = ("PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
                 "PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors", "PortInactiveDiscards",
                 "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards", "PortSwHOQLifetimeLimitDiscards")

# Each error counter's width in bits where it is read from PortCounters (the sysfs counters/ files, perfquery
# without -x, ibqueryerrors): the kernel's drivers/infiniband/core/sysfs.c PORT_PMA_ATTR(name, counter, width,
# offset) table (symbol_error 16, link_error_recovery 8, link_downed 8, port_rcv_errors 16, ...,
# local_link_integrity_errors 4, excessive_buffer_overrun_errors 4, VL15_dropped 16), and libibmad fields.c's 16 bits
# for each PortRcvErrorDetails / PortXmitDiscardDetails counter. A PortCounters error counter does not wrap: it
# stops at 2**width - 1 (IBA 16.1.3.5), so a read at that value says nothing of what it counted since. The
# additional counters of PortCountersExtended (perfquery -x under CapMask2's bit) are 64 bits: never at a cap.
PORT_COUNTER_BITS = {"symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16,
                     "port_rcv_remote_physical_errors": 16, "port_rcv_switch_relay_errors": 16,
                     "port_xmit_discards": 16, "port_xmit_constraint_errors": 8, "port_rcv_constraint_errors": 8,
                     "local_link_integrity_errors": 4, "excessive_buffer_overrun_errors": 4, "VL15_dropped": 16,
                     **dict.fromkeys(DETAIL_ERRORS, 16)}


def saturated(counter: str, value: int | None) -> bool:
    """Whether a PortCounters error counter reads at its width's maximum (it stopped counting there)."""
    bits = PORT_COUNTER_BITS.get(counter)
    return bits is not None and value == (1 << bits) - 1


# what an operator does about a counter at its cap (infiniband-diags' perfquery -R resets a port's PortCounters)
CLEAR = "clear the port's counters (perfquery -R) and read again"
