"""A confirmation retest's verdict (:class:`Retest`), as :mod:`sncheck.run.confirm` gives it
and :mod:`sncheck.run.isolation` decides on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from sncheck.model import Finding

# the measurements a retest repeats (sncheck.run.confirm.measurement)
FACTS, P2P, COLLECTIVES, GOLDEN, REACH = ("host facts", "peer-to-peer pairs", "collectives", "golden model",
                                          "reachability")


@dataclass(frozen=True)
class Retest:
    confirmed: bool | None  # None: the retest cannot say (stays quarantined)
    how: str  # the measurements that were repeated
    note: str  # what they showed, for the finding's evidence
    # "inconclusive: the machine was busy (...)": on a shared machine, not a pass and not an isolation
    busy: str | None = None
    symptoms: tuple[dict, ...] = ()  # per symptom: rule, how, outcome, note
    seen: tuple[Finding, ...] = field(default=(), compare=False)  # new faults on the controls
    # a near suspect still within the noise of its bar, the note saying why: at the bound on samples
    # ("not judged: ... at the bound of N samples"), or stopped by the backend's near-bar budget on a
    # quiet machine ("not decided: its near-bar budget of B s ...": exit 1, not 4; sncheck.run.nearbar)
    undecided: bool = False
    spent: bool = False
