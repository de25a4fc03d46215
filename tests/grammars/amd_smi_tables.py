"""amd-smi's tables, from the grammars in sncheck/vendors/amd/amd_smi_grammar.py (ROCm/amdsmi
amdsmi_cli amdsmi_commands.py monitor / topology / xgmi, amdsmi_logger.py
_convert_json_to_tabular): each column right- or left-justified to its fixed width, 1 to 72
GPUs (a partitioned MI300X lists up to 64 logical GPUs)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import ALL, Variant, generator
from grammars.amd_smi import failed

# monitor's columns: (header, its width (rjust), the value in the row)
_MONITOR = {
    "-p": [("POWER", 7, lambda r, g: f"{r.randrange(90, 1400)} W")],
    "-t": [("GPU_TEMP", 10, lambda r, g: f"{r.randrange(30, 95)} °C"),
           ("MEM_TEMP", 10, lambda r, g: f"{r.randrange(30, 85)} °C")],
    "-u": [("GFX_UTIL", 10, lambda r, g: f"{r.randrange(101)} %"),
           ("GFX_CLOCK", 11, lambda r, g: f"{r.randrange(100, 2400)} MHz")],
    "-m": [("MEM_UTIL", 10, lambda r, g: f"{r.randrange(101)} %"),
           ("MEM_CLOCK", 11, lambda r, g: f"{r.randrange(900, 1900)} MHz")],
    "-v": [("VRAM_USED", 11, lambda r, g: f"{r.randrange(0, 196300)} MB"),
           ("VRAM_TOTAL", 12, lambda r, g: "196300 MB")],
    "-e": [("SINGLE_ECC", 12, lambda r, g: str(r.choice((0, 0, 3)))),
           ("DOUBLE_ECC", 12, lambda r, g: "0")],
    "-r": [("PCIE_REPLAY", 13, lambda r, g: str(r.choice((0, 0, 12))))],
}
# ROCm 7's monitor (amd-smi 26.x; fixtures/real/amd/12, no source stored): shorter names, PWR_CAP
_MONITOR_7 = [("POWER", 7, lambda r, g: f"{r.randrange(90, 1400)} W"), ("PWR_CAP", 9, lambda r, g: "1000 W"),
              ("GPU_T", 8, lambda r, g: f"{r.randrange(30, 95)} °C"), ("MEM_T", 8, lambda r, g: f"{r.randrange(30, 85)} °C"),
              ("GFX_CLK", 10, lambda r, g: f"{r.randrange(100, 2400)} MHz"), ("GFX%", 7, lambda r, g: f"{r.randrange(101)} %"),
              ("MEM%", 7, lambda r, g: f"{r.randrange(101)} %"), ("MEM_CLOCK", 11, lambda r, g: "1900 MHz")]


@generator("amd-smi-monitor")
def amd_smi_monitor(rng: random.Random) -> Iterator[Variant]:
    shapes = [(1, "-putm"), (8, "-p -t -v"), (8, "7.x"), (8, "-putm -e -r")]
    shapes += [(64, "-p -t -v"), (72, "-putm")] if ALL else [(32, "-p -t -v")]
    for n, flags in shapes:
        if flags == "7.x":
            cols = _MONITOR_7
        else:
            # amdsmi_parser.py: -p -t -u -m -v -e -r (combined or not); monitor's own order whatever the flags'
            asked = set(f"-{c}" for c in flags.replace("-", "").replace(" ", ""))
            cols = [c for key in ("-p", "-t", "-u", "-m", "-v", "-e", "-r") if key in asked for c in _MONITOR[key]]
        watch = flags != "7.x" and rng.random() < 0.2  # --watch: a TIMESTAMP column first
        header = ("TIMESTAMP".rjust(10) + "  " if watch else "") + "GPU" + "".join(name.rjust(w) for name, w, _ in cols)
        lines = [header]
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for g in range(n):
            cells = [(name, make(rng, g)) for name, _, make in cols]
            if rng.random() < 0.1 and g:
                cells[0] = (cells[0][0], "N/A")
            lines.append(("1733380000".rjust(10) + "  " if watch else "") + str(g).rjust(3)
                         + "".join(v.rjust(w) for (_, v), (_, w, _) in zip(cells, cols)))
            if g == n - 1:
                values += [(f"gpus[gpu={g}].{name}", v) for name, v in cells]
        cmd = [f"$ amd-smi monitor {flags}"] if flags != "7.x" and rng.random() < 0.5 else []
        yield Variant("amd-smi-monitor", f"{n} GPUs {flags}{' --watch' if watch else ''}", "\n".join(cmd + lines) + "\n",
                      tuple(values), count=n)
    # ROCm 7.0's monitor -V (the changelog's 7.0.0 example): violation columns, the last ones a list a cell,
    # one value an XCC ('[0 %, 0 %, ...]', its blanks inside the cell)
    for n in (1, 8):
        cols = [("XCP", 5), ("PVIOL", 7), ("TVIOL", 7), ("TVIOL_ACTIVE", 14), ("GFX_CLKVIOL", 13),
                ("GFXCLK_PVIOL", 58), ("LOW_UTILVIOL", 58)]
        lines = ["GPU" + "".join(name.rjust(w) for name, w in cols)]
        for g in range(n):
            row = ["0", f"{rng.randrange(3)} %", "0 %", "False", "N/A",
                   "[" + ", ".join(f"{rng.choice((0, 0, 3))} %" for _ in range(8)) + "]",
                   "[" + ", ".join(rng.choice(("100 %", "N/A")) for _ in range(8)) + "]"]
            lines.append(str(g).rjust(3) + "".join(v.rjust(w) for v, (_, w) in zip(row, cols)))
        values = [("len(gpus)", n), (f"gpus[gpu={n - 1}].LOW_UTILVIOL", row[-1]), (f"gpus[gpu={n - 1}].GFXCLK_PVIOL", row[-2])]
        yield Variant("amd-smi-monitor", f"{n} GPUs -V (7.0, list cells)", "\n".join(lines) + "\n", tuple(values), count=n)
    # the default output (no flag; rocm-systems subcommands/monitor.py): XCP, the short names, one memory column
    # 'VRAM_USAGE' ('GTT_USAGE' on an APU), its cell f'{used:5.1f}/{total:5.1f} GB'.rjust(16): a blank inside it under
    # 100 GB ('0.5/ 48.0 GB'); a CPX partition's other XCPs print N/A (the CLI doc's examples, harvest24)
    for n, apu in ((4, True), (8, False)):
        mem = "GTT_USAGE" if apu else "VRAM_USAGE"
        cols = [("XCP", 5), ("POWER", 7), ("GPU_T", 8), ("MEM_T", 8), ("GFX_CLK", 10), ("GFX%", 7), ("MEM%", 7),
                ("ENC%", 7), ("DEC%", 7), (mem, 16)]
        lines = ["GPU" + "".join(name.rjust(w) for name, w in cols)]
        for g in range(n):
            total = rng.choice((48.0, 192.0, 376.7))
            usage = f"{rng.randrange(0, 40) / 10:5.1f}/{total:5.1f} GB"
            row = [str(g % 4), f"{rng.randrange(30, 200)} W", "30 °C", "31 °C", f"{rng.randrange(40, 2100)} MHz",
                   "2 %", "0 %", "N/A", "0 %", usage]
            if g % 4 and not apu:
                row[1:9] = ["N/A"] * 8
            lines.append(str(g).rjust(3) + "".join(v.rjust(w) for v, (_, w) in zip(row, cols)))
        values = [("len(gpus)", n), (f"gpus[gpu={n - 1}].{mem}", usage.strip()), (f"gpus[gpu={n - 1}].POWER", row[1])]
        yield Variant("amd-smi-monitor", f"{n} GPUs default output ({mem})", "\n".join(lines) + "\n", tuple(values), count=n)


@generator("amd-smi-monitor")
def amd_smi_monitor_q(rng: random.Random) -> Iterator[Variant]:
    """monitor -q (ROCm 6.2+): the rows, then '\\nPROCESS INFO:', the secondary header and a row for
    every GPU: a process, or its 'No running processes detected' (amdsmi_logger's secondary table);
    PCIE_BW's 'N/A Mb/s' (helpers.unit_format puts the unit after N/A too)."""
    for n in (1, 4):
        cols = _MONITOR["-p"] + _MONITOR["-v"] + [("PCIE_BW", 12, lambda r, g: r.choice(("N/A Mb/s", f"{r.randrange(9, 900)} Mb/s")))]
        lines = ["$ amd-smi monitor -p -v --pcie -q", "GPU" + "".join(name.rjust(w) for name, w, _ in cols)]
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        rows = []
        for g in range(n):
            cells = [(name, make(rng, g)) for name, _, make in cols]
            lines.append(str(g).rjust(3) + "".join(v.rjust(w) for (_, v), (_, w, _) in zip(cells, cols)))
            values += [(f"gpus[gpu={g}].PCIE_BW", cells[-1][1])] if g == n - 1 else []
            pid = rng.randrange(1000, 4000000) if g == 0 or rng.random() < 0.5 else None
            rows.append(str(g).rjust(3) + ("No running processes detected".rjust(31) if pid is None else
                                           "rvs".rjust(22) + str(pid).rjust(9) + "0.0 B".rjust(10) * 2 + "1.1 GB".rjust(10)
                                           + "0.0 B".rjust(11) + "0 ns".rjust(8) * 2))
            values += [("processes[gpu=0].PID", pid)] if g == 0 else []
        lines += ["", "PROCESS INFO:", "GPU".rjust(3) + "NAME".rjust(22) + "PID".rjust(9) + "GTT_MEM".rjust(10)
                  + "CPU_MEM".rjust(10) + "VRAM_MEM".rjust(10) + "MEM_USAGE".rjust(11) + "GFX".rjust(8) + "ENC".rjust(8)]
        yield Variant("amd-smi-monitor", f"{n} GPUs -q with processes", "\n".join(lines + rows) + "\n",
                      tuple(values), count=n)


# ----------------------------------------------------------------------------- topology

def _bdf(g: int) -> str:
    return f"0000:{0x05 + 0x20 * (g % 8):02x}:{g // 8:02x}.0"


@generator("amd-smi-topology")
def amd_smi_topology(rng: random.Random) -> Iterator[Variant]:
    """topology(): a '<NAME> TABLE:' title, the header (''.rjust(12) then each BDF .rjust(13)), a
    row per GPU ('<bdf> ', then each cell .ljust(13)); print_output between the tables."""
    for n, flags in ((1, ""), (4, "-a -w"), (8, ""), (8, "-t -o")) + (((32, ""),) if ALL else ()):
        kind = rng.choice(("XGMI", "PCIE"))
        tables = {
            "ACCESS": lambda i, j: "ENABLED",
            "WEIGHT": lambda i, j: 0 if i == j else (15 if kind == "XGMI" else 40),
            "HOPS": lambda i, j: 0 if i == j else (1 if kind == "XGMI" else 2),
            "LINK TYPE": lambda i, j: "SELF" if i == j else kind,
            "NUMA BW": lambda i, j: "N/A" if i == j or kind == "PCIE" else "50000-100000",
        }
        order = {"-a": "ACCESS", "-w": "WEIGHT", "-o": "HOPS", "-t": "LINK TYPE", "-b": "NUMA BW"}
        wanted = [order[f] for f in flags.split()] if flags else list(tables)
        printed = [t for t in tables if t in wanted]  # topology() prints them in its own order
        cmd = rng.random() < 0.6
        lines = [f"$ amd-smi topology {flags}".rstrip()] if cmd else []
        first_end = last_end = 0
        for t in printed:
            lines += [f"{t} TABLE:", "".rjust(12) + "".join(_bdf(j).rjust(13) for j in range(n))]
            lines += [f"{_bdf(i)} " + "".join(str(tables[t](i, j)).ljust(13) for j in range(n)) for i in range(n)]
            first_end = first_end or len(lines)
            last_end = len(lines)
            lines.append("")
        last = _bdf(n - 1)
        values: list[tuple[str, object]] = [(f"len(tables.{printed[0]})", n)]
        values += [(f"tables.{t}.{last}.{_bdf(0)}", tables[t](n - 1, 0)) for t in printed]
        # without its command line nothing says which tables were asked for: whole once the first
        # table is square (the options may have asked for it alone); with it, the tables it asks for
        # (no option: ACCESS to NUMA BW in every version, these 6.2-era outputs print no Legend)
        end = last_end if cmd else first_end
        yield Variant("amd-smi-topology", f"{n} GPUs {kind} {flags or 'all'}{' with command' if cmd else ''}",
                      "\n".join(lines) + "\n", tuple(values), count=n, end=end)
    yield from _topology_links(rng)


def _topology_links(rng: random.Random) -> Iterator[Variant]:
    """ROCm 6.3's io-link tables (-c -n -d -z, argparse's '-cndz' too: CACHE COHERANCY, ATOMICS, DMA,
    BI-DIRECTIONAL) and the 'Legend:' topology() prints after the last table."""
    legend = ["", "", "Legend:", "  SELF = Current GPU", "  ENABLED / DISABLED = Link is enabled or disabled",
              "  N/A = Not supported", "  T/F = True / False", "  C/NC = Coherant / Non-Coherant io links",
              "  64,32 = 64 bit and 32 bit atomic support", "  <BW from>-<BW to>"]
    cells = {"CACHE COHERANCY": ("C", "NC"), "ATOMICS": ("64,32", "64", "32", "N/A"), "DMA": ("T", "F"),
             "BI-DIRECTIONAL": ("T", "F")}
    for n, flags in ((2, "-cndz"), (8, "-c -z")):
        wanted = {"-c": "CACHE COHERANCY", "-n": "ATOMICS", "-d": "DMA", "-z": "BI-DIRECTIONAL"}
        asked = [wanted[f"-{c}"] for c in flags.replace("-", "").replace(" ", "")]
        lines, values = [f"$ amd-smi topology {flags}"], []
        for t in (t for t in cells if t in asked):
            grid = [["SELF" if i == j else rng.choice(cells[t]) for j in range(n)] for i in range(n)]
            lines += [f"{t} TABLE:", "".rjust(12) + "".join(_bdf(j).rjust(13) for j in range(n))]
            lines += [f"{_bdf(i)} " + "".join(c.ljust(13) for c in grid[i]) for i in range(n)] + [""]
            cell = grid[n - 1][0]  # a bare number ('64': 64-bit atomics alone) reads as the view's integers do
            values.append((f"tables.{t}.{_bdf(n - 1)}.{_bdf(0)}", int(cell) if cell.isdigit() else cell))
        last = len(lines) - 1  # the command asks for these tables: whole once the last is square
        lines = lines[:-1] + legend
        yield Variant("amd-smi-topology", f"{n} GPUs io-link tables {flags} and the legend", "\n".join(lines) + "\n",
                      tuple(values), count=n, end=last)


# ----------------------------------------------------------------------------- xgmi

@generator("amd-smi-xgmi")
def amd_smi_xgmi(rng: random.Random) -> Iterator[Variant]:
    """xgmi(): 'LINK METRIC TABLE:', the header ('       ' + 'bdf'.ljust(13) + 'bit_rate'.ljust(9) +
    'max_bandwidth'.ljust(14) + 'link_type'.ljust(10) + the BDFs .rjust(13), stripped), then per GPU
    its row (GPU# .ljust(7), bdf .ljust(13), bit_rate .ljust(9), max_bandwidth .ljust(14),
    link_type .ljust(10)) and its Read and Write rows ('Read'.ljust(52), a cell .ljust(13) a peer)."""
    for n in (1, 4, 8) + ((16,) if ALL else ()):
        short = rng.random() < 0.4  # amd-smi 24.5's blog capture (fixtures/real/amd/07): short BDFs, 8-wide cells
        bdfs = [_bdf(g)[5:] if short else _bdf(g) for g in range(n)]
        width = 8 if short else 13
        rate = rng.choice((32, 25))
        link = "XGMI" if n > 1 else rng.choice(("XGMI", "N/A"))
        header = "       " + "bdf".ljust(13) + "bit_rate".ljust(9) + "max_bandwidth".ljust(14) + "link_type".ljust(10) \
            + ("".rjust(7) + "".join(b.rjust(13) for b in bdfs)).strip()
        lines = ["LINK METRIC TABLE:", header]
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for g in range(n):
            lines.append(f"GPU{g}".ljust(7) + bdfs[g].ljust(13) + f"{rate} Gb/s".ljust(9) + f"{rate * 16} Gb/s".ljust(14)
                         + link.ljust(10))
            reads = ["N/A" if p == g else f"{rng.randrange(0, 10000)} KB" for p in range(n)]
            writes = ["N/A" if p == g else f"{rng.randrange(0, 10000)} KB" for p in range(n)]
            lead = " " if short else ""  # the blog's version indents its Read/Write rows by one
            lines.append(lead + "Read".ljust(52 - len(lead)) + "".join(c.ljust(width) for c in reads))
            lines.append(lead + "Write".ljust(52 - len(lead)) + "".join(c.ljust(width) for c in writes))
            if g == n - 1:
                values += [(f"gpus[gpu={g}].bit_rate_Gbps", float(rate)), (f"gpus[gpu={g}].link_type", link),
                           (f"gpus[gpu={g}].max_bandwidth_Gbps", float(rate * 16))]
                if n > 1:
                    values += [(f"gpus[gpu={g}].read_KB.{bdfs[0]}", int(reads[0].split()[0])),
                               (f"gpus[gpu={g}].write_KB.{bdfs[0]}", int(writes[0].split()[0]))]
        cmd = ["$ amd-smi xgmi"] if rng.random() < 0.5 else []
        # without a LINK STATUS table (amd-smi 24.5 prints none) the links of more than one GPU are not read
        yield Variant("amd-smi-xgmi", f"{n} GPUs{' short' if short else ''}", "\n".join(cmd + lines) + "\n",
                      tuple(values), count=n, fails=n > 1, finding="link status not read" if n > 1 else None)


@generator("amd-smi-monitor")
def amd_smi_monitor_failed(rng: random.Random) -> Iterator[Variant]:
    yield from failed("amd-smi-monitor", rng, "monitor -p -t", "len(gpus)")


@generator("amd-smi-topology")
def amd_smi_topology_failed(rng: random.Random) -> Iterator[Variant]:
    yield from failed("amd-smi-topology", rng, "topology", "len(tables)")


@generator("amd-smi-xgmi")
def amd_smi_xgmi_failed(rng: random.Random) -> Iterator[Variant]:
    yield from failed("amd-smi-xgmi", rng, "xgmi", "len(gpus)")
    # newer amd-smi's LINK STATUS TABLE (U up, D down, X itself): a link down is the run's xgmi_status failure
    n = 4
    bdfs = [_bdf(g) for g in range(n)]
    down = rng.randrange(1, n)
    lines = ["LINK STATUS TABLE:", "       bdf".ljust(20) + " ".join(b.rjust(12) for b in bdfs)]
    for g in range(n):
        states = ["X" if p == g else "D" if {g, p} == {0, down} else "U" for p in range(n)]
        lines.append(f"GPU{g}".ljust(7) + bdfs[g].ljust(13) + " ".join(s.rjust(12) for s in states))
    yield Variant("amd-smi-xgmi", f"link status GPU0 <-> GPU{down} down", "\n".join(lines) + "\n",
                  (("len(gpus)", n), (f"gpus[gpu=0].status.{bdfs[down]}", "D"), (f"gpus[gpu={down}].status.{bdfs[0]}", "D"),
                   (f"gpus[gpu={n - 1}].status.{bdfs[0]}", "U" if down != n - 1 else "D")),
                  fails=True, count=n, finding=f"GPU0 -> {bdfs[down]} D")
    # a peer's cell N/A or '-' states no link state: not read, never up ('0/0 links up' passed)
    na = rng.choice(("N/A", "-"))
    lines = lines[:2] + [f"GPU{g}".ljust(7) + bdfs[g].ljust(13) + " ".join(("X" if p == g else na).rjust(12)
                                                                        for p in range(n)) for g in range(n)]
    yield Variant("amd-smi-xgmi", f"link status every peer {na}", "\n".join(lines) + "\n",
                  (("len(gpus)", n), (f"gpus[gpu=1].status.{bdfs[0]}", na)), fails=True, count=n,
                  finding="link status not read")


def _readable(kb: int) -> str:
    """amdsmi_helpers.convert_bytes_to_readable(kb * 1024): 1024 a step from B, one decimal."""
    value, units = float(kb * 1024), ("B", "KB", "MB", "GB", "TB", "PB")
    for unit in units:
        if abs(value) < 1024 or unit == units[-1]:
            return f"{value:3.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@generator("amd-smi-xgmi")
def amd_smi_xgmi_7x(rng: random.Random) -> Iterator[Variant]:
    """amd-smi 7.x's xgmi: the LINK METRIC table whose header names the peers 'GPU%d' and whose
    Read/Write cells are readable units (6.4+), '\\nGPU LINK PORT STATUS' (bdf, port_num, a state
    per port), '\\nXGMI LINK STATUS' ('GPU%d'.ljust(14) a peer; 'SELF' to itself, a peer's links'
    states joined by '/'), then the Legend. A GPU without XGMI (before amdsmi's fix) printed the
    sentinel maxima '65535 Gb/s4294967295 Gb/sN/A', the cells run together."""
    for n in (2, 4) + ((8,) if ALL else ()):
        bdfs = [_bdf(g) for g in range(n)]
        names = [f"GPU{g}" for g in range(n)]
        nolink = rng.random() < 0.3
        lines = ["LINK METRIC TABLE:", "       " + "bdf".ljust(14) + "bit_rate".ljust(10) + "max_bandwidth".ljust(15)
                 + "link_type".ljust(11) + "".join(m.ljust(13) for m in names).rstrip()]
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for g in range(n):
            rate = ("65535 Gb/s4294967295 Gb/sN/A" if nolink
                    else "32 Gb/s".ljust(10) + "512 Gb/s".ljust(15) + "XGMI")
            lines.append(f"GPU{g}".ljust(7) + bdfs[g].ljust(14) + rate)
            kbs = [rng.randrange(1, 1 << 40) for _ in range(n)]
            cells = ["N/A" if p == g or nolink else _readable(kbs[p]) for p in range(n)]
            lines.append(" Read".ljust(57) + "".join(c.ljust(13) for c in cells).rstrip())
            lines.append(" Write".ljust(57) + "".join(c.ljust(13) for c in cells).rstrip())
            if g == n - 1:
                values += [(f"len(gpus[gpu={g}].read_KB)", n), (f"len(gpus[gpu={g}].write_KB)", n),
                           (f"gpus[gpu={g}].bit_rate_Gbps", None if nolink else 32.0)]
        states = [["SELF" if p == g else "N/A" if nolink else rng.choice(("U", "U/U")) for p in range(n)]
                  for g in range(n)]
        lines += ["", "GPU LINK PORT STATUS:", "       " + "bdf".ljust(14) + "port_num".ljust(20)]
        lines += [f"GPU{g}".ljust(7) + bdfs[g].ljust(14) + "  ".join("X" if nolink else "U" for _ in range(8))
                  for g in range(n)]
        lines += ["", "XGMI LINK STATUS:", "       " + "bdf".ljust(14) + "".join(m.ljust(14) for m in names)]
        lines += [f"GPU{g}".ljust(7) + bdfs[g].ljust(14) + "".join(s.ljust(14) for s in states[g]).rstrip()
                  for g in range(n)]
        lines += ["", "", "Legend:", "  SELF = Current GPU", "  N/A = Not supported",
                  "  U / D / X = Link is Up / Down / Disabled", "  Read / Write = GPU Metric Accumulated Read / Write"]
        values += [(f"gpus[gpu={n - 1}].status.{bdfs[0]}", states[n - 1][0]), ("gpus[gpu=0].ports", "X" if nolink else "U")]
        yield Variant("amd-smi-xgmi", f"7.x {n} GPUs{' without XGMI' if nolink else ''}", "\n".join(lines) + "\n",
                      tuple(values), count=n, fails=nolink, finding="link status not read" if nolink else None)


@generator("amd-smi-xgmi")
def amd_smi_xgmi_ports(rng: random.Random) -> Iterator[Variant]:
    """ROCm 6.4-7.1's xgmi --link-status (amdsmi_commands.py xgmi at ROCm 7.1.0; CHANGELOG 6.4.0's example):
    'XGMI LINK STATUS' per XGMI port ('     '.ljust(7) + 'bdf'.ljust(14) + 'link_status'.ljust(20); per GPU
    'GPU%d'.ljust(7) + bdf.ljust(14) and each port's state .ljust(3): U, D, X disabled), then the Legend."""
    for n in (2, 8):
        bdfs = [_bdf(g) for g in range(n)]
        down = rng.randrange(n) if n > 2 else None
        rows = [["U"] * 7 + ["X"] for _ in range(n)]
        if down is not None:
            rows[down][3] = "D"
        lines = ["XGMI LINK STATUS:", ("     ".ljust(7) + "bdf".ljust(14) + "link_status".ljust(20)).rstrip()]
        lines += [(f"GPU{g}".ljust(7) + bdfs[g].ljust(14) + "".join(c.ljust(3) for c in rows[g])).rstrip() for g in range(n)]
        lines += ["", "", "Legend:", "  SELF = Current GPU", "  N/A = Not supported",
                  "  U / D / X = Link is Up / Down / Disabled", "  Read / Write = GPU Metric Accumulated Read / Write"]
        values: tuple[tuple[str, object], ...] = (("len(gpus)", n), (f"len(gpus[gpu={n - 1}].ports)", 8),
                                                  (f"gpus[gpu={n - 1}].ports", "X"))
        yield Variant("amd-smi-xgmi", f"6.4-7.1 per port {n} GPUs{' a port down' if down is not None else ''}",
                      "\n".join(lines) + "\n", values, count=n, fails=down is not None,
                      finding=f"GPU{down} -> port 3 D" if down is not None else None)
