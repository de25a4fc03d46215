"""Merging findings into one per culprit, and values as results.json holds them.

``Finding`` itself lives in :mod:`sncheck.model`."""

from __future__ import annotations

import math
from functools import cache
from typing import Callable

import numpy as np

from sncheck.model import LINK_SEP, About, Finding, card_of, host_of, hosts_of
from sncheck.vendors import registry


def merge_findings(findings: list[Finding], supernode_of_host: Callable[[str], str | None] | None = None) -> list[Finding]:
    """One finding per entity: the most severe stays (of equal severity, not one only near
    its bar), the others become its evidence (``related``). Who the culprit is was decided per measurement kind by the explainer
    (:mod:`sncheck.health.explain`); across kinds only what the cost model says one culprit
    causes in another measurement is its symptom:

    * a host's golden step time over the reference is the compute or gradient all-reduce
      of a culprit on it (a card, a link, the host) or of the supernode culprit holding it
      (``supernode_of_host``): its symptom, re-measured by that culprit's retest;
    * the card and link symptoms of an unreachable host are the host's finding;
    * a pair a host tool measured (a rail pair's perftest, a copy bench's card pair) is the
      symptom of a culprit at its end at least as severe (its port down), never of a weaker
      one; a fact a tool states of a link (rocm-smi: this XGMI pair runs over PCIe) is the
      link's own finding beside its ends' (r13-46: the link over PCIe folded into the slow
      card at its end, and a repair list missed it);
    * a finding about a check (a missing tool, no golden reference) absorbs nothing and is
      absorbed by nothing: a card fault on a host without dcgmi is still the card.
    """
    by_key: dict[tuple[str, str], Finding] = {}
    # of equal severity, a finding of what was measured beyond a bar leads one of a card only
    # near its bar (a suspect: sncheck.run.nearbar), which becomes its evidence
    for f in sorted(findings, key=lambda f: (-f.severity.rank, not f.names_culprit)):
        main = by_key.get((f.entity, f.about))
        if main is None:
            by_key[(f.entity, f.about)] = f
        else:
            fold(main, f)
    checks = [f for (_, about), f in by_key.items() if about == About.CHECK]
    hardware = [f for (_, about), f in by_key.items() if about != About.CHECK]
    unreachable = {f.entity for f in hardware if f.entity_kind == "host" and f.rule == "host-unreachable"}
    on_host: dict[str, Finding] = {}  # host -> a pair culprit on it (card, link, nic, the host itself)
    domains: dict[str, Finding] = {}
    for f in hardware:
        if f.rule in FOLDABLE_HOST_RULES:
            continue
        if f.entity_kind == "supernode":
            domains[f.entity] = f
        elif f.entity_kind in ("card", "link", "nic", "host") and f.rule != "host-unreachable":
            for host in hosts_of(f.entity):  # a culprit named: never one only near its bar, a suspect
                if host not in on_host and f.names_culprit:  # (its retest re-measures it, not the host)
                    on_host[host] = f
    untold = _told_apart(hardware)
    out = []
    for f in hardware:
        if f.entity_kind in ("card", "link", "nic") and any(h in unreachable for h in hosts_of(f.entity)):
            continue
        if id(f) in untold:  # a host no kind told apart from its cards, and another kind named some of them
            for g in untold[id(f)]:
                if f.severity.rank > g.severity.rank:  # the card takes the host's verdict
                    own = _brief(g)
                    g.layer, g.rule, g.severity = f.layer, f.rule, f.severity
                    g.message = (f"card {g.entity}: told from its host by {own['rule']} ({own['message']}); "
                                 f"{f.message.split('; not ')[0]}")
                    g.evidence = {**{k: v for k, v in f.evidence.items() if k not in ("related", "separated",
                                                                                     "rivals")},
                                  "related": g.evidence.get("related", []) + [own]}
                fold(g, f, named=True)
            continue
        if f.entity_kind == "link" and f.evidence.get("fact") in measured_pair_facts():
            # A pair a host tool measured (a rail pair's ib_write_bw) with a culprit at its
            # end at least as severe (the port down that stops it): that culprit's symptom.
            owner = next((g for g in hardware if g is not f and g.entity_kind in ("card", "nic", "host")
                          and set(hosts_of(g.entity)) & set(hosts_of(f.entity))
                          and _holds_end(g, f.entity) and g.severity.rank >= f.severity.rank),
                         None)
            if owner is not None:
                fold(owner, f, named=True)
                continue
        if f.entity_kind == "host" and f.rule in FOLDABLE_HOST_RULES:
            owner = on_host.get(f.entity)
            if owner is None and supernode_of_host is not None:
                owner = domains.get(supernode_of_host(f.entity) or "")
            if owner is not None:
                fold(owner, f, named=True)
                continue
        out.append(f)
    out += checks
    return sorted(out, key=lambda f: (-f.severity.rank, f.about.value, f.entity_kind.value, f.entity))


FOLDABLE_HOST_RULES = {"golden-step-time-regression"}


@cache
def measured_pair_facts() -> frozenset[str]:
    """The host facts that measure a card pair (a scale-out pair test's, a copy bench's card-to-card):
    a culprit at the pair's end explains them; any other fact on a link is a state the tool reports of it."""
    return frozenset({t.fact for t in registry.pair_tools().values()}
                     | {b.card_fact for b in registry.copy_benches().values()})


def _told_apart(hardware: list[Finding]) -> dict[int, list[Finding]]:
    """Host findings whose explanation could not tell the host from its cards (evidence
    ``separated: false``: an HGX host's eighth card measured only beside its slow mates)
    where another measurement named some of its cards on their own evidence (launch skew
    per card): those cards are the culprits, the host their symptom."""
    cards = [f for f in hardware if f.entity_kind == "card" and "fact" not in f.evidence]
    out: dict[int, list[Finding]] = {}  # by id(): a Finding is not hashable
    for f in hardware:
        if f.entity_kind == "host" and f.evidence.get("separated") is False and "fact" not in f.evidence:
            mine = [g for g in cards if host_of(g.entity) == f.entity]
            if mine:
                out[id(f)] = mine
    return out


def _holds_end(g: Finding, link: str) -> bool:
    """A card, NIC or host finding holding one end of a link (a NIC: its rail's card)."""
    ends = link.split(LINK_SEP)
    if g.entity_kind == "host":
        return any(host_of(e) == g.entity for e in ends)
    return card_of(g.entity) in ends


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
