"""The p2p level kinds' pair summaries (bandwidth, latency) without their metric frames.

``p2p_bandwidth`` and ``p2p_latency`` (:mod:`sncheck.health.metrics`) are each a frame of
every pair row: the shared id columns copied again beside a value column and a design
column of one value per tier (at 131,072 cards 50 M rows: each float column 400 MB, the
latency frame's row selection a copy of every column). The explanation search reads no
row of them, only their pair summaries (:func:`sncheck.health.pairview.summarise`). Here
the summaries come from the evaluation's one frame of pairs (``metrics._p2p``: ids as
categorical codes) with each metric's value as one numpy column over its rows, its row
selection (latency: the pairs that did not fail) a mask, each tier's design one value by
its name: what the metric's frame would hold, row for row, so the summaries are the same
to the bit (tests/test_p2p_tiers.py).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from sncheck.health.metrics import DetectContext, _design, _mean_of_two, _p2p
from sncheck.health.pairgroups import tier_groups
from sncheck.health.pairview import FrameTier, beyond_bound, summarise_rows
from sncheck.health.rates import read_mask


@dataclass(frozen=True)
class P2PLevel:
    """A p2p level metric as its frame makes it: the value columns it reads, the design
    attribute it is judged against, and whether it keeps the failed rows."""

    reads: tuple[str, ...]
    design: str
    keeps_failed: bool
    value: Callable[[pd.DataFrame], np.ndarray]


def _bandwidth(p: pd.DataFrame) -> np.ndarray:
    return _mean_of_two(p["bw_GBps"], p["bw_rev_GBps"])  # metrics.p2p_bandwidth's value


def _latency(p: pd.DataFrame) -> np.ndarray:
    return p["lat_us"].astype(float).to_numpy(float)  # metrics.p2p_latency's value


LEVELS = {"p2p_bandwidth": P2PLevel(("bw_GBps", "bw_rev_GBps"), "bandwidth_GBps", True, _bandwidth),
          "p2p_latency": P2PLevel(("lat_us",), "latency_us", False, _latency)}


@dataclass
class P2PTiers:
    """A p2p level metric's rows, ready to summarise: the frame of pairs, the metric's
    values and failed flags over its rows, the rows it keeps (None: all) and each tier's
    design by name. ``empty``: the metric's frame would have no row."""

    pairs: pd.DataFrame
    value: np.ndarray
    failed: np.ndarray
    keep: np.ndarray | None
    design: Callable[[str], float]
    tiers: list

    @property
    def empty(self) -> bool:
        return len(self.pairs) == 0 or (self.keep is not None and not self.keep.any())

    def no_design(self) -> bool:
        """Whether no tier among the metric's rows has a design value (its frame's
        ``design`` column all missing): only peers judge."""
        return all(np.isnan(self.design(t)) for t in self.tiers)

    def summarise(self, ctx: DetectContext, *, invert: bool = False, exception=None,
                  apart: Collection[str] = ()) -> dict[str, FrameTier]:
        groups = tier_groups(self.pairs, ctx.topo.card_table, ctx.cache, self.keep)
        return summarise_rows(groups, self.value, self.failed, self.design, ctx.topo, invert=invert,
                              exception=exception, apart=apart)


def p2p_tiers(metric: str, rows, ctx: DetectContext) -> P2PTiers:
    """:class:`P2PTiers` of ``metric`` (one of :data:`LEVELS`) over the rows."""
    spec = LEVELS[metric]
    p = _p2p(rows, ctx, list(spec.reads))
    if p.empty:
        return P2PTiers(p, np.zeros(0), np.zeros(0, bool), None, lambda _t: np.nan, [])
    failed = p["failed"].to_numpy(bool)
    keep = None if spec.keeps_failed or not failed.any() else ~failed
    value = spec.value(p)
    if metric == "p2p_latency" and ctx.cache is not None:  # the tail's denominator (rate_rows), read once
        ctx.cache[(LATENCY, id(rows))] = value  # (rules._forget lets it go once no tail rule is left)
    tier = p["tier"]
    codes = tier.cat.codes.to_numpy() if keep is None else tier.cat.codes.to_numpy()[keep]
    names = [*tier.cat.categories, np.nan]
    present = [names[c] for c in (np.flatnonzero(np.bincount(codes.astype(np.int64) + 1)) - 1).tolist()]
    cached: dict[object, float] = {}

    def design(t: str) -> float:
        if t not in cached:  # (as the frame's column: a missing value is NaN)
            v = _design(ctx, t, spec.design)
            cached[t] = np.nan if v is None else float(v)
        return cached[t]
    return P2PTiers(p[["src", "dst", "tier"]], value, failed, keep, design, present)


