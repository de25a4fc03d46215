"""AMD host facts: the fact commands and pure checks of their parsed output.

* ``card_count``: rows of ``amd-smi monitor`` against the inventory's cards (a CPX
  partitioned MI300X shows 4 or 8 logical GPUs per package: the platform's cards say so).
* ``xgmi_links``: ``rocm-smi --showtopo``: every GPU pair has Link Type XGMI and one
  hop (MI300X: a full mesh, 7 links per GPU). A pair over PCIE, or more hops, is a down
  XGMI link: the driver routes that pair around it. Named pair by pair.
* ``xgmi_status``: ``amd-smi xgmi`` where the version prints a LINK STATUS table: every
  link U(p); and every link's bit rate equal to the platform's.
* ``ecc``: ``amd-smi metric --ecc-blocks``: any UNCORRECTABLE or DEFERRED count above 0
  in any block (UMC, XGMI_WAFL, ...). Correctable counts are reported, not judged.
* ``throttle`` / ``pcie_width``: ``amd-smi metric``: THROTTLE_STATUS other than
  UNTHROTTLED; a PCIe link narrower than the platform's width.
* TransferBench p2p: every GPU->GPU cell off the diagonal against the pair design.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.vendors.facts import Expect, command, fact_row, listed
from sncheck.vendors.infiniband.checks import IB_FACTS, IBSTAT
from sncheck.vendors.amd import amd_smi, rocm_smi


def check_card_count(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    n = len(gpus)
    msg = f"{n} GPUs listed by amd-smi monitor, inventory says {expect.cards}"
    if errors:
        msg += f"; {listed(errors)}"
    return [fact_row(host, "card_count", n, expect.cards, n == expect.cards and not errors, msg, "amd-smi")]


def check_xgmi_topo(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    links, hops, weight = parsed.get("link_type") or {}, parsed.get("hops") or {}, parsed.get("weight") or {}
    pairs = [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    bad: list[str] = []
    for a, b in pairs:
        kind = (links.get(a) or {}).get(b)
        hop = (hops.get(a) or {}).get(b)
        if kind != "XGMI" or (hop is not None and hop != 1):
            bad.append(f"{a}-{b} {kind or '?'} (hops {hop if hop is not None else '?'}, "
                       f"weight {(weight.get(a) or {}).get(b, '?')})")
    if len(gpus) != expect.cards:
        bad.append(f"topology lists {len(gpus)} GPUs, inventory says {expect.cards}")
    bad += parsed.get("errors") or []
    up = len(pairs) - sum(1 for x in bad if "-GPU" in x.split()[0])
    per_gpu = (expect.platform.params.get("xgmi_links_per_gpu") if expect.platform else None) or max(len(gpus) - 1, 0)
    msg = f"XGMI: {up}/{len(pairs)} GPU pairs direct over XGMI ({per_gpu} links per GPU)"
    if bad:
        msg += f"; down or rerouted: {listed(bad)}"
    return [fact_row(host, "xgmi_links", up, len(pairs), not bad and bool(pairs), msg, "rocm-smi")]


def check_xgmi_status(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    want = expect.platform.params.get("xgmi_bit_rate_Gbps") if expect.platform else None
    bad: list[str] = []
    links = 0
    for g in parsed.get("gpus") or []:
        for peer, st in (g.get("status") or {}).items():
            if peer == g.get("bdf") or st in ("N/A", "X", "-"):
                continue
            links += 1
            if st != "U":
                bad.append(f"GPU{g['gpu']} -> {peer} {st}")
        if want and g.get("bit_rate_Gbps") is not None and g["bit_rate_Gbps"] < want:
            bad.append(f"GPU{g['gpu']} bit rate {g['bit_rate_Gbps']:g} Gb/s (design {want:g})")
        if g.get("link_type") not in (None, "XGMI"):
            bad.append(f"GPU{g['gpu']} link type {g['link_type']}")
    bad += parsed.get("errors") or []
    msg = f"amd-smi xgmi: {links - sum(1 for b in bad if ' -> ' in b)}/{links} links up" + (f"; {listed(bad)}" if bad else "")
    return [fact_row(host, "xgmi_status", len(bad), 0, not bad, msg, "amd-smi")]


def check_ecc(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    bad: list[str] = []
    corrected = 0
    seen = 0
    for g in parsed.get("gpus") or []:
        blocks = g.get("ECC_BLOCKS") or {k: v for k, v in g.items() if isinstance(v, dict) and "UNCORRECTABLE_COUNT" in v}
        for block, counts in blocks.items():
            seen += 1
            ue, de = counts.get("UNCORRECTABLE_COUNT"), counts.get("DEFERRED_COUNT")
            if isinstance(counts.get("CORRECTABLE_COUNT"), int):
                corrected += counts["CORRECTABLE_COUNT"]
            if (isinstance(ue, int) and ue > 0) or (isinstance(de, int) and de > 0):
                bad.append(f"GPU {g.get('gpu')} {block}: {ue} uncorrectable, {de} deferred")
    errors = parsed.get("errors") or []
    msg = f"ECC: {seen} blocks read, {len(bad)} with uncorrectable or deferred errors"
    if bad:
        msg += f": {listed(bad)}"
    if corrected:
        msg += f" ({corrected} correctable, not judged)"
    if errors:
        msg += f"; {listed(errors)}"
    return [fact_row(host, "ecc", len(bad), 0, not bad and not errors and seen > 0, msg, "amd-smi")]


def check_metric(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    width = expect.platform.params.get("pcie_width") if expect.platform else None
    throttled, narrow = [], []
    read = 0
    for g in parsed.get("gpus") or []:
        status = (g.get("POWER") or {}).get("THROTTLE_STATUS") or (g.get("THROTTLE") or {}).get("THROTTLE_STATUS")
        if status is not None:
            read += 1
            if status != "UNTHROTTLED":
                throttled.append(f"GPU {g['gpu']}: {status}")
        cur = (g.get("PCIE") or {}).get("WIDTH")
        if width and isinstance(cur, int) and cur < width:
            narrow.append(f"GPU {g['gpu']}: PCIe x{cur} of x{width}")
    errors = parsed.get("errors") or []
    tmsg = f"throttle status: {read - len(throttled)}/{read} GPUs UNTHROTTLED" + (f"; {listed(throttled)}" if throttled else "")
    if errors:
        tmsg += f"; {listed(errors)}"
    return [fact_row(host, "throttle", len(throttled), 0, not throttled and not errors and read > 0, tmsg, "amd-smi"),
            fact_row(host, "pcie_width", len(narrow), 0, not narrow,
                     "PCIe width: " + (listed(narrow) if narrow else "no link below its width"), "amd-smi")]


def check_transferbench_p2p(host: str, parsed: dict[str, Any], *, pair_GBps: float,
                            min_fraction: float = 0.8) -> list[dict]:
    want = pair_GBps * min_fraction
    cells = []
    for m in parsed.get("matrices") or []:
        if "Unidirectional" not in (m.get("title") or "") and m.get("title") != "a2a":
            continue
        for src, row in m["rows"].items():
            for dst, v in row.items():
                if src.startswith("GPU") and dst.startswith("GPU") and src != dst and v is not None:
                    cells.append((src, dst, v))
    low = [f"{s}->{d} {v:g} GB/s" for s, d, v in cells if v < want]
    worst = min((v for *_, v in cells), default=None)
    msg = (f"TransferBench GPU->GPU: {len(cells) - len(low)}/{len(cells)} pairs >= {want:g} GB/s "
           f"({min_fraction:.0%} of {pair_GBps:g})" + (f"; low: {listed(low)}" if low else ""))
    errors = parsed.get("errors") or []
    if errors:
        msg += f"; {listed(errors)}"
    return [fact_row(host, "transferbench_p2p", worst, pair_GBps, bool(cells) and not low and not errors, msg,
                     "TransferBench")]


COMMANDS = {c.name: c for c in (
    command("monitor", "amd-smi", ["amd-smi", "monitor", "-putm"], amd_smi.parse_amd_smi_monitor,
            check_card_count, "card_count"),
    command("showtopo", "rocm-smi", ["rocm-smi", "--showtopo"], rocm_smi.parse_showtopo, check_xgmi_topo,
            "xgmi_links"),
    command("xgmi", "amd-smi", ["amd-smi", "xgmi"], amd_smi.parse_amd_smi_xgmi, check_xgmi_status, "xgmi_status"),
    command("ecc_blocks", "amd-smi", ["amd-smi", "metric", "--ecc-blocks"], amd_smi.parse_amd_smi, check_ecc, "ecc"),
    command("metric", "amd-smi", ["amd-smi", "metric"], amd_smi.parse_amd_smi, check_metric,
            "throttle", "pcie_width"),
    IBSTAT,
)}

FACTS = {
    "reachable": ("", "SSH connect, host key or login failed (one row, status unreachable)"),
    "card_count": ("monitor", "GPUs listed by amd-smi monitor differ from the inventory's cards"),
    "xgmi_links": ("showtopo", "a GPU pair not over XGMI in one hop (a down link the driver routes around)"),
    "xgmi_status": ("xgmi", "a link not U(p) in amd-smi's link status table, a bit rate below design"),
    "ecc": ("ecc_blocks", "uncorrectable or deferred ECC errors in any block"),
    "throttle": ("metric", "THROTTLE_STATUS other than UNTHROTTLED"),
    "pcie_width": ("metric", "a PCIe link narrower than the platform's width"),
    **IB_FACTS,
}
