"""A card's launch lateness is read with its groups' first ranks (sncheck/health/lateness.py): a skew is
measured from its group's first rank, and in a group of two that is the other card."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sncheck.health.lateness import lateness


def _hgx_pair(rng: np.random.Generator) -> pd.DataFrame:
    """hgx-pair's stress groups (two 8-card hosts, a two-rank cross group a rail): dgx-a's gpu1-7 start
    21.6 us late, every card of dgx-b 5.7 us (the cost model's (1/s - 1) 50 us at 0.698 and 0.898), 20
    collectives a group, each rank's skew from the group's first plus |N(0, 2 us)| noise."""
    late = {f"dgx-a/gpu{k}": 21.6 if k else 0.0 for k in range(8)} | {f"dgx-b/gpu{k}": 5.7 for k in range(8)}
    groups = {f"host:{h}": [f"{h}/gpu{k}" for k in range(8)] for h in ("dgx-a", "dgx-b")}
    groups |= {f"cross:gpu{k}": [f"dgx-a/gpu{k}", f"dgx-b/gpu{k}"] for k in range(8)}
    rows = []
    for g, cards in groups.items():
        for _ in range(20):
            start = np.array([late[c] for c in cards]) + np.abs(rng.normal(0, 2, len(cards)))
            rows += [(g, c, s) for c, s in zip(cards, start - start.min())]
    return pd.DataFrame(rows, columns=["group", "card", "skew_us"])


def test_a_faint_hosts_cards_first_in_every_two_rank_group_read_their_own_lateness() -> None:
    ranks = _hgx_pair(np.random.default_rng(1))
    late, spread = lateness(ranks["group"], ranks["card"], ranks["skew_us"])
    a0, b = late["dgx-a/gpu0"], late[[f"dgx-b/gpu{k}" for k in range(8)]]
    slow = late[[f"dgx-a/gpu{k}" for k in range(1, 8)]]
    # as the cost model set them, up to a constant: gpu0 on time, its mates 21.6 us after it, dgx-b 5.7
    assert np.allclose(slow - a0, 21.6, atol=1.5) and np.allclose(b - a0, 5.7, atol=1.5), late
    assert b.max() - b.min() < 1.5 and (spread > 0).all(), (late, spread)
    # each card's median skew read dgx-b's cards at 0 and 1 us alike (first in each cross group), gpu0 at 0:
    # the faint host looked on time, the healthy card beside it no earlier than it
    raw = ranks.groupby("card")["skew_us"].median()
    assert raw["dgx-a/gpu0"] >= raw[[f"dgx-b/gpu{k}" for k in range(1, 8)]].min(), raw


def test_where_every_group_starts_on_time_a_card_reads_its_median_skew() -> None:
    """One group (or groups of many healthy cards): no first to add back, the values as they were."""
    rng = np.random.default_rng(2)
    cards = [f"h{i}/gpu0" for i in range(16)]
    rows = [("rail:sn:gpu0", c, abs(rng.normal(0, 2)) + (40.0 if c == "h3/gpu0" else 0.0))
            for _ in range(30) for c in cards]
    ranks = pd.DataFrame(rows, columns=["group", "card", "skew_us"])
    late, _ = lateness(ranks["group"], ranks["card"], ranks["skew_us"])
    raw = ranks.groupby("card")["skew_us"].median()
    assert np.allclose(late.reindex(raw.index), raw, atol=1e-9), (late, raw)
