"""The p2p level kinds summarised without their metric frames (issue 31;
sncheck/health/p2ptiers.py): from the evaluation's one frame of pairs, each metric's value
as a column over its rows and its row selection as a mask, the pair summaries are those
of the metric's frame to the bit, and the findings the same, on random p2p rows: repeats,
ties, NaN and inf, failed and unreachable pairs, rows with no tier, a card the inventory
lacks, cards measured in one pair, tiers with no design or a design of 0."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from sncheck.health import culprits, metrics, pairgroups
from sncheck.health.explain import LEVEL, Bars, beyond
from sncheck.health.culprits import bar_of
from sncheck.health.metrics import METRICS, DetectContext, _mean_of_two
from sncheck.health.p2ptiers import p2p_tiers, rate_rows
from sncheck.health.pairview import beyond_bound, summarise
from sncheck.health.rates import rows_read
from sncheck.health.rules import evaluate, load_rules
from sncheck.config.inventory import TierDesign
from test_explain import topo_of
from test_pair_groups import _same

RULES = load_rules("default").judging("connectivity")
LEVEL_RULES = {m: [r for r in RULES if r.metric == m and (culprits.kind_of(r) or ("", ""))[1] == LEVEL]
               for m in ("p2p_bandwidth", "p2p_latency")}


@pytest.fixture(scope="module")
def demo():
    return topo_of("demo-2sn")


def _rows(topo, seed: int, low: float = 0.3, failing: int = 3, odd: float = 0.05) -> pd.DataFrame:
    """Random p2p rows over the topology's cards (see the module); values from ``low`` to
    1.1 of design (a search over pairs as noisy as 0.3-1.1 weighs thousands of candidates:
    the findings' test measures a healthier fleet)."""
    rng = np.random.default_rng(seed)
    ids = list(topo.card_ids)
    n = int(rng.integers(40, 400))
    a, b = rng.integers(0, len(ids), n), rng.integers(0, len(ids), n)
    b = np.where(a == b, (b + 1) % len(ids), b)
    src, dst = np.array(ids, object)[a], np.array(ids, object)[b]
    repeat = rng.random(n) < 0.3  # a retest's repeats, either way round
    src, dst = np.concatenate([src, dst[repeat]]), np.concatenate([dst, src[repeat]])
    lone = rng.choice(ids)  # a card in one pair alone
    keep = (src != lone) & (dst != lone)
    src = np.append(src[keep], lone)
    dst = np.append(dst[keep], ids[0] if lone != ids[0] else ids[1])
    if seed % 3 == 0:
        src[0] = "nosuch/gpu0"  # a card the inventory lacks
    m = len(src)
    tier = topo.tiers(pd.Series(src).where(pd.Series(src) != "nosuch/gpu0", ids[0]), pd.Series(dst)).astype(object)
    tier[rng.random(m) < 0.1] = None  # a row written with no tier: its pair's, under the inventory
    status = rng.choice(["ok"] * int(0.3 / odd) + ["failed", "timeout", "unreachable"][:failing], m)
    if seed % 4 == 1:
        status[:] = "ok"  # no row failed: latency keeps every row
    if seed % 5 == 2:
        status[:] = "failed"  # every row failed: latency has none
    scale = np.where(tier.to_numpy() == "scale_out", 50.0, 450.0)
    bw = np.round(scale * rng.uniform(low, 1.1, m), int(rng.integers(0, 2)))  # ties
    rev = np.round(scale * rng.uniform(low, 1.1, m), 0)
    lat = np.round(np.where(scale > 100, 3.0, 15.0) / rng.uniform(low, 1.1, m), 1)
    for col in (bw, rev, lat):
        col[rng.random(m) < odd] = np.nan
    bw[rng.random(m) < odd / 2] = np.inf
    lat[rng.random(m) < odd / 2] = 0.0
    p99 = np.round(lat * rng.choice([1.0, 1.5, 2.0, 3.5, 6.0], m), 1)  # spikes, some just at a bound
    p99[rng.random(m) < 0.05] = np.nan
    checksum = rng.choice(np.array([True, True, True, True, False, None], object), m)
    out = pd.DataFrame({"kind": "p2p", "src": src, "dst": dst, "tier": tier, "status": status,
                        "bw_GBps": bw, "bw_rev_GBps": rev, "lat_us": lat, "lat_p99_us": p99, "checksum_ok": checksum})
    if seed % 6 == 5:
        out["lat_p99_us"] = np.nan  # no tail measured: the metric has no rows
    return out.drop(columns=["checksum_ok"]) if seed % 7 == 6 else out


DESIGNS = [None, {}, {"scale_up": TierDesign(450.0, 3.0)},
           {"scale_up": TierDesign(0.0, 3.0), "scale_out": TierDesign(50.0, float("nan"))}]


def _ctx(topo, design, cache=True, subject=None) -> DetectContext:
    ctx = DetectContext(topo, dict(topo.inventory.design) if design is None else dict(design))
    ctx.cache = {} if cache else None
    if subject:
        ctx.known, ctx.subject = frozenset({(subject, "card")}), subject
    return ctx


def _how(metric: str, ctx: DetectContext) -> dict:
    bars = Bars(LEVEL, tuple(bar_of(r, i) for i, r in enumerate(LEVEL_RULES[metric])))
    return {"invert": metric == "p2p_latency", "apart": ctx.subject_cards(),
            "exception": lambda _t, r, f, level: beyond(bars, r, f, level)}


@pytest.mark.parametrize("seed", range(40))
def test_summaries_without_the_frames_equal_the_frames_to_the_bit(demo, seed):
    rows = _rows(demo, seed)
    design = DESIGNS[seed % len(DESIGNS)]
    subject = demo.card_ids[seed % 7] if seed % 2 else None
    order = ["p2p_bandwidth", "p2p_latency"] if seed % 3 else ["p2p_latency", "p2p_bandwidth"]
    for cache in (True, False):
        old, new = _ctx(demo, design, cache, subject), _ctx(demo, design, cache, subject)
        for metric in order:  # in one evaluation: the second reads the first's grouping where it made one
            frame = METRICS[metric].fn(rows, old)
            data = p2p_tiers(metric, rows, new)
            assert data.empty == frame.empty, (metric, cache)
            if frame.empty:
                continue
            assert data.no_design() == bool(frame["design"].isna().all()), (metric, cache)
            want = summarise(frame, demo, cache=old.cache, **_how(metric, old))
            got = data.summarise(new, **_how(metric, new))
            _same(got, want)


def test_latency_after_bandwidth_reads_the_grouping_of_the_frame_of_pairs(demo, monkeypatch):
    """The latency rows (every pair that did not fail) are grouped by the bandwidth's
    grouping of the frame of pairs, restricted by a mask: no second sort, no copy of rows."""
    rows = _rows(demo, 7)
    ctx = _ctx(demo, None)
    sorts = []
    own = pairgroups.unique_inverse
    monkeypatch.setattr(pairgroups, "unique_inverse", lambda key: sorts.append(len(key)) or own(key))
    p2p_tiers("p2p_bandwidth", rows, ctx).summarise(ctx, **_how("p2p_bandwidth", ctx))
    tiers = len(sorts)
    assert tiers >= 2
    data = p2p_tiers("p2p_latency", rows, ctx)
    assert data.keep is not None and not data.keep.all()  # (failed rows: a selection)
    data.summarise(ctx, **_how("p2p_latency", ctx))
    assert len(sorts) == tiers


def test_the_latency_tail_divides_by_latency_s_values_not_lat_us_decoded_again(demo, monkeypatch):
    """One evaluation reads lat_us once: latency's values (p2p_tiers) are the tail's
    denominator row for row (issue 31: at 131,072 cards a column of 50 M rows decoded twice).
    test_findings_without_the_frames_are_the_frames_findings: the same findings."""
    reads: list[list[str]] = []
    own = metrics.kind_rows
    monkeypatch.setattr(metrics, "kind_rows", lambda r, kind, only=None, keep=True:
                        reads.append(list(only or [])) or own(r, kind, only, keep))
    evaluate(RULES, _rows(demo, 1), DetectContext(demo, dict(demo.inventory.design)))
    assert [c for r in reads for c in r if c.startswith("lat_")] == ["lat_us", "lat_p99_us"]


@pytest.mark.parametrize("seed", range(30))
def test_symptom_rows_read_without_the_frames_are_the_frames_rows_read(demo, seed):
    """The p2p symptom kinds (latency spikes, corrupted payloads): the rows of the metric's
    frame its search reads (rates.rows_read), with their index, ids and values, made
    without the frame of every row."""
    rows = _rows(demo, seed)
    for metric, (over, under) in (("p2p_latency_tail", (3.0, None)), ("p2p_checksum_failures", (0, None)),
                                  ("p2p_latency_tail", (None, 1.2))):
        old, new = _ctx(demo, None), _ctx(demo, None)
        frame = METRICS[metric].fn(rows, old)
        want = frame if frame.empty else rows_read(frame, beyond_bound(
            frame["value"].to_numpy(float), frame["failed"].to_numpy(bool), over, under))
        got = rate_rows(metric, rows, new, over, under)
        assert list(got.columns) == list(want.columns), metric
        assert len(got) == len(want) and got.index.equals(want.index), metric
        for col in ("src", "dst", "tier"):
            assert got[col].astype(object).equals(want[col].astype(object)), (metric, col)
        assert np.array_equal(got["value"].to_numpy(float), want["value"].to_numpy(float), equal_nan=True), metric
        assert np.array_equal(got["failed"].to_numpy(bool), want["failed"].to_numpy(bool)), metric


def _findings(rows, topo, monkeypatch, frames: bool):
    with monkeypatch.context() as m:
        if frames:
            m.setattr(culprits, "P2P_LEVELS", {})  # the metric frames' path
            m.setattr(culprits, "P2P_RATES", {})
        found = evaluate(RULES, rows, DetectContext(topo, dict(topo.inventory.design)))
    return [dataclasses.asdict(f) for f in found]


@pytest.mark.parametrize("seed", range(8))
def test_findings_without_the_frames_are_the_frames_findings(demo, monkeypatch, seed):
    rows = _rows(demo, 100 + seed, low=0.97, failing=1 + seed % 2, odd=0.01)
    ids = demo.card_ids
    slow = rows["src"].isin(ids[5:13]).to_numpy() | (rows["dst"] == ids[20]).to_numpy()
    rows.loc[slow, ["bw_GBps", "bw_rev_GBps"]] *= 0.5  # a slow host and a card: culprits to find
    rows.loc[(rows["src"] == ids[30]).to_numpy(), "lat_us"] *= 4
    if "checksum_ok" in rows:
        rows.loc[(rows["dst"] == ids[40]).to_numpy(), "checksum_ok"] = False  # a card corrupting payloads
    want = _findings(rows, demo, monkeypatch, frames=True)
    assert _findings(rows, demo, monkeypatch, frames=False) == want


def test_mean_of_two_directions_is_the_nan_skipping_mean_to_the_bit():
    """metrics._mean_of_two, made in one column (at fleet size every temporary column is
    400 MB): each NaN as 0, the sum over the count of numbers, NaN where none; signed
    zeros, infinities and the largest floats as that definition gives them."""
    rng = np.random.default_rng(0)
    odd = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 1.0, 3.0, 2.5])
    for i in range(200):
        n = int(rng.integers(1, 200))
        a = rng.choice(odd, n) if i % 2 else rng.normal(100, 50, n)
        b = rng.choice(odd, n) if i % 3 else rng.normal(100, 50, n)
        a[rng.random(n) < 0.2], b[rng.random(n) < 0.2] = np.nan, np.nan
        x, y = pd.Series(a), pd.Series(b)
        if i % 5 == 0:
            x = x.astype("Float64")  # a masked column: NA as NaN
            x[0] = pd.NA
        with np.errstate(all="ignore"):
            nx, ny = np.isnan(a), np.isnan(b)
            if i % 5 == 0:
                nx[0] = True
            count = (~nx).astype(float) + ~ny
            count[count == 0] = np.nan
            want = (np.where(nx, 0.0, a) + np.where(ny, 0.0, b)) / count
            got = _mean_of_two(x, y)
        assert np.array_equal(np.isnan(got), np.isnan(want)), i
        assert np.array_equal(got[~np.isnan(want)].view(np.int64), want[~np.isnan(want)].view(np.int64)), i
