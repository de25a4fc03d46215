"""The SQL of the judging statistics (:mod:`sncheck.health.stats`): each pair kind's cells,
and each pair rule's bar, as DuckDB expressions over the rows.

A kind's cells are one relation with the columns ``tier, src, dst, link, value, failed,
design, spiky`` (see :mod:`sncheck.health.stats`). The connectivity kinds are SQL over the
p2p rows, as the metric functions of :mod:`sncheck.health.metrics` define them (those stay
the reference, and tests hold the two equal); the stress layer's pairwise kinds are few
rows, computed by their metric functions and handed to the engine as a table.

NaN: the rows hold a value not measured as NULL (Parquet, and frames read with NaN as
NULL); an expression that makes a NaN (0/0) is turned to NULL with ``nn`` (DuckDB orders
NaN above every number, where pandas compares it false both ways).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from sncheck.config.inventory import tier_design
from sncheck.health.metrics import METRICS, DetectContext
from sncheck.store.engine import RowSource, literal, quote
from sncheck.store.frames import RowFrames
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP

if TYPE_CHECKING:
    from sncheck.health.rules import Rule
    from sncheck.health.stats import JudgingStats

CELLS = ("tier", "src", "dst", "link", "value", "failed", "design", "spiky")


@dataclass(frozen=True)
class KindSpec:
    name: str
    lower: bool = False          # lower is better (latency-like): ratio = reference / value
    counter: bool = False        # a count of wrong things: bad above 0, no ratio
    design: str | None = None    # the TierDesign attribute that is its design value
    sql: bool = True             # cells in SQL over p2p rows (else: the metric function's frame)


KINDS: dict[str, KindSpec] = {k.name: k for k in (
    KindSpec("p2p_bandwidth", design="bandwidth_GBps"),
    KindSpec("p2p_latency", lower=True, design="latency_us"),
    KindSpec("p2p_latency_tail", lower=True),
    KindSpec("p2p_checksum_failures", counter=True),
    KindSpec("pair_busbw", sql=False),
    KindSpec("pair_small_time", lower=True, sql=False),
    KindSpec("pair_wrong", counter=True, sql=False),
)}


@dataclass(frozen=True)
class PairKind:
    spec: KindSpec
    cells: str   # a SQL relation with the columns CELLS


def _design_sql(spec: KindSpec, ctx: DetectContext) -> str:
    if spec.design is None:
        return "NULL::DOUBLE"
    tiers = dict.fromkeys([INTRA_HOST, SCALE_UP, SCALE_OUT, *ctx.design])
    whens = []
    for t in tiers:
        d = tier_design(ctx.design, t)
        if d is not None:
            whens.append(f"WHEN {quote(t)} THEN {literal(getattr(d, spec.design))}")
    return f"(CASE tier::VARCHAR {' '.join(whens)} ELSE NULL::DOUBLE END)" if whens else "NULL::DOUBLE"


def cells_sql(spec: KindSpec, source: RowSource, ctx: DetectContext, spike_bar: float | None) -> PairKind | None:
    """A connectivity kind's cells over the p2p rows (as :func:`metrics._p2p` and the
    metric functions select and compute them); None where the rows have none."""
    rel = source.relation("p2p")
    if rel is None:
        return None
    value, where = {
        "p2p_bandwidth": ("(CASE WHEN n_dirs > 0 THEN (coalesce(nn(bw_GBps), 0) + coalesce(nn(bw_rev_GBps), 0))"
                          " / n_dirs END)", "true"),
        "p2p_latency": ("nn(lat_us::DOUBLE)", "NOT failed"),
        "p2p_latency_tail": ("nn(nn(lat_p99_us::DOUBLE) / nn(lat_us::DOUBLE))", "NOT failed"),
        "p2p_checksum_failures": ("(CASE WHEN checksum_ok THEN 0.0 ELSE 1.0 END)",
                                  "NOT failed AND checksum_ok IS NOT NULL"),
    }[spec.name]
    if spec.name == "p2p_latency_tail":
        if not source.has("p2p", "lat_p99_us") or not _any(source, rel, "lat_p99_us"):
            return None
    if spec.name == "p2p_checksum_failures" and not source.has("p2p", "checksum_ok"):
        return None
    spiky = "false"
    if spike_bar is not None and spec.name in ("p2p_latency", "p2p_latency_tail"):
        spiky = f"coalesce(NOT failed AND nn(nn(lat_p99_us::DOUBLE) / nn(lat_us::DOUBLE)) > {spike_bar!r}, false)"
    inner = f"""(SELECT tier::VARCHAR AS tier, src::VARCHAR AS src, dst::VARCHAR AS dst, link::VARCHAR AS link,
                        status::VARCHAR IS DISTINCT FROM 'ok' AS failed, bw_GBps, bw_rev_GBps, lat_us,
                        lat_p99_us, checksum_ok,
                        (nn(bw_GBps) IS NOT NULL)::INT + (nn(bw_rev_GBps) IS NOT NULL)::INT AS n_dirs
                 FROM {rel} WHERE status::VARCHAR IS DISTINCT FROM 'unreachable')"""
    cells = f"""(SELECT tier, src, dst, link, {value}::DOUBLE AS value, failed, {_design_sql(spec, ctx)} AS design,
                        {spiky} AS spiky FROM {inner} WHERE {where})"""
    return PairKind(spec, cells)


def _any(source: RowSource, rel: str, column: str) -> bool:
    return bool(source.sql(f"SELECT count({column}) AS n FROM {rel}")["n"].iloc[0])


def frame_cells(spec: KindSpec, source: RowSource, ctx: DetectContext) -> PairKind | None:
    """A stress pairwise kind's cells: its metric function over the collective rows."""
    coll = source.frame("collective")
    if coll.empty:
        return None
    cells = METRICS[spec.name].fn(RowFrames({"collective": coll}), ctx)
    if cells.empty:
        return None
    table = pa.table({
        "tier": cells["tier"].astype(str).to_numpy(object), "src": cells["src"].astype(str).to_numpy(object),
        "dst": cells["dst"].astype(str).to_numpy(object), "link": cells["link"].astype(str).to_numpy(object),
        "value": pa.array(pd.to_numeric(cells["value"], errors="coerce").to_numpy(float), from_pandas=True),
        "failed": cells["failed"].astype(bool).to_numpy(),
        "design": pa.nulls(len(cells), pa.float64()), "spiky": pa.array([False] * len(cells))})
    name = f"cells_{spec.name}"
    source.con.register(name, table)
    return PairKind(spec, name)


