"""Link events in the kernel log, read by the ``kernel-log`` view (:mod:`sncheck.vendors.kernel_log`
asks :func:`event` about every line, its time stripped): a ConnectX (mlx5) port's state changes and
a PCIe link below its device's capability.

Grammar, from the kernel's source:

- ``nic_link``, the netdev's carrier (``drivers/net/ethernet/mellanox/mlx5/core/en_main.c``
  ``mlx5e_update_carrier``, every mlx5e release: ``netdev_info(priv->netdev, "Link up\\n")`` /
  ``"Link down\\n"``, read at 4.x, 5.x and 6.x and in the stable patches of 6.12-6.17 that
  moved ``netif_carrier_on`` after it); ``netdev_printk`` prints ``DRIVER BDF NETDEV: `` (the
  parent's ``dev_driver_string`` and ``dev_name``, then ``netdev_name``, with
  ``netdev_reg_state``'s `` (unregistered)`` and the like where the netdev is not registered):
  ``mlx5_core 0000:53:00.0 enp83s0f0np0: Link down``. Class ``link-down`` / ``link-up``.
- ``nic_link``, the RDMA port's state (``drivers/infiniband/core/cache.c`` ``ib_cache_update``,
  from 6.15: "IB/cache: Add log messages for IB device state changes", rdma-next Feb 2025:
  ``ibdev_info(device, "Port: %d Link %s\\n", port, ib_port_state_to_str(tprops->state))`` when
  the cached state changes and was not NOP; ``ib_port_state_to_str``: NOP, DOWN, INIT, ARMED,
  ACTIVE, ACTIVE_DEFER, else UNKNOWN); ``__ibdev_printk`` prints ``DRIVER BDF IBDEV: ``:
  ``mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link ACTIVE``. Class ``port-`` and the state, lower
  case, ``_`` as ``-`` (``port-down``, ``port-active-defer``).
  Only mlx5_core's lines are read (another driver's carrier words differ: ``NIC Link is Up``).
- ``pcie_link``, ``drivers/pci/pci.c`` ``__pcie_print_link_status`` (4.17 on): where the
  bandwidth available to a device is below what it is capable of, ``pci_info(dev, "%u.%03u Gb/s
  available PCIe bandwidth, limited by %s x%d link at %s (capable of %u.%03u Gb/s with %s x%d
  link)\\n", ...)`` (the speed: 4.17's ``PCIE_SPEED2STR`` ``8 GT/s``, later ``pci_speed_string``
  ``16.0 GT/s PCIe``; ``Unknown`` / ``Unknown speed``; the limiting device ``<unknown>`` where none
  was found; 6.15's Flit mode patch adds ``, in Flit mode`` at the end). The PCI core prints it at
  enumeration for a function 0 endpoint or upstream port (``pcie_report_downtraining``, with
  ``pci`` as the driver's name: no driver bound yet), and a driver calling
  ``pcie_print_link_status`` (mlx5_core, ixgbe, ice) prints it under its own name; that call
  prints ``... available PCIe bandwidth (%s x%d link)`` where nothing limits it: no event. Class
  ``downtrained``; ``limited``: ``width`` (lanes lost), ``speed`` (a slower generation), or
  ``width+speed``, from the two links printed.

Events: ``bus_id`` the function's ``dddd:bb:dd``, ``port`` its ``dddd:bb:dd.f``; nic_link
``netdev``, ``ib_device``, ``ib_port``, ``state``; pcie_link ``driver``, ``available_gbps``,
``speed``, ``width``, ``limited_at`` (the limiting device's BDF; null for ``<unknown>``),
``capable_gbps``, ``cap_speed``, ``cap_width``, ``flit``, ``limited``. A port's state change is
counted, not a fault by itself (an administrator's ``ip link set down`` prints it too: the
kernel-log policy judges how many within a window); a PCIe link below its capability is a fault.
"""

from __future__ import annotations

import re
from typing import Any

_BDF = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_NIC = re.compile(rf"(?:^|\s)mlx5_core (?P<bdf>{_BDF}) (?P<name>[\w.-]+)(?: \([a-z]+\))?: "
                  r"(?:Link (?P<carrier>up|down)|Port: (?P<port>\d+) Link (?P<state>[A-Z_]+))\s*$")
