"""A culprit the retest released explains nothing any more: what it was said to explain is judged again.

The stress layer leaves a slow group to a culprit an earlier layer named where the group, run
again without the cards that culprit sits on, is no longer slow (:func:`sncheck.layers.stress.
without_explainers`): the group's slowness is on those cards' paths. That rerun cannot tell the
culprit from what else sits under the same cards (a card and its NIC, a card and the link to a
mate). When the retest then releases the culprit (not reproduced: a transient fault), the
group's slowness is explained by nothing, and before this module nothing judged it again: a
card that hiccuped at connectivity hid its NIC, slow only above 128 MiB, that the cross group
alone showed, and the gate passed (reviews17 #1 addendum 4).

So, once a wave of retests has decided (:func:`sncheck.run.isolation.isolation_steps`), every
slow group the stress summary's ``explained`` left to a culprit now released is judged again
without the released culprits in ``known``:

* another culprit still named explains it (:func:`sncheck.health.groups.explainer`): it is left
  to that one (the rerun without every culprit's cards was quiet);
* none does: its cards are narrowed as an unexplained group's are at the stress layer (each group
  alone, :func:`sncheck.health.suspects.suspect_cards`, their host mates), at the narrowing's sizes
  and the smallest size it was slow at (:func:`sncheck.layers.stress.narrow_sizes`), measuring only
  the pair and size not measured yet. Then the stress layer's rules judge its rows again without
  the released culprits in ``known``: the pairs through them count, and the group rule names the
  group where no pair finding explains it.

A stress group that failed (a collective of it did not complete) with a released culprit on its paths is run
again whole first (:meth:`Rejudge._rerun_failed`): its failure was that culprit's, and what its sizes show now is
judged as above (``rerun_failed`` in the stress summary).

The findings this raises on entities not found before join the next wave: quarantined, retested
by the measurement that showed them, decided (never a pass assumed). The stress summary says what
was judged again (``rejudged``: group -> the released culprit, what explains the group now, None
where nothing but the new measurement does; ``rejudge_pairs``, ``rejudge_sizes``).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field, replace

from sncheck.health.metrics import cards_held
from sncheck.health.groups import NOT_GROUPS, explainer, explainers, group_members, slow_sizes
from sncheck.layers import stress
from sncheck.layers.base import LayerContext
from sncheck.model import Finding, Severity, entity_kind, on_fabric
from sncheck.store.frames import kind_rows


@dataclass
class Rejudge:
    """The stress layer's context as it measured (its ``known``: the culprits earlier layers
    named) and its summary (``rejudged`` is written into it); called with the entities released
    so far, it returns the stress findings the groups they were said to explain now raise."""

    ctx: LayerContext
    summary: dict
    released: set[str] = field(default_factory=set)
    rerun: set[str] = field(default_factory=set)  # the failed groups run again (_rerun_failed)
    earlier: frozenset[str] = field(init=False)  # the culprits earlier layers named, as the layer measured

    def __post_init__(self) -> None:
        self.earlier = frozenset(e for e, _ in self.ctx.known)

    def __call__(self, released: Set[str]) -> list[Finding]:
        self.released |= set(released)
        known = frozenset(k for k in self.ctx.known if k[0] not in self.released)
        unexplained = self._rerun_failed(released, known)
        why = self.summary.get("explained") or {}
        left = {g: w for g, w in why.items() if w.get("entity") in released}
        slow_at = self.summary.get("slow_groups") or {}
        left |= self._left_to_mine(released, slow_at, why)
        if not left and not unexplained:
            return []
        told: dict[str, dict | None] = {}
        for g in sorted(left):
            e = explainer(group_members(g, self.ctx.topo), known, self.ctx.topo)
            told[g] = None if e is None else {"entity": e[0], "entity_kind": e[1]}
            if e is None and g in slow_at:
                unexplained[g] = int(slow_at[g])
        if told:
            rejudged = dict(self.summary.get("rejudged") or {})
            rejudged.update({g: {"released": left[g]["entity"], "explained": told[g]} for g in told})
            self.summary["rejudged"] = rejudged
        if not unexplained:
            return []
        stress.narrow_groups(self.ctx, unexplained, self.summary, "rejudge",
                             f"{len(unexplained)} slow groups a released culprit explained, judged again")
        kept = self.ctx.known, self.ctx.untold, self.ctx.released
        self.ctx.known, self.ctx.untold = known, frozenset(e for e in self.ctx.untold if e not in self.released)
        self.ctx.released = self._own_cards()
        try:
            found = self.ctx.detect(stress.NAME)
        finally:
            self.ctx.known, self.ctx.untold, self.ctx.released = kept
        return [f for f in found if f.severity.rank >= Severity.WARNING.rank]

    def _own_cards(self) -> frozenset[str]:
        """The cards of the released culprits this layer named itself (not an earlier layer's): the pairs that
        named them were measured before their retest found them healthy, a transient's symptom; judged again
        without them in ``known`` they named every pair of the card a link (reviews21 #3's transient card)."""
        topo = self.ctx.topo
        mine = self.released - self.earlier
        return frozenset(c for e in mine for c in cards_held(e, self._kind(e), topo))

    def _kind(self, entity: str) -> str:
        return "supernode" if entity in self.ctx.topo.supernode_names else entity_kind(entity)

    def _left_to_mine(self, released: Set[str], slow_at: dict, why: dict) -> dict[str, dict]:
        """The slow groups a culprit this layer's own narrowing named explained, now released: the group
        rule named none of them (a named culprit explains it) and the summary's ``explained`` holds only
        earlier layers' culprits. A transient card on rail 1 beside a NIC at 0.4 on it: the card explained
        cross:gpu1, its retest released it, and the NIC no group or pair was left to say passed the nightly
        (reviews21 #3)."""
        topo = self.ctx.topo
        mine = frozenset((e, self._kind(e)) for e in released)
        out = {}
        for g in sorted(set(slow_at) - set(why)):
            if (e := explainer(group_members(g, topo), mine, topo)) is not None:
                out[g] = {"entity": e[0], "entity_kind": e[1]}
        return out

    def _rerun_failed(self, released: Set[str], known: frozenset[tuple[str, str]]) -> dict[str, int]:
        """The stress groups that failed (a collective of theirs did not complete) with a culprit now released on
        their paths, run again whole: a cable down for a moment failed the one cross group, whose sizes above
        256 MiB alone showed a leaf at 0.4, and nothing measured it again (release18's t27). Those slow now that
        no culprit still named explains, and the smallest size each was slow at."""
        ctx = self.ctx  # a cable is read as the switch it joins: on the paths of the groups whose pairs cross it
        gone = frozenset((e, "switch" if on_fabric(e, k) else k) for e, k in ctx.known if e in released)
        coll = kind_rows(ctx.frames(stress.NAME), "collective", ["group", "group_kind", "status"])
        if not gone or coll.empty:
            return {}
        coll = coll[~coll["group_kind"].astype(str).isin(NOT_GROUPS)]
        failed = set(coll.loc[coll["status"] != "ok", "group"].astype(str)) - self.rerun
        plan = stress.build_plan(ctx)
        again = [g for g in plan.groups if g.id in failed and explainers(list(g.members), gone, ctx.topo)]
        if not again:
            return {}
        self.rerun |= {g.id for g in again}
        self.summary["rerun_failed"] = sorted(self.rerun)
        ctx.progress(f"stress: {len(again)} failed groups a released culprit sat on, run again")
        ctx.backend.collectives(replace(plan, groups=tuple(again)), ctx.emit)
        kept = ctx.known
        ctx.known = known
        try:
            slow_at = slow_sizes(ctx.frames(stress.NAME), ctx.detect_context(), stress.group_rule(ctx))
        finally:
            ctx.known = kept
        return {g.id: int(slow_at[g.id]) for g in again
                if g.id in slow_at and explainer(list(g.members), known, ctx.topo) is None}
