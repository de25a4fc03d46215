"""Kernel log link events, from sncheck/vendors/kernel_links.py's grammar: a ConnectX port flapping
(mlx5e's 'NETDEV: Link down' / 'Link up', en_main.c; the RDMA core's 'IBDEV: Port: N Link STATE',
infiniband/core/cache.c 6.15+) and the PCI core's note of a link below its device's capability
(pci.c __pcie_print_link_status, in 4.17's and later speed words, 6.15's Flit mode), among other
lines, in each time format the kernel-log grammar allows."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator
from grammars.kernel_log import _TIMES, _stamp

# (the limiting link's speed, its width, the device's speed, its width, kernel era): pci_speed_string from 5.x,
# PCIE_SPEED2STR ('8 GT/s') in 4.17
_LINKS = (("16.0 GT/s PCIe", 16, "32.0 GT/s PCIe", 16, "6x", "speed"), ("32.0 GT/s PCIe", 8, "32.0 GT/s PCIe", 16, "6x", "width"),
          ("8.0 GT/s PCIe", 4, "16.0 GT/s PCIe", 16, "5x", "width+speed"), ("8 GT/s", 8, "8 GT/s", 16, "4.17", "width"))
_GBPS = {"2.5": 2.0, "5.0": 4.0, "5": 4.0, "8.0": 7.877, "8": 7.877, "16.0": 15.754, "32.0": 31.508, "64.0": 63.015}


def _gbps(speed: str, width: int) -> str:
    return f"{_GBPS[speed.split()[0]] * width:.3f}"


@generator("kernel-log")
def link_events(rng: random.Random) -> Iterator[Variant]:
    for style in rng.sample(_TIMES, 4):
        lines: list[str] = ["usb 1-1: new high-speed USB device number 2 using xhci_hcd"]
        values: list[tuple[str, object]] = []
        bdf, net, ib = f"0000:{rng.randrange(16, 250):02x}:00.{rng.randrange(2)}", f"enp{rng.randrange(9, 99)}s0f0np0", \
            f"mlx5_{rng.randrange(8)}"
        flaps, rdma = rng.randint(1, 4), rng.random() < 0.6
        for _ in range(flaps):
            lines += [f"mlx5_core {bdf} {net}: Link down"] + ([f"mlx5_core {bdf} {ib}: Port: 1 Link DOWN"] if rdma else [])
            lines.append(f"bond0: (slave {net}): link status definitely down, disabling slave")
            lines += [f"mlx5_core {bdf} {net}: Link up"] + ([f"mlx5_core {bdf} {ib}: Port: 1 Link ACTIVE"] if rdma else [])
        n = flaps * (4 if rdma else 2)
        values += [("events[0].source", "nic_link"), ("events[0].class", "link-down"), ("events[0].port", bdf),
                   ("events[0].netdev", net), ("events[0].bus_id", bdf[:-2])]
        if rdma:
            values += [("events[1].class", "port-down"), ("events[1].ib_device", ib), ("events[1].ib_port", 1),
                       ("events[3].state", "ACTIVE")]
        speed, width, cap, cap_width, era, limited = rng.choice(_LINKS)
        dev, at = f"0000:{rng.randrange(16, 250):02x}:00.0", rng.choice((f"0000:{rng.randrange(0, 16):02x}:01.0", "<unknown>"))
        flit = era == "6x" and rng.random() < 0.3
        driver = rng.choice(("pci", "mlx5_core"))
        downtrained = rng.random() < 0.7
        if downtrained:
            lines.append(f"{driver} {dev}: {_gbps(speed, width)} Gb/s available PCIe bandwidth, limited by {speed} x{width} "
                         f"link at {at} (capable of {_gbps(cap, cap_width)} Gb/s with {cap} x{cap_width} link)"
                         + (", in Flit mode" if flit else ""))
            values += [(f"events[{n}].source", "pcie_link"), (f"events[{n}].limited", limited),
                       (f"events[{n}].width", width), (f"events[{n}].cap_width", cap_width),
                       (f"events[{n}].capable_gbps", float(_gbps(cap, cap_width))),
                       (f"events[{n}].limited_at", None if at == "<unknown>" else at), (f"events[{n}].flit", flit),
                       (f"events[{n}].driver", driver)]
        # the same call where nothing limits the link: no event
        lines.append(f"mlx5_core {bdf}: {_gbps(cap, cap_width)} Gb/s available PCIe bandwidth ({cap} x{cap_width} link)")
        text = "".join(_stamp(style, i) + ln + "\n" for i, ln in enumerate(lines))
        values += [("len(events)", n + downtrained), ("len(faults)", int(downtrained))]
        yield Variant("kernel-log", f"{style} {flaps} flaps{' rdma' if rdma else ''}{' downtrained' if downtrained else ''}",
                      text, tuple(values), fails=downtrained, stream=True)
