"""The registry behind ``sncheck parse TOOL FILE``: every vendor plug-in's parsers.

Each entry maps a TOOL name to a pure function ``text -> dict``; every result carries an
``errors`` list, and a function raises ``sncheck.errors.ParseError`` only when the text
holds nothing it recognises. The names come from each vendor's ``VENDOR.views``
(:mod:`sncheck.vendors.registry`) plus the vendor-neutral tools below (nccl-tests,
rccl-tests, InfiniBand); each view declares its parser and what one record of its output
is (:class:`sncheck.vendors.base.View`) in one entry. The JSON shape each returns is
documented in its module.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from sncheck.errors import ConfigError, ParseError
from sncheck.rows import BUSBW_FACTOR
from sncheck.vendors import after_end, crash, digits, kernel_log, listing, nccl_inspector, nccl_ras, registry
from sncheck.vendors.withheld import withheld
from sncheck.vendors.base import View
from sncheck.vendors.delivery import unwrap_lines
from sncheck.vendors.infiniband import counters, ethtool, ibnetdiscover, ibstat, mlxlink, perftest, ports
from sncheck.vendors.listing import Listing
from sncheck.vendors.nccl import debug_log, watchdog
from sncheck.vendors.nccltests import parse as nccl_tests
from sncheck.vendors.facts import Expect
from sncheck.vendors.grammar import table

Parser = Callable[[str], dict[str, Any]]


_LINK_LAYER = "InfiniBand|Ethernet|IB|Unknown|Unspecified"
_DEVINFO = (("devices.*", "phys_port_cnt", r"\d+"), ("devices.*.ports.*", "link_layer", _LINK_LAYER),
            ("devices.*.ports.*", "state", r"PORT_(?:NOP|DOWN|INIT|ARMED|ACTIVE|ACTIVE_DEFER)|invalid state|unknown"),
            ("devices.*.ports.*", "phys_state", r"SLEEP|POLLING|DISABLED|PORT_CONFIGURATION TRAINNING|LINK_UP"
                                                r"|LINK_ERROR_RECOVERY|PHY TEST|invalid physical state"))


@cache
def views() -> dict[str, View]:
    """TOOL name -> its view (parser and listing): every vendor plug-in's, then the shared
    tools' (scale-out and collective benchmarks every vendor runs). Built on first use, from
    the plug-ins the registry lists."""
    return {
        **{name: view for v in registry.vendors().values() for name, view in v.views.items()},
        "nccl-tests": View(nccl_tests.parse_nccl_tests, Listing("row", ("rows",))),
        # the nccl-tests layout, whichever vendor runs it
        "rccl-tests": View(nccl_tests.parse_rccl_tests, Listing("row", ("rows",))),
        # every port block ends with its link layer (ibstat.c port_dump, the ibstatus script)
        # (ibstat.c prints the port's sysfs link_layer: the kernel's InfiniBand, Ethernet or Unknown;
        # the ibstatus script IB where sysfs has none; devinfo.c's link_layer_str IB before rdma-core 17)
        # a node GUID is one adapter's (IEEE EUI-64, burnt in): two CAs listing one are one listed twice
        "ibstat": View(ibstat.parse_ibstat, Listing("CA", ("cas",), ident=("name",), unique=("node_guid",),
                                                   required=("cas.*.ports.*.link_layer",),
                                                   formats=(("cas.*.ports.*", "link_layer", _LINK_LAYER),))),
        "ibstatus": View(ibstat.parse_ibstatus, Listing("CA", ("cas",), ident=("name",),
                                                       required=("cas.*.ports.*.link_layer",),
                                                       formats=(("cas.*.ports.*", "link_layer", _LINK_LAYER),))),
        "ib-write-bw": View(perftest.parse_ib_write_bw, Listing("row", ("rows",))),
        # ib_read_lat / ib_send_lat print the same report
        "ib-write-lat": View(perftest.parse_ib_lat, Listing("row", ("rows",))),
        "nccl-ras": View(nccl_ras.parse),  # ncclras status, text or JSON (sncheck watch reads it too)
        "perfquery": View(counters.parse_perfquery, Listing("port", ("ports",), ident=("lid", "port"))),
        # (a port lists only its counters over the thresholds: the last port's are its own)
        "ibqueryerrors": View(counters.parse_ibqueryerrors, Listing("port", ("ports",), optional=("counters",))),
        # the fabric's topology file: whole when every link is listed from both its ends
        "ibnetdiscover": View(ibnetdiscover.parse_ibnetdiscover),
        # no end line, no count: the judge's expectation counts its ports; a Down port has no far end and
        # no HOQ (-a), so those are not compared with the other ports' (the parser checks each line is whole)
        "iblinkinfo": View(ibnetdiscover.parse_iblinkinfo, Listing("port", ("ports",), ident=("guid", "port"),
                                                                   optional=("remote", "remote_not_available",
                                                                             "hoq_life", "vl_stall_count"))),
        # /sys/class/infiniband/*/ports/*/counters/* (grep -H)
        "ib-counters": View(counters.parse_sysfs_counters, Listing("port", ("ports",), ident=("device", "port"))),
        # dmesg / journalctl -k: Xid, SXid, PCIe AER: a stream, its timestamps part of its grammar
        "kernel-log": View(kernel_log.parse_kernel_log, stamped=True),
        "nccl-debug": View(debug_log.parse_nccl_debug),  # NCCL_DEBUG=WARN/INFO lines in any log: a stream
        "torch-nccl": View(watchdog.parse_torch_nccl),  # ProcessGroupNCCL watchdog / Flight Recorder: a stream
        "nccl-inspector": View(nccl_inspector.parse_inspector),  # Inspector JSON records (sncheck watch reads it)
        "mlxlink": View(mlxlink.parse_mlxlink),
        "ibportstate": View(ports.parse_ibportstate),  # its blocks differ (PortInfo, MLNX ext, peer): no listing
        # devinfo.c: phys_port_cnt a count, link_layer_str's names, ibv_port_state_str's and port_phy_state_str's
        # (their '(N)' code apart): a value outside them is its line cut short (cuts15)
        "ibv-devinfo": View(ports.parse_ibv_devinfo, Listing("device", ("devices",), ident=("name",),
                                                             unique=("node_guid",), stated=("ports",), formats=_DEVINFO)),
        "ethtool-mlx5": View(ethtool.parse_ethtool_stats),  # ethtool -S of a ConnectX port
    }


@cache
def parsers() -> dict[str, Parser]:
    """TOOL name -> parser, for every view."""
    return {name: view.parse for name, view in views().items()}


@cache
def listings() -> dict[str, Listing]:
    """TOOL name -> what one record of its output is, for every view that lists records."""
    return {name: view.listing for name, view in views().items() if view.listing is not None}


@cache
def _view_names() -> dict[Parser, str]:
    by: dict[Parser, list[str]] = {}
    for name, view in views().items():
        by.setdefault(view.parse, []).append(name)
    return {fn: names[0] for fn, names in by.items() if len(names) == 1}


def view_of(parser: Parser) -> str | None:
    """The one view whose parser is ``parser`` (a fact command's: what its output is), or None."""
    return _view_names().get(parser)


def check_listing(tool: str, data: Any, expect: int | None = None) -> list[str]:
    """What the ``tool`` view's parsed output shows cut short, or other than ``expect`` records
    (:func:`sncheck.vendors.listing.check` with every view's listing)."""
    return listing.check(tool, data, expect, listings=listings())


# Provenance lines that head every captured file under fixtures/real/:
# "# source: ...", "# source: note: ...", "# note: ...", "# lines: 1-20 of ...", "# context: ...".
# Tool output never starts with these keys ("# nThread 1 ..." and "#  Rank 0 ..." do not match).
_SOURCE_HEADER = re.compile(r"^#\s*(?:source|note|lines|context)\s*:")


def get_parser(name: str) -> Parser:
    """The parser registered as ``name``; a ConfigError lists the valid names otherwise."""
    known = parsers()
    if name not in known:
        valid = ", ".join(sorted(known))
        raise ConfigError(f"unknown tool {name!r} for parse; choose one of: {valid}")
    return known[name]


def strip_source_header(text: str) -> str:
    """Remove the leading ``# source:``-style provenance lines of a captured file.

    Only lines at the very top are removed, so a log that merely mentions "# note:"
    later on keeps it. Text without such a header comes back unchanged.
    """
    lines = text.splitlines(keepends=True)
    start = 0
    while start < len(lines) and _SOURCE_HEADER.match(lines[start]):
        start += 1
    return "".join(lines[start:])


def parse_text(tool: str, text: str, expect: int | None = None, platform: str | None = None,
               **hints: Any) -> dict[str, Any]:
    """Parse ``text`` (a captured file or a command's stdout) as ``tool``: the provenance
    header and the delivery (escape codes, fences, quoting, launcher labels, timestamps:
    :func:`sncheck.vendors.delivery.unwrap`) removed first. ``hints`` go to the views that take them.
    ``expect``: how many records (cards, CAs, rows: :mod:`listing`) the output must hold;
    whatever the expectation, a listing whose last record is partial is cut short. ``platform``: the
    output judged as a run judges a host of that platform (:func:`judgement`)."""
    parser = get_parser(tool)
    output = strip_source_header(text)
    first = text.count("\n", 0, len(text) - len(output)) + 1  # the output's first line in the file
    body, origins = unwrap_lines(output, stamped=views()[tool].stamped)
    def read(t: str) -> Any:
        return crash.read(parser, t, **hints)

    try:
        data = read(body)
    except ParseError as e:
        if at := digits.misread(read, body, digits.refused(e)):
            raise ParseError(digits.refusal(at[1]), tool=e.tool, line=after_end.line_in_file(at[0], first, origins)) from e
        # nothing recognised: the file may be any file (/etc/shadow), its lines named, never shown (withheld.py)
        said = withheld(e.message, body, lambda k: after_end.line_in_file(k, first, origins))
        raise e if said == e.message else ParseError(said, tool=e.tool, line=e.line) from e
    if isinstance(data, dict):
        closing = view.listing.closing if (view := views()[tool]).listing else ()
        found = [cut] if (cut := listing.cut_mid_line(body, closing)) else []
        if at := digits.misread(read, body, data):  # a number in another script's digits (digits.py)
            found.append(f"line {after_end.line_in_file(at[0], first, origins)}: {digits.refusal(at[1])}")
        found += listing.left_out(tool, body, first, origins)
        found += check_listing(tool, data, expect)
        if data.get("errors"):  # a line the view names in what it read, named as the file numbers it
            data["errors"] = [after_end.in_file(e, first, origins) if isinstance(e, str) else e for e in data["errors"]]
        if found:
            errors = data.setdefault("errors", [])
            errors.extend(e for e in found if e not in errors)
        if judged := judgement(tool, data, expect, platform):
            faults = data.setdefault("faults", [])
            # a check that restates a fault the parser named ('NVLink 4/6 links up ...: GPU 3
            # link 3 inactive') adds no second line for it
            faults.extend(f for f in judged if not any(str(have) in f for have in faults))
    return data


@cache
def _commands_by_view(platform: str | None = None) -> dict[str, list[Any]]:
    """View -> the fact commands that judge its output: of those a run gives a host its
    inventory names no platform for (``Vendor.default_checks``), or with ``platform`` a host of
    that platform (``Platform.checks``, its vendor's views alone), each whose facts the view's
    output carries, read there by the command itself or by a platform's command of the same
    view (``nvidia-smi -q -x``, a GB200 tray's query_fabric, carries every fact of ``-q``'s
    query: the same checks judge both views). A platform's own checks judge against its
    design (NVLink on every pair, a fabric clique), which the output alone does not state."""
    out: dict[str, list[Any]] = {}
    plat = registry.platform(platform) if platform else None
    for vendor in registry.vendors().values():
        if plat is not None and vendor.name != plat.vendor:
            continue  # a platform's own checks judge its vendor's views alone
        carried: dict[str, set[str]] = {}
        for cmd in vendor.commands.values():
            if (view := view_of(cmd.parse)) is not None:
                carried.setdefault(view, set()).update(cmd.facts)
        for cmd in (vendor.commands[name] for name in (plat.checks if plat else vendor.default_checks)):
            for view, facts in carried.items():
                # (a command declaring no facts carries none of this view's: it judges its own view only)
                if view == view_of(cmd.parse) or (cmd.facts and set(cmd.facts) <= facts):
                    out.setdefault(view, []).append(cmd)
    return out


def judged_views(platform: str | None = None) -> set[str]:
    """The views whose output the checks of ``platform`` (else the default checks) judge."""
    return set(_commands_by_view(platform))


def judgement(tool: str, data: dict[str, Any], expect: int | None = None, platform: str | None = None) -> list[str]:
    """What a run's checks of the same output find wrong (one parser, one judgement): every
    failing row of the fact commands whose output ``tool`` reads, judged with the cards
    ``expect`` says (else the cards the output lists) and no platform, as a run judges a host
    its inventory names no platform for. ``sncheck parse`` exits 1 on them as a run's host
    facts fail on them; a test DCGM skipped (``not_measured``) stays a run's own finding (the
    output shows no fault: parse exits 0 on it, README, dcgmi-diag). ``platform``: judge as a run
    judges a host of that platform (its checks, against its design: XGMI on every pair of an MI300X)."""

    cmds = _commands_by_view(platform).get(tool)
    if not cmds or data.get("errors"):
        return []  # an output not whole is judged by its errors alone, as a run does (facts.unjudged)
    cards = expect if expect is not None else listing.count(listings().get(tool), data) or 0
    out: list[str] = []
    plat = registry.platform(platform) if platform else None
    for cmd in cmds:
        for row in cmd.check("", copy.deepcopy(data), Expect(cards=cards, platform=plat)):
            if row.get("ok") or row.get("status") in ("skipped", "not_measured"):
                continue
            # A failed row counting nothing wrong (value == expected: 'ECC: 0 blocks read') says
            # only that this output does not carry what the command's check reads (an amd-smi
            # static given to the view an ECC and a metric check share): not judged here.
            if row.get("value") == row.get("expected"):
                continue
            out.append(str(row.get("message") or row.get("fact")).removeprefix(": ").strip())
    return list(dict.fromkeys(out))


# Keys whose value is a count or a rate: below zero, or not a number, it cannot be true.
_NON_NEGATIVE = re.compile(r"(?:^|_)(?:count|counts|errors?|wrong|replays?|retries|bw|busbw|algbw|"
                           r"bandwidth|GBps|Gbps|MBps|Mpps|iterations|bytes|size|sum|ranks|"
                           r"correctable|uncorrectable)(?:_|$)|_(?:GBps|Gbps|MBps|GB_s|Mpps)$", re.IGNORECASE)


def impossible_values(data: Any, path: str = "") -> list[str]:
    """Values no tool can print: NaN or infinite numbers anywhere, a negative count or rate."""
    out: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, float) and not math.isfinite(value):
                out.append(f"{where}: {value} is not a number")
            elif (isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0
                  and _NON_NEGATIVE.search(str(key))):
                out.append(f"{where}: {value} cannot be negative")
            else:
                out.extend(impossible_values(value, where))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, float) and not math.isfinite(value):
                out.append(f"{path}[{i}]: {value} is not a number")
            else:
                out.extend(impossible_values(value, f"{path}[{i}]"))
    return out


