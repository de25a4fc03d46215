"""Prometheus text exposition (for node_exporter's textfile collector or a pushgateway).

Run-level state plus **per-card** and **per-host** series, never per-pair ones: a fleet of
N cards has ~N² pairs, which no Prometheus wants as series. Per card (and link tier) the
file carries what an alert is written on: the minimum of its pairs' bandwidth and the
maximum of its pairs' p99 latency (its worst links), the count of its failed pairs and its
median launch skew in collectives; per host and tier, the typical figures a dashboard
draws: the median over its cards of each card's median pair bandwidth and median pair p99
latency (per card these were 6 of a card's 12 series: 250 MB at 131,072 cards, more than a
textfile collector should be fed).

Card series carry the label names current dcgm-exporter uses (``hostname``, ``gpu``, and
``UUID`` where the host facts list it: NVIDIA's ``gpu_uuid`` fact) plus ``supernode`` and
``tier``, so queries join with DCGM data on ``(hostname, gpu)``::

    DCGM_FI_DEV_GPU_TEMP * on(hostname, gpu) group_left(supernode) sncheck_card_info

dcgm-exporter renamed ``Hostname`` to ``hostname`` (NVIDIA/dcgm-exporter#655); a join on
the old name matches nothing against a current exporter. A label with no value is left
out of the line (Prometheus treats an empty label as absent).

Every family is a gauge (a gauge never ends in ``_total``: ``sncheck_findings``), in base
units (bytes per second, seconds); no sample carries a timestamp (the textfile collector
skips a whole file that has one). The file is written to a temporary sibling and renamed
(``write_atomic``): the collector reads ``*.prom`` only, and never half a file.

Group bus bandwidth (``sncheck_busbw_bytes_per_second``, one series per stress group:
hosts, rails, domains); the pairwise narrowing groups are left out (per pair).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from sncheck.model import EntityKind, RunRecord, Severity, Verdict
from sncheck.report.tables import column, let_go, of_kind, status_ok
from sncheck.report import p2pstats
from sncheck.report.cardstats import GB, US
from sncheck.report.rankstats import starts_with
from sncheck.config.fileio import atomic_writer
from sncheck.store.frames import fact_rows
from sncheck.topology import host_of, natural_key

RUN_VERDICTS = (Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.INCONCLUSIVE)
LAYER_VERDICTS = tuple(Verdict)  # pass, fail, error, skipped, not_judged, inconclusive
PIECE_LINES = 65_536   # samples of a per-card family written at a time
CARD = ["hostname", "gpu", "UUID", "supernode"]   # a card's labels, dcgm-exporter's names first
HOST = ["hostname", "supernode", "tier"]          # a host's series' labels


def escape_label_value(value: object) -> str:
    """Escape a label value per the exposition format: backslash, quote, newline."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escaped(value: str) -> str:
    """A label value escaped (most need nothing: the test is cheaper than three replaces)."""
    return escape_label_value(value) if ("\\" in value or '"' in value or "\n" in value) else value


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


def _shorts(values: np.ndarray) -> list[str]:
    """:func:`_short` of every value, the checks done column-wise (200,000 values at
    16,384 cards)."""
    if values.dtype.kind not in "iuf" or not len(values):
        return [_short(v) for v in values.tolist()]
    v = values.astype(float)
    out = np.empty(len(v), dtype=object)
    finite = np.isfinite(v)
    whole = finite & (np.abs(v) < 1e15)
    whole[whole] = v[whole] == np.trunc(v[whole])
    out[whole] = [str(int(x)) for x in v[whole].tolist()]
    other = finite & ~whole
    out[other] = [f"{x:.6g}" for x in v[other].tolist()]
    out[~finite] = [_value(x) for x in v[~finite].tolist()]
    return out.tolist()


