"""What a layer gets to work with."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..backends.base import Backend, Emit, Progress
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
        """Evaluate the rules of ``layer`` over that layer's rows."""
        rows = pd.DataFrame(self.rows)
        if rows.empty or self.rules is None:
            return []
        mine = rows[rows["layer"] == layer]
        ctx = DetectContext(self.topo, self.design, self.reference, self.baseline, history=self.history)
        return evaluate(self.rules.for_layer(layer), mine, ctx)
