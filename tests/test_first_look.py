"""The explainer's first look (issue 31; sncheck/health/firstlook.py): each card's median
pair ratio per tier, taken once, is what the search reads of every card no culprit acts
on; only the cards at an end of a pair a culprit acts on are computed from their pairs.
The same medians and counts, to the bit, as every pair's residual grouped by card."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sncheck.health import endstats, firstlook, separation
from sncheck.health.explain import (CARD, DESIGN, DOMAIN, END_KINDS, LEVEL, MAD_SD, PEERS, Bar, Bars, CostModel,
                                    group_median, median)
from sncheck.health.levels import NEAR_SPAN, Level
from sncheck.health.pairview import FabricPaths, FrameTier, summarise
from sncheck.model import host_of, link_id
from sncheck.topology import SCALE_OUT
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


def test_every_residual_sorted_from_the_first_look_equals_every_pair_s(fleet):  # noqa: F811
    """The tier's residuals under culprits of every kind, from the first look's sorted
    ratios with the acting pairs' taken out and their residuals put in: every pair's
    residual, sorted, to the bit; with no culprit acting, the first look's own array."""
    lv = _search(fleet)
    for H in _hypotheses(lv):
        for t, x in lv.tiers.items():
            q = lv.residual(t, np.arange(len(x.a)), H)
            got = firstlook.residuals(lv, t, H)
            assert np.array_equal(got, np.sort(q[~np.isnan(q)])), (len(H), t)
            if not len(firstlook.acting_pairs(lv, t, H)):
                assert got is lv.look(t).spread(x)


def test_pair_noise_and_a_tier_s_level_are_selected_from_the_first_look(fleet, monkeypatch):  # noqa: F811
    """Level.pair_noise (the MAD of every residual over the tier's level) and a re-levelled
    tier's level (their median) are read from the first look's sorted ratios, sorted once
    per tier, never from a column of every pair's residual: the same values to the bit."""
    lv = _search(fleet)
    sorts = []
    spread = firstlook.FirstLook.spread
    monkeypatch.setattr(firstlook.FirstLook, "spread", lambda self, x: sorts.append(x.name) or spread(self, x))
    for H in _hypotheses(lv):
        lv.H = H
        for t, x in lv.tiers.items():
            q = lv.residual(t, np.arange(len(x.a)), H)
            r = q / lv.level[t]
            assert lv.pair_noise(t) == MAD_SD * median(np.abs(r - median(r))), (len(H), t)
            assert firstlook.sorted_median(firstlook.residuals(lv, t, H)) == median(q), (len(H), t)
    assert set(sorts) == set(lv.tiers)
    assert all(look._sorted is not None for look in lv.looks.values())  # noqa: SLF001  (sorted once, kept)


def test_the_spread_s_mad_is_the_median_of_the_distances_to_the_bit():
    """spread_noise against numpy's median of |r - median(r)|: odd and even counts, ties,
    every value on one side of the median, one value, a level that is not 1."""
    rng = np.random.default_rng(7)
    cases = [np.array([1.0]), np.array([0.5, 2.0]), np.full(9, 0.93), np.r_[np.full(6, 0.5), np.full(5, 1.0)]]
    cases += [rng.normal(1.0, 0.02, n) for n in (2, 3, 10, 11, 1000, 1001)]
    cases += [rng.integers(80, 100, n) / 100.0 for n in (7, 64, 513)]  # ties
    cases += [np.r_[rng.normal(1.0, 0.01, 300), rng.normal(0.5, 0.01, 200)]]  # a slow share
    for s in cases:
        s = np.sort(s)
        for level in (1.0, 0.97, 1.13):
            r = s / level
            want = float(np.median(np.abs(r - np.median(r))))
            assert firstlook.spread_noise(s, level) == want, (len(s), level)
    assert np.isnan(firstlook.spread_noise(np.zeros(0), 1.0))


def test_a_search_s_cards_and_domains_are_the_first_look_s(fleet):  # noqa: F811
    """The exceptions' first reading (Level.initial) and a re-levelled tier's second one
    (separation.reread_cards) take their cards and domains from the first look, not from a
    pass over every pair end: the same card and domain exceptions as from every end, a dead
    card (every pair of it failed) and a slow domain among them, under culprits of every kind."""
    host = host_of(fleet.card_ids[40])
    cells = cells_of(fleet, speed={fleet.card_ids[3]: 0.85, fleet.card_ids[9]: 0.0,
                                   **{c: 0.9 for c in fleet.cards_of_host(host)},
                                   **{c: 0.88 for c in fleet.card_ids if fleet.supernode_of_host(host_of(c)) == "sn02"}},
                     noise=0.01, seed=5)
    bars = Bars(LEVEL, (Bar("card", 2, 0, CARD, PEERS, 0.93, 3), Bar("domain", 2, 1, DOMAIN, DESIGN, 0.93, 3)))
    lv = Level(summarise(cells, fleet), FabricPaths(fleet), bars, CostModel())
    lv.initial()
    for t, x in lv.tiers.items():
        ends = np.unique(np.concatenate([x.a, x.b]))
        assert 9 in ends.tolist() and 9 not in lv.look(t).cards.tolist(), t  # the dead card: ends, no measured pair
        if t != SCALE_OUT:
            sns = np.unique(lv.paths.sn[ends])
            assert np.array_equal(lv.domain_ex[t], sns[lv.domain_levels(t, sns, []) < 0.93]), t
    assert any(len(v) for v in lv.domain_ex.values()) and any(len(v) for v in lv.card_ex.values())
    for H in _hypotheses(lv):
        lv.H = H
        for t, x in lv.tiers.items():
            held = np.array([m for e, _ in H if e.kind in END_KINDS for m in e.members.tolist()], np.int64)
            every = np.setdiff1d(np.unique(np.concatenate([x.a, x.b])), held)
            want = lv.card_residuals(t, every, H)
            before_ex, before_near = lv.card_ex[t], lv.card_near[t]
            separation.reread_cards(lv, t, NEAR_SPAN)
            ratio = want[1] / lv.peer_level(t, want[0], H)
            enough = want[2] >= lv.card_min
            assert np.array_equal(lv.card_ex[t], np.union1d(before_ex, want[0][(ratio < 0.93) & enough])), (len(H), t)
            assert np.array_equal(lv.card_near[t], np.union1d(before_near, want[0][(ratio < 0.93 * (1 + NEAR_SPAN))
                                                                                   & enough])), (len(H), t)


