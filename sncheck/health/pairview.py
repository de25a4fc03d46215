"""The explainer's inputs (:mod:`sncheck.health.explain`): each tier's pair summaries from a
metric frame, and each card's place in the fabric.

Pair summaries (JUDGING.md ``PairSummary``): the rows of one pair (its repeats: a retest
measures a pair twice or more) become one, its ``ratio`` the median of the repeats (a
repeat that carried nothing counts 0, so a pair failed in most of its repeats has ratio 0
and is failed), in design units: value over the tier's design value, else over the
tier's median; latency and collective time inverted, so below 1 is always worse. For
symptoms a pair shows or not (spikes, corruption) ``ratio`` counts the repeats that
showed it. ``pairs_of`` reads one card's pairs through an index built once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import cached_property
from typing import TypeAlias

import numpy as np
import pandas as pd

from sncheck.health.endstats import Ends
from sncheck.health.pairgroups import TierGroup, tier_groups
from sncheck.model import link_id
from sncheck.topology import Topology


Column: TypeAlias = "np.ndarray | Derived"  # a pair summary column: held, or computed where read (Derived)


class FrameTier:
    """One tier's pair summaries (the :class:`sncheck.health.explain.Tier` protocol)."""

    def __init__(self, name: str, a: np.ndarray, b: np.ndarray, ratio: Column, failed: Column,
                 n_cards: int, exception: np.ndarray, level: float, values: np.ndarray | None = None,
                 design: float = math.nan, peers: np.ndarray | None = None) -> None:
        # ratio and failed: arrays, or (each pair one row, the tier one reference) Derived
        # columns of the values, read by position (pairview.Derived)
        self.name, self.a, self.b = name, a, b
        # (a Derived reads as the column it stands for: by position, a slice, len, np.asarray)
        self.ratio: np.ndarray = ratio  # type: ignore[assignment]
        self.failed: np.ndarray = failed  # type: ignore[assignment]
        self._peers = peers  # None: every pair (no column of True held)
        self.n_cards, self._exception, self.level = n_cards, exception, level
        self.values = values if values is not None else np.asarray(ratio)  # the measured values (for evidence)
        self.design = design

    @property
    def peers(self) -> np.ndarray:
        return self._peers if self._peers is not None else np.ones(len(self.a), bool)

    @cached_property
    def _index(self) -> Ends:
        """:meth:`by_card`'s index, held for the whole search once a candidate's pairs are read
        (:meth:`pairs_of`): 4 bytes a pair where the pairs are sorted by their first ends."""
        return Ends(self.a, self.b, self.n_cards)

    def by_card(self, hold: bool = False) -> Ends:
        """Every pair end by card (:class:`sncheck.health.endstats.Ends`: the first look's
        grouping, :mod:`sncheck.health.firstlook`): the index :meth:`pairs_of` holds, where
        it is built or ``hold`` asks; else one for the caller alone (a tier no candidate's
        pairs are read from, a clean kind's, holds no index)."""
        return self._index if hold else self.__dict__.get("_index") or Ends(self.a, self.b, self.n_cards)

    def pairs_of(self, cards: np.ndarray) -> np.ndarray:
        """Every pair with an end among ``cards`` (positions, ascending, each once)."""
        return self._index.pairs(cards)

    def exceptions(self) -> np.ndarray:
        return np.flatnonzero(self._exception)


def summarise(cells: pd.DataFrame, topo: Topology, *, invert: bool = False, count_above: float | None = None,
              count_below: float | None = None, reference: np.ndarray | None = None,
              exception=None, apart: Collection[str] = (), cache: dict | None = None,
              design_level: float | None = None) -> dict[str, FrameTier]:
    """Per tier, one summary per measured pair of a metric frame (columns src, dst, tier,
    value, failed, and design where the tier has one).

    ``invert``: a time (smaller is better); ``count_above``/``count_below``: a symptom kind
    (each repeat beyond the bound counts); ``reference``: per row, what the value is judged
    against (a stored baseline) instead of the design; ``exception(tier, ratio, failed,
    level) -> bool array``: which summaries are beyond a bar (the explainer's first look);
    ``apart``: cards whose pairs do not set a tier's level where other pairs were measured
    (a retest's suspect: its pairs with its controls outnumber theirs, and a host slowed
    whole was its own level, released as healthy); ``cache``: the evaluation's, where the
    rows' grouping into pairs is shared by the metrics of one frame of pairs
    (:func:`sncheck.health.pairgroups.tier_groups`); ``design_level``: a tier whose every pair is
    ``apart``'s and whose rows carry a design has that level (design units: the stress narrowing with
    no control, :mod:`sncheck.health.pairratio`), not the median of its own pairs."""
    if cells.empty:
        return {}
    value = cells["value"].to_numpy(float)
    failed = cells["failed"].to_numpy(bool) if "failed" in cells else np.zeros(len(cells), bool)
    # no design column (spikes, corruption): none, not a column of NaN for every row
    design = cells["design"].to_numpy(float) if "design" in cells else None
    if reference is not None:
        design = np.asarray(reference, dtype=float)
    return summarise_rows(tier_groups(cells, topo.card_table, cache), value, failed, design, topo, invert=invert,
                          count_above=count_above, count_below=count_below, exception=exception, apart=apart,
                          design_level=design_level)


