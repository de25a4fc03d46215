"""The explainer's first look (issue 31; sncheck/health/firstlook.py): each card's median
pair ratio per tier, taken once, is what the search reads of every card no culprit acts
on; only the cards at an end of a pair a culprit acts on are computed from their pairs.
The same medians and counts, to the bit, as every pair's residual grouped by card."""

from __future__ import annotations

import numpy as np

from sncheck.health import firstlook
from sncheck.health.explain import LEVEL, Bars, CostModel, group_median
from sncheck.health.levels import Level
from sncheck.health.pairview import FabricPaths, summarise
from sncheck.model import host_of, link_id
from test_explain import cells_of, fleet  # noqa: F401  (the fixture)


def _search(topo) -> Level:
    host = host_of(topo.card_ids[40])
    cells = cells_of(topo, speed={topo.card_ids[3]: 0.85, **{c: 0.9 for c in topo.cards_of_host(host)}},
                     link={link_id(topo.card_ids[60], topo.card_ids[61]): 0.0,
                           link_id(topo.card_ids[70], topo.card_ids[200]): 0.5}, noise=0.01, seed=3)
    return Level(summarise(cells, topo), FabricPaths(topo), Bars(LEVEL, ()), CostModel())


def _hypotheses(lv: Level):
    """Culprits of every kind, one more each time, with factors on the tiers each has pairs
    on (as Level.factors gives them)."""
    kinds = [lv.entity("card", 3), lv.entity("host", int(lv.paths.host[40])), lv.entity("supernode", 1),
             lv.entity("link", 60, 61), lv.entity("link", 70, 200), lv.entity("nic", 9)]
    kinds += [lv.entity("leaf", 0)] if lv.paths.leaves else []
    kinds += [lv.entity("spine", 0)] if lv.paths.spines else []
    for upto in range(len(kinds) + 1):
        yield [(e, {t: 0.8 - 0.05 * i for t in lv.tiers if len(lv.pairs(e, t))}) for i, e in enumerate(kinds[:upto])]


def test_card_residuals_read_the_first_look_and_equal_every_pair_s_to_the_bit(fleet, monkeypatch):  # noqa: F811
    lv = _search(fleet)
    computed: list[np.ndarray] = []
    own = lv._card_residuals  # noqa: SLF001  (counting what the search computes from pairs)
    monkeypatch.setattr(lv, "_card_residuals", lambda t, cards, H: computed.append(cards) or own(t, cards, H))
    every = np.arange(lv.n)
    for H in _hypotheses(lv):
        for t, x in lv.tiers.items():
            q = lv.residual(t, np.arange(len(x.a)), H)
            want = group_median(np.concatenate([x.a, x.b]), np.concatenate([q, q]))
            computed.clear()
            got = lv.card_residuals(t, every, H)
            for g, w in zip(got, want):
                assert np.array_equal(g, w), (len(H), t)
            some = every[::7]
            sub = lv.card_residuals(t, np.concatenate([some, some[:3]]), H)  # a card asked twice: once
            keep = np.isin(want[0], some)
            assert all(np.array_equal(g, w[keep]) for g, w in zip(sub, want)), (len(H), t)
            # computed from pairs: only the ends of the pairs a culprit acts on (none with no culprit)
            acting = [lv.pairs(e, t) for e, f in H if f.get(t, 1.0) < 1.0]
            at = np.concatenate(acting) if acting else np.zeros(0, np.int64)
            ends = set(np.concatenate([x.a[at], x.b[at]]).tolist())
            asked = set(np.concatenate(computed).tolist()) if computed else set()
            assert asked <= ends, (len(H), t)
            assert bool(asked) == bool(ends), (len(H), t)


def test_domain_levels_read_the_first_look_where_no_culprit_acts_on_the_domain(fleet, monkeypatch):  # noqa: F811
    """A domain's level (the median of its cards' medians) is the first look's where every
    pair of the tier is inside one domain and no culprit acts on the domain's pairs; from
    the domain's pairs otherwise (a tier with pairs between domains: every domain): the
    same levels to the bit as from the pairs."""
    lv = _search(fleet)
    lv.domain_min = 3
    computed: list[int] = []
    from_pairs = firstlook.from_pairs
    monkeypatch.setattr(firstlook, "from_pairs", lambda lv, t, sns, H: computed.extend(sns.tolist())
                        or from_pairs(lv, t, sns, H))
    sns = np.arange(len(lv.paths.supernodes))
    for H in _hypotheses(lv):
        for t, x in lv.tiers.items():
            computed.clear()
            got = lv.domain_levels(t, sns, H)
            want = from_pairs(lv, t, sns, H)
            assert np.array_equal(got, want, equal_nan=True), (len(H), t)
            inside = bool((lv.paths.sn[x.a] == lv.paths.sn[x.b]).all())
            acting = [lv.pairs(e, t) for e, f in H if f.get(t, 1.0) < 1.0]
            at = np.concatenate(acting) if acting else np.zeros(0, np.int64)
            touched = set(lv.paths.sn[np.concatenate([x.a[at], x.b[at]])].tolist())
            assert set(computed) == (set(sns.tolist()) if not inside else touched), (len(H), t)
            if inside:
                assert np.isfinite(got).sum() >= 2, t  # levels the first look gave, not NaN