def _side(rule: "Rule") -> tuple[str, float]:
    return ("<", float(rule.params["below"])) if "below" in rule.params else (">", float(rule.params["above"]))


def bar_sql(rule: "Rule", stats: "JudgingStats") -> str | None:
    """A pair rule's bar as a SQL condition over a kind's cells joined with their tier's
    statistics (``tier_n``: its cells that did not fail, ``tier_median``, ``tier_mad``),
    exactly as its op flags a pair bad; None for a rule that judges no single pair."""
    per = rule.params.get("per", "pair")
    if rule.op == "ratio_to_design" and per == "pair":
        designs = stats.tier_table(rule.metric)["design"]
        if designs.isna().all():
            return None  # no design at all: the op judges nothing
        op, bound = _side(rule)
        return f"failed OR nn(value / design) {op} {bound!r}"
    if rule.op == "peer_outlier" and per == "pair":
        op, bound = _side(rule)
        peers = int(rule.params["min_peers"])
        if rule.params["method"] == "ratio":
            score = f"(CASE WHEN tier_n >= {peers} THEN nn(value / tier_median) ELSE 1.0 END)"
        else:
            score = (f"(CASE WHEN tier_n >= {peers} AND tier_mad <> 0 AND tier_mad IS NOT NULL "
                     f"THEN nn(0.6745 * (value - tier_median) / tier_mad) ELSE 0.0 END)")
        return f"failed OR {score} {op} {bound!r}"
    if rule.op == "threshold":
        op, bound = _side(rule)
        return f"nn(value) {op} {bound!r}"
    if rule.op == "counter_nonzero":
        return "coalesce(nn(value), 0) > 0"
    return None
