"""rocm-smi, from the grammars in sncheck/vendors/amd/rocm_smi.py (ROCm/rocm_smi_lib
python_smi_tools/rocm_smi.py): the Concise Info table (showAllConcise: both layouts, columns
as wide as their widest cell, partitions' N/A rows), --showtopo's matrices (showWeightTopology,
showHopsTopology, showTypeTopology, showNumaTopology) and --showpids (showPids)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

from grammars import ALL, Variant, generator

_HEADER = " ROCm System Management Interface "
_FOOTER = " End of ROCm SMI Log "


def _spacer(text: str | None, width: int, fill: str = "=") -> str:
    """printLogSpacer: the width made even, the text (made even with one fill) centred."""
    width += width % 2
    if not text:
        return fill * width
    if len(text) % 2:
        text += fill
    side = fill * int((width - len(text)) / 2)
    return side + text + side


def _table(header: list[str], subheader: list[str], rows: list[list[str]]) -> tuple[list[str], int]:
    """showAllConcise's layout: a header and its subheader padded to each other, every column
    as wide as its widest word + 2, each line ljust'ed cell by cell."""
    header, subheader = list(header), list(subheader)
    for i in range(len(header)):
        if len(subheader[i]) < len(header[i]):
            subheader[i] += " " * (len(header[i]) - len(subheader[i]))
        elif len(header[i]) < len(subheader[i]):
            header[i] += " " * (len(subheader[i]) - len(header[i]))
    widths = [len(h) + 2 for h in header]
    for row in rows:
        widths = [max(w, len(c) + 2) for w, c in zip(widths, row)]
    line = lambda cells: "".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return [line(header), line(subheader)] + [line(r) for r in rows], len(line(header))


