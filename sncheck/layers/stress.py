"""Layer 2: all-reduce and all-to-all over a size sweep on host, rail, domain and cross
groups; then a pairwise narrowing pass over the cards of failing groups."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace

from sncheck.model import About, Basis, EntityKind, Finding, Severity, host_of
from sncheck.health.groups import (beyond_culprits, explained, explainer, explainers, group_busbw, group_members,
                                   launch_spread, slow_sizes)
from sncheck.store.frames import kind_rows
from sncheck.health.suspects import failed_groups, failing_groups, suspect_cards
from sncheck.probeplan import WITHOUT, Group, StressPlan, scope_groups, size_sweep, stress_groups, without
from sncheck.topology import Topology, round_robin
from sncheck.layers import leftover
from sncheck.layers.base import LayerContext

NAME = "stress"
NARROW_SIZES = (8 << 10, 16 << 20)  # one latency-bound and one bandwidth-bound size


def build_plan(ctx: LayerContext) -> StressPlan:
    opts = {**ctx.backend.plan_defaults(NAME), **ctx.options}
    sizes = size_sweep(opts.pop("min_bytes", 8), opts.pop("max_bytes", 1 << 30), opts.pop("step_factor", 2))
    duration = opts.pop("duration", None)
    opts.pop("narrow_sizes", None)
    if "collectives" in opts:
        opts["collectives"] = tuple(opts["collectives"])
    groups = stress_groups(ctx.topo)
    if ctx.targets:
        groups = scope_groups(groups, ctx.targets)
    return StressPlan(groups=groups, sizes=sizes, duration_s=duration, **opts)


def narrow_sizes(ctx: LayerContext, slow_at: dict[str, int] | None = None) -> tuple[int, ...]:
    """The narrowing's sizes: the backend's (one latency- and one bandwidth-bound), and the
    smallest size a slow group was slow at where every one of those is below it (a fault
    acting only above a message size shows at no smaller one: r8-29, a link at 0.3 above
    128 MiB, passed when its pairs were measured at 16 MiB alone). ``slow_at`` None (a
    retest): the sizes the run's narrowing measured too, so it re-measures where it showed."""
    sizes = set(ctx.backend.plan_defaults(NAME).get("narrow_sizes", NARROW_SIZES))
    if slow_at is None:
        pairs = kind_rows(ctx.frames(NAME, group_kind="pair"), "collective", ["size_bytes"])
        return tuple(sorted(sizes | {int(s) for s in pairs["size_bytes"].unique()}))
    return tuple(sorted(sizes | {s for s in slow_at.values() if s > max(sizes)}))


def group_rule(ctx: LayerContext):
    """The enabled rule judging groups against their peers (its bars plan the narrowing), or None."""
    rules = ctx.rules.judging(NAME) if ctx.rules is not None else []
    return next((r for r in rules if r.op == "group_outlier"), None)


def sized_causes(slow_at: dict[str, int], groups: dict[str, tuple[str, ...]], shown: set[str],
                 top: int) -> set[str]:
    """The slow groups whose cards the narrowing adds: slow only above every narrowing size (``top``),
    and holding no card ``shown`` (:func:`shown_suspects`: a suspect the narrowing's own sizes show). A
    group holding one is that suspect's symptom: a card at 0.7 slows its domain and its rail past the
    time bar only at the large sizes, and narrowing all their cards made 276 pairs at 2 sizes into
    34,716 at 4 on the 2,048-card fleet bench (reviews15 #9). A suspect only a group of another rank
    count put there (inv-sizes' domain of 24 is always twice its kind's median time at small sizes)
    shows nothing at those sizes and explains nothing: r8-29's domain and #1's cross group, slow only
    above 128 MiB, were never narrowed where they showed, and the gate passed (reviews16 #6, #1)."""
    return {g for g, s in slow_at.items() if s > top and not shown & set(groups[g])}


def shown_suspects(rows, groups: dict[str, tuple[str, ...]], topo, slow_at: dict[str, int], top: int) -> set[str]:
    """The suspects of groups that failed, or were slow against their peers (the group rule, rank
    counts apart) at a size the narrowing measures (at most ``top``). Not of groups that only gave
    wrong results: a wrong value costs no time (the cost model: ``corrupt_card`` and
    ``collective_corruption`` change values, not times), so it explains no group's slowness. r11-23:
    h200-06/gpu0's wrong reductions silenced cross:gpu0, slow from 512 MiB through a link at 0.3."""
    failed = failed_groups(kind_rows(rows, "collective", ["group", "group_kind", "status"]))
    return suspect_cards(rows, groups, topo, causes={"failed": failed,
                                                      "slow": {g for g, s in slow_at.items() if s <= top}})