class _Exposition:
    """The exposition's lines, handed to ``put`` a piece at a time (a family, or
    :data:`PIECE_LINES` samples of a per-card one), each piece ending in a newline: at
    131,072 cards the text is ~250 MB, never held whole."""

    def __init__(self, put: Callable[[str], object]) -> None:
        self.put = put
        self._label_text: dict[tuple, tuple[pd.DataFrame, list[str]]] = {}

    def _lines(self, lines: list[str]) -> None:
        self.put("\n".join(lines) + "\n")

    def _head(self, name: str, kind: str, help_: str) -> None:
        help_ = help_.replace("\\", "\\\\").replace("\n", "\\n")
        self._lines([f"# HELP {name} {help_}", f"# TYPE {name} {kind}"])

    def family(self, name: str, kind: str, help_: str,
               samples: Iterable[tuple[dict, float]]) -> None:
        samples = list(samples)
        if not samples:
            return
        self._head(name, kind, help_)
        self._lines([f"{name}{_labels(**labels)} {_value(v)}" for labels, v in samples])

    def frame(self, name: str, kind: str, help_: str, df: pd.DataFrame, labels: list[str],
              value: str) -> None:
        """A family from a frame, one sample per row, the lines built column-wise."""
        if df.empty or value not in df.columns:
            return
        has = df[value].notna().to_numpy(bool)
        if not has.any():
            return
        self._head(name, kind, help_)
        at = np.flatnonzero(has)
        text = np.asarray(self._labels_of(df, labels), dtype=object)
        values = df[value].to_numpy()
        for lo in range(0, len(at), PIECE_LINES):
            rows = at[lo:lo + PIECE_LINES]
            self._lines([f"{name}{t} {v}" for t, v in zip(text[rows].tolist(), _shorts(values[rows]))])

    def _labels_of(self, df: pd.DataFrame, labels: list[str]) -> list[str]:
        """``{a="..",b=".."}`` per row of ``df``, escaped; built once per frame and label
        set (the card frame carries three families). An empty label is an absent one:
        left out (a card's UUID)."""
        key = (id(df), tuple(labels))
        cached = self._label_text.get(key)
        if cached is None or cached[0] is not df:
            pieces = []   # per label, each row's ``name="value"`` ("" where absent), built per distinct value
            for label in labels:
                at, values = pd.factorize(df[label].astype(str))
                pieces.append(np.asarray([f'{label}="{_escaped(v)}"' if v else "" for v in values.tolist()],
                                         dtype=object)[at].tolist())
            text = ["{" + ",".join(filter(None, row)) + "}" for row in zip(*pieces)]
            cached = (df, text)
            self._label_text[key] = cached
        return cached[1]



def render_prometheus(record: RunRecord, rows: pd.DataFrame | None) -> str:
    """The exposition text whole (tests, small runs); a run's file is written in pieces
    (:func:`write_prometheus`)."""
    pieces: list[str] = []
    expose(record, rows, pieces.append)
    return "".join(pieces)