DERIVE = True  # a tier of one row a pair and one reference holds Derived columns (tests compare both ways)

# What a tier's rows are judged against: a column per row, or one value per tier (by its name).
Design = np.ndarray | Callable[[str], float] | None


def summarise_rows(groups: Iterable[TierGroup], value: np.ndarray, failed: np.ndarray, design: Design,
                   topo: Topology, *, invert: bool = False, count_above: float | None = None,
                   count_below: float | None = None, exception=None,
                   apart: Collection[str] = (), design_level: float | None = None) -> dict[str, FrameTier]:
    """:func:`summarise` of the rows ``groups`` gives (:func:`sncheck.health.pairgroups.tier_groups`),
    whose ``value``, ``failed`` and ``design`` are columns in the same row space: a metric
    frame's, or the frame of pairs a metric selects its rows from (:mod:`sncheck.health.p2ptiers`).
    ``design`` may instead give each tier's one value by its name (an inventory's)."""
    table = topo.card_table
    out = {}
    kept = table.index.get_indexer(list(apart))
    kept = kept[kept >= 0]
    for item in groups:
        t, at, inverse, pa, pb = item
        item.clear()  # (each column of the tier's rows let go as soon as the summaries no longer need it)
        v, f = value[at], failed[at]
        d = tier_reference(design(t) if callable(design) else design, at)
        del at
        n = len(pa)
        # (at 131,072 cards every one is 40 M values: what is alive at once is the peak)
        tier_design = d if isinstance(d, float) else \
            design_of(d) if d is not None and np.isfinite(d).any() else math.nan
        derive: float | None = None  # (Derived below)
        if count_above is not None or count_below is not None:
            del d
            beyond = beyond_bound(v, f, count_above, count_below)
            weights = beyond.astype(float)
            del beyond
            ratio = np.bincount(inverse, weights=weights, minlength=n)
            del weights
            summary_failed = np.zeros(n, bool)
            v[f] = np.nan  # (the tier's own copy of its values: the measured ones in place, no second column)
            del f
            values = _median_by(inverse, v, n)
            level = 1.0
            del v, inverse
        else:
            ok_v = v  # (the tier's own copy of its values: the measured ones in place, no second column)
            ok_v[f | ~np.isfinite(v)] = np.nan
            del v
            # what each row is over: the tier's one design, the rows' own, else their median
            ref = d if d is None or isinstance(d, float) or np.isfinite(d).any() else None
            del d
            if not isinstance(ref, float) and (ref is None or not np.isfinite(ref).all()):
                med = float(np.nanmedian(ok_v)) if np.isfinite(ok_v).any() else math.nan
                ref = med if ref is None else np.where(np.isfinite(ref) & (ref > 0), ref, med)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = ref / ok_v if invert else ok_v / ref
            r[f] = 0.0  # a repeat that carried nothing counts 0
            del f
            ratio = _median_by(inverse, r, n)
            del r
            values = _median_by(inverse, ok_v, n)
            # each pair one row, divided by one value: its ratio and failed flag are its
            # value's, computed where read (Derived), not held for every pair
            derive = ref if DERIVE and len(inverse) == n and isinstance(ref, float) else None
            del ok_v, inverse, ref
            summary_failed = ~(ratio > 0)
            ratio[summary_failed] = np.nan  # (a fresh array: _median_by's own)
        peers = ~(np.isin(pa, kept) | np.isin(pb, kept)) if len(kept) else np.ones(len(pa), bool)
        # nothing measured beside the subject's own pairs: they are the level, unless design is their control
        # (pairratio: no pair is any card's peer, design's level is each one's)
        by_design = design_level is not None and len(kept) and math.isfinite(tier_design) \
            and count_above is None and count_below is None
        if not np.isfinite(_at(ratio, peers)).any() and not by_design:
            peers[:] = True
        if count_above is None and count_below is None:
            of_peers = _at(ratio, peers)
            level = float(np.nanmedian(of_peers)) if np.isfinite(of_peers).any() else \
                design_level if by_design and design_level is not None else math.nan
            del of_peers
        exc = exception(t, ratio, summary_failed, level) if exception is not None else \
            (summary_failed | (ratio > 0) if count_above is not None or count_below is not None else summary_failed)
        exc = np.asarray(exc, bool)
        held: tuple[Column, Column] = (ratio, summary_failed) if derive is None else \
            (Derived(values, derive, invert), Derived(values, derive, invert, failed=True))
        del ratio, summary_failed
        out[t] = FrameTier(t, pa, pb, *held, len(table), exc, level, values, tier_design,
                           None if peers.all() else peers)
    return out


