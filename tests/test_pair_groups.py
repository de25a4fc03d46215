"""The rows' grouping into pairs (sncheck/health/pairgroups.py, issue 31): the p2p metrics
of one evaluation are row selections of one frame of pairs, grouped once and restricted to
each metric's rows. Every summary the same to the bit as a frame grouped on its own; a
frame that is not a selection of the grouped one (the same categories, other rows) is
grouped on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sncheck.health import pairgroups
from sncheck.health.pairview import summarise
from test_explain import cells_of, fleet  # noqa: F401  (the fixture)


def _frame(topo) -> pd.DataFrame:
    """Every pair twice (a retest's repeats), out of order, a dead link, a card the
    topology lacks; ids and tiers as categoricals, as the p2p metrics' frame has them."""
    ids = topo.card_ids
    one = cells_of(topo, speed={ids[3]: 0.85}, link={f"{ids[60]}<->{ids[61]}": 0.0}, noise=0.02, seed=1)
    two = cells_of(topo, speed={ids[3]: 0.85}, link={f"{ids[60]}<->{ids[61]}": 0.0}, noise=0.02, seed=2)
    stray = one.iloc[:1].assign(src="nosuch/gpu0")
    cells = pd.concat([one, two, stray], ignore_index=True)
    cells = cells.iloc[np.random.default_rng(0).permutation(len(cells))].reset_index(drop=True)
    for col in ("src", "dst", "tier"):
        cells[col] = cells[col].astype("category")
    return cells[["src", "dst", "tier", "value", "failed", "design"]]


def _same(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for t in want:
        g, w = got[t], want[t]
        for name in ("a", "b", "ratio", "failed", "values", "peers", "_exception"):
            assert np.array_equal(getattr(g, name), getattr(w, name), equal_nan=name in ("ratio", "values")), (t, name)
        assert (g.level, g.design, g.n_cards) == (w.level, w.design, w.n_cards) or np.isnan(w.level), t


def test_selections_of_one_frame_are_grouped_once_and_summarised_as_on_their_own(fleet, monkeypatch):  # noqa: F811
    cells = _frame(fleet)
    rng = np.random.default_rng(5)
    pair = cells["src"].astype(str) + cells["dst"].astype(str)
    selections = [cells, cells[~cells["failed"]], cells[rng.random(len(cells)) < 0.3],
                  cells[~pair.isin(pair.unique()[::3])],  # every row of a third of the pairs gone
                  cells.assign(value=cells["value"] * 2)]
    sorts = []
    own = pairgroups.unique_inverse
    monkeypatch.setattr(pairgroups, "unique_inverse", lambda key: sorts.append(len(key)) or own(key))
    cache: dict = {}
    got = [summarise(s, fleet, cache=cache) for s in selections]
    assert len(sorts) == len(set(cells["tier"].astype(str)))  # the first frame's tiers, once each
    sorts.clear()
    for s, g in zip(selections, got):
        _same(g, summarise(s, fleet))
        _same(summarise(s, fleet, invert=True, cache=cache), summarise(s, fleet, invert=True))
        _same(summarise(s, fleet, count_above=60.0, cache=cache), summarise(s, fleet, count_above=60.0))


def test_a_frame_not_a_selection_of_the_grouped_one_is_grouped_on_its_own(fleet):  # noqa: F811
    cells = _frame(fleet)
    cache: dict = {}
    summarise(cells, fleet, cache=cache)
    # the same categories, the rows in another order under the same labels; then other labels
    shuffled = cells.iloc[::-1].reset_index(drop=True)
    tail = cells.iloc[len(cells) // 2:].reset_index(drop=True)
    for other in (shuffled, tail, cells.iloc[::2].set_axis(np.arange(0, len(cells), 2)[::-1][:len(cells[::2])])):
        _same(summarise(other, fleet, cache=cache), summarise(other, fleet))


def test_rows_whose_cards_are_all_known_have_their_ends_looked_up_once(fleet, monkeypatch):  # noqa: F811
    """Where every category of both ends is a card of the table (a fleet's rows), each row's
    ends are looked up once (not once to keep the known rows, then again for the pair keys);
    the pairs are those of the same rows beside a card the table lacks, which is left out."""
    ids = fleet.card_ids[:12] + fleet.card_ids[-12:]  # (a few pairs, two supernodes' tiers)
    one = cells_of(fleet, pairs=[(x, y) for i, x in enumerate(ids) for y in ids[i + 1:]], noise=0.02, seed=1)
    cells = pd.concat([one, one.iloc[:1].assign(src="nosuch/gpu0"), one], ignore_index=True)
    for col in ("src", "dst", "tier"):
        cells[col] = cells[col].astype("category")
    known = cells.drop(index=len(one)).reset_index(drop=True)
    known["src"] = known["src"].cat.remove_unused_categories()
    asked: list[int] = []
    of = pairgroups.Positions.of
    monkeypatch.setattr(pairgroups.Positions, "of", lambda self, rows: asked.append(len(rows)) or of(self, rows))
    got = summarise(known, fleet)
    assert sum(asked) == 2 * len(known)  # src and dst, each row once
    asked.clear()
    _same(got, summarise(cells, fleet))  # the stray card's row left out, as before
    assert sum(asked) == 4 * len(cells) - 2  # every row to find the known ones, then theirs again