def expose(record: RunRecord, rows: pd.DataFrame | None, put: Callable[[str], object]) -> None:
    """The exposition, piece by piece into ``put`` (see :class:`_Exposition`)."""
    rows = rows if rows is not None else pd.DataFrame()
    out = _Exposition(put)
    info = {"run_id": record.run_id, "playbook": record.playbook, "backend": record.backend,
            "inventory": record.inventory}
    out.family("sncheck_run_info", "gauge", "The run these metrics come from.", [(info, 1)])
    verdict = record.verdict
    out.family("sncheck_run_verdict", "gauge", "Overall run verdict (state set).",
               [({"verdict": v}, float(v == verdict)) for v in RUN_VERDICTS])
    findings = record.findings
    out.family("sncheck_findings", "gauge", "Findings of the run by severity.",
               [({"severity": s.value}, sum(f.severity == s for f in findings))
                for s in Severity.most_severe_first()])
    out.family("sncheck_switch_finding_nics", "gauge",
               "A scale-out switch named as a culprit: the NICs its finding explains (the hosts behind them "
               "lose that rail until it is repaired).",
               [({"switch": f.entity, "rule": f.rule, "severity": f.severity.value}, len(f.evidence.get("nics") or []))
                for f in findings if f.entity_kind == EntityKind.SWITCH])
    flagged = [record.flags(f) for f in findings]
    out.family("sncheck_findings_flagged", "gauge",
               "Findings of the run that gate, that say something was not measured, or not judged.",
               [({"flag": k}, sum(fl[k] for fl in flagged)) for k in ("gates", "not_measured", "not_judged")])
    scope = record.scope or None
    if scope:  # a scoped run (--targets): only what is in scope has series here
        out.family("sncheck_run_scope", "gauge", "A scoped run: its targets and how many cards were in scope.",
                   [({"targets": " ".join(map(str, scope.get("targets") or []))}, len(scope.get("cards") or []))])
    out.family("sncheck_layer_verdict", "gauge", "Verdict per layer (state set).",
               [({"layer": layer.name, "verdict": v}, float(record.layer_verdict(layer) == v))
                for layer in record.layers for v in LAYER_VERDICTS])
    supernode = _supernode_of_host(record)
    uuids = gpu_uuids(rows)
    out.family("sncheck_isolation_applied", "gauge",
               "1 where the entity's latest isolation step was applied, 0 where it is a dry run or blocked.",
               _isolation(record, supernode, uuids))
    out.family("sncheck_isolation_blocked", "gauge", "1 when the safety cap refused the run's isolations.",
               [({}, float(bool(record.isolation_blocked)))])
    out.family("sncheck_design_p2p_bandwidth_bytes_per_second", "gauge",
               "Design bandwidth of a link tier (per card pair, one direction), bytes/s.",
               _design(record, "bandwidth_GBps", GB))
    out.family("sncheck_design_p2p_latency_seconds", "gauge", "Design latency of a link tier, s.",
               _design(record, "latency_us", US))
    cards = _in_scope(card_p2p(rows, supernode, uuids), scope)
    let_go(rows, "p2p")   # read for the card series (and html before them): not needed again here
    skew = _in_scope(card_skew(rows, supernode, uuids), scope)
    out.frame("sncheck_card_info", "gauge", "A card the run measured, with its labels (value 1): "
              "join DCGM series on (hostname, gpu).",
              _in_scope(_card_info([cards, skew], supernode, uuids), scope), CARD, "one")
    labels = CARD + ["tier"]
    out.frame("sncheck_card_p2p_bandwidth_min_bytes_per_second", "gauge",
              "Lowest bandwidth over a card's pairs in a link tier (each pair: the mean of its "
              "two directions, median over rounds), bytes/s.", cards, labels, "bw_min")
    out.frame("sncheck_card_p2p_latency_p99_max_seconds", "gauge",
              "Highest p99 ping-pong latency over a card's pairs in a link tier (each pair: its p99, "
              "median over rounds), s.", cards, labels, "lat_p99_max")
    hosts = _per_host(cards)
    out.frame("sncheck_host_p2p_bandwidth_median_bytes_per_second", "gauge",
              "Median over a host's cards of each card's median pair bandwidth in a link tier, bytes/s.",
              hosts, HOST, "bw_median")
    out.frame("sncheck_host_p2p_latency_p99_seconds", "gauge",
              "Median over a host's cards of each card's median pair p99 ping-pong latency in a link tier, s.",
              hosts, HOST, "lat_p99")
    out.frame("sncheck_card_p2p_failed_pairs", "gauge",
              "Pairs of a card (all tiers) that carried nothing (failed, timed out).",
              _per_card_total(cards, "failed"), CARD, "failed")
    out.frame("sncheck_card_launch_skew_seconds", "gauge",
              "A card's median launch skew over the collectives it took part in, s.",
              skew, CARD, "skew")
    out.family("sncheck_busbw_bytes_per_second", "gauge",
               "Median bus bandwidth of a stress group at the largest message size, bytes/s.", _busbw(rows))


def write_prometheus(path: str | os.PathLike, record: RunRecord, rows: pd.DataFrame | None) -> None:
    """The file written as its pieces come (atomically: a temporary sibling renamed whole)."""
    with atomic_writer(path) as fh:
        expose(record, rows, lambda piece: fh.write(piece.encode("utf-8")))


def _in_scope(cards: pd.DataFrame, scope: dict | None) -> pd.DataFrame:
    """A scoped run's card series: the cards in scope only (their peers were not the test)."""
    if not scope or cards.empty or "card" not in cards.columns:
        return cards
    return cards[cards["card"].isin(set(scope.get("cards") or []))].reset_index(drop=True)


def _supernode_of_host(record: RunRecord) -> dict[str, str]:
    return {str(h): str(sn.get("name", "")) for sn in (record.topology or {}).get("supernodes") or []
            for h in sn.get("hosts") or []}


