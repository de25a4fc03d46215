"""Prometheus text exposition (for node_exporter's textfile collector or a pushgateway).

Run-level state plus **per-card** series, never per-pair ones: a fleet of N cards has
~N² pairs, which no Prometheus wants as series. Per card (and link tier) the file
carries the minimum and the median of its pairs' bandwidth, the median of its pairs'
p99 latency, the count of its failed pairs, and its median launch skew in collectives.

Card series use the label names dcgm-exporter uses (``Hostname``, ``gpu``) plus
``supernode``, so queries join with DCGM data::

    sncheck_card_p2p_bandwidth_min_bytes_per_second * on(Hostname, gpu) group_left DCGM_FI_DEV_GPU_TEMP

Values are in base units (bytes per second, seconds); no sample carries a timestamp
(the textfile collector skips a whole file that has one). The file is written to a
temporary sibling and renamed (``write_text_atomic``): the collector reads ``*.prom``
only, and never half a file.

Group bus bandwidth (``sncheck_busbw_GBps``, one series per stress group: hosts, rails,
domains) is kept as before; the pairwise narrowing groups are left out (per pair).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..columns import kind_rows
from .json_out import write_text_atomic

RUN_VERDICTS = ("pass", "fail", "error")
LAYER_VERDICTS = ("pass", "fail", "skipped", "error")
SEVERITIES = ("critical", "warning", "info")
GB = 1e9
US = 1e-6


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


def _short(v: float) -> str:
    """A per-card value with 6 significant digits (measurements carry no more): at
    16,384 cards every byte of a line is 16,384 bytes of the file."""
    if math.isnan(v) or math.isinf(v):
        return _value(v)
    return str(int(v)) if v == int(v) and abs(v) < 1e15 else f"{v:.6g}"


class _Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def _head(self, name: str, kind: str, help_: str) -> None:
        help_ = help_.replace("\\", "\\\\").replace("\n", "\\n")
        self.lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]

    def family(self, name: str, kind: str, help_: str,
               samples: Iterable[tuple[dict, float]]) -> None:
        samples = list(samples)
        if not samples:
            return
        self._head(name, kind, help_)
        self.lines += [f"{name}{_labels(**labels)} {_value(v)}" for labels, v in samples]

    def frame(self, name: str, kind: str, help_: str, df: pd.DataFrame, labels: list[str],
              value: str) -> None:
        """A family from a frame, one sample per row, the lines built column-wise."""
        if df.empty or value not in df.columns:
            return
        df = df[df[value].notna()]
        if df.empty:
            return
        self._head(name, kind, help_)
        text = pd.Series(name + "{", index=df.index)
        for i, label in enumerate(labels):
            esc = (df[label].astype(str).str.replace("\\", "\\\\", regex=False)
                   .str.replace('"', '\\"', regex=False).str.replace("\n", "\\n", regex=False))
            text = text + ("," if i else "") + label + '="' + esc + '"'
        self.lines += (text + "} " + df[value].map(_short)).tolist()

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
    supernode = _supernode_of_host(results)
    cards = card_p2p(rows, supernode)
    labels = ["Hostname", "gpu", "supernode", "tier"]
    out.frame("sncheck_card_p2p_bandwidth_min_bytes_per_second", "gauge",
              "Lowest bandwidth over a card's pairs in a link tier (each pair: the mean of its "
              "two directions, median over rounds), bytes/s.", cards, labels, "bw_min")
    out.frame("sncheck_card_p2p_bandwidth_median_bytes_per_second", "gauge",
              "Median bandwidth over a card's pairs in a link tier, bytes/s.", cards, labels, "bw_median")
    out.frame("sncheck_card_p2p_latency_p99_seconds", "gauge",
              "Median over a card's pairs in a link tier of each pair's p99 ping-pong latency, s.",
              cards, labels, "lat_p99")
    out.frame("sncheck_card_p2p_failed_pairs", "gauge",
              "Pairs of a card (all tiers) that carried nothing (failed, timed out).",
              _per_card_total(cards, "failed"), ["Hostname", "gpu", "supernode"], "failed")
    out.frame("sncheck_card_launch_skew_seconds", "gauge",
              "A card's median launch skew over the collectives it took part in, s.",
              card_skew(rows, supernode), ["Hostname", "gpu", "supernode"], "skew")
    out.family("sncheck_busbw_GBps", "gauge",
               "Median bus bandwidth of a stress group at the largest message size, GB/s.", _busbw(rows))
    return out.text()


def write_prometheus(path: str | os.PathLike, results: dict, rows: pd.DataFrame | None) -> None:
    write_text_atomic(path, render_prometheus(results, rows))


def _supernode_of_host(results: dict) -> dict[str, str]:
    return {str(h): str(sn.get("name", "")) for sn in (results.get("topology") or {}).get("supernodes") or []
            for h in sn.get("hosts") or []}


def _of_kind(rows, kind: str, needed: set[str]) -> pd.DataFrame:
    df = kind_rows(rows, kind)
    if not needed <= set(df.columns):
        return pd.DataFrame()
    return df


def _card_labels(card: pd.Series, supernode: dict[str, str]) -> pd.DataFrame:
    """dcgm-exporter's labels for card ids ``<host>/gpu<index>``."""
    parts = card.astype(str).str.rsplit("/gpu", n=1)
    host = parts.str[0]
    return pd.DataFrame({"Hostname": host, "gpu": parts.str[1].fillna(""),
                         "supernode": host.map(supernode).fillna("")}, index=card.index)


