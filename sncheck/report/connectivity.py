"""The report's connectivity section: the fleet overview (one tile per supernode), a
heatmap per supernode (card x card, or host x host with close-ups at fleet size) and the
worst pairs, from the p2p rows (millions at fleet size)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from sncheck.model import EntityKind, RunRecord
from sncheck.report import p2pstats, svg
from sncheck.report.codes import merge_repeated, narrow_positions
from sncheck.report.tables import isnan
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP, host_of, natural_key

# Past this many cards a domain's heatmap is drawn host x host (mean over card pairs),
# so a 384-card domain stays a small page; past this many hosts, blocks of hosts.
MAX_AXIS = 64
TIERS = (INTRA_HOST, SCALE_UP, SCALE_OUT)

# A domain of at most this many cards is drawn card x card; a larger one host x host
# (or blocks of hosts), with a card-level close-up of the hosts its findings name.
CARD_LEVEL_MAX = 72
MAX_CLOSEUPS = 4       # card-level close-ups per report (each up to 72 x 72 cells)
WORST_PAIRS = 20       # rows of the worst-pairs table
# One record per pair direction, as columns (a supernode's directions at a time: plain
# arrays, no frame per supernode and metric).
Cols = dict[str, np.ndarray]
METRICS = (("bandwidth", "bw_GBps", "bw_rev_GBps", "GB/s", "bandwidth_GBps", True),
           ("latency", "lat_us", None, "\u00b5s", "latency_us", False))


def connectivity_view(record: RunRecord, rows: pd.DataFrame, design: dict[str, dict]) -> dict:
    """The fleet overview (one tile per supernode), the heatmaps per supernode and the
    worst pairs from the p2p rows (millions at fleet size). The rows are read a part at
    a time, and only those a map can draw are kept (:class:`~sncheck.report.p2pstats.Drawn`: no scale-out row,
    codes and values only); the references are one pass over them, then each
    supernode's directions are built, drawn and reduced to its tile and its worst pairs
    in turn, so only one supernode's directions are in memory at a time."""
    view: dict[str, Any] = {"fleet": None, "heatmaps": [], "worst_pairs": [], "closeups_left_out": []}
    drawn = p2pstats.drawn(rows)
    if not drawn.named:
        return view
    domains = _Domains(record, drawn)
    flagged = _flagged_supernodes(record, domains)
    inside, rows_in = domains.inside()
    metrics = []
    for name, col, rev, unit, dkey, higher in METRICS:
        m = _Metric(name, unit, higher, drawn.values[col], drawn.values[rev] if rev else None, inside, drawn.ok)
        if m.any_ok or m.any_failed:
            m.refs = _tier_refs(m, rows_in.tier, design, dkey, domains)
            metrics.append(m)
    del drawn
    if not metrics:
        return view
    members = domains.members()
    large_flagged = [dom for dom, cards in members.items() if dom in flagged and len(cards) > CARD_LEVEL_MAX]
    closeup = set(large_flagged[:MAX_CLOSEUPS])
    heatmaps: list[dict] = []
    candidates: list[list[dict]] = []
    worst: dict[int, float] = {}
    failed: dict[int, int] = {}
    for d, at in rows_in.by_domain():
        dom = domains.names[d]
        cards = members.get(dom)
        small = cards is not None and len(cards) <= CARD_LEVEL_MAX
        for m in metrics:
            sub = _per_direction(m.directed(rows_in, at, domains), domains)
            _tally(sub, d, worst, failed)
            candidates.append(_worst_candidates(sub, m, domains))
            if not cards or (m.name != "bandwidth" and not small and dom not in flagged):
                continue  # latency at fleet size: only where something was found
            heatmaps.append(_domain_heatmap(d, dom, m.name, m.unit, sub, cards, m.refs, domains))
            if dom in closeup:
                heatmaps.append(_domain_heatmap(d, dom, m.name, m.unit, sub, _closeup_cards(cards, flagged[dom]),
                                                m.refs, domains, closeup=True))
    view["heatmaps"] = heatmaps
    view["closeups_left_out"] = large_flagged[MAX_CLOSEUPS:]
    view["fleet"] = _fleet_overview(record, domains, worst, failed)
    view["worst_pairs"] = _worst_pairs(candidates)
    return view