def gpu_uuids(rows) -> dict[str, str]:
    """Card id -> its UUID, from the hosts' ``gpu_uuid`` facts (index -> UUID) that were read."""
    # Only the gpu_uuid facts' values are read (the others carry every card's counters as JSON).
    facts = fact_rows(rows, ("fact", "status"), lambda f: column(f, "fact").astype(str).eq("gpu_uuid") & status_ok(f))
    if facts.empty:
        return {}
    out: dict[str, str] = {}
    for host, value in zip(column(facts, "host").astype(str), column(facts, "value")):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, dict):
            out.update({f"{host}/gpu{i}": str(u) for i, u in value.items() if u})
    return out


def _isolation(record: RunRecord, supernode: dict[str, str], uuids: dict[str, str]) -> list[tuple[dict, float]]:
    """The latest step per entity; a card's (or NIC's) series also carries its card
    labels, so the quarantined and isolated cards join with DCGM data."""
    latest = {e.entity: e for e in record.isolation}  # the last step per entity
    out = []
    for e in latest.values():
        entity, kind = e.entity, e.entity_kind.value
        labels = {"entity": entity, "entity_kind": kind, "action": e.action.value}
        if kind in ("card", "host", "nic"):
            host = host_of(entity)
            labels["hostname"] = host
            if kind == "card" and "/gpu" in entity:
                card = entity
                labels["gpu"] = entity.rsplit("/gpu", 1)[1]
            elif kind == "nic" and "/nic" in entity:   # rail r serves card r
                card = f"{host}/gpu{entity.rsplit('/nic', 1)[1]}"
                labels["gpu"] = card.rsplit("/gpu", 1)[1]
            else:
                card = ""
            if uuids.get(card):
                labels["UUID"] = uuids[card]
            if supernode.get(host):
                labels["supernode"] = supernode[host]
        out.append((labels, float(e.applied)))
    return out


def _design(record: RunRecord, key: str, scale: float) -> list[tuple[dict, float]]:
    out = []
    for tier, d in sorted((record.design or {}).items()):
        try:
            raw = d.get(key) if isinstance(d, dict) else None
            v = float(raw) if raw is not None else math.nan
        except (TypeError, ValueError):
            v = math.nan
        if math.isfinite(v):
            out.append(({"tier": tier}, float(f"{v * scale:.12g}")))
    return out


def _card_info(frames: list[pd.DataFrame], supernode: dict[str, str], uuids: dict[str, str]) -> pd.DataFrame:
    """One row per card the per-card frames name (pairs, collectives) or whose UUID the facts list."""
    names = set(uuids)
    for df in frames:
        if not df.empty:
            names |= set(df["card"].astype(str))
    if not names:
        return pd.DataFrame()
    card = pd.Series(sorted(names, key=natural_key), dtype=object)
    out = pd.concat([_card_labels(card, supernode, uuids), pd.DataFrame({"card": card, "one": 1})], axis=1)
    return out


def _of_kind(rows, kind: str, columns: tuple[str, ...], keys: tuple[str, ...]) -> pd.DataFrame:
    """The ``columns`` of ``kind`` (only those are read: a column the rows lack is all
    missing); no rows where a key column (the entity a series is about) names nothing."""
    df = of_kind(rows, kind, columns)
    if df.empty or any(df[c].isna().all() for c in keys):
        return pd.DataFrame()
    return df


def _card_labels(card: pd.Series, supernode: dict[str, str], uuids: dict[str, str]) -> pd.DataFrame:
    """dcgm-exporter's labels for card ids ``<host>/gpu<index>`` (``UUID`` empty where
    the facts do not list it: the line leaves it out)."""
    at, names = pd.factorize(card.astype(str))   # each card's labels once, then taken per row
    split = [c.rsplit("/gpu", 1) for c in names.tolist()]
    host = [p[0] for p in split]
    labels = {"hostname": host, "gpu": [p[1] if len(p) > 1 else "" for p in split],
              "UUID": [uuids.get(c) or "" for c in names.tolist()] if uuids else None,
              "supernode": [supernode.get(h) or "" for h in host]}
    return pd.DataFrame({k: np.asarray(v, dtype=object)[at] if v is not None else "" for k, v in labels.items()},
                        index=card.index)


