"""Judging statistics: what the rules and the explanation search read of pair measurements.

One home (docs: /work/team/JUDGING.md). Built per layer (or retest window) from the row
files by the columnar engine (:mod:`sncheck.store.engine`: DuckDB over the Parquet parts,
or over frames in memory), never as one frame of every pair: memory is the entities'
statistics and the exceptions, not the pairs.

Kinds and tiers
---------------
A measurement kind ``k`` is a pair metric (:data:`sncheck.health.metrics.METRICS`, shape
``pairs``): ``p2p_bandwidth``, ``p2p_latency``, ``p2p_latency_tail``,
``p2p_checksum_failures`` (connectivity pair tests) and ``pair_busbw``,
``pair_small_time``, ``pair_wrong`` (the stress layer's pairwise collectives). A tier
``t`` is the pair's link tier (``intra_host``, ``scale_up``, ``scale_out``).
:attr:`JudgingStats.kinds` lists the kinds that have pairs, :meth:`JudgingStats.tiers`
their tiers.

A *cell* is one measured row of a pair (a repeat). Which rows are cells is the metric's
own rule: every pair row but an unreachable host's for bandwidth (a row that carried
nothing is a cell with ``failed``), only the rows that measured for latency, latency
tail and checksum. ``value`` is the metric's value (GB/s, us, x median, 0/1).

Orientation: ``ratio`` is the value over its reference, turned so that below 1 is always
worse: bandwidth-like kinds value / reference; latency-like kinds (``p2p_latency``,
``p2p_latency_tail``, ``pair_small_time``) reference / value. The reference is the tier's
design value (the inventory's, :func:`sncheck.config.inventory.tier_design`), else the
tier's median value. Counter kinds (checksum, wrong) have no ratio (NaN): their bar is
"above 0".

The interface (stable: the explanation search builds on it)
----------------------------------------------------------
``PairSummary`` (:data:`PAIR_COLUMNS`, a frame row or :class:`PairSummary`) per measured
(k, t, a, b), ``a`` and ``b`` the link's ends in natural order:

* ``n`` repeats (cells); ``value`` the median over the repeats that measured (NaN when
  none did); ``worst`` the worst repeat (min for bandwidth-like, max for latency-like and
  counters); ``n_failed`` repeats that carried nothing; ``n_spiky`` repeats beyond the
  tier's spike bar (latency: p99 over median above the ``threshold`` rule of
  ``p2p_latency_tail``; others: 0); ``design`` the tier's design value (NaN: none);
  ``ratio`` as above, of ``value``.

``Noise`` per (k, t) (:meth:`JudgingStats.noise`): ``n_pairs`` cells, ``value`` the median
value over the cells that measured, ``reference`` (design, else that median),
``median`` and ``mad`` of the cells' ratios, ``spread`` the robust sd of one pair's
repeats (MAD_SD x MAD around each pair's median, pooled; NaN where no pair repeats), and
``bars``: every rule of the rules file on this kind, as :class:`Bar` (the rules file's
thresholds ARE the noise bars: a rules change changes the verdict).

``EntityStats`` per (k, t, entity) (:meth:`JudgingStats.entities`, :meth:`JudgingStats.entity`)
for entity kinds ``card`` (every pair it is an end of), ``nic`` (a card's scale_out pairs,
named ``<host>/nic<rail>``), ``host`` and ``supernode`` (every pair with an end on it):
``n_pairs`` cells, ``n_failed``, ``n_bad`` (cells beyond a pair rule's bar, failed ones
included where the rule counts them), ``n_spiky``; ``value`` the median value of the cells
that measured; ``median``, ``q10``, ``q90`` the ratios of the 50th/10th/90th percentile
(linear) values (latency-like: q10 is the ratio of the 90th percentile value, so q10 <=
median <= q90 always). Cards and NICs are computed for every entity at once; hosts and
supernodes on request (from their pairs). Switches come with the fabric path model.

``exceptions(k, t)``: the PairSummary rows of every pair with a cell beyond a bar (bad
under a pair rule, failed, or spiky), with ``rules`` (the rule names whose bar it is
beyond), ``failed`` and ``spiky`` columns: the only per-pair table built whole; in a
healthy fleet it is near empty. ``pairs_of(entity, k, t)``: every PairSummary row of one
entity (a card, nic, host, supernode, or a link), read back from the rows on demand.
``t`` may be None in both: every tier.

Exactness: medians are exact (DuckDB's ``median``: the middle value, or the mean of the
two middle values, as numpy's); percentiles are linear (numpy's default method, to the
last bit or so). A per-card score is its median value over the tier's median (or design):
the old code took the median of each pair's value over the same constant, which is the
same number up to the last bit; a verdict can differ only where a score equals its bar to
1e-16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, TypeVar

import numpy as np
import pandas as pd

from sncheck.health.explain import MAD_SD
from sncheck.health.metrics import METRICS, PAIRS, DetectContext
from sncheck.health.statsql import KINDS, PairKind, bar_sql, cells_sql, frame_cells
from sncheck.model import card_of, host_of, natural_key
from sncheck.store.engine import RowSource, quote
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP
from sncheck.model import nic_of, split_link

if TYPE_CHECKING:
    from sncheck.health.rules import Rule

PAIR_COLUMNS = ("kind", "tier", "a", "b", "link", "n", "value", "worst", "n_failed", "n_spiky", "design", "ratio")
ENTITY_COLUMNS = ("kind", "tier", "entity", "entity_kind", "n_pairs", "value", "median", "q10", "q90",
                  "n_bad", "n_failed", "n_spiky")
ENTITY_KINDS = ("card", "nic", "host", "supernode")
T = TypeVar("T")
CELL_COLUMNS = ["tier", "src", "dst", "link", "value", "failed", "design", "spiky"]


@dataclass(frozen=True)
class PairSummary:
    kind: str
    tier: str
    a: str
    b: str
    link: str
    n: int
    value: float
    worst: float
    n_failed: int
    n_spiky: int
    design: float
    ratio: float


@dataclass(frozen=True)
class Bar:
    """One rule's bar on a kind: ``side`` "below" or "above" ``bound``, of the value
    ``against`` a reference: "design" (value / design), "peers" (value / tier median, or
    a robust z with ``method`` robust_z), "value" (the value itself), "baseline"; ``per``
    "pair", "card" or "supernode" (a card's or a domain's median judged)."""

    rule: str
    op: str
    side: str
    bound: float
    against: str
    per: str = "pair"
    method: str = "ratio"


@dataclass(frozen=True)
class Noise:
    kind: str
    tier: str
    n_pairs: int
    value: float
    reference: float
    design: float
    median: float
    mad: float
    spread: float
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class EntityStats:
    kind: str
    tier: str
    entity: str
    entity_kind: str
    n_pairs: int
    value: float
    median: float
    q10: float
    q90: float
    n_bad: int
    n_failed: int
    n_spiky: int


def summaries(frame: pd.DataFrame) -> list[PairSummary]:
    """PairSummary rows of a frame (exceptions, pairs_of) as typed values."""
    return [PairSummary(*(getattr(r, c) for c in PAIR_COLUMNS)) for r in frame[list(PAIR_COLUMNS)].itertuples()]


def rule_bars(rules: Iterable["Rule"], kind: str) -> tuple[Bar, ...]:
    """The bars of the rules on ``kind`` (see :class:`Bar`)."""
    out = []
    for r in rules:
        if r.metric != kind or ("below" not in r.params and "above" not in r.params
                                and r.op != "counter_nonzero"):
            continue
        side, bound = (("below", r.params["below"]) if "below" in r.params else
                       ("above", r.params["above"]) if "above" in r.params else ("above", 0.0))
        against = {"ratio_to_design": "design", "peer_outlier": "peers", "baseline_regression": "baseline",
                   "drift": "history", "calibration_regression": "calibration"}.get(r.op, "value")
        per = str(r.params.get("per", "card" if r.scope == "card" else "pair"))
        out.append(Bar(r.name, r.op, side, float(bound), against, per, str(r.params.get("method", "ratio"))))
    return tuple(out)


class JudgingStats:
    """The statistics of one selection of rows (a layer, a retest window): see the module
    docstring. ``rules``: the rules judging them (their bars make the exceptions)."""

    def __init__(self, source: RowSource, ctx: DetectContext, rules: Sequence["Rule"] = ()) -> None:
        self.source, self.ctx, self.rules = source, ctx, tuple(rules)
        self._kinds: dict[str, PairKind | None] = {}
        self._cache: dict[tuple, object] = {}

    # ------------------------------------------------------------------ kinds and cells
    def kind(self, kind: str) -> PairKind | None:
        """A kind's cells as a SQL relation (None: the rows have none of it)."""
        if kind not in self._kinds:
            spec = KINDS.get(kind)
            if spec is None or METRICS[kind].shape != PAIRS:
                raise KeyError(f"not a pair kind: {kind}")
            self._kinds[kind] = cells_sql(spec, self.source, self.ctx, self._spike_bar()) if spec.sql else \
                frame_cells(spec, self.source, self.ctx)
        return self._kinds[kind]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in KINDS if self.kind(k) is not None and self.tier_table(k).n_cells.sum() > 0)

    def tiers(self, kind: str) -> tuple[str, ...]:
        """The kind's tiers, innermost first (intra_host, scale_up, scale_out, then others)."""
        order = {t: i for i, t in enumerate((INTRA_HOST, SCALE_UP, SCALE_OUT))}
        return tuple(sorted(self.tier_table(kind)["tier"].astype(str), key=lambda t: (order.get(t, 3), natural_key(t))))

    def _spike_bar(self) -> float | None:
        """The latency tail's per-pair bar (a ``threshold`` rule above X on p2p_latency_tail)."""
        bars = [r.params["above"] for r in self.rules if r.metric == "p2p_latency_tail" and r.op == "threshold"
                and "above" in r.params]
        return min(bars) if bars else None

    def _memo(self, key: tuple, build: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]  # type: ignore[return-value]  # (the value build() returned for this key)

    def _sql(self, query: str) -> pd.DataFrame:
        return self.source.sql(query)

    # ------------------------------------------------------------------ tiers: Noise
    def tier_table(self, kind: str) -> pd.DataFrame:
        """Per tier of a kind: n_cells, n_ok (cells that did not fail), n_values (of those,
        with a value), value (their median), mad (median absolute deviation from it),
        positive (the median of their positive finite values: the reference of a tier
        without design), design."""
        def build() -> pd.DataFrame:
            k = self.kind(kind)
            cols = ["tier", "n_cells", "n_ok", "n_values", "value", "mad", "positive", "design"]
            if k is None:
                return pd.DataFrame(columns=cols)
            t = self._sql(f"""
                SELECT tier, count(*) AS n_cells, count(*) FILTER (WHERE NOT failed) AS n_ok,
                       count(value) FILTER (WHERE NOT failed) AS n_values,
                       median(value) FILTER (WHERE NOT failed) AS value,
                       median(value) FILTER (WHERE NOT failed AND value > 0 AND isfinite(value)) AS positive,
                       any_value(design) AS design
                FROM {k.cells} GROUP BY tier""")
            if t.empty:
                return pd.DataFrame(columns=cols)
            mad = self._sql(f"""
                SELECT c.tier, median(abs(c.value - m.value)) FILTER (WHERE NOT c.failed) AS mad
                FROM {k.cells} c JOIN (SELECT * FROM (VALUES {self._values(t, ['tier', 'value'])}) v(tier, value)) m
                  ON c.tier = m.tier GROUP BY c.tier""")
            t = t.merge(mad, on="tier", how="left")
            return t[cols].astype({"n_cells": int, "n_ok": int, "n_values": int})

        return self._memo(("tiers", kind), build)

    @staticmethod
    def _values(frame: pd.DataFrame, columns: list[str]) -> str:
        """Rows of ``frame`` as a SQL VALUES list (strings and doubles)."""
        def lit(v) -> str:
            if isinstance(v, str):
                return quote(v)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return "NULL::DOUBLE"
            return f"{float(v)!r}::DOUBLE"
        return ", ".join("(" + ", ".join(lit(v) for v in row) + ")" for row in frame[columns].itertuples(index=False))

    def reference(self, kind: str, tier: str) -> float:
        """A tier's reference value: its design, else the median value of its cells."""
        def build() -> dict[str, float]:
            out = {}
            for r in self.tier_table(kind).itertuples():
                d = float(r.design) if pd.notna(r.design) else math.nan
                out[str(r.tier)] = d if math.isfinite(d) and d > 0 else float(r.value)
            return out

        return self._memo(("references", kind), build).get(tier, math.nan)

    def ratio(self, kind: str, tier, values) -> np.ndarray:
        """Values of ``kind`` as ratios (below 1 worse; NaN for counters); ``tier`` one
        tier, or an array of each value's tier."""
        spec = KINDS[kind]
        v = np.asarray(values, dtype=float)
        if spec.counter:
            return np.full(v.shape, np.nan)
        if isinstance(tier, str):
            ref = np.full(v.shape, self.reference(kind, tier))
        else:
            refs = {t: self.reference(kind, t) for t in set(tier)}
            ref = np.array([refs[t] for t in tier], dtype=float).reshape(v.shape)
        with np.errstate(all="ignore"):
            return ref / v if spec.lower else v / ref

    def noise(self, kind: str, tier: str) -> Noise:
        t = self.tier_table(kind).set_index("tier")
        bars = rule_bars(self.rules, kind)
        if tier not in t.index:
            return Noise(kind, tier, 0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, bars)
        row = t.loc[tier]
        ref = self.reference(kind, tier)
        median = float(self.ratio(kind, tier, [row["value"]])[0])
        mad = self._memo(("ratio_mad", kind, tier), lambda: self._ratio_mad(kind, tier, ref))
        return Noise(kind, tier, int(row["n_cells"]), float(row["value"]), ref, float(row["design"]),
                     median, mad, self._memo(("spread", kind, tier), lambda: self._spread(kind, tier)), bars)

    def _ratio_expr(self, kind: str, ref: float) -> str:
        spec = KINDS[kind]
        if spec.counter or not math.isfinite(ref):
            return "NULL::DOUBLE"
        return f"({ref!r} / value)" if spec.lower else f"(value / {ref!r})"

    def _ratio_mad(self, kind: str, tier: str, ref: float) -> float:
        k = self.kind(kind)
        expr = self._ratio_expr(kind, ref)
        if k is None or expr.startswith("NULL"):
            return math.nan
        r = self._sql(f"""
            WITH r AS (SELECT {expr} AS r FROM {k.cells} WHERE tier = {quote(tier)} AND NOT failed)
            SELECT median(abs(r - (SELECT median(r) FROM r))) AS mad FROM r""")
        return float(r["mad"].iloc[0]) if len(r) and pd.notna(r["mad"].iloc[0]) else math.nan

    def _spread(self, kind: str, tier: str) -> float:
        k = self.kind(kind)
        if k is None:
            return math.nan
        r = self._sql(f"""
            WITH c AS (SELECT link, value FROM {k.cells} WHERE tier = {quote(tier)} AND NOT failed AND value IS NOT NULL),
                 m AS (SELECT link, median(value) AS med, count(*) AS n FROM c GROUP BY link HAVING count(*) > 1)
            SELECT median(abs(c.value - m.med) / nullif(abs(m.med), 0)) AS mad FROM c JOIN m USING (link)""")
        v = r["mad"].iloc[0] if len(r) else None
        return MAD_SD * float(v) if v is not None and pd.notna(v) else math.nan

    # ------------------------------------------------------------------ exceptions
    def exception_cells(self, kind: str) -> pd.DataFrame:
        """Every cell of ``kind`` beyond a bar: CELL_COLUMNS plus a boolean column per pair
        rule on the kind (named by the rule) and ``rules`` (the names whose bar it is beyond)."""
        def build() -> pd.DataFrame:
            k = self.kind(kind)
            bars = [(r.name, bar_sql(r, self)) for r in self.rules if r.metric == kind]
            bars = [(name, sql) for name, sql in bars if sql is not None]
            if k is None:
                return pd.DataFrame(columns=CELL_COLUMNS + [n for n, _ in bars] + ["rules"])
            flags = "".join(f", ({sql}) AS {quote(name).replace(chr(39), chr(34))}" for name, sql in bars)
            where = " OR ".join(["failed", "spiky"] + [f"({sql})" for _, sql in bars])
            t = self.tier_table(kind)
            joined = f"""(SELECT c.*, t.n_ok AS tier_n, t.value AS tier_median, t.mad AS tier_mad
                          FROM {k.cells} c LEFT JOIN (SELECT * FROM (VALUES {self._values(t, ['tier', 'n_ok', 'value', 'mad'])
                          if len(t) else "(NULL, NULL::DOUBLE, NULL::DOUBLE, NULL::DOUBLE)"}) v(tier, n_ok, value, mad)) t
                          ON c.tier = t.tier)"""
            out = self._sql(f"SELECT {', '.join(CELL_COLUMNS)}{flags} FROM {joined} WHERE {where}")
            names = [n for n, _ in bars]
            for n in names:
                out[n] = out[n].fillna(False).astype(bool)
            out["rules"] = [tuple(n for n, hit in zip(names, hits) if hit)
                            for hits in (zip(*(out[n] for n in names)) if names else [()] * len(out))]
            return out

        return self._memo(("exceptions", kind), build)

    def exceptions(self, kind: str, tier: str | None = None) -> pd.DataFrame:
        """PairSummary rows of the pairs with a cell beyond a bar (see the module docstring)."""
        cells = self.exception_cells(kind)
        if tier is not None:
            cells = cells[cells["tier"] == tier]
        if cells.empty:
            return pd.DataFrame(columns=list(PAIR_COLUMNS) + ["rules", "failed", "spiky"])
        links = sorted(set(cells["link"].astype(str)))
        every = self._cells_where(kind, f"link IN ({', '.join(quote(x) for x in links)})", tier)
        out = self._summarize(kind, every)
        marks = cells.groupby(cells["link"].astype(str)).agg(
            rules=("rules", lambda rs: tuple(sorted({n for r in rs for n in r}))),
            failed=("failed", "any"), spiky=("spiky", "any"))
        return out.join(marks, on="link")

    # ------------------------------------------------------------------ per pair, per entity
    def _cells_where(self, kind: str, where: str, tier: str | None = None) -> pd.DataFrame:
        k = self.kind(kind)
        if k is None:
            return pd.DataFrame(columns=CELL_COLUMNS)
        if tier is not None:
            where = f"({where}) AND tier = {quote(tier)}"
        return self._sql(f"SELECT {', '.join(CELL_COLUMNS)} FROM {k.cells} WHERE {where}")

    def cells_of(self, kind: str, cards: Iterable[str], tier: str | None = None) -> pd.DataFrame:
        """Every cell of ``kind`` with an end among ``cards`` (CELL_COLUMNS)."""
        cards = sorted(set(cards))
        if not cards:
            return pd.DataFrame(columns=CELL_COLUMNS)
        names = ", ".join(quote(c) for c in cards)
        return self._cells_where(kind, f"src IN ({names}) OR dst IN ({names})", tier)

    def pairs_of(self, entity: str, kind: str, tier: str | None = None) -> pd.DataFrame:
        """Every PairSummary row of one entity (card, nic, host, supernode or link)."""
        if "<->" in entity:
            cells = self._cells_where(kind, f"link = {quote(entity)}", tier)
        else:
            ekind, cards = self._members(entity)
            if ekind == "nic":
                tier = SCALE_OUT if tier in (None, SCALE_OUT) else "<none>"
            cells = self.cells_of(kind, cards, tier)
        return self._summarize(kind, cells)

    def _members(self, entity: str) -> tuple[str, list[str]]:
        topo = self.ctx.topo
        if entity in topo.by_id:
            return "card", [entity]
        if card_of(entity) != entity:
            return "nic", [card_of(entity)]
        if entity in topo.inventory.hosts:
            return "host", topo.cards_of_host(entity)
        if entity in topo.supernode_names:
            return "supernode", topo.cards_of_supernode(entity)
        return "card", [entity]  # a card the inventory does not name (rows judged alone)

    def _summarize(self, kind: str, cells: pd.DataFrame) -> pd.DataFrame:
        """Cells grouped into PairSummary rows (one per link and tier)."""
        if cells.empty:
            return pd.DataFrame(columns=list(PAIR_COLUMNS))
        spec = KINDS[kind]
        c = cells.assign(link=cells["link"].astype(str), tier=cells["tier"].astype(str),
                         ok_value=cells["value"].where(~cells["failed"].astype(bool)))
        g = c.groupby(["tier", "link"], sort=True)
        out = pd.DataFrame({"n": g.size(), "value": g["ok_value"].median(),
                            "worst": g["ok_value"].max() if spec.lower or spec.counter else g["ok_value"].min(),
                            "n_failed": g["failed"].sum().astype(int), "n_spiky": g["spiky"].sum().astype(int),
                            "design": g["design"].first()}).reset_index()
        ends = out["link"].map(split_link)
        out["a"], out["b"] = ends.str[0], ends.str[1]
        out["kind"] = kind
        out["ratio"] = self.ratio(kind, out["tier"].tolist(), out["value"].to_numpy(float))
        return out[list(PAIR_COLUMNS)]

    def card_table(self, kind: str) -> pd.DataFrame:
        """Per card and tier of a kind: n_cells, n_failed, n_ok, n_values, value (median),
        v10 and v90 (10th and 90th percentile values), n_spiky."""
        def build() -> pd.DataFrame:
            k = self.kind(kind)
            cols = ["card", "tier", "n_cells", "n_failed", "n_ok", "n_values", "value", "v10", "v90", "n_spiky"]
            if k is None:
                return pd.DataFrame(columns=cols)
            t = self._sql(f"""
                WITH e AS (SELECT src AS card, tier, value, failed, spiky FROM {k.cells}
                           UNION ALL SELECT dst AS card, tier, value, failed, spiky FROM {k.cells})
                SELECT card, tier, count(*) AS n_cells, count(*) FILTER (WHERE failed) AS n_failed,
                       count(*) FILTER (WHERE NOT failed) AS n_ok, count(value) FILTER (WHERE NOT failed) AS n_values,
                       median(value) FILTER (WHERE NOT failed) AS value,
                       quantile_cont(value, [0.1, 0.9]) FILTER (WHERE NOT failed) AS q,
                       count(*) FILTER (WHERE spiky) AS n_spiky
                FROM e GROUP BY card, tier""")
            q = t.pop("q")
            t["v10"] = [x[0] if x is not None and len(x) else math.nan for x in q]
            t["v90"] = [x[1] if x is not None and len(x) else math.nan for x in q]
            return t[cols]

        return self._memo(("cards", kind), build)

    def entities(self, kind: str, tier: str | None, entity_kind: str = "card") -> pd.DataFrame:
        """EntityStats rows (:data:`ENTITY_COLUMNS`) of every card or NIC in ``tier`` (None:
        every tier); hosts and supernodes: of those with a pair in the exceptions or asked
        for by name (:meth:`entity`)."""
        if entity_kind in ("card", "nic"):
            t = self.card_table(kind)
            if entity_kind == "nic":
                t = t[t["tier"] == SCALE_OUT]
                tier = SCALE_OUT if tier in (None, SCALE_OUT) else "<none>"
            if tier is not None:
                t = t[t["tier"] == tier]
            names = t["card"].astype(str)
            return self._entity_rows(kind, t.assign(entity=names.map(nic_of) if entity_kind == "nic" else names),
                                     entity_kind)
        ends = self.exception_cells(kind)
        name = host_of if entity_kind == "host" else (lambda c: self.ctx.topo.by_id[c].supernode
                                                       if c in self.ctx.topo.by_id else None)
        found = sorted({n for e in (ends["src"].astype(str), ends["dst"].astype(str)) for n in map(name, e) if n},
                       key=natural_key)
        rows = [s for e in found for s in self._entity_all_tiers(kind, e) if tier is None or s.tier == tier]
        return pd.DataFrame([s.__dict__ for s in rows], columns=list(ENTITY_COLUMNS))

    def _entity_rows(self, kind: str, t: pd.DataFrame, entity_kind: str) -> pd.DataFrame:
        """card_table rows as EntityStats rows (ratios; n_bad from the exceptions)."""
        spec = KINDS[kind]
        bad = self.exception_cells(kind)
        bad = bad[[bool(r) or f for r, f in zip(bad["rules"], bad["failed"])]] if len(bad) else bad
        ends = pd.concat([bad[["src", "tier"]].rename(columns={"src": "card"}),
                          bad[["dst", "tier"]].rename(columns={"dst": "card"})]).astype(str)
        n_bad = ends.groupby(["card", "tier"]).size()
        out = pd.DataFrame({"kind": kind, "tier": t["tier"].astype(str), "entity": t["entity"],
                            "entity_kind": entity_kind, "n_pairs": t["n_cells"].astype(int), "value": t["value"]})
        tiers = out["tier"].tolist()
        lo, mid, hi = (self.ratio(kind, tiers, t[col].to_numpy(float)) for col in ("v10", "value", "v90"))
        out["median"] = mid
        out["q10"], out["q90"] = (hi, lo) if spec.lower else (lo, hi)
        keys = list(zip(t["card"].astype(str), out["tier"]))
        out["n_bad"] = [int(n_bad.get(k, 0)) for k in keys]
        out["n_failed"] = t["n_failed"].astype(int).to_numpy()
        out["n_spiky"] = t["n_spiky"].astype(int).to_numpy()
        return out[list(ENTITY_COLUMNS)].reset_index(drop=True)

    def entity(self, kind: str, tier: str, entity: str) -> EntityStats | None:
        """One entity's EntityStats in one tier (None: it has no pair there)."""
        return next((s for s in self._entity_all_tiers(kind, entity) if s.tier == tier), None)

    def _entity_all_tiers(self, kind: str, entity: str) -> list[EntityStats]:
        def build() -> list[EntityStats]:
            ekind, cards = self._members(entity)
            if ekind in ("card", "nic"):
                rows = self.entities(kind, None, ekind)
                rows = rows[rows["entity"] == entity]
                return [EntityStats(**r) for r in rows.to_dict("records")]
            cells = self.cells_of(kind, cards)
            bad = self.exception_cells(kind)
            flagged = {(str(r.link), str(r.tier)) for r in bad.itertuples() if r.rules or r.failed}
            out = []
            for tier, c in cells.groupby(cells["tier"].astype(str), sort=True):
                ok = c.loc[~c["failed"].astype(bool), "value"].to_numpy(float)
                ok = ok[~np.isnan(ok)]
                v10, v50, v90 = (np.percentile(ok, [10, 50, 90]) if len(ok) else [math.nan] * 3)
                v50 = float(np.median(ok)) if len(ok) else math.nan
                lo, mid, hi = self.ratio(kind, tier, [v10, v50, v90])
                q10, q90 = (hi, lo) if KINDS[kind].lower else (lo, hi)
                n_bad = sum((str(x), tier) in flagged for x in c["link"])
                out.append(EntityStats(kind, tier, entity, ekind, len(c), v50, float(mid), float(q10), float(q90),
                                       int(n_bad), int(c["failed"].sum()), int(c["spiky"].sum())))
            return out

        return self._memo(("entity", kind, entity), build)

    def close(self) -> None:
        self.source.close()
