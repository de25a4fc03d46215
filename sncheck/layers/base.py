"""What a layer gets to work with."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..backends.base import Backend, Emit, Progress
from ..health import invariants
from ..health.metrics import DetectContext
from ..health.rules import RuleSet, evaluate
from ..inventory import TierDesign
from ..topology import Topology


@dataclass
class LayerContext:
    topo: Topology
    backend: Backend
    emit: Emit
    design: dict[str, TierDesign]
    options: dict = field(default_factory=dict)
    progress: Progress = lambda msg: None
    rules: RuleSet | None = None
    rows: list[dict] = field(default_factory=list)  # every row of the run so far
    targets: frozenset[str] | None = None  # --targets: only what touches these cards (a scoped run)
    reference: dict | None = None  # golden curve
    baseline: dict | None = None
    history: dict | None = None  # earlier runs' summaries, from the state store (drift)

    def detect(self, layer: str) -> list:
        """Evaluate the rules of ``layer`` over that layer's rows, then the verdict's
        invariants (what was not measured or not judged), which no rules file can drop."""
        rows = pd.DataFrame(self.rows)
        mine = rows[rows["layer"] == layer] if not rows.empty and "layer" in rows else pd.DataFrame()
        ctx = DetectContext(self.topo, self.design, self.reference, self.baseline, history=self.history)
        # The invariants report every not-measured status; a rules file's `missing` op
        # would only repeat them (or soften them), so it is not evaluated here.
        rules = [r for r in self.rules.for_layer(layer) if r.op != "missing"] if self.rules else []
        return evaluate(rules, mine, ctx) + invariants.layer_findings(layer, mine, ctx, options=self.options,
                                                                   targets=self.targets)