def card_p2p(rows: pd.DataFrame, supernode: dict[str, str]) -> pd.DataFrame:
    """Per card and tier: min and median pair bandwidth (bytes/s), median pair p99
    latency (s) and failed pairs; grouped, one pass each, over both ends of each pair."""
    p2p = _of_kind(rows, "p2p", {"src", "dst", "bw_GBps"})
    if p2p.empty:
        return pd.DataFrame()
    ok = p2p["status"].fillna("ok").eq("ok") if "status" in p2p.columns else pd.Series(True, index=p2p.index)
    fwd = pd.to_numeric(p2p["bw_GBps"], errors="coerce")
    rev = pd.to_numeric(p2p["bw_rev_GBps"], errors="coerce") if "bw_rev_GBps" in p2p.columns else fwd
    count = fwd.notna().astype(int) + rev.notna().astype(int)   # one direction may be missing
    both = (fwd.fillna(0.0) + rev.fillna(0.0)) / count.where(count > 0)
    p99 = (pd.to_numeric(p2p["lat_p99_us"], errors="coerce") if "lat_p99_us" in p2p.columns
           else pd.Series(np.nan, index=p2p.index))
    tier = p2p["tier"].fillna("") if "tier" in p2p.columns else pd.Series("", index=p2p.index)
    # Integer codes for cards and tiers: two grouped passes over millions of rows.
    codes, cards = pd.factorize(pd.concat([p2p["src"].astype(str), p2p["dst"].astype(str)], ignore_index=True))
    tcode, tiers = pd.factorize(tier.astype(str))
    n, nt = len(cards), max(len(tiers), 1)
    a, b = codes[:len(p2p)].astype(np.int64), codes[len(p2p):].astype(np.int64)
    pairs = pd.DataFrame({"a": a, "b": b, "t": tcode, "bw": (both.where(ok) * GB).to_numpy(float),
                          "p99": (p99.where(ok) * US).to_numpy(float), "failed": (~ok).to_numpy(bool)})
    # One value per pair (the median over its rounds), then both ends of it.
    g = pairs.groupby((a * n + b) * nt + tcode, sort=False)
    per_pair = g[["a", "b", "t"]].first()
    per_pair["bw"], per_pair["p99"], per_pair["failed"] = g["bw"].median(), g["p99"].median(), g["failed"].all()
    ends = pd.concat([per_pair.rename(columns={"a": "card"}).drop(columns="b"),
                      per_pair.rename(columns={"b": "card"}).drop(columns="a")], ignore_index=True)
    e = ends.groupby(ends["card"].to_numpy(np.int64) * nt + ends["t"].to_numpy(), sort=False)
    out = e[["card", "t"]].first()
    out["bw_min"], out["bw_median"] = e["bw"].min(), e["bw"].median()
    out["lat_p99"], out["failed"] = e["p99"].median(), e["failed"].sum()
    out = out.reset_index(drop=True)
    out["tier"] = np.asarray(tiers, dtype=object)[out["t"].to_numpy()] if len(tiers) else ""
    out["card"] = np.asarray(cards, dtype=object)[out["card"].to_numpy()]
    out = pd.concat([_card_labels(out["card"], supernode), out.drop(columns="t")], axis=1)
    return _natural(out, ["Hostname", "gpu", "tier"])


def _per_card_total(cards: pd.DataFrame, column: str) -> pd.DataFrame:
    if cards.empty:
        return cards
    total = cards.groupby(["Hostname", "gpu", "supernode"], sort=False)[column].sum().reset_index()
    return total


def card_skew(rows: pd.DataFrame, supernode: dict[str, str]) -> pd.DataFrame:
    ranks = _of_kind(rows, "rank", {"card", "skew_us"})
    if ranks.empty:
        return pd.DataFrame()
    if "group" in ranks.columns:  # the pairwise narrowing pass is per pair, not a collective
        ranks = ranks[~ranks["group"].astype(str).str.startswith("pair:")]
    skew = (pd.to_numeric(ranks["skew_us"], errors="coerce") * US).groupby(ranks["card"].astype(str)).median()
    out = pd.DataFrame({"card": skew.index, "skew": skew.to_numpy()})
    out = pd.concat([_card_labels(out["card"], supernode), out], axis=1)
    return _natural(out, ["Hostname", "gpu"])


def _natural(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows in natural order of hosts and gpu numbers (a stable, readable file)."""
    host = df["Hostname"].str.extract(r"^(.*?)(\d*)$")
    order = pd.DataFrame({"h0": host[0], "h1": pd.to_numeric(host[1], errors="coerce").fillna(-1),
                          "g": pd.to_numeric(df["gpu"], errors="coerce").fillna(-1)}, index=df.index)
    for k in keys[2:]:
        order[k] = df[k]
    return df.loc[order.sort_values(list(order.columns), kind="stable").index].reset_index(drop=True)


def _busbw(rows: pd.DataFrame) -> list[tuple[dict, float]]:
    coll = _of_kind(rows, "collective", {"group", "collective", "size_bytes", "busbw_GBps"})
    if coll.empty:
        return []
    if "status" in coll.columns:
        coll = coll[coll["status"].fillna("ok").eq("ok")]
    if "group_kind" in coll.columns:
        coll = coll[coll["group_kind"].astype(str) != "pair"]
    coll = coll[~coll["group"].astype(str).str.startswith("pair:")]
    df = pd.DataFrame({"group": coll["group"].astype(str), "collective": coll["collective"].astype(str),
                       "size": pd.to_numeric(coll["size_bytes"], errors="coerce"),
                       "busbw": pd.to_numeric(coll["busbw_GBps"], errors="coerce")}).dropna()
    if df.empty:
        return []
    largest = df.groupby(["group", "collective"])["size"].transform("max")
    med = df[df["size"] == largest].groupby(["group", "collective", "size"], sort=True)["busbw"].median()
    return [({"group": g, "collective": c, "size_bytes": int(s)}, float(v))
            for (g, c, s), v in med.items()]