@generator("rocm-smi")
def rocm_smi(rng: random.Random) -> Iterator[Variant]:
    shapes = [(1, "new", False), (8, "old", False), (8, "new", True), (4, "v5", False)]
    shapes += [(8, "new", False), (64, "new", True), (72, "new", False), (72, "old", False)] if ALL else []
    for n, layout, partitioned in shapes:
        temp_label = rng.choice(("(Junction)", "(Edge)"))
        power_label = rng.choice(("(Socket)", "(Avg)"))
        rows: list[list[str]] = []
        names: list[str] = []
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for d in range(n):
            secondary = partitioned and d % 2 == 1  # a partition past the first: no power management
            temp = "N/A" if secondary else f"{rng.randrange(30, 90)}.0°C"
            power = "N/A" if secondary else f"{rng.randrange(100, 750)}.0W"
            sclk = "N/A" if secondary else f"{rng.randrange(90, 2300)}Mhz"
            cap = "N/A" if secondary else rng.choice(("750.0W", "650.0W", "1000.0W"))
            vram, busy = rng.randrange(101), rng.randrange(101)
            # the last device of a new-layout table: a clock the library could not read ('None', real:
            # a MI300 in the harvest index) and a power it could not (N/A) beside its cap
            unread = layout == "new" and d == n - 1 and not secondary
            if unread:
                sclk, power = "None", "N/A"
            perf = "n/a" if secondary else rng.choice(("auto", "manual", "determinism"))
            busy_cell = "N/A" if secondary else f"{busy}%"
            if layout == "new":
                part = ("N/A, N/A, " if secondary else "NPS1, " + ("DPX" if partitioned else "SPX") + ", ") + \
                    str(d % 2 if partitioned else 0)
                guid = rng.randrange(1, 65535)
                rows.append([str(d), str(d + 2), "0x74a1, ", str(guid), temp, power, part,
                             sclk, "N/A" if secondary else "900Mhz", "0%", perf, cap, f"{vram}%", busy_cell])
                # the identity cells (Node, IDs (DID, GUID)): kept (issue 28's value spot-check)
                values += [(f"gpus[device={d}].node", d + 2), (f"gpus[device={d}].did", "0x74a1"),
                           (f"gpus[device={d}].guid", guid), (f"gpus[device={d}].partitions", part)]
            elif layout == "old":
                rows.append([str(d), "[0x74a1 : 0x00]", temp, power, "NPS1, SPX", sclk, "900Mhz", "0%", perf, cap,
                             f"{vram}%", busy_cell])
                values += [(f"gpus[device={d}].model", "0x74a1"), (f"gpus[device={d}].revision", "0x00"),
                           (f"gpus[device={d}].partitions", "NPS1, SPX")]
                names.append("AMD Instinct MI300X")
            else:  # ROCm 4.x-5.x: the edge temperature as '35.0c', VRAM% as '% 3.0f%%'
                temp = "N/A" if secondary else temp.replace("°C", "c")
                rows.append([str(d), temp, power, sclk, "900Mhz", "0%", perf, cap, f"{vram:3.0f}%", busy_cell])
            if d == n - 1 or d == 0:
                values += [(f"gpus[device={d}].vram_pct", vram)]
                if not secondary:
                    values += [(f"gpus[device={d}].temp_C", float(temp.rstrip("°Cc"))),
                               (f"gpus[device={d}].power_W", float(power[:-1]) if power != "N/A" else None),
                               (f"gpus[device={d}].sclk_MHz", int(sclk[:-3]) if sclk.endswith("Mhz") else None),
                               (f"gpus[device={d}].mclk_MHz", 900), (f"gpus[device={d}].gpu_pct", busy),
                               (f"gpus[device={d}].pwrcap_W", float(cap[:-1])), (f"gpus[device={d}].perf", perf)]
        if layout == "new":
            header = ["Device", "Node", "IDs", "", "Temp", "Power", "Partitions", "SCLK", "MCLK", "Fan", "Perf",
                      "PwrCap", "VRAM%", "GPU%"]
            sub = ["", "", "(DID,", "GUID)", temp_label, power_label, "(Mem, Compute, ID)"] + [""] * 7
        elif layout == "old":  # ROCm 6.0: the model and revision, the name on a second line
            header = ["Device", "[Model : Revision]", "Temp", "Power", "Partitions", "SCLK", "MCLK", "Fan", "Perf",
                      "PwrCap", "VRAM%", "GPU%"]
            sub = ["", "Name (20 chars)", temp_label, power_label, "(Mem, Compute)"] + [""] * 7
        else:
            header = ["GPU", "Temp (DieEdge)", "AvgPwr", "SCLK", "MCLK", "Fan", "Perf", "PwrCap", "VRAM%", "GPU%"]
            sub = [""] * len(header)
        table, width = _table(header, sub, rows)
        body = table[2:]
        if names:  # the name line under each row, in the model column
            body = [ln for row, name in zip(body, names) for ln in (row, " " * 8 + name)]
        if layout == "v5":  # no subheader, and the table's spacers as wide as the log's
            lines = ["", "", _spacer(_HEADER, 90), _spacer(" Concise Info ", 90), table[0]]
            lines += body + [_spacer(None, 90), _spacer(_FOOTER, 90)]
        else:
            # printLog prints the subheader in italics ('\x1b[3m'): the ANSI delivery adds such codes
            lines = ["", "", _spacer(_HEADER, width), _spacer(" Concise Info ", width), table[0], table[1],
                     _spacer(None, width)]
            lines += body + [_spacer(None, width), _spacer(_FOOTER, width)]
        yield Variant("rocm-smi", f"{n} GPUs {layout}{' partitioned' if partitioned else ''}", "\n".join(lines) + "\n",
                      tuple(values), count=n)
        if layout != "v5" and n > 1:
            # a reporter's paste of the rows alone, from inside the table (legacy-rocm-build issue
            # 4750: MI300X CPX partitions 15 to 25): no banner, no header, no End line; its rows
            # read, the paste an excerpt (never a whole table)
            first = rng.randrange(1, n)
            rows_at = [i for i, ln in enumerate(body) if re.match(r"\d+\s", ln)]
            frag = body[rows_at[first]:]
            last = [(at, v) for at, v in values if at.startswith(f"gpus[device={n - 1}].")]
            yield Variant("rocm-smi", f"{n} GPUs {layout} rows from device {first} alone", "\n".join(frag) + "\n",
                          tuple([("len(gpus)", n - first)] + last), fails=True,
                          finding="banner and header are not in the paste")
    yield Variant("rocm-smi", "no DRM device", "\n\nERROR: No DRM devices available. Exiting\n",
                  (("len(gpus)", 0),), fails=True)


