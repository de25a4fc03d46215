"""NVIDIA per-GPU checks: pure functions from parsed nvidia-smi / dcgmi output to
``host_fact`` rows (the commands that feed them are listed in :mod:`.checks`).

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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sncheck.model import Status
from sncheck.vendors.facts import Expect, device_ids, fact_row, listed, on_cards as _on_cards
from sncheck.vendors.nvidia import nvidia_smi

TROUBLE_CLOCK_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown",
                         "SW Thermal Slowdown")


def gpu_name(gpu: dict[str, Any], i: int) -> str:
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


def check_topology(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:  # noqa: ARG001 -- the host check interface (host, parsed, expect)
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
    # a PCIe board's links no bridge wires are inactive by design (nvidia_smi.pcie_board): without a
    # platform's design, such a board with no link up has no bridge (0/0); a bridge joins two boards,
    # so each bridged board (any link up) has as many links up as the most any bridged board has
    pcie = {i for i, g in enumerate(gpus) if not designed_links and nvidia_smi.pcie_board(g.get("name"))}
    bridged, peer = nvidia_smi.bridged_ups(gpus) if not designed_links else ({}, 0)
    problems: list[tuple[int | None, str]] = []
    for i, g in enumerate(gpus):
        name, card = f"GPU {g.get('index', i)}", _listed_card(g, expect)
        for err in g.get("errors") or []:
            problems.append((card, f"{name}: {err}"))
        if bridged.get(i, peer) < peer:
            problems.append((card, f"{name}: {bridged[i]} links up, its bridged peer {peer}"))
        for ln in g["links"]:
            if not ln.get("active"):
                if i not in pcie:
                    problems.append((card, f"{name} link {ln['link']} inactive"))
            elif top is not None and ln.get("speed_GBps") is not None and ln["speed_GBps"] < top * 0.99:
                problems.append((card, f"{name} link {ln['link']} at {ln['speed_GBps']:g} GB/s "
                                       f"({whose} {top:g} GB/s)"))
        if len(g["links"]) < per_gpu and i not in pcie:
            problems.append((card, f"{name} lists {len(g['links'])} links, "
                             + (f"platform has {per_gpu}" if designed_links else f"others {per_gpu}")))
    loose = [e for e in parsed.get("errors") or [] if not e.startswith("GPU ")]
    problems += [(None, e) for e in loose]
    bad = [text for _, text in problems]
    n_gpus = max(len(gpus), expect.cards) if designed_links else len(gpus)
    expected = per_gpu * (n_gpus - len(pcie)) + peer * len(bridged)
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
    problems = [(i, f"{gpu_name(gpus[i], i)}: {p}") for i, s in seen if (p := judge(s))]
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
    low = [f"{gpu_name(gpus[i], i)}: gen {p['gen_current']} of {p['gen_max']}"
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


def check_dcgmi(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:  # noqa: ARG001 -- the host check interface (host, parsed, expect)
    """The diagnostic's result. A test dcgmi skipped (``Skip``, ``Skip - All``: a GPU the
    DCGM version does not support, a plugin not installed) measured nothing: it is "not
    measured" (a check finding: the gate fails, nothing is isolated), never a pass. A test at
    ``Warn`` passed with warnings (DCGM's ``DCGM_DIAG_RESULT_WARN``, dcgm_structs.h): a
    warning-level fact (the host-fact-warning rule) naming each such test and its text, never a
    pass and never a hardware fault."""
    result = parsed.get("result")
    tests = parsed.get("tests") or []
    failed = [t["name"] for t in tests if t.get("result") == "Fail"]
    skipped = [t["name"] for t in tests if t.get("result") == "Skip"]
    notes = failed + [str(e) for e in parsed.get("errors") or []]
    # an error beside a Pass (dcgmi printing every test passed, then exiting 226) is no pass
    ok = result == "Pass" and not skipped and not parsed.get("errors")
    # each test at Warn with what it said (hostile round 11: 'Warn' alone named no test)
    warned = [t for t in tests if t.get("result") == "Warn"]
    notes += [f"{t['name']} at Warn" + (f" ({listed(t['warnings'])})" if t.get("warnings") else "") for t in warned]
    msg = f"dcgmi diag: {result or 'no result'}"
    if notes:
        msg += f": {listed(notes)}"
    warnings = [w for t in tests if t not in warned for w in t.get("warnings") or []]
    warnings += list(parsed.get("warnings") or [])
    if warnings:
        msg += f" (warnings: {listed(warnings)})"
    row = fact_row(host, "dcgmi_diag", result, "Pass", ok, msg, "dcgmi")
    warning = result == "Warn" and not parsed.get("errors")
    if warning:
        row["severity"] = "warning"  # passed with warnings: judged by the host-fact-warning rule
    if skipped and result in ("Pass", "Warn", "Skip") and not failed:
        row["message"] += f"; not judged: {listed(skipped)} skipped by dcgmi (a skip measures nothing)"
        if not parsed.get("errors"):  # an error beside the skip fails the fact: no skip's allowance passes it
            row["ok"], row["status"] = False, Status.NOT_MEASURED
            row["skipped"] = skipped  # the rules may allow a named test's skip (allow_skips)
            row.pop("severity", None)
            if warning:  # a skip the rules allow must not take the warning with it
                return [row, {**fact_row(host, "dcgmi_diag", result, "Pass", False, msg, "dcgmi"), "severity": "warning"}]
    return [row]
