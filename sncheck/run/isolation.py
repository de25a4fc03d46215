"""Isolation steps: quarantine, confirm, isolate or release (the policy of :mod:`sncheck.health.policy`).

* quarantine at the first anomaly; a finding about a check (a missing tool, no golden
  reference) is not about the hardware, so nothing is quarantined for it (it still
  fails the gate);
* a repeat offender is isolated at once; so is hard evidence (a rule with
  ``confirm: none``: uncorrectable ECC, a pending remap, data corruption, a link down);
* what was not measured stays quarantined: a retest cannot make it measured;
* everything else is retested with the measurement that found it (:mod:`sncheck.run.confirm`):
  confirmed -> isolate; not confirmed (the retest ran with known-good peers and measured
  the symptom) -> release; the retest cannot say -> stays quarantined;
* a finding first raised inside another's retest gets the same: quarantined, retested by
  the measurement that showed it, decided;
* a link released as explained by an end card its retest named holds only while that card
  ends confirmed; otherwise its release is withdrawn and it is retested again or stays
  quarantined (:mod:`sncheck.run.withdraw`).

Nothing here is applied: entries are dry runs until ``--apply`` or ``sncheck isolate``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable

from sncheck.errors import HarnessError
from sncheck.health.findings import merge_findings
from sncheck.health.within import WITHIN, rests_on
from sncheck.health.policy import decide_entry, is_repeat_offender
from sncheck.layers.base import LayerContext
from sncheck.model import About, Action, Finding, IsolationStep, Severity
from sncheck.run.confirm import Retest, confirm
from sncheck.run.scope import cards_of
from sncheck.run.nearbar import is_near, left_within_noise, not_retested
from sncheck.run.withdraw import RELEASED, again_note, withdrawn


def hard_evidence(f: Finding, ctx: LayerContext) -> str | None:
    """The name of a ``confirm: none`` rule behind this finding, if any."""
    if f.evidence.get("confirm") == "none":  # the op said so (a critical Xid of the rules file's table)
        return f.rule
    if ctx.rules is None:
        return None
    none = {r.name for r in ctx.rules.rules if r.confirm == "none"}
    names = [f.rule] + [g.rule for g in f.folded]
    return next((n for n in names if n in none), None)


def hard_of(suspects: list[Finding], near: set[str], ctx: LayerContext) -> dict[str, str]:
    """Entity -> the ``confirm: none`` rule that isolates it without a retest. A finding within
    the noise of its bar is no hard evidence by its own rule, but the hard evidence folded into
    it (a critical Xid under a near-bar card's lead) still is."""
    return {f.entity: rule for f in suspects
            if (rule := hard_evidence(f, ctx)) and not (f.entity in near and rule == f.rule)}


WAVES = 4  # retests of findings first raised in a retest, of those raised in theirs, ...
def suspect(f: Finding) -> bool:
    """Quarantined at the first anomaly: a warning or worse about the hardware."""
    return f.severity.rank >= Severity.WARNING.rank and f.about != About.CHECK


def quarantine_steps(findings: list[Finding], note: Callable[[Finding], str] | None = None) -> list[IsolationStep]:
    """A quarantine for each suspect (``note``: words the reason ends with)."""
    return [IsolationStep(f.entity, f.entity_kind, Action.QUARANTINE,
                          f"{f.rule}: {f.message}" + (f" ({note(f)})" if note else ""), rule=f.rule)
            for f in findings if suspect(f)]


def isolation_steps(findings: list[Finding], ctx: LayerContext, confirm_enabled: bool,
                    released_at: Callable[[str], datetime | None], now: datetime,
                    again: Callable[[set[str]], list[Finding]] | None = None) -> list[IsolationStep]:
    """Every finding's steps. One policy for all: a finding first raised inside another's
    retest (a control the explanation named on its own) is quarantined and retested by the
    measurement that showed it, as the run's own findings were, in waves until no new one
    is raised (at most :data:`WAVES`; what is left after that stays quarantined and gates).
    ``again`` (:class:`sncheck.run.rejudge.Rejudge`): given the entities a wave released, the
    findings what they were said to explain raises once judged without them; each new one
    joins the next wave, whose retests no longer hold the released entities as culprits."""
    steps: list[IsolationStep] = []
    wave, after = _after_their_culprits(findings, ctx) if confirm_enabled else (list(findings), [])
    known = {f.entity for f in findings}
    first = True
    asked: set[str] = set()
    later: list[Finding] = []  # raised by a judging again, held for the wave after the next (_inner_first)
    for n in range(WAVES):
        seen = _wave(wave, ctx, confirm_enabled, released_at, now, steps, first)
        first = False
        waiting, later = later, []
        if again is not None and confirm_enabled:
            released = {s.entity for s in _last(steps).values() if s.action == Action.RELEASE} - asked
            asked |= released
            if fresh := _fresh(again(released), known | {g.entity for g in seen}) if released else []:
                inner, later = _inner_first(fresh, ctx)
                seen = [*seen, *inner]  # their retests: a released entity is no culprit now
                ctx.known = frozenset(k for k in ctx.known if k[0] not in asked)
                known |= {g.entity for g in later}
        wave = [*(g for g in seen if g.entity not in known), *waiting]
        known |= {g.entity for g in wave}
        findings.extend(wave)
        if after:  # judged within another's factor: retested once it is decided, released ones no culprits
            gone = {s.entity for s in _last(steps).values() if s.action == Action.RELEASE}
            ctx.known = frozenset(k for k in ctx.known if k[0] not in gone)
            wave, after = [*wave, *after], []
        ctx.known = ctx.known | {(g.entity, g.entity_kind) for g in wave}
        # a link released as its end card's holds only while that card ends confirmed (sncheck.run.withdraw)
        wave += withdrawn(findings, steps, {g.entity for g in wave}, left=n + 1 < WAVES)
        if not wave and not later:
            break
    withdrawn(findings, steps, set(), left=False)  # the last wave's new cards have no step yet: "never retested"
    findings.extend(later)
    for g in [*wave, *later]:  # raised in the last wave's retests: quarantined, not retested
        steps.extend(quarantine_steps([g]))
    return steps


def _last(steps: list[IsolationStep]) -> dict[str, IsolationStep]:
    return {s.entity: s for s in steps}


def _fresh(found: list[Finding], known: set[str]) -> list[Finding]:
    """Of the findings a judging again raised, those on entities not found before, one per culprit."""
    return merge_findings([g for g in found if g.entity not in known])


def _after_their_culprits(findings: list[Finding], ctx: LayerContext) -> tuple[list[Finding], list[Finding]]:
    """The run's findings apart: those retested first, and the pair findings judged within another one's
    measured factor (sncheck.health.within.rests_on: on their pairs), retested in the wave after it."""
    named = [f for f in findings if suspect(f)]
    if len(named) < 2:  # (none judged within another)
        return list(findings), []
    pairs = {r.name for r in (ctx.rules.rules if ctx.rules is not None else ()) if r.metric == WITHIN}
    later = [f for f in named if f.rule in pairs and rests_on(f, named, ctx.detect_context())]
    return [f for f in findings if f not in later], later


def _inner_first(fresh: list[Finding], ctx: LayerContext) -> tuple[list[Finding], list[Finding]]:
    """The findings a judging again raised, apart: those retested in the next wave, and the hosts and
    domains holding the cards of one of those, retested in the wave after it. A retest holds every
    other suspect of its wave as a culprit whose cards are no one else's evidence: a host's slow group
    beside its own NIC's slow pairs left the NIC's retest no pair of its own, and released it."""
    cards = {g.entity: set(cards_of(g, ctx.topo)) for g in fresh}
    held = [g for g in fresh if g.entity_kind in ("host", "supernode")
            and any(h is not g and h.entity_kind not in ("host", "supernode") and cards[h.entity] & cards[g.entity]
                    for h in fresh)]
    return [g for g in fresh if g not in held], held


def _wave(findings: list[Finding], ctx: LayerContext, confirm_enabled: bool,
          released_at: Callable[[str], datetime | None], now: datetime, steps: list[IsolationStep],
          first: bool) -> list[Finding]:
    """Quarantine, retest and decide one wave of findings (into ``steps``); returns the
    findings its retests raised on their controls."""
    suspects = [f for f in findings if suspect(f)]
    ctx.wave = tuple(suspects)  # those isolated on hard evidence included: culprits in the others' retests
    # within the noise of its bar (sncheck.run.nearbar): only a retest beyond it isolates, and
    # with none allowed it is not judged (inconclusive), never released as healthy
    near = {f.entity for f in suspects if is_near(f)}
    hard = hard_of(suspects, near, ctx)
    for f in suspects if not confirm_enabled else ():
        if f.entity in near and f.entity not in hard:
            not_retested(f)
    quarantined = quarantine_steps(suspects)
    steps.extend(quarantined)
    history = {f.entity: released_at(f.entity) for f in suspects}
    repeat = {f.entity for f in suspects if f.entity not in near and is_repeat_offender(history[f.entity], now)}
    to_retest = [f for f in suspects if f.entity not in repeat | set(hard)]
    retests: dict[str, Retest] = {}
    if confirm_enabled and to_retest:
        ctx.progress(f"confirm: {len(to_retest)} quarantined entities, retesting each by the measurement that found it")
        if first:
            ctx.backend.begin_confirmation()
        try:
            retests = confirm(ctx, to_retest)
        except HarnessError as e:  # the retest could not run: everything stays quarantined
            ctx.progress(f"confirm: retest cut short ({e}); suspects stay quarantined")
    for f, q in zip(suspects, quarantined):
        if f.entity in repeat:
            steps.append(decide_entry(q, None, history[f.entity], now))
        elif f.entity in hard:
            f.evidence["confirm"] = "none"
            steps.append(IsolationStep(q.entity, q.entity_kind, Action.ISOLATE,
                                       f"hard evidence (rule {hard[f.entity]}, confirm: none); isolated without "
                                       f"a retest: {q.reason}", rule=q.rule))
        elif f.entity in retests:
            r = retests[f.entity]
            if r.confirmed is False and f.rests_on_no_measurement():  # never released: not measured in the first place
                r = Retest(None, r.how, f"{r.note}; not measured in the first place, so never released",
                           r.busy, r.symptoms)
            f.evidence["confirmed"] = r.confirmed
            if r.confirmed is not None and not r.busy:  # seen on a busy machine in another's retest, decided by its own
                f.evidence.pop("inconclusive", None)
            f.evidence["retest"] = f"{again_note(f)}{r.how}: {r.note}"
            # this retest's symptoms only: an earlier retest's (a withdrawn link's, naming the card that
            # explained it) would withdraw a release this retest gave on its own (sncheck.run.withdraw)
            f.evidence.pop("retest_symptoms", None)
            if r.symptoms:
                f.evidence["retest_symptoms"] = list(r.symptoms)
            step = decide_entry(q, r.confirmed, history[f.entity], now)
            if r.busy:
                f.evidence["inconclusive"] = r.busy
                step.reason = f"{r.busy}: neither isolated nor released, stays quarantined: {q.reason}"
            elif r.undecided or r.spent:  # a near suspect within the noise: at the bound on samples, or
                left_within_noise(f, r.note, spent=r.spent)  # the budget stopped it on a quiet machine
                step.reason = f"{r.note}: neither isolated nor released, stays quarantined: {q.reason}"
            elif r.confirmed is None:
                step.reason = f"the retest could not say ({r.note}); stays quarantined: {q.reason}"
            steps.append(step)
            if step.action == Action.RELEASE:
                # Kept on record, but a symptom the retest could not reproduce does not gate.
                f.evidence["severity_before_retest"] = f.severity.value
                f.severity = Severity.INFO
                f.message += RELEASED
    seen: dict[str, Finding] = {}
    for r in retests.values():
        for g in r.seen:
            seen.setdefault(g.entity, g)
    return list(seen.values())