def narrowing_plan(ctx: LayerContext, plan: StressPlan, suspects: set[str],
                   sizes: tuple[int, ...] | None = None, joined: Iterable[Iterable[str]] = ()) -> StressPlan:
    """Pairs among the suspects and their host mates, at ``sizes`` (:func:`narrow_sizes`).

    Host mates give every suspect at least a few same-tier peers, so a card (bad with
    all its partners) is told apart from a link (bad with one). Each supernode's suspects
    are narrowed among themselves and their mates, as one suspect alone is, apart from
    another supernode's: a group that crosses supernodes (``joined``: the cause groups'
    members) holding suspects of several narrows those together, over scale-out. Two slow
    cards in two supernodes, pointed at by their host and rail groups, were one round robin
    of their two hosts (28 pairs, 16 of them scale-out, where one alone had its 6): a 0.5
    card showed over scale-out in latency only, its healthy mate's link was named beside
    it, and on inv-rail-spines the card was missed and its supernode isolated (reviews19 #3).
    """
    pointed = [tuple(m) for m in joined]
    parts = _apart(ctx, suspects, pointed)
    parts += [[c] for c in sorted(_control_hosts(ctx, parts, suspects), key=ctx.topo.card_table.index.get_loc)]
    order: list[tuple[str, str]] = []
    seen: set[frozenset[str]] = set()
    for part in parts:
        cards = set(part)
        for c in part:
            cards |= set(ctx.topo.cards_of_host(host_of(c)))
        if len(cards) < 3:  # one- or two-card hosts: borrow peers from the same supernode
            sn = ctx.topo.by_id[min(part, key=ctx.topo.card_table.index.get_loc)].supernode
            cards |= set(ctx.topo.cards_of_supernode(sn)[:4])
        if len(cards) < 3:  # a supernode of one two-card host: from a group that pointed at it, over scale-out
            # (reviews20 #16: b1/gpu1's one pair with its mate could not tell the card from the link)
            cards |= set(next((m[:4] for m in pointed if set(part) & set(m)), ()))
        for rnd in round_robin([c.id for c in ctx.topo.cards if c.id in cards]):
            for a, b in rnd:
                if (key := frozenset((a, b))) not in seen:
                    seen.add(key)
                    order.append((a, b))
    groups = tuple(Group(f"pair:{a}<->{b}", "pair", (a, b)) for a, b in order)
    sizes = sizes if sizes is not None else narrow_sizes(ctx, {})
    return StressPlan(groups=groups, collectives=plan.collectives, sizes=tuple(sizes),
                      warmup=plan.warmup, iters=plan.iters, repeats=1)


def _control_hosts(ctx: LayerContext, parts: list[list[str]], suspects: set[str]) -> set[str]:
    """One card of each host whose pairs are the intra-host tier's controls, where every card of a
    host of the narrowing is a suspect: the first host holding none, of its supernode, else of the
    fleet (a host of its own domain: HGX). Each is narrowed apart, among its own cards alone (its
    part holds its host mates): pairs between it and the suspects would be another tier's, read
    without a control of their own. A host slowed whole (every card at 0.6: a power cap, a PCIe
    root) was its own six pairs' level, each read 1.0 of it, and the nightly passed with its host
    group's warning (reviews20 #15)."""
    held = {host_of(c) for c in suspects}
    whole = [h for part in parts for h in dict.fromkeys(host_of(c) for c in part)
             if len(ctx.topo.cards_of_host(h)) >= 2 and set(ctx.topo.cards_of_host(h)) <= suspects]
    out: set[str] = set()
    for h in whole:
        sn = ctx.topo.by_id[ctx.topo.cards_of_host(h)[0]].supernode
        clean = [m for m in [*ctx.topo.hosts_of_supernode(sn), *ctx.topo.hosts] if m not in held
                 and len(ctx.topo.cards_of_host(m)) >= 2]
        if clean:
            out.add(ctx.topo.cards_of_host(clean[0])[0])
    return out


def _apart(ctx: LayerContext, suspects: set[str], joined: Iterable[Iterable[str]]) -> list[list[str]]:
    """The suspects by supernode, those a ``joined`` group holds in several supernodes together
    (a union of their supernodes' parts), each part in topology order, the parts by their first card."""
    where = {c: ctx.topo.by_id[c].supernode for c in suspects if c in ctx.topo.by_id}
    part = {sn: sn for sn in where.values()}

    def root(sn: str) -> str:
        while part[sn] != sn:
            sn = part[sn]
        return sn

    for members in joined:
        sns = sorted({root(where[c]) for c in members if c in where})
        for sn in sns[1:]:
            part[sn] = sns[0]
    out: dict[str, list[str]] = {}
    for c in ctx.topo.cards:
        if c.id in where:
            out.setdefault(root(where[c.id]), []).append(c.id)
    return sorted(out.values(), key=lambda cards: ctx.topo.card_table.index.get_loc(cards[0]))


