"""The one builder of a run's record: collect -> retest -> isolate -> finish -> RunRecord.

:class:`sncheck.run.runner.Run` and ``sncheck watch`` (:mod:`sncheck.watch.judge`) both
record through it; ``watch`` reads dumps into rows and collects what its rules find, and
quarantines without a retest (in-job evidence never isolates). Nothing here decides a
verdict: :class:`~sncheck.model.RunRecord` computes it, and every flag, from what was
recorded.

* **collect**: each layer's summary and findings (:meth:`RunRecorder.layer`), findings
  outside a layer (:meth:`collect`), the extension sections (:meth:`section`);
  :meth:`snapshot` is the record so far (the partial results.json after each layer,
  unfinished: its verdict is ``error`` until :meth:`finish`);
* **merge**: one finding per culprit (:func:`sncheck.health.findings.merge_findings`);
* **retest / isolate**: the isolation policy's steps (:mod:`sncheck.run.isolation`: a
  quarantine, then the retest's isolate or release), or a quarantine alone;
* **finish**: the run's end time, and the frozen record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from sncheck.health.findings import merge_findings
from sncheck.layers.base import LayerContext
from sncheck.model import Finding, IsolationStep, LayerRecord, RunRecord, Severity
from sncheck.run.isolation import isolation_steps, quarantine_steps

SECTIONS = ("design", "inputs", "tools", "topology", "scope", "baseline", "capacity", "history", "confirm",
            "reconciled")


def now_text() -> str:
    """The time as results.json writes it: UTC, to the second (``2026-11-29T10:30:00Z``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class RunRecorder:
    """Builds one :class:`RunRecord`. The findings stay values it owns until :meth:`finish`:
    merging folds symptoms into them and the retest releases some to ``info``."""

    def __init__(self, *, run_id: str, playbook: str, backend: str, inventory: str, gate: Severity | str,
                 seed: int | None = None, started: str | None = None, **sections: Any) -> None:
        self.head: dict[str, Any] = {"run_id": run_id, "playbook": playbook, "backend": backend,
                                     "inventory": inventory, "gate": Severity(gate), "seed": seed,
                                     "started": started or now_text()}
        self.layers: list[LayerRecord] = []
        self.findings: list[Finding] = []
        self.steps: list[IsolationStep] = []
        self.error: str | None = None
        self.blocked: str | None = None
        self.finished: str | None = None
        self.sections: dict[str, Any] = {}
        self.section(**sections)

    # ---- collect
    def section(self, **sections: Any) -> None:
        """Set extension sections (``design``, ``inputs``, ``tools``, ...)."""
        unknown = set(sections) - set(SECTIONS)
        if unknown:
            raise TypeError(f"not a section of the run record: {', '.join(sorted(unknown))}")
        self.sections.update(sections)

    def layer(self, name: str, summary: dict, findings: Iterable[Finding] = (), cut_short: str | None = None) -> None:
        """A layer that ran: what was measured still counts when it was cut short (its cause
        in ``summary.cut_short`` and the run's error)."""
        if cut_short is not None:
            summary = {**summary, "cut_short": cut_short}
            self.fail(f"layer {name} cut short: {cut_short}")
        self.layers.append(LayerRecord(name, summary, cut_short=cut_short is not None))
        self.findings.extend(findings)

    def collect(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    def fail(self, error: str) -> None:
        """The run could not finish as planned (the first cause is kept)."""
        if self.error is None:
            self.error = error

    # ---- merge, retest, isolate
    def merge(self, supernode_of_host: Callable[[str], str | None] | None = None) -> list[Finding]:
        """One finding per culprit (the symptoms folded into it as its evidence)."""
        self.findings = merge_findings(self.findings, supernode_of_host)
        return self.findings

    def retest(self, ctx: LayerContext, confirm: bool, released_at: Callable[[str], datetime | None],
               now: datetime, again: Callable[[set[str]], list[Finding]] | None = None) -> list[IsolationStep]:
        """Quarantine, then confirm by retest: isolate, release, or keep quarantined. A
        finding the retest saw on a control joins the findings, quarantined; so does one that
        what a released entity was said to explain raises, judged again without it (``again``)."""
        self.steps = isolation_steps(self.findings, ctx, confirm_enabled=confirm and self.error is None,
                                     released_at=released_at, now=now, again=again)
        return self.steps

    def quarantine(self, note: Callable[[Finding], str] | None = None,
                   eligible: Callable[[Finding], bool] = lambda _: True) -> list[IsolationStep]:
        """Quarantine without a retest (``watch``: the confirmation is a scoped run later)."""
        self.steps = quarantine_steps([f for f in self.findings if eligible(f)], note)
        return self.steps

    def acted(self, steps: Iterable[IsolationStep], blocked: str | None = None) -> None:
        """The isolation steps as the state store recorded and applied them."""
        self.steps = list(steps)
        self.blocked = blocked

    # ---- the record
    def snapshot(self) -> RunRecord:
        """The record as it stands: unfinished (its verdict ``error``) until :meth:`finish`."""
        return RunRecord(**self.head, finished=self.finished, layers=tuple(self.layers),
                         findings=tuple(self.findings), isolation=tuple(self.steps), error=self.error,
                         isolation_blocked=self.blocked, **self.sections)

    def finish(self) -> RunRecord:
        """The finished record; its end time is stamped once (a later call, after the state
        store acted, keeps it)."""
        self.finished = self.finished or now_text()
        return self.snapshot()