class Derived:
    """A level kind's pair ratios (``failed``: its failed flags) where each pair is one row
    and the tier's rows are divided by one value (an inventory's design, else the tier's
    median): each computed from the pair's measured value for the positions read, as
    :func:`summarise_rows` computes it (the same division: the same float), never held for
    every pair (9 bytes a pair: at 131,072 cards ~450 MB through the bandwidth search).
    ``np.asarray`` of it is the whole column."""

    def __init__(self, values: np.ndarray, ref: float, invert: bool, failed: bool = False) -> None:
        self.values, self.ref, self.invert, self.failed = values, ref, invert, failed

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, at):
        v = self.values[at]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = self.ref / v if self.invert else v / self.ref
        bad = ~(r > 0)  # failed: NaN (a repeat that carried nothing, or no finite value), or not above 0
        if self.failed:
            return bad
        if np.ndim(r) == 0:
            return np.float64(np.nan) if bad else r
        r[bad] = np.nan
        return r

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self[slice(None)]
        return out if dtype is None else out.astype(dtype)


def measured(x, at=slice(None)) -> np.ndarray:
    """A tier's pairs ``at`` (every pair: the whole column): their ratios, NaN where failed (a new array)."""
    if isinstance(x.ratio, Derived):
        return x.ratio[at]  # (NaN where failed already)
    return np.where(x.failed[at], np.nan, x.ratio[at])


class Measured:
    """A tier's :func:`measured` ratios read by position (``[at]``), never made whole."""

    def __init__(self, x) -> None:
        self.x = x

    def __len__(self) -> int:
        return len(self.x.a)

    def __getitem__(self, at) -> np.ndarray:
        return measured(self.x, at)


SLICE = 1 << 22  # pairs whose measured ratios are made at once (measured_slices)


def measured_slices(x) -> Iterator[tuple[int, np.ndarray]]:
    """A tier's :func:`measured` ratios a slice of :data:`SLICE` pairs at a time (the first
    pair's position, the slice's ratios): at fleet size a column of every pair is ~400 MB."""
    for lo in range(0, len(x.a), SLICE):
        yield lo, measured(x, slice(lo, lo + SLICE))


def measured_below(x, bound: float) -> np.ndarray:
    """The pairs whose measured ratio is below ``bound`` (positions, ascending; NaN is not)."""
    parts = [np.zeros(0, np.int64)]
    with np.errstate(invalid="ignore"):
        parts += [np.flatnonzero(q < bound) + lo for lo, q in measured_slices(x)]
    return np.concatenate(parts)


STEP = 1 << 20  # rows whose design values are read at once (tier_reference)


def tier_reference(design: np.ndarray | float | None, at: np.ndarray) -> float | np.ndarray | None:
    """What a tier's rows ``at`` are judged against (a column per row: the design, or a
    stored baseline): the one value they all give, where it is finite and positive (an
    inventory gives one design per tier), read a slice of rows at a time and never
    copied whole; else their own values (a copy); None without a column. Divided by
    that one value, each row's ratio is the same float as by a column of it. ``design``
    one value (the tier's): as a column of it would be."""
    if design is None:
        return None
    if not isinstance(design, np.ndarray):
        value = float(design)
        return value if len(at) and 0 < value < 1e300 else np.full(len(at), value)
    lo, hi, gaps = math.inf, -math.inf, False
    for i in range(0, len(at), STEP):
        part = design[at[i:i + STEP]]
        lo, hi, gaps = min(lo, float(part.min())), max(hi, float(part.max())), gaps or bool(np.isnan(part).any())
        if gaps or lo != hi:
            break
    if len(at) and not gaps and lo == hi and 0 < lo < 1e300:
        return lo
    return design[at]


