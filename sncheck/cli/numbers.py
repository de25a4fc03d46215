"""The command line's number options: every float option is typed with :func:`finite`, so
NaN and the infinities are refused (exit 2, naming the option) before any work, and every
integer option with :func:`whole`. Both take a number written in ASCII digits only.

click.FloatRange alone admits ``nan``: every comparison with NaN is false, so no bound
refuses it. ``isolate --cap nan`` reached the fleet cap's own check as an internal error,
and ``watch --interval nan`` asked for a sleep of NaN seconds. ``tests/test_path_options.py``
walks every command's options and fails on a float option typed with anything else.
"""

from __future__ import annotations

import math
from typing import Any

import click


def _written(kind: click.ParamType, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> None:
    """Refuse a number no tool and no person types: Python's int() and float() read every
    script's decimal digits (``--seed ١`` and ``--seed １`` were seed 1) and underscores
    (``--seed 1_0`` was 10) (hostile round 20)."""
    if isinstance(value, str) and (not value.isascii() or "_" in value):
        kind.fail(f"{value!r} is not a number in ASCII digits 0-9", param, ctx)


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses NaN and +-Infinity (``1e999`` reads as Infinity)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _written(self, value, param, ctx)
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


class WholeNumber(click.IntRange):
    """An IntRange of a number in ASCII digits (an optional sign), nothing else Python reads."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _written(self, value, param, ctx)
        return super().convert(value, param, ctx)


def whole(min: int | None = None, max: int | None = None) -> WholeNumber:
    """An integer option's type: ASCII digits, within [min, max] (either end absent)."""
    return WholeNumber(min, max)


# --last N (runs of the state store): more than a nightly gate records in 2,700 years; a
# larger N reached SQLite as an integer it cannot hold (OverflowError, exit 3).
MAX_RUNS = 1_000_000


def finite(min: float | None = None, max: float | None = None, *, min_open: bool = False,
           max_open: bool = False) -> FiniteFloat:
    """A float option's type: finite, within [min, max] (either end open or absent)."""
    return FiniteFloat(min, max, min_open=min_open, max_open=max_open)