def without_named(ctx: LayerContext, plan: StressPlan) -> StressPlan | None:
    """The groups no collective of which ran (each failed or timed out) holding a card an earlier
    layer named, once more without those cards, where two or more are left: the rest of them are
    measured, not lost with it. r9-18: every NVLink of hx1/gpu5 down (connectivity named it), the
    one host group of an HGX host alone in its domain timed out whole, and its 7 other cards were
    "not measured: took part in no collective that ran", each a finding gating the run."""
    named = ctx.detect_context().culprit_cards()
    coll = kind_rows(ctx.frames(NAME), "collective", ["group", "status"]) if ctx.known else None
    if coll is None or coll.empty:
        return None
    ran = set(coll.loc[coll["status"] == "ok", "group"].astype(str).unique())
    # the cards the culprits hold, and those a switch or link on the group's paths sits on (a dead leaf fails every
    # scale-out group through it: reviews17 #1 addendum 2)
    again = tuple(without(g, gone) for g in plan.groups if g.id not in ran
                  and (gone := named & set(g.members) | explainers(list(g.members), ctx.known, ctx.topo))
                  and len(g.members) - len(gone) >= 2)
    return replace(plan, groups=again) if again else None


def _slow_groups(ctx: LayerContext, groups: dict[str, tuple[str, ...]], rule) -> dict[str, int]:
    if rule is None:
        return {}
    return {g: s for g, s in slow_sizes(ctx.frames(NAME), ctx.detect_context(), rule).items() if g in groups}


def without_explainers(ctx: LayerContext, plan: StressPlan, slow_at: dict[str, int]) -> StressPlan | None:
    """The slow groups an earlier layer's culprit would explain (:func:`explained`), once more
    without the cards it sits on (:func:`explainers`), where two or more are left: whether the
    culprit explains the slowness is measured, not assumed. Still slow, the rest is judged (the
    group rule, the narrowing) as any unexplained group; no longer slow, the culprit was the
    cause. reviews17 #1: a transient NIC at connectivity, released by its retest, explained the
    cross group away and a 0.3x link beside it passed the gate."""
    again, at = [], []
    for g in plan.groups:
        gone = explainers(list(g.members), ctx.known, ctx.topo) if g.id in slow_at else set()
        if gone and len(g.members) - len(gone) >= 2:  # (no card a culprit sits on: it explains nothing)
            again.append(without(g, gone))
            at.append(slow_at[g.id])
    # from the smallest size one of them was slow at (below it none was: nothing there to tell)
    return replace(plan, groups=tuple(again), sizes=tuple(s for s in plan.sizes if s >= min(at))) if again else None


NOT_CROSSED = "rail-not-stressed-across-supernodes"


def not_crossed(topo: Topology, targets: frozenset[str] | None = None) -> list[Finding]:
    """A supernode whose hosts have cards on rails no other supernode has (4 cards a host beside 2):
    no cross-supernode group carries those rails' scale-out (:func:`sncheck.probeplan.stress_groups`
    needs two supernodes on a rail), so their NICs, leaves and spines are stressed by nothing. Said
    as an info finding about the check, a supernode each (hostile25's note: nothing said it)."""
    if len(topo.supernode_names) < 2:
        return []
    crossed = {g.id for g in stress_groups(topo) if g.kind == "cross"}
    rails: dict[str, int] = {}
    for h in topo.hosts:
        sn = topo.supernode_of_host(h)
        rails[sn] = max(rails.get(sn, 0), topo.inventory.hosts[h].cards)
    out = []
    for sn in topo.supernode_names:
        lone = [k for k in range(rails.get(sn, 0)) if f"cross:gpu{k}" not in crossed]
        if not lone or targets is not None and not any(host_of(c) in topo.inventory.hosts
                                                        and topo.supernode_of_host(host_of(c)) == sn for c in targets):
            continue
        said = ", ".join(map(str, lone))
        out.append(Finding(sn, EntityKind.SUPERNODE, NAME, NOT_CROSSED, Severity.INFO,
                           f"supernode {sn}: rail{'s' if len(lone) > 1 else ''} {said} not stressed across supernodes: "
                           "no other supernode has a card on "
                           f"{'them' if len(lone) > 1 else 'it'}, so no cross-supernode group carries "
                           f"{'their' if len(lone) > 1 else 'its'} scale-out (NICs, leaves, spines)",
                           {"measured": "nothing", "expected": "a cross-supernode group a rail", "unit": None,
                            "rails": lone}, basis=Basis.NOT_MEASURED, about=About.CHECK))
    return out