# ------------------------------------------------------------------ the p2p symptom kinds
# The evaluation cache's key, (LATENCY, id(rows)): latency's values over the frame of pairs
# (p2p_tiers), which are the tail's denominator, lat_us row for row: at 131,072 cards a
# column of 50 M rows decoded once for both, not again for the tail.
LATENCY = "_lat_us"


def _tail(p: pd.DataFrame, lat_us: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """metrics.p2p_latency_tail's value over every row of the frame of pairs, and the rows
    its frame keeps (None: it has none); ``lat_us``: the frame's lat_us as latency read it
    (p2p_tiers), else its own column."""
    if "lat_p99_us" not in p or p["lat_p99_us"].isna().all():
        return None
    if lat_us is None:
        lat_us = p["lat_us"].to_numpy(float, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):  # (0 or NaN over 0: as the frame's column)
        value = p["lat_p99_us"].to_numpy(float, na_value=np.nan) / lat_us
    return value, ~p["failed"].to_numpy(bool)


def _corrupted(p: pd.DataFrame, _lat_us: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """metrics.p2p_checksum_failures' value (1: corrupted) and the rows its frame keeps."""
    if "checksum_ok" not in p:
        return None
    ok = p["checksum_ok"]
    known = ok.notna().to_numpy(bool)
    value = np.zeros(len(p))
    value[known & ~ok.to_numpy(bool, na_value=True)] = 1.0
    return value, known & ~p["failed"].to_numpy(bool)


RATES: dict[str, tuple[tuple[str, ...], Callable[..., tuple[np.ndarray, np.ndarray] | None]]] = {
    "p2p_latency_tail": (("lat_us", "lat_p99_us"), _tail),
    "p2p_checksum_failures": (("checksum_ok",), _corrupted)}
NONE = ["src", "dst", "tier", "value", "failed"]  # (the columns of a symptom metric's frame)


def rate_rows(metric: str, rows, ctx: DetectContext, over: float | None, under: float | None) -> pd.DataFrame:
    """The rows of a p2p symptom metric's frame (one of :data:`RATES`) that its search reads
    (:func:`sncheck.health.rates.rows_read` with the bound ``over`` or ``under``), the same
    rows with the same index, without the frame of every row: the values as numpy columns
    over the frame of pairs, only the rows read taken from it (a fleet's tens of millions
    of rows, a few corrupted pairs)."""
    reads, make = RATES[metric]
    lat_us = ctx.cache.get((LATENCY, id(rows))) if ctx.cache is not None and "lat_us" in reads else None
    p = _p2p(rows, ctx, [c for c in reads if lat_us is None or c != "lat_us"])
    if lat_us is not None and len(lat_us) != len(p):  # (not this frame's: read its own)
        lat_us, p = None, _p2p(rows, ctx, list(reads))
    made = None if p.empty else make(p, lat_us)
    if made is None:
        return pd.DataFrame(columns=NONE)
    value, keep = made
    failed = p["failed"].to_numpy(bool)
    beyond = beyond_bound(value, failed, over, under)
    beyond &= keep
    read = read_mask(p, beyond)
    if read is not None:
        keep &= read
    at = np.flatnonzero(keep)
    out = p[["src", "dst", "tier"]].iloc[at]
    out["value"] = value[at]
    out["failed"] = failed[at]
    return out
