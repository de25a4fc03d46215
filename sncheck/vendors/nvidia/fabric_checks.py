"""NVIDIA scale-up fabric checks (NVL72 fabric and IMEX, HGX fabric manager) and the
rack-wide step over a supernode's trays (:func:`domain_check`).

Choices worth knowing:

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
from collections.abc import Mapping
from typing import Any

from sncheck.vendors.facts import Expect, fact_row, listed, on_cards as _on_cards
from sncheck.vendors.nvidia.gpu_checks import card_indices, check_query, gpu_name

_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


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
        fab, name, card = g.get("fabric"), gpu_name(g, i), cards[i]
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
            bad.append(f"{gpu_name(g, i)}: peer type {p.get('peer_type')}")
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


def imex_down_nodes(platform: Any, supernode: str, hosts: tuple[str, ...], rows: list[dict],  # noqa: ARG001 -- the domain check interface
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


def check_fabric_manager(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:  # noqa: ARG001 -- the host check interface (host, parsed, expect)
    state = parsed.get("state")
    return [fact_row(host, "fabric_manager", state, "active", state == "active",
                     f"nvidia-fabricmanager is {state or 'not reported'} (required on HGX)", "systemctl")]


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
