"""The command line's number options: every float option is typed with :func:`finite`, so
NaN and the infinities are refused (exit 2, naming the option) before any work.

click.FloatRange alone admits ``nan``: every comparison with NaN is false, so no bound
refuses it. ``isolate --cap nan`` reached the fleet cap's own check as an internal error,
and ``watch --interval nan`` asked for a sleep of NaN seconds. ``tests/test_path_options.py``
walks every command's options and fails on a float option typed with anything else.
"""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses NaN and +-Infinity (``1e999`` reads as Infinity)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


# --last N (runs of the state store): more than a nightly gate records in 2,700 years; a
# larger N reached SQLite as an integer it cannot hold (OverflowError, exit 3).
MAX_RUNS = 1_000_000


def finite(min: float | None = None, max: float | None = None, *, min_open: bool = False,
           max_open: bool = False) -> FiniteFloat:
    """A float option's type: finite, within [min, max] (either end open or absent)."""
    return FiniteFloat(min, max, min_open=min_open, max_open=max_open)
