"""``amd-smi`` with no command (amd-smi 26.x): the boxed summary of every GPU and its processes.

Layout, as amd-smi 26.0.0 to 26.2.2 print it (eight real captures: ROCm/amdsmi PR 110's Strix
Halo, an RX 6800, an RX 9070 XT, MI300X VFs, four MI355X, a Radeon 780M/890M APU)::

    +------------------------------------------------------------------------------+
    | AMD-SMI <tool version>   amdgpu version: <driver>  ROCm version: <rocm>       |
    [| VBIOS version: <vbios>                                                       |]  (26.2 on)
    | Platform: Linux Baremetal|Guest                                                |
    |-------------------------------------+----------------------------------------|
    | BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |
    | GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |
    |=====================================+========================================|
    | <BDF>                    <GPU name> | <mem %>  <temp °C>  <UEC>  <W>[/<cap>] W |  per GPU,
    |  <gpu> <hip> <oam>  <partition mode> | <gfx %>  <fan>           <used>/<total> MB |  two rows
    |-------------------------------------+----------------------------------------|  between GPUs
    +-------------------------------------+----------------------------------------+  after the last
    +------------------------------------------------------------------------------+
    | Processes:                                                                   |
    |  GPU        PID  Process Name          GTT_MEM  VRAM_MEM  MEM_USAGE     CU % |
    |==============================================================================|
    |  No running processes found  |  a row per process                            |
    +------------------------------------------------------------------------------+

N/A where the GPU does not say (a power 'N/A/1400 W', a temperature 'N/A'). UEC is the GPU's
accumulated uncorrectable ECC count (rocm-systems projects/amdsmi/amdsmi_cli/subcommands/default.py:
``amdsmi_get_gpu_total_ecc_count``'s ``uncorrectable_count``, 'uncorr_ecc'): above zero a fault
(exit 1), as ``amd-smi metric``'s ECC blocks and nvidia-smi's Volatile Uncorr. ECC. Whole: the GPU
box closed ('+---+---+' after a GPU's two rows) and the Processes box closed after its rows;
a paste ending before either is cut (an error). The GPU name is right-aligned in its cell, a
long one cut from the left ('...Instinct MI300X OAM').
"""

from __future__ import annotations

import re
from typing import Any

_BANNER = re.compile(r"^\|\s*AMD-SMI\s+(\S+)\s+amdgpu version:\s*(.*?)\s+ROCm version:\s*(\S+)\s*\|$")
_ROW1 = re.compile(r"^\|\s*([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+(.*?)\s*\|\s*(\S+(?: %)?)\s+"
                   r"(N/A|\d+(?:\.\d+)? °C)\s+(\S+)\s+(\S+?)(?: W)?\s*\|$")
_ROW2 = re.compile(r"^\|\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*\|\s*(N/A|\d+(?:\.\d+)? %)\s+(N/A|\S+(?: %)?)\s+"
                   r"(\d+|N/A)/(\d+|N/A) MB\s*\|$")
_GPU_BORDER = re.compile(r"^[|+]-+\+-+[|+]$")
_BOX = re.compile(r"^\+-+\+$")


def is_summary(text: str) -> bool:
    """Whether ``text`` holds amd-smi's boxed summary (its banner or its column header)."""
    return bool(re.search(r"^\s*\|\s*AMD-SMI \S+\s+amdgpu version:", text, re.M)
                or re.search(r"^\s*\|\s*BDF\s+GPU-Name\s*\|\s*Mem-Uti", text, re.M))


def _num(cell: str) -> float | int | None:
    m = re.match(r"^(\d+(?:\.\d+)?)", cell)
    if not m:
        return None
    return float(m.group(1)) if "." in m.group(1) else int(m.group(1))


def parse_summary(text: str) -> dict[str, Any]:
    """The summary's GPUs and processes (see the module); ``errors`` where it is cut."""
    out: dict[str, Any] = {"tool": "amd-smi", "format": "summary", "version": None, "driver_version": None,
                           "rocm_version": None, "gpus": [], "processes": [], "errors": []}
    pending: dict[str, Any] | None = None
    gpu_box_closed = in_procs = procs_closed = False
    for raw in text.splitlines():
        line = raw.strip()
        if m := _BANNER.match(line):
            out["version"], out["driver_version"], out["rocm_version"] = m.group(1), m.group(2), m.group(3)
        elif m := _ROW1.match(line):
            power, _, cap = m.group(6).partition("/")  # 'N/A/1400 W' is no power of a 1400 W cap
            if power == "N" and cap.startswith("A"):
                power, _, cap = "N/A", "", cap[2:]
            pending = {"BDF": m.group(1), "name": m.group(2), "mem_util_pct": _num(m.group(3)),
                       "temp_C": _num(m.group(4)), "uec": _num(m.group(5)), "power_W": _num(power),
                       "power_cap_W": _num(cap) if cap else None}
        elif pending is not None and (m := _ROW2.match(line)):
            out["gpus"].append({"gpu": int(m.group(1)), **pending, "hip_id": _num(m.group(2)),
                                "oam_id": _num(m.group(3)), "partition_mode": m.group(4),
                                "gfx_util_pct": _num(m.group(5)), "fan": m.group(6) if m.group(6) != "N/A" else None,
                                "mem_used_MB": _num(m.group(7)), "mem_total_MB": _num(m.group(8))})
            pending = None
        elif line.startswith("| Processes:"):
            in_procs = True
        elif in_procs and _BOX.match(line) and not line.startswith("+="):
            procs_closed = True
        elif in_procs and (m := re.match(r"^\|\s*(\d+)\s+(\d+)\s+(.*?)\s{2,}(\S+ \S?B)\s+(\S+ \S?B)\s+(\S+ \S?B)\s+"
                                         r"(\S+(?: %)?)\s*\|$", line)):
            out["processes"].append({"gpu": int(m.group(1)), "pid": int(m.group(2)), "name": m.group(3),
                                     "gtt_mem": m.group(4), "vram_mem": m.group(5), "mem_usage": m.group(6),
                                     "cu_pct": m.group(7)})
        elif _GPU_BORDER.match(line) and line.startswith("+") and out["gpus"] and not in_procs:
            gpu_box_closed = True
    if pending is not None:
        out["errors"].append(f"GPU {pending['BDF']}: its second row is missing: output cut short")
    if not out["gpus"]:
        out["errors"].append("no GPU row read from the summary: cut short or not measured")
    elif not gpu_box_closed:
        out["errors"].append("the GPU box is not closed: output cut short")
    elif not procs_closed:
        out["errors"].append("no closed Processes box after the GPUs: output cut short")
    # UEC is amdsmi_get_gpu_total_ecc_count's uncorrectable_count (subcommands/default.py 'uncorr_ecc'):
    # above zero a fault, as amd-smi metric's ECC blocks and nvidia-smi's Volatile Uncorr. ECC are judged
    out["faults"] = [f"GPU {g['gpu']} ({g['BDF']}): {g['uec']} uncorrectable ECC errors (UEC)" for g in out["gpus"]
                     if isinstance(g["uec"], (int, float)) and g["uec"] > 0]
    return out
