"""Bandwidth and latency with units, as the inventory writes them.

Bandwidth is kept in GB/s (10^9 bytes per second) and latency in microseconds.
"""

from __future__ import annotations

import math
import re

_BW = {  # case-sensitive on purpose: GB/s (bytes) and Gb/s (bits) differ by 8x
    "GB/s": 1.0, "GBps": 1.0, "MB/s": 1e-3, "MBps": 1e-3, "TB/s": 1e3,
    "Gb/s": 1 / 8, "Gbps": 1 / 8, "Gbit/s": 1 / 8, "Mb/s": 1e-3 / 8, "Tb/s": 1e3 / 8,
}
_LAT = {"us": 1.0, "µs": 1.0, "μs": 1.0, "usec": 1.0, "ms": 1e3, "ns": 1e-3, "s": 1e6}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(\S*)\s*$")


def _split(value: object, kind: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise ValueError(f"{kind} must be a number with a unit, got {value!r}")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    elif isinstance(value, str) and len(value) <= 64:
        m = _NUM.match(value)
        if not m:
            raise ValueError(f"cannot read {kind} {value!r}: expected a number and a unit")
        number, unit = float(m.group(1)), m.group(2)
    else:
        shown = type(value).__name__ if not isinstance(value, str) else f"{value[:40]!r}..."
        raise ValueError(f"cannot read {kind} {shown}: expected a number and a unit")
    if not math.isfinite(number):
        raise ValueError(f"{kind} must be a finite number, got {value!r}")
    return number, unit


# What a design value can be, by physics (hostile round 22, H22-02). A bandwidth from 1 MB/s
# (below 10 Mb/s Ethernet's 1.25 MB/s: the slowest network a collective runs over, and the floor
# the SSH tests declare for loopback on a busy machine) to 10 TB/s (above any card's own memory,
# B200's HBM3e at 8 TB/s, which every link it drives reads from); a latency from 10 ns (light in
# fibre crosses 2 m in it; no card-to-card hop is shorter) to 1 s (past NCCL's own timeouts). A
# value beyond them (1e-300 GB/s, 1e300 GB/s, a subnormal) is a typo or a unit slip, and was read
# as written: at 1e-300 GB/s the design rules could find nothing slow.
BANDWIDTH_GBPS = (1e-3, 1e4)
LATENCY_US = (1e-2, 1e6)


def _plausible(value: float, bounds: tuple[float, float], kind: str, unit: str, given: object) -> float:
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{kind} {given!r} is {value:g} {unit}, outside what any link does "
                         f"({lo:g} to {hi:g} {unit}): a typo or a unit slip?")
    return value


def parse_bandwidth(value: object) -> float:
    """Return GB/s. Accepts GB/s, Gb/s, MB/s (and TB/s); a bare number is GB/s."""
    number, unit = _split(value, "bandwidth")
    if not unit:
        factor = 1.0
    elif unit in _BW:
        factor = _BW[unit]
    else:
        raise ValueError(f"unknown bandwidth unit {unit!r} in {value!r}; use GB/s, Gb/s or MB/s")
    if number <= 0:
        raise ValueError(f"bandwidth must be positive, got {value!r}")
    return _plausible(number * factor, BANDWIDTH_GBPS, "bandwidth", "GB/s", value)


def parse_latency(value: object) -> float:
    """Return microseconds. Accepts us, µs, ms, ns (and s); a bare number is µs."""
    number, unit = _split(value, "latency")
    if not unit:
        factor = 1.0
    elif unit in _LAT:
        factor = _LAT[unit]
    else:
        raise ValueError(f"unknown latency unit {unit!r} in {value!r}; use us, µs, ms or ns")
    if number <= 0:
        raise ValueError(f"latency must be positive, got {value!r}")
    return _plausible(number * factor, LATENCY_US, "latency", "us", value)


_SIZE = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
         "MiB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GiB": 1 << 30}


def parse_size(value: object) -> int:
    """Message sizes as nccl-tests writes them (``8``, ``64K``, ``1G``, ``16 MiB``); powers of 2."""
    number, unit = _split(value, "size")
    if unit not in _SIZE:
        raise ValueError(f"unknown size unit {unit!r} in {value!r}; use B, K, M or G")
    size = number * _SIZE[unit]
    if size > MAX_SIZE:
        raise ValueError(f"size {value!r} is over the cap of 16 GiB")
    if size < 1 or size != int(size):
        raise ValueError(f"size must be a whole number of bytes, got {value!r}")
    return int(size)


MAX_SIZE = 16 << 30  # one message: far above any probe's (1 GiB by default)
