"""A card's launch lateness, read from the skews its groups measured it at.

A rank's skew is how long after its group's first rank it started a collective (the mock's
cost model: ``|N(0, 2 us)|`` a rank plus ``(1/s - 1) 50 us`` on a slow card, README "Mock backend
cost model"). So a skew is a card's lateness less the lateness of its group's earliest card:

    skew(g, c) = late(c) - first(g) + noise

A card's median skew over its rows reads ``late(c)`` only where ``first(g)`` is about the same
for every group it is in (groups of many healthy cards: their first starts on time). In a group
of two the first is the other card: every card of a faint host (0.898: 5.7 us late) was first,
at 0, in each two-rank cross group beside a slower mate's host (the stress layer runs a cross
group a rail: eight of them on hgx-pair), and at 1 us in its own host group: its median 0,
every card of the host alike, their spread 0, so the seven late cards of the other host were
measured against nothing (tests/test_unseen_hgx_pair.py seven-slow-cards).

So both are read at once, the additive fit of the equation above (Tukey's median polish over the
table of each card's median skew in each group): ``late(c)`` the median over its groups of
``skew + first(g)``, ``first(g)`` the median over its cards of ``late(c) - skew``, in turn until
nothing moves by more than ``TOLERANCE``. Where every group's first starts on time (one group, or
groups of many healthy cards) ``first`` stays about 0 and a card reads its median skew as before.
Lateness is known up to a constant, set where the typical group's first rank starts (so that in a
fleet of large groups a card reads about its median skew, as before): the rules read it against the
other cards (a peer outlier), never as an absolute time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sncheck.health.rankrows import RankRows, of_columns

TOLERANCE = 0.01  # us: the fit stops once no card's lateness moves by more
ROUNDS = 50  # at most (a few suffice: a fleet's groups join every card within three steps)


def lateness(group: pd.Series, card: pd.Series, skew: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Each card's launch lateness (us, up to a constant) and its rows' spread around it (the
    MAD of its skews once each group's first is added back: one collective's noise), by card."""
    ranks = of_columns(group, card, skew)
    return fit(ranks, np.ones(len(ranks.group), bool))


def fit(ranks: RankRows, cells: np.ndarray) -> tuple[pd.Series, pd.Series]:
    """:func:`lateness` over the rank rows of the cells ``cells`` (a mask of ``ranks``' cells),
    cards in the order the collectives' rows name them: each card's median skew in each group
    (a cell's), the fit over those, the spread a run of cards at a time (never a grouping of
    every row at once: sncheck.health.rankrows)."""
    at = np.flatnonzero(cells)
    m = ranks.cell_medians(cells)[at]  # each card's median skew in each group
    group_codes, g = np.unique(ranks.group[at], return_inverse=True)
    card_codes, c = np.unique(ranks.card[at], return_inverse=True)
    n_groups, n_cards = len(group_codes), len(card_codes)
    first = np.zeros(n_groups)
    late = pd.Series(m).groupby(c).median().reindex(range(n_cards)).to_numpy()
    for _ in range(ROUNDS):
        first = pd.Series(late[c] - m).groupby(g).median().reindex(range(n_groups), fill_value=0.0).to_numpy()
        again = pd.Series(m + first[g]).groupby(c).median().reindex(range(n_cards)).to_numpy()
        moved = float(np.nanmax(np.abs(again - late))) if len(again) else 0.0
        late = again
        if moved <= TOLERANCE:
            break
    if len(first):  # anchored where the groups' typical first rank starts: a card's median skew where all are alike
        late, first = late - np.median(first), first - np.median(first)
    # the rows' spread: the MAD of each card's skews with their groups' first added back
    added = np.zeros(len(ranks.group))
    added[at] = first[g]
    spread_of, _, mad, _ = ranks.card_medians(cells, added, spread=True)
    spread = pd.Series(mad, index=spread_of).reindex(card_codes).to_numpy()
    # in the order the rows name the cards (a card only the pairs' rows name: after them)
    named = pd.Index(card_codes)
    order = ranks.order[named.get_indexer(ranks.order) >= 0]
    order = np.concatenate([order, card_codes[~np.isin(card_codes, order)]])
    place = named.get_indexer(order)
    index = pd.Index(ranks.cards[order] if len(order) else np.zeros(0, object), name="card")
    return pd.Series(late[place], index=index), pd.Series(spread[place], index=index)
