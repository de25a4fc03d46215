"""A card named "near" its card bar (inside it by less than its median's noise:
:meth:`sncheck.health.levels.Level.near`) is re-measured by its retest until its median is
clear of the bar, on one side or the other (issue 29: a 0.922 card with 7 partners,
median 0.940 over the 0.93 bar, was a miss no single measurement could avoid).

The retest measures the card's pairs with known-good controls of the symptom's tier,
:data:`NEAR_REPEATS` times a batch; after each batch the card's samples (each pair
measurement over the controls' level in the same window; latency inverted, so below is
worse) are judged against the bar the rule names, the rule's threshold unchanged:

* median + DECIDE_Z standard errors below the bar: beyond it, confirmed (isolate);
* median - DECIDE_Z standard errors at or above the bar: clear of it, released;
* else another batch, at most :data:`NEAR_BATCHES`. Still within the noise then: the retest
  cannot say, and the card stays quarantined, the gate failing on it, never a release.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sncheck.health.culprits import bar_level, bound_of
from sncheck.health.explain import MAD_SD, MEDIAN_SE, median
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import Rule

NEAR_REPEATS = 8  # repeats of the card's pairs with its controls, a batch
NEAR_BATCHES = 6  # batches at most: ~240 samples of a card with 5 controls (a median to ~0.1%)
DECIDE_Z = 3.0  # a decision at every batch (six looks at most): 3 standard errors, ~1% wrong in all


def near_verdict(rule: Rule, p2p: pd.DataFrame, card: str, tier: object, ctx: DetectContext) -> tuple[bool | None, str]:
    """A retest's p2p rows so far on the symptom's ``tier``, through the rule's metric."""
    if p2p.empty:
        return None, "none of its pairs re-measured"
    tiers = ctx.topo.tiers(p2p["src"].astype(str), p2p["dst"].astype(str)).to_numpy()
    return judge_samples(rule, ctx.metric(rule.metric, p2p[tiers == tier]), card)


def judge_samples(rule: Rule, cells: pd.DataFrame, card: str) -> tuple[bool | None, str]:
    """The card's samples in a retest's metric frame of one tier (``cells``: src, dst,
    value, failed) against the rule's bar: (True: beyond it, False: clear inside it,
    None: still within the noise or too few samples; what was measured)."""
    side, bar = bound_of(rule)[0], bar_level(rule)
    ok = cells[~cells["failed"].astype(bool)] if not cells.empty else cells
    if ok.empty:
        return None, "none of its pairs re-measured"
    src, dst = ok["src"].astype(str).to_numpy(), ok["dst"].astype(str).to_numpy()
    values = ok["value"].to_numpy(float)
    mine = (src == card) | (dst == card)
    level = median(values[~mine])
    if not mine.sum() or not math.isfinite(level) or level <= 0:
        return None, "no control pairs beside its own to compare with"
    with np.errstate(divide="ignore", invalid="ignore"):  # a latency of 0: inf, left out below
        r = values[mine] / level if side == "below" else level / values[mine]
        c = values[~mine] / level if side == "below" else level / values[~mine]
    r, c = r[np.isfinite(r)], c[np.isfinite(c)]
    if not len(r) or not len(c):  # a latency of 0 is no ratio: no measurement says where the card is
        return None, (f"none of its {int(mine.sum())} samples is a finite ratio to its controls' level" if not len(r)
                      else "none of its controls' samples is a finite ratio to their level")
    m = median(r)
    # the noise of a sample, pooled over the card's and the controls' (each about its own
    # median); the card's median and the controls' level each carry their own share of it
    sd = MAD_SD * median(np.abs(np.concatenate([r - m, c - median(c)])))
    se = MEDIAN_SE * sd * math.sqrt(1 / len(r) + 1 / len(c))
    said = f"median {m:.3f} of its controls' level over {len(r)} samples (standard error {se:.4f}), bar {bar:.3f}"
    if m + DECIDE_Z * se < bar:
        return True, f"beyond the bar, clear of the noise: {said}"
    if m - DECIDE_Z * se >= bar:
        return False, f"inside the bar, clear of the noise: {said}"
    return None, f"still within the noise of the bar: {said}"
