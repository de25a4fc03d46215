"""A suspect within the noise of its bar is re-measured by its retest until it is clear of
the bar, on one side or the other (issue 29: a 0.922 card with 7 partners, median 0.940
over the 0.93 bar, was a miss no single measurement could avoid). The one home of that
policy; detection names them (:meth:`sncheck.health.levels.Level.near`, evidence
``near_bar``):

* a card whose median over its peers is within NEAR_Z standard errors of its card bar,
  inside it (named only as near) or beyond it (named, but not clear of the noise);
* a link (one pair) within NEAR_Z of the tier's pair noise of its pair bar, either side.

The retest measures the suspect's pairs with known-good controls of the symptom's tier,
:data:`NEAR_REPEATS` times a batch; after each batch its samples (each of its pair
measurements over the bar's reference: the controls' level in the same window, or the
design for a bar against design; latency inverted, so below is worse) are judged against
the bar the rule names, the rule's threshold unchanged:

* median + DECIDE_Z standard errors below the bar: beyond it, confirmed (isolate);
* median - DECIDE_Z standard errors at or above the bar: clear of it, released;
* else another batch, at most :data:`NEAR_BATCHES`. Still within the noise then: the retest
  cannot say, and the suspect stays quarantined, the gate failing on it, never a release.

A bar of the same metric the retest finds the suspect beyond (a link near its design bar
found below its peers' bar by one look) is judged the same way on the same samples
(:func:`siblings`), and decides as the near bar does: one look is no verdict.

With no retest allowed (the playbook's ``confirm: false``) such a suspect is not judged
(:func:`not_retested`): inconclusive, never released as healthy, never isolated on noise.
Only its near part: a clearly measured fault folded into it (a symptom of another rule
clear of its own bar, on the suspect itself, at least as severe) decides, and the finding
gates as measured (exit 1, not 4).
A near suspect is never hard evidence nor a repeat offender's trip: only a retest beyond
its bar isolates it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from sncheck.health.culprits import NEAR_RETEST, bar_level, side_of
from sncheck.health.explain import MAD_SD, MEDIAN_SE, median
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import Rule
from sncheck.model import LINK_SEP, About, Basis, Finding, Severity, split_link

NEAR_REPEATS = 8  # repeats of the suspect's pairs with its controls, a batch
NEAR_BATCHES = 6  # batches at most: ~240 samples of a card with 5 controls (a median to ~0.1%)
DECIDE_Z = 3.0  # a decision at every batch (six looks at most): 3 standard errors, ~1% wrong in all
NOT_RETESTED = ("not judged: the playbook allows no retest (confirm: false) to re-measure it, so it is neither "
                "isolated nor released: it stays quarantined and the run is inconclusive")
NEAR_PART_NOT_RETESTED = ("its near part not judged (the playbook allows no retest, confirm: false, to re-measure "
                          "it); {rule} folded into it is clear of its bar and decides: it stays quarantined and gates")


def is_near(f: Finding) -> bool:
    """A suspect named within the noise of its bar (either side): re-measured, never
    isolated without a retest that finds it beyond the bar."""
    return bool(f.evidence.get("near_bar"))


def clear_fault(f: Finding) -> Finding | None:
    """A symptom folded into a near suspect that is a fault measured clear of its own bar
    (hardware, measured, not near) on the suspect itself and at least as severe as it: it
    decides the finding, near or not, which then gates at the lead's severity. A weaker fold
    would gate as the lead's (a clear warning passing a critical near lead under ``gate:
    critical``), another entity's would decide for the suspect (a host's step time folded
    into a card on it): neither decides, and the finding stays not judged."""
    return next((g for g in f.folded if g.entity == f.entity
                 and g.severity.rank >= max(f.severity.rank, Severity.WARNING.rank)
                 and g.about == About.HARDWARE and g.basis == Basis.MEASURED and not is_near(g)), None)


def not_retested(f: Finding) -> None:
    """A near suspect the playbook allows no retest: not judged, inconclusive (exit 4 where
    only such findings gate), its message saying so instead of promising a retest. With a
    clearly measured fault folded into it only the near part is not judged: the fault
    decides, the finding stays measured and gates (exit 1)."""
    if (g := clear_fault(f)) is not None:
        f.evidence["near_not_judged"] = True
        f.message = f.message.removesuffix(NEAR_RETEST) + NEAR_PART_NOT_RETESTED.format(rule=g.rule)
        return
    f.evidence["inconclusive"] = NOT_RETESTED
    f.basis = Basis.NOT_JUDGED
    f.message = f.message.removesuffix(NEAR_RETEST) + NOT_RETESTED


def near_verdict(rule: Rule, p2p: pd.DataFrame, entity: str, tier: object,
                 ctx: DetectContext) -> tuple[bool | None, str]:
    """A retest's p2p rows so far on the symptom's ``tier``, through the rule's metric."""
    if p2p.empty:
        return None, "none of its pairs re-measured"
    tiers = ctx.topo.tiers(p2p["src"].astype(str), p2p["dst"].astype(str)).to_numpy()
    return judge_samples(rule, ctx.metric(rule.metric, p2p[tiers == tier]), entity)


