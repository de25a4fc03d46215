"""What a scoped run (``--targets``) measured whole, for releasing quarantines by it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sncheck.model import LINK_SEP, EntityKind, Finding, card_of, is_cable, parse_switch, scope_holds


def measured_whole(kind: str, entity: str, scope: Mapping[str, Any], findings: Iterable[Finding]) -> bool:
    """Whether a scoped run (results.json ``scope``) measured ``entity`` whole
    (:func:`sncheck.model.scope_holds`), and, for a switch or a leaf-to-spine cable, found
    nothing on a card behind it: a culprit there may be what the switch showed, so its
    quarantine stays (reviews20 #14: switch, NIC and link quarantines were released only by
    hand, even by a clean run that measured every pair through them)."""
    if not scope_holds(kind, entity, scope):
        return False
    if kind == EntityKind.SWITCH or kind == EntityKind.LINK and is_cable(entity) and \
            all(parse_switch(p) is not None for p in entity.split(LINK_SEP)):
        behind = {card_of(p) for f in findings for p in f.entity.split(LINK_SEP) if parse_switch(p) is None}
        return not behind & set(scope.get("cards") or ())
    return True
