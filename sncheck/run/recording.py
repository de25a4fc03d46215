"""Record a golden curve: several clean runs of the golden layer, band sized from their spread."""

from __future__ import annotations

import math
import statistics
from typing import Callable

from sncheck.errors import ConfigError
from sncheck.config.inventory import Inventory
from sncheck.layers import golden
from sncheck.config.playbook import single_layer
from sncheck.run.runner import Run, RunOptions

SCHEMA = golden.SCHEMA
MIN_BAND = 0.02        # never narrower than 2%
SPREAD_MARGIN = 3.0    # three times the widest spread seen between clean runs


def _curve(rows: list[dict]) -> list[float]:
    """Per-step loss of one run (mean over the replicas that ran as ``group``)."""
    golden_rows = [r for r in rows if r.get("kind") == "golden"]
    picked = [r for r in golden_rows if r.get("stage") == "group"] or golden_rows
    by_step: dict[int, list[float]] = {}
    for r in picked:
        by_step.setdefault(int(r["step"]), []).append(float(r["loss"]))
    if not by_step:
        raise ConfigError("no golden rows to record a curve from")
    steps = sorted(by_step)
    if steps != list(range(len(steps))):
        raise ConfigError(f"golden rows miss steps: have {len(steps)} steps up to {steps[-1]}")
    return [statistics.fmean(by_step[s]) for s in steps]


def curve_from_runs(runs_rows: list[list[dict]], name: str, backend: str, config: dict) -> dict:
    """A ``sncheck.golden/1`` curve from the golden rows of several clean runs.

    ``loss`` is the per-step mean; ``loss_spread`` the per-step largest relative
    deviation from it; the band is three times the largest spread (over all steps for
    ``step_rel``, over the last tenth for ``final_rel``), at least 2%.
    """
    runs = [_curve(rows) for rows in runs_rows]
    n_steps = len(runs[0])
    if any(len(c) != n_steps for c in runs):
        raise ConfigError(f"runs differ in length: {[len(c) for c in runs]} steps")
    if not all(math.isfinite(v) for c in runs for v in c):
        raise ConfigError("a run has a non-finite loss; a golden curve must come from clean runs")
    mean = [statistics.fmean(c[s] for c in runs) for s in range(n_steps)]
    spread = [max(abs(c[s] - mean[s]) for c in runs) / abs(mean[s]) if mean[s] else 0.0
              for s in range(n_steps)]
    tail = spread[-max(1, n_steps // 10):]
    group_rows = [r for rows in runs_rows for r in rows
                  if r.get("kind") == "golden" and r.get("stage", "group") == "group"]
    times = [r["step_time_s"] for r in group_rows if r.get("step_time_s") is not None]
    shares = [r["comm_share"] for r in group_rows if r.get("comm_share") is not None]
    if SPREAD_MARGIN * max(spread) >= 1:  # the band would hold a loss of 0 (a reference refuses it when it loads)
        raise ConfigError(f"the runs' losses differ by up to {max(spread):.0%} of their mean at a step: a band of "
                          f"{SPREAD_MARGIN:g} times that holds any loss; these are not clean runs of one model")
    return {
        "schema": SCHEMA, "name": name, "backend": backend, "config": dict(config),
        "runs": len(runs), "loss": [round(v, 6) for v in mean], "loss_spread": [round(v, 6) for v in spread],
        "band": {"step_rel": round(max(SPREAD_MARGIN * max(spread), MIN_BAND), 4),
                 "final_rel": round(max(SPREAD_MARGIN * max(tail), MIN_BAND), 4)},
        "step_time_s": statistics.median(times) if times else None,
        "comm_share": statistics.median(shares) if shares else None,
    }


def record_golden_curve(inventory: Inventory, backend_name: str | None, steps: int, repeats: int,
                        seed: int, name: str, progress: Callable[[str], None]) -> dict:
    """Run the golden layer ``repeats`` times on a known-good system (no faults), measuring
    only: no rules, no golden reference (a run that is recording one), no calibration."""

    if repeats < 1:
        raise ConfigError(f"a golden curve needs at least one clean run, got --repeats {repeats}")
    playbook = single_layer(golden.NAME, {"steps": steps})
    runs_rows = []
    for r in range(repeats):
        rows: list[dict] = []
        run = Run(playbook, inventory, RunOptions(backend=backend_name, seed=seed + r, judge=False, calibrate=False),
                  progress=progress)
        with run:
            for layer in run.measure(rows.append, rows):
                if layer.error is not None:  # a recording is clean runs only: nothing cut short
                    raise layer.error
        runs_rows.append(rows)
        progress(f"golden record: run {r + 1}/{repeats} final loss {_curve(rows)[-1]:.4f}")
    config = {"ranks": len(run.topo.cards_of_host(run.topo.hosts[0])), "steps": steps, "seed": seed,
              "inventory": inventory.name}
    return curve_from_runs(runs_rows, name, backend_name or inventory.backend or "local", config)