def card_p2p(rows: pd.DataFrame, supernode: dict[str, str], uuids: dict[str, str] | None = None) -> pd.DataFrame:
    """Per card and tier: min and median pair bandwidth (bytes/s), median pair p99
    latency (s) and failed pairs, over both ends of each pair
    (:func:`sncheck.report.p2pstats.card_stats`: the reports' one pass over the p2p
    rows), with each card's labels, in natural order of hosts and gpus."""
    out = p2pstats.card_stats(rows)
    if out.empty:
        return out
    out = pd.concat([_card_labels(out["card"], supernode, uuids or {}), out], axis=1)
    return _natural(out, ["hostname", "gpu", "tier"])


def _per_host(cards: pd.DataFrame) -> pd.DataFrame:
    """Per host and tier: the median over its cards of their median bandwidth and p99
    (a card with none measured in the tier left out), hosts in the cards' order, each
    host's tiers by name (as a card's)."""
    if cards.empty:
        return cards
    hosts = cards.groupby(HOST, sort=False)[["bw_median", "lat_p99"]].median().reset_index()
    first = pd.factorize(hosts["hostname"])[0]
    return hosts.iloc[np.lexsort((hosts["tier"].to_numpy(dtype=str), first))].reset_index(drop=True)


def _per_card_total(cards: pd.DataFrame, column: str) -> pd.DataFrame:
    if cards.empty:
        return cards
    total = cards.groupby(CARD, sort=False)[column].sum().reset_index()
    return total


def card_skew(rows: pd.DataFrame, supernode: dict[str, str], uuids: dict[str, str] | None = None) -> pd.DataFrame:
    """Per card: the median of its launch skew (s) over the collectives it took part in
    (:class:`sncheck.report.rankstats.Skews`, built in the run's one pass over the rank rows),
    with each card's labels, in natural order of hosts and gpus."""
    out = p2pstats.skews(rows)
    if out.empty:
        return out
    out = pd.concat([_card_labels(out["card"], supernode, uuids or {}), out], axis=1)
    return _natural(out, ["hostname", "gpu"])


def _natural(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows in natural order of hosts and gpu numbers (a stable, readable file); each
    distinct host's and gpu's key is worked out once, then taken per row."""
    at, hosts = pd.factorize(df["hostname"])
    host = pd.Series(hosts).str.extract(r"^(.*?)(\d*)$")
    g_at, gpus = pd.factorize(df["gpu"])
    order = pd.DataFrame({"h0": host[0].to_numpy(dtype=object)[at],
                          "h1": pd.to_numeric(host[1], errors="coerce").fillna(-1).to_numpy(float)[at],
                          "g": pd.to_numeric(pd.Series(gpus), errors="coerce").fillna(-1).to_numpy(float)[g_at]},
                         index=df.index)
    for k in keys[2:]:
        order[k] = df[k]
    return df.loc[order.sort_values(list(order.columns), kind="stable").index].reset_index(drop=True)


def _busbw(rows: pd.DataFrame) -> list[tuple[dict, float]]:
    coll = _of_kind(rows, "collective", ("group", "group_kind", "collective", "size_bytes", "busbw_GBps", "status"),
                    ("group",))
    if coll.empty:
        return []
    coll = coll[status_ok(coll) & (coll["group_kind"].astype(str) != "pair") & ~starts_with(coll["group"], "pair:")]
    # A row without a group, collective, size or bandwidth names no series (its labels would read "nan").
    df = pd.DataFrame({"group": coll["group"], "collective": coll["collective"],
                       "size": pd.to_numeric(coll["size_bytes"], errors="coerce"),
                       "busbw": pd.to_numeric(coll["busbw_GBps"], errors="coerce")}).dropna()
    if df.empty:
        return []
    df = df.assign(group=df["group"].astype(str), collective=df["collective"].astype(str))
    largest = df.groupby(["group", "collective"])["size"].transform("max")
    med = df[df["size"] == largest].groupby(["group", "collective", "size"], sort=True)["busbw"].median()
    return [({"group": g, "collective": c, "size_bytes": int(s)}, float(v) * GB)
            for (g, c, s), v in med.items()]


def write(record: RunRecord, rows: pd.DataFrame | None, path: str | os.PathLike, template_dirs: tuple = ()) -> None:  # noqa: ARG001 -- the report format hook (sncheck.report): no templates
    """The report formats' hook (sncheck.report.FORMATS)."""
    write_prometheus(path, record, rows)
