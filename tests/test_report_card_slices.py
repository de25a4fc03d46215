"""The Prometheus card series are grouped a slice of the cards at a time (issue 31: the
16k gate's peak memory): every slicing gives what one pass over every pair end gives,
values and row order, including cards whose natural-order keys tie (``h01`` and ``h1``)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import sncheck.report.cardstats as stats
import sncheck.report.prometheus as prom
from sncheck.rows import p2p_row
from sncheck.topology import link_id


def _rows(seed: int) -> pd.DataFrame:
    rnd = random.Random(seed)
    hosts = ["h01", "h1", "h2", "node3", "node10"]
    cards = [f"{h}/gpu{g}" for h in hosts for g in range(4)]
    rows = []
    for rnd_i in range(3):   # pairs measured in several rounds: merged to their median first
        for _ in range(60):
            a, b = rnd.sample(cards, 2)
            tier = "intra_host" if a.split("/")[0] == b.split("/")[0] else rnd.choice(["scale_up", "scale_out"])
            row = p2p_row(rnd_i, a, b, link_id(a, b), tier, 1 << 20, bw=rnd.uniform(10, 400),
                          lat=rnd.uniform(1, 20))
            row["bw_rev_GBps"] = rnd.choice([None, rnd.uniform(10, 400)])   # one direction may be missing
            row["lat_p99_us"] = rnd.uniform(2, 40)
            if rnd.random() < 0.1:
                row["status"] = "timeout"
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_card_series_the_same_in_slices(monkeypatch, seed) -> None:
    rows = _rows(seed)
    whole = prom.card_p2p(rows, {"h01": "sn0", "h1": "sn0"})
    assert len(whole) > 20 and whole["failed"].sum() > 0 and whole["bw_min"].notna().sum() > 20
    for per_pass in (1, 7, 64):
        monkeypatch.setattr(stats, "ENDS_PER_PASS", per_pass)
        pd.testing.assert_frame_equal(prom.card_p2p(rows, {"h01": "sn0", "h1": "sn0"}), whole)


def test_card_series_first_seen_order_in_slices(monkeypatch) -> None:
    """Each slice's cards are put back in the order one pass meets them (a then b ends)."""
    pair = {"a": np.array([3, 0, 2]), "b": np.array([1, 3, 0]), "bw": np.array([1.0, 2.0, 3.0]),
            "p99": np.array([1.0, 1.0, 1.0]), "failed": np.array([False, True, False])}
    monkeypatch.setattr(stats, "ENDS_PER_PASS", 2)
    out = stats._ends_by_card(pair, 4)
    assert out.index.tolist() == [3, 0, 2, 1]
    assert out["bw_min"].tolist() == [1.0, 2.0, 3.0, 1.0] and out["failed"].tolist() == [1, 1, 0, 0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_card_series_the_same_merged_in_ranges(monkeypatch, seed) -> None:
    """A tier's rows merged to pairs a range of src codes at a time (issue 31: the report
    phase's memory) give one pass's pairs, values and order: rounds merged to their median,
    the natural-order ties (``h01``, ``h1``) in the order of their first row."""
    rows = _rows(seed)
    whole = prom.card_p2p(rows, {"h01": "sn0", "h1": "sn0"})
    ok = np.array([True, True, False, True, True, True])
    tier = {"a": np.array([2, 0, 2, 1, 0, 2], dtype=np.int32), "b": np.array([3, 1, 3, 3, 1, 0], dtype=np.int32),
            "bw": np.where(ok, np.array([1.0, 2.0, np.nan, 4.0, 6.0, 5.0]) * stats.GB, np.nan),
            "p99": np.where(ok, 1e-6, np.nan), "failed": ~ok, "row": np.arange(6, dtype=np.int32)}

    def at() -> dict:   # (a tier's rows as TierRows keeps them: _tier_pairs may use them up)
        return {k: v.copy() for k, v in tier.items()}

    one = stats._tier_pairs(at(), 4)
    assert one["a"].tolist() == [2, 0, 1, 2] and one["b"].tolist() == [3, 1, 3, 0]   # first rows 0, 1, 3, 5
    assert (one["bw"] / stats.GB).tolist() == [1.0, 4.0, 4.0, 5.0] and not one["failed"].any()
    for per_pass in (1, 7, 64):
        monkeypatch.setattr(stats, "PAIRS_PER_PASS", per_pass)
        pd.testing.assert_frame_equal(prom.card_p2p(rows, {"h01": "sn0", "h1": "sn0"}), whole)
        merged = stats._tier_pairs(at(), 4)
        if per_pass < len(tier["a"]):   # in several passes: the pairs in the passes' order, each with its first row
            back = np.argsort(merged.pop("row"), kind="stable")
            merged = {k: v[back] for k, v in merged.items()}
        assert {k: v.tolist() for k, v in merged.items()} == {k: v.tolist() for k, v in one.items()}


def test_card_series_order_cards_by_their_pairs_first_rows(monkeypatch) -> None:
    """Pairs out of row order (several merge passes), with each one's first row: the cards
    in the order one pass over the pairs in row order meets them (a then b ends), in one
    slice of the cards or several (issue 31: no reorder of a tier's 33 M pairs)."""
    pair = {"a": np.array([2, 3, 0], dtype=np.int32), "b": np.array([0, 1, 3], dtype=np.int32),
            "bw": np.array([3.0, 1.0, 2.0]), "p99": np.ones(3), "failed": np.array([False, False, True]),
            "row": np.array([9, 0, 4], dtype=np.int32)}   # in row order: (3, 1), (0, 3), (2, 0)
    for per_pass in (1 << 20, 2):
        monkeypatch.setattr(stats, "ENDS_PER_PASS", per_pass)
        out = stats._ends_by_card(pair, 4)
        assert out.index.tolist() == [3, 0, 2, 1]
        assert out["bw_min"].tolist() == [1.0, 2.0, 3.0, 1.0] and out["failed"].tolist() == [1, 1, 0, 0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bucket_positions_are_each_buckets_rows_in_order(monkeypatch, seed) -> None:
    """The counting sort that finds each slice's rows once (issue 31: a mask per slice scanned
    every pair once a slice, so the card series grew with the square of a tier's pairs) gives
    each bucket's positions in their order, as a mask per bucket does, empty buckets included,
    read a chunk at a time or at once."""
    import sncheck.report.codes as codes
    rng = np.random.default_rng(seed)
    n, buckets = 50, 9
    bucket_of = stats._slice_of(n, buckets)
    card = rng.integers(0, n, size=1000).astype(np.int32)
    card[card // 7 == 3] = 0   # (a bucket or two holds nothing)
    for chunk, few in ((1 << 20, 0), (64, 0), (1, 0), (64, 12)):   # (few: a scan per bucket, not the sort)
        monkeypatch.setattr(codes, "TAKE_ROWS", chunk)
        monkeypatch.setattr(codes, "FEW_BUCKETS", few)
        at, starts = codes.bucket_positions(card, bucket_of, buckets)
        assert at.dtype == np.int32 and starts[0] == 0 and starts[-1] == len(card)
        for k in range(buckets):
            assert at[starts[k]:starts[k + 1]].tolist() == np.flatnonzero(bucket_of[card] == k).tolist(), (chunk, k)
    # the slices are np.linspace's ranges of the codes, as the masks took them (some empty where n < slices)
    for n_, s_ in ((50, 9), (4, 8), (131072, 66)):
        bounds = np.linspace(0, n_, s_ + 1).astype(np.int64)
        want = np.concatenate([np.full(hi - lo, s) for s, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))])
        assert stats._slice_of(n_, s_).tolist() == want.tolist()


def test_repeated_marks_every_key_seen_twice() -> None:
    """merge_repeated's mask (pandas' hash table now, a sort and a binary search before):
    every entry whose key occurs more than once, each of them, and nothing else."""
    import sncheck.report.codes as codes
    rng = np.random.default_rng(7)
    for size in (0, 1, 2, 1000):
        key = rng.integers(-50, 400, size=size) * (1 << 33)   # (wide keys, negative ones)
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        assert codes.repeated(key).tolist() == (counts[inverse.ravel()] > 1).tolist()


@pytest.mark.parametrize("seed", range(8))
def test_each_cards_ends_as_one_grouping_of_every_end_gives(monkeypatch, seed) -> None:
    """The min, max and count per card in one pass into an entry per card, the medians per
    slice (issue 31): what pandas' grouped min, median, max and sum over every end at once
    give (a missing value left out, a card whose values are all missing NaN), cards in
    order of first appearance (a's ends, then b's, by the pairs' first rows where given)."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 60)), int(rng.integers(1, 400))
    a = rng.integers(0, n, m).astype(np.int32)
    b = ((a + rng.integers(1, n, m)) % n).astype(np.int32) if n > 1 else a
    bw = rng.choice([np.nan, 1.0, 2.5, 7.0, 1e11], m) if seed % 2 else rng.random(m) * 1e11
    p99 = np.where(rng.random(m) < 0.2, np.nan, rng.random(m) * 1e-5)
    failed = rng.random(m) < 0.1
    pair = {"a": a, "b": b, "bw": bw, "p99": p99, "failed": failed}
    if seed % 3 == 0:
        pair["row"] = rng.permutation(m).astype(np.int32) * 2
    ends = pd.DataFrame({"bw": np.concatenate([bw, bw]), "p99": np.concatenate([p99, p99]),
                         "failed": np.concatenate([failed, failed]).astype(np.int64)})
    first = np.concatenate([pair.get("row", np.arange(m)), pair.get("row", np.arange(m)) + 10 * m + 1])
    e = ends.groupby(np.concatenate([a, b]).astype(np.int64), sort=True)
    want = pd.DataFrame({"bw_min": e["bw"].min(), "bw_median": e["bw"].median(), "lat_p99": e["p99"].median(),
                         "lat_p99_max": e["p99"].max(), "failed": e["failed"].sum()})
    seen = pd.Series(first).groupby(np.concatenate([a, b]).astype(np.int64)).min()
    want = want.loc[seen.sort_values(kind="stable").index]
    for per_pass in (1, 3, 64, 1 << 20):
        monkeypatch.setattr(stats, "ENDS_PER_PASS", per_pass)
        got = stats._ends_by_card({k: v.copy() for k, v in pair.items()}, n)
        pd.testing.assert_frame_equal(got, want, check_index_type=False)


def test_card_medians_are_pandas_grouped_median_over_every_end(monkeypatch) -> None:
    """The card series' medians (_medians, the pairs in no order of either end): pandas'
    grouped median over both ends of every pair to the bit, NaN (a failed pair) left out,
    infinities and ties kept, a card with no measured end NaN, in slices of one end or of
    every end (round 15 held health.endstats' medians to it, then kept these: slower at 131k)."""
    rng = np.random.default_rng(4)
    for trial in range(40):
        n, pairs = int(rng.integers(2, 30)), int(rng.integers(1, 300))
        a, b = rng.integers(0, n, pairs).astype(np.int32), rng.integers(0, n, pairs).astype(np.int32)
        bw = rng.choice([rng.normal(100, 5, pairs), rng.integers(1, 5, pairs) * 25.0])
        bw[rng.random(pairs) < 0.2] = np.nan
        bw[rng.random(pairs) < 0.02] = np.inf
        pair = {"a": a, "b": b, "bw": bw, "p99": rng.random(pairs)}
        ends = pd.Series(np.concatenate([bw, bw])).groupby(np.concatenate([a, b])).median()
        want = np.full(n, np.nan)
        want[ends.index.to_numpy()] = ends.to_numpy()
        for per_pass in (1, 1 << 20):
            monkeypatch.setattr(stats, "ENDS_PER_PASS", per_pass)
            got, _ = stats._medians(pair, n)
            assert got.tobytes() == want.tobytes(), (trial, per_pass)