def test_the_first_look_s_card_medians_are_every_end_s_grouped_median_to_the_bit():
    """endstats.card_medians (each card's ends sorted in rows of a block, from the tier's
    index of ends by card) against pandas' grouped median of every pair end (the path it
    replaced, explain.group_median over both ends): random tiers with ties, failed pairs
    (NaN), cards with one pair, a card with many more pairs than the rest (rows of very
    different lengths), cards with no measured pair, infinite ratios, blocks of one row
    and of every row, card codes beyond the ends seen."""
    rng = np.random.default_rng(31)
    for trial in range(120):
        cards = int(rng.integers(2, 60))
        n = int(rng.integers(1, 400))
        a = rng.integers(0, cards, n)
        b = rng.integers(0, cards, n)
        if trial % 3 == 0:
            a[: n // 2] = 0  # one card in half the pairs
        a, b = np.minimum(a, b), np.maximum(a, b)
        order = np.lexsort((b, a))
        a, b = a[order].astype(np.int32), b[order].astype(np.int32)
        ratio = rng.choice([rng.normal(1.0, 0.05, n), rng.integers(1, 5, n) / 4.0])  # ties too
        if trial % 7 == 0:
            ratio[rng.random(n) < 0.05] = np.inf
        failed = rng.random(n) < rng.choice([0.0, 0.1, 0.6])
        ratio[failed] = np.nan  # (as a tier's summaries: NaN where failed)
        x = FrameTier("t", a, b, ratio, failed, cards + 3, np.zeros(n, bool), 1.0)
        keep = np.concatenate([~np.isnan(ratio)] * 2)
        grouped = pd.Series(np.concatenate([ratio, ratio])[keep]).groupby(np.concatenate([a, b])[keep], sort=True)
        for at_once in (1, 7, 1 << 21):
            got, med, count = endstats.card_medians(x.by_card(), np.where(failed, np.nan, ratio), at_once)
            assert got.tolist() == grouped.median().index.tolist(), (trial, at_once)
            assert med.tobytes() == grouped.median().to_numpy(float).tobytes(), (trial, at_once)
            assert count.tolist() == grouped.size().tolist(), (trial, at_once)
    empty = FrameTier("t", np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.zeros(0, bool), 4,
                      np.zeros(0, bool), 1.0)
    assert [len(v) for v in endstats.card_medians(empty.by_card(), np.zeros(0), 64)] == [0, 0, 0]


def test_the_first_look_holds_its_index_of_pair_ends_only_where_candidates_read_it(fleet):  # noqa: F811
    """A tier's first look groups its ends by card through an index of them. A kind with no
    pair beyond a bar lets it go (8 bytes a pair: the gate's clean latency tiers held one
    each for nothing); a kind with one weighs candidates, each read in every tier through
    that index (pairs_of), so the first look's is held, built once. The first look's medians
    are the same either way."""
    lv = _search(fleet)
    looks = {t: (lv.look(t).cards, lv.look(t).med, lv.look(t).n) for t in lv.tiers}
    assert all("_index" not in x.__dict__ for x in lv.tiers.values())
    held = Level(_search(fleet).tiers, FabricPaths(fleet), Bars(LEVEL, (Bar("card", 2, 0, CARD, PEERS, 0.93, 3),)),
                 CostModel())
    held.initial()  # the dead link's pair is beyond a bar (failed); the card bar reads the first look
    assert any(len(at) for at in held.pair_ex.values())
    assert all("_index" in x.__dict__ for x in held.tiers.values())
    for t, x in lv.tiers.items():
        lv.pairs(lv.entity("card", 3), t)
        assert "_index" in x.__dict__ and x.by_card() is x.__dict__["_index"]  # noqa: SLF001
        again = endstats.card_medians(x.by_card(), np.where(x.failed, np.nan, x.ratio), 1 << 21)
        assert all(u.tobytes() == v.tobytes() for u, v in zip(looks[t], again)), t
