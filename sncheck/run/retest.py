"""A confirmation retest's verdict (:class:`Retest`), as :mod:`sncheck.run.confirm` gives it
and :mod:`sncheck.run.isolation` decides on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from sncheck.model import Finding


@dataclass(frozen=True)
class Retest:
    confirmed: bool | None  # None: the retest cannot say (stays quarantined)
    how: str  # the measurements that were repeated
    note: str  # what they showed, for the finding's evidence
    # "inconclusive: the machine was busy (...)": on a shared machine, not a pass and not an isolation
    busy: str | None = None
    symptoms: tuple[dict, ...] = ()  # per symptom: rule, how, outcome, note
    seen: tuple[Finding, ...] = field(default=(), compare=False)  # new faults on the controls
    # "not judged: ... at the bound of N samples": a near suspect still within the noise of its bar
    undecided: str | None = None
    # "not decided: its near-bar budget of B s ...": a near suspect the backend's budget stopped
    # still within the noise on a quiet machine (sncheck.run.nearbar.budget_spent): exit 1, not 4
    spent: str | None = None

    def to_dict(self) -> dict:
        d = {"confirmed": self.confirmed, "how": self.how, "note": self.note, "symptoms": list(self.symptoms)}
        return d | {k: v for k, v in (("busy", self.busy), ("undecided", self.undecided), ("spent", self.spent)) if v}
