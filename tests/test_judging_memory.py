"""Judging's memory at fleet size (issue 31): what the explanation search holds per pair
and what it builds over a whole tier, each the same to the bit as the wider form it
replaces (sncheck/health/pairview.py, explain.py, levels.py, culprits.py)."""

from __future__ import annotations

import numpy as np
import pytest
import pandas as pd

from sncheck.health import culprits, endstats, firstlook, pairview
from sncheck.health.explain import LARGE, LEVEL, Bars, CostModel, median
from sncheck.health.levels import Level
from sncheck.health.metrics import DetectContext
from sncheck.health.pairview import FabricPaths, FrameTier, design_of, summarise
from sncheck.health.rules import evaluate
from sncheck.model import host_of, link_id
from test_explain import RULES, cells_of, findings, fleet, pod  # noqa: F401  (the fixtures)
from test_lean_judging import TOPO, _rows


def _tiers(rng: np.random.Generator, cards: int, pairs: int, sorted_first: bool) -> tuple[np.ndarray, np.ndarray]:
    a, b = rng.integers(0, cards, pairs), rng.integers(0, cards, pairs)
    keep = a != b
    a, b = a[keep], b[keep]
    if sorted_first:  # a tier's pairs come sorted by their first end
        at = np.argsort(a, kind="stable")
        a, b = a[at], b[at]
    return a.astype(np.int32), b.astype(np.int32)


