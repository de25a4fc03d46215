"""A domain's tier beyond its pair bar on every pair the search left unexplained
(:class:`sncheck.health.levels.Level`): one finding for the domain, not a link per pair.

Under the cost model a pair reads the lower of its ends' factors times its path's; a
culprit explains a pair when the pair's residual (measured over predicted) is inside every
bar. When every measured pair of a tier inside a supernode is beyond a pair bar and no
candidate explains them (a bar the design itself cannot reach: ``ratio_to_design below:
1.5``, where every healthy pair reads 1.0), no entity smaller than the domain is on the
path of them all, and no factor at or below 1 makes a residual pass a bar above design: the
smallest set naming every such pair is the domain itself. Naming each pair a link "between
two otherwise healthy cards" named 2,556 links on nvl72, each quarantined and retested. The
domain's finding says its median and whether the bar is above what the design gives. Over
scale-out (every pair of the fleet beyond the bar) each domain is named so, its scale-out pairs
being those with an end in it: the fleet's domains, one finding each.
A domain with fewer than :data:`MIN_PAIRS` pairs on the tier keeps its links (one pair
cannot tell a domain from its link).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sncheck.health.explain import Culprit
from sncheck.topology import SCALE_OUT

if TYPE_CHECKING:
    from sncheck.health.levels import Level
    from sncheck.health.rules import Rule

MIN_PAIRS = 3
WHOLE = "whole_tier"  # Culprit.note of such a domain


def whole_domains(level: Level, left: dict[str, np.ndarray]) -> tuple[list[Culprit], dict[str, np.ndarray]]:
    """Of the exceptions no culprit explains (``left``: per tier, pair indices), the domains
    each of whose measured pairs on a tier is among them (at least MIN_PAIRS; scale-out: the
    pairs with an end in it): one culprit per domain over all such tiers (factor: its pairs'
    median ratio there); and the exceptions left for links (none with an end in such a domain)."""
    p = level.paths
    rest: dict[str, np.ndarray] = {}
    found: dict[int, Culprit] = {}
    k = len(p.supernodes)
    for t, at in left.items():
        x = level.tiers[t]
        if not len(at):
            rest[t] = at
            continue
        # an inside tier's pair is in one domain; a scale-out pair is each of its ends' domains'
        sa, sb = p.sn[x.a], p.sn[x.b] if t == SCALE_OUT else p.sn[x.a]
        total = np.bincount(sa, minlength=k) + np.bincount(sb[sb != sa], minlength=k)
        got = np.bincount(sa[at], minlength=k) + np.bincount(sb[at][sb[at] != sa[at]], minlength=k)
        whole = (got == total) & (total >= MIN_PAIRS)
        rest[t] = at[~(whole[sa[at]] | whole[sb[at]])]
        for s in np.flatnonzero(whole).tolist():
            mine = np.flatnonzero((sa == s) | (sb == s))
            ratio = np.where(x.failed[mine], 0.0, x.ratio[mine])
            c = found.get(s)
            if c is None:
                kind, name = ("host", p.hosts[int(p.host[p.members("supernode", s)[0]])]) \
                    if p.one_host_domain[s] else ("supernode", p.supernodes[s])
                c = found[s] = Culprit(name, kind, {}, note=WHOLE, members=p.members("supernode", s))
            c.factors[t] = float(np.median(ratio))
            c.explains[t], c.touches[t] = mine, mine
            c.peers[t] = level.level[t]
    return list(found.values()), rest


def whole_message(c: Culprit, rule: Rule, ev: dict, n: int, bar: float) -> str:
    """The domain's finding: the tier it is beyond on every pair, its median there, and a bar
    above what the design gives (``bar``: the rule's, in ratio units, below is worse)."""
    tier = ev.get("tier")
    f = c.factors.get(tier) if tier else c.factor
    ref = "of design" if rule.op == "ratio_to_design" else "of its tier's level"
    what = (f"{c.kind} {c.entity}: {rule.summary} on every one of its {n} pair tests ({tier}), their median "
            f"{f:.2f} {ref}: no card, host or link inside it explains that")
    if bar > 1.0:
        above = "what the design gives" if rule.op == "ratio_to_design" else "the tier's own level"
        what += f"; the bar ({bar:g} {ref}) is above {above}: check the rule"
    return what
