"""The scale-out tests every vendor's hosts share: ``ibstat`` for the NICs (rail k is the
k-th HCA in natural order, judged against its first port's rate) and perftest's
``ib_write_bw`` / ``ib_write_lat`` between rail-aligned NICs of two hosts. The SSH
backend runs them (:mod:`sncheck.backends.scaleout`); this module says what to run and
how to judge it (:data:`SCALE_OUT`, a vendor plug-in's ``scale_out``)."""

from __future__ import annotations

import re

from sncheck.topology import natural_key
from sncheck.vendors.base import PairTest, ScaleOut
from sncheck.vendors.infiniband import counters, ibstat, perftest
from sncheck.vendors.portcounters import DETAIL_ERRORS

BASE_PORT = 18515            # perftest's default port; rail k listens on BASE_PORT + k
BW_BYTES = 8 << 20           # ib_write_bw message size (the bandwidth-bound end)
BW_ITERS = 5000
LAT_BYTES = 2                # ib_write_lat message size (perftest's default)
LAT_ITERS = 1000
_NOT_LISTENING = re.compile(r"(?i)couldn't connect|connection refused|unable to open file descriptor")


def perftest_argv(tool: str, device: str, port: int, server: str | None = None) -> list[str]:
    """One side of a perftest run; ``server`` is the address the client connects to."""
    size, iters = (BW_BYTES, BW_ITERS) if tool == "ib_write_bw" else (LAT_BYTES, LAT_ITERS)
    argv = [tool, "-d", device, "-p", str(port), "-s", str(size), "-n", str(iters), "-F"]
    if tool == "ib_write_bw":
        argv.append("--report_gbits")
    return argv + ([server] if server else [])


def nic_rails(text: str) -> list[tuple[str, float | None]]:
    """Rail k -> (HCA name, its first port's rate in Gb/s), from ``ibstat``: the HCAs in
    natural order (mlx5_2 before mlx5_10)."""
    parsed = ibstat.parse_ibstat(text)
    cas = sorted(parsed["cas"], key=lambda ca: natural_key(ca["name"]))
    out = []
    for ca in cas:
        ports = ca.get("ports") or []
        rate = ports[0].get("rate_gbps") if ports else None
        out.append((ca["name"], float(rate) if rate is not None else None))
    return out


def _bw_argv(device: str, port: int, server: str | None = None) -> list[str]:
    return perftest_argv("ib_write_bw", device, port, server)


def _lat_argv(device: str, port: int, server: str | None = None) -> list[str]:
    return perftest_argv("ib_write_lat", device, port, server)


def _check_bw(host: str, parsed: dict, rate: float, peer: str) -> list[dict]:
    return perftest.check_ib_write_bw(host, parsed, nic_Gbps=rate, peer=peer)


def _check_lat(host: str, parsed: dict, design_us: float, peer: str) -> list[dict]:
    return perftest.check_ib_write_lat(host, parsed, design_us=design_us, peer=peer)


def _counters_argv(sysfs_root: str) -> list[str]:
    return ["sh", "-c", counters.sysfs_read_command(sysfs_root.rstrip("/") + "/class/infiniband")]


SCALE_OUT = ScaleOut(
    nic_tool="ibstat", nic_argv=("ibstat",), nic_rails=nic_rails,
    pair_tests={
        "ib_write_bw": PairTest("ib_write_bw", "ib_bw", _bw_argv, perftest.parse_ib_write_bw, "nic_rate", _check_bw),
        "ib_write_lat": PairTest("ib_write_lat", "ib_lat", _lat_argv, perftest.parse_ib_lat, "design_latency",
                                 _check_lat),
    },
    base_port=BASE_PORT,
    not_listening=lambda text: bool(_NOT_LISTENING.search(text)),
    counters_tool="ib-counters", counters_argv=_counters_argv,
    parse_counters=counters.parse_sysfs_counters,
    # perfquery -E / -D's detail counters (no sysfs file holds them) are error counters of its view,
    # judged by the rules that name them as every other (sncheck parse perfquery; one judgement)
    error_counters=(*counters.ERROR_COUNTERS, *DETAIL_ERRORS),
    counters=(*counters.COUNTERS, *DETAIL_ERRORS), rails=counters.rails,
    counter_views=("perfquery", "ibqueryerrors"), over_threshold_views=("ibqueryerrors",),
)