def test_the_pairs_index_is_the_stable_sort_of_both_ends_held_as_int32():
    """Each card's pairs are read through an index held for the whole search: each column
    of ends' stable order by card (a counting sort, as int32), none for a column already
    in order (a tier's first ends); every card's run (first ends, then second ends) the
    positions the argsort of every end gives, and pairs_of as a scan."""
    rng = np.random.default_rng(5)
    for trial in range(200):
        cards = int(rng.integers(2, 40))
        a, b = _tiers(rng, cards, int(rng.integers(0, 200)), trial % 2 == 0)
        n = len(a)
        x = FrameTier("t", a, b, np.ones(n), np.zeros(n, bool), cards, np.zeros(n, bool), 1.0)
        index = x._index
        held = [order for order, _ in index.columns if order is not None]
        assert all(order.dtype == np.int32 for order in held), trial
        assert len(held) == sum(bool((e[1:] < e[:-1]).any()) for e in (a, b)), trial  # (sorted first ends: none)
        ends = np.concatenate([a, b])
        want = np.argsort(ends, kind="stable")
        starts = np.searchsorted(ends[want], np.arange(cards + 1))
        assert index.starts.tolist() == starts.tolist(), trial
        some = rng.permutation(cards)[: int(rng.integers(0, cards + 1))]
        width = 2 * n + 1  # (wider than any card's run)
        pos, slot = index.of(some, width)
        got = np.full(len(want), -1)
        got[starts[some][slot // width] + slot % width] = pos
        run = np.concatenate([np.arange(starts[c], starts[c + 1]) for c in some] + [np.zeros(0, int)])
        assert got[run].tolist() == (want[run] % max(n, 1)).tolist(), trial
        assert x.pairs_of(some[:3]).tolist() == np.flatnonzero(np.isin(a, some[:3]) | np.isin(b, some[:3])).tolist()


def test_the_counting_order_is_numpy_s_stable_argsort(monkeypatch):
    """endstats.counting_order against np.argsort(kind="stable"): codes in chunks of the
    sort (one chunk, several, a last one short), ties, unseen codes, empty."""
    rng = np.random.default_rng(7)
    monkeypatch.setattr(endstats, "SORT_AT_ONCE", 16)
    for trial in range(100):
        cards = int(rng.integers(1, 50))
        codes = rng.integers(0, cards, int(rng.integers(0, 120))).astype(rng.choice([np.int32, np.int64]))
        starts = np.zeros(cards + 1, np.int64)
        np.cumsum(np.bincount(codes, minlength=cards), out=starts[1:])
        got = endstats.counting_order(codes, starts)
        assert got.dtype == np.int32, trial
        assert got.tolist() == np.argsort(codes, kind="stable").tolist(), trial


def test_the_summaries_hold_their_pairs_ends_as_int32(fleet):  # noqa: F811
    cells = cells_of(fleet, speed={fleet.card_ids[3]: 0.8})
    for x in summarise(cells, fleet).values():
        assert x.a.dtype == x.b.dtype == np.int32
        assert (x.a < x.b).all() and x.a.tolist() == sorted(x.a.tolist())  # sorted by the first end


def test_every_pair_s_residual_is_the_residual_of_every_pair_to_the_bit(fleet):  # noqa: F811
    """The pair noise and a tier's level read every measured residual under the hypothesis
    (firstlook.residuals): ratio where no culprit acts (left out where failed), computed
    where one does; the same values as the residual of every pair, sorted, for culprits of
    every kind together."""
    host = host_of(fleet.card_ids[40])
    cells = cells_of(fleet, speed={fleet.card_ids[3]: 0.85, **{c: 0.9 for c in fleet.cards_of_host(host)}},
                     link={link_id(fleet.card_ids[60], fleet.card_ids[61]): 0.0,
                           link_id(fleet.card_ids[70], fleet.card_ids[200]): 0.5}, noise=0.01, seed=3)
    tiers = summarise(cells, fleet)
    lv = Level(tiers, FabricPaths(fleet), Bars(LEVEL, ()), CostModel())
    paths = lv.paths
    kinds = [lv.entity("card", 3), lv.entity("host", int(paths.host[40])), lv.entity("supernode", 1),
             lv.entity("link", 60, 61), lv.entity("link", 70, 200), lv.entity("nic", 9)]
    kinds += [lv.entity("leaf", 0)] if paths.leaves else []
    kinds += [lv.entity("spine", 0)] if paths.spines else []
    for upto in range(len(kinds) + 1):
        # factors on the tiers each has pairs on, as the search gives them (Level.factors)
        lv.H = [(e, {t: 0.8 - 0.05 * i for t in tiers if len(lv.pairs(e, t))}) for i, e in enumerate(kinds[:upto])]
        for t, x in tiers.items():
            want = lv.residual(t, np.arange(len(x.a)), lv.H)
            got = firstlook.residuals(lv, t, lv.H)
            assert np.array_equal(got, np.sort(want[~np.isnan(want)])), (upto, t)
            assert len(got) <= len(x.a) - int(np.asarray(x.failed).sum())  # a failed pair is no residual


def test_a_large_median_selects_the_same_middle_values():
    rng = np.random.default_rng(2)
    for n in (LARGE + 1, LARGE + 2, 3 * LARGE):
        x = rng.integers(0, 50, n).astype(float)  # ties
        x[rng.random(n) < 0.05] = np.nan
        keep = x[~np.isnan(x)].copy()
        assert median(x) == float(np.median(keep))
        assert np.array_equal(x[~np.isnan(x)], keep)  # the input left as it was


def test_a_metric_frame_goes_before_its_search(monkeypatch):
    """A metric no later rule reads is out of the evaluation's cache while its culprits are
    searched for (at fleet size its value columns are hundreds of MB the search never reads)."""
    mine = [r for r in RULES.judging("connectivity") if r.metric in ("p2p_latency", "p2p_bandwidth")]
    held = _held_at_explain(monkeypatch, mine, DetectContext(TOPO, {}), pd.DataFrame(_rows()))
    assert "p2p_latency" in held and "p2p_latency" not in held["p2p_latency"]


def _held_at_explain(monkeypatch, rules, ctx, rows) -> dict[str, set]:
    """Each explained metric -> the metric frames the evaluation's cache holds during its search."""
    held: dict[str, set] = {}
    explain = culprits.explain

    def watch(tiers, paths, bars, *more):
        rule = next(r for r in rules if r.name == bars.bars[0].rule)
        held[rule.metric] = {k[0] for k in ctx.cache or {} if isinstance(k[0], str) and not k[0].startswith("_")}
        return explain(tiers, paths, bars, *more)

    monkeypatch.setattr(culprits, "explain", watch)
    evaluate(rules, rows, ctx)
    return held


def test_a_rule_against_a_baseline_there_is_none_of_keeps_no_frame(monkeypatch):
    """A later rule against a baseline, history or first calibration the run has none of
    reads nothing (drift.compares): the bandwidth frame goes before the bandwidth search;
    with a baseline of bandwidth it stays for that rule, which judges against it."""
    rows = pd.DataFrame(_rows())
    mine = [r for r in RULES.judging("connectivity") if r.metric == "p2p_bandwidth"
            and r.op in ("ratio_to_design", "peer_outlier", "baseline_regression", "drift", "calibration_regression")]
    assert {r.op for r in mine} >= {"peer_outlier", "baseline_regression", "drift"}
    assert "p2p_bandwidth" not in _held_at_explain(monkeypatch, mine, DetectContext(TOPO, {}), rows)["p2p_bandwidth"]
    with_base = DetectContext(TOPO, {}, baseline={"metrics": {"p2p_bandwidth": {"tier": {"intra_host": 200.0}}}})
    assert "p2p_bandwidth" in _held_at_explain(monkeypatch, mine, with_base, rows)["p2p_bandwidth"]
    found = evaluate(mine, rows, DetectContext(TOPO, {}, baseline={"metrics": {"p2p_bandwidth": {
        "tier": {"intra_host": 200.0}}}}))
    assert any(f.rule == "p2p-bandwidth-below-baseline" for f in found)


def _symptoms(fleet, rng, sick: list[str], links: list[tuple[str, str]], scatter: int) -> pd.DataFrame:  # noqa: F811
    """Corrupted-payload cells over every pair of ``fleet``, each pair measured in two rounds
    (the second a repeat of the first): every pair at a ``sick`` card shows it in its first
    round, each of ``links`` in one round, ``scatter`` random pairs in one round; plus a
    row naming a card the topology lacks, showing it, and a repeat of a pair of ids[150]."""
    base = cells_of(fleet)[["src", "dst", "tier", "failed"]]
    n = len(base)
    showing = base["src"].isin(sick).to_numpy() | base["dst"].isin(sick).to_numpy()
    for a, b in links:
        showing |= ((base["src"] == a) & (base["dst"] == b)).to_numpy()
    showing[rng.choice(n, scatter, replace=False)] = True
    first = base.assign(value=showing.astype(int))
    second = base.assign(value=np.zeros(n, int))
    # a repeat written with its ends the other way round: the same pair
    second["src"], second["dst"] = base["dst"], base["src"]
    ends = [("ghost/gpu0", fleet.card_ids[3]), (fleet.card_ids[150], fleet.card_ids[160])]
    stray = pd.DataFrame({"src": [a for a, _ in ends], "dst": [b for _, b in ends], "failed": [False, False],
                          "tier": ["scale_out", fleet.tiers(pd.Series([ends[1][0]]), pd.Series([ends[1][1]]))[0]],
                          "value": [1, 1]})
    return pd.concat([first, second, stray], ignore_index=True)


def _named(cells, fleet, monkeypatch, every: bool):  # noqa: F811
    if every:
        monkeypatch.setattr(culprits, "rows_read", lambda c, _b: c)
    else:
        monkeypatch.undo()
    rules = [r for r in RULES.rules if r.metric == "p2p_checksum_failures" and culprits.kind_of(r)]
    return [(f.entity, f.entity_kind, f.rule, f.message, f.evidence)
            for f in culprits.explain_cells(cells, rules, DetectContext(fleet, dict(fleet.inventory.design)))]


def test_a_symptom_kind_summarises_only_the_rows_its_search_reads(fleet, monkeypatch):  # noqa: F811
    """A symptom kind (corrupted payloads) summarises every row of its exceptions and of the
    pairs at a card that shows it with two partners or more in a tier (rates.rows_read),
    none other: at fleet size a few corrupted pairs were tens of millions summarised."""
    ids = fleet.card_ids
    cells = _symptoms(fleet, np.random.default_rng(0), [ids[5]], [(ids[100], ids[101])], 0)
    seen: list[pd.DataFrame] = []
    real = culprits.summarise
    monkeypatch.setattr(culprits, "summarise", lambda c, *a, **k: (seen.append(c), real(c, *a, **k))[1])
    names = _named(cells, fleet, pytest.MonkeyPatch(), every=False)
    assert {(e, k) for e, k, *_ in names} == {(ids[5], "card"), (link_id(ids[100], ids[101]), "link"),
                                              (link_id(ids[150], ids[160]), "link")}
    [read] = seen
    ends = read[["src", "dst"]].astype(str)
    at_card = (ends["src"] == ids[5]) | (ends["dst"] == ids[5])
    # the card's pairs (both rounds); each link's rows (ids[150]'s: its two rounds and the
    # stray showing it; none of its other pairs: one partner); the stranger's row (a pair
    # with a row beyond: its own; the summaries leave it out as a card the topology lacks)
    assert int(at_card.sum()) == 2 * (len(ids) - 1)
    assert sorted(map(tuple, ends[~at_card].to_numpy().tolist())) == sorted(
        [(ids[100], ids[101]), (ids[101], ids[100]), (ids[150], ids[160]), (ids[160], ids[150]), (ids[150], ids[160]),
         ("ghost/gpu0", ids[3])])


@pytest.mark.parametrize("seed", range(6))
def test_a_symptom_kind_names_what_summarising_every_pair_names(fleet, monkeypatch, seed):  # noqa: F811
    """The same findings, to the message and the evidence, as the search over every pair's
    summary: sick cards alone and side by side (a whole host), links, a card whose two
    exceptions are in two tiers (one partner in each: a link each), scattered pairs,
    rows repeated the other way round, a stranger card."""
    rng = np.random.default_rng(seed)
    ids = fleet.card_ids
    host = fleet.cards_of_host(host_of(ids[int(rng.integers(0, len(ids)))]))
    sick = [ids[int(i)] for i in rng.choice(len(ids), int(rng.integers(0, 4)), replace=False)]
    sick += host if seed % 2 else []
    out = [t for t in range(len(ids)) if fleet.tiers(pd.Series([ids[0]]), pd.Series([ids[t]]))[0] == "scale_out"]
    links = [(ids[10], ids[11]), (ids[0], ids[out[0]]), (ids[0], ids[1])]  # ids[0]: one partner in each of two tiers
    cells = _symptoms(fleet, rng, sick, links, int(rng.integers(0, 40)))
    every = _named(cells, fleet, monkeypatch, every=True)
    assert every  # (the case names something)
    assert _named(cells, fleet, monkeypatch, every=False) == every


def test_a_tier_s_design_is_the_median_of_its_rows_design_to_the_bit():
    """summarise reads a tier's design without a median of its column where every row
    gives one value (pairview.design_of); the same float as np.nanmedian, sign and
    overflow included, for one value, NaN among them, several values, zeros and extremes."""
    rng = np.random.default_rng(4)
    for trial in range(4000):
        n = int(rng.integers(1, 40))
        d = np.full(n, float(rng.choice([0.0, -0.0, 5e-324, 3.7, -2.5, 9e299, 1e308, np.inf, -np.inf])))
        if trial % 3 == 1:
            d[rng.random(n) < 0.3] = np.nan
        elif trial % 3 == 2:
            d = rng.choice([1.0, 2.0, np.nan, np.inf, 1e308], n)
        if not np.isfinite(d).any():
            continue
        with np.errstate(over="ignore"):  # (the mean of two of the largest floats)
            want, got = float(np.nanmedian(d)), design_of(d)
        assert np.array_equal([got], [want], equal_nan=True) and np.signbit(got) == np.signbit(want), d


def _summaries(cells, fleet, **how):  # noqa: F811
    return {t: (x.a.tolist(), x.b.tolist(), np.asarray(x.ratio).tobytes(), x.values.tobytes(), np.asarray(x.failed).tolist(),
                x.exceptions().tolist(), repr(x.level), repr(x.design), x.peers.tolist())
            for t, x in summarise(cells, fleet, **how).items()}


@pytest.mark.parametrize("seed", range(4))
def test_a_tier_s_one_design_divides_as_its_column_did(fleet, monkeypatch, seed):  # noqa: F811
    """A tier whose rows give one design is judged against that value, not a copy of its
    column (pairview.tier_reference): every summary the same to the bit as against the
    column, with repeats, failed rows and NaN values, a tier whose design varies or has
    gaps, one of zero, no design column, times inverted, and a stored reference per row."""
    rng = np.random.default_rng(seed)
    cells = cells_of(fleet, speed={fleet.card_ids[3]: 0.8}, noise=0.05, seed=seed)
    cells = pd.concat([cells, cells.sample(frac=0.3, random_state=seed)], ignore_index=True)  # repeats
    cells.loc[rng.random(len(cells)) < 0.02, "failed"] = True
    cells.loc[rng.random(len(cells)) < 0.01, "value"] = np.nan
    tiers = cells["tier"].to_numpy()
    if seed == 1:  # one tier's design varies, another's has gaps, a third's is zero
        cells.loc[(tiers == "scale_up") & (rng.random(len(cells)) < 0.1), "design"] *= 1.5
        cells.loc[(tiers == "scale_out") & (rng.random(len(cells)) < 0.1), "design"] = np.nan
        cells.loc[tiers == "intra_host", "design"] = 0.0
    if seed == 2:
        cells = cells.drop(columns="design")
    how = [{"invert": bool(seed % 2)},
           {"reference": np.full(len(cells), 123.0), "apart": [fleet.card_ids[3]]},
           {"count_above": 1.0}]
    monkeypatch.setattr(pairview, "STEP", 7)  # (a tier's rows read a few at a time)
    read = pairview.tier_reference
    ones: list[float] = []
    monkeypatch.setattr(pairview, "tier_reference", lambda *a: (ones.append(r) if isinstance(r := read(*a), float)
                                                                else None) or r)
    for kw in how:
        one = _summaries(cells, fleet, **kw)
        with monkeypatch.context() as m:
            m.setattr(pairview, "tier_reference", lambda design, at: None if design is None else design[at])
            column = _summaries(cells, fleet, **kw)
        assert one == column, kw
    assert len(ones) >= (3 if seed == 1 else 0 if seed == 2 else 6)  # (the tiers of one value: as one)


def _columns(x) -> tuple:
    return (np.asarray(x.ratio).tobytes(), np.asarray(x.failed).tobytes(), x.values.tobytes(), x.a.tobytes(),
            x.b.tobytes(), x.exceptions().tolist(), repr(x.level), repr(x.design), x.peers.tolist())


@pytest.mark.parametrize("seed", range(6))
def test_a_tier_of_one_row_a_pair_derives_its_ratios_to_the_bit(pod, monkeypatch, seed):  # noqa: F811
    """A tier whose pairs are one row each, divided by one value (its design, else its
    median), holds no ratio or failed column: each is its value's (pairview.Derived), read
    by position, a slice, one pair or whole, the same to the bit as the columns it
    replaces; failed rows, NaN, infinities, zero and negative values, times inverted, no
    design; and the findings the same both ways."""
    rng = np.random.default_rng(seed)
    ids = pod.card_ids
    metric = "p2p_latency" if seed % 2 else "p2p_bandwidth"
    cells = cells_of(pod, speed={ids[3]: 0.8, ids[40]: 0.6}, lat={ids[3]: 2.5, ids[40]: 3.0},
                     link={link_id(ids[60], ids[61]): 0.4}, noise=0.05, seed=seed, metric=metric)
    clean = cells.copy()  # (the findings: the faults alone, no odd value)
    value = cells["value"].to_numpy(float).copy()
    for odd, share in ((np.nan, 0.01), (np.inf, 0.005), (0.0, 0.005), (-1.0, 0.003), (-0.0, 0.003)):
        value[rng.random(len(value)) < share] = odd
    cells["value"] = value
    cells.loc[rng.random(len(cells)) < 0.02, "failed"] = True
    if seed % 3 == 2:
        cells = cells.drop(columns="design")  # each tier over its median
    how = {"invert": metric == "p2p_latency", "exception": lambda _t, r, f, level: f | (r < 0.9)}
    derived = summarise(cells, pod, **how)
    with monkeypatch.context() as m:
        m.setattr(pairview, "DERIVE", False)
        eager = summarise(cells, pod, **how)
        want = findings(clean, pod, metric) if seed < 2 else []
    assert all(isinstance(x.ratio, pairview.Derived) and isinstance(x.failed, pairview.Derived)
               for x in derived.values())
    assert not any(isinstance(x.ratio, pairview.Derived) for x in eager.values())
    for t, e in eager.items():
        d = derived[t]
        assert _columns(d) == _columns(e), t
        assert pairview.measured(d).tobytes() == pairview.measured(e).tobytes(), t
        at = rng.integers(0, len(e.a), 60)
        assert pairview.measured(d, at).tobytes() == pairview.measured(e, at).tobytes(), t
        assert d.ratio[at].tobytes() == e.ratio[at].tobytes() and d.failed[at].tolist() == e.failed[at].tolist(), t
        assert d.ratio[5:40].tobytes() == e.ratio[5:40].tobytes(), t
        for i in at[:20].tolist():  # one pair: a float (NaN where failed) and a bool
            assert np.array([d.ratio[i]]).tobytes() == np.array([e.ratio[i]]).tobytes(), (t, i)
            assert bool(d.failed[i]) == bool(e.failed[i]), (t, i)
    if seed < 2:
        got = findings(clean, pod, metric)
        assert [repr(f) for f in got] == [repr(f) for f in want]
        assert {f.entity for f in got} >= {ids[3], ids[40]}