_SPEED = r"[\d.]+ GT/s(?: PCIe)?|Unknown(?: speed)?"
_PCIE = re.compile(rf"(?:^|\s)(?P<driver>[\w.-]+) (?P<bdf>{_BDF}): (?P<avail>\d+\.\d{{3}}) Gb/s available PCIe "
                   rf"bandwidth, limited by (?P<speed>{_SPEED}) x(?P<width>\d+) link at (?P<at>{_BDF}|<unknown>) "
                   rf"\(capable of (?P<cap>\d+\.\d{{3}}) Gb/s with (?P<cap_speed>{_SPEED}) x(?P<cap_width>\d+) "
                   r"link\)(?P<flit>, in Flit mode)?\s*$")
STATES = ("NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", "UNKNOWN")
CLASSES = {"nic_link": ("link-down", "link-up", *(f"port-{s.lower().replace('_', '-')}" for s in STATES)),
           "pcie_link": ("downtrained",)}
PATTERN = r"mlx5_core .*(: Link (up|down)|: Port: [0-9]+ Link )|available PCIe bandwidth, limited by"


def event(body: str) -> dict[str, Any] | None:
    """The link event ``body`` (a kernel line, its time stripped) reports, or None."""
    if "mlx5_core" in body and (m := _NIC.search(body[:1024])):
        state = m["state"] if m["state"] in STATES else "UNKNOWN" if m["state"] else None
        return {"source": "nic_link", "code": None, "bus_id": m["bdf"][:-2].lower()[-10:], "port": m["bdf"].lower(),
                "class": f"link-{m['carrier']}" if m["carrier"] else f"port-{str(state).lower().replace('_', '-')}",
                "netdev": m["name"] if m["carrier"] else None, "ib_device": None if m["carrier"] else m["name"],
                "ib_port": int(m["port"]) if m["port"] else None, "state": state}
    if "limited by" in body and (m := _PCIE.search(body[:1024])):
        return {"source": "pcie_link", "code": None, "class": "downtrained", "bus_id": m["bdf"][:-2].lower()[-10:],
                "port": m["bdf"].lower(), "driver": m["driver"], "available_gbps": float(m["avail"]),
                "speed": m["speed"], "width": int(m["width"]),
                "limited_at": m["at"].lower() if m["at"] != "<unknown>" else None,
                "capable_gbps": float(m["cap"]), "cap_speed": m["cap_speed"], "cap_width": int(m["cap_width"]),
                "flit": bool(m["flit"]), "limited": _limited(m)}
    return None


def _gts(speed: str) -> float | None:
    return float(speed.split()[0]) if speed[:1].isdecimal() else None


def _limited(m: re.Match[str]) -> str | None:
    """What the link lost against the device's capability: 'width', 'speed' or 'width+speed' (None: neither
    shows, a speed the kernel could not name)."""
    speed, cap = _gts(m["speed"]), _gts(m["cap_speed"])
    lost = (["width"] if int(m["width"]) < int(m["cap_width"]) else []) + \
        (["speed"] if speed is not None and cap is not None and speed < cap else [])
    return "+".join(lost) or None


def describe(e: dict[str, Any]) -> str:
    if e.get("source") == "pcie_link":
        at = e.get("limited_at") or "an unknown device"
        return (f"PCIe link of {e.get('port')} below its capability ({e.get('limited') or 'bandwidth'}): "
                f"{e.get('available_gbps')} of {e.get('capable_gbps')} Gb/s ({e.get('speed')} x{e.get('width')} at "
                f"{at}; capable of {e.get('cap_speed')} x{e.get('cap_width')})")
    if e.get("ib_device"):
        return f"RDMA port {e['ib_device']}/{e.get('ib_port')} {e.get('state')} on {e.get('port')}"
    return f"NIC link {str(e.get('class', '')).removeprefix('link-')} on {e.get('port')} ({e.get('netdev')})"


def is_fault(e: dict[str, Any]) -> bool:
    return e.get("source") == "pcie_link"