def known_collective(value: str) -> str | None:
    """The collective ``value`` names (a ``*_perf`` binary's, as the nccl-tests reader knows
    them: all_reduce_perf or all_reduce, or one whose bus bandwidth factor sncheck has), or
    None: the CLI's check of ``parse --collective`` (it reaches the reader through here)."""
    name = nccl_tests.normalize_collective(value)
    return name if name in known_collectives() else None


def known_collectives() -> tuple[str, ...]:
    """Every collective :func:`known_collective` takes: the nccl-tests binaries' and those whose
    bus bandwidth factor sncheck has (the CLI's error lists them)."""
    return tuple(dict.fromkeys((*BUSBW_FACTOR, *nccl_tests.COLLECTIVES)))


def failures(data: object) -> list[str]:
    """Every failure a parsed log shows (``sncheck parse`` exits 1 on any): its ``errors`` and
    ``faults`` (what the output shows wrong: error counters above zero, Xid reports), a
    dcgmi ``Fail``, a non-zero ``#wrong`` in any nccl-tests row (whatever its footer says), a
    value no tool prints (NaN, a negative count or bandwidth)."""
    if not isinstance(data, dict):
        return []
    out = [str(e) for e in data.get("errors") or []] + impossible_values(data)
    out += [str(f) for f in data.get("faults") or []]
    if data.get("result") == "Fail":
        out.append("dcgmi diag result: Fail")
    wrong = 0
    for row in data.get("rows") or []:
        if isinstance(row, dict):
            for half in ("out_of_place", "in_place"):
                w = (row.get(half) or {}).get("wrong") if isinstance(row.get(half), dict) else None
                if isinstance(w, int) and w > 0:
                    wrong += w
    if wrong:
        out.append(f"{wrong} wrong results (#wrong) in the table")
    return list(dict.fromkeys(out))


def print_view_table() -> None:
    """The README's table of views and the tool versions their grammars cover."""

    print(table(views()))


if __name__ == "__main__":  # a call, so importing this module builds no view (test_architecture)
    print_view_table()
