"""Parse nvidia-smi output: ``--query-gpu`` CSV, ``topo -m``, ``nvlink -s``, ``nvlink -e`` (``-q``: smi_query).

Every function returns a dict with an ``errors`` list (tool error text, truncation) and
raises ``ParseError`` only when the text holds nothing it recognises. ``N/A``-style
values become null; nothing missing is guessed. The JSON shapes:

``parse_query_gpu_csv`` (``nvidia-smi-query-gpu``)::

    {"tool": "nvidia-smi-query-gpu", "fields": ["index", "name", ...],
     "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory.total": 81559, ...}],
     "errors": []}

  Numeric fields are numbers with the unit dropped (MiB, W, MHz, %, C); Yes/No are booleans.

``parse_topo`` (``nvidia-smi-topo``)::

    {"tool": "nvidia-smi-topo", "gpus": ["GPU0", "GPU1"],
     "nics": [{"name": "NIC0", "device": "mlx5_0"}],          # device null without a NIC legend
     "matrix": {"GPU0": {"GPU0": "X", "GPU1": "NV18", "NIC0": "SYS"}, "NIC0": {...}},
     "affinity": {"GPU0": {"cpu": "0-51,104-155", "numa": 0, "gpu_numa_id": null}},
     "errors": []}

``parse_nvlink_status`` (``nvlink-status``)::

    {"tool": "nvlink-status",
     "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-...",
               "links": [{"link": 0, "active": true, "speed_GBps": 25.0}],  # inactive: false, null
               "errors": []}],                      # e.g. "NVML: Unable to retrieve NVLink ..."
     "errors": []}                                  # the same messages, prefixed "GPU n: "

  Empty output (a GPU without NVLink prints nothing) gives ``gpus: []``.

``parse_nvlink_errors`` (``nvlink-errors``)::

    {"tool": "nvlink-errors",
     "gpus": [{"index": 0, "name": ..., "uuid": ...,
               "links": [{"link": 0, "counters": {"replay_errors": 0, "recovery_errors": 0,
                                                  "crc_errors": 0}}]}],
     "errors": []}

``parse_query`` (``nvidia-smi-q``): see :mod:`sncheck.vendors.nvidia.smi_query`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import listing
from sncheck.vendors.nvidia.smi_select import pasted_command
from sncheck.vendors.nvidia.smi_values import (
    ELISION,
    NA_VALUES,
    TOOL_ERROR,
    as_number,
    int_or_none,
    na_or,
)

QUERY_GPU_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.total",
    "driver_version",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "temperature.gpu",
    "power.draw",
    "ecc.errors.uncorrected.volatile.total",
)

_NUMERIC_FIELD_PREFIXES = (
    "index",
    "count",
    "memory.",
    "pcie.link.",
    "temperature.",
    "power.",
    "enforced.power",
    "clocks.",
    "utilization.",
    "ecc.errors.",
    "retired_pages.",
    "remapped_rows.",
    "fan.speed",
)
_NUMBER_WITH_UNIT = re.compile(r"^([+-]?[0-9]+(?:\.[0-9]+)?)\s*(?:[A-Za-z%/()]+)?$")
_NUMBERISH = re.compile(r"[0-9]|nan|inf", re.IGNORECASE)  # a numeric field's cell that tries to be a number
_GPU_LINE = re.compile(r"^GPU\s+([0-9]+):\s*(.*?)(?:\s*\(UUID:\s*([^)]*)\))?\s*$")
_LINK_STATUS = re.compile(r"^Link\s+([0-9]+):\s*(.*?)\s*$")
_LINK_COUNTER = re.compile(r"^Link\s+([0-9]+):\s*([^:]+?)\s*:\s*(\S+)\s*$")
_SPEED = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*GB/s$")
# what nvlink -s prints for a link besides its speed: '<inactive>' (a word in angle brackets), N/A
_STATE_WORD = re.compile(r"<[^<>]+>|N/A")



# --------------------------------------------------------------------------- query-gpu CSV


def query_gpu_command(
    fields: tuple[str, ...] | list[str] = QUERY_GPU_FIELDS,
) -> list[str]:
    """The argv that produces what ``parse_query_gpu_csv(text, fields)`` reads."""
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]


def parse_query_gpu_csv(
    text: str, fields: tuple[str, ...] | list[str] = QUERY_GPU_FIELDS
) -> dict[str, Any]:
    """Parse ``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]``.

    A header row, when present, names the fields and wins over ``fields``; a pasted command line
    above it (``# nvidia-smi --query-gpu ...``) is the reporter's, not a row.
    """
    names = list(fields)
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    # (a reporter's '...' is skipped: listing.elided says so, once, with its line)
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not listing.is_elision(ln) and not pasted_command(ln)]
    recognised = False  # a header, a row or the tool's own error line: the text is nvidia-smi's
    for number, line in enumerate(lines, start=1):
        cells = [c.strip() for c in next(csv.reader([line], skipinitialspace=True), [])]
        if TOOL_ERROR.search(line):
            errors.append(line)
            recognised = True
        elif number == 1 and _is_csv_header(cells, names):
            names = [re.sub(r"\s*\[.*\]$", "", c) for c in cells]
            recognised = True
        elif len(cells) != len(names):
            errors.append(
                f"line {number}: {len(cells)} values for {len(names)} fields: {line[:200]!r}"
            )
        else:
            row = {}
            for n, c in zip(names, cells):
                row[n], why = _query_value(n, c)
                if why:
                    errors.append(f"line {number}: {n} {c[:40]!r} {why}")
            gpus.append(row)
    if not gpus and not recognised:  # any file (withheld.py): ParseError, its lines not quoted
        raise ParseError(
            "no GPU rows in the --query-gpu CSV"
            + (f" (no line holds its {len(names)} fields: {', '.join(names)})" if errors else ""),
            tool="nvidia-smi-query-gpu",
        )
    return {
        "tool": "nvidia-smi-query-gpu",
        "fields": names,
        "gpus": gpus,
        "errors": errors,
    }


def _is_csv_header(cells: list[str], names: list[str]) -> bool:
    """``index, name, memory.total [MiB]`` (``--format=csv`` without ``noheader``)."""
    bare = []
    for c in cells:  # one at a time: the first cell that is not a field name ends it (a 1 MB row of commas)
        b = re.sub(r"\s*\[.*\]$", "", c)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", b):
            return False
        bare.append(b)
    return any(b in names or "." in b or "_" in b for b in bare)


def _signed(field_name: str) -> bool:
    """The numeric fields nvidia-smi prints with a sign: the clock offsets (clocks.*) and the
    T.Limit margins (temperature.gpu.tlimit and the *tlimit* thresholds: degrees below the slowdown
    limit, negative exactly while the GPU throttles; -q's <gpu_temp_slow_tlimit_threshold>-2 C,
    fixtures/real/harvest8). reviews14 #7: a throttling GPU's '-3' read as no value, exit 1."""
    return field_name.startswith("clocks.") or "tlimit" in field_name


def _query_value(field_name: str, raw: str) -> tuple[Any, str | None]:
    """A cell's value, and why it is none nvidia-smi prints (then null): a numeric field is an
    unsigned decimal (%d, %.2f) with its unit, or [N/A]; a negative one (clock offsets and T.Limit
    margins aside: :func:`_signed`), NaN, an exponent or an infinity is no reading (hostile round 18: '-60.10 W' and 'nan' were kept)."""
    if raw in NA_VALUES or (raw.startswith("[") and raw.endswith("]")):
        return None, None  # "[N/A]", "[Not Supported]", "[Requested functionality has been deprecated]"
    if raw in ("Yes", "No"):
        return raw == "Yes", None
    if field_name.startswith(_NUMERIC_FIELD_PREFIXES):
        m = _NUMBER_WITH_UNIT.match(raw)
        if m and (not m.group(1).startswith("-") or _signed(field_name)):
            return as_number(m.group(1)), None
        if m or _NUMBERISH.search(raw):
            return None, "is no value nvidia-smi prints (an unsigned decimal with its unit, or [N/A]): not read"
    return raw, None


# --------------------------------------------------------------------------- topo -m


def parse_topo(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi topo -m``: the link-type matrix, NIC legend and affinities."""
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if _is_topo_header(ln)), None)
    if header_at is None:
        said = [ln.strip() for ln in lines if TOOL_ERROR.search(ln)]
        if said:  # nvidia-smi's own failure ('NVIDIA-SMI has failed ...'): a finding, not unreadable text
            return {"tool": "nvidia-smi-topo", "gpus": [], "nics": [], "matrix": {}, "affinity": {}, "errors": said}
        raise ParseError("no 'GPU0 GPU1 ...' header row found", tool="nvidia-smi-topo")
    devices, labels = _topo_columns(lines[header_at])
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, Any]] = {}
    legend: dict[str, str] = {}
    errors: list[str] = []
    stray: list[str] = []
    for line in lines[header_at + 1 :]:
        tokens = line.split()
        if not tokens:
            continue
        if m := re.match(r"^\s*(NIC[0-9]+):\s*(\S+)\s*$", line):
            legend[m.group(1)] = m.group(2)
        elif tokens[0] in devices:
            # nvidia-smi separates the cells by tabs: read by them where the paste kept them, so an
            # empty cell (a CPU Affinity nvidia-smi left blank) stays a cell and two cells a paste
            # joined ('PIXNODE') are one cell, no link type
            parts = [c.strip() for c in line.lstrip().split("\t")] if "\t" in line else tokens
            cells = parts[1 : 1 + len(devices)]
            if len(cells) < len(devices):
                errors.append(f"row {tokens[0]}: {len(cells)} of {len(devices)} cells")
            if joined := [f"{c!r} under {d}" for d, c in zip(devices, cells) if not _LINK.match(c)]:
                errors.append(f"row {tokens[0]}: {', '.join(joined[:3])} is no link type: cells the paste joined "
                              "or lost, the row is not whole")
            matrix[tokens[0]] = dict(zip(devices, cells))
            if tokens[0].startswith("GPU"):
                affinity[tokens[0]] = _topo_affinity(labels, parts[1 + len(devices) :], tabs="\t" in line)
                cpu = affinity[tokens[0]]["cpu"]
                if cpu is not None and not _CPU_LIST.match(cpu):
                    errors.append(f"{tokens[0]}'s CPU Affinity {cpu!r} is no CPU list (N-M,...): "
                                  "the paste lost characters")
        elif re.match(r"^(?:GPU|NIC)[0-9]+$", tokens[0]) and len(tokens) > 1 and _LINK.match(tokens[1]):
            # a row for a device the header lacks: its columns were cropped from the paste
            # (harvest 9's H800 topo: NIC rows under a header of GPU columns only)
            stray.append(tokens[0])
            matrix[tokens[0]] = dict(zip(devices, tokens[1 : 1 + len(devices)]))
        elif TOOL_ERROR.search(line):
            errors.append(line.strip())
    if stray:
        errors.append(f"rows for {', '.join(stray[:4])}{' ...' if len(stray) > 4 else ''} that the header has no "
                      "column for: the paste lost columns")
    if not matrix:
        errors.append("header row without any device rows")
    errors += _topo_cut_short(lines[header_at + 1 :], devices, matrix, legend)
    return {
        "tool": "nvidia-smi-topo",
        "gpus": [d for d in devices if re.match(r"^GPU[0-9]+$", d)],
        "nics": [
            {"name": d, "device": legend.get(d)}
            for d in devices
            if not re.match(r"^GPU[0-9]+$", d)
        ],
        "matrix": matrix,
        "affinity": affinity,
        "errors": errors,
    }


# a matrix cell: X on itself, a PCIe path or NV# (bonded NVLinks)
_LINK = re.compile(r"^(?:X|SYS|NODE|PHB|PXB|PIX|NV[0-9]+)$")
# topo -m's CPU Affinity: the GPU's CPUs as a list of ranges (0-47,96-143) or single CPUs
_CPU_LIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")


def _topo_cut_short(lines: list[str], devices: list[str], matrix: dict, legend: dict) -> list[str]:
    """A row for every device in the header; a Legend, once begun, runs to its last entry
    (``PIX``, then ``NV#`` when the matrix has NVLink cells) and names every NIC column."""
    out = []
    missing = [d for d in devices if d not in matrix]
    if matrix and missing:
        out.append(f"no matrix row for {', '.join(missing[:4])}: output cut short")
    text = "\n".join(lines)
    if re.search(r"^\s*Legend:\s*$", text, re.MULTILINE):  # not the 'NIC Legend:' alone
        nvlink = any(str(c).startswith("NV") for row in matrix.values() for c in row.values())
        last = "NV#" if nvlink else "PIX"
        if not re.search(rf"^\s*{re.escape(last)}\s*=", text, re.MULTILINE):
            out.append(f"the Legend stops before its '{last}' entry: output cut short")
        nics = [d for d in devices if d.startswith("NIC")]
        if nics and [n for n in nics if n not in legend]:
            out.append(f"the NIC Legend lacks {', '.join(n for n in nics if n not in legend)}: output cut short")
    elif matrix and not missing:
        # topo -m and -mp print their Legend after every matrix (and a NIC Legend naming each
        # NIC column): a matrix without it is an excerpt or a cut
        out.append("no Legend follows the matrix (topo -m prints one under every matrix): output cut short")
    return out


def _is_topo_header(line: str) -> bool:
    """``GPU0 GPU1 ... CPU Affinity``; the GPU0 data row differs by its ``X`` cell."""
    tokens = line.split()
    return (
        bool(tokens) and tokens[0] == "GPU0" and (len(tokens) == 1 or tokens[1] != "X")
    )


def _topo_columns(header: str) -> tuple[list[str], list[str]]:
    """Device column names, then the affinity labels ("CPU Affinity", "NUMA Affinity", ...)."""
    tokens = header.split()
    cut = next(
        (i for i, t in enumerate(tokens) if t in ("CPU", "NUMA", "GPU")), len(tokens)
    )
    labels = re.findall(
        r"CPU Affinity|NUMA Affinity|GPU NUMA ID", " ".join(tokens[cut:])
    )
    return tokens[:cut], labels


def _topo_affinity(labels: list[str], values: list[str], tabs: bool = False) -> dict[str, Any]:
    """A GPU row's affinity cells. Read by tabs, an empty cell is that label's (null) and the GPU
    NUMA ID is the last cell: nvidia-smi prints two tabs before it ('0-47,96-143\t0\t\tN/A')."""
    keys = {
        "CPU Affinity": "cpu",
        "NUMA Affinity": "numa",
        "GPU NUMA ID": "gpu_numa_id",
    }
    result: dict[str, Any] = {"cpu": None, "numa": None, "gpu_numa_id": None}
    if tabs and "GPU NUMA ID" in labels and len(values) > len(labels):
        values = values[: len(labels) - 1] + [next((v for v in reversed(values) if v), "")]
    for label, value in zip(labels, values):
        if not value:
            continue  # a blank cell: nothing printed there
        key = keys[label]
        result[key] = na_or(value, int if key != "cpu" and value.isdecimal() else str)
    return result


# --------------------------------------------------------------------------- nvlink -s / -e


def parse_nvlink_status(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi nvlink -s``: per GPU, each link's speed or inactive state (``Link N: S GB/s``,
    ``Link N: <inactive>``: any other state, ``Link 17:`` or ``Link 17: 53.1``, is its line cut short, an
    error and no link; so is a lone ``GPU 6``, a GPU's line cut: cuts15). ``faults``
    names what the host facts' nvlink check fails too (gpu_checks): a link ``<inactive>``
    among listed links (not on a PCIe board: :func:`pcie_board`), or slower than the fastest link
    the output lists."""
    gpus, errors = _nvlink_blocks(text, _status_link, tool="nvlink-status")
    for g in gpus:  # a link line whose state is cut ('Link 17:', 'Link 17: 53.1'): an error, never a state
        errors += [f"GPU {g['index']}: '{ln['cut']}' is no link state nvidia-smi prints: its line is cut short"
                   for ln in g["links"] if "cut" in ln]
        g["links"] = [ln for ln in g["links"] if "cut" not in ln]
    top = max((ln["speed_GBps"] for g in gpus for ln in g["links"] if ln.get("speed_GBps")), default=None)
    faults = [f"GPU {g['index']} link {ln['link']} inactive" for g in gpus for ln in g["links"]
              if not ln["active"] and not pcie_board(g.get("name"))]
    faults += [f"GPU {g['index']} link {ln['link']} at {ln['speed_GBps']:g} GB/s (others {top:g} GB/s)"
               for g in gpus for ln in g["links"]
               if top is not None and ln.get("speed_GBps") is not None and ln["speed_GBps"] < top * 0.99]
    bridged, peer = bridged_ups(gpus)
    faults += [f"GPU {gpus[i]['index']}: {n} links up, its bridged peer {peer}" for i, n in bridged.items() if n < peer]
    return {"tool": "nvlink-status", "gpus": gpus, "faults": faults, "errors": errors + _links_cut_short(gpus)}


# A PCIe board (H100 PCIe, A100-PCIE-40GB, A100 80GB PCIe) has NVLink only through NVLink bridges to
# one other board (NVIDIA's product briefs: up to 3 bridges, 12 links, 600 GB/s), and nvidia-smi lists
# every link of its chip: the links no bridge wires (6 of an H100 PCIe's 18 always, all without a
# bridge: NVML's all-inactive line) are inactive by design. Decided in harvest 12 from `nvidia-smi
# nvlink -s` ('Display link state (active/inactive)') and those briefs: an inactive link of a PCIe
# board is the platform's normal, not a fault; an active link slower than the others still is.
# nvidia-smi names some PCIe boards without 'PCIe': the H100 NVL and H200 NVL (their briefs: PCIe
# Gen5 cards, NVLink through 2- or 4-way bridges; 'NVIDIA H100 NVL' as thamada/nvidia-smi's capture
# prints it; 'NVL' alone, never the rack's 'NVL72'), the A40 and A30 (PCIe only, NVLink bridge).
_PCIE_BOARD = re.compile(r"\bPCI[Ee]\b|-PCIE-|\bNVL\b|\bA[34]0\b")
_ALL_INACTIVE = re.compile(r"Unable to retrieve NV[Ll]ink information as all links are in[Aa]ctive")


def pcie_board(name: str | None) -> bool:
    """Whether ``name`` (nvidia-smi's product name) is a PCIe board: its NVLink, if any, a bridge pair's."""
    return bool(_PCIE_BOARD.search(name or ""))


def bridged_ups(gpus: list[dict[str, Any]]) -> tuple[dict[int, int], int]:
    """The links up of each bridged PCIe board (by its place in ``gpus``: a PCIe board with any link
    up; one with none has no bridge) and the most any of them has up. A bridge joins two boards: each
    bridged board has as many links up as the most any has, fewer is a broken bridge link."""
    ups = {i: sum(1 for ln in g["links"] if ln.get("active")) for i, g in enumerate(gpus) if pcie_board(g.get("name"))}
    bridged = {i: n for i, n in ups.items() if n}
    return bridged, max(bridged.values(), default=0)


# Links nvidia-smi lists for a board (it lists every link, an unused one as <inactive>).
_LINKS_OF = ((re.compile(r"\b(?:H100 80GB HBM3|H100-SXM|H200|H20|B200|B300|GB200|GB300)\b"), 18),
             (re.compile(r"\bA100-SXM"), 12), (re.compile(r"\bV100-SXM2"), 6))


def _links_cut_short(gpus: list[dict[str, Any]], gaps: bool = True) -> list[str]:
    """nvlink -s and -e have no end marker: a cut shows as a GPU with fewer links than its board has,
    than the GPUs before it list, or with a gap in its link numbers."""
    out = []
    most = max((len(g["links"]) for g in gpus), default=0)
    for g in gpus:
        if g["errors"] or g.get("nvml"):
            continue  # "Unable to retrieve NVLink information": said already, no links to count
        ids = [link["link"] for link in g["links"]]
        want = next((n for pattern, n in _LINKS_OF if pattern.search(g.get("name") or "")), None)
        if not ids:  # a GPU's line is followed by its links or NVML's line: a GPU without NVLink prints none
            out.append(f"GPU {g['index']}: its line with no link and no NVML line after it: output cut short")
        elif ids != list(range(len(ids))):
            if not gaps:
                continue
            out.append(f"GPU {g['index']}: links {ids[:3]}... are not numbered 0..n-1: output cut or spliced")
        elif want is not None and len(ids) < want:
            out.append(f"GPU {g['index']}: {len(ids)} of the {want} links a {g['name']} has: output cut short")
        elif len(ids) < most:
            out.append(f"GPU {g['index']}: {len(ids)} links where other GPUs list {most}: output cut short")
    return out


# What nvlink -e prints per link: Replay/Recovery/CRC Errors (drivers 418 to 580), or NVLink 5's
# counters (Blackwell, driver 595: nvidia_smi_grammar). Not faults by their value: the FEC
# histogram (bucket 0 counts the codewords that needed no correction: billions on a healthy
# link), the pre-FEC raw lane counters, the BER floats and traffic counts.
_NOT_FAULTS = re.compile(r"^(?:fec_errors_\d+|raw_\w+|\w+_ber|[tr]x_(?:packets|bytes))$")
_OLD_COUNTERS = ("replay_errors", "recovery_errors", "crc_errors")
# Every counter name the grammar lists (nvidia_smi_grammar, nvlink-errors: the printed name in
# snake case), the old three and NVLink 5's: the names a rule's ``counters`` may give.
NVLINK_COUNTERS = (*_OLD_COUNTERS, "malformed_packet_errors", "buffer_overrun_errors", "rx_errors",
                   "rx_remote_errors", "rx_general_errors", "local_link_integrity_errors", "tx_discards",
                   "link_recovery_successful_events", "link_recovery_failed_events",
                   "total_link_recovery_events", "effective_errors", "effective_ber", "symbol_errors",
                   "symbol_ber", *(f"fec_errors_{b}" for b in range(16)), "raw_ber_lane_0", "raw_ber_lane_1",
                   "raw_ber_total", "raw_errors_lane_0", "raw_errors_lane_1")


def parse_nvlink_errors(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi nvlink -e``: per GPU, per link error counters. ``faults`` names
    every error counter above zero (``sncheck parse`` exits 1 on them; a run judges how much
    they grew, see sncheck.health.fabric)."""
    gpus, errors = _nvlink_blocks(text, _counter_link, tool="nvlink-errors")
    for gpu in gpus:
        gpu["links"] = _merge_counter_links(gpu["links"])
    faults = [f"GPU {g['index']} link {ln['link']} {name}={value}" for g in gpus for ln in g["links"]
              for name, value in sorted(ln["counters"].items())
              if isinstance(value, int) and value > 0 and not _NOT_FAULTS.match(name)]
    # like nvlink -s, nvlink -e lists every link of the board and has no end marker (a capture
    # whose author elided links, "[...]": the links it shows are read, and the output is not
    # whole, one error per output from listing.elided, the one home of that judgement)
    return {"tool": "nvlink-errors", "gpus": gpus, "faults": faults,
            "errors": errors + _links_cut_short(gpus, gaps=False) + _counters_cut_short(gpus)}


def _counters_cut_short(gpus: list[dict[str, Any]]) -> list[str]:
    """Every link prints the same counters: the three of drivers to 580 (Replay, Recovery, CRC),
    or, on NVLink 5, every counter the first link lists. A link short of them was cut."""
    first = next((list(ln["counters"]) for g in gpus for ln in g["links"]), [])
    want = list(_OLD_COUNTERS) if set(first) & set(_OLD_COUNTERS) else first
    for g in gpus:
        for ln in g["links"]:
            lacking = [c for c in want if c not in ln["counters"]]
            if lacking:
                return [f"GPU {g['index']} link {ln['link']}: no {lacking[0]}, which every link prints: cut short"]
    return []


def _nvlink_blocks(
    text: str, parse_link: Callable[[str], dict[str, Any] | None], tool: str
) -> tuple[list[dict[str, Any]], list[str]]:
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or ELISION.match(line):
            continue
        if m := _GPU_LINE.match(line):
            gpus.append(
                {
                    "index": int(m.group(1)),
                    "name": m.group(2) or None,
                    "uuid": m.group(3),
                    "links": [],
                    "errors": [],
                }
            )
            if "(UUID:" in (m.group(2) or ""):  # nvidia-smi prints 'GPU %d: %s (UUID: %s)': its ')' is gone
                errors.append(f"the line of GPU {m.group(1)} ends inside its '(UUID: ...)': cut or wrapped, not whole")
            continue
        link = parse_link(line)
        if re.fullmatch(r"G(?:P(?:U(?: \d*)?)?)?", line):  # a GPU's 'GPU n: NAME (UUID: ...)' line cut short
            errors.append(f"'{line}': a GPU's line cut short (its links lost)")
        elif link is not None and gpus:
            gpus[-1]["links"].append(link)
        elif TOOL_ERROR.search(line):
            if gpus:
                gpus[-1]["errors"].append(line)
            errors.append(f"GPU {gpus[-1]['index']}: {line}" if gpus else line)
    if not gpus and not errors and text.strip():
        raise ParseError("no 'GPU n: ...' blocks found", tool=tool)
    for g in gpus:  # a PCIe board without its NVLink bridge: NVML's all-inactive line is its normal, no error
        if pcie_board(g.get("name")) and g["errors"] and all(_ALL_INACTIVE.search(e) for e in g["errors"]):
            g["nvml"] = g["errors"].pop()
            errors = [e for e in errors if not e.startswith(f"GPU {g['index']}: ")]
    return gpus, errors


def _status_link(line: str) -> dict[str, Any] | None:
    m = _LINK_STATUS.match(line)
    if not m:
        return None
    state = m.group(2)
    speed = _SPEED.match(state)
    if speed:
        return {
            "link": int(m.group(1)),
            "active": True,
            "speed_GBps": float(speed.group(1)),
        }
    if not _STATE_WORD.fullmatch(state):  # no state nvlink -s prints: its line cut short (cuts15)
        return {"link": int(m.group(1)), "cut": line}
    inactive = "inactive" in state.lower()
    return {
        "link": int(m.group(1)),
        "active": False if inactive else None,
        "speed_GBps": None,
    }


def _counter_link(line: str) -> dict[str, Any] | None:
    m = _LINK_COUNTER.match(line)
    if not m:
        return None
    key = re.sub(r"[^a-z0-9]+", "_", m.group(2).lower()).strip("_")
    # a count, or a BER as NVML prints its float ('15e-255', the floor: effectively zero)
    return {
        "link": int(m.group(1)),
        "counters": {key: na_or(m.group(3), _float_or_none if key.endswith("_ber") else int_or_none)},
    }


def _float_or_none(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _merge_counter_links(links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``Link 0: Replay Errors`` and ``Link 0: CRC Errors`` lines -> one entry for link 0."""
    merged: dict[int, dict[str, Any]] = {}
    for link in links:
        merged.setdefault(link["link"], {"link": link["link"], "counters": {}})[
            "counters"
        ].update(link["counters"])
    return list(merged.values())


# The -q view lives in smi_query (it shares the value helpers above).
from sncheck.vendors.nvidia.smi_query import parse_query  # noqa: E402,F401
