"""The plain ``nvidia-smi`` table: view ``nvidia-smi``.

nvidia-smi is closed: this grammar comes from NVIDIA's nvidia-smi documentation (the
``nvidia-smi.txt`` man page, "Standard output") and the real captures under
``fixtures/real/`` (drivers 418 to 580), not from a source file.

- an optional time line (``Tue Mar 12 10:00:00 2024``), then a box: ``+---...---+``,
  ``| NVIDIA-SMI 535.154.05   Driver Version: 535.154.05   CUDA Version: 12.2 |`` (``CUDA
  Version: N/A`` without the CUDA driver; 555+ adds ``NVIDIA-SMI 555.42.02`` ... the same words),
  a ``|---+---+---|`` rule, the column header (two or three lines: ``GPU Name Persistence-M |
  Bus-Id Disp.A | Volatile Uncorr. ECC``, ``Fan Temp Perf Pwr:Usage/Cap | Memory-Usage |
  GPU-Util Compute M.``, from 450 ``| | MIG M.``), a ``|===+===+===|`` rule; on Windows the header
  names ``TCC/WDDM`` where Linux prints ``Persistence-M`` and each GPU's first cell ends in its driver
  model (``WDDM``, ``TCC``, ``MCDM``), kept as ``driver_model`` (harvest 29's 527.41 GPU-P host);
- per GPU a block of 2 lines (3 from 450, the third holds ``MIG M.``), cells split by ``|``:
  ``INDEX NAME PERSISTENCE | BUS-ID DISP | ECC`` and ``FAN TEMP PERF POWER / CAP | USED / TOTAL
  | UTIL COMPUTE-MODE``; blocks are separated by ``+---+---+---+`` rules (old layouts: a
  ``|---+---+---|`` rule), the last closed by a ``+---+`` rule. A value the GPU does not give is
  ``N/A``; a value nvidia-smi could not read is ``ERR!``; a MIG-enabled GPU is followed by a
  ``MIG devices:`` table (read as a table, not as GPUs);
- a ``Processes:`` box: header lines, a ``|===|`` rule, one row per process (``GPU GI CI PID
  TYPE NAME USAGE``; before 450 ``GPU PID Type Process name Usage``) or ``No running processes
  found``, closed by ``+---+``.
- whole: the last GPU block is followed by its ``+---+---+---+`` rule.
- the end: the Processes box's closing rule; nothing follows it (a second table's banner there is
  two runs in one file, other text is "not read: N lines after the end", :mod:`sncheck.vendors.after_end`).
- failures printed instead of the table: ``NVIDIA-SMI has failed because it couldn't
  communicate with the NVIDIA driver``, ``No devices were found``, ``Unable to determine the
  device handle for GPU... : Unknown Error`` / ``GPU is lost`` (a GPU fallen off the bus, with
  the table for the others), ``Failed to initialize NVML: Driver/library version mismatch``.

An excerpt that starts inside the GPU table (a reporter's paste without the banner and header)
is read from its first whole GPU block on: its GPUs as printed, ``errors`` saying the head is cut.
An excerpt of the ``| MIG devices: |`` box alone (nvitop-PR 8, harvest 16: no banner, no GPU
block) is nvidia-smi's too: no GPUs, ``errors`` saying the GPU table is not in it.

Whole: the GPU table closed by its ``+---+`` rule and every GPU block with its second line,
then the ``Processes:`` box, closed (nvidia-smi prints it under every table, ``No running
processes found`` when none: a paste that ends at the GPU table's rule was cut there). Failures (exit 1): the failure lines, ``ERR!`` in a
GPU's cells, a volatile uncorrected ECC count above zero.

JSON: ``{"tool": "nvidia-smi", "nvidia_smi_version", "driver_version", "cuda_version",
"gpus": [{"index", "name", "persistence_mode", "driver_model" (Windows' TCC/WDDM column), "bus_id", "display_active", "ecc_uncorrected",
"fan", "temp_C", "perf", "power_W", "power_cap_W", "memory_used_MiB", "memory_total_MiB",
"util_pct", "compute_mode", "mig_mode"}], "processes": [{"gpu", "gi", "ci", "pid", "type",
"name", "memory_MiB"}], "unreachable": [{"bus_id", "reason"}] (a GPU nvidia-smi could not
get a handle for), "faults", "errors"}``.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end

TOOL = "nvidia-smi"
# driver 610 renamed them: 'KMD Version: 610.57.04   CUDA UMD Version: 13.3'
# (a terminal that wrapped the banner leaves a run of spaces after a label's colon: harvest 29's 550.54.14)
_VERSIONS = re.compile(r"NVIDIA-SMI (?P<smi>[\d.]+)\s+(?:Driver|KMD) Version:\s+(?P<drv>[\d.]+)"
                       r"(?:\s+CUDA (?:UMD )?Version:\s+(?P<cuda>[\d.]+|N/A))?")
# the first cell's last word: Linux's Persistence-M (On/Off), or on Windows the driver model the header's
# 'TCC/WDDM' column names (WDDM, TCC; MCDM on the drivers that offer it)
_DRIVER_MODELS = ("TCC", "WDDM", "MCDM")
_FIRST = re.compile(r"^(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<pm>On|Off|N/A|ERR!|TCC|WDDM|MCDM)$")
_BUS = re.compile(r"^(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(?P<disp>On|Off|N/A|ERR!)$")
_SECOND = re.compile(r"^(?P<fan>\d+%|N/A|ERR!)\s+(?P<temp>\d+C|N/A|ERR!)\s+(?P<perf>P\d+|N/A|ERR!)\s+(?:\S+\s+)?"
                     r"(?P<pw>\d+(?:\.\d+)?W|N/A|ERR!)\s*/\s*(?P<cap>\d+(?:\.\d+)?W|N/A|ERR!)$")
_MEMORY = re.compile(r"^(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB$")
_UTIL = re.compile(r"^(?P<util>\d+%|N/A|ERR!)\s+(?P<mode>.+)$")
_PROCESS = re.compile(r"^(?P<gpu>\d+)\s+(?:(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+)?(?P<pid>\d+)\s+(?P<type>C\+G|[CG])\s+"
                      r"(?P<name>.*?)\s+(?P<mem>\d+MiB|N/A)$")
# "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error" (older drivers print a
# blank after "GPU"), "...: GPU is lost. Reboot the system to recover this GPU"
_LOST = re.compile(r"Unable to determine the device handle for GPU ?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
                   r"[0-9A-Fa-f]{2}\.[0-7]): (?P<why>.*)$")
_FAILURES = ("NVIDIA-SMI has failed", "No devices were found", "Unable to determine the device handle",
             "GPU is lost", "Failed to initialize NVML", "Driver/library version mismatch")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(v: str | None, unit: str = "") -> float | int | None:
    if v is None or not v.endswith(unit):
        return None
    v = v[: len(v) - len(unit)] if unit else v
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return None


def _fault(line: str, data: dict[str, Any]) -> bool:
    """Whether ``line`` is one of nvidia-smi's failure lines; kept in ``data``'s faults (and the
    GPU it could not reach, with why, in its unreachable) where it is."""
    if not any(f in line for f in _FAILURES):
        return False
    data["faults"].append(line.strip("| ")[:300])
    if m := _LOST.search(line):  # which GPU nvidia-smi could not reach, and why
        data["unreachable"].append({"bus_id": m["bus"], "reason": m["why"].strip()})
    return True


def parse_smi_table(text: str) -> dict[str, Any]:
    """The plain ``nvidia-smi`` output (see the module)."""
    data: dict[str, Any] = {"tool": TOOL, "nvidia_smi_version": None, "driver_version": None, "cuda_version": None,
                            "gpus": [], "processes": [], "unreachable": [], "faults": [], "errors": []}
    gpus, errors, faults = data["gpus"], data["errors"], data["faults"]
    section = None          # None, "gpus", "mig", "processes"
    gpu_table_closed = processes_closed = processes_seen = False
    block: list[list[str]] = []
    headless = False        # an excerpt that starts inside the GPU table: no banner, no header
    mig_box = False         # the '| MIG devices: |' box's title line
    lines = after_end.numbered(text)  # each line with its number as the file counts it (the one count)
    after: list[tuple[int, str]] = []  # what follows the closed Processes box, nvidia-smi's last line (numbered)
    for i, (_, raw) in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if processes_closed and section is None:
            # (a failure line there is still nvidia-smi's: a GPU it lost, printed after the table)
            after = [(k, ln) for k, ln in lines[i:] if not _fault(ln.strip(), data)]
            break
        if _fault(line, data):
            continue
        if m := _VERSIONS.search(line):
            data["nvidia_smi_version"], data["driver_version"] = m["smi"], m["drv"]
            data["cuda_version"] = m["cuda"] if m["cuda"] != "N/A" else None
            continue
        if line.startswith("|=") and line.rstrip("|").strip("|=+").strip() == "":
            if section is None and data["driver_version"] is not None and not gpus and not gpu_table_closed:
                section = "gpus"
            continue
        if line.startswith("+-") or line.startswith("|-"):
            if section == "gpus":
                _close_block(block, gpus, errors)
                block = []
                gpu_table_closed = line.startswith("+-")  # closed, unless another block follows
            elif section == "processes" and line.startswith("+-"):
                processes_closed, section = True, None
            continue
        if "Processes:" in line:
            if section == "gpus":
                _close_block(block, gpus, errors)
                block = []
            section, processes_closed, processes_seen = "processes", False, True
            continue
        if "MIG devices:" in line:
            mig_box = mig_box or (line.startswith("|") and line.endswith("|"))
            if section == "gpus":
                _close_block(block, gpus, errors)
                block = []
            section = "mig"
            continue
        if section is None and not gpus and data["driver_version"] is None and line.startswith("|") \
                and len(cells := _cells(line)) == 3 and _FIRST.match(cells[0]) and _BUS.match(cells[1]):
            section = "gpus"  # a GPU block's first line with no banner above it: the paste starts here
            headless = True
        if section == "gpus" and line.startswith("|"):
            cells = _cells(line)
            if len(cells) == 3 and _FIRST.match(cells[0]) and block:
                _close_block(block, gpus, errors)  # an old layout's blocks are not always ruled apart
                block = []
            block.append(cells)
            gpu_table_closed = False
        elif section == "processes" and line.startswith("|") and (m := _PROCESS.match(_cells(line)[0])):
            data["processes"].append({"gpu": int(m["gpu"]), "gi": m["gi"], "ci": m["ci"], "pid": int(m["pid"]),
                                      "type": m["type"], "name": m["name"], "memory_MiB": _num(m["mem"], "MiB")})
    if block and section == "gpus":
        _close_block(block, gpus, errors)
    if data["driver_version"] is None and not faults and not gpus:
        if not mig_box:
            raise ParseError("no 'NVIDIA-SMI ... Driver Version:' line and no nvidia-smi failure line", tool=TOOL)
        errors.append("no 'NVIDIA-SMI ... Driver Version:' banner and no GPU block: the MIG devices table alone "
                      "(an excerpt)")
    if headless:
        errors.insert(0, "no 'NVIDIA-SMI ... Driver Version:' banner: the output starts inside the GPU table (an excerpt)")
    if (data["driver_version"] is not None or headless) and not gpu_table_closed and not faults:
        errors.append("the GPU table is not closed by its +---+ rule: cut short")
    if section == "processes" and not processes_closed:
        errors.append("the Processes table is not closed: cut short")
    if data["driver_version"] is not None and gpu_table_closed and not processes_seen and not faults:
        errors.append("no Processes box after the GPU table (nvidia-smi always prints one): cut short")
    errors += after_end.judge(after, TOOL, lambda ln: bool(_VERSIONS.search(ln)))  # a second table: two runs
    for g in gpus:
        bad = [k for k, v in g.items() if v == "ERR!"]
        if bad:
            faults.append(f"GPU {g['index']} ({g['bus_id']}): nvidia-smi could not read {', '.join(bad)} (ERR!)")
        if isinstance(g["ecc_uncorrected"], int) and g["ecc_uncorrected"] > 0:
            faults.append(f"GPU {g['index']} ({g['bus_id']}): {g['ecc_uncorrected']} volatile uncorrected ECC errors")
    return data


def _close_block(block: list[list[str]], gpus: list[dict[str, Any]], errors: list[str]) -> None:
    """One GPU's lines -> its record (a block that is not a GPU's is left alone)."""
    if not block or len(block[0]) != 3:
        return
    if not (first := _FIRST.match(block[0][0])):
        if re.match(r"^\d+\s+\S", block[0][0]) and _BUS.match(block[0][1]):
            # a GPU's first line (its index, its bus id) in a layout this grammar does not hold: the GPU is
            # there and not read, never a table of no GPU
            errors.append(f"GPU {block[0][0].split()[0]}: its block's first cell is none the grammar knows "
                          f"({block[0][0]!r}): the GPU was not read")
        return
    bus = _BUS.match(block[0][1])
    ecc = block[0][2]
    model = first["pm"] in _DRIVER_MODELS  # Windows: the cell is the driver model, there is no Persistence-M
    g: dict[str, Any] = {"index": int(first["index"]), "name": first["name"],
                         "persistence_mode": None if model else first["pm"],
                         "driver_model": first["pm"] if model else None,
                         "bus_id": bus["bus"] if bus else block[0][1] or None,
                         "display_active": bus["disp"] if bus else None,
                         "ecc_uncorrected": int(ecc) if ecc.isdecimal() else ecc or None,
                         "fan": None, "temp_C": None, "perf": None, "power_W": None, "power_cap_W": None,
                         "memory_used_MiB": None, "memory_total_MiB": None, "util_pct": None, "compute_mode": None,
                         "mig_mode": None}
    gpus.append(g)
    if len(block) < 2 or len(block[1]) != 3:
        errors.append(f"GPU {g['index']}: its block ends after the first line: cut short")
        return
    second, memory, util = block[1]
    if m := _SECOND.match(second):
        g.update(fan=m["fan"], temp_C=_num(m["temp"], "C") if m["temp"] not in ("N/A", "ERR!") else m["temp"],
                 perf=m["perf"], power_W=_num(m["pw"], "W") if m["pw"] not in ("N/A", "ERR!") else m["pw"],
                 power_cap_W=_num(m["cap"], "W") if m["cap"] not in ("N/A", "ERR!") else m["cap"])
    if m := _MEMORY.match(memory):
        g.update(memory_used_MiB=int(m["used"]), memory_total_MiB=int(m["total"]))
    if m := _UTIL.match(util):
        g.update(util_pct=_num(m["util"], "%") if m["util"] not in ("N/A", "ERR!") else m["util"],
                 compute_mode=m["mode"])
    if len(block) > 2 and len(block[2]) == 3 and block[2][2]:
        g["mig_mode"] = block[2][2]
