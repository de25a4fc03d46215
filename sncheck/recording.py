"""Record a golden curve: several clean runs of the golden layer, band sized from their spread."""

from __future__ import annotations

import statistics
from typing import Callable

import numpy as np
import pandas as pd

from .backends import get_backend
from .inventory import Inventory
from .layers import golden
from .layers.base import LayerContext
from .topology import Topology

SCHEMA = golden.SCHEMA
MIN_STEP_REL, MIN_FINAL_REL = 0.02, 0.01
SPREAD_MARGIN = 3.0  # the band is three times the widest spread seen in clean runs


def curve_from_runs(runs: list[list[float]], name: str, backend: str, config: dict,
                    step_times: list[float], comm_shares: list[float]) -> dict:
    loss = np.asarray(runs, dtype=float)  # repeats x steps
    mean = loss.mean(axis=0)
    spread = (np.abs(loss - mean) / np.abs(mean)).max(axis=0)
    step_rel = max(MIN_STEP_REL, SPREAD_MARGIN * float(spread.max()))
    final_rel = max(MIN_FINAL_REL, SPREAD_MARGIN * float(spread[-1]))
    return {
        "schema": SCHEMA, "name": name, "backend": backend, "config": config,
        "loss": [round(float(x), 6) for x in mean],
        "loss_spread": [round(float(x), 6) for x in spread],
        "band": {"step_rel": round(step_rel, 4), "final_rel": round(final_rel, 4)},
        "step_time_s": statistics.median(step_times) if step_times else None,
        "comm_share": statistics.median(comm_shares) if comm_shares else None,
        "repeats": len(runs),
    }


def record_golden_curve(inventory: Inventory, backend_name: str | None, steps: int, repeats: int,
                        seed: int, name: str, progress: Callable[[str], None]) -> dict:
    topo = Topology(inventory)
    backend_name = backend_name or inventory.backend or "local"
    cls = get_backend(backend_name)
    runs, step_times, shares = [], [], []
    for r in range(repeats):
        rows: list[dict] = []
        backend = cls(topo, None, seed=seed + r, progress=progress)
        try:
            ctx = LayerContext(topo, backend, rows.append, dict(inventory.design), {"steps": steps},
                               progress, rows=rows)
            golden.run(ctx)
        finally:
            backend.close()
        g = pd.DataFrame([x for x in rows if x.get("kind") == "golden"])
        first = g[g["group"] == g["group"].iloc[0]].sort_values("step")
        runs.append(first["loss"].tolist())
        step_times.append(float(g["step_time_s"].median()))
        shares.append(float(g["comm_share"].median()))
        progress(f"golden record: run {r + 1}/{repeats} final loss {runs[-1][-1]:.4f}")
    config = {"ranks": len(topo.cards_of_host(topo.hosts[0])), "steps": steps, "seed": seed,
              "inventory": inventory.name}
    return curve_from_runs(runs, name, backend_name, config, step_times, shares)