def run(ctx: LayerContext) -> dict:
    plan = build_plan(ctx)
    ctx.own_findings.extend(not_crossed(ctx.topo, ctx.targets))
    started = time.monotonic()
    sweeps = 0
    while True:
        ctx.progress(f"stress: {len(plan.groups)} groups x {len(plan.collectives)} collectives x {len(plan.sizes)} sizes")
        ctx.backend.collectives(plan, ctx.emit)
        sweeps += 1
        if plan.duration_s is None or time.monotonic() - started >= plan.duration_s:
            break
    groups = {g.id: g.members for g in plan.groups}
    if again := without_named(ctx, plan):
        ctx.progress(f"stress: {len(again.groups)} groups again without the cards earlier layers named")
        ctx.backend.collectives(again, ctx.emit)
        groups |= {g.id: g.members for g in again.groups}
    # groups slow against their peers at some size; those slow only above every narrowing size (which
    # today's suspects never measure where it shows): their cards, measured at the smallest such size.
    # Only under an enabled group rule: rules without one (local-cpu.yaml, an operator's) judge no group,
    # so no group's slowness plans a narrowing (the shipped bars did, on every clean local gate).
    rule = group_rule(ctx)
    slow_at = _slow_groups(ctx, groups, rule)
    if apart := without_explainers(ctx, plan, slow_at):
        ctx.progress(f"stress: {len(apart.groups)} slow groups again without the culprits that would explain them")
        ctx.backend.collectives(apart, ctx.emit)
        groups |= {g.id: g.members for g in apart.groups}
        slow_at = _slow_groups(ctx, groups, rule)
    rows = ctx.frames(NAME)
    # a group a culprit of an earlier layer sits on is that culprit's symptom (told by its rerun without it, where
    # one ran): it points at none of its other cards (a dead leaf failed the cross group: all 8 of its cards
    # were suspects, and held back the rerun's slowness as theirs)
    reruns = [g.id for p in (again, apart) if p for g in p.groups]
    sources = {r.partition(WITHOUT)[0] for r in reruns}
    told = {g: m for g, m in groups.items() if g not in sources and not explained(list(m), ctx.known, ctx.topo)}
    causes = failing_groups(rows)
    suspects = suspect_cards(rows, told, ctx.topo, causes=causes)
    # groups that gave wrong results point at their cards whatever culprit sits on them: a wrong value costs
    # no time (the cost model), so a slow link or NIC named earlier explains none of it. A loaded SSH gate's
    # two slow loopback links on node2/gpu0 took every group its collective corruption showed in, no pair
    # was narrowed, and the wrong results were on record with no finding (CI of stop 52)
    suspects |= suspect_cards(rows, groups, ctx.topo, causes={"wrong": causes["wrong"]})
    top = max(narrow_sizes(ctx, {}))
    # a group a culprit of an earlier layer explains is no cause (the group rule names it no more: r8-36's
    # cross group, slow through n1's NIC that connectivity named, took the narrowing from 6 pairs to 496)
    why = {g: e for g in slow_at if (e := explainer(list(groups[g]), ctx.known, ctx.topo)) is not None}
    # one no rerun could tell (every card of it, or all but one, under the culprit) is judged by the culprit's
    # own measured factor against the group's: slower than that explains, it is unexplained from there
    if alone := {g: list(groups[g]) for g in why}:
        ctx.beyond = beyond_culprits(group_busbw(rows, ctx.detect_context()), alone, ctx.known, ctx.factors, ctx.topo,
                                     rule, launch_spread(rows, alone))
    why = {g: e for g, e in why.items() if g not in ctx.beyond}
    unexplained = {g: s for g, s in slow_at.items() if g not in why} | {
        g: b["from_bytes"] for g, b in ctx.beyond.items()}
    # suspects compare groups of one rank count (health/suspects.py); one slow against peers of other
    # rank counts (through the cost model, the group rule) at the narrowing's sizes points at cards too
    if shown := {g for g, s in unexplained.items() if s <= top}:
        suspects |= suspect_cards(rows, groups, ctx.topo, causes={"slow": shown})
    beyond = sized_causes(unexplained, groups, shown_suspects(rows, told, ctx.topo, unexplained, top), top)
    if beyond:
        suspects |= suspect_cards(rows, groups, ctx.topo, causes={"sized": beyond})
    summary = {"groups": len(plan.groups), "sizes": len(plan.sizes), "sweeps": sweeps,
               "min_bytes": min(plan.sizes), "max_bytes": max(plan.sizes),
               "collectives": list(plan.collectives), "suspects": sorted(suspects)}
    if reruns:
        summary["again"] = reruns
    if slow_at:
        summary["slow_groups"] = dict(sorted(slow_at.items()))
    if ctx.beyond:  # the groups slower than their culprits' own factors explain (groups.beyond_culprits)
        summary["beyond_culprits"] = dict(sorted(ctx.beyond.items()))
    if why:  # the culprit each explained slow group was left to (the report says what its retest told)
        summary["explained"] = {g: {"entity": e, "entity_kind": k} for g, (e, k) in sorted(why.items())}
    if suspects:
        ctx.narrowed = frozenset(suspects)
        pointing = causes["failed"] | causes["slow"] | causes["wrong"] | shown | beyond  # the groups that pointed at suspects
        narrow = narrowing_plan(ctx, plan, suspects, narrow_sizes(ctx, {g: unexplained[g] for g in beyond}),
                                joined=[groups[g] for g in sorted(pointing) if g in groups])
        ctx.progress(f"stress: narrowing over {len(narrow.groups)} pairs of {len(suspects)} suspect cards")
        ctx.backend.collectives(narrow, ctx.emit)
        summary["narrowing_pairs"] = len(narrow.groups)
        if beyond:
            summary["narrowing_sizes"] = list(narrow.sizes)
        # the failing groups the grid left cards of out, that what the narrowing named does not explain
        failing = {g: s for g, s in unexplained.items() if g in told} | {g: 0 for g in causes["failed"] if g in told}
        if left := leftover.left_groups(ctx, NAME, groups, failing, suspects, rule):
            summary["left_by_narrowing"] = sorted(left)
            narrow_groups(ctx, left, summary, "again", f"{len(left)} failing groups the narrowing left unexplained")
    return summary


