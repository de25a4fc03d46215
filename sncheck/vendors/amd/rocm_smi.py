"""Parse ``rocm-smi`` views: ``--showtopo``, the Concise Info table, ``--showpids``.

``parse_showtopo`` (``rocm-smi-showtopo``)::

    {"tool": "rocm-smi-showtopo", "gpus": ["GPU0", ...],
     "weight": {"GPU0": {"GPU1": 15, ...}}, "hops": {...}, "link_type": {"GPU0": {"GPU1": "XGMI"}},
     "numa": {"GPU0": 0}, "numa_affinity": {"GPU0": 0},
     "warnings": ["WARNING: AMD GPU device(s) is/are in a low-power state..."], "errors": []}

  ``--showtopoweight``, ``--showtopohops``, ``--showtopotype`` and ``--showtoponuma`` print one
  of these sections each (between the same banner and footer): an output with any of them is
  read, a section it does not print is null; with the NUMA section alone ``gpus`` are the GPUs
  it names.

``parse_concise`` (``rocm-smi``)::

    {"tool": "rocm-smi", "gpus": [{"device": 0, "temp_C": 43.0, "power_W": 155.0, "partitions": "NPS1, SPX, 0",
      "sclk_MHz": 94, "mclk_MHz": 900, "perf": "auto", "pwrcap_W": 650.0, "vram_pct": 0, "gpu_pct": 0,
      "name": null}], "errors": []}

``parse_showpids`` (``rocm-smi-showpids``): ``{"processes": [{"pid": 1168514, "name": "pt_main_thread",
"gpus": "1", "vram_bytes": 177386942464, ...}]}``.

``rocm-smi --json`` that prints ``WARNING: No JSON data to report`` is an error, not data; so is
main()'s ``WARNING: One or more commands failed`` (ROCm 4.x to 5.0.x: the tool exits non-zero) in
every view (:func:`sncheck.vendors.amd.rocm_smi_log.commands_failed`).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.amd.rocm_smi_log import commands_failed, is_log_form, parse_log_form

_SECTIONS = {"Weight between two GPUs": "weight", "Hops between two GPUs": "hops",
             "Link Type between two GPUs": "link_type"}


def _cell(v: str) -> Any:
    return int(v) if re.fullmatch(r"-?\d+", v) else v  # a NUMA affinity of -1: no NUMA node


# showNumaTopology: 'GPU[0]\t\t: (Topology) Numa Node: 0' and '... Numa Affinity: 0' (printLog's 'GPU[%s]\t\t');
# pasted, the tabs are blanks ('GPU[0]          :') or the brackets lost ('GPU 0          :', two HPC
# centres' pages of the same 4-GPU node)
_NUMA = re.compile(r"^GPU(?:\[(\d+)\]|\s+(\d+))\s*:\s*\(Topology\) Numa (Node|Affinity):\s*(\S+)")
_MATRIX_ROW = re.compile(r"^GPU\d+\s")  # a 'between two GPUs' row: its GPU, then one cell a column


def parse_showtopo(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {"tool": "rocm-smi-showtopo", "gpus": [], "weight": {}, "hops": {}, "link_type": {},
                           "numa": {}, "numa_affinity": {}, "warnings": [], "errors": []}
    section = None
    ended = False
    printed: set[str] = set()  # the sections the output prints (--showtopo all four, --showtopo<one> one)
    cols: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if said := commands_failed(line):
            out["errors"].append(said)
            continue
        if line.startswith("WARNING"):
            out["warnings"].append(line)
            continue
        if len(line) > 1 and line[0] == "=" == line[-1]:  # "==== Weight between two GPUs ===="
            # by hand: r"^=+\s*(.*?)\s*=+$" backtracked over every '=' of a long line (1 MB: minutes)
            title = line.strip("=").strip()
            ended |= title == _END
            section = _SECTIONS.get(title)
            cols = []
            if title == "Numa Nodes":
                section = "numa"
            if section:
                printed.add(section)
            continue
        if section in ("weight", "hops", "link_type"):
            if not cols:
                cols = line.split()
                out["gpus"] = out["gpus"] or cols
                continue
            if not _MATRIX_ROW.match(line):  # a reporter's line after the matrix ('****'): not a row
                section = None
                continue
            cells = line.split()
            if len(cells) - 1 != len(cols):
                out["errors"].append(f"{section} row {cells[0]} has {len(cells) - 1} cells for {len(cols)} GPUs")
            out[section][cells[0]] = {c: _cell(v) for c, v in zip(cols, cells[1:])}
        elif section == "numa" and (m := _NUMA.match(line)):
            gpu = m.group(1) or m.group(2)
            out["numa" if m.group(3) == "Node" else "numa_affinity"][f"GPU{gpu}"] = _cell(m.group(4))
        elif re.search(r"(?i)error|not found|unable", line):
            out["errors"].append(line)
    if not out["weight"] and not out["link_type"] and not out["hops"]:
        if not out["numa"]:
            raise ParseError("no 'between two GPUs' table and no Numa Nodes section", tool="rocm-smi-showtopo")
        out["gpus"] = list(out["numa"])  # --showtoponuma: the NUMA section alone
    for key in ("weight", "hops", "link_type", "numa"):
        if key not in printed:  # --showtopo<one>: the sections it does not print are null, not empty
            out[key] = None
    if "numa" not in printed:
        out["numa_affinity"] = None
    if not ended:  # main() closes every output but the concise one with the footer spacer
        out["errors"].append(f"no '{_END}' line: output cut short")
    return out


_ROW = re.compile(r"^(\d+)\s+")
# ROCm 2.x/3.x print no "Concise Info" banner: one header line, one cell a column.
# The 2017 ROC-smi (AMDGPU-PRO 17.x) adds a DID column after GPU and ends 'OverDrive  ECC' (ROC-smi-issue10);
# a device without PowerPlay prints its Perf cell blank: the row is then read by the header's column places
_OLD_HEADER = re.compile(r"^GPU\s+(?:DID\s+)?Temp\s+AvgPwr\b")
_OLD_COLUMNS = {"GPU": "device", "Temp": "temp_C", "AvgPwr": "power_W", "SCLK": "sclk_MHz", "MCLK": "mclk_MHz",
                "PCLK": "pclk_MHz", "Fan": "fan_pct", "Perf": "perf", "PwrCap": "pwrcap_W", "VRAM%": "vram_pct",
                "GPU%": "gpu_pct", "SCLK OD": "sclk_od_pct", "MCLK OD": "mclk_od_pct", "DID": "did",
                "OverDrive": "overdrive_pct", "ECC": "ecc"}
_END = "End of ROCm SMI Log"


def _old_value(value: str) -> Any:
    # 'None%': the 2017 tool's fan it could not read ('%s%%' of None); 'Unsupported': showAllConcise's
    # PwrCap or GPU% whose getter returned -1 (Perf's is lower-cased, kept as printed)
    if value in ("N/A", "None", "None%", "Unsupported"):
        return None
    m = re.fullmatch(r"([\d.]+)(?:c|°C|W|Mhz|MHz|%)?", value)
    if not m:
        return value
    return float(m.group(1)) if "." in m.group(1) or value.endswith(("c", "W", "°C")) else int(m.group(1))


def _old_row(columns: list[str], cells: list[str]) -> dict[str, Any]:
    g = {_OLD_COLUMNS.get(c, c): v if c == "DID" else _old_value(v) for c, v in zip(columns, cells)}  # DID: hex
    g["device"] = int(cells[0])
    g.setdefault("name", None)
    return g


# ROCm 5 on: "Device  Node  IDs  Temp  Power  Partitions  SCLK ..." / "Device  [Model : Revision]  Temp ..."
_CONCISE_HEADER = re.compile(r"^Device\s+(?:Node\s+IDs|\[Model : Revision\])\s+Temp\b")


# the identity cells after Device: 'Node  IDs (DID, GUID)' (rocm-6.1.0 on: '2     0x75a0,   24959') or
# '[Model : Revision]' (rocm-6.0.0: '[0x74a1 : 0x00]'); read by place, before any other cell
_NODE_IDS = re.compile(r"^\s*\d+\s+(\d+)\s+(0x[0-9a-fA-F]+),\s*(\d+)(?:\s|$)")
_MODEL_REV = re.compile(r"^\s*\d+\s+\[(0x[0-9a-fA-F]+)\s*:\s*(0x[0-9a-fA-F]+)\]")


def _ids(line: str) -> dict[str, Any]:
    """A row's identity cells (null in a layout without them): issue 28's value spot-check found
    them dropped though the grammar names them."""
    ids, model = _NODE_IDS.match(line), _MODEL_REV.match(line)
    return {"node": int(ids.group(1)) if ids else None, "did": ids.group(2) if ids else None,
            "guid": int(ids.group(3)) if ids else None,
            "model": model.group(1) if model else None, "revision": model.group(2) if model else None}


# a whole row's last five cells: Fan, Perf, PwrCap, VRAM%, GPU% (a value the library could not read: N/A;
# showAllConcise's own 'Unsupported' for a PwrCap or GPU% whose getter returned -1, and the Perf it
# lower-cases: 'unsupported', or the library's 'unknown' level)
_TAIL = re.compile(r"(?:\d+(?:\.\d+)?%|N/A) [a-z_/]+ (?:[\d.]+W|N/A|Unsupported) (?:\d+%|N/A) (?:\d+%|N/A|Unsupported)")
# rsmi's get_dev_mon_value (src/rocm_smi.cc) on stderr when a hwmon file read no integer (a GPU whose
# sensors stopped answering): the call fails RSMI_STATUS_UNEXPECTED_DATA and the cell prints N/A
_MONITOR_FAILED = re.compile(r'^Expected integer value from monitor, but got "(.*)"$')
# a temperature as printed: '43.0°C' (ROCm 6), '35.0c' (4.x-5.x); printLog's non-UTF-8 path
# (UnicodeEncodeError: encode('ascii', 'ignore')) drops the degree sign, '43.0C'; a paste that mangled
# the sign keeps one stand-in for it ('43.0_C', '43.0?C', U+FFFD, or UTF-8 read as cp1252 'Â°C')
_DEGREES = r"(?:(?:Â?°|[_?\ufffd])?C|c)"


# the Partitions cell as printed: getMemoryPartition ', ' getComputePartition[', ' getPartitionId] (rocm-6.1.2
# on: the ID; 6.0: '(Mem, Compute)'); a partition the library cannot read prints 'N/A' (a secondary
# partition's 'N/A, N/A, 1'), kept as text: the cell is never null where the row prints it
_PARTITIONS = re.compile(r"(?<!\S)((?:NPS\d+|N/A|UNKNOWN),\s*(?:[A-Z]PX|N/A|UNKNOWN)(?:,\s*(?:\d+|N/A))?)(?=\s|$)")


def _mhz(cell: str) -> int | None:
    return int(m.group(1)) if (m := re.fullmatch(r"(\d+)Mhz", cell)) else None


def _temp(cell: str) -> float | None:
    return float(m.group(1)) if (m := re.fullmatch(rf"(\d+(?:\.\d+)?){_DEGREES}", cell)) else None


def _watts(cell: str) -> float | None:
    return float(m.group(1)) if (m := re.fullmatch(r"([\d.]+)W", cell)) else None


def _headless_row(line: str) -> bool:
    """A Concise Info row of ROCm 5 on pasted without the table's banner and header: its device
    number, then the identity cells (``17  0x74a1,   48427`` or ``[0x74a1 : 0x00]``) or both a
    temperature (``42.0°C``) and a clock (``145Mhz``), the cells only that table prints together."""
    if not _ROW.match(line):
        return False
    if _NODE_IDS.match(line) or _MODEL_REV.match(line):
        return True
    return bool(re.search(r"\d°C(?:\s|$)", line) and re.search(r"\d+Mhz\b", line))


def parse_concise(text: str) -> dict[str, Any]:
    """The Concise Info table (ROCm 5 on), or the banner-less one-line table of ROCm 2.x/3.x
    (``GPU Temp AvgPwr SCLK ...``, ``24.0c 3.0W``). The table ends at ``End of ROCm SMI Log``:
    without it the output was cut short. A paste of its rows alone (no banner, no header: a
    reporter's excerpt from inside the table) reads its rows and is an excerpt, never whole."""
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    warnings: list[str] = []
    saw = ended = False
    old_columns: list[str] | None = None
    starts: list[int] = []
    width: int | None = None  # the cells of the first whole row
    identity = False  # the header names the identity cells after Device
    unread: list[str] = []  # the library's failed sensor reads (stderr, before the table)
    for raw in text.splitlines():
        line = raw.rstrip()
        body = line.strip()
        if "Concise Info" in body or (_CONCISE_HEADER.match(body) and not old_columns):
            saw = True  # the banner, or the column header of a paste that left the banner out
            # the header says the identity cells are there (Node, IDs / [Model : Revision]): three cells
            # before Temp in every row, whatever they read ('N/A' where the library cannot say)
            identity = identity or bool(_CONCISE_HEADER.match(body))
            continue
        if _END in body:
            ended = True
            continue
        if m := _MONITOR_FAILED.match(body):
            unread.append(m.group(1))
            continue
        if "No JSON data to report" in body or body.startswith("ERROR:"):
            errors.append(body)  # 'ERROR: No DRM devices available. Exiting' (main), the JSON one
            continue
        if _OLD_HEADER.match(body):
            saw, old_columns = True, re.sub(r"\b(SCLK|MCLK) OD\b", r"\1_OD", body).split()
            old_columns = [c.replace("_OD", " OD") for c in old_columns]
            starts = [m.start() for m in re.finditer(r"\S+(?: OD\b)?", line)]  # each column's place in the header
            continue
        if re.match(r"^GPU\[\d+\]\s*:\s*WARNING", body):
            warnings.append(re.sub(r"\s+", " ", body))
            continue
        if said := commands_failed(body):
            errors.append(said)
            continue
        if not saw and _headless_row(line):
            saw = True  # rows pasted from inside the table: read them, and say the paste is an excerpt
            errors.append(f"the table's banner and header are not in the paste (it starts at device "
                          f"{line.split()[0]}): its rows are an excerpt")
        if saw and old_columns and _ROW.match(body):  # ROCm 1.x indents its rows (" 0   35c ...")
            cells = body.split()
            if len(cells) != len(old_columns) and len(starts) == len(old_columns) and len(line) > starts[-1]:
                # a blank cell (no PowerPlay: no Perf): the row's cells by the header's column places
                cells = [line[a:b].strip() or "N/A" for a, b in zip([0, *starts[1:]], [*starts[1:], None])]
            if len(cells) != len(old_columns):
                errors.append(f"GPU {cells[0]}: {len(cells)} cells for {len(old_columns)} columns: {body!r}")
            gpus.append(_old_row(old_columns, cells))
        elif saw and (row := _ROW.match(line)):
            g: dict[str, Any] = {"device": int(row.group(1)), **_ids(line)}
            temp = re.search(rf"([\d.]+){_DEGREES}(?=\s|$)", line)  # ROCm 6: '43.0°C'; 4.x-5.x: '35.0c'
            watts = re.findall(r"([\d.]+)W\b", line)
            clocks = re.findall(r"(\d+)Mhz", line)
            pcts = re.findall(r"(\d+)%", line)
            part = _PARTITIONS.search(line)
            perf = re.search(r"\b(auto|low|high|manual|determinism|stable_std|stable_peak|\S+_power)\b", line)
            g.update({"temp_C": float(temp.group(1)) if temp else None,
                      "power_W": float(watts[0]) if watts else None,
                      "pwrcap_W": float(watts[1]) if len(watts) > 1 else None,
                      "partitions": part.group(1) if part else None,
                      "sclk_MHz": int(clocks[0]) if clocks else None,
                      "mclk_MHz": int(clocks[1]) if len(clocks) > 1 else None,
                      "perf": perf.group(1) if perf else None,
                      "fan_pct": int(pcts[0]) if len(pcts) == 3 else None,
                      "vram_pct": int(pcts[-2]) if len(pcts) >= 2 else None,
                      "gpu_pct": int(pcts[-1]) if pcts else None, "name": None})
            # whole: its three % cells and two W cells, or (a partition's N/A cells) as many cells as
            # the table's first whole row
            cells = body.split()
            if (len(pcts) < 3 or len(watts) < 2) and len(cells) != width and not _TAIL.fullmatch(" ".join(cells[-5:])):
                errors.append(f"device {g['device']}: row cut short: {body!r}")
            else:
                width = width or len(cells)
                # a whole row ends with Fan, Perf, PwrCap, VRAM%, GPU%, one cell each: read them by
                # place, so a partition's N/A cells never shift another column's value onto them
                fan, perf_cell, cap, vram, use = (_old_value(c) for c in cells[-5:])
                g.update({"fan_pct": fan, "perf": perf_cell if perf_cell != "n/a" else None,
                          "pwrcap_W": cap, "vram_pct": vram, "gpu_pct": use})
                # SCLK and MCLK by place too (the two cells before Fan), and Power as the cell after Temp:
                # a clock the library could not read prints 'None' or 'N/A' ('None  900Mhz': MCLK was
                # read as SCLK), a Power of 'N/A' beside a PwrCap ('N/A ... 1000.0W': the cap as power)
                # Temp's cell: after the identity cells where the header or the row shows them (getNodeId,
                # getDRMDeviceId and getGUID print 'N/A' where the library cannot say: 'N/A  N/A,  N/A')
                at = 4 if identity or g["node"] is not None or g["model"] is not None else 1
                g.update({"sclk_MHz": _mhz(cells[-7]), "mclk_MHz": _mhz(cells[-6]),
                          "power_W": _watts(cells[at + 1]) if len(cells) > at + 8 else g["power_W"]})
                if len(cells) > at + 8:  # Temp and Power as printed ('%.1f°C', '%.1fW') or N/A, never another number
                    g["temp_C"] = _temp(cells[at])
                    errors += [f"device {g['device']}: {col} cell {cell!r} is no {what} rocm-smi prints "
                               f"(a number of {unit}, or N/A)" for col, what, cell, unit, read in
                               (("Temp", "temperature", cells[at], "°C", g["temp_C"]),
                                ("Power", "power", cells[at + 1], "W", g["power_W"]))
                               if read is None and cell not in ("N/A", "None")]
            gpus.append(g)
        elif saw and gpus and line.startswith(" ") and body and not body.startswith(("(", "=")):
            gpus[-1]["name"] = body  # the old layout's second line: "AMD Instinct MI300X"
    if not saw and not errors and is_log_form(text):  # --json, or the printLog lines of a --show* option
        return parse_log_form(text)
    if not saw and not errors:
        raise ParseError("no 'Concise Info' table", tool="rocm-smi")
    if unread:
        errors.append(f"rocm-smi's library could not read a GPU sensor {len(unread)} time(s) ('Expected integer "
                      f"value from monitor, but got \"{unread[0]}\"'): those cells are not measured")
    if saw and not ended:
        errors.append(f"no '{_END}' line: output cut short")
    elif saw and not gpus and not errors:
        # a whole table with no device row read: nothing was measured, never a pass
        errors.append("the table has no device row: no GPU was read")
    return {"tool": "rocm-smi", "gpus": gpus, "warnings": warnings, "errors": errors}


# print2DArray: each cell left-justified to its column's widest, then a tab: PID, PROCESS NAME (the
# process's comm, which may hold blanks), GPU(s), VRAM USED, SDMA USED, CU OCCUPANCY ('UNKNOWN' where
# the library could not read it)
_PID_ROW = re.compile(r"^(\d+)\s+(.+?)\s+(\d+|UNKNOWN)\s+(\d+|UNKNOWN)\s+(\d+|UNKNOWN)\s+(\d+|UNKNOWN)$")


def _count(cell: str) -> int | None:
    return None if cell == "UNKNOWN" else int(cell)


# rsmi_ret_ok (rocm_smi.py) prints a failed call's metric and its status's rsmi_status_verbose_err_out
# text ('get_compute_process_info, Permission denied'); this metric is getPidList's, the list itself
_PIDS_FAILED = re.compile(r"^(get_compute_process_info, .+)$")
# showPids' per-process calls (rocm_smi.py @a129571): rsmi_compute_process_gpus_get ('get_gpu_compute_process': the
# GPU(s) cell stays UNKNOWN) and rsmi_compute_process_info_by_pid_get / _by_device_get ('get_compute_process_info_by_pid':
# VRAM, SDMA and CU cells stay UNKNOWN); rsmi_ret_ok prints its line as the loop runs, so before the table
_PROC_FAILED = re.compile(r"^(get_gpu_compute_process|get_compute_process_info_by_pid), (.+)$")


def parse_showpids(text: str) -> dict[str, Any]:
    """``--showpids``: the KFD Processes spacer, then 'No KFD PIDs currently running' or the
    table, a bare '=' spacer, and the footer: without the footer the output was cut."""
    procs: list[dict[str, Any]] = []
    errors: list[str] = []
    unread: dict[str, int] = {}  # a per-process call's failure ('metric, status') -> how many times printed
    header = none = closed = ended = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("PID") and "PROCESS NAME" in line:
            header = True
        elif "No KFD PIDs currently running" in line:
            none = True
        elif line.startswith("ERROR:"):
            errors.append(line)
        elif said := commands_failed(line):
            errors.append(said)
        elif m := _PIDS_FAILED.match(line):
            # getPidList's library call failed: showPids then prints 'No KFD PIDs currently running'
            # though no list was read (rsmi_ret_ok's printLog of the metric and its status)
            errors.append(f"rocm-smi could not list the KFD processes ({m.group(1)}): not measured")
        elif (m := _PROC_FAILED.match(line)) and not header:
            unread[line] = unread.get(line, 0) + 1
        elif set(line) == {"="}:
            closed |= header or none  # printLogSpacer() after the table (the banners carry a title)
        elif line.startswith("=") and line.strip("=").strip() == _END:
            ended = True
        elif header and not closed and (m := _PID_ROW.match(line)):
            procs.append({"pid": int(m.group(1)), "name": m.group(2), "gpus": m.group(3),
                          "vram_bytes": _count(m.group(4)), "sdma": _count(m.group(5)),
                          "cu_occupancy": _count(m.group(6))})
        elif header and not closed and re.match(r"^\d+\s", line):
            errors.append(f"a process row the table does not hold: {line[:100]!r}")
    for said, times in unread.items():  # the cells the call would have filled read UNKNOWN (null): not measured
        errors.append(f"rocm-smi's library could not read a process {times} time(s) ({said}): the cells that call "
                      "fills read UNKNOWN and are not measured")
    if not header and not none and errors:  # 'ERROR: No DRM devices available. Exiting' alone
        return {"tool": "rocm-smi-showpids", "processes": procs, "errors": errors}
    if not header and not none:
        raise ParseError("no KFD process table", tool="rocm-smi-showpids")
    if not ended:  # main() closes the output with the footer spacer
        errors.append(f"no '{_END}' line: output cut short")
    return {"tool": "rocm-smi-showpids", "processes": procs, "errors": errors}
