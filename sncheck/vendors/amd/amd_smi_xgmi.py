"""Parse ``amd-smi xgmi`` (view ``amd-smi-xgmi``): its LINK METRIC table, and where the version
prints them its link status tables::

    {"tool": "amd-smi-xgmi", "gpus": [{"gpu": 0, "bdf": "05:00.0", "bit_rate_Gbps": 32.0,
      "max_bandwidth_Gbps": 512.0, "link_type": "XGMI",
      "read_KB": {"26:00.0": 1259, ...}, "write_KB": {...}, "status": {"26:00.0": "U"},
      "ports": ["U", "U", ...]}],                     # 'GPU LINK PORT STATUS' (7.1+), where printed
     "faults": ["GPU0 -> 46:00.0 D: XGMI link not up"], "errors": []}

A column header naming its peers by GPU (7.x: ``GPU0  GPU1``) is keyed by that GPU's BDF, as
the older BDF headers are. Read/Write cells in readable units (6.4+: ``1.123 PB``, ``229.1 MB``)
are read in KB (1024 a step, amdsmi_helpers' convert_bytes_to_readable). The sentinel maxima
amd-smi printed for a GPU without XGMI before its fix (``65535 Gb/s``, ``4294967295 Gb/s``: the
library's UINT16/UINT32 'not supported') read as N/A (null).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.amd.amd_smi import _body_lines, _failed
from sncheck.vendors.amd.amd_smi_grammar import _FAILED
from sncheck.vendors.grammar import Grammar

_CLI = "ROCm/amdsmi amdsmi_cli @ rocm-6.2.2"
GRAMMAR = {
    "amd-smi-xgmi": Grammar(
        tool="amd-smi xgmi [-m] [-s] [-l]",
        versions="amd-smi 24.5 (ROCm 6.2; short BDFs) to 26.x (ROCm 7.x; readable units, GPU column headers, "
                 "GPU LINK PORT STATUS, XGMI LINK STATUS, the Legend)",
        sources=(
            f"{_CLI} amdsmi_commands.py xgmi: 'LINK METRIC TABLE:', the header ('       ' + 'bdf'.ljust(13) + "
            "'bit_rate'.ljust(9) + 'max_bandwidth'.ljust(14) + 'link_type'.ljust(10) + the BDFs .rjust(13)), "
            "then per GPU its row ('GPU%d'.ljust(7), bdf, '32 Gb/s', '512 Gb/s', XGMI/PCIE/UNKNOWN/N/A) and a "
            "Read and a Write row ('Read'.ljust(52), a cell a peer .ljust(13): '<n> KB', N/A to itself)",
            "amd-smi 24.5 (the ROCm blog's capture, fixtures/real/amd/07): short BDFs ('05:00.0'), the Read/"
            "Write rows indented by one, cells 8 wide; ROCm 6.3: a LINK STATUS TABLE (U up, D down, X self)",
            "amdsmi CHANGELOG (6.4, 'Converted xgmi read and write from KB's to readable units'; "
            "amdsmi_helpers.convert_bytes_to_readable: B, KB, MB, GB, TB, PB, EB, ZB, 1024 a step): Read/Write "
            "cells '1.123 PB', '229.1 MB'",
            "amdsmi_commands.py xgmi of ROCm 7.1+ (the code corpus' copy with --source-status/--link-status): "
            "'\\nGPU LINK PORT STATUS' ('     '.ljust(7) + 'bdf'.ljust(14) + 'port_num'.ljust(20); per GPU its "
            "ports' states), '\\nXGMI LINK STATUS' (the header 'bdf' then 'GPU%d'.ljust(14) per GPU; per GPU "
            "'GPU%d'.ljust(7) + bdf.ljust(14) then per peer 'SELF', 'N/A', or its links' states joined by '/'), "
            "the Legend ('SELF = Current GPU', 'N/A = Not supported', 'U / D / X = Link is Up / Down / Disabled', "
            "'Read / Write = GPU Metric Accumulated Read / Write'); the LINK METRIC header names peers 'GPU%d'",
            "ROCm 7.1.0 amdsmi_commands.py xgmi (TheRock's base/amdsmi, chuck-gcc/la-pleiade 27ebc228) and the "
            "CHANGELOG's 6.4.0 example: 'XGMI LINK STATUS' per XGMI port, not per peer ('     '.ljust(7) + "
            "'bdf'.ljust(14) + 'link_status'.ljust(20); per GPU 'GPU%d'.ljust(7) + bdf.ljust(14) and each port's "
            "state .ljust(3) from amdsmi_get_gpu_xgmi_link_status: U, D, X disabled; an 'N/A' runs into the next)",
            "rocm-systems PR 2053 and the CHANGELOG ('Fixed amd-smi xgmi --metric on devices without XGMI links "
            "reporting bit_rate and max_bandwidth with their maximum values instead of N/A'): before it a GPU "
            "without XGMI printed '65535 Gb/s4294967295 Gb/sN/A', the cells run together past their widths",
        ),
        lines="an optional command line, then per asked table its title, its header and its rows (LINK METRIC: three "
              "rows per GPU); 7.x: the Legend last",
        end=("none: each GPU's Read and Write rows hold a cell per peer of the header; the judge's expectation "
             "counts the GPUs"),
        failures=("a Read/Write row without a cell per peer, 'ERROR' lines (errors); a link to a peer in LINK "
                  "STATUS neither U nor X nor SELF (D: down; faults, the run's xgmi_status), a peer whose links "
                  "are 'U/D' is down; a GPU with no per-peer row judged by its ports (6.4-7.1): D down, X disabled "
                  "(no link), N/A not read; a peer's cell N/A or '-' or X (disabled), a GPU without a LINK STATUS row, "
                  "or no LINK STATUS table for more than one GPU: link status not read (errors: not measured, "
                  "never '0/0 links up'); " + _FAILED),
        values="gpus[{gpu, bdf, bit_rate_Gbps, max_bandwidth_Gbps, link_type, read_KB{peer: n}, write_KB, status, "
               "ports}], errors",
    ),
}

_GB = r"(?:(\d+(?:\.\d+)?) Gb/s|N/A)"
# the cells of a row may run together past their widths ('65535 Gb/s4294967295 Gb/sN/A')
_XGMI_GPU = re.compile(rf"^GPU(\d+)\s+(\S+)\s+{_GB}\s*{_GB}\s*(\S+)\s*(.*)$")
_SENTINELS = (65535.0, 4294967295.0)  # UINT16/UINT32 max: the library's 'not supported', printed before the fix
_UNITS = ("B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB")
_CELL = re.compile(r"N/A|(\d+(?:\.\d+)?) (" + "|".join(_UNITS) + r")\b")
_TITLE = re.compile(r"^(?:XGMI |GPU )?(LINK METRIC|LINK STATUS|LINK PORT STATUS)(?: TABLE)?:$")
# 7.x prints its Legend last, these lines whole (amdsmi_commands.py xgmi, legend_parts): its end marker
_LEGEND = ("Legend:", "SELF = Current GPU", "N/A = Not supported", "U / D / X = Link is Up / Down / Disabled",
           "Read / Write = GPU Metric Accumulated Read / Write")
_BDF = re.compile(r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d")
_UNREAD = ("N/A", "-")  # a peer's cell that states no link state


def _rate(value: str | None) -> float | None:
    rate = float(value) if value else None
    return None if rate in _SENTINELS else rate


def _kb(cell: re.Match[str]) -> float | int | None:
    if cell.group(1) is None:
        return None
    value = float(cell.group(1)) * 1024 ** (_UNITS.index(cell.group(2)) - 1)
    return int(value) if value == int(value) else value


def _new(gpu: int, bdf: str) -> dict[str, Any]:
    return {"gpu": gpu, "bdf": bdf, "bit_rate_Gbps": None, "max_bandwidth_Gbps": None, "link_type": None,
            "read_KB": {}, "write_KB": {}, "status": {}}


def parse_amd_smi_xgmi(text: str) -> dict[str, Any]:
    errors: list[str] = []
    gpus: list[dict[str, Any]] = []
    peers: list[str] = []
    metric_peers: list[str] = []  # the LINK METRIC header's: the Read/Write rows hold a cell for each
    section = None
    seven = False  # a 7.x output (its link status tables, GPU column headers): it ends with the Legend
    legend: list[str] = []
    listed: set[tuple[str, int]] = set()  # (table, GPU) of the status rows read
    for _, _, body in _body_lines(text, errors):
        if m := _TITLE.match(body):
            section = m.group(1)
            seven = seven or body.startswith(("XGMI ", "GPU "))
            continue
        if body in _LEGEND or legend and _LEGEND[-1].startswith(body):
            legend.append(body)
            continue
        if body.startswith("bdf") or body.startswith("GPU ") and "bdf" in body:
            # the peers: amd-smi 24.5 printed their BDFs short (05:00.0), later versions whole (0000:05:00.0),
            # 7.x names them GPU0 GPU1 ...; the port table's header names none (port_num)
            peers = [c for c in body.split() if _BDF.fullmatch(c) or re.fullmatch(r"GPU\d+", c)]
            metric_peers = peers if section == "LINK METRIC" else metric_peers
            seven = seven or any(p.startswith("GPU") for p in peers)
            continue
        if section == "LINK METRIC" and (m := _XGMI_GPU.match(body)):
            gpus.append({**_new(int(m.group(1)), m.group(2)), "bit_rate_Gbps": _rate(m.group(3)),
                         "max_bandwidth_Gbps": _rate(m.group(4)), "link_type": m.group(5)})
            continue
        if section == "LINK METRIC" and gpus and (m := re.match(r"^(Read|Write)\s+(.*)$", body)):
            key = "read_KB" if m.group(1) == "Read" else "write_KB"
            gpus[-1][key] = {p: _kb(c) for p, c in zip(peers, _CELL.finditer(m.group(2)))}
            continue
        if section in ("LINK STATUS", "LINK PORT STATUS") and (m := re.match(r"^GPU(\d+)\s+(\S+)\s*(.*)$", body)):
            if (section, int(m.group(1))) in listed:  # one GPU's row twice: the first kept, never the later
                errors.append(f"GPU{m.group(1)} is listed twice in the {section} table (then {body!r}): "
                              "the first row kept")
                continue
            listed.add((section, int(m.group(1))))
            entry = next((g for g in gpus if g["gpu"] == int(m.group(1))), None)
            if entry is None:
                entry = _new(int(m.group(1)), m.group(2))
                gpus.append(entry)
            if section == "LINK STATUS" and peers:
                cells = m.group(3).split()
                entry["status"] = dict(zip(peers, cells))
                if len(cells) != len(peers):  # a state for every peer of the header: fewer is a cut, more a lost column
                    errors.append(f"GPU{entry['gpu']}: {len(cells)} link status cells for {len(peers)} GPUs: "
                                  + ("cut short" if len(cells) < len(peers) else "a GPU column of the header lost"))
            else:  # GPU LINK PORT STATUS, and 6.4-7.1's XGMI LINK STATUS (header 'bdf link_status'): per port
                entry["ports"] = re.findall(r"N/A|\S+", m.group(3))  # each .ljust(3): 'N/A' runs into the next
    if not gpus and (failed := _failed(errors)):
        return {"tool": "amd-smi-xgmi", "gpus": [], "errors": failed}
    if not gpus:
        raise ParseError("no GPU rows in a LINK METRIC or LINK STATUS table", tool="amd-smi-xgmi")
    by_name = {f"GPU{g['gpu']}": g["bdf"] for g in gpus}  # 7.x's GPU column headers, keyed by BDF
    for g in gpus:
        for key in ("read_KB", "write_KB", "status"):
            g[key] = {by_name.get(p, p): v for p, v in g[key].items()}
    # xgmi() prints a Read and a Write row under each GPU's, a cell for every peer of the header
    errors += [f"GPU{g['gpu']}: {len(g[key])} {key[:-3]} cells for {len(metric_peers)} GPUs: cut short" for g in gpus
               if g["link_type"] is not None for key in ("read_KB", "write_KB") if len(g[key]) != len(metric_peers)]
    if seven and legend != list(_LEGEND):
        errors.append("no whole Legend after the tables (amd-smi 7.x prints it last): output cut short")
    errors += [e for e in links_not_read(gpus) if e not in errors]
    faults = [f"GPU{g['gpu']} -> {peer} {st}: XGMI link not up" for g in gpus for peer, st in link_states(g)[1]]
    faults += list(disabled_beyond_hive(gpus).values())
    return {"tool": "amd-smi-xgmi", "gpus": gpus, "faults": faults, "errors": errors}


def _own(peer: str, bdf: str | None) -> bool:
    """Whether a LINK STATUS column is the row's own card (a version may print one short, 05:00.0,
    and the other whole, 0000:05:00.0)."""
    return bool(bdf) and (peer == bdf or peer.endswith(":" + str(bdf)) or str(bdf).endswith(":" + peer))


def link_states(g: dict[str, Any]) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """A GPU's LINK STATUS cells, its own column (X, 7.x's SELF) left out: (peers up, (peer, state)
    down, (peer, cell) not read). U is up, and 'U/U' (7.x joins a peer's links by '/') when every
    link is; N/A, '-' or an X off the diagonal (7.x: disabled) states no link state: not read, never
    up; any other state (D, 'U/D') is down. A GPU with no per-peer row is judged by its ports
    (6.4-7.1's per-port XGMI LINK STATUS): U up, D down, N/A not read, X disabled (no link). The
    parser's faults and errors and the run's xgmi_status fact are this one judgement."""
    up: list[str] = []
    down: list[tuple[str, str]] = []
    unread: list[tuple[str, str]] = []
    for peer, st in (g.get("status") or {}).items():
        if st == "SELF" or _own(peer, g.get("bdf")):
            continue
        if set(st.split("/")) == {"U"}:
            up.append(peer)
        elif st in _UNREAD or st == "X":
            unread.append((peer, st))
        else:
            down.append((peer, st))
    if not g.get("status"):  # judged by its ports where no per-peer table is (6.4-7.1): U up, D down, X disabled
        for i, st in enumerate(g.get("ports") or []):
            if st == "U":
                up.append(f"port {i}")
            elif st in _UNREAD:
                unread.append((f"port {i}", st))
            elif st != "X":  # X: a port disabled by configuration (MI300X has one more port than peers): no link
                down.append((f"port {i}", st))
    return up, down, unread


def disabled_beyond_hive(gpus: list[dict[str, Any]]) -> dict[Any, str]:
    """GPUs judged by their ports (no per-peer row) with more ports disabled (X) than the
    fewest any such GPU of the output has: the configuration disables the same ports on every
    GPU of a hive (MI300X: one of eight), so a GPU with more has lost links ('GPU0: 8 of 8
    ports X' beside seven GPUs of 7 U and 1 X read '49/49 links up'; the review of stop 47).
    gpu -> what it says."""
    ported = [g for g in gpus if not g.get("status") and g.get("ports")]
    if len(ported) < 2:
        return {}
    off = {id(g): sum(st == "X" for st in g["ports"]) for g in ported}
    fewest = min(off.values())
    return {g.get("gpu"): f"GPU{g.get('gpu')}: {off[id(g)]} of {len(g['ports'])} XGMI ports disabled (X), where "
            f"other GPUs here have {fewest}: links lost" for g in ported if off[id(g)] > fewest}


def links_not_read(gpus: list[dict[str, Any]]) -> list[str]:
    """The XGMI links whose state the output does not give, said as not measured: a peer cell
    N/A or '-', a GPU without a LINK STATUS row, or (more than one GPU) no LINK STATUS table at
    all (amd-smi 24.5 prints the LINK METRIC table alone). '0/0 links up' is never a pass."""
    if len(gpus) < 2:
        return []  # one GPU has no XGMI peer
    if not any(g.get("status") or g.get("ports") for g in gpus):
        return [f"no LINK STATUS table for {len(gpus)} GPUs: link status not read: not measured"]
    if all(not g.get("status") and g.get("ports") and set(g["ports"]) == {"X"} for g in gpus):
        return [f"every XGMI port of the {len(gpus)} GPUs disabled (X): no XGMI link in this output: not measured"]
    out = []
    for g in gpus:
        if not g.get("status") and not g.get("ports"):
            out.append(f"GPU{g['gpu']}: no row in the LINK STATUS table: link status not read: not measured")
        elif unread := link_states(g)[2]:
            out.append(f"GPU{g['gpu']}: link status to {', '.join(f'{p} {st}' for p, st in unread)}: "
                       "link status not read: not measured")
    return out
