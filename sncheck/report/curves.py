"""The report's stress and golden sections: bus bandwidth against message size per
collective, and the golden loss curves against their reference band."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sncheck.health.ops import band_of, outside_band
from sncheck.model import RunRecord
from sncheck.report import svg
from sncheck.report.tables import column, holds, isnan, number, of_kind, status_ok
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP, host_of, natural_key

# The link tier a stress group's traffic crosses, for the design line on its chart.
GROUP_TIER = {"host": INTRA_HOST, "rail": SCALE_UP, "domain": SCALE_UP, "cross": SCALE_OUT}
KIND_COLOR = {"host": svg.PALETTE[0], "rail": svg.PALETTE[1], "domain": svg.PALETTE[2],
              "cross": svg.PALETTE[3]}
TIER_COLOR = {INTRA_HOST: "#555555", SCALE_UP: "#000000", SCALE_OUT: "#b00000"}

def collective_charts(rows: pd.DataFrame, design: dict[str, dict]) -> list[dict]:
    """busbw against message size per collective; a line per group kind (median over
    its groups) and the design bandwidth of the tiers those groups cross."""
    coll = of_kind(rows, "collective", ("collective", "group", "group_kind", "size_bytes", "busbw_GBps", "status"))
    if not holds(coll, ("collective", "size_bytes", "busbw_GBps")):
        return []
    df = pd.DataFrame({
        "collective": coll["collective"].astype(str),
        "group": column(coll, "group", "all").fillna("all").astype(str),
        "size": pd.to_numeric(coll["size_bytes"], errors="coerce"),
        "busbw": pd.to_numeric(coll["busbw_GBps"], errors="coerce"),
    })
    kind = column(coll, "group_kind")
    missing = kind.isna().to_numpy(bool)   # a group without its kind: the kind its id starts with
    if missing.any():
        kind = kind.fillna(df["group"][missing].str.split(":").str[0])
    df["kind"] = kind.astype(str)
    df = df[status_ok(coll) & df["busbw"].notna() & (df["size"] > 0)]
    per_group = df.groupby(["collective", "kind", "group", "size"])["busbw"].median().reset_index()
    out = []
    for name, g in per_group.groupby("collective"):
        out.append({"collective": name, "svg": _collective_svg(name, g, design),
                    "groups": int(g["group"].nunique())})
    return out


def _kind_order(kind: str) -> tuple:
    return (list(GROUP_TIER) + [kind]).index(kind), kind


def _collective_svg(name: str, g: pd.DataFrame, design: dict[str, dict]) -> str:
    series, tiers = [], []
    for k, (kind, gk) in enumerate(sorted(g.groupby("kind"), key=lambda t: _kind_order(t[0]))):
        med = gk.groupby("size")["busbw"].median()
        n = gk["group"].nunique()
        series.append(svg.Series(f"{kind} (median of {n} group{'s' if n != 1 else ''})",
                                 list(med.index), list(med.values),
                                 KIND_COLOR.get(kind, svg.PALETTE[(4 + k) % len(svg.PALETTE)])))
        tier = GROUP_TIER.get(kind)
        if tier and tier not in tiers:
            tiers.append(tier)
    hlines = [svg.HLine(f"design {t} {design[t]['bandwidth_GBps']:.4g} GB/s",
                        design[t]["bandwidth_GBps"], TIER_COLOR[t])
              for t in tiers if (design.get(t) or {}).get("bandwidth_GBps")]
    return svg.line_chart(series, title=f"{name}: bus bandwidth", xlabel="message size (bytes)",
                          ylabel="busbw (GB/s)", logx=True, hlines=hlines)


# ---- golden charts -----------------------------------------------------------------

# A chart per golden group up to this many groups; past it (a fleet trains one replica
# per host: 2,047 at 16,384 cards) one chart of the fleet's median curve and its spread,
# then the groups outside the band or named by findings, worst first, up to this many.
GOLDEN_CHARTS = 12
GOLDEN_NAMED = 50      # out-of-band groups named in the summary line


def golden_view(record: RunRecord, rows: pd.DataFrame) -> dict:
    """The golden section: its charts and, at fleet size, a summary of the groups.

    Every group's band check is one grouped pass over the rows (one per replica size where
    the sizes differ: each replica against its own size's reference); only the charts shown
    are drawn."""
    view: dict[str, Any] = {"golden_charts": [], "golden_summary": None}
    gold = of_kind(rows, "golden", ("group", "stage", "step", "loss", "step_time_s", "comm_share"))
    if not holds(gold, ("step",)):
        return view
    df = pd.DataFrame({"group": column(gold, "group", "run").fillna("run").astype(str),
                       "stage": column(gold, "stage", "group").fillna("group").astype(str),
                       "step": pd.to_numeric(gold["step"], errors="coerce"),
                       "loss": pd.to_numeric(gold["loss"], errors="coerce"),
                       "step_time_s": pd.to_numeric(column(gold, "step_time_s"), errors="coerce"),
                       "comm_share": pd.to_numeric(column(gold, "comm_share"), errors="coerce")})
    df = df[df["step"].notna()]
    if df.empty:
        return view
    refs = _references(record, first_step=df["step"].min())
    curves = df.groupby(["group", "stage", "step"], sort=True)["loss"].median()
    by_group = df.groupby("group", sort=False)
    stats = pd.DataFrame({"steps": by_group["step"].nunique(), "step_time_s": by_group["step_time_s"].median(),
                          "comm_share": by_group["comm_share"].median()})
    stats = stats.join(_band_checks(df, curves, refs))
    groups = sorted(stats.index, key=natural_key)
    if len(groups) <= GOLDEN_CHARTS:
        view["golden_charts"] = [_golden_chart(g, curves.loc[g], refs.of(g), stats.loc[g]) for g in groups]
        return view
    bad = stats[(stats["out_of_band"].fillna(0) > 0) | stats["final_ok"].eq(False)]
    named = _golden_named(record, groups)
    flagged = sorted(set(bad.index) | named, key=lambda g: (-(stats.at[g, "out_of_band"] or 0),
                                                             stats.at[g, "final_ok"] is not False,
                                                             natural_key(g)))
    fleet = [_fleet_golden_chart(curves, stats, ref, bad.index, ranks, members)
             for ranks, ref, members in refs.fleets(stats.index)]
    shown = flagged[:max(1, GOLDEN_CHARTS - len(fleet))]
    view["golden_charts"] = fleet + [_golden_chart(g, curves.loc[g], refs.of(g), stats.loc[g]) for g in shown]
    out_names = sorted(bad.index, key=natural_key)
    view["golden_summary"] = {"groups": len(groups), "out_of_band": len(out_names),
                              "named": out_names[:GOLDEN_NAMED], "more": max(0, len(out_names) - GOLDEN_NAMED),
                              "shown": len(shown), "left_out": len(flagged) - len(shown)}
    return view


def golden_charts(record: RunRecord, rows: pd.DataFrame) -> list[dict]:
    """The golden charts of the report (see :func:`golden_view`)."""
    return golden_view(record, rows)["golden_charts"]


def _golden_named(record: RunRecord, groups: list[str]) -> set[str]:
    """Groups whose members a golden finding names (its host, or one of its cards)."""
    entities = {f.entity for f in record.findings if f.layer == "golden"}
    entities |= {host_of(e) for e in entities}
    return {g for g in groups if g in entities or g.partition(":")[2] in entities}


@dataclass(frozen=True)
class _References:
    """The golden references the charts draw, placed on the run's step numbering: ``main``
    (the layer's ``reference``, the one the verdict names) and, where the replicas differ
    in size, each size's groups (``sizes``: ranks -> groups) and the curve that judged them
    (``own``: group -> curve, None where its size has none: drawn without a band)."""
    main: dict | None = None
    sizes: dict[str, list[str]] = field(default_factory=dict)
    own: dict[str, dict | None] = field(default_factory=dict)

    def of(self, group: str) -> dict | None:
        """The reference of a group: its size's; a card trained alone (``card:H/gpuN``) is
        judged by its host's replica's (``health.metrics.replica_ranks_of``)."""
        if not self.own:
            return self.main
        kind, _, rest = group.partition(":")
        key = f"host:{host_of(rest)}" if kind == "card" else group
        return self.own[key] if key in self.own else self.main

    def fleets(self, groups: pd.Index) -> list[tuple[str | None, dict | None, list[str] | None]]:
        """The fleet charts (ranks, reference, groups): one for all groups, or one per replica
        size where sizes differ."""
        if not self.sizes:
            return [(None, self.main, None)]
        present = set(groups)
        return [(ranks, self.own.get(gs[0]), gs) for ranks, gs in self.sizes.items() if present.intersection(gs)]


def _references(record: RunRecord, first_step: float) -> _References:
    """The golden layer's references (see :class:`_References`): the layer's summary holds
    ``reference``, and where its replicas differ in size ``reference_curves`` and
    ``replica_ranks`` (:func:`sncheck.layers.golden.run`)."""
    for layer in record.layers:
        summary = layer.summary if layer.name == "golden" else {}
        main = _placed(summary.get("reference"), first_step)
        sizes = {str(r): [str(g) for g in gs] for r, gs in (summary.get("replica_ranks") or {}).items()
                 if isinstance(gs, list)}
        curves = summary.get("reference_curves") or {}
        own: dict[str, dict | None] = {}
        for ranks, groups in sizes.items():
            own.update(dict.fromkeys(groups, _placed(curves.get(ranks), first_step)))
        if main is not None or any(own.values()):
            return _References(main, sizes, own)
    return _References()


def _placed(ref: object, first_step: float) -> dict | None:
    """A reference curve placed on the run's step numbering: the reference lists one loss
    per step, starting at the run's first step."""
    if not isinstance(ref, dict) or not ref.get("loss"):
        return None
    step_rel, final_rel = band_of(ref)  # the verdict's band, defaults included
    loss = [number(v) for v in ref["loss"]]
    return {"name": str(ref.get("name", "reference")),
            "steps": {first_step + i: v for i, v in enumerate(loss) if v is not None},
            "step_rel": step_rel, "final_rel": final_rel}


def _band_checks(df: pd.DataFrame, curves: pd.Series, refs: _References) -> pd.DataFrame:
    """Per group: steps outside the per-step band of its reference, and whether its last
    step is inside the final band (None where nothing is comparable). A group is judged on
    its ``group`` stage (else its first stage); a non-finite loss is outside any band."""
    cols = ["out_of_band", "final_ok"]
    empty = pd.DataFrame(columns=cols, dtype=object)
    if refs.main is None and not any(refs.own.values()):
        return empty
    is_group = df["stage"].eq("group").groupby(df["group"], sort=False).any()
    first = df.groupby("group", sort=False)["stage"].first()
    judged = pd.Series(np.where(is_group, "group", first), index=is_group.index)
    c = curves.reset_index()
    c = c[c["stage"].to_numpy() == judged.reindex(c["group"]).to_numpy()]
    if refs.own:  # one pass per reference: the replicas of each size against their own
        of = {g: refs.of(g) for g in c["group"].unique()}
        which = c["group"].map(lambda g: id(of[g]))
        pieces = [(of[sub["group"].iat[0]], sub) for _, sub in c.groupby(which, sort=False)]
    else:
        pieces = [(refs.main, c)]
    checked = [_checks(sub, ref) for ref, sub in pieces if ref is not None]
    checked = [x for x in checked if not x.empty]
    return pd.concat(checked) if checked else empty


def _checks(c: pd.DataFrame, ref: dict) -> pd.DataFrame:
    """:func:`_band_checks` of the groups ``c`` (their judged curves) against one reference."""
    c = c[c["step"].isin(list(ref["steps"]))]
    if c.empty:
        return pd.DataFrame(columns=["out_of_band", "final_ok"], dtype=object)
    refs = c["step"].map(ref["steps"]).to_numpy(float)
    out = pd.Series(outside_band(c["loss"].to_numpy(), refs, ref["step_rel"]), index=c.index)
    last = c.groupby("group", sort=False).tail(1)   # curves are sorted by step
    final_out = outside_band(last["loss"].to_numpy(), last["step"].map(ref["steps"]).to_numpy(float),
                             ref["final_rel"])
    res = pd.DataFrame({"out_of_band": out.groupby(c["group"], sort=False).sum().astype(int)}).astype(object)
    res["final_ok"] = pd.Series(~final_out, index=last["group"].to_numpy()).astype(object)
    return res


def _ref_series(ref: dict) -> tuple[list, list[svg.Series], list[svg.Band]]:
    xs = sorted(ref["steps"])
    ys = [ref["steps"][x] for x in xs]
    r = ref["step_rel"]
    return xs, [svg.Series(f"reference {ref['name']}", xs, ys, "#000000", dashed=True)], [
        svg.Band(f"\u00b1{r:.0%} per step", xs, [y - abs(y) * r for y in ys], [y + abs(y) * r for y in ys])]


def _golden_chart(group: str, curve: pd.Series, ref: dict | None, stat: pd.Series) -> dict:
    """``curve``: the group's median loss per (stage, step); ``ref``: its size's reference."""
    series = []
    for k, (stage, cs) in enumerate(curve.groupby(level="stage", sort=True)):
        cs = cs.droplevel("stage")
        series.append(svg.Series(f"{group} ({stage})", list(cs.index), list(cs.values),
                                 svg.PALETTE[k % len(svg.PALETTE)]))
    bands: list[svg.Band] = []
    if ref:
        _, ref_line, bands = _ref_series(ref)
        series += ref_line
    return {"group": group, "fleet": False,
            "svg": svg.line_chart(series, title=f"golden {group}", xlabel="step", ylabel="loss",
                                  bands=bands, width=480, height=260, y_from_zero=False),
            "steps": int(stat["steps"]), "step_time_s": number(stat["step_time_s"]),
            "comm_share": number(stat["comm_share"]), **_check_of(stat)}


def _check_of(stat: pd.Series) -> dict:
    oob, final = stat.get("out_of_band"), stat.get("final_ok")
    return {"out_of_band": None if isnan(oob) else int(oob),
            "final_ok": None if isnan(final) else bool(final)}


def _fleet_golden_chart(curves: pd.Series, stats: pd.DataFrame, ref: dict | None, bad: pd.Index,
                        ranks: str | None = None, members: list[str] | None = None) -> dict:
    """All groups in one chart (or, where replicas differ in size, the ``members`` of
    ``ranks`` ranks): the median over groups per step, and the lowest and highest group per
    step (the spread), against their reference and its band."""
    c = curves.reset_index()
    if members is not None:
        c = c[c["group"].isin(members)]
        stats = stats[stats.index.isin(members)]
    c = c[c["stage"] == "group"] if (c["stage"] == "group").any() else c
    per_step = c.groupby("step")["loss"]
    med, lo, hi = per_step.median(), per_step.min(), per_step.max()
    n = int(c["group"].nunique())
    of = f" of {ranks} ranks" if ranks is not None else ""
    series = [svg.Series(f"median of {n} groups", list(med.index), list(med.values), svg.PALETTE[0]),
              svg.Series("lowest group", list(lo.index), list(lo.values), svg.PALETTE[1]),
              svg.Series("highest group", list(hi.index), list(hi.values), svg.PALETTE[3])]
    bands: list[svg.Band] = []
    if ref:
        _, ref_line, bands = _ref_series(ref)
        series += ref_line
    return {"group": f"all {n} groups{of}", "fleet": True,
            "svg": svg.line_chart(series, title=f"golden: {n} groups{of}", xlabel="step", ylabel="loss",
                                  bands=bands, width=480, height=260, y_from_zero=False),
            "steps": int(stats["steps"].max()), "step_time_s": number(stats["step_time_s"].median()),
            "comm_share": number(stats["comm_share"].median()),
            "out_of_band": int(stats.index.isin(bad).sum()) if ref else None, "final_ok": None}