def design_of(d: np.ndarray) -> float:
    """``np.nanmedian(d)``, the tier's design value, to the bit; where every value given is
    one (an inventory gives one design per tier) that value, read in two passes without a
    copy of the column (a fleet's tier: tens of millions of rows; a median partitions a copy)."""
    lo, hi = np.nanmin(d), np.nanmax(d)  # (zero and the largest floats: as the median gives them, -0.0 and overflow)
    return float(lo) if lo == hi and 0 < abs(lo) < 1e300 else float(np.nanmedian(d))


def beyond_bound(value: np.ndarray, failed: np.ndarray, above: float | None, below: float | None) -> np.ndarray:
    """Which rows of a symptom kind count (:func:`summarise`'s ``count_above`` or
    ``count_below``): beyond the bound and not failed (NaN is never beyond)."""
    with np.errstate(invalid="ignore"):
        out = (value > above) if above is not None else (value < below)
    out &= ~failed
    return out


def _at(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``values[mask]``, without a copy where the mask keeps every value."""
    return values if mask.all() else values[mask]


def _median_by(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The median of ``values`` per group code (NaN skipped; NaN where a group has none).
    ``group``: a grouping's codes (:func:`sncheck.health.pairgroups.tier_groups`: every
    code below ``n`` has a row), so as many rows as codes is one row each: no mask of
    which codes were seen (a fleet's pairs are each measured once: two scatters of every
    pair per metric were one)."""
    if len(group) == n:
        out = np.empty(n)
        out[group] = values
        return out
    out = np.full(n, np.nan)
    keep = ~np.isnan(values)
    if keep.any():  # pandas' grouped median: a linear selection per group, not a sort of every value
        med = pd.Series(values[keep]).groupby(group[keep]).median()
        out[med.index.to_numpy()] = med.to_numpy()
    return out


class FabricPaths:
    """Each card's host, supernode and rail NIC's leaf, and each scale-out pair's spine
    (the :class:`sncheck.health.explain.Paths` protocol) over the topology's cards."""

    def __init__(self, topo: Topology) -> None:
        table = topo.card_table
        self.topo = topo
        self.cards: list[str] = list(table.index)
        self.hosts: list[str] = list(topo.hosts)
        self.supernodes: list[str] = list(topo.supernode_names)
        # (each card's host and supernode code: one hash lookup of the column, no dict read per card)
        self.host = pd.Index(self.hosts).get_indexer(table["host"]).astype(np.int64, copy=False)
        self.sn = pd.Index(self.supernodes).get_indexer(table["supernode"]).astype(np.int64, copy=False)
        self.rail = table["rail"].to_numpy(np.int64)
        # The leaf each card's rail NIC hangs off, and the spines (sncheck.fabric: the
        # inventory's fabric, else one leaf per rail and no spine). Cards are in topology
        # order there as here.
        self.fabric = topo.fabric
        self.leaves: list[str] = list(self.fabric.leaf_names)
        self.leaf = np.asarray(self.fabric.card_leaf, dtype=np.int64)
        self.spines: list[str] = list(self.fabric.spine_names)
        # how many hosts each supernode holds: its distinct (supernode, host) codes, as one key each
        per_sn = np.bincount(np.unique(self.sn * max(1, len(self.hosts)) + self.host) // max(1, len(self.hosts)),
                             minlength=len(self.supernodes))
        self.one_host_domain = per_sn <= 1
        self._members: dict[tuple[str, int], np.ndarray] = {}

    @cached_property
    def code(self) -> dict[str, int]:
        """Each card's code by its name (built once: a fleet's 131,072 cards took 44 ms a dict)."""
        return {c: i for i, c in enumerate(self.cards)}

    def spine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The spine each scale-out pair of cards crosses (-1: none)."""
        return self.fabric.spines_between(self.leaf[a], self.leaf[b])

    def members(self, kind: str, code: int) -> np.ndarray:
        """The card codes a host, supernode or leaf holds (a leaf: the cards of its NICs)."""
        key = (kind, code)
        if key not in self._members:
            column = {"host": self.host, "supernode": self.sn, "leaf": self.leaf}[kind]
            self._members[key] = np.flatnonzero(column == code)
        return self._members[key]

    def nic(self, card: int) -> str:
        return f"{self.hosts[self.host[card]]}/nic{self.rail[card]}"

    def link(self, a: int, b: int) -> str:
        return link_id(self.cards[a], self.cards[b])
