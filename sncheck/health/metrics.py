"""Metrics: named views of the result rows that rules judge.

A metric is a pure function ``(rows, ctx) -> DataFrame``. Two shapes:

* **pairs**: one row per tested card pair, columns ``src, dst, tier, value, failed``
  (plus ``design`` where the tier has one; the stress layer's pair metrics also
  ``link``: a p2p pair's link is its two ends' ``link_id``, never carried as text per row). Rules over pairs are localized:
  one bad pair is a link, a card bad with most partners is the card, and so on.
* **entities**: one row per entity, columns ``entity, kind, value`` (plus ``expected``,
  ``message``, ``status`` where useful).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from sncheck.health import fabric, groups, injob, kernel, tails, tried
from sncheck.health.lateness import fit
from sncheck.health.pairratio import pair_ratio, pairs_of
from sncheck.health.rankrows import COLUMNS, rank_rows
from sncheck.store import frames as columns
from sncheck.store.frames import RowFrames, fact_rows, rows_where
from sncheck.config.inventory import Inventory, TierDesign, tier_design
from sncheck.topology import Topology
from sncheck.model import card_id, card_of, host_of, link_id, on_fabric

PAIRS, ENTITIES, GROUPS = "pairs", "entities", "groups"


@dataclass
class DetectContext:
    topo: Topology
    design: dict[str, TierDesign]
    reference: dict | None = None   # golden curve (or one per replica size: reference_of)
    baseline: dict | None = None    # from `sncheck baseline make`
    large_bytes: int = 1 << 20      # from here busbw is bandwidth-bound
    small_bytes: int = 64 << 10     # up to here time is latency-bound
    # Metric frames shared by the rules of one evaluation (rules.evaluate turns it on).
    cache: dict | None = field(default=None, repr=False)
    history: dict | None = None     # earlier runs' per-card summaries (the drift op; state store)
    # Culprits already named ((entity, kind): earlier layers, the retest's other suspects)
    # and the suspect a retest judges: pairs through a known culprit never feed another
    # entity's measurement that mixes both ends (pairwise collectives), drift or history.
    known: frozenset[tuple[str, str]] = frozenset()
    subject: str | None = None
    # Known host or supernode culprits not told from their cards (``separated: false``): a per-card measurement
    # still judges their cards.
    untold: frozenset[str] = frozenset()
    # Slow groups a named culprit sits on that read slower than its own measured factor explains (the stress
    # layer's groups.beyond_culprits: group -> the culprit, its factor, the size from which): judged from there
    beyond: dict = field(default_factory=dict)
    factors: dict = field(default_factory=dict)  # of the known culprits, each one's measured factor (health.within)
    narrowed: frozenset[str] = frozenset()  # the stress narrowing's suspects (apart_cards)
    shown: frozenset[tuple[str, str]] = frozenset()  # (card, rule): a retest's other suspects' (rates.explain_rates)
    tried: tuple | None = field(default=None, repr=False)  # the cards the p2p rows tried (health.tried)
    # Cards of this layer's own culprits its retest released (run.rejudge): their pairs measured before were a
    # transient's symptom, evidence of no other entity (pairwise collectives); they explain no group
    released: frozenset[str] = frozenset()

    def culprit_cards(self, subject: bool = True) -> set[str]:
        """The cards the known culprits hold (with the retest's suspect, unless ``subject`` is False)."""
        out: set[str] = set()
        for entity, kind in self.known:
            if subject or entity != self.subject:
                out |= set(cards_held(entity, kind, self.topo))
        return out

    def subject_cards(self) -> set[str]:
        """The cards whose pairs are the retest's subject's own: the cards it holds, a
        switch's or a cable's NICs' (none outside a retest, none for a link between cards)."""
        out: set[str] = set()
        for entity, kind in self.known:
            if entity == self.subject:
                out |= {card_of(n) for n in self.topo.fabric.nics_of(entity)} if on_fabric(entity, kind) else \
                    set(cards_held(entity, kind, self.topo))
        return out

    def apart_cards(self) -> set[str]:
        """Cards whose pairs set no tier's level where others were measured: a retest's subject's, else the
        narrowing's suspects (a 4x card was 3 of its host's 6 pairs, their median: it read 1.6x, reviews19 #4)."""
        return self.subject_cards() or set(self.narrowed)

    def explained_pairs(self, src: pd.Series, dst: pd.Series) -> np.ndarray:
        """Per pair (card ids): whether its path crosses a known link or switch culprit (not
        the retest's subject). Such a culprit holds no card of its own (:func:`cards_held`),
        but the pairs through it are its symptom and say nothing of the cards at their ends."""
        out = np.zeros(len(src), bool)
        links = {e for e, k in self.known if k == "link" and not on_fabric(e, k) and e != self.subject}
        switches = [e for e, k in self.known if on_fabric(e, k) and e != self.subject]  # a cable: by its routes
        if not links and not switches:
            return out
        a, b = src.astype(str).to_numpy(), dst.astype(str).to_numpy()
        if links:
            out |= np.fromiter((link_id(x, y) in links for x, y in zip(a, b)), bool, len(a))
        return out | self.topo.fabric.through_any(switches, a, b)

    def untold_members(self) -> dict[str, list[str]]:
        """Each known culprit not told from its cards: its cards."""
        return {e: cards_held(e, k, self.topo) for e, k in self.known if e in self.untold and e != self.subject}

    def take(self, name: str, rows: pd.DataFrame) -> pd.DataFrame:
        """A metric's frame for its last reader: out of the cache (or computed), so it goes
        with that reader, not with the evaluation (at fleet size its value columns are
        hundreds of MB, not needed once the pair summaries are made)."""
        frame = self.metric(name, rows)
        if self.cache is not None:
            self.cache.pop((name, id(rows)), None)
        return frame

    def metric(self, name: str, rows: pd.DataFrame) -> pd.DataFrame:
        """A metric's frame; computed once per evaluation when several rules share it."""
        if self.cache is None:
            return METRICS[name].fn(rows, self)
        key = (name, id(rows))
        if key not in self.cache:
            self.cache[key] = METRICS[name].fn(rows, self)
        return self.cache[key]


def cards_held(entity: str, kind: str, topo: Topology) -> list[str]:
    """The cards a culprit holds: a card (a NIC: its card), every card of a host or supernode (a link none)."""
    if kind == "card":
        return [entity]
    if kind == "nic":
        return [card_of(entity)]
    if kind == "host" and entity in topo.inventory.hosts:
        return topo.cards_of_host(entity)
    if kind == "supernode":
        return topo.cards_of_supernode(entity)
    return []


def rows_context() -> DetectContext:
    """A context for the pair metrics of p2p rows alone (baselines, run summaries): they carry their tier."""
    return DetectContext(topo=Topology(Inventory("<rows only>", (), {})), design={})


@dataclass(frozen=True)
class Metric:
    name: str
    layer: str
    shape: str
    unit: str
    fn: Callable[[pd.DataFrame, DetectContext], pd.DataFrame]
    description: str
    # The row kinds it reads: where none is among a frame's rows its frame is empty and
    # no rule of it can judge anything there (a retest re-reads one measurement's kinds).
    reads: tuple[str, ...] = ()


def kind_rows(rows: pd.DataFrame | RowFrames, kind: str, only: Sequence[str] | None = None,
              keep: bool = True) -> pd.DataFrame:
    """One kind's rows (only the columns ``only`` where given): from the run store's
    frames, or from one frame of all kinds (``keep``: :func:`sncheck.store.frames.kind_rows`)."""
    return columns.kind_rows(rows, kind, only, keep)


def _design(ctx: DetectContext, tier: str, attr: str) -> float:
    d = tier_design(ctx.design, tier)
    return getattr(d, attr) if d else math.nan


def _design_column(p: pd.DataFrame, ctx: DetectContext, attr: str) -> pd.Series:
    return p["tier"].map({t: _design(ctx, t, attr) for t in p["tier"].unique()}).astype(float)


def _p2p(rows: pd.DataFrame, ctx: DetectContext, values: Sequence[str] = ()) -> pd.DataFrame:
    """The p2p rows' pair columns (``PAIR_ROWS``, and ``failed``) once per evaluation, as
    lean as the metrics allow (a fleet has tens of millions of rows): ids as categoricals,
    no link text (a link is its two ends' ``link_id``), nothing the row view keeps beside
    them; with the columns ``values`` read for this caller alone, row for row (never held
    for the whole evaluation: each is one metric's). ``checksum_ok`` comes as a masked
    boolean, not a Python object per row.

    Callers get a shallow copy: they add columns, never change the shared ones."""
    key = ("_p2p", id(rows))
    read = None
    if ctx.cache is not None and key in ctx.cache:
        p, keep = ctx.cache[key]
    else:
        # What the metrics read (a run store reads no more); without a cache, in one read; with one, the
        # pair columns alone, their rows chosen before any values are read (at 131k cards 400 MB a column)
        p = kind_rows(rows, "p2p", PAIR_ROWS if ctx.cache is not None else [*PAIR_ROWS, *values],
                      keep=ctx.cache is None)
        if p.empty:
            return pd.DataFrame(columns=["src", "dst", "tier", "value", "failed"])
        read = p if values and ctx.cache is None else None
        unreachable = (p["status"] == "unreachable").to_numpy(bool)  # an unreachable host is the host's finding
        keep = ~unreachable if unreachable.any() else None
        p = p[PAIR_ROWS] if keep is None else rows_where(p[PAIR_ROWS], keep)
        p["failed"] = (p["status"] != "ok").to_numpy(bool)
        p["tier"] = _tiers_filled(p, ctx)
        p["src"], p["dst"] = shared_categories(p["src"], p["dst"])
        # Categoricals: a row selection then moves integer codes, not millions of strings.
        for col in ("tier", "status"):
            p[col] = p[col].astype("category")
        if ctx.cache is not None:
            ctx.cache[key] = (p, keep)
        tried.note(ctx, rows, p)  # (connectivity's coverage: the cards tried, not read again)
    p = p.copy(deep=False)
    own = read is None and bool(values)
    if own:  # read for this caller alone: each column let go once its rows are taken
        read = kind_rows(rows, "p2p", values, keep=False)
    for col in values:
        assert read is not None
        v = (read.pop(col) if own else read[col]).to_numpy()  # (a Series is taken as it is; an array, copied)
        p[col] = pd.Series(v if keep is None else v[keep], index=p.index, copy=False)
        del v
        if col == "checksum_ok" and p[col].dtype == object:  # truths or missing (as the parts hold them): masked at
            v = p[col].to_numpy()  # once, not pandas' check and conversion of each (4 s of 50 M rows at 131k; this 2 s)
            p[col] = pd.arrays.BooleanArray(v.astype(bool), pd.isna(v)) \
                if pd.api.types.infer_dtype(v, skipna=True) == "boolean" else p[col].astype("boolean")
    return p


def _tiers_filled(p: pd.DataFrame, ctx: DetectContext) -> pd.Series:
    """The rows' tiers; a row written with none (a job that named no supernode for a host of
    the pair, a part whose tier column is null) takes its pair's tier under the inventory,
    where both cards are the inventory's: judged in its tier, never a crash nor left out."""
    tier = p["tier"]
    blank = np.flatnonzero(tier.isna().to_numpy())
    if not len(blank):
        return tier
    out = tier.astype(object).to_numpy(copy=True)
    index = ctx.topo.card_table.index
    src, dst = p["src"].iloc[blank].astype(str), p["dst"].iloc[blank].astype(str)
    known = (index.get_indexer(src) >= 0) & (index.get_indexer(dst) >= 0)
    out[blank[known]] = ctx.topo.tiers(src[known], dst[known]).to_numpy()  # the columns at once
    return pd.Series(out, index=tier.index)


PAIR_ROWS = ["src", "dst", "tier", "status"]    # the p2p columns every p2p metric reads
PAIR_CELLS = ["src", "dst", "tier", "failed"]   # what every p2p metric frame carries, with its value


def _where(frame: pd.DataFrame, keep: pd.Series | np.ndarray) -> pd.DataFrame:
    """``frame[keep]``, without moving millions of rows when every row is kept."""
    keep = np.asarray(keep, dtype=bool)
    return frame if keep.all() else frame[keep]


def shared_categories(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Two id columns as categoricals over one set of categories (one hash pass, in
    order of first appearance), so cards compare and group by their integer codes."""
    if isinstance(a.dtype, pd.CategoricalDtype) and a.dtype == b.dtype:
        return a, b
    codes, uniques = pd.factorize(pd.concat([a.astype(str), b.astype(str)], ignore_index=True))
    dtype = pd.CategoricalDtype(uniques)
    return (pd.Series(pd.Categorical.from_codes(codes[:len(a)], dtype=dtype), index=a.index, name=a.name),
            pd.Series(pd.Categorical.from_codes(codes[len(a):], dtype=dtype), index=b.index, name=b.name))


def _mean_of_two(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Row-wise mean of two columns, skipping NaN (as ``DataFrame.mean(axis=1)``); in
    place over one array (at fleet size each temporary is a column of every pair)."""
    x, y = a.to_numpy(float, na_value=np.nan), b.to_numpy(float, na_value=np.nan)
    # the one float column made: each NaN as 0, the sum, over 2 where both are numbers, 1 where
    # one is (the same float, signed zeros too), NaN where neither (no temporary column of every row)
    out = np.array(x, dtype=float)
    nx = np.isnan(out)
    out[nx] = 0.0
    ny = np.isnan(y)
    np.add(out, y, out=out, where=~ny)
    np.add(out, 0.0, out=out, where=ny)
    both = ~nx
    both &= ~ny
    np.divide(out, 2.0, out=out, where=both)
    nx &= ny
    out[nx] = np.nan
    return out


def _cells(p: pd.DataFrame, value: str, keep: np.ndarray | pd.Series | None = None) -> pd.DataFrame:
    """The pair cells of a p2p metric: the shared columns and ``value`` (rows ``keep``);
    only these columns are copied where rows are dropped."""
    out = p[[*PAIR_CELLS, value]]
    return out if keep is None else _where(out, keep)


def p2p_bandwidth(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    p = _p2p(rows, ctx, ["bw_GBps", "bw_rev_GBps"])
    if p.empty:
        return p
    # The mean of the two directions: half the noise of either; a link slow one way
    # still shows (at half its loss), and a link dead one way has failed outright.
    out = p[[*PAIR_CELLS, "status"]]
    out["value"] = _mean_of_two(p["bw_GBps"], p["bw_rev_GBps"])
    out["design"] = _design_column(p, ctx, "bandwidth_GBps")
    return out[["src", "dst", "tier", "value", "failed", "design", "status"]]


def p2p_latency(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    p = _p2p(rows, ctx, ["lat_us"])
    if p.empty:
        return p
    p = _cells(p, "lat_us", ~p["failed"]).rename(columns={"lat_us": "value"})
    p["value"] = p["value"].astype(float)
    p["design"] = _design_column(p, ctx, "latency_us")
    return p[["src", "dst", "tier", "value", "failed", "design"]]


def p2p_latency_tail(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """p99 over median of the same pair's ping-pongs: spikes, not a steady slowness."""
    p = _p2p(rows, ctx, ["lat_us", "lat_p99_us"])
    if p.empty or "lat_p99_us" not in p or p["lat_p99_us"].isna().all():
        return pd.DataFrame(columns=["src", "dst", "tier", "value", "failed"])
    keep = ~p["failed"].to_numpy(bool)
    out = _cells(p, "lat_p99_us", keep).rename(columns={"lat_p99_us": "value"})
    out["value"] = out["value"].astype(float) / p["lat_us"].to_numpy(float, na_value=np.nan)[keep]
    return out[["src", "dst", "tier", "value", "failed"]]


def p2p_checksum_failures(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    p = _p2p(rows, ctx, ["checksum_ok"])
    if p.empty or "checksum_ok" not in p:
        return pd.DataFrame(columns=["src", "dst", "tier", "value", "failed"])
    out = _cells(p, "checksum_ok", ~p["failed"] & p["checksum_ok"].notna())
    out["value"] = (~out.pop("checksum_ok").astype(bool)).astype(int)
    return out[["src", "dst", "tier", "value", "failed"]]


def pair_busbw(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """Pairwise collectives at bandwidth-bound sizes: busbw over the median of the tier, at
    the pair's worst size (the narrowing measures one, or where a group was slow, two)."""
    return pair_ratio(rows, ctx, "busbw_GBps", large=True)


def pair_small_time(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """Pairwise collectives at latency-bound sizes: time over the median of the tier."""
    out = pair_ratio(rows, ctx, "time_us", large=False)
    out["failed"] = False  # a pair that failed outright is pair_busbw's finding
    return out


def pair_wrong(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    pairs = pairs_of(rows, ctx)
    if pairs.empty:
        return pd.DataFrame(columns=["src", "dst", "link", "tier", "value", "failed"])
    pairs["wrong"] = pairs["wrong"].fillna(0)
    out = pairs.groupby("link").agg(src=("src", "first"), dst=("dst", "first"), tier=("tier", "first"),
                                    value=("wrong", "sum")).reset_index()
    out["failed"] = False
    return out


RANK_SKEW = COLUMNS  # what rank_skew reads of the rank rows (a piece at a time: millions at fleet size)


def rank_skew(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Each card's launch lateness over the collectives it took part in (not the narrowing
    pairs). A slow rank arrives last and waits least: skew is the signal."""
    ranks = rank_rows(rows)  # (codes and values, read a piece at a time: 29 M rows at 131,072 cards)
    cells = ranks.collectives()
    if not cells.any():
        return pd.DataFrame(columns=["entity", "kind", "value"])
    # each card's lateness (sncheck.health.lateness) and its spread (MAD: sncheck.health.ops.few_cards)
    per_card, spread = fit(ranks, cells)
    return pd.DataFrame({"entity": per_card.index, "kind": "card", "value": per_card.to_numpy(),
                         "spread": spread.to_numpy()})


def _failed_facts(rows: pd.DataFrame, warning: bool) -> pd.DataFrame:
    """Failed facts, one entry per culprit: the cards a row's ``cards`` names (the tool said which), else its host."""
    bad = fact_rows(rows, ["status", "ok"], lambda f: (f["status"] == "ok") & ~f["ok"].astype(bool))
    if bad.empty:
        return pd.DataFrame(columns=["entity", "kind", "value"])
    is_warning = bad["severity"].eq("warning") if "severity" in bad else pd.Series(False, index=bad.index)
    bad = bad[is_warning if warning else ~is_warning]
    # A fact about a pair of hosts (a perftest pair on one rail) names its link.
    entity, kind = bad["host"].astype(object), pd.Series("host", index=bad.index, dtype=object)
    if "entity" in bad:
        named = bad["entity"].notna()
        entity = entity.where(~named, bad["entity"].astype(object))
        kind = kind.where(~named, bad["entity_kind"].astype(object))
    out = pd.DataFrame({
        "entity": entity, "kind": kind, "value": 1, "fact": bad["fact"],
        "measured": bad["value"], "expected": bad["expected"], "message": bad["message"],
        "tool": bad["tool"] if "tool" in bad else None,
    })
    if "cards" not in bad or out.empty:
        return out
    named = bad["cards"].map(lambda c: isinstance(c, dict) and bool(c)).to_numpy(bool)
    if not named.any():
        return out
    per_card = []
    for (_, r), host, cards in zip(out[named].iterrows(), bad.loc[named, "host"], bad.loc[named, "cards"]):
        for index, what in cards.items():
            card = card_id(str(host), int(index))
            per_card.append({**r.to_dict(), "entity": card, "kind": "card", "message": f"{card}: {what}"})
    return pd.concat([out[~named], pd.DataFrame(per_card, columns=out.columns)], ignore_index=True)


def host_fact_failures(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Host facts that were read and are wrong (a count, a link down, an ECC error)."""
    return _failed_facts(rows, warning=False)


def host_fact_warnings(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Host facts that were read and are wrong at warning level (row severity "warning")."""
    return _failed_facts(rows, warning=True)


MISSING_COLUMNS = ["entity", "kind", "value", "status", "layer", "fact", "tool", "message", "skipped"]


def missing(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """What should have been measured and was not: unreachable, timed out, tool
    missing, parse failed, not run. Always a finding, never a pass."""
    parts = []
    bad = fact_rows(rows, ["status"], lambda f: ~f["status"].isin(["ok", "skipped"]))
    if not bad.empty:
        message = bad["message"].astype(object).where(bad["message"].notna() & (bad["message"] != ""),
                                                      bad["host"].astype(str) + ": " + bad["fact"].astype(str)
                                                      + ": " + bad["status"].astype(str))
        parts.append(pd.DataFrame({
            "entity": bad["host"], "kind": "host", "value": 1, "status": bad["status"], "layer": bad["layer"],
            "fact": bad["fact"], "tool": bad["tool"] if "tool" in bad else None, "message": message,
            "skipped": bad["skipped"] if "skipped" in bad else None}))
    nr = kind_rows(rows, "not_run")
    if not nr.empty:
        entity, kind = nr["entity"].astype(str), nr["entity_kind"].astype(str)
        # A group that did not run is its host when it lies on one, else its supernode.
        prefix, rest = entity.str.partition(":")[0], entity.str.partition(":")[2]
        cards = rest.map(ctx.topo.card_table["host"].value_counts()).fillna(0)
        on_host = (kind == "group") & (((prefix == "host") & (cards > 0)) | (prefix == "card"))
        host = rest.where(prefix == "host", rest.str.rsplit("/", n=1).str[0])
        parts.append(pd.DataFrame({
            "entity": entity.where(~on_host, host),
            "kind": kind.where(kind != "group", on_host.map({True: "host", False: "supernode"})),
            "value": 1, "status": nr["status"], "layer": nr["layer"], "fact": None, "tool": None,
            "message": nr["message"], "skipped": None}))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=MISSING_COLUMNS)
    out = pd.concat(parts, ignore_index=True)[MISSING_COLUMNS]
    return out.astype({"fact": object, "tool": object, "message": object})


def _group_members(group_id: str, topo: Topology) -> list[str]:
    kind, _, rest = group_id.partition(":")
    if kind == "host" and rest in topo.inventory.hosts:
        return topo.cards_of_host(rest)
    if kind == "card":
        return [rest]
    return []


def golden_loss(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """Per golden replica (group, stage): its loss curve as a list, for the band check."""
    g = kind_rows(rows, "golden")
    if g.empty:
        return pd.DataFrame(columns=["group", "stage", "loss", "step_time_s", "members"])
    g = g[g["group"].notna() & g["stage"].notna()]
    if g.empty:
        return pd.DataFrame(columns=["group", "stage", "loss", "step_time_s", "members"])
    by = g.groupby(["group", "stage"], sort=True, observed=True)
    replica = by.ngroup().to_numpy()
    order = np.lexsort((g["step"].to_numpy(), replica))  # by replica, each in step order
    starts = np.flatnonzero(np.r_[True, replica[order][1:] != replica[order][:-1]])
    curves = np.split(g["loss"].astype(float).to_numpy()[order], starts[1:])
    keys = by.size().index
    return pd.DataFrame({"group": keys.get_level_values(0).astype(object),
                         "stage": keys.get_level_values(1).astype(object), "loss": curves,
                         "step_time_s": by["step_time_s"].median().to_numpy(float),
                         "members": [_group_members(group, ctx.topo) for group in keys.get_level_values(0)]})


def golden_step_time(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """Per host replica: median step time over its size's golden reference's (:func:`reference_of`);
    ``measured``/``expected`` the two step times, in seconds (reviews20 #8: said as "x golden")."""
    g = golden_loss(rows, ctx)
    if g.empty or not ctx.reference:
        return pd.DataFrame(columns=["entity", "kind", "value"])
    g = g[(g["stage"] == "group") & g["group"].str.startswith("host:")]
    ref = pd.Series([(reference_of(ctx.reference, len(m)) or {}).get("step_time_s") for m in g["members"]],
                    index=g.index, dtype=float)
    g, ref = g[ref > 0], ref[ref > 0]
    if g.empty:
        return pd.DataFrame(columns=["entity", "kind", "value"])
    return pd.DataFrame({"entity": g["group"].str.removeprefix("host:"), "kind": "host", "value": g["step_time_s"] / ref,
                         "measured": g["step_time_s"], "expected": ref, "measured_unit": "s"})


def reference_of(reference: dict | None, ranks: int) -> dict | None:
    """The golden curve that judges a replica of ``ranks`` ranks: a reference set's curve of
    that size (``sizes``: one curve per replica size, :func:`sncheck.layers.golden.reference_set`),
    None where its size has none; else the one reference (which fits every replica: the runner
    drops one recorded for another size)."""
    if not reference:
        return None
    sizes = reference.get("sizes")
    return reference if sizes is None else sizes.get(ranks)


def replica_ranks_of(members: tuple, stage: str, topo: Topology | None) -> int:
    """The ranks of the replica a curve judges: its own, or for a card trained alone its host's
    replica (a replica is a host's cards: probeplan.golden_groups)."""
    if stage == "solo" and topo is not None and members and members[0] in topo.by_id:
        return len(topo.cards_of_host(host_of(members[0])))
    return len(members)


P2P, FACTS, COLL, GOLDEN, FR = ("p2p",), ("host_fact",), ("collective",), ("golden",), ("fr", "fr_pg")
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("p2p_bandwidth", "connectivity", PAIRS, "GB/s", p2p_bandwidth,
           "one-direction bandwidth of a card pair (the mean of its two directions)", reads=P2P),
    Metric("p2p_latency", "connectivity", PAIRS, "us", p2p_latency, "median one-way latency of a card pair", reads=P2P),
    Metric("p2p_latency_tail", "connectivity", PAIRS, "x median", p2p_latency_tail,
           "p99 over median ping-pong latency of the same pair", reads=P2P),
    Metric("p2p_checksum_failures", "connectivity", PAIRS, "pairs", p2p_checksum_failures,
           "1 where a pair's payload arrived corrupted", reads=P2P),
    Metric("host_fact_failures", "connectivity", ENTITIES, "facts", host_fact_failures,
           "host facts that do not match the inventory or show errors", reads=FACTS),
    Metric("host_fact_warnings", "connectivity", ENTITIES, "facts", host_fact_warnings,
           "host facts wrong at warning level (NVL72 fabric bandwidth Limited Capacity)", reads=FACTS),
    Metric("pair_busbw", "stress", PAIRS, "x tier median", pair_busbw,
           "pairwise collective busbw at large sizes over the tier median", reads=COLL),
    Metric("pair_small_time", "stress", PAIRS, "x tier median", pair_small_time,
           "pairwise collective time at small sizes over the tier median", reads=COLL),
    Metric("pair_wrong", "stress", PAIRS, "wrong elements", pair_wrong, "elements that failed validation in pairwise collectives", reads=COLL),
    Metric("group_busbw", "stress", GROUPS, "x predicted", groups.group_busbw,
           "a collective group's time at each size against what its peer groups predict for its ranks", reads=COLL),
    Metric("rank_skew", "stress", ENTITIES, "us", rank_skew, "a card's launch lateness in collectives (its skews, its groups' first ranks added back)", reads=("rank",)),
    Metric("rank_skew_spikes", "stress", ENTITIES, "share of its rows", tails.rank_skew_spikes, "a card's collectives it entered far later than its own median (sncheck.health.tails)", reads=("rank",)),
    Metric("golden_loss", "golden", GROUPS, "loss", golden_loss, "golden model loss per replica", reads=GOLDEN),
    Metric("golden_step_time", "golden", ENTITIES, "x golden", golden_step_time,
           "golden model step time over the reference's", reads=GOLDEN),
    Metric("missing", "any", ENTITIES, "", missing, "unreachable, timed out, tool missing, parse failed, not run", reads=("host_fact", "not_run")),
    # In-job signals (sncheck watch): sncheck/health/injob.py
    Metric("fr_arrival", "watch", ENTITIES, "share of the group's time", injob.fr_arrival,
           "Flight Recorder: how often a rank enters its group's collectives last, and how long the group waits", reads=FR),
    Metric("fr_not_entered", "watch", ENTITIES, "collectives", injob.fr_not_entered,
           "Flight Recorder: the first collective a rank's peers entered and it never did", reads=FR),
    Metric("fr_desync", "watch", ENTITIES, "collectives", injob.fr_desync,
           "Flight Recorder: sequence ids where a rank recorded another collective or other sizes than its peers", reads=FR),
    Metric("fr_p2p_unmatched", "watch", ENTITIES, "ops", injob.fr_p2p_unmatched,
           "Flight Recorder (NCCL): sends or recvs a rank never posted against its peer's", reads=("fr_p2p",)),
    Metric("comm_busbw", "watch", ENTITIES, "GB/s", injob.comm_busbw,
           "NCCL Inspector / nccl-tests: a communicator's bus bandwidth over its tier's design (or baseline)", reads=("comm_bw",)),
    Metric("ras_state", "watch", ENTITIES, "states", injob.ras_state,
           "NCCL RAS: INCOMPLETE, MISMATCH, NOCOMM, DEAD and ERROR states, per rank and card", reads=("ras",)),
    # Fabric error counters (sncheck/health/fabric.py) and kernel logs (sncheck/health/kernel.py)
    Metric("fabric_counters", "connectivity", ENTITIES, "errors", fabric.fabric_counters,
           "NVLink and IB port error counters before and after the run (growth = after - before)", reads=FACTS),
    Metric("kernel_events", "connectivity", ENTITIES, "reports", kernel.kernel_events,
           "Xid, SXid, RmInitAdapter, PCIe AER and amdgpu RAS reports in the kernel log lines new since "
           "the last run (and those kept from earlier runs, for a count over a window)", reads=FACTS),
)}
