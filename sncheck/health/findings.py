"""Findings and isolation entries: the one table every renderer reads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SEVERITIES = ("info", "warning", "critical")
ENTITY_KINDS = ("card", "link", "host", "supernode")


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


@dataclass
class Finding:
    entity: str
    entity_kind: str  # card | link | host | supernode
    layer: str
    rule: str
    severity: str
    message: str
    evidence: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class IsolationEntry:
    entity: str
    entity_kind: str
    action: str  # quarantine | isolate | release
    reason: str
    applied: bool = False
    rule: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["rule"] is None:
            d.pop("rule")
        return d


def merge_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per culprit: the most severe stays, the others become its evidence.

    Also folds a host-level symptom into a card or link finding on that host (a slow
    golden step on a host whose card is already named is that card's symptom),
    card findings into their host's finding, link findings into a culprit at either end,
    and drops card and link symptoms of an unreachable host.
    """
    by_entity: dict[str, Finding] = {}
    for f in sorted(findings, key=lambda f: -severity_rank(f.severity)):
        main = by_entity.get(f.entity)
        if main is None:
            by_entity[f.entity] = f
        else:
            main.evidence.setdefault("related", []).append(_brief(f))
    unreachable = {f.entity for f in by_entity.values()
                   if f.entity_kind == "host" and f.rule == "host-unreachable"}
    card_hosts: dict[str, Finding] = {}  # host -> a card or link culprit on it
    for f in by_entity.values():
        if f.entity_kind in ("card", "link"):
            for end in f.entity.split("<->"):
                card_hosts.setdefault(end.rsplit("/", 1)[0], f)
    host_culprits = {f.entity: f for f in by_entity.values()
                     if f.entity_kind == "host" and f.rule not in FOLDABLE_HOST_RULES}
    out = []
    for f in by_entity.values():
        if f.entity_kind in ("card", "link") and any(_on_host(f.entity, h) for h in unreachable):
            continue
        if f.entity_kind == "card" and f.entity.rsplit("/", 1)[0] in host_culprits:
            # Every card of the host is bad alike: that is the host's finding.
            host_culprits[f.entity.rsplit("/", 1)[0]].evidence.setdefault("related", []).append(_brief(f))
            continue
        if f.entity_kind == "link":
            # A link finding means both cards are healthy elsewhere; if an end is already a
            # culprit (found by another symptom or layer), the link is its symptom.
            owner = next((by_entity[c] for c in f.entity.split("<->") if c in by_entity), None)
            owner = owner or next((host_culprits[h] for h in host_culprits if _on_host(f.entity, h)), None)
            if owner is not None:
                owner.evidence.setdefault("related", []).append(_brief(f))
                continue
        if f.entity_kind == "host" and f.rule in FOLDABLE_HOST_RULES and f.entity in card_hosts:
            card_hosts[f.entity].evidence.setdefault("related", []).append(_brief(f))
            continue
        out.append(f)
    return sorted(out, key=lambda f: (-severity_rank(f.severity), f.entity_kind, f.entity))


FOLDABLE_HOST_RULES = {"golden-step-time-regression"}


def _on_host(entity: str, host: str) -> bool:
    return any(part.rsplit("/", 1)[0] == host for part in entity.split("<->"))


def _brief(f: Finding) -> dict:
    return {"layer": f.layer, "rule": f.rule, "severity": f.severity, "message": f.message,
            "evidence": {k: v for k, v in f.evidence.items() if k != "related"}}
