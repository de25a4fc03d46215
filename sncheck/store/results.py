"""results.json: the run envelope of DESIGN.md as stable JSON text, written atomically.

A reader (a dashboard, the next playbook step) never sees a half-written file: the
text goes to a temporary file in the same directory, which then replaces the target
(:func:`sncheck.config.fileio.write_atomic`). The run directory writes it here; the
report format ``json`` (:mod:`sncheck.report.json_out`) is this same writer.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from typing import Any

import pandas as pd

from sncheck.config.fileio import write_atomic

# Contract keys first, in DESIGN.md order; any extension keys follow, sorted.
TOP_LEVEL_ORDER = ("schema", "run_id", "playbook", "backend", "inventory", "started",
                   "finished", "verdict", "gate", "seed", "layers", "findings", "isolation")


def dumps_results(results: dict) -> str:
    """The envelope as stable JSON text (same input, same bytes)."""
    ordered = {k: results[k] for k in TOP_LEVEL_ORDER if k in results}
    ordered.update({k: results[k] for k in sorted(results) if k not in ordered})
    return json.dumps(_plain(ordered), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, results: dict) -> None:
    write_atomic(path, dumps_results(results))


def _plain(v: Any) -> Any:
    """JSON-able copy: numpy scalars to Python, NaN/inf to null, paths and times to text."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if hasattr(v, "item") and callable(v.item):      # numpy / pandas scalar
        v = v.item()
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, int):
        return v
    if isinstance(v, (set, frozenset)):
        return sorted(_plain(x) for x in v)
    return str(v)
