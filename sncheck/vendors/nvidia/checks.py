"""NVIDIA host facts: the fact commands, and pure checks of their parsed output.

``COMMANDS`` holds every NVIDIA fact command; a platform (:mod:`.plugin`) picks the ones
that apply. ``FACTS`` lists each fact with the command that yields it and what makes it
fail. The checks turn parsed output into ``host_fact`` rows.

Choices worth knowing:

* PCIe: the link *width* below its max is a fault (``pcie_width``, ok False). The
  *generation* is not judged: an idle GPU drops to gen 1 to save power. ``pcie_gen``
  records current vs max (ok True, the downshift said in the message).
* NVLink: on a platform, the links per GPU and their speed are the platform's design
  (NVL72: 18 links at 50 GB/s); without one, the largest count any GPU of the host lists
  and the host's top speed. A host whose GPUs list no NVLink at all passes only when no
  platform says it has NVLink.
* Clock event (throttle) reasons that mean trouble: HW Slowdown, HW Thermal Slowdown,
  HW Power Brake Slowdown, SW Thermal Slowdown. SW Power Cap, Idle, application
  clocks, sync boost and display clocks are benign.
* ECC: volatile uncorrectable counters above zero, or the SRAM threshold exceeded.
  Correctable counts are reported, not judged.
* Remapped rows: a pending remap or a remapping failure; retired pages: pending.
* Fabric (NVL72, from ``nvidia-smi -q -x``): State Completed and Status Success on every
  GPU; "In Progress" is read again until the platform's retry window ends; "Not
  Supported" fails on a GB200/GB300. Health Summary Healthy, Bandwidth Full, every other
  health row False. ClusterUUID and CliqueId non-zero and one pair per tray. The pair is
  a ``fabric_clique`` row whose value maps "ClusterUUID/CliqueId" to GPUs; the rack-wide
  step (:func:`domain_check`) groups trays by that pair, never by CliqueId alone.
* IMEX (``nvidia-imex-ctl -N``): every cell between READY nodes C, one version, Domain
  State UP, and as many nodes as the supernode has hosts. A node not READY is named at
  its own tray by the rack-wide step (``imex_node``), not at every tray that sees it:
  the tray whose inventory ``imex_address`` (else ``address``) is the node's, and only
  when no tray has it, the tray at the node's place in the host order.
* Fabric manager: ``systemctl is-active nvidia-fabricmanager`` must say active on HGX;
  GB trays have none (the NVSwitch trays run it), so NVL72 does not ask.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

from sncheck.vendors.facts import Expect, command, device_ids, fact_row, listed, on_cards as _on_cards
from sncheck.vendors.infiniband.checks import IB_FACTS, IBSTAT
from sncheck.vendors.nvidia import dcgmi, fabric, nvidia_smi

TROUBLE_CLOCK_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown",
                         "SW Thermal Slowdown")
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def _gpu_name(gpu: dict[str, Any], i: int) -> str:
    return f"GPU {gpu.get('bus_id') or gpu.get('uuid') or gpu.get('index', i)}"


# --------------------------------------------------------------------------- checks

def check_card_count(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    n = len(gpus)
    ok = n == expect.cards and not errors
    names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
    msg = f"{n} GPUs found, inventory says {expect.cards}"
    if names:
        msg += f" ({', '.join(names)})"
    if errors:
        msg += f"; nvidia-smi: {listed(errors)}"
    return [fact_row(host, "card_count", n, expect.cards, ok, msg, "nvidia-smi",
                     ids=device_ids(gpus, "uuid", "serial", "bus_id")), _gpu_uuids(host, gpus)]


def _gpu_uuids(host: str, gpus: list[dict[str, Any]]) -> dict:
    """Recorded, never judged: each GPU's UUID by its index, the ``UUID`` label of the
    Prometheus card series (as dcgm-exporter labels its own)."""
    uuids = {str(g["index"]): str(g["uuid"]) for g in gpus
             if isinstance(g.get("index"), int) and g.get("uuid") not in (None, "", "N/A")}
    return fact_row(host, "gpu_uuid", uuids, None, True, f"{len(uuids)} GPU UUIDs listed", "nvidia-smi")


def check_topology(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """Recorded for the report (link type of each GPU pair), not judged."""
    kinds: dict[str, int] = {}
    gpus = parsed.get("gpus") or []
    matrix = parsed.get("matrix") or {}
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            cell = (matrix.get(a) or {}).get(b)
            if cell:
                kinds[cell] = kinds.get(cell, 0) + 1
    summary = ", ".join(f"{v} pairs {k}" for k, v in sorted(kinds.items())) or "no GPU pairs"
    return [fact_row(host, "gpu_topology", kinds, None, True,
                 f"nvidia-smi topo -m: {len(gpus)} GPUs, {summary} (recorded, not judged)", "nvidia-smi")]


def check_topology_platform(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """``topo -m`` judged against the platform: GPU pairs over NVLink (NV#, never SYS or
    PCIe paths) and a NIC near every GPU (PIX or PXB) on its own rail."""
    rows = check_topology(host, parsed, expect)
    gpus = parsed.get("gpus") or []
    matrix = parsed.get("matrix") or {}
    nics = [n["name"] for n in parsed.get("nics") or []]
    bad: list[str] = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            cell = (matrix.get(a) or {}).get(b)
            if cell and not cell.startswith("NV"):
                bad.append(f"{a}-{b} {cell}")
    rails: dict[str, str] = {}
    wants_nics = bool(expect.platform and expect.platform.params.get("nic_per_gpu"))
    if wants_nics and not nics:
        bad.append("topo -m lists no NIC (the platform has one per GPU)")
    if nics and wants_nics:
        for g in gpus:
            near = [n for n in nics if (matrix.get(g) or {}).get(n) in ("PIX", "PXB")]
            free = [n for n in near if n not in rails.values()]
            if not near:
                bad.append(f"{g} has no NIC at PIX/PXB")
            elif free:
                rails[g] = free[0]
            else:
                bad.append(f"{g} shares its nearest NIC {near[0]} with another GPU")
    msg = (f"topo -m: {len(gpus)} GPUs, every pair over NVLink" if not bad
           else f"topo -m: {listed(bad)}")
    rows.append(fact_row(host, "topo_sanity", len(bad), 0, not bad and bool(gpus), msg, "nvidia-smi"))
    return rows


def check_nvlink(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """Every link active at full speed. The links per GPU and their speed come from the
    platform (18 x 50 GB/s on NVL72); without one, from the host itself (the most links
    any GPU lists, the top speed any link shows)."""
    gpus = parsed.get("gpus") or []
    params = expect.platform.params if expect.platform else {}
    designed_links, designed_speed = params.get("nvlinks_per_gpu"), params.get("nvlink_GBps")
    if not gpus and not parsed.get("errors"):
        if designed_links:
            return [fact_row(host, "nvlink", 0, designed_links * expect.cards, False,
                             f"no NVLink reported; platform {expect.platform.name} has {designed_links} "
                             "links per GPU", "nvidia-smi")]
        return [fact_row(host, "nvlink", 0, None, True, "no NVLink reported (GPUs without NVLink)", "nvidia-smi")]
    per_gpu = designed_links or max((len(g["links"]) for g in gpus), default=0)
    speeds = [ln["speed_GBps"] for g in gpus for ln in g["links"] if ln.get("speed_GBps")]
    top = designed_speed or max(speeds, default=None)
    whose = "design" if designed_speed else "others"
    up = sum(1 for g in gpus for ln in g["links"] if ln.get("active"))
    problems: list[tuple[int | None, str]] = []
    for i, g in enumerate(gpus):
        name, card = f"GPU {g.get('index', i)}", _listed_card(g, expect)
        for err in g.get("errors") or []:
            problems.append((card, f"{name}: {err}"))
        for ln in g["links"]:
            if not ln.get("active"):
                problems.append((card, f"{name} link {ln['link']} inactive"))
            elif top is not None and ln.get("speed_GBps") is not None and ln["speed_GBps"] < top * 0.99:
                problems.append((card, f"{name} link {ln['link']} at {ln['speed_GBps']:g} GB/s "
                                       f"({whose} {top:g} GB/s)"))
        if len(g["links"]) < per_gpu:
            problems.append((card, f"{name} lists {len(g['links'])} links, "
                             + (f"platform has {per_gpu}" if designed_links else f"others {per_gpu}")))
    loose = [e for e in parsed.get("errors") or [] if not e.startswith("GPU ")]
    problems += [(None, e) for e in loose]
    bad = [text for _, text in problems]
    n_gpus = max(len(gpus), expect.cards) if designed_links else len(gpus)
    expected = per_gpu * n_gpus
    speed = f" at {top:g} GB/s" if top is not None else ""
    msg = f"NVLink {up}/{expected} links up{speed} on {len(gpus)} GPUs"
    if bad:
        msg += f": {listed(bad)}"
    ok = not bad and up >= expected
    # fewer GPUs listed than the platform's cards is the host's problem, not a card's
    whole = len(gpus) >= expect.cards or not designed_links
    on_cards = _on_cards(problems, "NVLink") if whole else None
    return [fact_row(host, "nvlink", up, expected, ok, msg, "nvidia-smi", cards=on_cards)]


def _listed_card(gpu: dict[str, Any], expect: Expect) -> int | None:
    """The card of a ``GPU <n>:`` block of ``nvidia-smi nvlink``: n is nvidia-smi's index,
    the inventory's card index (None when the inventory has no such card)."""
    index = gpu.get("index")
    return index if isinstance(index, int) and 0 <= index < expect.cards else None