@generator("rocm-smi")
def rocm_smi_unread(rng: random.Random) -> Iterator[Variant]:
    """showAllConcise's cells for what the library cannot read (harvest26): Perf 'unsupported' or the level
    'unknown', PwrCap and GPU% 'Unsupported'; printLog's non-UTF-8 path ('43.0C', the degree sign
    dropped); rsmi's 'Expected integer value from monitor' lines (a sensor not read: not measured)."""
    header = ["Device", "Node", "IDs", "", "Temp", "Power", "Partitions", "SCLK", "MCLK", "Fan", "Perf", "PwrCap",
              "VRAM%", "GPU%"]
    sub = ["", "", "(DID,", "GUID)", "(Edge)", "(Avg)", "(Mem, Compute, ID)"] + [""] * 7
    for n, ascii_only, dead in ((2, False, False), (rng.choice((4, 8)), True, False), (2, False, True)):
        rows: list[list[str]] = []
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for d in range(n):
            t = rng.randrange(30, 90)
            unread = dead or d == n - 1  # the last card (every card of a dead host) reads nothing the getters know
            temp = "N/A" if dead else f"{t}.0" + ("C" if ascii_only else "°C")
            rows.append([str(d), str(d + 1), "0x745e, ", str(rng.randrange(1, 65535)), temp,
                         "N/A" if dead else f"{rng.randrange(10, 300)}.0W", "N/A, N/A, 0",
                         "None" if dead else "94Mhz", "None" if dead else "96Mhz", "0%",
                         rng.choice(("unknown", "unsupported")) if unread else "auto",
                         "Unsupported" if unread else "241.0W", "0%", "Unsupported" if unread and not dead else "0%"])
            values += [(f"gpus[device={d}].perf", rows[-1][10]), (f"gpus[device={d}].pwrcap_W", None if unread else 241.0),
                       (f"gpus[device={d}].temp_C", None if dead else float(t))]
        table, width = _table(header, sub, rows)
        lines = ["", ""] + (['Expected integer value from monitor, but got ""'] * (6 * n) if dead else [])
        lines += [_spacer(_HEADER, width), _spacer(" Concise Info ", width), table[0], table[1], _spacer(None, width)]
        lines += table[2:] + [_spacer(None, width), _spacer(_FOOTER, width)]
        what = "a dead host's sensors" if dead else ("ascii-only locale" if ascii_only else "Unsupported cells")
        yield Variant("rocm-smi", f"{n} GPUs {what}", "\n".join(lines) + "\n", tuple(values), count=n, fails=dead,
                      finding="could not read a GPU sensor" if dead else None)


# ----------------------------------------------------------------------------- --showtopo

