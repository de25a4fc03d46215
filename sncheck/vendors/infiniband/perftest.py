"""Parse perftest output (``ib_write_bw`` and ``ib_write_lat``; the read/send variants alike) and judge it.

``parse_ib_write_bw`` (``ib-write-bw``)::

    {"tool": "ib-write-bw", "test": "RDMA_Write BW Test", "device": "ib0", "link_type": "IB",
     "transport": "IB", "mtu": 4096, "qps": 1, "unit": "Gb/s", "printed_unit": "Gb/sec", "gid_index": 3,
     "rows": [{"bytes": 8388608, "iterations": 20000, "bw_peak_Gbps": 192.45,
               "bw_avg_Gbps": 192.45, "msg_rate_Mpps": 0.003007}],
     "errors": []}

Bandwidth is always in Gb/s (perftest prints MB/sec, 2^20 bytes, unless --report_gbits;
MB/sec becomes Gb/s as x 8 x 2^20 / 1e9, unrounded, and a row then keeps the figures as
printed too: ``printed_peak``, ``printed_avg``, in ``printed_unit``). The server and client of a loopback run often
land in one log, interleaved or one after the other: a repeated row (same bytes,
iterations and numbers) is kept once. ``WARNING: BW peak won't be measured`` gives
peak 0.00 in the rows; it is kept as printed and the check reads the average. A paste that lost
the ``#`` before ``iterations`` (ucx-issue8852) has the same header; a row the paste ends inside
(no newline after it) is not read: its figures may be cut (``1.6035`` of a ``%.6f`` MsgRate).
A reporter's markdown bold around a figure (``**5544.28**``, perftest-issue65) is not perftest's:
the row is read without it. ``--run_infinitely`` (rows of one size and no closing line) is one
header's rows: two pasted tables of one size each are two runs, each needing its closing line.
perftest before its MsgRate column (OFED 1.5's ``send_bw.c``: ``#bytes #iterations BW peak[MB/sec]
BW average[MB/sec]``, four figures a row, ``Mtu : 2048``; jebtang/RDMA-Experiment's ib_send_bw -c UD,
harvest 22) is read by that header: ``msg_rate_Mpps`` null.

``parse_ib_lat`` (``ib-write-lat``)::

    {"tool": "ib-write-lat", "test": "RDMA_Read Latency Test", "device": "mlx5_5",
     "link_type": "Ethernet", "transport": "IB", "mtu": 1024, "unit": "us",
     "rows": [{"bytes": 2, "iterations": 1000, "t_min_us": 6.66, "t_max_us": 20.37,
               "t_typical_us": 6.74, "t_avg_us": 6.82, "t_stdev_us": 0.78,
               "p99_us": 7.15, "p999_us": 20.37}],
     "warnings": ["Conflicting CPU frequency values detected: ..."], "errors": []}

The latency report is the one perftest documents and prints for ib_write_lat,
ib_read_lat and ib_send_lat (perftest >= 4.x: ``#bytes #iterations t_min[usec]
t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9%
percentile[usec]``; older builds print only the first three times, and those columns
are null). No real ib_write_lat capture was found: the parser is tested on a real
ib_read_lat capture (fixtures/real/perftest/04), which prints the same report.
``libibverbs: Warning`` and ``Conflicting CPU frequency`` lines are warnings, not errors.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.facts import fact_row
from sncheck.vendors.grammar import Grammar

_PT = "linux-rdma/perftest @ 00b55b6 (2026-07)"
_BANNER = ("the banner: ' <Test name> Test' (RDMA_Write BW Test...), '----' lines, ' Name : value' fields two "
           "a line (Dual-port, Device, Number of qps, Transport type, Connection type, Using SRQ, PCIe relax "
           "order, TX depth, CQ Moderation, Mtu, Link type, GID index, Max inline data, rdma_cm QPs, Data ex. "
           "method), local and remote address lines")
# perftest's failure prints (stderr, pasted with stdout): before the banner, a setup that failed
# alone (write_lat.c / write_bw.c main: ' Unable to find the Infiniband/RoCE device', " Couldn't get
# context for the device", "Couldn't connect to HOST:PORT" then ' Unable to init the socket
# connection', 'Failed to exchange data between server and clients'); after the column header,
# the test's ("Couldn't post send: scnt=N", 'poll CQ failed N', then 'Test exited with Error' or
# ' Failed to complete run_iter_bw function successfully')
_FAILED = ("perftest's failure lines alone, before any banner (' Unable to find the Infiniband/RoCE device', "
           "\"Couldn't connect to HOST:PORT\" and ' Unable to init the socket connection', ...): no row, errors "
           "naming them, never a parse error; after the header (\"Couldn't post send: scnt=N\", 'Test exited "
           "with Error'): the rows before it, errors")
GRAMMAR = {
    "ib-write-bw": Grammar(
        tool="ib_write_bw (ib_read_bw, ib_send_bw, ib_atomic_bw print the same report)",
        versions="perftest 4.x to 25.x (OFED and rdma-core builds)",
        sources=(f"{_PT} src/perftest_parameters.h: RESULT_LINE, RESULT_FMT / RESULT_FMT_G (MiB/sec, Gb/sec; "
                 "older builds 'MB/sec'), RESULT_FMT_PER_PORT (dual port: BW and MsgRate per port), RESULT_FMT_QOS "
                 "(#sl), RESULT_EXT_CPU_UTIL, REPORT_FMT ' %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t"
                 "     %-7.6lf'",
                 f"{_PT} src/write_bw.c main: the header, one row per size (print_report_bw), RESULT_LINE after "
                 "the table; --run_infinitely prints a row each period and never closes",
                 "perftest before its MsgRate column (OFED 1.5 send_bw.c: ' #bytes #iterations    BW peak[MB/sec]    "
                 "BW average[MB/sec]', four figures a row, 'Mtu : 2048', 'local address:  LID 0x02, QPN ..., PSN ...'; "
                 "real capture jebtang/RDMA-Experiment INFINIBAND/results/mellanox_infini_test, harvest 22)"),
        lines=_BANNER + "; the column header; one row per message size: #bytes, #iterations, BW peak, BW average "
                        "(MiB/s or Gb/s), MsgRate (Mpps; none before perftest printed it) [+ per port BW and "
                        "MsgRate] [+ CPU_Util %]",
        end="the RESULT_LINE after the last row (run_infinitely: none, rows of one size until killed)",
        failures=("an error line (Couldn't connect, Unable to..., failed); no table; a table without its closing line; "
                  + _FAILED),
        values="test, device, link_type, transport, mtu, qps, gid_index, unit (Gb/s: MiB/s converted unrounded), "
               "printed_unit, rows[{bytes, iterations, bw_peak_Gbps, bw_avg_Gbps, msg_rate_Mpps, printed_peak, "
               "printed_avg (MiB/s as printed), sl, bw_port1_Gbps, msg_rate_port1_Mpps, cpu_util_pct}], errors",
    ),
    "ib-write-lat": Grammar(
        tool="ib_write_lat (ib_read_lat, ib_send_lat print the same report)",
        versions="perftest 4.x to 25.x",
        sources=(f"{_PT} src/perftest_parameters.h: RESULT_FMT_LAT (t_min, t_max, t_typical, t_avg, t_stdev, 99%, "
                 "99.9% percentile, usec), RESULT_FMT_LAT_DUR (-D: t_avg, tps average), REPORT_FMT_LAT",
                 f"{_PT} src/write_lat.c: the header, the rows, RESULT_LINE after them; its failure prints (stderr)",
                 f"{_PT} src/perftest_resources.c run_iter_lat_write: 'Couldn't post send: scnt=N', 'poll CQ "
                 "failed N'; src/perftest_communication.c: 'Couldn't connect to HOST:PORT'"),
        lines=_BANNER + "; the column header; one row per size: #bytes, #iterations and the times (usec)",
        end="the RESULT_LINE after the last row",
        failures="an error line; no table; a table without its closing line; " + _FAILED,
        values="test, device, link_type, transport, mtu, unit (us), rows[{bytes, iterations, t_min_us, t_max_us, "
               "t_typical_us, t_avg_us, t_stdev_us, p99_us, p999_us}], warnings, errors",
    ),
}

_HEADER = re.compile(r"#bytes\s+#?iterations\s+BW peak\[(MB/sec|Gb/sec|MiB/sec)\]\s+BW average\[(?:MB/sec|Gb/sec|MiB/sec)\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)((?:\s+[0-9.]+)*)\s*$")
_QOS_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$")
# perftest before its MsgRate column (OFED 1.5's send_bw.c, ~2010: ' #bytes #iterations    BW peak[MB/sec]    BW
# average[MB/sec]', rows '%7d        %d            %7.2f               %7.2f'): four figures a row
_OLD_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s*$")
_RULE = re.compile(r"^\s*-{20,}\s*$")  # RESULT_LINE / RESULT_LINE_PER_PORT: the table's closing line
_VALUE = re.compile(r"[ \t]*(\S+(?:\[[A-Z]\])?)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .*_")
_TEST = re.compile(r"^\s*(\S.*(?:BW|Lat|Latency) Test)\s*$")
_MB_TO_GB = 8 * 2**20 / 1e9
_WARNING = re.compile(r"^(?:libibverbs: Warning|Conflicting CPU frequency|\s*WARNING)", re.IGNORECASE)


def _untab(raw: str) -> str:
    """Tabs as perftest's columns show them; a line longer than any perftest prints (4 KB) is
    not expanded: 1 MB of tabs would become 8 MB to scan."""
    return raw.expandtabs(8) if len(raw) <= 4096 else raw.replace("\t", " ")


def _fields(line: str) -> list[tuple[str, str]]:
    """The ``Name : value`` pairs of a header line (``Number of qps   : 1\t\tTransport type : IB``):
    a name of letters, spaces, ``.``, ``*`` and ``_`` (from its first letter) before each colon.

    By hand, walking back from each colon: the regex ``([A-Za-z][A-Za-z .*_]*?)\\s*:`` it
    replaces was tried from every letter of a long run with no colon, each try scanning to
    the run's end (10 KB of one letter: 2 s, 100 KB: minutes). Each character is looked at
    a bounded number of times here: a walk back stops at the previous colon or value."""
    out = []
    end = 0
    for colon in [i for i, ch in enumerate(line) if ch == ":"]:
        if colon < end:
            continue
        j = colon
        while j > end and line[j - 1] in " \t":
            j -= 1
        i = j
        while i > end and line[i - 1] in _NAME_CHARS:
            i -= 1
        while i < j and not line[i].isalpha():
            i += 1
        if i == j:  # no name before this colon: its value is not read (that would rescan the line)
            continue
        value = _VALUE.match(line, colon + 1)
        if value is None:
            continue
        out.append((line[i:j].strip(), value.group(1)))
        end = value.end()
    return out


def _forever(rows: list[dict[str, Any]]) -> bool:
    """--run_infinitely: a row of the one size every period until the test is killed, no
    closing line (a size sweep prints each size once, then the line)."""
    return len(rows) > 1 and len({r["bytes"] for r in rows}) == 1


def parse_ib_write_bw(text: str) -> dict[str, Any]:
    fields: dict[str, str] = {}
    test = None
    unit = None
    rows: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    errors: list[str] = []
    extra: list[str] = []  # the header's columns after MsgRate (per port, CPU_Util)
    qos = closed = False
    row_rx = _ROW  # the header's row layout: _QOS_ROW under '#sl', _OLD_ROW with no MsgRate column
    table: list[dict[str, Any]] = []  # the rows under the last header (run_infinitely is one table's)
    lines = text.splitlines()
    cut_last = bool(text) and not text.endswith(("\n", "\r"))  # the paste ends inside its last line
    for n, raw in enumerate(lines):
        line = _untab(raw)
        if "**" in line and unit and row_rx.match(line.replace("**", "")):
            line = line.replace("**", "")  # a reporter's bold around a figure (perftest prints no '*' in a row)
        if cut_last and n == len(lines) - 1 and unit and row_rx.match(line):
            continue  # a row cut inside (its MsgRate '1.6035' of '%.6f'): not a measurement (listing says cut)
        if (m := _TEST.match(line)) and test is None:
            test = m.group(1).strip()
            continue
        if m := _HEADER.search(line):
            unit, closed, table = m.group(1), False, []
            qos = "#sl" in line
            row_rx = _QOS_ROW if qos else _ROW if "MsgRate" in line else _OLD_ROW
            extra = re.findall(r"(BW Port\d|MsgRate Port\d|CPU_Util)", line.split("MsgRate[Mpps]", 1)[-1])
            continue
        if unit and _RULE.match(line) and rows:
            closed = True
            continue
        row_match = row_rx.match(line) if unit else None
        if row_match:
            g = list(row_match.groups())
            sl = int(g.pop(1)) if qos else None
            key = tuple(g)
            if key in seen:
                continue
            seen.add(key)
            # --report_gbits: the printed figures as they are (0.042350 stays 0.04235); MB/sec
            # converted without rounding, the printed figures kept beside as printed_peak/_avg
            scale = 1.0 if unit == "Gb/sec" else _MB_TO_GB
            row = {"bytes": int(g[0]), "iterations": int(g[1]), "bw_peak_Gbps": float(g[2]) * scale,
                   "bw_avg_Gbps": float(g[3]) * scale, "msg_rate_Mpps": float(g[4]) if len(g) > 4 else None}
            if unit != "Gb/sec":
                row.update(printed_peak=float(g[2]), printed_avg=float(g[3]))
            if sl is not None:
                row["sl"] = sl
            for name, cell in zip(extra, (g[5] if not qos and len(g) > 5 else "").split()):
                if name.startswith("BW Port"):
                    row[f"bw_port{name[-1]}_Gbps"] = float(cell) * scale
                elif name.startswith("MsgRate Port"):
                    row[f"msg_rate_port{name[-1]}_Mpps"] = float(cell)
                else:
                    row["cpu_util_pct"] = float(cell)
            rows.append(row)
            table.append(row)
            closed = False
            continue
        if _WARNING.match(line):
            continue
        if re.search(r"(?i)\b(error|failed|couldn't|unable to|no such device)\b", line):
            errors.append(line.strip())
            continue
        for name, value in _fields(line):
            fields.setdefault(name, value)
    if test is None and unit is None and not errors:
        raise ParseError("no perftest header ('... BW Test' or '#bytes #iterations')", tool="ib-write-bw")
    if unit is None:
        errors.append("no result table (the test did not finish, or the peer never connected)")
    elif not rows and not errors:  # the header printed, then nothing: never a whole run
        errors.append("the result table has its header and no row: cut short")
    elif rows and not closed and not errors and not _forever(table):
        errors.append("the result table has no closing line ('-----'): cut short")
    mtu = re.match(r"(\d+)", fields.get("Mtu", ""))
    qps = fields.get("Number of qps")
    return {"tool": "ib-write-bw", "test": test, "device": fields.get("Device"),
            "link_type": fields.get("Link type"), "transport": fields.get("Transport type"),
            "mtu": int(mtu.group(1)) if mtu else None, "qps": int(qps) if qps and qps.isdecimal() else None,
            "unit": "Gb/s", "printed_unit": unit, "gid_index": _int_or_none(fields.get("GID index")),
            "rows": rows, "errors": errors}


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdecimal() else None


_LAT_HEADER = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]")
_LAT_COLUMNS = ("t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us", "p999_us")


def parse_ib_lat(text: str) -> dict[str, Any]:
    fields: dict[str, str] = {}
    test = None
    header = closed = False
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    errors: list[str] = []
    for raw in text.splitlines():
        line = _untab(raw)
        if (m := _TEST.match(line)) and test is None:
            test = m.group(1).strip()
            continue
        if _LAT_HEADER.search(line):
            header, closed = True, False
            continue
        if header and _RULE.match(line) and rows:
            closed = True
            continue
        if _WARNING.match(line):
            warnings.append(line.strip())
            continue
        cells = line.split()
        if header and len(cells) >= 5 and all(re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", c) for c in cells):
            values = [float(c) for c in cells[2:2 + len(_LAT_COLUMNS)]]
            row: dict[str, Any] = {"bytes": int(cells[0]), "iterations": int(cells[1])}
            row.update({k: (values[i] if i < len(values) else None) for i, k in enumerate(_LAT_COLUMNS)})
            rows.append(row)
            closed = False
            continue
        if re.search(r"(?i)\b(error|failed|couldn't|unable to|no such device)\b", line):
            errors.append(line.strip())
            continue
        for name, value in _fields(line):
            fields.setdefault(name, value)
    if test is None and not header and not errors:
        raise ParseError("no perftest latency header ('... Latency Test' or '#bytes #iterations t_min[usec]')",
                         tool="ib-write-lat")
    if not rows:
        errors.append("no result table (the test did not finish, or the peer never connected)")
    elif not closed and not errors:
        errors.append("the result table has no closing line ('-----'): cut short")
    mtu = re.match(r"(\d+)", fields.get("Mtu", ""))
    return {"tool": "ib-write-lat", "test": test, "device": fields.get("Device"),
            "link_type": fields.get("Link type"), "transport": fields.get("Transport type"),
            "mtu": int(mtu.group(1)) if mtu else None, "unit": "us", "rows": rows,
            "warnings": warnings, "errors": errors}


def check_ib_write_lat(host: str, parsed: dict[str, Any], *, design_us: float, max_ratio: float = 1.0,
                       peer: str | None = None) -> list[dict]:
    """The smallest message's typical latency against the scale-out design latency (``ib_lat``).

    The design latency is what a collective library sees end to end; an RDMA verb is
    faster, so by default a pair passes at or under the design value itself."""
    rows = [r for r in parsed.get("rows") or [] if r.get("t_typical_us") is not None]
    pair = f" to {peer}" if peer else ""
    if not rows:
        return [_no_result(host, "ib_lat", design_us, "ib_write_lat", pair, parsed)]
    small = min(rows, key=lambda r: r["bytes"])
    lat = small["t_typical_us"]
    bound = design_us * max_ratio
    ok = lat <= bound and not parsed.get("errors")
    tail = f", p99 {small['p99_us']:g} us" if small.get("p99_us") is not None else ""
    msg = (f"ib_write_lat{pair} on {parsed.get('device') or '?'}: typical {lat:g} us at {small['bytes']} B{tail}, "
           f"design {design_us:g} us (pass at <= {bound:g} us)")
    return [fact_row(host, "ib_lat", lat, design_us, ok, _with_errors(msg, parsed), "ib_write_lat")]


def check_ib_write_bw(host: str, parsed: dict[str, Any], *, nic_Gbps: float, min_fraction: float = 0.9,
                      peer: str | None = None) -> list[dict]:
    """The largest message's average bandwidth against the NIC's rate (``ib_bw``)."""
    rows = parsed.get("rows") or []
    pair = f" to {peer}" if peer else ""
    if not rows:
        return [_no_result(host, "ib_bw", nic_Gbps, "ib_write_bw", pair, parsed)]
    big = max(rows, key=lambda r: r["bytes"])
    bw = big["bw_avg_Gbps"]
    want = nic_Gbps * min_fraction
    ok = bw >= want and not parsed.get("errors")
    msg = (f"ib_write_bw{pair} on {parsed.get('device') or '?'}: {bw:.1f} Gb/s at {big['bytes']} B, "
           f"NIC rate {nic_Gbps:g} Gb/s (pass at >= {min_fraction:.0%}: {want:.1f} Gb/s)")
    return [fact_row(host, "ib_bw", round(bw, 2), nic_Gbps, ok, _with_errors(msg, parsed), "ib_write_bw")]


def _no_result(host: str, fact: str, expected: float, tool: str, pair: str, parsed: dict[str, Any]) -> dict:
    """A failed fact for a run that printed no result rows, saying why."""
    why = "; ".join(parsed.get("errors") or []) or "no result rows"
    return fact_row(host, fact, None, expected, False, f"{tool}{pair}: {why}", tool)


def _with_errors(msg: str, parsed: dict[str, Any]) -> str:
    return f"{msg}; {'; '.join(parsed['errors'])}" if parsed.get("errors") else msg
