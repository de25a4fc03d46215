"""A suspect within the noise of its bar is re-measured by its retest until its samples
decide, on one side of the bar or the other, or reach a bound on samples (issue 29: a 0.922
card with 7 partners, median 0.940 over the 0.93 bar, was a miss no single measurement could
avoid). The one home of that policy; detection names them
(:meth:`sncheck.health.levels.Level.near`, evidence ``near_bar``):

* a card whose median over its peers is within NEAR_Z standard errors of its card bar,
  inside it (named only as near) or beyond it (named, but not clear of the noise);
* a link (one pair) within NEAR_Z of the tier's pair noise of its pair bar, either side.

The retest measures the suspect's pairs with known-good controls of the symptom's tier in
growing batches (:func:`batch_repeats`: 8, 16, 24, ... repeats); after each batch its
samples (each of its pair measurements over the bar's reference: the controls' level in the
same window, or the design for a bar against design; latency inverted, so below is worse)
are judged against the bar the rule names, the rule's threshold unchanged, by a sequential
test: z = (median - bar) / its standard error at n samples against :func:`boundary`,
``BOUND_Z * sqrt(NEAR_SAMPLES / n)`` (O'Brien-Fleming's shape: a Brownian motion's crossing
of a constant in its own scale, 2 P(Z > BOUND_Z) a side by the reflection principle, so a
suspect exactly at its bar is decided either way with at most :data:`NEAR_ALPHA` over every
look, however many and wherever they fall):

* beyond the bar by the boundary: confirmed (isolate);
* inside it by the boundary: clear of it, released;
* else another batch, until the suspect's samples reach :data:`NEAR_SAMPLES`. Still within
  the noise then, the suspect is **not judged** (:func:`left_within_noise`): inconclusive (exit 4
  where only such findings gate), its evidence the samples, median, standard error and bar;
  never released, never isolated, never a quarantine gating as if measured.

The bound, from the mock's published noise (README "Mock backend cost model": 2% a sample
each way): a sample (the mean of both ways) carries 1.41%, a card's ratio to its controls'
level (twice its samples among 5 controls) a standard error of 1.2533 x 1.41% x sqrt(1.5 / n)
= 2.16% / sqrt(n). A card 1% of the bar from it is decided by n = ((BOUND_Z + 2.33) x 2.16 /
1)^2 = 123 samples with 99% power; one 0.3% from it (0.927 at a 0.93 bar, the sweep's 5084
seed 5) by ((BOUND_Z + 1.64) x 2.16 / 0.3)^2 = 1027 with 95%: NEAR_SAMPLES, 205 repeats of
its 5 pairs (7 looks; a link, one sample a repeat: 16). A card nearer still (0.929: 5182 seed 5 needs
~9,000) is decided only as the samples fall; a card at its bar, never (not judged).

A bar of the same metric the retest finds the suspect beyond (a link near its design bar
found below its peers' bar by one look) is judged the same way on the same samples in the
same loop (:func:`siblings`), and decides as the near bar does: one look is no verdict. Only a
level bar (against design or the peers): a bar against a stored reference (baseline,
history) is no level of the controls, and its finding stays the retest's new fault.

What the batches cost is bounded on the backend too (:class:`NearClock`): each measurement of
the suspect's pairs is timed, and a later batch runs only when the cost a repeat measured so
far says it ends within the backend's budget (``Backend.near_budget``: 120 s on the local
backend, whose gloo repeats cost seconds on a shared CPU; 600 s on real hosts; none on the
mock, whose rounds are simulated). A suspect the budget leaves within the noise on a busy
machine is inconclusive (exit 4 where only such findings gate), its evidence saying the
budget, the cost a repeat and the load; on a quiet machine (or a backend reporting no load) it
is not judged (:func:`left_within_noise`: ``evidence.not_decided`` with the budget and its samples),
stays quarantined and the gate fails (exit 1), as any speed the retest could not judge there.
Never isolated nor released on the samples it had.

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
import time
from statistics import NormalDist
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from sncheck.health.culprits import NEAR_RETEST, bar_level, kind_of, side_of
from sncheck.health.explain import LEVEL, MAD_SD, MEDIAN_SE, median
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import Rule
from sncheck.model import LINK_SEP, About, Basis, Finding, Severity, split_link

NEAR_REPEATS = 8  # repeats of the suspect's pairs with its controls, the first batch (each next one 8 more)
NEAR_ALPHA = 0.01  # the chance, over every look, that a suspect at its bar is decided either way
BOUND_Z = NormalDist().inv_cdf(1 - NEAR_ALPHA / 4)  # 2.807: the boundary at the bound, 2 P(Z > it) a side
NEAR_SAMPLES = 1024  # the suspect's samples at most: a card 0.3% from its bar decided (the docstring)
WITHIN = "still within the noise of the bar"  # a look that needs more samples
BESIDE = "beside its near bar, on the suspect's samples: "  # a sibling bar's note in the retest's record
UNDECIDED = "not judged: still within the noise of the bar at the bound of {n} samples"
NO_CONTROL_PAIRS = "no control pairs beside its own to compare with"  # a near suspect's retest with no level
NOT_RETESTED = ("not judged: the playbook allows no retest (confirm: false) to re-measure it, so it is neither "
                "isolated nor released: it stays quarantined and the run is inconclusive")
NEAR_UNDECIDED = ("not judged: its retest reached the bound on samples still within the noise of the bar, so it is "
                  "neither isolated nor released: it stays quarantined and the run is inconclusive")
NEAR_BUDGET_SPENT = ("not judged: its retest's near-bar budget ran out with it still within the noise of the bar on a "
                     "machine that was not busy, so it is neither isolated nor released: it stays quarantined and "
                     "the gate fails")
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


def look(near: list[tuple[Rule, object]], found: list[Finding], entity: str, skip: set[str],
         by_name: Mapping[str, Rule], beside: dict[str, object], p2p: pd.DataFrame,
         ctx: DetectContext) -> dict[str, tuple[bool | None, str]]:
    """One look at a near suspect's samples so far (``p2p``): each near bar (``near``: its
    rules and tiers) and each sibling bar it was found beyond (:func:`siblings`), judged once
    on the same samples: rule -> (verdict, what was measured)."""
    return {rule.name: near_verdict(rule, p2p, entity, tier, ctx) for rule, tier in near} | \
        siblings(found, entity, near, skip, by_name, beside, p2p, ctx)


def decided(looked: Mapping[str, tuple[bool | None, str]]) -> bool:
    """No more batches after this look: each bar decided, at the bound, or beyond what more of
    the same can judge (no control, no sample re-measured)."""
    return not any(v is None and note.startswith(WITHIN) for v, note in looked.values())


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
        if g.entity == entity and g.rule not in skip and g.rule in by_name and by_name[g.rule].metric in metrics \
                and levelled(by_name[g.rule]):
            beside.setdefault(g.rule, g.evidence.get("tier") or next((t for _, t in near), None))
    return {rule: near_verdict(by_name[rule], p2p, entity, tier, ctx) for rule, tier in beside.items()}


def levelled(rule: Rule) -> bool:
    """A bar :func:`judge_samples` reads as the rule does: against design or the peers'
    level (the explainer's level rules). A bar against a stored reference (a baseline, the
    card's own history, a first calibration) is not its controls' level: a card 0.85 of its
    baseline and level with its controls read "clear inside" 0.9 and was dropped."""
    kind = kind_of(rule)
    return kind is not None and kind[1] == LEVEL


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
        return None, NO_CONTROL_PAIRS
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
    z = boundary(len(r))
    if m + z * se < bar:
        return True, f"beyond the bar, clear of the noise: {said}"
    if m - z * se >= bar:
        return False, f"inside the bar, clear of the noise: {said}"
    if len(r) >= NEAR_SAMPLES:
        return None, f"{UNDECIDED.format(n=NEAR_SAMPLES)}: {said}"
    return None, f"{WITHIN}: {said}"


def boundary(n: int) -> float:
    """How many standard errors from the bar a look at ``n`` samples must find the median:
    BOUND_Z at the bound and past it, more before (the sequential test of the docstring)."""
    return BOUND_Z * math.sqrt(max(NEAR_SAMPLES / max(n, 1), 1.0))


def batch_repeats(k: int) -> int:
    """The repeats of a near suspect's ``k``-th batch (from 1): each 8 more than the last, so
    the looks come at 8, 24, 48, ... repeats and the bound is reached in a few of them."""
    return NEAR_REPEATS * k


def later_batches(first: int) -> Iterator[int]:
    """The repeats of each batch of a near suspect's retest after its first of ``first``
    repeats (:func:`batch_repeats` of 2, 3, ...), while the repeats so far are fewer than
    NEAR_SAMPLES: a look after each (``confirm.Window.run``), until one decides."""
    k, total = 1, first
    while total < NEAR_SAMPLES:
        k += 1
        total += batch_repeats(k)
        yield batch_repeats(k)


def at_bound(note: str) -> bool:
    """A verdict's note saying the samples reached the bound still within the noise."""
    return note.startswith(UNDECIDED.split("{")[0])


def left_within_noise(f: Finding, why: str, *, spent: bool) -> None:
    """A near suspect its retest left still within the noise of its bar (``why``: the samples,
    median, standard error and bar): not judged (its basis ``not_judged``), neither isolated nor
    released. At the bound on samples (``spent`` False): inconclusive, ``evidence.inconclusive``
    (exit 4 where only such findings gate). Stopped by the backend's near-bar budget on a quiet
    machine (``spent``; ``why`` names the budget and what a repeat cost first):
    ``evidence.not_decided``, and the gate fails (exit 1): no busy machine excuses it, and the
    finding no more keeps the first look's measured basis as if the retest had judged it (final
    read a #1)."""
    f.evidence["not_decided" if spent else "inconclusive"] = why
    f.basis = Basis.NOT_JUDGED
    f.message = f.message.removesuffix(NEAR_RETEST) + (NEAR_BUDGET_SPENT if spent else NEAR_UNDECIDED)


class NearClock:
    """What a near suspect's pair measurements cost on its backend, against the backend's
    budget (``budget_s``; None: no bound but the samples'). :meth:`timed` times each
    measurement of its pairs with its repeats; :meth:`fits` says whether a batch of more
    repeats, at the cost a repeat measured so far, ends within the budget, and when not, why
    (``over``): the retest stops there, and a suspect still within the noise is inconclusive
    (:meth:`spent`), never a release or an isolation on the samples it had."""

    def __init__(self, budget_s: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget_s, self.clock = budget_s, clock
        self.spent_s, self.repeats = 0.0, 0
        self.over: str | None = None

    def timed(self, measure: Callable[[str], None], how: str, repeats: int | None) -> None:
        """``measure(how)``, timed as ``repeats`` repeats of the suspect's pairs (None: not them)."""
        start = self.clock()
        try:
            measure(how)
        finally:
            if repeats:
                self.spent_s += self.clock() - start
                self.repeats += repeats

    def fits(self, repeats: int) -> bool:
        if self.budget_s is None or not self.repeats:
            return True
        cost = self.spent_s / self.repeats
        if self.spent_s + cost * repeats <= self.budget_s:
            return True
        self.over = (f"its near-bar budget of {self.budget_s:g} s cannot hold {repeats} more repeats of its pairs "
                     f"at {cost:.2f} s a repeat, {self.repeats} repeats in {self.spent_s:.0f} s so far")
        return False

    def spent(self, open_: Sequence[Mapping[str, object]], busy: str | None) -> str | None:
        """Why a retest is inconclusive when the budget stopped it on a busy machine (``busy``:
        the machine's load, where it was busy) with every open symptom (``open_``: rule,
        outcome None, note) a near or sibling bar still within the noise. Else None: on a
        quiet machine, or a backend that reports no load, what the retest could not judge
        stays quarantined and the gate fails (:meth:`said`), as a speed the retest could not
        judge there does (review s43: a card beyond its bar exited 4 with nothing busy)."""
        return None if not self.stopped(open_) or not busy else \
            f"inconclusive: the machine was too busy for the retest to decide ({self.over}); " \
            f"{busy.removeprefix('inconclusive: ')}"

    def stopped(self, open_: Sequence[Mapping[str, object]]) -> bool:
        """The budget stopped the batches with every open symptom (``open_``: rule, outcome None,
        note) still within the noise of a near or sibling bar. Where the machine was not busy
        such a suspect is not decided: not judged, but the gate fails (:func:`left_within_noise`);
        False where a symptom is open for another reason (no control: the retest could not say,
        not the budget)."""
        return self.over is not None and bool(open_) and \
            all(str(p["note"]).removeprefix(BESIDE).startswith(WITHIN) for p in open_)

    def said(self, why: str) -> str:
        """A retest's note ``why``, with the budget that stopped its batches first (None: none did)."""
        return why if self.over is None else f"not decided: {self.over}; {why}"
