"""A link released "explained by" an end card holds only while that card ends confirmed.

A link suspect's retest that names a card at one end, and not the link, releases the link's
symptoms as that card's (:func:`sncheck.run.retestbar.explained`, each symptom's
``explained_by``); the card is a finding of its own, retested in turn
(:mod:`sncheck.run.isolation`). When the card's own retest does not confirm it (released, or
left quarantined undecided or not retested), nothing explains the link's measured fault any
more, so its release is withdrawn: its severity is restored and it is quarantined again, then

* retested again by the measurement that showed it, on rows of its own
  (:func:`~sncheck.run.retestbar.retest_tag`), with the card no longer its explanation, when a
  wave is left and this is its first withdrawal;
* otherwise it stays quarantined: it gates (exit 1), or, named within the noise of its bar
  (``near_bar``), it is not judged (inconclusive, exit 4 where only such findings gate). Never
  a pass.

The finding's ``evidence.withdrawn`` lists each withdrawal (the card, what became of it, the
retest that named it) and ``evidence.retest`` says which; the isolation step that released
the link is replaced by the quarantine that says why.
"""

from __future__ import annotations

from collections.abc import Set

from sncheck.model import Action, Basis, Finding, IsolationStep, Severity
from sncheck.run.nearbar import is_near

RELEASED = " (not reproduced by the confirmation retest; released)"  # what a release adds to a message
AGAIN = "retested again, the card no longer its explanation"
STAYS = "no retest left for it: stays quarantined, never a pass"


def explainer(f: Finding) -> str | None:
    """The card a link's last retest released its symptoms to, if any."""
    return next((p["explained_by"] for p in f.evidence.get("retest_symptoms") or () if p.get("explained_by")), None)


def again_note(f: Finding) -> str:
    """What a withdrawn link's next retest record starts with."""
    w = f.evidence.get("withdrawn") or ()
    return f"retested again ({w[-1]['why']}): " if w else ""


def withdrawn(findings: list[Finding], steps: list[IsolationStep], waiting: Set[str], left: bool) -> list[Finding]:
    """Withdraw the release of each link released as explained by a card whose own retest
    has ended (not in ``waiting``) other than isolated; ``steps`` is changed in place.
    Returns the links to retest again (``left``: a wave is left for them). A card with no
    step yet (raised in the last wave, quarantined after this) was never retested."""
    last = {s.entity: s for s in steps}
    again = []
    for f in findings:
        card, step = explainer(f), last.get(f.entity)
        if card is None or step is None or step.action != Action.RELEASE or card in waiting:
            continue
        end = last.get(card)
        if end is not None and end.action == Action.ISOLATE:
            continue  # confirmed: the card explains the link's pair, and the release holds
        outcome = "never retested" if end is None else \
            "released by its own retest" if end.action == Action.RELEASE else \
            "not confirmed by its own retest (it stays quarantined)"
        retest = left and not f.evidence.get("withdrawn")
        _withdraw(f, steps, step, f"release withdrawn: card {card}, named in its retest as what explains its pair, "
                                  f"was {outcome}", card, outcome, retest)
        if retest:
            again.append(f)
    return again


def _withdraw(f: Finding, steps: list[IsolationStep], release: IsolationStep, why: str, card: str, outcome: str,
              retest: bool) -> None:
    then = AGAIN if retest else STAYS
    f.severity = Severity(f.evidence.pop("severity_before_retest", f.severity.value))
    f.message = f.message.removesuffix(RELEASED)
    f.evidence["withdrawn"] = [*(f.evidence.get("withdrawn") or ()),
                               {"explained_by": card, "card": outcome, "why": why, "retest": f.evidence.get("retest")}]
    f.evidence["confirmed"] = None
    f.evidence["retest"] = f"{why}; {then} (its retest: {f.evidence.get('retest')})"
    if not retest and is_near(f):  # a near suspect no retest found beyond its bar on its own: not judged
        f.evidence["inconclusive"] = f"{why}; {then}"
        f.basis = Basis.NOT_JUDGED
    first = next((s for s in steps if s.entity == f.entity and s.action == Action.QUARANTINE), release)
    at = next(i for i, s in enumerate(steps) if s is release)
    steps[at] = IsolationStep(f.entity, f.entity_kind, Action.QUARANTINE, f"{why}; {then}: {first.reason}",
                              rule=release.rule)
