"""AMD host facts: the fact commands and pure checks of their parsed output.

* ``card_count``: rows of ``amd-smi monitor`` against the inventory's cards (a CPX
  partitioned MI300X shows 4 or 8 logical GPUs per package: the platform's cards say so).
* ``gpu_bus``: ``amd-smi list``: each card's BDF, as many as the inventory's cards; the
  kernel log's reports are named to the card by it (:mod:`sncheck.vendors.amd.buses`).
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

from sncheck.model import Status
from sncheck.vendors.identity import amd_uuid_serial
from sncheck.vendors.facts import Expect, command, device_ids, fact_row, listed, on_cards as _on_cards
from sncheck.vendors.infiniband.checks import IB_FACTS, IBSTAT
from sncheck.vendors.amd import amd_smi, amd_smi_xgmi, rocm_smi


def check_card_count(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    n = len(gpus)
    msg = f"{n} GPUs listed by amd-smi monitor, inventory says {expect.cards}"
    if errors:
        msg += f"; {listed(errors)}"
    return [fact_row(host, "card_count", n, expect.cards, n == expect.cards and not errors, msg, "amd-smi")]


def check_gpu_list(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """``amd-smi list``: every card listed once with its BDF (the bus ids a kernel report is
    named to its card by, :mod:`sncheck.vendors.amd.buses`), as many as the inventory's cards."""
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    bdfs = [b for g in gpus if (b := g.get("BDF"))]
    if not bdfs:  # value == expected: parse's judgement leaves an output that lists no BDF (a metric
        # read given to the view they share) to that output's own checks; a run's fact fails on it
        return [fact_row(host, "gpu_bus", 0, 0, False, "amd-smi list: no GPU bus id (BDF) listed: kernel "
                         "reports name the host" + (f"; {listed(errors)}" if errors else ""), "amd-smi")]
    msg = f"{len(bdfs)} GPU bus ids listed by amd-smi list, inventory says {expect.cards}"
    if len(bdfs) < len(gpus):
        errors = [*errors, f"{len(gpus) - len(bdfs)} GPUs listed without a BDF"]
    if len(set(bdfs)) < len(bdfs):  # one bus id listed for two GPUs: no card could be named by it
        errors = [*errors, f"{len(bdfs) - len(set(bdfs))} bus ids listed twice"]
    if errors:
        msg += f"; {listed(errors)}"
    return [fact_row(host, "gpu_bus", len(bdfs), expect.cards, len(bdfs) == expect.cards and not errors, msg,
                     "amd-smi", ids=_identities(gpus))]


def _identities(gpus: list[dict[str, Any]]) -> list[str] | None:
    """Each GPU's identity: its amd-smi UUID (the ASIC serial's, one card in the world:
    :mod:`sncheck.vendors.identity`) where it prints one, else its BDF (one slot of this host)."""
    return device_ids([{**g, "UUID": g.get("UUID") if amd_uuid_serial(str(g.get("UUID"))) is not None else None}
                       for g in gpus], "UUID", "BDF")


def _gpu_index(name: str, cards: int) -> int | None:
    """The card of a ``GPU<n>`` column of rocm-smi (its index, HIP's device order)."""
    m = re.fullmatch(r"GPU\[?(\d+)\]?", str(name))
    return int(m.group(1)) if m and int(m.group(1)) < cards else None


def _xgmi_devices(pairs: list[tuple[int | None, int | None, str]], gpus: int
                  ) -> tuple[dict[int, str] | None, dict[tuple[int, int], str] | None]:
    """(cards, links) a set of bad XGMI pairs names: a GPU whose every pair is bad is the
    card; each other bad pair is its link (MI300X: one XGMI link per GPU pair). None, None
    when a pair's GPU is not known (the host's)."""
    known = [(a, b, text) for a, b, text in pairs if a is not None and b is not None]
    if not pairs or len(known) < len(pairs):
        return None, None
    per: dict[int, list[str]] = {}
    for a, b, text in known:
        per.setdefault(a, []).append(text)
        per.setdefault(b, []).append(text)
    dead = {g for g, texts in per.items() if gpus > 2 and len(texts) >= gpus - 1}
    cards = {g: f"XGMI: every link of the GPU down or rerouted: {listed(per[g])}" for g in sorted(dead)}
    links = {(min(a, b), max(a, b)): f"XGMI: {text}" for a, b, text in known if a not in dead and b not in dead}
    return cards or None, links or None


