"""Prometheus text exposition (for node_exporter's textfile collector or a pushgateway).

Verdicts are state sets (one series per possible state, value 1 for the current one),
so ``sncheck_run_verdict{verdict="fail"} == 1`` is a plain alert expression. Series
are kept few: per-link bandwidth is the median over rounds, and bus bandwidth only
at the largest message size of each group and collective.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

import pandas as pd

from ..topology import link_id
from .json_out import write_text_atomic

RUN_VERDICTS = ("pass", "fail", "error")
LAYER_VERDICTS = ("pass", "fail", "skipped", "error")
SEVERITIES = ("critical", "warning", "info")


def escape_label_value(value: object) -> str:
    """Escape a label value per the exposition format: backslash, quote, newline."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: object) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items()) + "}"


def _value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if v != int(v) else str(int(v))


class _Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_: str,
               samples: Iterable[tuple[dict, float]]) -> None:
        samples = list(samples)
        if not samples:
            return
        help_ = help_.replace("\\", "\\\\").replace("\n", "\\n")
        self.lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
        self.lines += [f"{name}{_labels(**labels)} {_value(v)}" for labels, v in samples]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def render_prometheus(results: dict, rows: pd.DataFrame | None) -> str:
    rows = rows if rows is not None else pd.DataFrame()
    out = _Exposition()
    info = {k: results.get(k) or "" for k in ("run_id", "playbook", "backend", "inventory")}
    out.family("sncheck_run_info", "gauge", "The run these metrics come from.", [(info, 1)])
    verdict = results.get("verdict")
    out.family("sncheck_run_verdict", "gauge", "Overall run verdict (state set).",
               [({"verdict": v}, float(v == verdict)) for v in RUN_VERDICTS])
    findings = results.get("findings") or []
    out.family("sncheck_findings_total", "gauge", "Findings of the run by severity.",
               [({"severity": s}, sum(f.get("severity") == s for f in findings))
                for s in SEVERITIES])
    out.family("sncheck_layer_verdict", "gauge", "Verdict per layer (state set).",
               [({"layer": layer.get("name", "?"), "verdict": v}, float(layer.get("verdict") == v))
                for layer in results.get("layers") or [] for v in LAYER_VERDICTS])
    latest = {e.get("entity"): e for e in results.get("isolation") or []}  # the last step per entity
    out.family("sncheck_isolation_applied", "gauge",
               "1 where the entity's latest isolation step was applied, 0 where it is a dry run or blocked.",
               [({"entity": e.get("entity", ""), "entity_kind": e.get("entity_kind", ""),
                  "action": e.get("action", "")}, float(bool(e.get("applied")))) for e in latest.values()])
    out.family("sncheck_isolation_blocked", "gauge", "1 when the safety cap refused the run's isolations.",
               [({}, float(bool(results.get("isolation_blocked"))))])
    out.family("sncheck_p2p_bandwidth_GBps", "gauge",
               "Median unidirectional bandwidth per card pair over rounds, GB/s.", _p2p(rows))
    out.family("sncheck_busbw_GBps", "gauge",
               "Median bus bandwidth at the largest message size, GB/s.", _busbw(rows))
    return out.text()


def write_prometheus(path: str | os.PathLike, results: dict, rows: pd.DataFrame | None) -> None:
    write_text_atomic(path, render_prometheus(results, rows))


def _of_kind(rows: pd.DataFrame, kind: str, needed: set[str]) -> pd.DataFrame:
    if rows.empty or "kind" not in rows.columns:
        return pd.DataFrame()
    df = rows[rows["kind"] == kind]
    if not needed <= set(df.columns):
        return pd.DataFrame()
    if "status" in df.columns:
        df = df[df["status"].fillna("ok").eq("ok")]
    return df


def _p2p(rows: pd.DataFrame) -> list[tuple[dict, float]]:
    p2p = _of_kind(rows, "p2p", {"src", "dst", "bw_GBps"})
    if p2p.empty:
        return []
    link = p2p["link"] if "link" in p2p.columns else pd.Series(None, index=p2p.index)
    link = link.fillna(pd.Series([link_id(str(a), str(b)) for a, b in zip(p2p["src"], p2p["dst"])],
                                 index=p2p.index))
    tier = p2p["tier"].fillna("") if "tier" in p2p.columns else ""
    df = pd.DataFrame({"link": link, "tier": tier,
                       "bw": pd.to_numeric(p2p["bw_GBps"], errors="coerce")}).dropna(subset=["bw"])
    med = df.groupby(["link", "tier"], sort=True)["bw"].median()
    return [({"link": lk, "tier": t}, float(v)) for (lk, t), v in med.items()]


def _busbw(rows: pd.DataFrame) -> list[tuple[dict, float]]:
    coll = _of_kind(rows, "collective", {"group", "collective", "size_bytes", "busbw_GBps"})
    if coll.empty:
        return []
    df = pd.DataFrame({"group": coll["group"].astype(str), "collective": coll["collective"].astype(str),
                       "size": pd.to_numeric(coll["size_bytes"], errors="coerce"),
                       "busbw": pd.to_numeric(coll["busbw_GBps"], errors="coerce")}).dropna()
    if df.empty:
        return []
    largest = df.groupby(["group", "collective"])["size"].transform("max")
    med = df[df["size"] == largest].groupby(["group", "collective", "size"], sort=True)["busbw"].median()
    return [({"group": g, "collective": c, "size_bytes": int(s)}, float(v))
            for (g, c, s), v in med.items()]
