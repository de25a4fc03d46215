"""Merging findings into one per culprit, and values as results.json holds them.

``Finding`` itself lives in :mod:`sncheck.model`."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from sncheck.model import About, EntityKind, Finding, card_of, host_of, hosts_of



def merge_findings(findings: list[Finding],
                   cards_of_host: Callable[[str], list[str]] | None = None,
                   supernode_of_host: Callable[[str], str | None] | None = None) -> list[Finding]:
    """One finding per culprit: the most severe stays, the others become its evidence.

    Attribution is honest:

    * a card finding becomes a host finding only when every card of the host shows the
      same rule (``cards_of_host`` gives a host's cards); a host finding absorbs card
      findings only when it says every card is alike (localized from pair tests), and
      never a card its host's tool named for another fact;
    * a finding about a check (a missing tool, no golden reference) absorbs nothing and
      is absorbed by nothing: a card fault on a host without dcgmi is still the card;
    * a link finding folds into a culprit at either end (a card, or a hardware host
      finding, or for a rail pair between two hosts the NIC of that rail), unless it is well
      below what its two ends explain (``independent`` in its evidence); a host-level golden
      step-time symptom folds into a card or link on it, or into the supernode culprit
      that holds the host (``supernode_of_host``: a whole domain slow alike makes each of
      its hosts' replicas slow; the retest re-measures the folded symptom);
    * a card, link or host inside a supernode culprit (``supernode_of_host``) at least as
      severe folds into it, unless its tool named the card (or a host fact), the link is
      independent, or the host is unreachable; a domain of one host judged slow as a
      whole (named as the host, evidence ``domain``) is such a culprit for its cards;
    * card and link symptoms of an unreachable host are dropped (the host is the finding).
    """
    by_key: dict[tuple[str, str], Finding] = {}
    for f in sorted(findings, key=lambda f: -f.severity.rank):
        main = by_key.get((f.entity, f.about))
        if main is None:
            by_key[(f.entity, f.about)] = f
        else:
            fold(main, f)
    checks = [f for (_, about), f in by_key.items() if about == About.CHECK]
    hardware = _lift_alike({e: f for (e, about), f in by_key.items() if about != About.CHECK}, cards_of_host)
    unreachable = {f.entity for f in hardware.values() if f.entity_kind == "host" and f.rule == "host-unreachable"}
    card_hosts: dict[str, Finding] = {}  # host -> a card or link culprit on it
    for f in hardware.values():
        if f.entity_kind in ("card", "link"):
            for end in f.entity.split("<->"):
                card_hosts.setdefault(host_of(end), f)
    host_culprits = {f.entity: f for f in hardware.values()
                     if f.entity_kind == "host" and f.rule not in FOLDABLE_HOST_RULES}
    domains = {f.entity: f for f in hardware.values() if f.entity_kind == "supernode"}
    # A domain of one host (MI300X: each host its own supernode) is named as that host.
    domains.update({sn: f for f in hardware.values() if f.entity_kind == "host" and (sn := _domain_of(f))})
    out = []
    for f in hardware.values():
        if f.entity_kind in ("card", "link") and any(_on_host(f.entity, h) for h in unreachable):
            continue
        host = host_of(f.entity)
        if f.entity_kind == "card" and host in host_culprits and _every_card_alike(host_culprits[host]) \
                and not _named_by_its_tool(f, host_culprits[host]):
            # Every card of the host is bad alike: that is the host's finding.
            fold(host_culprits[host], f)
            continue
        domain = _domain_holding(f, domains, supernode_of_host)
        if domain is not None and domain is not f and (f.entity_kind == "card" and not _named_by_its_tool(f, domain) or (
                f.entity_kind == "host" and "fact" not in f.evidence and f.rule != "host-unreachable")):
            # Inside a domain slow as a whole: a peer statistic over its tier, pooled with
            # the healthy domains, splits it into cards and links "between two otherwise
            # healthy cards". Its retest re-measures each folded symptom.
            fold(domain, f, named=True)
            continue
        if f.entity_kind == "nic" and "fact" not in f.evidence:
            # A NIC named from pair tests (its card's pairs inside the domain looked healthy
            # under this rule) while its card is a culprit whose own scale-out pairs are bad
            # too: the card explains the NIC's symptom. So does a card that is a culprit at
            # all, for a NIC named from pairwise collectives (the stress layer): those mix
            # both ends' compute and launch latency, which a sick card slows on every tier.
            # A NIC its tool named is never folded.
            owner = hardware.get(card_of(f.entity))
            if owner is not None and owner.entity_kind == "card" and (f.layer == "stress" or (
                    (owner.evidence.get("tiers") or {}).get("scale_out") or {}).get("bad_pairs")):
                fold(owner, f)
                continue
        if f.entity_kind == "link":
            # A link finding means both cards are healthy elsewhere; if an end is already a
            # culprit (found by another symptom or layer), the link is its symptom.
            owner = next((hardware[c] for c in f.entity.split("<->") if c in hardware), None)
            owner = owner or next((host_culprits[h] for h in host_culprits if _on_host(f.entity, h)), None)
            owner = owner or next((hardware[n] for n in _rail_nics(f.entity) if n in hardware), None)
            owner = owner or domain
            if f.evidence.get("independent"):
                owner = None  # well below what its two ends explain: a fault of its own
            if owner is not None and "fact" in f.evidence and owner.severity.rank < f.severity.rank:
                # A rail pair's own tool (ib_write_bw) failing is not folded into a weaker
                # symptom at one end: that one's retest would release it unmeasured.
                owner = None
            if owner is not None:
                fold(owner, f, named=True)
                continue
        if f.entity_kind == "host" and f.rule in FOLDABLE_HOST_RULES:
            owner = card_hosts.get(f.entity)
            if owner is None and supernode_of_host is not None:
                owner = domains.get(supernode_of_host(f.entity) or "")
            if owner is not None:
                fold(owner, f, named=True)
                continue
        out.append(f)
    out += checks
    return sorted(out, key=lambda f: (-f.severity.rank, f.about.value, f.entity_kind.value, f.entity))


def _domain_holding(f: Finding, domains: dict[str, Finding],
                    supernode_of_host: Callable[[str], str | None] | None) -> Finding | None:
    """The supernode culprit holding a card or link (for a link: either end's domain), as
    severe as the finding at least (a critical card in a domain faint as a whole is a
    culprit of its own)."""
    if supernode_of_host is None or not domains or f.entity_kind not in ("card", "link", "host"):
        return None
    for host in hosts_of(f.entity):
        d = domains.get(supernode_of_host(host) or "")
        if d is not None and d.severity.rank >= f.severity.rank:
            return d
    return None


def _domain_of(f: Finding) -> str | None:
    """The scale-up domain a finding judged slow as a whole (rule ``per: supernode``:
    evidence ``domain``), as its own symptom or a folded one."""
    for ev in [f.evidence, *(g.evidence for g in f.folded)]:
        if isinstance(ev.get("domain"), str):
            return ev["domain"]
    return None


def _every_card_alike(f: Finding) -> bool:
    """A host finding that stands for all its cards alike: localized from pair tests
    (every card bad with its partners) or lifted from one rule on every card."""
    return "pairs" in f.evidence or bool(f.evidence.get("every_card"))


def _named_by_its_tool(card: Finding, host: Finding) -> bool:
    """A card the host's own tool named (a pending remap in its ``nvidia-smi -q`` section)
    for another fact than the host finding's: its own culprit, never folded into a host
    symptom that is shared alike (a timing symptom the retest may release)."""
    fact = card.evidence.get("fact")
    return isinstance(fact, str) and host.evidence.get("fact") != fact


def _lift_alike(hardware: dict[str, Finding], cards_of_host: Callable[[str], list[str]] | None) -> dict[str, Finding]:
    """Card findings of one rule on every card of a host become one host finding."""
    if cards_of_host is None:
        return hardware
    by_host_rule: dict[tuple[str, str], list[Finding]] = {}
    for f in hardware.values():
        if f.entity_kind == "card":
            by_host_rule.setdefault((host_of(f.entity), f.rule), []).append(f)
    for (host, rule), cards in by_host_rule.items():
        members = cards_of_host(host)
        if len(members) < 2 or {f.entity for f in cards} != set(members):
            continue
        if any(f.entity not in hardware for f in cards):
            continue  # already lifted under another rule
        worst = max(cards, key=lambda f: f.severity.rank)
        lifted = Finding(host, EntityKind.HOST, worst.layer, rule, worst.severity,
                         f"host {host}: every card alike: {worst.message}",
                         {**{k: v for k, v in worst.evidence.items() if k != "related"}, "every_card": True},
                         basis=worst.basis, about=worst.about)
        existing = hardware.get(host)
        for f in cards:
            hardware.pop(f.entity, None)
        owner = existing if existing is not None else lifted
        for f in cards:
            fold(owner, f, named=True)
        if existing is not None:
            existing.evidence["every_card"] = True
        else:
            hardware[host] = lifted
    return hardware


FOLDABLE_HOST_RULES = {"golden-step-time-regression"}


def _rail_nics(link: str) -> list[str]:
    """The NICs of a rail pair between two hosts (``a/gpu3<->b/gpu3``: ``a/nic3``, ``b/nic3``),
    which carry it over the scale-out network; none for any other link. A NIC named by
    its host's tool (its port down) is the culprit of its rail's pairs."""
    ends = link.split("<->")
    if len(ends) != 2 or host_of(ends[0]) == host_of(ends[1]):
        return []
    leaves = [e.rpartition("/")[2] for e in ends]
    if leaves[0] != leaves[1] or not leaves[0].startswith("gpu"):
        return []
    return [f"{host_of(e)}/nic{leaves[0][3:]}" for e in ends]


def _on_host(entity: str, host: str) -> bool:
    return host in hosts_of(entity)


def fold(owner: Finding, f: Finding, named: bool = False) -> None:
    """Fold ``f`` into ``owner``: its brief joins ``owner``'s ``evidence.related`` (with its
    entity when it names another one) and ``f`` itself ``owner.folded`` (what it rests on,
    for the retest)."""
    owner.evidence.setdefault("related", []).append(_brief(f) | ({"entity": f.entity} if named else {}))
    owner.folded.append(f)


def _brief(f: Finding) -> dict:
    return {"layer": f.layer, "rule": f.rule, "severity": f.severity, "message": f.message,
            "evidence": {k: v for k, v in f.evidence.items() if k != "related"}}


def jsonable(v):
    """A value as results.json holds it: numpy scalars as Python ones, NaN and inf as None, floats to 4 places."""
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return None if math.isnan(f) or math.isinf(f) else round(f, 4)
    if isinstance(v, np.bool_):
        return bool(v)
    return v