def check_xgmi_topo(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    links, hops, weight = parsed.get("link_type") or {}, parsed.get("hops") or {}, parsed.get("weight") or {}
    if not links and not hops and not weight:
        # the NUMA section alone (--showtoponuma) carries no link: not judged, and never a pass (value ==
        # expected: parse's judgement leaves it to the output, a run's fact fails on it)
        return [fact_row(host, "xgmi_links", 0, 0, False, "XGMI: the topology output holds no link matrix "
                         "(its NUMA section alone): not judged", "rocm-smi")]
    pairs = [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    if expect.platform is None and links and pairs and len(gpus) == expect.cards and not parsed.get("errors") and not any(
            (links.get(a) or {}).get(b) == "XGMI" for a, b in pairs):
        # a PCIe-only board (MI50/MI100 without a hive, a workstation) reads so, and so does an XGMI fabric all
        # down: only a design that expects XGMI (a platform) tells them apart. Not judged: never a pass, no card
        kinds = "/".join(sorted({str((links.get(a) or {}).get(b) or "?") for a, b in pairs}))
        return [fact_row(host, "xgmi_links", 0, len(pairs), False, f"XGMI: not judged: no XGMI link in this topology "
                         f"(all {len(pairs)} GPU pairs {kinds}); give a platform that expects XGMI (--platform, or "
                         "the inventory's) to judge it", "rocm-smi")]
    bad: list[str] = []
    named: list[tuple[int | None, int | None, str]] = []
    for a, b in pairs:
        kind = (links.get(a) or {}).get(b)
        hop = (hops.get(a) or {}).get(b)
        if kind != "XGMI" or (hop is not None and hop != 1):
            text = (f"{a}-{b} {kind or '?'} (hops {hop if hop is not None else '?'}, "
                    f"weight {(weight.get(a) or {}).get(b, '?')})")
            bad.append(text)
            named.append((_gpu_index(a, expect.cards), _gpu_index(b, expect.cards), text))
    whole = len(gpus) == expect.cards and not parsed.get("errors")
    if len(gpus) != expect.cards:
        bad.append(f"topology lists {len(gpus)} GPUs, inventory says {expect.cards}")
    bad += parsed.get("errors") or []
    up = len(pairs) - len(named)
    per_gpu = (expect.platform.params.get("xgmi_links_per_gpu") if expect.platform else None) or max(len(gpus) - 1, 0)
    msg = f"XGMI: {up}/{len(pairs)} GPU pairs direct over XGMI ({per_gpu} links per GPU)"
    if bad:
        msg += f"; down or rerouted: {listed(bad)}"
    cards, pair_links = _xgmi_devices(named, len(gpus)) if whole else (None, None)
    return [fact_row(host, "xgmi_links", up, len(pairs), not bad and bool(pairs), msg, "rocm-smi",
                     cards=cards, links=pair_links)]


def check_xgmi_status(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    want = expect.platform.params.get("xgmi_bit_rate_Gbps") if expect.platform else None
    listed_gpus = parsed.get("gpus") or []
    by_bdf = {g.get("bdf"): g["gpu"] for g in listed_gpus if isinstance(g.get("gpu"), int)}
    bad: list[str] = []
    down: list[tuple[int | None, int | None, str]] = []
    on_card: list[tuple[int | None, str]] = []
    links = 0
    for g in listed_gpus:
        me = g["gpu"] if isinstance(g.get("gpu"), int) and g["gpu"] < expect.cards else None
        up, gone, _ = amd_smi_xgmi.link_states(g)  # the parser's judgement of each cell, not a copy of it
        links += len(up) + len(gone)
        for peer, st in gone:
            text = f"GPU{g['gpu']} -> {peer} {st}"
            bad.append(text)
            other = by_bdf.get(peer)
            down.append((me, other if isinstance(other, int) and other < expect.cards else None, text))
        if want and g.get("bit_rate_Gbps") is not None and g["bit_rate_Gbps"] < want:
            bad.append(f"GPU{g['gpu']} bit rate {g['bit_rate_Gbps']:g} Gb/s (design {want:g})")
            on_card.append((me, bad[-1]))
        if g.get("link_type") not in (None, "XGMI"):
            bad.append(f"GPU{g['gpu']} link type {g['link_type']}")
            on_card.append((me, bad[-1]))
    # per-port GPUs: more ports disabled than the hive's fewest, else fewer enabled than the platform's links
    lost = amd_smi_xgmi.disabled_beyond_hive(listed_gpus)
    per_gpu = expect.platform.params.get("xgmi_links_per_gpu") if expect.platform else None
    for g in listed_gpus if per_gpu else []:
        if g.get("gpu") not in lost and not g.get("status") and g.get("ports") \
                and (n := sum(st != "X" for st in g["ports"])) < per_gpu:
            lost[g.get("gpu")] = f"GPU{g['gpu']}: {n} XGMI ports enabled, the platform has {per_gpu}: links lost"
    for gpu, text in lost.items():
        bad.append(text)
        on_card.append((gpu if isinstance(gpu, int) and gpu < expect.cards else None, text))
    errors = list(parsed.get("errors") or [])
    not_read = amd_smi_xgmi.links_not_read(listed_gpus)
    errors += [e for e in not_read if e not in errors]
    bad += errors
    msg = f"amd-smi xgmi: {links - len(down)}/{links} links up" + (f"; {listed(bad)}" if bad else "")
    cards: dict[int, str] | None = None
    pair_links: dict[tuple[int, int], str] | None = None
    if not errors and all(i is not None for i, _ in on_card):
        seen: dict[tuple, tuple] = {}  # a link down shows in both ends' rows: one link
        for a, b, text in down:
            key = (min(a, b), max(a, b)) if a is not None and b is not None else (a, b, text)
            seen.setdefault(key, (a, b, text))
        dead, pair_links = _xgmi_devices(list(seen.values()), len(listed_gpus)) if seen else (None, None)
        if not seen or dead or pair_links:  # else a peer not known: the host's
            own = _on_cards(on_card, "XGMI") or {}
            cards = {i: "; ".join(t for t in ((dead or {}).get(i), own.get(i)) if t)
                     for i in sorted({*(dead or {}), *own})} or None
    row = fact_row(host, "xgmi_status", len(bad), 0, not bad, msg, "amd-smi", cards=cards, links=pair_links)
    if not_read and not down and not on_card:  # nothing found down, some links not read: no pass, no fault
        row["status"] = Status.NOT_MEASURED
    return [row]


def check_ecc(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    problems: list[tuple[int | None, str]] = []
    corrected = 0
    seen = 0
    gpus = parsed.get("gpus") or []
    unread: list[str] = []  # GPUs whose ECC_BLOCKS amd-smi printed as N/A
    for g in gpus:
        blocks = g.get("ECC_BLOCKS") or {k: v for k, v in g.items() if isinstance(v, dict) and "UNCORRECTABLE_COUNT" in v}
        if not isinstance(blocks, dict):
            # metric_gpu prints 'ECC_BLOCKS: N/A' when the RAS block features cannot be read (an APU, a
            # guest): no block, not a count of 0 (it crashed here: exit 3)
            unread.append(f"GPU {g.get('gpu')}")
            continue
        card = g.get("gpu") if isinstance(g.get("gpu"), int) and 0 <= g["gpu"] < expect.cards else None
        for block, counts in blocks.items():
            seen += 1
            ue, de = counts.get("UNCORRECTABLE_COUNT"), counts.get("DEFERRED_COUNT")
            if isinstance(counts.get("CORRECTABLE_COUNT"), int):
                corrected += counts["CORRECTABLE_COUNT"]
            if (isinstance(ue, int) and ue > 0) or (isinstance(de, int) and de > 0):
                problems.append((card, f"GPU {g.get('gpu')} {block}: {ue} uncorrectable, {de} deferred"))
    bad = [t for _, t in problems]
    errors = list(parsed.get("errors") or [])
    if gpus and len(gpus) != expect.cards:
        errors.append(f"ECC blocks of {len(gpus)} GPUs listed, inventory says {expect.cards}")
    msg = f"ECC: {seen} blocks read, {len(bad)} with uncorrectable or deferred errors"
    if bad:
        msg += f": {listed(bad)}"
    if corrected:
        msg += f" ({corrected} correctable, not judged)"
    if errors:
        msg += f"; {listed(errors)}"
    if unread:
        msg += f"; ECC blocks N/A on {listed(unread)} (amd-smi read no RAS block): not measured"
    cards = _on_cards(problems, "ECC") if not errors else None
    row = fact_row(host, "ecc", len(bad), 0, not bad and not errors and seen > 0 and not unread, msg, "amd-smi",
                   cards=cards)
    if unread and not bad and not errors:
        row["status"] = Status.NOT_MEASURED  # a GPU's blocks not read: no pass, and no fault either
    return [row]


def check_metric(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    width = expect.platform.params.get("pcie_width") if expect.platform else None
    throttled: list[tuple[int | None, str]] = []
    narrow: list[tuple[int | None, str]] = []
    unread: list[str] = []
    read = 0
    for g in parsed.get("gpus") or []:
        card = g.get("gpu") if isinstance(g.get("gpu"), int) and 0 <= g["gpu"] < expect.cards else None
        status = (g.get("POWER") or {}).get("THROTTLE_STATUS") or (g.get("THROTTLE") or {}).get("THROTTLE_STATUS")
        if status == "N/A":  # amd-smi could not read it (an APU's SoC owns the power state): no state, no fault
            unread.append(f"GPU {g.get('gpu')}")
        elif status is not None:
            read += 1
            if status != "UNTHROTTLED":
                throttled.append((card, f"GPU {g['gpu']}: {status}"))
        cur = (g.get("PCIE") or {}).get("WIDTH")
        if width and isinstance(cur, int) and cur < width:
            narrow.append((card, f"GPU {g['gpu']}: PCIe x{cur} of x{width}"))
    errors = list(parsed.get("errors") or [])
    if read + len(unread) and read + len(unread) != expect.cards:
        errors.append(f"throttle status of {read + len(unread)} GPUs listed, inventory says {expect.cards}")
    tmsg = (f"throttle status: {read - len(throttled)}/{read} GPUs UNTHROTTLED"
            + (f"; {listed([t for _, t in throttled])}" if throttled else ""))
    if unread:
        tmsg += f"; THROTTLE_STATUS N/A on {listed(unread)}: not measured"
    if errors:
        tmsg += f"; {listed(errors)}"
    throttle = fact_row(host, "throttle", len(throttled), 0, not throttled and not errors and read > 0 and not unread,
                        tmsg, "amd-smi", cards=_on_cards(throttled, "throttle status") if not errors else None)
    if unread and not throttled and not errors:
        throttle["status"] = Status.NOT_MEASURED
    return [throttle,
            fact_row(host, "pcie_width", len(narrow), 0, not narrow,
                     "PCIe width: " + (listed([t for _, t in narrow]) if narrow else "no link below its width"),
                     "amd-smi", cards=_on_cards(narrow, "PCIe width"))]


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
    command("list", "amd-smi", ["amd-smi", "list"], amd_smi.parse_amd_smi, check_gpu_list, "gpu_bus"),
    command("monitor", "amd-smi", ["amd-smi", "monitor", "-putm"], amd_smi.parse_amd_smi_monitor,
            check_card_count, "card_count"),
    command("showtopo", "rocm-smi", ["rocm-smi", "--showtopo"], rocm_smi.parse_showtopo, check_xgmi_topo,
            "xgmi_links"),
    command("xgmi", "amd-smi", ["amd-smi", "xgmi"], amd_smi_xgmi.parse_amd_smi_xgmi, check_xgmi_status, "xgmi_status"),
    command("ecc_blocks", "amd-smi", ["amd-smi", "metric", "--ecc-blocks"], amd_smi.parse_amd_smi, check_ecc, "ecc"),
    command("metric", "amd-smi", ["amd-smi", "metric"], amd_smi.parse_amd_smi, check_metric,
            "throttle", "pcie_width"),
    IBSTAT,
)}

FACTS = {
    "reachable": ("", "SSH connect, host key or login failed (one row, status unreachable)"),
    "card_count": ("monitor", "GPUs listed by amd-smi monitor differ from the inventory's cards"),
    "gpu_bus": ("list", "GPUs listed with a BDF by amd-smi list differ from the inventory's cards"),
    "xgmi_links": ("showtopo", "a GPU pair not over XGMI in one hop (a down link the driver routes around)"),
    "xgmi_status": ("xgmi", "a link not U(p) in amd-smi's link status table, a bit rate below design"),
    "ecc": ("ecc_blocks", "uncorrectable or deferred ECC errors in any block"),
    "throttle": ("metric", "THROTTLE_STATUS other than UNTHROTTLED"),
    "pcie_width": ("metric", "a PCIe link narrower than the platform's width"),
    **IB_FACTS,
}
