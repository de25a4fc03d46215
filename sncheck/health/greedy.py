"""The steps of the explanation search over level kinds (:class:`sncheck.health.levels.Level`),
and what bounds their cost (README "Localization": the search's cost).

One step evaluates each candidate once (its factors, whether a measurement contradicts it,
how many exceptions it explains) and takes the best. A step whose best is a link takes
every link that explains its own unexplained pair as well: a link is on one pair's path,
so adding one changes no other link's pair, and one at a time each would be taken in a
step of its own, every other candidate evaluated again each time. gb200-4rack with two
leaves at 0.5 (r12-31) took 648 such steps of about 830 evaluations each (345 s of CPU and
no end). So the steps are at most the culprits of other kinds, plus the link batches, plus
one.

Greedy set cover can take a culprit whose pairs another pair of candidates share out
between them: r12-31's spine-r01 carries 2,592 of the two leaves' 3,240 slow pairs, more
than either leaf, and once taken each leaf's cross-pod pairs read healthier than the two
together predict (0.5, not 0.25), so the 648 pairs inside the pod were 648 links, one
culprit and 648 where two explain all. Where a step fell to links while a candidate of
another kind that could have explained more was contradicted on pairs an earlier culprit
shares, the search is run again without that culprit (:func:`exchange`), and the smaller
explanation kept: at most MAX_SEARCHES searches in all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sncheck.health.explain import END_KINDS, Entity, alone, slowed, specific
from sncheck.health.separation import healthy_member, refit, twin_cables, wider

if TYPE_CHECKING:
    from sncheck.health.levels import Level

MAX_SEARCHES = 4  # the first search and at most three without a culprit that blocked a larger candidate


def is_link(e: Entity) -> bool:
    """A card pair's link (not a leaf-to-spine cable, which is on many pairs' paths)."""
    return e.key[:1] == ("link",)


def ground(lv: "Level", e: Entity) -> tuple:
    """What tells a candidate from another (``separation.same_ground``, as a key): an end
    kind's cards; a shared kind's exceptions on its path, per tier."""
    if e.kind in END_KINDS:
        return ("end", frozenset(e.members.tolist()))
    return ("path",) + tuple(np.intersect1d(lv.pairs(e, t), lv.pair_ex[t]).astype(np.int64).tobytes()
                             for t in lv.tiers)


def own_exception(lv: "Level", e: Entity) -> bool:
    """A link whose own pair is an exception its hypothesis leaves unexplained."""
    for t in lv.tiers:
        at = np.intersect1d(lv.pairs(e, t), lv.pair_ex[t])
        if len(at) and lv.state(t, at, lv.pred(t, at, lv.H))[0].any():
            return True
    return False


def step(lv: "Level") -> bool:
    """One step of the search: the best candidate (and, where it is a link, every link
    explaining its own pair) added to ``lv.H``. False where no candidate explains what is left."""
    best: tuple | None = None
    tied: list[tuple[tuple, Entity]] = []
    found: dict[str, dict[str, float]] = {}
    blocked: list[tuple[int, Entity]] = []
    for bound, e in lv.candidates():
        if best is not None and bound < best[0][0]:
            break  # it cannot explain as much as the best one found
        if alone(lv, e):
            continue  # measured in one pair alone: it cannot be told from that link
        lv.evaluations += 1
        f = lv.factors(e)
        if not f or not lv.beyond_a_bar(e, f) or alone(lv, e, f):
            continue
        H2 = refit(lv, e, f)
        why = lv.contradiction(e, f, H2) or healthy_member(lv, e, f)
        if why is not None:
            lv.lost.append((e, why))
            if not is_link(e):
                blocked.append((bound, e))
            continue
        scope = {t: lv.pairs(e, t) for t in lv.tiers}
        domains = e.kind in ("host", "supernode")
        gain = lv.left(lv.H, scope, domains) - lv.left(H2, scope, domains)
        if gain <= 0:
            continue
        score = (gain, -slowed(lv, e, H2), -(len(e.members) if e.kind in END_KINDS else 1), -specific(e))
        tied.append((score, e))
        found[e.name] = f
        if best is None or score > best[0]:
            best = (score, e, f)
    if best is None or is_link(best[1]):
        blockers(lv, blocked, best[0][0] if best is not None else 0)
    if best is None:
        return False  # what is left no candidate explains: the exceptions' links (Level.culprits)
    if twins := twin_cables(lv, best, tied):  # neither named: their pairs stay, as links
        lv.barred |= twins
        return True
    best = wider(lv, best, tied)
    take = [best]
    if is_link(best[1]):  # every other link explaining its own pair, as one at a time would take them
        take += [(s, e, found[e.name]) for s, e in sorted(tied, key=lambda se: se[0], reverse=True)
                 if e is not best[1] and is_link(e) and own_exception(lv, e)]
    grounds = {e.name: ground(lv, e) for _, e in tied}
    for score, e, f in take:
        lv.ties[e.name] = [r for s, r in tied if s[:2] == score[:2] and r is not e and grounds[r.name] == grounds[e.name]
                           and not any(r is t[1] for t in take)]
        lv.H = refit(lv, e, f)
    lv.relevel()
    return True


def blockers(lv: "Level", blocked: list[tuple[int, Entity]], gain: int) -> None:
    """The culprits of other kinds than links sharing pairs with a candidate that could have
    explained more than the step's best (``gain``) and was contradicted: the search is run
    again without each (:func:`exchange`)."""
    for bound, e in blocked:
        if bound <= gain:
            continue
        for c, f in lv.H:
            if is_link(c) or c.name in lv.blockers:
                continue
            if any(len(np.intersect1d(lv.pairs(e, t), lv.pairs(c, t), assume_unique=True)) for t in f):
                lv.blockers.append(c.name)


def search(lv: "Level", banned: frozenset[str] = frozenset()) -> int:
    """The greedy search from no culprit, never taking ``banned``; then the pass dropping any
    culprit the others explain without it. How many exceptions its hypothesis leaves."""
    lv.start(banned)
    total = lv.left(lv.H)
    while total and step(lv):
        total = lv.left(lv.H)
    lv.prune()
    return total


STATE = ("H", "lost", "ties", "barred", "level", "card_ex", "card_near", "domain_ex", "noise", "blockers")


def exchange(lv: "Level", total: int) -> int:
    """The search again without each culprit that blocked a larger candidate, breadth first (each
    search's own blockers banned in turn beside what it banned): the smaller explanation (its
    culprits and what it leaves unexplained, each a link) is kept where it leaves no more
    unexplained. At most MAX_SEARCHES searches in all. (Two leaves of one rail at 0.5, one in each
    pod of gb200-4rack: the cable above the first at 0.25 explains the pairs through both, then the
    cable above the second does; without both, the two leaves explain every pair.)"""
    kept = {k: getattr(lv, k) for k in STATE}
    size = len(lv.H) + total
    queue: list[tuple[frozenset[str], list[str]]] = [(frozenset(), list(lv.blockers))]
    tried: set[frozenset[str]] = set()
    searches = 1
    while queue and searches < MAX_SEARCHES:
        banned, blockers = queue.pop(0)
        for c in blockers:
            again = banned | {c}
            if again in tried or searches >= MAX_SEARCHES:
                continue
            tried.add(again)
            searches += 1
            left = search(lv, again)
            if left <= total and len(lv.H) + left < size:
                kept, total, size = {k: getattr(lv, k) for k in STATE}, left, len(lv.H) + left
            queue.append((again, list(lv.blockers)))
    for k, v in kept.items():
        setattr(lv, k, v)
    return total
