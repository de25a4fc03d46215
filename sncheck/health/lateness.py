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

TOLERANCE = 0.01  # us: the fit stops once no card's lateness moves by more
ROUNDS = 50  # at most (a few suffice: a fleet's groups join every card within three steps)


def lateness(group: pd.Series, card: pd.Series, skew: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Each card's launch lateness (us, up to a constant) and its rows' spread around it (the
    MAD of its skews once each group's first is added back: one collective's noise), by card.
    Read over integer codes (millions of rank rows at fleet size: no string column made)."""
    g_row, groups = pd.factorize(group, sort=False)
    c_row, cards = pd.factorize(card, sort=False)
    values = np.asarray(skew, dtype=float)
    if (g_row < 0).any() or (c_row < 0).any():  # a row naming no group or no card says nothing of one
        keep = (g_row >= 0) & (c_row >= 0)
        return lateness(pd.Series(np.asarray(group)[keep]), pd.Series(np.asarray(card)[keep]), pd.Series(values[keep]))
    cell_row = g_row.astype(np.int64) * max(len(cards), 1) + c_row
    cell = pd.Series(values).groupby(cell_row).median()  # each card's median skew in each group
    g, c = (cell.index.to_numpy() // max(len(cards), 1)), (cell.index.to_numpy() % max(len(cards), 1))
    m = cell.to_numpy(float)
    first = np.zeros(len(groups))
    late = pd.Series(m).groupby(c).median().reindex(range(len(cards))).to_numpy()
    for _ in range(ROUNDS):
        first = pd.Series(late[c] - m).groupby(g).median().reindex(range(len(groups)), fill_value=0.0).to_numpy()
        again = pd.Series(m + first[g]).groupby(c).median().reindex(range(len(cards))).to_numpy()
        moved = float(np.nanmax(np.abs(again - late))) if len(again) else 0.0
        late = again
        if moved <= TOLERANCE:
            break
    if len(first):  # anchored where the groups' typical first rank starts: a card's median skew where all are alike
        late, first = late - np.median(first), first - np.median(first)
    # the rows' spread: the MAD of each card's skews with their groups' first added back
    adjusted = pd.Series(values + first[g_row])
    spread = (adjusted - adjusted.groupby(c_row).transform("median")).abs().groupby(c_row).median()
    index = pd.Index(np.asarray(cards), name="card")
    return pd.Series(late, index=index), pd.Series(spread.reindex(range(len(cards))).to_numpy(), index=index)