class _Inside:
    """The p2p rows inside the supernodes (positions ``at``): their card, tier and
    supernode codes (narrow: 14 bytes a row; one supernode's are widened as it is drawn),
    and their positions grouped by supernode."""

    def __init__(self, domains: "_Domains", at: np.ndarray) -> None:
        self.src, self.dst = domains.src[at], domains.dst[at]
        self.tier = domains.tier[at]
        self.dom = domains.dom[self.src]

    def by_domain(self) -> list[tuple[int, np.ndarray]]:
        """(supernode code, positions of its rows), supernodes in inventory order."""
        order = narrow_positions(np.argsort(self.dom, kind="stable"))
        doms, starts = np.unique(self.dom[order], return_index=True)
        return [(int(d), part) for d, part in zip(doms, np.split(order, starts[1:]))]


CHUNK_ROWS = 1 << 20   # rows a metric's whole-fleet passes (its tier references) take at once


class _Metric:
    """One pair metric over the rows inside the supernodes (positions ``at`` of the rows
    drawn, :class:`~sncheck.report.p2pstats.Drawn`): forward and reverse value (a row without a reverse measurement stands for both
    directions; latency is half a round trip anyway) and whether the probe succeeded
    (``ok``, every row's). The values stay the rows' own columns: a supernode's are taken
    as it is drawn, and the passes over every row go :data:`CHUNK_ROWS` at a time."""

    def __init__(self, name: str, unit: str, higher: bool, fwd: np.ndarray, rev: np.ndarray | None,
                 at: np.ndarray, ok: np.ndarray) -> None:
        self.name, self.unit, self.higher = name, unit, higher
        self.at, self.ok_all = at, ok
        self.fwd_all, self.rev_all = fwd, rev
        self.any_failed = self.any_ok = False
        for _, fwd, back, ok_ in self.chunks():
            self.any_failed = self.any_failed or bool((~ok_).any())
            self.any_ok = self.any_ok or bool((ok_ & ~(np.isnan(fwd) & np.isnan(back))).any())
        self.refs: dict[str, tuple] = {}

    def values(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Forward value, reverse value and ok of the inside rows ``at``."""
        rows = self.at[at]
        fwd = self.fwd_all[rows]
        back = fwd
        if self.rev_all is not None:
            back = self.rev_all[rows]
            back = np.where(np.isnan(back), fwd, back)
        return fwd, back, self.ok_all[rows]

    def chunks(self) -> Iterator[tuple[slice, np.ndarray, np.ndarray, np.ndarray]]:
        """(the inside rows' slice, forward, reverse, ok) :data:`CHUNK_ROWS` rows at a time."""
        for lo in range(0, len(self.at), CHUNK_ROWS):
            part = slice(lo, lo + CHUNK_ROWS)
            yield (part, *self.values(np.arange(lo, min(lo + CHUNK_ROWS, len(self.at)))))

    def directed(self, rows: _Inside, at: np.ndarray, domains: "_Domains") -> Cols:
        """One record per measured direction (codes ``a -> b``, value, score) of rows ``at``."""
        fwd, back, ok = self.values(at)
        v = np.concatenate([fwd, back])
        ok = np.concatenate([ok, ok])
        tier, dom = rows.tier[at].astype(np.int64), rows.dom[at].astype(np.int64)
        src, dst = rows.src[at].astype(np.int64), rows.dst[at].astype(np.int64)
        pairs = {"a": np.concatenate([src, dst]), "b": np.concatenate([dst, src]),
                 "tier": np.concatenate([tier, tier]), "value": v,
                 "ok": ok & ~np.isnan(v), "failed": ~ok, "dom": np.concatenate([dom, dom])}
        pairs["score"] = _scores(pairs, self.refs, self.higher, domains)
        return pairs


def _tally(sub: Cols, d: int, worst: dict[int, float], failed: dict[int, int]) -> None:
    """A supernode's worst margin and failed directions, over the metrics so far."""
    score = sub["score"]
    if (~np.isnan(score)).any():
        worst[d] = min(worst.get(d, math.inf), float(np.nanmin(score)))
    failed[d] = failed.get(d, 0) + int(((sub["n_ok"] == 0) & (sub["n_fail"] > 0)).sum())


class _Domains:
    """Scale-up domains (supernodes), hosts, cards and tiers as integer codes over what
    the rows name: every lookup below is an array index, never a scan of the rows."""

    def __init__(self, record: RunRecord, drawn: p2pstats.Drawn) -> None:
        # per row drawn until inside() (narrow: a fleet's millions of rows; codes of at most its cards)
        self.src, self.dst, self.cards = drawn.src, drawn.dst, drawn.cards
        host = pd.Series([host_of(c) for c in self.cards.tolist()], dtype=object)
        self.hosts = pd.unique(host)
        self.tier, self.tiers = drawn.tier, drawn.tiers
        sns = (record.topology or {}).get("supernodes") or []
        if sns:
            self.names = [str(sn.get("name", "?")) for sn in sns]
            host_dom = {str(h): i for i, sn in enumerate(sns) for h in sn.get("hosts") or []}
            self.hosts_of = [[str(h) for h in sn.get("hosts") or []] for sn in sns]
        else:
            self.names = ["all"]
            host_dom = {h: 0 for h in self.hosts}
            self.hosts_of = [sorted(set(self.hosts), key=natural_key)]
        self.dom = host.map(host_dom).fillna(-1).to_numpy(np.int32)   # per card code

    def inside(self) -> tuple[np.ndarray, "_Inside"]:
        """The rows inside a supernode (not across supernodes: the maps are per supernode),
        as positions and as :class:`_Inside`; the per-row codes are dropped after it."""
        dom_src = self.dom[self.src]
        at = narrow_positions(np.flatnonzero((self.tier != self.tier_code(SCALE_OUT)) & (dom_src >= 0)
                                    & (dom_src == self.dom[self.dst])))
        del dom_src
        rows = _Inside(self, at)
        self.src = self.dst = self.tier = np.empty(0, dtype=np.int32)
        return at, rows

    @cached_property
    def natural_rank(self) -> np.ndarray:
        """Each card code's place in natural order (:func:`natural_key`), cards whose keys
        are equal (``h01``, ``h1``) at one place."""
        keys = [natural_key(c) for c in self.cards.tolist()]
        rank = np.empty(len(keys), dtype=np.int64)
        place, last = -1, None
        for i in sorted(range(len(keys)), key=keys.__getitem__):
            if keys[i] != last:
                place, last = place + 1, keys[i]
            rank[i] = place
        return rank

    def tier_code(self, tier: str) -> int:
        return self.tiers.index(tier) if tier in self.tiers else -1

    def members(self) -> dict[str, list[str]]:
        """Domain -> its measured cards in natural order, domains in inventory order."""
        order = np.lexsort((self.natural_rank, self.dom))   # (stable: equal keys in code order, as sorted())
        dom = self.dom[order]
        starts = np.searchsorted(dom, np.arange(len(self.names) + 1))
        out = {}
        for d, name in enumerate(self.names):
            if starts[d] < starts[d + 1]:
                out[name] = self.cards[order[starts[d]:starts[d + 1]]].tolist()
        return out


def _per_direction(pairs: Cols, domains: _Domains) -> Cols:
    """One record per direction ``a -> b``: the median over its rounds, in first-seen
    order. Most directions are measured once and pass as they are; only the repeated
    ones (retests, several rounds) are grouped, and their median lands on the first."""
    a, b = pairs["a"].astype(np.int64), pairs["b"].astype(np.int64)
    ok = pairs["ok"]
    cols = {"a": a, "b": b, "tier": pairs["tier"], "dom": pairs["dom"],
            "value": np.where(ok, pairs["value"].astype(float), np.nan),
            "score": pairs["score"].astype(float), "n_ok": ok.astype(np.int64),
            "n_fail": pairs["failed"].astype(np.int64)}
    return merge_repeated(a * len(domains.cards) + b, cols,
                          {"value": "median", "score": "median", "n_ok": "sum", "n_fail": "sum"})


def _tier_refs(m: _Metric, tier: np.ndarray, design: dict[str, dict], dkey: str,
               domains: _Domains) -> dict[str, tuple]:
    """Reference per tier that has a measurement (in either direction): the design value,
    or the tier's median over both directions when design is missing."""
    measured = np.zeros(len(domains.tiers), dtype=np.int64)
    for part, fwd, back, ok in m.chunks():
        t = tier[part]
        measured += np.bincount(np.concatenate([t[ok & ~np.isnan(fwd)], t[ok & ~np.isnan(back)]]),
                                minlength=len(domains.tiers))
    refs = {}
    for code in np.flatnonzero(measured):
        name = domains.tiers[code]
        d = (design.get(name) or {}).get(dkey)
        if d and d > 0:
            refs[name] = (d, "design")
        else:   # the tier's values over both directions (their order: no matter to a median)
            values = []
            for part, fwd, back, ok in m.chunks():
                here = ok & (tier[part] == code)
                values += [fwd[here & ~np.isnan(fwd)], back[here & ~np.isnan(back)]]
            med = float(np.median(np.concatenate(values)))
            refs[name] = (med, "median") if med > 0 else (None, "none")
    return refs


def _ref_values(refs: dict[str, tuple], domains: _Domains) -> np.ndarray:
    """The reference per tier code (NaN where none)."""
    return np.array([(refs.get(t) or (None,))[0] or math.nan for t in domains.tiers] + [math.nan], dtype=float)


def _scores(pairs: Cols, refs: dict[str, tuple], higher: bool, domains: _Domains) -> np.ndarray:
    ref = _ref_values(refs, domains)[pairs["tier"]]
    v = np.where(pairs["ok"], pairs["value"], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = v / ref if higher else ref / np.where(v > 0, v, np.nan)
    score[np.isinf(score)] = np.nan
    return score


def _axis(cards: list[str], card_level: bool) -> tuple[list[str], dict[str, str], str]:
    """Labels, card -> label map, and level: cards, hosts, or blocks of hosts."""
    if card_level:
        return cards, {c: c for c in cards}, "card"
    hosts = sorted({host_of(c) for c in cards}, key=natural_key)
    if len(hosts) <= MAX_AXIS:
        return hosts, {c: host_of(c) for c in cards}, "host"
    size = math.ceil(len(hosts) / MAX_AXIS)
    blocks = [hosts[i:i + size] for i in range(0, len(hosts), size)]
    host_label = {h: f"{b[0]}..{b[-1]}" for b in blocks for h in b}
    labels = [f"{b[0]}..{b[-1]}" for b in blocks]
    return labels, {c: host_label[host_of(c)] for c in cards}, "host block"


def _closeup_cards(cards: list[str], hosts: set[str]) -> list[str]:
    """The cards of the hosts the findings name, then their neighbours, up to 72."""
    by_host: dict[str, list[str]] = {}
    for c in cards:
        by_host.setdefault(host_of(c), []).append(c)
    order = list(by_host)
    named = [h for h in order if h in hosts]
    rest = [h for h in order if h not in hosts]
    picked: list[str] = []
    for h in named + rest:
        if len(picked) + len(by_host[h]) > CARD_LEVEL_MAX:
            if picked:
                break
        picked += by_host[h]
    return sorted(picked[:CARD_LEVEL_MAX], key=natural_key)


def _domain_heatmap(d: int, dom: str, metric: str, unit: str, sub: Cols, cards: list[str],
                    refs: dict[str, tuple], domains: _Domains, closeup: bool = False) -> dict:
    """One domain's map from its directions (``sub``: one record per direction a -> b,
    the median over rounds): card cells as they are, host cells the mean over card pairs."""
    card_level = closeup or len(cards) <= CARD_LEVEL_MAX
    labels, to_label, level = _axis(cards, card_level)
    idx = {label: i for i, label in enumerate(labels)}
    pos = np.full(len(domains.cards) + 1, -1)   # card code -> axis position (-1: not on this map)
    pos[domains.cards.get_indexer(list(to_label))] = [idx[to_label[c]] for c in to_label]
    ga, gb = pos[sub["a"]], pos[sub["b"]]
    on = (ga >= 0) & (gb >= 0)
    sub, ga, gb = {k: v[on] for k, v in sub.items()}, ga[on], gb[on]
    n = len(labels)
    flat = ga * n + gb
    score = sub["score"].astype(float)
    n_ok, n_fail = sub["n_ok"].astype(float), sub["n_fail"].astype(float)
    anchor = f"heatmap-{d}-{metric}" + ("-closeup" if closeup else "")
    title = f"{dom}: pair {metric} ({unit})" + (", close-up" if closeup else "")
    if level == "card" and not closeup:  # a cell per direction, with its hover text
        cells = {}
        for i, j, v, s, ok, bad in zip(ga.tolist(), gb.tolist(), sub["value"].tolist(), score.tolist(),
                                       n_ok.tolist(), n_fail.tolist()):
            measured = ok > 0
            cells[(i, j)] = svg.Cell(value=float(v) if measured else None,
                                     score=float(s) if measured and not isnan(s) else None,
                                     failed=not measured and bad > 0, partial=measured and bad > 0)
        drawing = svg.heatmap(labels, cells, title=title, unit=unit, blank_diagonal=True)
    else:  # compact: host (block) cells, the mean over their card directions; close-ups too
        has = ~np.isnan(score)
        total = np.bincount(flat[has], weights=score[has], minlength=n * n)
        count = np.bincount(flat[has], minlength=n * n)
        oks = np.bincount(flat, weights=n_ok, minlength=n * n)
        fails = np.bincount(flat, weights=n_fail, minlength=n * n)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where((count > 0) & (oks > 0), total / count, np.nan)
        drawing = svg.block_heatmap(labels, mean.reshape(n, n), title=title,
                                    failed=((oks == 0) & (fails > 0)).reshape(n, n),
                                    partial=((oks > 0) & (fails > 0)).reshape(n, n))
    return {"domain": dom, "metric": metric, "level": level, "cards": len(cards),
            "axis": len(labels), "anchor": anchor, "closeup": closeup,
            "reference": _ref_text(refs, sub, unit, domains), "worst": _worst(sub, unit, domains),
            "failed_pairs": int(((n_ok == 0) & (n_fail > 0)).sum()), "svg": drawing}


def _ref_text(refs: dict[str, tuple], sub: Cols, unit: str, domains: _Domains) -> str:
    parts = []
    names = [domains.tiers[c] for c in pd.unique(sub["tier"])]
    for tier in sorted(names, key=lambda t: (TIERS + (t,)).index(t)):
        ref, source = refs.get(tier, (None, "none"))
        if ref is not None:
            parts.append(f"{tier} {source} {ref:.4g} {unit}")
    return ", ".join(parts) or "no reference"


def _worst(sub: Cols, unit: str, domains: _Domains, k: int = 3) -> list[str]:
    """The worst measured directions (lowest score; ties in row order), since large maps
    have no hover text."""
    score = sub["score"].astype(float)
    at = np.flatnonzero(~np.isnan(score))
    if len(at) > k:  # only the directions at or below the k-th lowest are sorted
        at = at[score[at] <= np.partition(score[at], k - 1)[k - 1]]
    at = at[np.argsort(score[at], kind="stable")[:k]]
    a, b, value = sub["a"][at], sub["b"][at], sub["value"].astype(float)[at]
    return [f"{domains.cards[i]} \u2192 {domains.cards[j]}: {v:.4g} {unit} ({s:.0%})"
            for i, j, v, s in zip(a, b, value, score[at])]


def _flagged_supernodes(record: RunRecord, domains: _Domains) -> dict[str, set[str]]:
    """Supernode -> the hosts named by findings at or above the gate (a supernode finding
    names all its hosts)."""
    host_dom = {h: domains.names[d] for d, hosts in enumerate(domains.hosts_of) for h in hosts}
    out: dict[str, set[str]] = {}
    for f in record.findings:
        if not record.gates(f):
            continue
        entity = f.entity
        if f.entity_kind == EntityKind.SUPERNODE and entity in domains.names:
            out.setdefault(entity, set()).update(domains.hosts_of[domains.names.index(entity)])
            continue
        for part in entity.removeprefix("host:").removeprefix("card:").split("<->"):
            host = host_of(part)
            if host in host_dom:
                out.setdefault(host_dom[host], set()).add(host)
    return out


def _fleet_overview(record: RunRecord, domains: _Domains, worst: dict[int, float], failed: dict[int, int]) -> dict:
    """One tile per supernode, coloured by its worst margin over the pair metrics
    (``worst``) and marked by its failed directions (``failed``)."""
    findings_per_sn: dict[str, int] = {}
    host_dom = {h: domains.names[d] for d, hosts in enumerate(domains.hosts_of) for h in hosts}
    for f in record.findings:
        if not record.gates(f):
            continue
        entity = f.entity
        sns = {entity} if entity in domains.names else {
            host_dom[h] for h in (host_of(p) for p in
                                  entity.removeprefix("host:").removeprefix("card:").split("<->"))
            if h in host_dom}
        for sn in sns:
            findings_per_sn[sn] = findings_per_sn.get(sn, 0) + 1
    anchors = {}
    tiles, rows_out = [], []
    for d, name in enumerate(domains.names):
        hosts = domains.hosts_of[d]
        n_cards = int((domains.dom == d).sum())
        w = worst.get(d)
        bad = findings_per_sn.get(name, 0)
        anchors[name] = f"#heatmap-{d}-bandwidth"
        detail = (f"{len(hosts)} hosts, {n_cards} cards measured; "
                  + ("nothing measured" if w is None else f"worst pair margin {w:.0%}")
                  + f"; {bad} finding(s) at or above the gate; {failed.get(d, 0)} failed directions")
        tiles.append(svg.Tile(name, w, bad, failed.get(d, 0), detail))
        rows_out.append({"name": name, "anchor": anchors[name] if n_cards else "", "hosts": len(hosts),
                         "cards": n_cards, "worst": w, "findings": bad, "failed": failed.get(d, 0)})
    n_hosts = sum(len(h) for h in domains.hosts_of)
    return {"svg": svg.fleet_tiles(tiles, title=f"fleet: {len(tiles)} supernodes by worst pair margin"),
            "supernodes": rows_out, "hosts": n_hosts, "cards": int((domains.dom >= 0).sum()),
            "flagged": sum(1 for r in rows_out if r["findings"] or r["failed"])}


def _worst_candidates(sub: Cols, m: _Metric, domains: _Domains, k: int = WORST_PAIRS) -> list[dict]:
    """A supernode's k worst directions of a metric (lowest margin; failed ones at 0), in
    the order they are listed, so the run's worst k are among them."""
    failed = (sub["n_ok"] == 0) & (sub["n_fail"] > 0)
    margin = np.where(failed, 0.0, sub["score"].astype(float))
    at = np.flatnonzero(~np.isnan(margin))
    if len(at) > k:
        kth = np.partition(margin[at], k - 1)[k - 1]
        at = at[margin[at] <= kth]
    if len(at) > k:   # ties with the k-th (a down host's failed directions, all at 0): only the first k
        # in the run's order (:func:`_worst_pairs`: margin, then source and destination in natural
        # order, then as listed) can be among its worst k
        rank = domains.natural_rank
        first = np.lexsort((rank[sub["b"][at]], rank[sub["a"][at]], margin[at]))[:k]
        at = at[np.sort(first)]
    ref = _ref_values(m.refs, domains)[sub["tier"][at]]
    value = sub["value"].astype(float)[at]
    a, b, tier, dom = (sub[c][at] for c in ("a", "b", "tier", "dom"))
    return [{"metric": m.name, "src": str(domains.cards[a[i]]), "dst": str(domains.cards[b[i]]),
             "tier": domains.tiers[tier[i]], "supernode": domains.names[dom[i]] if dom[i] >= 0 else "",
             "measured": None if failed[at[i]] or isnan(value[i]) else float(value[i]),
             "reference": None if isnan(ref[i]) else float(ref[i]), "unit": m.unit,
             "margin": float(margin[at[i]]), "failed": bool(failed[at[i]])} for i in range(len(at))]


def _worst_pairs(candidates: list[list[dict]], k: int = WORST_PAIRS) -> list[dict]:
    """The k worst pair directions of the run (lowest margin; failed ones first; ties in
    order of metric, source and destination)."""
    out = [c for part in candidates for c in part]
    out.sort(key=lambda r: (r["margin"], r["metric"], natural_key(r["src"]), natural_key(r["dst"])))
    return out[:k]
