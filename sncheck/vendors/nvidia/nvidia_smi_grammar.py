"""The grammars of nvidia-smi's ``--query-gpu``, ``topo -m``, ``nvlink -s`` and ``nvlink -e`` views
(:mod:`sncheck.vendors.nvidia.nvidia_smi`). nvidia-smi is closed: NVIDIA's documentation (the
nvidia-smi man page, ``nvidia-smi --help-query-gpu``, ``nvidia-smi topo -h``, ``nvidia-smi nvlink
-h``) and every real capture found, not a source file."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_CAPTURES = "closed: the real captures under fixtures/real/ ({}) and tests/data"

GRAMMAR = {
    "nvidia-smi-query-gpu": Grammar(
        tool="nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]",
        versions="drivers 418 to 610 (clocks_throttle_reasons.* renamed clocks_event_reasons.* in 535; kmd_version "
                 "from 610)",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (man page 'GPU ATTRIBUTES', nvidia-smi --help-query-gpu; "
            "r470, r535, r570): the field names, the csv format and its noheader/nounits options",
            _CAPTURES.format("r3/nvidia-smi-query-gpu: 2x RTX PRO 6000 and the H100 590.48.01 all-fields query of "
                             "utkuozdemir/nvidia_gpu_exporter; harvest/nvidia-smi-query-gpu: 460.91.03 RTX 2060, "
                             "GTX 1080 Ti/1060, GTX 1080 clocks_throttle_reasons.supported; nvidia-versions: 610.57.04 RTX 2080 SUPER, every "
                             "field with kmd_version"),
        ),
        lines=("with --format=csv a header: the queried fields as nvidia-smi names them (an alias such as "
               "clocks.gr printed as clocks.current.graphics), comma+blank separated, each field with a unit "
               "followed by ' [UNIT]' (MiB, W, MHz, %, us); then one row per GPU in index order, one cell per "
               "field, comma+blank separated and never quoted: a number followed by ' UNIT' (dropped with "
               "nounits), a word (P0, Enabled, Active, Not Active, Default), an id (GPU-uuid, 00000000:18:00.0, "
               "0x...), '[N/A]', '[Not Supported]', '[Unknown Error]' or '[Requested functionality has been "
               "deprecated]' where the GPU does not say; noheader: the rows alone, their fields the command "
               "line's"),
        end="none printed: a row per GPU, so the count a judge brings (--expect N, the inventory's cards) says "
            "the listing is whole; a row with fewer cells than fields, or cut inside its last cell, is cut",
        failures=("'Field \"X\" is not a valid field to query.' (nothing else printed), 'No devices were found', "
                  "'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver ...', 'Failed to "
                  "initialize NVML: Driver/library version mismatch', 'Unable to determine the device handle for "
                  "GPU ...: GPU is lost': errors; the count of GPUs against the inventory (card_count)"),
        values=("fields (the header's names, units dropped, or the command line's), gpus[{FIELD: value}] (numbers "
                "without their unit, Yes/No as booleans, the N/A cells null, other words as printed), errors"),
    ),
    "nvidia-smi-topo": Grammar(
        tool="nvidia-smi topo -m (and -mp)",
        versions="drivers 418 to 610 (NUMA Affinity from about 450, GPU NUMA ID from 535, NIC0.. columns with a "
                 "NIC Legend from about 470: before, the NIC columns were named by their device)",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (nvidia-smi topo -h: -m the matrix, -mp PCIe paths only; "
            "the Legend's entries)",
            _CAPTURES.format("nvidia-smi-topo: H100 NV18, A10 with 2 NICs, 2x 1080 Ti, A100 NV12; r3: -mp of 2x "
                             "RTX PRO 6000, H100 590 with ANSI underline; harvest: 2x RTX 5090 tab-separated, 8 GPUs "
                             "NV8/NV18 with 9 NICs, 4x H100 NV6 with 4 NICs; nvidia-versions: 610.57.04 "
                             "RTX 2080 SUPER"),
        ),
        lines=("a header: a tab, the device columns (GPU0.., then NIC0.. or the NICs' device names), then the "
               "affinity labels 'CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID', tab-separated; a row per device: "
               "its name, a cell per column (' X ' on itself, else SYS, NODE, PHB, PXB, PIX or NV# with # the "
               "bonded links; -mp prints no NV#), then for a GPU its CPU list (0-47,96-143), NUMA node and GPU "
               "NUMA ID ('N/A' where none; 535+ prints two tabs before it, and may leave the CPU list blank: harvest 20's "
               "Della H100, '\\t\\t0\\t\\tN/A'; cells are read by their tabs where the paste kept them); a blank line, "
               "'Legend:', a blank line and its entries '  X    = Self', "
               "SYS, NODE, PHB, PXB, PIX and (-m only) '  NV#  = Connection traversing a bonded set of # "
               "NVLinks'; with NIC columns (470+) a blank line, 'NIC Legend:', a blank line and '  NICk: DEVICE' "
               "per NIC"),
        end="the Legend through its last entry (NV# under -m, PIX under -mp), then the NIC Legend naming every NIC "
            "column when there are NICs; a row for every device column before it. A -m of a host without NVLink "
            "cut right after its PIX entry reads as a whole -mp: the output cannot tell them apart",
        failures=("'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver ...' and the other "
                  "NVML lines (errors); a row short of cells, a device column without its row, a Legend cut short, "
                  "a NIC column the NIC Legend does not name (errors: cut short); a matrix cell that is no link type (two cells "
                  "a paste joined by losing a tab, harvest 20's 'PIXNODE'); a CPU Affinity that is no CPU list ('-31,64-95') "
                  "or a row for a device the header has no column for (a paste that lost characters or columns, "
                  "harvest 9's 8x H800: errors). The matrix is recorded, judged "
                  "only against a platform (topo_sanity)"),
        values=("gpus [GPU names], nics[{name, device}] (device null without a NIC Legend), matrix{row: {column: "
                "cell}} ('X' on itself), affinity{GPU: {cpu, numa, gpu_numa_id}} (null for N/A), errors"),
    ),
    "nvlink-status": Grammar(
        tool="nvidia-smi nvlink -s",
        versions="drivers 418 to 610 (V100 6 links at 25.781 GB/s, A100 12 at 25, H100/H200 18 at 26.562, "
                 "B200/GB200/GB300 18 at 53.125; 'not supported for Devices in MIG mode' on 590)",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (nvidia-smi nvlink -h: -s/--status)",
            _CAPTURES.format("nvidia-smi-nvlink: Azure azurehpc-health-checks' A100 good and bad, p4de A100, gpud's "
                             "8x A100 and A10; r3 and harvest nvlink-status; nvidia-versions: a H200 in MIG mode on "
                             "590.48.01, 610.57.04's all-inactive line"),
        ),
        lines=("per GPU in index order 'GPU N: NAME (UUID: GPU-...)' (no '(UUID: ...)' on some drivers; a line "
               "ending inside it, its ')' gone, is cut or wrapped: an error), then per "
               "link of the board, in order from 0, a line indented by a tab and a blank: 'Link K: S GB/s' (S a "
               "decimal: 25.781, 25, 26.562, 53.125) or 'Link K: <inactive>'; a GPU without NVLink prints nothing "
               "(the whole output empty on an A10)"),
        end="none printed: every GPU lists every link its board has (6, 12 or 18 by its name), so a GPU with fewer "
            "links than its board, than the GPUs before it, or with a gap in its link numbers is cut, and a GPU's "
            "line with neither a link nor NVML's line under it is cut (a GPU without NVLink prints no line); the GPUs "
            "against the judge's count (--expect N, the inventory's cards)",
        failures=("'NVML: Unable to retrieve NVLink information as all links are inactive' ('Nvlink ... inActive' "
                  "on 595 and 610) or 'Nvlink queries are not supported for Devices in MIG mode' (590, a H200 in "
                  "MIG mode) under a GPU's line in place of its links (errors, the GPU's own errors), but on a PCIe board (NVLink only "
                  "through bridges: a bridgeless board's normal, kept as the GPU's 'nvml'); a link <inactive> among active ones "
                  "(but on a PCIe board, whose links no bridge wires are inactive by design: NVIDIA's H100/A100 PCIe briefs, "
                  "up to 3 bridges and 12 links; harvest 12's decision; named 'PCIe', '-PCIE-', or without it the H100 NVL, "
                  "H200 NVL, A40 and A30, PCIe cards with NVLink bridges by their briefs) or slower than the fastest link listed (faults); the "
                  "nvidia-smi/NVML failure lines (errors)"),
        values="gpus[{index, name, uuid, links[{link, active, speed_GBps}], errors, nvml (a PCIe board's all-inactive line)}], faults, errors",
    ),
    "nvlink-errors": Grammar(
        tool="nvidia-smi nvlink -e",
        versions="drivers 418 to 580 (the Replay, Recovery and CRC counters per link); NVLink 5 on driver 595 "
                 "(Blackwell B300: the NVLink 5 counters, BERs, FEC histogram and raw lane counters, not the old three)",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (nvidia-smi nvlink -h: -e/--error-counters)",
            _CAPTURES.format("nvidia-smi-nvlink: stas00/ml-engineering's H100 with links elided; r3: 2x V100 with "
                             "replay 211 and CRC 65535; r4: GB300 of NVIDIA/srt-slurm PR 307 (the old three)"),
            "closed: NVLink 5's counter names as a reference guide records them from a live p6-b300.48xlarge (driver "
            "595.91.07, 8x NVIDIA B300 SXM6 AC; public repository text found by the code search): the error "
            "counters all zero on a healthy node, 'FEC Errors - 0' in the billions, 'Effective BER: 15e-255' the "
            "float floor, the Raw BER/Raw Errors lane counters non-zero on a healthy node; NVML's "
            "NVML_FI_DEV_NVLINK_COUNT_* fields (DCGM_FI_DEV_NVLINK_COUNT_*) that they print",
        ),
        lines=("per GPU in index order 'GPU N: NAME (UUID: GPU-...)' (no UUID on some drivers), then per link of the "
               "board, from 0, its counters, each line indented by a tab and a blank, 'Link K: NAME: VALUE'. To 580: "
               "'Replay Errors', 'Recovery Errors', 'CRC Errors' (a blank line between links in some captures). "
               "NVLink 5 (595): 'Malformed packet Errors', 'Buffer overrun Errors', 'Rx Errors', 'Rx remote Errors', "
               "'Rx General Errors', 'Local link integrity Errors', 'Tx discards', 'Link recovery successful events', "
               "'Link recovery failed events', 'Total link recovery events', 'Effective Errors', 'Effective BER' "
               "(a float as NVML prints it: '15e-255'), 'Symbol Errors', 'Symbol BER', 'FEC Errors - 0' to '- 15' "
               "(codewords by the symbols corrected: bucket 0 none), 'Raw BER Lane 0/1', 'Raw BER Total', 'Raw "
               "Errors Lane 0/1' (pre-FEC); counts decimal; a reporter's '[...]' for elided links: not whole"),
        end="none printed: every GPU lists every link its board has, each link the same counters (the old three, "
            "or the counters NVLink 5's first link lists: a link short of them is cut); the GPUs against the "
            "judge's count",
        failures=("'NVML: Unable to retrieve NVLink information as all links are inactive' under a GPU (errors); an "
                  "error counter above zero (faults: sncheck parse exits 1; a run judges how much it grew, "
                  "sncheck.health.fabric, rules nvlink-errors-grew); never a fault by value: the FEC histogram, the "
                  "raw lane counters, the BERs (kept, a rule may judge their growth)"),
        values=("gpus[{index, name, uuid, links[{link, counters{NAME: value}}], errors}] (NAME the printed name in "
                "snake case: replay_errors, recovery_errors, crc_errors; malformed_packet_errors, rx_errors, "
                "link_recovery_failed_events, effective_errors, effective_ber (float), symbol_errors, fec_errors_0 "
                ".. fec_errors_15, raw_ber_lane_0, raw_errors_lane_1, ...), faults, errors"),
    ),
}