@generator("rocm-smi")
def rocm_smi_log_form(rng: random.Random) -> Iterator[Variant]:
    """printLog's pairs: '--json' ({"cardN": {metricName: value}, "system": {...}}, one line as rocm_smi.py
    prints it or indented as a paste keeps it) and the 'GPU[N]\\t\\t: metric: value' lines of --showmetrics,
    ended by main's footer; metric names of ROCm 4-5 ('Average Graphics Package Power (W)') and 6
    ('Current Socket Graphics Package Power (W)')."""
    import json
    for n, era in ((1, 5), (4, 6)) + (((8, 6), (16, 5)) if ALL else ()):
        cards, values = {}, [("len(gpus)", n)]
        for d in range(n):
            temp, power, sclk = rng.randrange(30, 90), rng.randrange(5, 700), rng.choice((300, 500, 1700))
            power_key = "Average Graphics Package Power (W)" if era == 5 else "Current Socket Graphics Package Power (W)"
            cards[f"card{d}"] = {"Device ID": "0x738c", "Temperature (Sensor edge) (C)": f"{temp}.0",
                                 "sclk clock speed:": f"({sclk}Mhz)", "mclk clock speed:": "(1200Mhz)",
                                 power_key: f"{power}.0", "Max Graphics Package Power (W)": "290.0",
                                 "GPU use (%)": "0", "PCI Bus": f"0000:{0x83 + 0x20 * d:02X}:00.0"}
            values += [(f"gpus[device={d}].temp_C", temp), (f"gpus[device={d}].power_W", power),
                       (f"gpus[device={d}].sclk_MHz", sclk)]
        doc = {**cards, "system": {"Driver version": "6.3.6"}}
        text = json.dumps(doc, indent=4 if rng.random() < 0.5 else None) + "\n"
        yield Variant("rocm-smi", f"--json {n} cards ROCm {era}", text, tuple(values + [("driver_version", "6.3.6")]),
                      count=n)
    width = 90
    lines = ["", "", _spacer(" ROCm System Management Interface ", width), _spacer(" GPU Metrics ", width)]
    temp, power = rng.randrange(30, 90), rng.randrange(5, 700)
    for key, value in (("Metric Version and Size (Bytes)", "1.3 120"), ("temperature_edge (C)", temp),
                       ("average_socket_power (W)", power), ("current_gfxclk (MHz)", 41), ("throttle_status", 0)):
        lines.append(f"GPU[0]\t\t: {key}: {value}")
    lines += [_spacer(None, width), _spacer(" End of ROCm SMI Log ", width)]
    yield Variant("rocm-smi", "--showmetrics one GPU", "\n".join(lines) + "\n",
                  (("gpus[device=0].temp_C", temp), ("gpus[device=0].power_W", power)), count=1)
    # ROCm 4.x '-a' / '-c': showCurrentClocks prints each clock's current level with its frequency in one
    # pair ('sclk clock level: 2 (2100Mhz)', rocm_smi_lib-issue77), a spacer around each section
    n, sclk, mclk = rng.choice((1, 2, 8)), rng.choice((852, 2100)), rng.choice((100, 167, 1000))
    lines = [_spacer("ROCm System Management Interface", 80, "="), "Driver version: 5.6.19", _spacer(None, 80)]
    for d in range(n):
        lines += [f"GPU[{d}]\t\t: Temperature (Sensor edge) (C): {60 + d}.0"]
    lines += [_spacer(None, 80), _spacer(None, 80)]
    for d in range(n):
        lines += [f"GPU[{d}]\t\t: fclk clock level: 1 (1085Mhz)", f"GPU[{d}]\t\t: mclk clock level: 0 ({mclk}Mhz)",
                  f"GPU[{d}]\t\t: pcie clock level: 1 (16.0GT/s, x16 619Mhz)", f"GPU[{d}]\t\t: sclk clock level: 2 ({sclk}Mhz)"]
    lines += [_spacer(None, 80), _spacer("End of ROCm SMI Log", 80)]
    yield Variant("rocm-smi", f"-a clock levels {n} GPUs", "\n".join(lines) + "\n",
                  (("len(gpus)", n), (f"gpus[device={n - 1}].temp_C", 59 + n), (f"gpus[device={n - 1}].sclk_MHz", sclk),
                   ("gpus[device=0].mclk_MHz", mclk)), count=n)
    # ROCm 5-6 '-a': the level inside the metric name ('%s clock level: %s' % (clk_type, freq_index), '(%sMhz)'),
    # 'S' the deep-sleep level from rocm-6.0.0 (has_deep_sleep; harvest 27's MI300X)
    n = rng.choice((1, 4, 8))
    levels = [rng.choice((("S", rng.choice((131, 137, 142))), ("1", 2100))) for _ in range(n)]
    lines = ["", "", _spacer(" ROCm System Management Interface ", 90), _spacer(" Current clock frequencies ", 90)]
    for d, (level, mhz) in enumerate(levels):
        lines += [f"GPU[{d}]\t\t: fclk clock level: 0: (1300Mhz)", f"GPU[{d}]\t\t: mclk clock level: 0: ({mclk}Mhz)",
                  f"GPU[{d}]\t\t: sclk clock level: {level}: ({mhz}Mhz)", f"GPU[{d}]\t\t: socclk clock level: S: (30Mhz)"]
    lines += [_spacer(None, 90), _spacer(" End of ROCm SMI Log ", 90)]
    yield Variant("rocm-smi", f"-a ROCm 6 clock levels with deep sleep {n} GPUs", "\n".join(lines) + "\n",
                  (("len(gpus)", n), ("gpus[device=0].sclk_MHz", levels[0][1]),
                   (f"gpus[device={n - 1}].sclk_MHz", levels[-1][1]), (f"gpus[device={n - 1}].mclk_MHz", mclk)), count=n)


def _matrix(title: str, n: int, cell: Callable[[int, int], object]) -> list[str]:
    """showWeightTopology & co.: the spacer, printTableRow's header ('      ' then '%-12s' a
    GPU, each followed by ' '), then a row per GPU ('%-6s' its name, '%-12s' a cell)."""
    lines = [_spacer(f" {title} ", 90), "       " + "".join(f"{f'GPU{j}':<12} " for j in range(n))]
    for i in range(n):
        lines.append(f"{f'GPU{i}':<6} " + "".join(f"{str(cell(i, j)):<12} " for j in range(n)))
    return lines