def check_nvlink_errors(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """The counters of every link, by card, recorded: a counter is judged by how much it
    grew during the run, and one above zero before it is info (the rules of
    :mod:`sncheck.health.fabric`), never by its value alone. An NVML error fails the fact."""
    gpus = []
    nonzero: list[str] = []
    for i, g in enumerate(parsed.get("gpus") or []):
        links = {str(ln["link"]): dict(ln["counters"]) for ln in g["links"]}
        gpus.append({"index": g.get("index", i), "card": _listed_card(g, expect), "links": links})
    nonzero = [str(f) for f in parsed.get("faults") or []]
    errors = parsed.get("errors") or []
    n_links = sum(len(g["links"]) for g in gpus)
    msg = (f"NVLink error counters of {n_links} links on {len(gpus)} GPUs read (judged by their growth during "
           f"the run)" + (f"; above zero now: {listed(nonzero)}" if nonzero else "; all zero"))
    if errors:
        msg += f"; nvidia-smi: {listed(errors)}"
    return [fact_row(host, "nvlink_errors", {"gpus": gpus}, None, not errors, msg, "nvidia-smi")]


def card_indices(parsed: dict[str, Any], expect: Expect) -> list[int | None]:
    """The inventory card index of each GPU section of ``nvidia-smi -q``, None where the
    output cannot tell.

    nvidia-smi lists the GPUs in its own index order (PCI bus order: the order of
    ``nvidia-smi -i`` and of ``CUDA_DEVICE_ORDER=PCI_BUS_ID``), and a card's inventory index
    is that index. A section's place in the listing is its index only when the listing is
    whole: as many sections as GPUs attached and as the inventory's cards, no error
    printed. An excerpt (one GPU of eight, say), a truncated output or a host with a GPU
    missing names no card: its problems stay the host's.
    """
    gpus = parsed.get("gpus") or []
    attached = parsed.get("attached_gpus")
    whole = (bool(gpus) and len(gpus) == expect.cards and attached in (None, len(gpus))
             and not parsed.get("errors"))
    return list(range(len(gpus))) if whole else [None] * len(gpus)


def _section_rows(host: str, fact: str, gpus: list[dict], key: str,
                  judge: Callable[[dict], str | None], what: str,
                  cards: list[int | None] | None = None) -> dict:
    """One row over every GPU's ``key`` section; ``judge`` returns a problem or None.
    ``cards`` gives each section's card index (:func:`card_indices`)."""
    seen = [(i, g[key]) for i, g in enumerate(gpus) if g.get(key)]
    if not seen:
        return fact_row(host, fact, None, None, True, f"{what}: not reported by nvidia-smi -q (N/A)", "nvidia-smi")
    where = cards or [None] * len(gpus)
    problems = [(i, f"{_gpu_name(gpus[i], i)}: {p}") for i, s in seen if (p := judge(s))]
    bad = [text for _, text in problems]
    msg = f"{what}: {len(seen) - len(bad)}/{len(seen)} GPUs fine" + (f"; {listed(bad)}" if bad else "")
    on_cards = _on_cards([(where[i], text) for i, text in problems], what)
    return fact_row(host, fact, len(bad), 0, not bad, msg, "nvidia-smi", cards=on_cards)


def _judge_width(p: dict) -> str | None:
    cur, top = p.get("width_current"), p.get("width_max")
    if cur is not None and top is not None and cur < top:
        return f"PCIe x{cur} of x{top}"
    return None


def _judge_ecc(e: dict) -> str | None:
    counters = e.get("volatile") or e.get("aggregate") or {}
    problems = []
    for name, value in counters.items():
        uncorrectable = "Uncorrectable" in name or name.startswith("Double Bit/Total")
        if uncorrectable and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            problems.append(f"{name} {value}")
        if "Threshold Exceeded" in name and value is True:
            problems.append(name)
    return ", ".join(problems) or None


def _judge_remap(r: dict) -> str | None:
    problems = []
    if r.get("pending"):
        problems.append(f"row remap pending (remapped rows: {r.get('correctable')} correctable, "
                        f"{r.get('uncorrectable')} uncorrectable)")
    if r.get("failure"):
        problems.append("row remapping failure occurred")
    return ", ".join(problems) or None


def _judge_retired(r: dict) -> str | None:
    return "page retirement pending" if r.get("pending") else None


def _judge_clocks(c: dict) -> str | None:
    trouble = [r for r in c.get("active") or [] if r in TROUBLE_CLOCK_REASONS]
    return f"{', '.join(trouble)} active" if trouble else None


def check_query(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    attached = parsed.get("attached_gpus")
    report_msg = f"nvidia-smi -q lists {len(gpus)} GPUs" + (f" of {attached} attached" if attached is not None else "")
    if errors:
        report_msg += f"; {listed(errors)}"
    rows = [fact_row(host, "gpu_report", len(gpus), attached, not errors and bool(gpus), report_msg, "nvidia-smi",
                     ids=device_ids(gpus, "uuid", "serial", "bus_id"))]
    cards = card_indices(parsed, expect)
    rows.append(_section_rows(host, "pcie_width", gpus, "pcie", _judge_width, "PCIe link width", cards))
    rows.append(_pcie_gen(host, gpus))
    rows.append(_section_rows(host, "ecc", gpus, "ecc", _judge_ecc, "ECC uncorrectable errors", cards))
    rows.append(_section_rows(host, "remapped_rows", gpus, "remapped_rows", _judge_remap, "remapped rows", cards))
    rows.append(_section_rows(host, "retired_pages", gpus, "retired_pages", _judge_retired, "retired pages", cards))
    rows.append(_section_rows(host, "clock_reasons", gpus, "clock_reasons", _judge_clocks, "clock event reasons",
                              cards))
    _note_correctable(rows, gpus)
    return rows


def _pcie_gen(host: str, gpus: list[dict]) -> dict:
    seen = [(i, g["pcie"]) for i, g in enumerate(gpus) if g.get("pcie")]
    known = [(i, p) for i, p in seen if p.get("gen_current") is not None and p.get("gen_max") is not None]
    if not known:
        return fact_row(host, "pcie_gen", None, None, True, "PCIe generation: not reported", "nvidia-smi")
    low = [f"{_gpu_name(gpus[i], i)}: gen {p['gen_current']} of {p['gen_max']}"
           for i, p in known if p["gen_current"] < p["gen_max"]]
    value = min(p["gen_current"] for _, p in known)
    expected = max(p["gen_max"] for _, p in known)
    msg = f"PCIe generation: {len(known) - len(low)}/{len(known)} GPUs at max"
    if low:
        msg += (f"; {listed(low)} (not judged: idle GPUs lower the PCIe generation to save power; "
                "recheck under load if bandwidth is low)")
    return fact_row(host, "pcie_gen", value, expected, True, msg, "nvidia-smi")


def _note_correctable(rows: list[dict], gpus: list[dict]) -> None:
    total = 0
    for g in gpus:
        for name, value in ((g.get("ecc") or {}).get("volatile") or {}).items():
            if "Correctable" in name and "Uncorrectable" not in name and isinstance(value, int):
                total += value
    if total:
        for r in rows:
            if r["fact"] == "ecc":
                r["message"] += f" ({total} correctable errors, not judged)"


def check_dcgmi(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    result = parsed.get("result")
    failed = [t["name"] for t in parsed.get("tests") or [] if t.get("result") == "Fail"]
    notes = failed + [str(e) for e in parsed.get("errors") or []]
    ok = result in ("Pass", "Warn", "Skip")
    msg = f"dcgmi diag: {result or 'no result'}"
    if notes:
        msg += f": {listed(notes)}"
    warnings = [w for t in parsed.get("tests") or [] for w in t.get("warnings") or []]
    warnings += list(parsed.get("warnings") or [])
    if warnings:
        msg += f" (warnings: {listed(warnings)})"
    return [fact_row(host, "dcgmi_diag", result, "Pass", ok, msg, "dcgmi")]


# --------------------------------------------------------------------------- fabric (NVL72)

def fabric_in_progress(parsed: dict[str, Any]) -> str | None:
    """Retry reason: a GPU whose fabric registration has not finished."""
    n = sum(1 for g in parsed.get("gpus") or [] if ((g.get("fabric") or {}).get("state") or "") == "In Progress")
    return f"In Progress on {n} GPU{'s' if n > 1 else ''}" if n else None


def _pair(fab: dict[str, Any]) -> str:
    return f"{fab.get('cluster_uuid')}/{fab.get('clique_id')}"


def check_fabric(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """Fabric State/Status, Health, ClusterUUID/CliqueId and Platform Info of every GPU."""
    rows = check_query(host, parsed, expect)
    gpus = parsed.get("gpus") or []
    cards = card_indices(parsed, expect)
    state_bad: list[tuple[int | None, str]] = []
    health_bad: list[tuple[int | None, str]] = []
    limited: list[tuple[int | None, str]] = []
    clique_bad: list[str] = []
    pairs: dict[str, int] = {}
    for i, g in enumerate(gpus):
        fab, name, card = g.get("fabric"), _gpu_name(g, i), cards[i]
        if fab is None:
            state_bad.append((card, f"{name}: no Fabric section"))
            continue
        state, status = fab.get("state"), fab.get("status")
        if state != "Completed" or status != "Success":
            state_bad.append((card, f"{name}: State {state or 'N/A'}, Status {status or 'N/A'}"))
        health = fab.get("health") or {}
        summary, bandwidth = health.get("summary"), health.get("bandwidth")
        flags = [k.replace("_", " ") for k, v in health.items()
                 if k not in ("summary", "bandwidth") and v not in (None, "False")]
        if bandwidth == "Limited Capacity" and summary in ("Healthy", "Limited Capacity", None):
            limited.append((card, f"{name}: Bandwidth Limited Capacity (Summary {summary or 'N/A'})"))
        elif summary != "Healthy" or bandwidth != "Full" or flags:
            health_bad.append((card, f"{name}: Summary {summary or 'N/A'}, Bandwidth {bandwidth or 'N/A'}"
                               + (f", {', '.join(flags)}" if flags else "")))
        uuid, clique = fab.get("cluster_uuid"), fab.get("clique_id")
        if not uuid or uuid == _ZERO_UUID or not clique:
            clique_bad.append(f"{name}: ClusterUUID {uuid or 'N/A'}, CliqueId {clique if clique is not None else 'N/A'}")
        else:
            pairs[_pair(fab)] = pairs.get(_pair(fab), 0) + 1
    n = len(gpus)
    done = n - len(state_bad)
    # Every GPU of the tray not registered is the tray's (its fabric, its IMEX channel);
    # some GPUs of a whole listing are those cards'.
    state_cards = _on_cards(state_bad, "fabric registration") if len(state_bad) < n else None
    rows.append(fact_row(host, "fabric_state", done, max(n, expect.cards), not state_bad and n >= expect.cards,
                         f"fabric registration Completed/Success on {done}/{n} GPUs"
                         + (f": {listed([t for _, t in state_bad])}" if state_bad else ""), "nvidia-smi",
                         cards=state_cards))
    healthy = n - len(health_bad) - len(limited)
    msg = f"fabric health Healthy/Full on {healthy}/{n} GPUs"
    if health_bad or limited:
        msg += f": {listed([t for _, t in health_bad + limited])}"
    if limited and not health_bad:
        msg += " (Limited Capacity: the GPU works with less NVLink bandwidth; a warning)"
    value = "Limited Capacity" if limited and not health_bad else healthy
    # Limited Capacity is a card's own state, a warning on each card named
    what = "fabric health" if health_bad else "fabric health (Limited Capacity: less NVLink bandwidth; a warning)"
    row = fact_row(host, "fabric_health", value, "Healthy/Full" if limited else n,
                   not health_bad and not limited, msg, "nvidia-smi",
                   cards=_on_cards(health_bad + limited, what))
    if limited and not health_bad:
        row["severity"] = "warning"
    rows.append(row)
    if len(pairs) > 1:
        clique_bad.append(f"GPUs of one tray in {len(pairs)} cliques: "
                          + ", ".join(f"{p} ({c} GPUs)" for p, c in sorted(pairs.items())))
    rows.append(fact_row(host, "fabric_clique", pairs or None, "one non-zero ClusterUUID/CliqueId",
                         not clique_bad and bool(pairs),
                         (f"ClusterUUID/CliqueId {', '.join(sorted(pairs))}" if pairs else "no clique")
                         + (f": {listed(clique_bad)}" if clique_bad else ""), "nvidia-smi"))
    rows.append(_platform_info(host, gpus))
    return rows


def _platform_info(host: str, gpus: list[dict]) -> dict:
    plat = [(i, g, g.get("platform")) for i, g in enumerate(gpus)]
    known = [(i, g, p) for i, g, p in plat if p]
    if not known:
        return fact_row(host, "platform_info", None, None, False, "no Platform Info in nvidia-smi -q", "nvidia-smi")
    bad: list[str] = []
    chassis = {p.get("chassis_serial") for _, _, p in known}
    slots = {(p.get("slot"), p.get("tray")) for _, _, p in known}
    if len(chassis) > 1:
        bad.append(f"GPUs name {len(chassis)} chassis serials: {', '.join(sorted(map(str, chassis)))}")
    if len(slots) > 1:
        bad.append(f"GPUs name {len(slots)} slot/tray pairs")
    for i, g, p in known:
        if p.get("peer_type") not in ("Switch Connected", None):
            bad.append(f"{_gpu_name(g, i)}: peer type {p.get('peer_type')}")
    first = known[0][2]
    where = f"{first.get('chassis_serial')}:{first.get('slot')}:{first.get('tray')}"
    return fact_row(host, "platform_info", where, None, not bad,
                    f"chassis:slot:tray {where} on {len(known)} GPUs" + (f": {listed(bad)}" if bad else ""),
                    "nvidia-smi")


def check_imex(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """One tray's view of the IMEX domain. A node not READY is not this tray's fault: the
    rack-wide step (:func:`domain_check`) names the tray that is that node. Here: versions
    differ, pairs of READY nodes not Connected, the domain not UP while every node is READY,
    a node count other than the supernode's hosts, a cut-short table."""
    nodes = parsed.get("nodes") or []
    down = [n for n in nodes if n["state"] != "READY"]
    up = {str(n["index"]) for n in nodes if n["state"] == "READY"}
    bad: list[str] = []
    versions = sorted({n["version"] for n in nodes})
    if len(versions) > 1:
        bad.append(f"versions differ: {', '.join(versions)}")
    cells = [(a, b, c) for a, row in (parsed.get("matrix") or {}).items() for b, c in row.items()
             if c != "C" and a in up and b in up]
    if cells:
        bad.append(f"{len(cells)} pairs of READY nodes not Connected ("
                   + listed([f"{a}->{b} {c}" for a, b, c in cells]) + ")")
    if parsed.get("domain_state") != "UP" and not down:
        bad.append(f"Domain State {parsed.get('domain_state') or 'not printed'}")
    want = expect.domain_hosts
    if want and len(nodes) != want:
        bad.append(f"{len(nodes)} IMEX nodes, the supernode has {want} hosts")
    bad += [str(e) for e in parsed.get("errors") or []]
    ready = len(nodes) - len(down)
    msg = (f"IMEX domain {parsed.get('domain_state') or '?'}: {ready}/{len(nodes)} nodes READY"
           + (f", version {versions[0]}" if len(versions) == 1 else ""))
    if down:
        msg += ("; not READY (named at the tray that is the node, by the rack-wide step): "
                + listed([f"node #{n['index']} {n['address']} {n['state']}" for n in down]))
    if bad:
        msg += f": {listed(bad)}"
    view = {"ready": ready, "nodes": [[n["index"], n["address"], n["state"]] for n in nodes]}
    return [fact_row(host, "imex_domain", view, want or len(nodes), not bad, msg, "nvidia-imex-ctl")]


def _canon(address: str) -> str:
    """An address as ``ipaddress`` writes it (FD00:0::1 and fd00::1 differ in text only);
    a host name as it is."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def imex_addresses(hosts: tuple[str, ...],
                   host_info: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(IMEX address -> tray, tray -> the inventory key it came from) for the supernode's
    ``hosts``: each tray's ``imex_address``, else its SSH ``address`` (IMEX often runs on
    that interface). An SSH address that two trays share, or that a tray's ``imex_address``
    claims, identifies neither and is left out (the inventory refuses two trays with one
    ``imex_address``)."""
    by_addr: dict[str, str] = {}
    key: dict[str, str] = {}
    guesses: dict[str, list[str]] = {}
    for h in hosts:
        info = (host_info or {}).get(h)
        if info is None:
            continue
        if getattr(info, "imex_address", None):
            by_addr[_canon(info.imex_address)] = h
            key[h] = "imex_address"
        elif getattr(info, "address", None):
            guesses.setdefault(_canon(info.address), []).append(h)
    for addr, trays in guesses.items():
        if len(trays) == 1 and addr not in by_addr:
            by_addr[addr] = trays[0]
            key[trays[0]] = "address"
    return by_addr, key


def imex_down_nodes(platform: Any, supernode: str, hosts: tuple[str, ...], rows: list[dict],
                    host_info: Mapping[str, Any] | None = None) -> list[dict]:
    """Each IMEX node not READY in most trays' views, as an ``imex_node`` finding on the
    tray that is that node.

    The tray is found by the node's address first: the tray whose inventory
    ``imex_address`` (else ``address``) it is (:func:`imex_addresses`). Only when no tray has
    that address is IMEX's node order used: IMEX numbers its nodes in nodes_config.cfg's
    order, and the supernode's hosts are taken to be in that order (node #k is the k-th
    host). That holds only when IMEX lists as many nodes as the supernode has hosts, no
    node found by address sits at another place in the order, and the k-th host has no
    ``imex_address`` of its own that differs. Otherwise every tray that sees the node down
    carries the finding, saying it cannot tell which tray it is; never a guess."""
    views = {r["host"]: r["value"]["nodes"] for r in rows
             if r.get("fact") == "imex_domain" and r.get("status") == "ok" and isinstance(r.get("value"), dict)}
    if not views:
        return []
    seen: dict[tuple[int, str], list[tuple[str, str]]] = {}  # node -> (tray, state) per view
    for tray, nodes in views.items():
        for index, address, state in nodes:
            seen.setdefault((int(index), address), []).append((tray, state))
    by_addr, key = imex_addresses(hosts, host_info)
    found = {node: by_addr[_canon(node[1])] for node in seen if _canon(node[1]) in by_addr}
    counts = {len(nodes) for nodes in views.values()}
    mapped = counts == {len(hosts)}
    # the host order against the addresses: one node found by address elsewhere than at its
    # place in the order, and the order names no tray
    disagree = [(i, t) for (i, _), t in sorted(found.items()) if mapped and (i >= len(hosts) or hosts[i] != t)]
    out = []
    for (index, address), states in sorted(seen.items()):
        down = [(t, st) for t, st in states if st != "READY"]
        if len(down) * 2 <= len(states):
            continue  # READY in most views: a tray that sees it down has its own view's finding
        state = max({st for _, st in down}, key=lambda st: sum(1 for _, s in down if s == st))
        what = (f"IMEX node #{index} {address} is {state} in {len(down)} of {len(states)} trays' "
                f"nvidia-imex-ctl -N views")
        tray = found.get((index, address))
        if tray is not None:
            out.append(fact_row(tray, "imex_node", state, "READY", False,
                                f"{what}: node #{index} is {tray} (by address {address}, its inventory "
                                f"{key[tray]})", "nvidia-imex-ctl"))
            continue
        at = hosts[index] if mapped and index < len(hosts) else None
        own = getattr((host_info or {}).get(at), "imex_address", None) if at else None
        if at is not None and not disagree and (own is None or _canon(own) == _canon(address)):
            out.append(fact_row(at, "imex_node", state, "READY", False,
                                f"{what}: node #{index} is {at} (by IMEX node order, no host has that address: "
                                f"the {supernode} hosts taken in nodes_config.cfg order)", "nvidia-imex-ctl"))
            continue
        if disagree:
            i, t = disagree[0]
            why = (f"cannot tell which tray is node #{index}: no host has address {address}, and the "
                   f"{supernode} host order disagrees with the addresses (node #{i} is {t} by address, "
                   f"{hosts[i] if i < len(hosts) else 'no host'} by order)")
        elif at is not None:
            why = (f"cannot tell which tray is node #{index}: no host has address {address}, and "
                   f"{at}, the host at its place in the order, has imex_address {own}")
        else:
            why = (f"cannot tell which tray is node #{index}: no host has address {address}, and IMEX lists "
                   f"{', '.join(map(str, sorted(counts)))} nodes, {supernode} has {len(hosts)} hosts")
        out += [fact_row(t, "imex_node", state, "READY", False, f"{what}; {why}", "nvidia-imex-ctl")
                for t, _ in down]
    return out


def parse_systemctl_active(text: str) -> dict[str, Any]:
    state = (text.strip().splitlines() or [""])[-1].strip()
    return {"tool": "systemctl", "state": state or None, "errors": []}


def check_fabric_manager(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    state = parsed.get("state")
    return [fact_row(host, "fabric_manager", state, "active", state == "active",
                     f"nvidia-fabricmanager is {state or 'not reported'} (required on HGX)", "systemctl")]


def check_mnnvl(parsed: dict[str, Any], expected_ranks: int) -> tuple[bool, str]:
    """An NCCL_DEBUG=INFO log of a rack-wide job: MNNVL on with cliqueSize == the rack's ranks."""
    if parsed.get("not_working"):
        return False, f"NCCL: {parsed['not_working'][0]}"
    if parsed.get("mnnvl") is not True:
        return False, "NCCL log shows no MNNVL 1 (multi-node NVLink off or NCCL_DEBUG=INFO not set)"
    sizes = parsed.get("clique_sizes") or []
    if sizes != [expected_ranks]:
        return False, f"NCCL MNNVL cliqueSize {', '.join(map(str, sizes)) or '?'}, the rack has {expected_ranks} ranks"
    return True, f"NCCL MNNVL on, cliqueSize {expected_ranks}"


# --------------------------------------------------------------------------- across the rack

def domain_check(platform: Any, supernode: str, hosts: tuple[str, ...], rows: list[dict],
                 host_info: Mapping[str, Any] | None = None) -> list[dict]:
    """Group the trays of a supernode by (ClusterUUID, CliqueId) from their ``fabric_clique``
    rows; the group must be every tray and ``domain`` GPUs. A split is a finding on the
    trays outside the largest group (on every tray when halves tie), naming each group."""
    per_host: dict[str, dict[str, int]] = {}
    where: dict[str, str] = {}
    for r in rows:
        if r.get("fact") == "fabric_clique" and r.get("status") == "ok" and isinstance(r.get("value"), dict):
            per_host[r["host"]] = r["value"]
        if r.get("fact") == "platform_info" and r.get("status") == "ok" and r.get("value"):
            where[r["host"]] = r["value"]
    if not per_host:
        return imex_down_nodes(platform, supernode, hosts, rows, host_info)
    groups: dict[str, dict[str, int]] = {}
    for h, pairs in per_host.items():
        for pair, n in pairs.items():
            groups.setdefault(pair, {})[h] = groups.setdefault(pair, {}).get(h, 0) + n
    unknown = [h for h in hosts if h not in per_host]
    # Trays without a clique (fabric not registered, unreachable) carry their own
    # findings; the domain is judged over the trays that report one.
    want_hosts = len(hosts) - len(unknown)
    want_gpus = want_hosts * platform.cards_per_host

    def describe(pair: str) -> str:
        uuid, _, clique = pair.rpartition("/")
        members = groups[pair]
        return (f"(ClusterUUID {uuid}, CliqueId {clique}): {_span(sorted(members, key=hosts.index))} "
                f"({len(members)} trays, {sum(members.values())} GPUs)")

    out: list[dict] = []
    if len(groups) == 1:
        pair = next(iter(groups))
        members = groups[pair]
        gpus = sum(members.values())
        ok = len(members) == want_hosts and gpus == want_gpus
        msg = f"NVLink domain of {supernode}: {describe(pair)}; expected {want_hosts} trays, {want_gpus} GPUs"
        if unknown:
            msg += f" (of {len(hosts)}; no clique from {_span(unknown)}, judged on their own)"
        for h in members:
            out.append(fact_row(h, "fabric_domain", gpus, want_gpus, ok, msg, "nvidia-smi"))
    else:
        biggest = max(len(m) for m in groups.values())
        largest = [p for p, m in groups.items() if len(m) == biggest]
        msg = (f"clique split in {supernode}: " + "; ".join(describe(p) for p in sorted(groups, key=lambda p: -len(groups[p])))
               + f"; expected one clique of {want_hosts} trays, {want_gpus} GPUs"
               + (f" (no clique from {_span(unknown)})" if unknown else ""))
        for pair, members in groups.items():
            ok = len(largest) == 1 and pair == largest[0]
            for h in members:
                out.append(fact_row(h, "fabric_domain", sum(members.values()), want_gpus, ok, msg, "nvidia-smi"))
    out += imex_down_nodes(platform, supernode, hosts, rows, host_info)
    # (chassis, slot, tray) must be unique per tray across the rack.
    seen: dict[str, list[str]] = {}
    for h, w in where.items():
        seen.setdefault(w, []).append(h)
    for w, hs in seen.items():
        if len(hs) > 1:
            for h in hs:
                out.append(fact_row(h, "tray_identity", w, "unique per tray", False,
                                    f"chassis:slot:tray {w} is reported by {len(hs)} trays: {', '.join(sorted(hs))}",
                                    "nvidia-smi"))
    return out


def _span(hosts: list[str]) -> str:
    if len(hosts) <= 3:
        return ", ".join(hosts)
    return f"{hosts[0]}..{hosts[-1]}"


# --------------------------------------------------------------------------- registry

COMMANDS: dict[str, Any] = {c.name: c for c in (
    command("query_gpu", "nvidia-smi", nvidia_smi.query_gpu_command(), nvidia_smi.parse_query_gpu_csv,
            check_card_count, "card_count", "gpu_uuid"),
    command("topo", "nvidia-smi", ["nvidia-smi", "topo", "-m"], nvidia_smi.parse_topo, check_topology,
            "gpu_topology"),
    command("topo_sanity", "nvidia-smi", ["nvidia-smi", "topo", "-m"], nvidia_smi.parse_topo,
            check_topology_platform, "gpu_topology", "topo_sanity"),
    command("nvlink_status", "nvidia-smi", ["nvidia-smi", "nvlink", "-s"], nvidia_smi.parse_nvlink_status,
            check_nvlink, "nvlink"),
    command("nvlink_errors", "nvidia-smi", ["nvidia-smi", "nvlink", "-e"], nvidia_smi.parse_nvlink_errors,
            check_nvlink_errors, "nvlink_errors"),
    command("query", "nvidia-smi", ["nvidia-smi", "-q"], nvidia_smi.parse_query, check_query,
            "gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons"),
    command("query_fabric", "nvidia-smi", ["nvidia-smi", "-q", "-x"], fabric.parse_query_xml, check_fabric,
            "gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons",
            "fabric_state", "fabric_health", "fabric_clique", "platform_info", retry_while=fabric_in_progress),
    command("imex", "nvidia-imex-ctl", ["nvidia-imex-ctl", "-N"], fabric.parse_imex_ctl, check_imex,
            "imex_domain"),
    command("fabric_manager", "systemctl", ["systemctl", "is-active", "nvidia-fabricmanager"],
            parse_systemctl_active, check_fabric_manager, "fabric_manager"),
    IBSTAT,
    # Level 1: the quick deployment checks (seconds); -r 2/3 take minutes per host.
    command("dcgmi_diag", "dcgmi", ["dcgmi", "diag", "-r", "1"], dcgmi.parse_dcgmi_diag, check_dcgmi,
            "dcgmi_diag"),
)}

# The commands for a host whose inventory names no platform (sncheck before platforms).
DEFAULT_CHECKS = ("query_gpu", "topo", "nvlink_status", "nvlink_errors", "query", "ibstat", "dcgmi_diag")

FACTS: dict[str, tuple[str, str]] = {
    # fact: (command, what makes it fail)
    "reachable": ("", "SSH connect, host key or login failed (one row, status unreachable)"),
    "card_count": ("query_gpu", "GPUs listed by --query-gpu differ from the inventory's cards"),
    "gpu_uuid": ("query_gpu", "never: each GPU's UUID is recorded (the Prometheus card series' UUID label)"),
    "gpu_topology": ("topo", "never: the link type of each GPU pair is recorded"),
    "topo_sanity": ("topo_sanity", "a GPU pair not over NVLink (SYS, PHB...), a GPU without a NIC at PIX/PXB"),
    "nvlink": ("nvlink_status", "an inactive link, fewer links or a lower speed than the platform's design, "
                                "an NVML error"),
    "nvlink_errors": ("nvlink_errors", "an NVML error; the counters are recorded, and the rules judge their "
                                       "growth during the run (sncheck.health.fabric)"),
    "gpu_report": ("query", "nvidia-smi -q printed errors or fewer GPUs than attached"),
    "pcie_width": ("query", "a link narrower than its max width"),
    "pcie_gen": ("query", "never: gen below max is recorded (idle GPUs downshift)"),
    "ecc": ("query", "volatile uncorrectable ECC errors, SRAM threshold exceeded"),
    "remapped_rows": ("query", "a pending row remap or a remapping failure"),
    "retired_pages": ("query", "a pending page retirement"),
    "clock_reasons": ("query", "HW Slowdown, HW Thermal, HW Power Brake or SW Thermal slowdown active"),
    "fabric_state": ("query_fabric", "State not Completed or Status not Success on a GPU (In Progress past "
                                     "the retry window; Not Supported on GB200/GB300)"),
    "fabric_health": ("query_fabric", "Summary not Healthy, Bandwidth not Full (Limited Capacity), or a "
                                      "health row True"),
    "fabric_clique": ("query_fabric", "ClusterUUID or CliqueId zero or N/A, or a tray's GPUs in two cliques"),
    "platform_info": ("query_fabric", "GPUs of a tray name different chassis/slot/tray, or peer type not "
                                      "Switch Connected"),
    "fabric_domain": ("(whole rack)", "the rack's trays are not one (ClusterUUID, CliqueId) group of the "
                                      "expected trays and GPUs: a split clique, named half by half"),
    "tray_identity": ("(whole rack)", "two trays report the same chassis:slot:tray"),
    "imex_node": ("(whole rack)", "this tray's IMEX node is not READY in most trays' nvidia-imex-ctl -N views "
                                  "(the tray by its inventory imex_address or address; when no tray has "
                                  "that address, node #k is the supernode's k-th host)"),
    "imex_domain": ("imex", "a pair of READY nodes not Connected, versions differ, Domain not UP with every "
                            "node READY, or fewer IMEX nodes than hosts"),

    "fabric_manager": ("fabric_manager", "nvidia-fabricmanager not active (HGX only)"),
    **IB_FACTS,
    "dcgmi_diag": ("dcgmi_diag", "a Fail result or a DCGM error"),
}
