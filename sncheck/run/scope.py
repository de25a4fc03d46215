"""The cards a suspect stands for in its retest (:mod:`sncheck.run.confirm`): a card, a link's
two ends, a host's or a domain's cards, a NIC's card, and the cards whose rail NICs a switch
or a leaf-to-spine cable carries."""

from __future__ import annotations

from sncheck.model import Finding, card_of, is_uplink, on_fabric, split_link
from sncheck.topology import Topology


def cards_of(f: Finding | str, topo: Topology, kind: str | None = None) -> list[str]:
    entity, kind = (f.entity, f.entity_kind) if isinstance(f, Finding) else (f, kind)
    if kind == "card":
        return [entity]
    if kind == "link" and not is_uplink(entity):
        return list(split_link(entity))
    if kind == "host":
        return topo.cards_of_host(entity)
    if kind == "nic":  # <host>/nic<rail>: the card on that rail
        return [card_of(entity)]
    if kind in ("switch", "link"):  # the cards whose rail NICs it carries (a cable: both sides of it)
        return [card_of(n) for n in topo.fabric.nics_of(entity)]
    return topo.cards_of_supernode(entity)


def switchlike(f: Finding) -> bool:
    """A switch, or a cable between two: what carries scale-out pairs only, re-measured by
    the pairs through it (:func:`sncheck.run.controls.switch_sample`)."""
    return on_fabric(f.entity, f.entity_kind)
