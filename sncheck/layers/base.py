"""What a layer gets to work with."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends.base import Backend, Emit, Progress
from ..health.detect import DEFAULT, Thresholds
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
    thresholds: Thresholds = DEFAULT
    rows: list[dict] = field(default_factory=list)  # every row of the run so far