@generator("rocm-smi-showtopo")
def rocm_smi_showtopo(rng: random.Random) -> Iterator[Variant]:
    for n, kind in ((1, "XGMI"), (4, "PCIE"), (8, "XGMI")) + (((16, "XGMI"),) if ALL else ()):
        warn = rng.random() < 0.4
        weight = {(i, j): 0 if i == j else (15 if kind == "XGMI" else 52 + 4 * abs(i - j)) for i in range(n)
                  for j in range(n)}
        hops = {(i, j): 0 if i == j else (1 if kind == "XGMI" else 3) for i in range(n) for j in range(n)}
        lines = ["", ""]
        if warn:  # rocm_smi.py: a device in a low-power state cannot be read until woken
            lines.append("WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status")
            lines.append("")
        lines += [_spacer(_HEADER, 90)]
        lines += _matrix("Weight between two GPUs", n, lambda i, j: weight[i, j])
        lines += [""] + _matrix("Hops between two GPUs", n, lambda i, j: hops[i, j])
        lines += [""] + _matrix("Link Type between two GPUs", n, lambda i, j: 0 if i == j else kind)
        lines += ["", _spacer(" Numa Nodes ", 90)]
        for i in range(n):
            lines += [f"GPU[{i}]\t\t: (Topology) Numa Node: {i // 4}", f"GPU[{i}]\t\t: (Topology) Numa Affinity: {i // 4}"]
        lines += [_spacer(_FOOTER, 90)]
        last = f"GPU{n - 1}"
        values: list[tuple[str, object]] = [("len(gpus)", n), (f"weight.{last}.GPU0", weight[n - 1, 0]),
                                            (f"hops.{last}.GPU0", hops[n - 1, 0]), (f"numa.{last}", (n - 1) // 4)]
        if n > 1:
            values.append((f"link_type.{last}.GPU0", kind))
        # fails: a run's judgement wants every pair direct over XGMI (checks.check_xgmi_topo)
        yield Variant("rocm-smi-showtopo", f"{n} GPUs {kind}{' low-power warning' if warn else ''}",
                      "\n".join(lines) + "\n", tuple(values), count=n, fails=kind == "PCIE")
    # --showtoponuma: showNumaTopology alone between the banner and the footer (no link: not judged)
    for n, label in ((1, "GPU[{}]\t\t"), (8, "GPU[{}]\t\t"), (4, "GPU {}          ")):
        # the last: a page that lost printLog's brackets (harvest7's HPC-docs capture), the tabs as blanks
        lines = ["", "", _spacer(_HEADER, 90), _spacer(" Numa Nodes ", 90)]
        for i in range(n):
            lines += [f"{label.format(i)}: (Topology) Numa Node: {i // 4}",
                      f"{label.format(i)}: (Topology) Numa Affinity: {i // 4 if n > 1 else -1}"]
        lines += [_spacer(_FOOTER, 90)]
        values = [("len(gpus)", n), (f"numa.GPU{n - 1}", (n - 1) // 4),
                  (f"numa_affinity.GPU{n - 1}", (n - 1) // 4 if n > 1 else -1), ("weight", None),
                  ("link_type", None)]
        yield Variant("rocm-smi-showtopo", f"--showtoponuma {n} GPUs{'' if '[' in label else ' no brackets'}",
                      "\n".join(lines) + "\n", tuple(values), count=n)


# ----------------------------------------------------------------------------- --showpids

@generator("rocm-smi-showpids")
def rocm_smi_showpids(rng: random.Random) -> Iterator[Variant]:
    """showPids: 'KFD Processes' spacer, 'No KFD PIDs currently running' or printTableLog's
    header and a row per process (each cell right-aligned to its header's width)."""
    for procs in (0, 1, 8) + ((72,) if ALL else ()):
        header = ["PID", "PROCESS NAME", "GPU(s)", "VRAM USED", "SDMA USED", "CU OCCUPANCY"]
        lines = ["", "", _spacer(_HEADER, 90), _spacer(" KFD Processes ", 90)]
        values: list[tuple[str, object]] = [("len(processes)", procs)]
        if not procs:
            lines.append("No KFD PIDs currently running")
        else:
            rows = [header]
            for k in range(procs):
                pid, vram = rng.randrange(1000, 4_000_000), rng.randrange(0, 2**38)
                name = rng.choice(("python3", "pt_main_thread", "rccl_test", "Web Content"))
                # cu_occupancy 0xFFFFFFFF (invalid): its cell alone UNKNOWN, nothing printed, whole (capture 04)
                cu = str(rng.randrange(0, 305)) if rng.random() < 0.8 else "UNKNOWN"
                rows.append([str(pid), name, str(rng.randrange(1, 9)), str(vram), "0", cu])
                if k == procs - 1:
                    values += [(f"processes[pid={pid}].name", name), (f"processes[pid={pid}].vram_bytes", vram),
                               (f"processes[pid={pid}].cu_occupancy", None if cu == "UNKNOWN" else int(cu))]
            # print2DArray: each cell left-justified to its column's widest, then a tab
            widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
            lines.append("KFD process information:")
            lines += ["".join(c.ljust(w) + "\t" for c, w in zip(r, widths)) for r in rows]
        lines += [_spacer(None, 90), _spacer(_FOOTER, 90)]
        yield Variant("rocm-smi-showpids", f"{procs} processes", "\n".join(lines) + "\n", tuple(values), count=procs)


@generator("rocm-smi-showpids")
def rocm_smi_showpids_unread(rng: random.Random) -> Iterator[Variant]:
    """A process the library could not read (rocm_smi.py @a129571 showPids): rsmi_ret_ok prints '<metric>, <status>'
    (rsmi_status_verbose_err_out's text) as the loop runs, above the table; the cells that call fills stay UNKNOWN:
    get_gpu_compute_process -> GPU(s), get_compute_process_info_by_pid -> VRAM, SDMA and CU. Not measured: exit 1."""
    for metric in ("get_compute_process_info_by_pid", "get_gpu_compute_process"):
        status = rng.choice(("Not supported on the given system", "Permission denied", "Item searched for but not found"))
        procs = rng.choice((1, 3))
        header = ["PID", "PROCESS NAME", "GPU(s)", "VRAM USED", "SDMA USED", "CU OCCUPANCY"]
        rows, pids = [header], []
        for _ in range(procs):
            pid = rng.randrange(1000, 4_000_000)
            pids.append(pid)
            by_pid = metric == "get_compute_process_info_by_pid"
            rows.append([str(pid), "python3", "1" if by_pid else "UNKNOWN", "UNKNOWN" if by_pid else "4096",
                         "UNKNOWN" if by_pid else "0", "UNKNOWN" if by_pid else "12"])
        widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
        lines = (["", "", _spacer(_HEADER, 90), _spacer(" KFD Processes ", 90)] + [f"{metric}, {status}"] * procs
                 + ["KFD process information:"] + ["".join(c.ljust(w) + "\t" for c, w in zip(r, widths)) for r in rows]
                 + [_spacer(None, 90), _spacer(_FOOTER, 90)])
        at = f"processes[pid={pids[-1]}]"
        values = [("len(processes)", procs), (f"{at}.name", "python3")] + (
            [(f"{at}.vram_bytes", None), (f"{at}.gpus", "1")] if metric.endswith("by_pid") else [(f"{at}.vram_bytes", 4096)])
        yield Variant("rocm-smi-showpids", f"{procs} processes unread: {metric}, {status}", "\n".join(lines) + "\n",
                      tuple(values), fails=True, finding=f"{procs} time(s) ({metric}, {status})", count=procs)


@generator("rocm-smi-showpids")
def rocm_smi_showpids_failed(rng: random.Random) -> Iterator[Variant]:
    """getPidList's failed call: rsmi_ret_ok prints 'get_compute_process_info, <status>' and showPids
    then 'No KFD PIDs currently running' though it read no list; no GPU: main's ERROR line alone."""
    status = rng.choice(("Permission denied", "Not supported on the given system", "Problem accessing a file"))
    lines = ["", "", _spacer(_HEADER, 90), _spacer(" KFD Processes ", 90), f"get_compute_process_info, {status}",
             "No KFD PIDs currently running", _spacer(None, 90), _spacer(_FOOTER, 90)]
    yield Variant("rocm-smi-showpids", f"process list failed: {status}", "\n".join(lines) + "\n",
                  (("len(processes)", 0),), fails=True, finding=f"get_compute_process_info, {status}")
    yield Variant("rocm-smi-showpids", "no DRM device", "\n\nERROR: No DRM devices available. Exiting\n",
                  (("len(processes)", 0),), fails=True, finding="No DRM devices available")


@generator("rocm-smi")
def rocm_smi_2017(rng: random.Random) -> Iterator[Variant]:
    """The 2017 ROC-smi concise table (AMDGPU-PRO 17.x, ROC-smi-issue10): a DID column after GPU, 'OverDrive'
    and 'ECC' last, fixed-width cells; a device without PowerPlay prints N/A, 'None%' for its fan and a blank
    Perf cell (the row is read by the header's column places), and 'GPU[N] : PowerPlay not enabled' lines."""
    n = rng.choice((2, 7))
    lines = ["", "====================    ROCm System Management Interface    ====================",
             "=" * 80, " GPU  DID    Temp     AvgPwr   SCLK     MCLK     Fan      Perf    OverDrive  ECC",
             "GPU[0]         : PowerPlay not enabled - Cannot get supported clocks"]
    values: list[tuple[str, object]] = [("len(gpus)", n), ("gpus[device=0].temp_C", None), ("gpus[device=0].perf", None),
                                        ("gpus[device=0].fan_pct", None)]
    lines.append("  " + f"{0:<4}{'0402':<7}{'N/A':<9}{'N/A':<9}{'N/A':<9}{'N/A':<9}{'None%':<9}{'':<10}{'N/A':<9}{'N/A':<9}")
    for d in range(1, n):
        temp, sclk, fan = rng.randrange(40, 80), rng.choice((300, 600)), rng.choice((42.75, 85.88))
        lines.append("  " + f"{d:<4}{'67df':<7}{f'{temp}.0c':<9}{'N/A':<9}{f'{sclk}Mhz':<9}{'1750Mhz':<9}{f'{fan}%':<9}"
                     f"{'auto':<10}{'0%':<9}{'N/A':<9}")
        values += [(f"gpus[device={d}].temp_C", temp), (f"gpus[device={d}].sclk_MHz", sclk),
                   (f"gpus[device={d}].fan_pct", fan), (f"gpus[device={d}].perf", "auto")]
    lines += ["=" * 80, "====================           End of ROCm SMI Log          ===================="]
    yield Variant("rocm-smi", f"2017 DID layout {n} GPUs", "\n".join(lines) + "\n", tuple(values), count=n)


@generator("rocm-smi")
def rocm_smi_1x_2x(rng: random.Random) -> Iterator[Variant]:
    """ROC-smi's rocm_smi.py printLog: 1.x (2016-2018, dotted rules) 'Temperature: %sc', 'GPU Clock Level: L (FREQ)',
    'GPU Memory Clock Level: L (FREQ)', 'Fan Level: L (S)%'; 2.x 'Temperature (Sensor edge) (c)', 'Fan Level: L (S%)'."""
    n = rng.choice((1, 2, 4))
    for era in ("1.x", "2.x"):
        rule = "." * 80 if era == "1.x" else "=" * 80
        lines = [_spacer(_HEADER, 80, "." if era == "1.x" else "="), rule]
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for d in range(n):
            temp, sclk, level, fan = rng.randrange(30, 90), rng.choice((300, 852, 991)), rng.randrange(255), rng.randrange(100)
            if era == "1.x":
                lines += [f"GPU[{d}] \t\t: Temperature: {temp}.0c", f"GPU[{d}] \t\t: GPU Clock Level: 1 ({sclk}Mhz)",
                          f"GPU[{d}] \t\t: GPU Memory Clock Level: 3 (945Mhz)", f"GPU[{d}] \t\t: Fan Level: {level} ({fan}.5)%"]
            else:
                lines += [f"GPU[{d}] \t\t: Temperature (Sensor edge) (c): {temp}.0",
                          f"GPU[{d}] \t\t: sclk clock level: 0 ({sclk}Mhz)", f"GPU[{d}] \t\t: Fan Level: {level} ({fan}%)"]
            values += [(f"gpus[device={d}].temp_C", temp), (f"gpus[device={d}].sclk_MHz", sclk),
                       (f"gpus[device={d}].fan_pct", fan + 0.5 if era == "1.x" else fan)]
        lines += [rule, _spacer(_FOOTER, 80, "." if era == "1.x" else "=")]
        yield Variant("rocm-smi", f"ROC-smi {era} -a {n} GPUs", "\n".join(lines) + "\n", tuple(values), count=n)