def narrow_groups(ctx: LayerContext, unexplained: dict[str, int], summary: dict, key: str, why: str) -> None:
    """The ``unexplained`` groups' cards narrowed (each group's own suspects, with their host mates), the
    pair and size this layer measured already left out; ``summary[key + "_pairs"]``, ``[key + "_sizes"]``
    say what was measured (the judging again of a released culprit's groups, run.rejudge; what the first
    narrowing left unexplained, layers.leftover)."""
    rows = ctx.frames(NAME)
    groups = {g: tuple(group_members(g, ctx.topo)) for g in unexplained}
    suspects = set().union(*(suspect_cards(rows, groups, ctx.topo, causes={"sized": {g}}) for g in groups))
    if not suspects:
        return
    # at the smallest size each was slow at, and at the smallest above the narrowing's sizes where it was slow
    # there too: a card's hiccup made its host group slow from 8 B, a link beside it at 0.3 above 128 MiB
    # and at the largest: a transient NIC made cross:gpu0 slow from 128 MiB, a 0.3x link beside it above
    # 128 MiB showed at 1 GiB alone, and the pairs never measured there named nothing (review18 #1)
    top = max(narrow_sizes(ctx, {}))
    dctx, rule = ctx.detect_context(), group_rule(ctx)
    large = [slow_sizes(rows, dctx, rule, above=top, largest=most) for most in (False, True)]
    sizes = set(narrow_sizes(ctx, unexplained)) | {s for at in large for g, s in at.items() if g in unexplained}
    plan = narrowing_plan(ctx, build_plan(ctx), suspects, tuple(sorted(sizes)), joined=groups.values())
    pairs = kind_rows(rows, "collective", ["group", "group_kind", "size_bytes"])
    pairs = pairs[pairs["group_kind"] == "pair"]
    had: dict[str, set[int]] = {}
    for g, s in zip(pairs["group"].astype(str), pairs["size_bytes"].astype(int)):
        had.setdefault(g, set()).add(s)
    todo = [g for g in plan.groups if not set(plan.sizes) <= had.get(g.id, set())]
    summary[f"{key}_pairs"] = len(todo)
    summary[f"{key}_sizes"] = list(plan.sizes)
    ctx.progress(f"stress: {why}: narrowing over {len(todo)} pairs")
    # by the sizes each pair lacks (the stress layer's narrowing measured some at its own sizes)
    for lacking in sorted({tuple(sorted(set(plan.sizes) - had.get(g.id, set()))) for g in todo}):
        ctx.backend.collectives(replace(plan, groups=tuple(
            g for g in todo if tuple(sorted(set(plan.sizes) - had.get(g.id, set()))) == lacking), sizes=lacking),
            ctx.emit)
