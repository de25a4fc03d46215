"""What a layer gets to work with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sncheck.backends.base import Backend, Emit, Progress
from sncheck.store.frames import RowFrames, frames_of
from sncheck.health import invariants
from sncheck.health.kernel import judged_sources
from sncheck.health.metrics import METRICS, DetectContext, kind_rows
from sncheck.health.rules import RuleSet, evaluate
from sncheck.health.within import one_way
from sncheck.config.inventory import TierDesign
from sncheck.rows import RowSink, as_sink
from sncheck.topology import Topology


# What a host read (kernel log, fabric counters) is judged by, whatever the layers.
HOST_READ_METRICS = ("fabric_counters", "kernel_events", "host_fact_failures", "host_fact_warnings")
# The metric a layer's verdict rests on, where one does: without an enabled rule of it the layer
# is not judged, whatever else its rules judge (hostile round 10: the golden loss band rule
# disabled, the step-time rule left: a diverging card's golden layer passed, no word said).
VERDICT_METRIC = {"golden": "golden_loss"}
# The rows a layer's verdict rests on: where the layer measured them and no enabled rule reads
# them, it is not judged, whatever else its rules judge (hostile round 12: a rules file of host
# fact rules alone judged no pair of the connectivity layer, and a slow card passed).
VERDICT_ROWS = {"connectivity": "p2p", "stress": "collective"}


@dataclass
class LayerContext:
    topo: Topology
    backend: Backend
    emit: Emit
    design: dict[str, TierDesign]
    options: dict = field(default_factory=dict)
    progress: Progress = lambda _: None
    rules: RuleSet | None = None
    # Where ``emit`` is a plain callable (a small in-memory run such as node-check), the
    # rows it was given; a run store (the usual ``emit``) keeps them itself, as columns.
    rows: list[dict] | None = None
    targets: frozenset[str] | None = None  # --targets: only what touches these cards (a scoped run)
    reference: dict | None = None  # golden curve
    baseline: dict | None = None
    history: dict | None = None  # earlier runs' summaries, from the state store (drift)
    gate: str = "critical"  # the run's gate: the severity of a "not judged" finding
    # Findings the layer made itself rather than through the rules (the golden layer's
    # finding about the ledger's forecast); detect() returns them with the rules'.
    own_findings: list = field(default_factory=list)
    # culprits earlier layers named ((entity, kind)): their pairs never feed another
    # entity's pairwise-collective or drift verdict (DetectContext.known)
    known: frozenset[tuple[str, str]] = frozenset()
    untold: frozenset[str] = frozenset()  # of them, hosts and domains not told from their cards (DetectContext)
    factors: dict = field(default_factory=dict)  # of them, each one's measured factor (its finding's evidence)
    beyond: dict = field(default_factory=dict)  # groups slower than their culprits' factors explain (DetectContext)
    narrowed: frozenset[str] = frozenset()  # the stress narrowing's suspect cards (DetectContext)
    released: frozenset[str] = frozenset()  # cards of its own culprits a retest released (DetectContext)
    # the suspects of the retest wave under way (hard ones included: isolation._wave), and each one's cards with
    # the rules that named it ((card, rule, suspect): confirm.confirm), culprits found already in the others' retests
    wave: tuple = ()
    shown: frozenset[tuple[str, str, str]] = frozenset()
    # the layer's plan when the run built it already (its faults' check, for these options and
    # no --targets): the layer takes it (take_plan) rather than build it again
    plan: Any = None

    def take_plan(self) -> Any:
        """The plan built already (None: none), let go of here: the layer holds it while it
        runs, never through its judging (a fleet's connectivity plan is 800 MB)."""
        plan, self.plan = self.plan, None
        return plan

    def detect_context(self) -> DetectContext:
        return DetectContext(self.topo, self.design, self.reference, self.baseline, history=self.history,
                             known=self.known, untold=self.untold, beyond=self.beyond,
                             factors=self.factors, narrowed=self.narrowed, released=self.released)

    def frames(self, layer: str | None = None, **equal: Any) -> RowFrames:
        """The run's rows so far, one pandas frame per kind."""
        if hasattr(self.emit, "frames"):
            return self.emit.frames(layer, **equal)
        frames = frames_of(self.rows or [])
        return frames.where(**({"layer": layer} if layer else {}), **equal)

    def frame(self, kind: str, layer: str | None = None, **equal: Any) -> pd.DataFrame:
        """The run's rows of one kind so far, as a pandas frame."""
        return self.frames(layer, **equal).kind(kind)

    def sink(self, **constants: Any) -> RowSink:
        """``emit`` as a row sink, setting ``constants`` on every row."""
        return as_sink(self.emit).tagged(**constants)

    def detect_host_reads(self) -> list:
        """Judge the host reads of a run whose layers read no host facts (``Backend.host_reads``,
        or ``host_facts`` for a playbook that reads card health first): the rules of their
        metrics over those rows, and every read that did not happen (a tool missing, a host not
        reached: a finding, as in a connectivity layer; the nightly passed a host whose facts were
        never read, hostile round 25, H25-09)."""
        mine = self.frames("connectivity")
        ctx = self.detect_context()
        rules = [r for r in (self.rules.judging("connectivity") if self.rules else []) if r.metric in HOST_READ_METRICS]
        unjudged = [] if self.rules is None else invariants.kernel_not_judged(
            "connectivity", mine, ctx, judged_sources(rules), self.gate) + invariants.fact_not_judged(
            "connectivity", mine, ctx, [r for r in rules if r.metric in invariants.FACT_METRICS], self.gate)
        unread = invariants.status_findings(mine, ctx, self.rules.allowed_skips if self.rules is not None else ())
        return evaluate(rules, mine, ctx) + unjudged + unread

    def detect(self, layer: str) -> list:
        """Evaluate the rules of ``layer`` over that layer's rows, then the verdict's
        invariants (what was not measured or not judged), which no rules file can drop."""
        mine = self.frames(layer)
        ctx = self.detect_context()
        # The invariants report every not-measured status; a rules file's `missing` op
        # would only repeat them (or soften them), so it is not evaluated here.
        rules = self.rules.judging(layer) if self.rules else []
        core = [r for r in rules if r.metric == VERDICT_METRIC[layer]] if layer in VERDICT_METRIC else rules
        if layer in VERDICT_ROWS and not kind_rows(mine, VERDICT_ROWS[layer], ["layer"]).empty:
            core = [r for r in core if VERDICT_ROWS[layer] in METRICS[r.metric].reads]
        found = evaluate(rules, mine, ctx)
        one_way(found, {r.name for r in rules if r.metric == "p2p_bandwidth"}, mine)  # a link's factor for collectives
        found += invariants.wrong_not_localised(layer, mine, ctx.topo, found,
                                                {r.name for r in rules if r.metric == invariants.WRONG_METRIC})
        return list(self.own_findings) + found + invariants.layer_findings(
            layer, mine, ctx, options=self.options, targets=self.targets,
            rules=len(core) if self.rules is not None else None, gate=self.gate,
            skips=self.rules.allowed_skips if self.rules is not None else (),
            kernel=judged_sources(rules) if self.rules is not None else None,
            fact_rules=[r for r in rules if r.metric in invariants.FACT_METRICS] if self.rules is not None else None)