def siblings(found: list[Finding], entity: str, near: list[tuple[Rule, object]], skip: set[str],
             by_name: Mapping[str, Rule], beside: dict[str, object], p2p: pd.DataFrame,
             ctx: DetectContext) -> dict[str, tuple[bool | None, str]]:
    """A near suspect's sibling bars in its retest: the rules of a near symptom's metric
    (``near``: its rules and tiers) other than its symptoms' (``skip``) that the retest found
    the suspect itself beyond at any batch so far (``found`` now, ``beside`` before: rule ->
    tier, updated), each judged like the near bar on all the suspect's samples (``p2p``)
    against the noise, whatever evidence one look carried (``near_bar`` needs a precise
    level, enough pairs, ...) and whether the last look fired: True beyond it (confirms),
    False clear inside it (no new fault), None within its noise (stays quarantined)."""
    metrics = {rule.metric for rule, _ in near}
    for g in found:
        if g.entity == entity and g.rule not in skip and g.rule in by_name and by_name[g.rule].metric in metrics:
            beside.setdefault(g.rule, g.evidence.get("tier") or next((t for _, t in near), None))
    return {rule: near_verdict(by_name[rule], p2p, entity, tier, ctx) for rule, tier in beside.items()}


def judge_samples(rule: Rule, cells: pd.DataFrame, entity: str) -> tuple[bool | None, str]:
    """A card's or a link's samples in a retest's metric frame of one tier (``cells``: src,
    dst, value, failed, and design where the rule's bar is against design) against the
    rule's bar: (True: beyond it, False: clear inside it, None: still within the noise or
    too few samples; what was measured)."""
    side, bar = side_of(rule), bar_level(rule)
    ok = cells[~cells["failed"].astype(bool)] if not cells.empty else cells
    if ok.empty:
        return None, "none of its pairs re-measured"
    src, dst = ok["src"].astype(str).to_numpy(), ok["dst"].astype(str).to_numpy()
    values = ok["value"].to_numpy(float)
    if LINK_SEP in entity:  # a link: its one pair; every other pair is a control
        a, b = split_link(entity)
        mine = ((src == a) & (dst == b)) | ((src == b) & (dst == a))
    else:
        mine = (src == entity) | (dst == entity)
    design = rule.op == "ratio_to_design" and "design" in ok
    level = median(ok["design"].to_numpy(float)[mine]) if design else median(values[~mine])
    what = "design" if design else "its controls' level"
    if not mine.sum() or not math.isfinite(level) or level <= 0 or (not design and not (~mine).sum()):
        return None, "no control pairs beside its own to compare with"
    with np.errstate(divide="ignore", invalid="ignore"):  # a latency of 0: inf, left out below
        r = values[mine] / level if side == "below" else level / values[mine]
        c = values[~mine] / level if side == "below" else level / values[~mine]
    r, c = r[np.isfinite(r)], c[np.isfinite(c)]
    if not len(r) or not design and not len(c):  # a latency of 0 is no ratio: no measurement says where it is
        return None, (f"none of its {int(mine.sum())} samples is a finite ratio to {what}" if not len(r)
                      else "none of its controls' samples is a finite ratio to their level")
    m = median(r)
    # the noise of a sample, pooled over the suspect's and the controls' (each about its own
    # median); the suspect's median and the controls' level each carry their own share of it
    # (a design carries none)
    sd = MAD_SD * median(np.abs(np.concatenate([r - m, c - median(c)])))
    se = MEDIAN_SE * sd * math.sqrt(1 / len(r) + (0.0 if design else 1 / len(c)))
    said = f"median {m:.3f} of {what} over {len(r)} samples (standard error {se:.4f}), bar {bar:.3f}"
    if m + DECIDE_Z * se < bar:
        return True, f"beyond the bar, clear of the noise: {said}"
    if m - DECIDE_Z * se >= bar:
        return False, f"inside the bar, clear of the noise: {said}"
    return None, f"still within the noise of the bar: {said}"
