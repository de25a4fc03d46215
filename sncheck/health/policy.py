"""The isolation policy of DESIGN.md as pure decision functions.

- Quarantine at the first anomaly (the runner records it; nothing is applied).
- A targeted confirmation retest decides: confirmed -> ``isolate``; not confirmed ->
  ``release`` (the record is kept, so the entity has a past).
- A repeat offender (a "lemon"): an entity released less than ``window`` ago that trips
  again is isolated at once, without waiting for a confirmation.
- The fleet cap: when sncheck's own isolations (the state store's current ones plus a
  batch) would keep more than ``cap`` of the cards or of the hosts out of service, nothing
  of the batch is applied, whatever the number of commands or runs that got there. So many bad entities at once is more likely a
  fabric-wide or harness problem than many broken cards. Whatever the cluster size, a
  positive cap always allows one host (and that host's cards) out of service: 10% of a
  4-node cluster is less than one node, and a cap that forbids every isolation on a small
  cluster only teaches operators to pass ``--cap 1``.

No I/O here except through the small :class:`ReleaseHistory` protocol (the state store).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from sncheck.model import Action, EntityKind, IsolationStep, card_of, host_of
from sncheck.model import entity_kind  # noqa: F401 -- the model's now (results.json's reader holds findings to it); callers import it here

DEFAULT_WINDOW = timedelta(days=7)
DEFAULT_CAP = 0.10
OVER_CAP = ("So many at once suggests a fabric-wide or harness problem (a switch, the network, "
            "a bad tool or baseline), not many broken cards: check the fabric and the harness first, "
            "and release what is back in service. To isolate them anyway: sncheck isolate ... "
            "--force-cap REASON (the reason goes into the audit).")
ISOLATING = ("isolate",)  # actions that take something out of service when applied


class ReleaseHistory(Protocol):
    """What the policy needs from the state store."""

    def last_release(self, entity: str) -> datetime | None: ...


def is_repeat_offender(released_at: datetime | None, now: datetime,
                       window: timedelta = DEFAULT_WINDOW) -> bool:
    """True when the entity was released less than ``window`` before ``now``."""
    return released_at is not None and timedelta(0) <= now - released_at <= window


def needs_confirmation(entity: str, store: ReleaseHistory, now: datetime | None = None,
                       window: timedelta = DEFAULT_WINDOW) -> bool:
    """False for a repeat offender (isolate at once), True otherwise (retest first)."""
    now = now or datetime.now(timezone.utc)
    return not is_repeat_offender(store.last_release(entity), now, window)


def decide(entity: str, kind: str, confirmed: bool | None, released_at: datetime | None,
           now: datetime, window: timedelta = DEFAULT_WINDOW) -> Action:
    """The next action for a quarantined entity: ``isolate``, ``release`` or ``quarantine``.

    ``confirmed`` is the confirmation retest's verdict; ``None`` means the retest could
    not say (it could not run, e.g. the host is unreachable): the entity stays
    quarantined, because "not run" is never a pass. A repeat offender is isolated
    whatever the retest says.
    """
    if kind not in tuple(EntityKind):
        raise ValueError(f"entity kind of {entity!r} must be one of {', '.join(EntityKind)}, got {kind!r}")
    if is_repeat_offender(released_at, now, window):
        return Action.ISOLATE
    if confirmed is None:
        return Action.QUARANTINE
    return Action.ISOLATE if confirmed else Action.RELEASE


def decide_entry(quarantined: IsolationStep, confirmed: bool | None, released_at: datetime | None,
                 now: datetime, window: timedelta = DEFAULT_WINDOW) -> IsolationStep:
    """:func:`decide` for a quarantine entry, as the entry that follows it (with its reason)."""
    action = decide(quarantined.entity, quarantined.entity_kind, confirmed, released_at, now, window)
    if is_repeat_offender(released_at, now, window):
        assert released_at is not None
        why = (f"repeat offender: released {released_at:%Y-%m-%d %H:%M}Z, "
               f"less than {_days(window)} ago; isolated without confirmation")
    elif action == "isolate":
        why = "confirmed by the retest"
    elif action == "release":
        why = "not confirmed by the retest; released (record kept)"
    else:
        why = "the retest could not run; stays quarantined"
    return IsolationStep(quarantined.entity, quarantined.entity_kind, action,
                         f"{why}: {quarantined.reason}", applied=False, rule=quarantined.rule)


def _days(window: timedelta) -> str:
    if window % timedelta(days=1) == timedelta(0):
        days = window // timedelta(days=1)
        return f"{days} day{'s' if days != 1 else ''}"
    return str(window)


# -- the safety cap ---------------------------------------------------------

@dataclass(frozen=True)
class CapResult:
    ok: bool
    message: str
    cards: int = 0          # cards out of service if the batch is applied (a host counts all its cards)
    hosts: int = 0          # hosts out of service whole
    card_share: float = 0.0
    host_share: float = 0.0


def check_cap(entries: Iterable[IsolationStep | Mapping[str, Any]], total_cards: int, total_hosts: int,
              cap: float = DEFAULT_CAP, *, host_cards: Mapping[str, int] | None = None,
              supernode_hosts: Mapping[str, Sequence[str]] | None = None,
              switch_cards: Mapping[str, Sequence[str]] | None = None) -> CapResult:
    """May these isolations be applied? Only ``isolate`` entries count.

    Pass everything that would be out of service afterwards (the state store's current
    isolations plus the new batch): the cap bounds the share of the fleet sncheck's own
    actions keep out of service, whatever the number of commands or runs that took it out. A host counts
    as all its cards (``host_cards``; default the average), a card on an isolated host
    is not counted twice, a supernode counts all its hosts (``supernode_hosts``), a switch
    the cards whose rail it carries (``switch_cards``: its rail drained on its hosts), and a
    link takes nothing out of service.

    The allowance is ``cap`` of the hosts and of the cards, but never less than one host
    and the cards of the largest host in all (when ``cap > 0``; ``cap == 0`` allows
    nothing): a small cluster can always take out the one host it has to. It used to be
    one more host a run, so five one-host ``isolate`` commands took 5 of 16 hosts out.
    """
    if total_cards <= 0 or total_hosts <= 0:
        raise ValueError("total_cards and total_hosts must be positive")
    if not 0 <= cap <= 1:
        raise ValueError(f"cap must be a share between 0 and 1, got {cap}")
    per_host = host_cards or {}
    default_cards = total_cards / total_hosts
    n_cards, hosts = _out_of_service(entries, per_host, supernode_hosts or {}, default_cards, switch_cards or {})
    card_share, host_share = n_cards / total_cards, len(hosts) / total_hosts
    numbers = (f"{n_cards} of {total_cards} cards ({card_share:.1%}) and {len(hosts)} of "
               f"{total_hosts} hosts ({host_share:.1%}) would be out of service")
    one_host = max(per_host.values(), default=default_cards) if per_host else default_cards
    host_allow = max(cap * total_hosts, 1.0) if cap > 0 else 0.0
    card_allow = max(cap * total_cards, one_host) if cap > 0 else 0.0
    if n_cards > card_allow + 1e-9 or len(hosts) > host_allow + 1e-9:
        return CapResult(False, (
            f"safety cap: {numbers} by sncheck's own isolations (the state store's and this batch's): "
            f"more than the fleet cap of {cap:.0%} (at least one host and its cards in all). Nothing was applied. "
            f"{OVER_CAP}"), n_cards, len(hosts), card_share, host_share)
    return CapResult(True, f"within the fleet cap of {cap:.0%} (at least one host and its cards in all): {numbers}",
                     n_cards, len(hosts), card_share, host_share)


def _out_of_service(entries: Iterable[IsolationStep | Mapping[str, Any]], per_host: Mapping[str, int],
                    sn_hosts: Mapping[str, Sequence[str]], default_cards: float,
                    switch_cards: Mapping[str, Sequence[str]]) -> tuple[int, set[str]]:
    """Cards (a host counts all its cards, a card on such a host once) and hosts that
    ``isolate`` entries take out of service; links take nothing out."""
    hosts: set[str] = set()
    cards: set[str] = set()
    for e in entries:
        action, kind, entity = (e.action, e.entity_kind, e.entity) if isinstance(e, IsolationStep) \
            else (e["action"], e["entity_kind"], e["entity"])  # a state store row
        if action not in ISOLATING:
            continue
        if kind == EntityKind.HOST:
            hosts.add(entity)
        elif kind == EntityKind.SUPERNODE:
            hosts.update(sn_hosts.get(entity, ()))
        elif kind == EntityKind.CARD:
            cards.add(entity)
        elif kind == EntityKind.NIC:  # isolated by masking its card
            cards.add(card_of(entity))
        elif kind == EntityKind.SWITCH:  # its rail drained on every host it serves
            cards.update(switch_cards.get(entity, ()))
    loose_cards = {c for c in cards if host_of(c) not in hosts}
    return round(sum(per_host.get(h, default_cards) for h in hosts)) + len(loose_cards), hosts
