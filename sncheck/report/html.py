"""The HTML report: one self-contained page that opens offline.

The page is a Jinja template over a plain view model built here from the results
envelope (verdicts, findings, isolation) and the measurement rows (charts, facts).
SVG is inline and there is no script, so the file can be mailed, archived or opened
on an air-gapped jump host. Its layout is ``report.css``, written beside it and
linked (never inline ``<style>`` or ``style=``: Jenkins' CSP allows a stylesheet
from the same directory and nothing inline); without it the page reads in full.

Templates come from the package ``sncheck.templates`` (``reports/templates`` in the
tree). A user's template directories go first in a ChoiceLoader, so a user file
named like a built-in partial (``_summary.html``) replaces it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    FunctionLoader,
    StrictUndefined,
)
from jinja2.loaders import split_template_path

from sncheck import __version__
from sncheck.store.frames import kind_rows
from sncheck.errors import ConfigError
from sncheck.health.ops import band_of, outside_band
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP, host_of, natural_key
from sncheck.report import svg
from sncheck.report.codes import id_codes, merge_repeated
from sncheck.report.firstscreen import first_screen
from sncheck.model import Verdict
from sncheck.run.verdict import GATES, NOT_JUDGED, NOT_MEASURED, flags_of
from sncheck.report.json_out import write_text_atomic

if TYPE_CHECKING:  # importlib.abc.Traversable moves in 3.12; only annotations need it
    from importlib.abc import Traversable

# Past this many cards a domain's heatmap is drawn host x host (mean over card pairs),
# so a 384-card domain stays a small page; past this many hosts, blocks of hosts.
MAX_AXIS = 64
SEVERITIES = ("critical", "warning", "info")
VERDICTS = tuple(Verdict)
# The link tier a stress group's traffic crosses, for the design line on its chart.
GROUP_TIER = {"host": INTRA_HOST, "rail": SCALE_UP, "domain": SCALE_UP, "cross": SCALE_OUT}
KIND_COLOR = {"host": svg.PALETTE[0], "rail": svg.PALETTE[1], "domain": svg.PALETTE[2],
              "cross": svg.PALETTE[3]}
TIER_COLOR = {INTRA_HOST: "#555555", SCALE_UP: "#000000", SCALE_OUT: "#b00000"}
TIERS = (INTRA_HOST, SCALE_UP, SCALE_OUT)


def render_html(results: dict, rows: pd.DataFrame | None,
                template_dirs: Sequence[str | os.PathLike] | None = None) -> str:
    """Render the report page for one run."""
    env = make_environment(template_dirs)
    return env.get_template("report.html").render(**build_context(results, rows))


STYLESHEET = "report.css"   # beside the page; a user's template directory may override it


def write_html(path: str | os.PathLike, results: dict, rows: pd.DataFrame | None,
               template_dirs: Sequence[str | os.PathLike] | None = None) -> None:
    """``path`` and the stylesheet it links, ``report.css`` in the same directory."""
    env = make_environment(template_dirs)
    write_text_atomic(path, env.get_template("report.html").render(**build_context(results, rows)))
    css, _, _ = env.loader.get_source(env, STYLESHEET)
    write_text_atomic(Path(path).with_name(STYLESHEET), css)


def make_environment(template_dirs: Sequence[str | os.PathLike] | None = None) -> Environment:
    loaders: list[BaseLoader] = []
    for d in template_dirs or ():
        if not Path(d).is_dir():
            raise ConfigError(f"template directory {str(d)!r} does not exist")
        loaders.append(FileSystemLoader(str(d)))
    loaders.append(_builtin_loader())
    env = Environment(loader=ChoiceLoader(loaders), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = fmt_value
    return env


def _template_root() -> Traversable:
    # A checkout's own templates first: an editable install elsewhere (another worktree)
    # must not render this tree's report with its templates.
    tree = Path(__file__).resolve().parents[2] / "reports" / "templates"
    if tree.is_dir():
        return tree
    try:
        return resources.files("sncheck.templates")
    except ModuleNotFoundError:
        return tree


def _builtin_loader() -> FunctionLoader:
    root = _template_root()

    def load(name: str) -> str | None:
        node = root.joinpath(*split_template_path(name))
        return node.read_text(encoding="utf-8") if node.is_file() else None

    return FunctionLoader(load)


def fmt_value(v: Any) -> str:
    """Numbers for people: None/NaN as a dash, floats to 4 significant digits."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "\u2014"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.4e}"
    return str(v)


# ---- view model ------------------------------------------------------------------

def build_context(results: dict, rows: pd.DataFrame | None) -> dict:
    """Everything the templates read; every key is always present (StrictUndefined)."""
    rows = rows if rows is not None else pd.DataFrame()
    design = _design(results)
    findings = _findings(results)
    return {
        "version": __version__,
        "run": _run_header(results),
        "design": [{"tier": t, **v} for t, v in design.items()],
        "layers": _layers(results),
        "findings": findings,
        "severity_counts": {s: sum(f["severity"] == s for f in findings) for s in SEVERITIES},
        "isolation": _isolation(results),
        "isolation_blocked": results.get("isolation_blocked") or "",
        **connectivity_view(results, rows, design),  # fleet, heatmaps, worst_pairs
        "collective_charts": collective_charts(rows, design),
        **golden_view(results, rows),  # golden_charts, golden_summary
        "facts": host_facts(rows),
        "not_run": _records(_of_kind(rows, "not_run"),
                            ("layer", "entity", "entity_kind", "status", "message")),
        "top": first_screen(results),  # verdict word, actions, changes, provenance
    }


def verdict_class(verdict: Any) -> str:
    return f"v-{verdict}" if verdict in VERDICTS else "v-unknown"


def _run_header(results: dict) -> dict:
    keys = ("run_id", "playbook", "backend", "inventory", "started", "finished", "seed")
    head = {k: results.get(k) for k in keys}
    head["verdict"] = results.get("verdict", "unknown")
    head["verdict_class"] = verdict_class(head["verdict"])
    head["gate"] = results.get("gate", "critical")
    head["scope"] = results.get("scope")  # a scoped run (--targets): say to what
    return head


def _design(results: dict) -> dict[str, dict]:
    design = results.get("design") or {}
    return {t: {"bandwidth_GBps": _num(design[t].get("bandwidth_GBps")),
                "latency_us": _num(design[t].get("latency_us"))}
            for t in TIERS if isinstance(design.get(t), dict)}


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _layers(results: dict) -> list[dict]:
    out = []
    for layer in results.get("layers") or []:
        summary = layer.get("summary") or {}
        out.append({"name": layer.get("name", "?"), "verdict": layer.get("verdict", "unknown"),
                    "verdict_class": verdict_class(layer.get("verdict")),
                    "cut_short": summary.get("cut_short") or "",
                    "summary": _summary_items(summary)})
    return out


def _summary_items(summary: dict) -> list[tuple[str, str]]:
    """Scalars and short lists as 'key: value'; nested objects by name only."""
    items = []
    for key, v in summary.items():
        if key == "cut_short":
            continue
        if isinstance(v, dict):
            if "name" in v:
                items.append((key, str(v["name"])))
        elif isinstance(v, (list, tuple)):
            if all(not isinstance(x, (dict, list)) for x in v):
                items.append((key, ", ".join(map(fmt_value, v)) if len(v) <= 12
                              else f"{len(v)} values"))
        else:
            items.append((key, fmt_value(v)))
    return items


def _findings(results: dict) -> list[dict]:
    out = []
    for i, f in enumerate(results.get("findings") or []):
        ev = f.get("evidence") or {}
        out.append({"index": i, "files": [p for p in ev.get("files") or [] if isinstance(p, str)],
                    "entity": f.get("entity", ""), "entity_kind": f.get("entity_kind", ""),
                    "layer": f.get("layer", ""), "rule": f.get("rule", ""),
                    "severity": f.get("severity", ""), "message": f.get("message", ""),
                    "measured": ev.get("measured"), "expected": ev.get("expected"),
                    "unit": ev.get("unit") or "", "verdict_note": _verdict_note(f, ev, flags_of(f, results))})
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    out.sort(key=lambda f: (rank.get(f["severity"], len(rank)), str(f["layer"]),
                            natural_key(str(f["entity"]))))
    return out


def _verdict_note(f: dict, ev: dict, flags: dict[str, bool]) -> str:
    """How the verdict treated a finding: not measured or not judged, a check that did
    not run, hard evidence isolated at once, or what the confirmation retest showed."""
    notes = []
    if flags[NOT_MEASURED]:
        notes.append("not measured")
    if flags[NOT_JUDGED]:
        notes.append("not judged")
    if f.get("about") == "check":
        notes.append("about the check, not the hardware: nothing isolated; "
                     + ("the gate fails until it runs" if flags[GATES] else "below the gate, on record"))
    if ev.get("confirm") == "none":
        notes.append("hard evidence (confirm: none): isolated without a retest")
    if ev.get("retest"):
        notes.append(f"retest: {ev['retest']}")
    return "; ".join(notes)


def _isolation(results: dict) -> list[dict]:
    return [{"entity": d.get("entity", ""), "entity_kind": d.get("entity_kind", ""),
             "action": d.get("action", ""), "reason": d.get("reason", ""),
             "applied": bool(d.get("applied", False))}
            for d in results.get("isolation") or []]


# ---- rows helpers ------------------------------------------------------------------

def _of_kind(rows, kind: str) -> pd.DataFrame:
    """``rows``: the run's frames per kind (or one frame with a ``kind`` column)."""
    return kind_rows(rows, kind)


def _col(df: pd.DataFrame, name: str, default: Any = None) -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series(default, index=df.index, dtype=object if default is None else None)


def _records(df: pd.DataFrame, cols: Sequence[str]) -> list[dict]:
    """Rows as plain dicts with every column present, NaN as None."""
    out = []
    for rec in df.reindex(columns=list(cols)).to_dict("records"):
        out.append({k: (None if _isnan(v) else v) for k, v in rec.items()})
    return out


def _isnan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _status_ok(df: pd.DataFrame) -> pd.Series:
    """True where a row's status is ok (a row without a status column counts as ok)."""
    if "status" not in df.columns:
        return pd.Series(True, index=df.index)
    return df["status"].fillna("ok").eq("ok")


# ---- p2p heatmaps and the fleet overview --------------------------------------------

# A domain of at most this many cards is drawn card x card; a larger one host x host
# (or blocks of hosts), with a card-level close-up of the hosts its findings name.
CARD_LEVEL_MAX = 72
MAX_CLOSEUPS = 4       # card-level close-ups per report (each up to 72 x 72 cells)
WORST_PAIRS = 20       # rows of the worst-pairs table
METRICS = (("bandwidth", "bw_GBps", "bw_rev_GBps", "GB/s", "bandwidth_GBps", True),
           ("latency", "lat_us", None, "\u00b5s", "latency_us", False))


def connectivity_view(results: dict, rows: pd.DataFrame, design: dict[str, dict]) -> dict:
    """The fleet overview (one tile per supernode), the heatmaps per supernode and the
    worst pairs from the p2p rows (millions at fleet size). Cards, hosts, tiers and
    supernodes are integer codes; the references are one pass over the rows, then each
    supernode's directions are built, drawn and reduced to its tile and its worst pairs
    in turn, so only one supernode's directions are in memory at a time."""
    view = {"fleet": None, "heatmaps": [], "worst_pairs": [], "closeups_left_out": []}
    p2p = _of_kind(rows, "p2p")
    if p2p.empty or not {"src", "dst"} <= set(p2p.columns):
        return view
    domains = _Domains(results, p2p)
    flagged = _flagged_supernodes(results, domains)
    # The maps are per supernode: only the rows inside one, and not across supernodes.
    dom_src = domains.dom[domains.src]
    inside = np.flatnonzero((domains.tier != domains.tier_code(SCALE_OUT)) & (dom_src >= 0)
                            & (dom_src == domains.dom[domains.dst]))
    rows_in = _Inside(domains, inside)
    metrics = []
    for name, col, rev, unit, dkey, higher in METRICS:
        if col in p2p.columns:
            m = _Metric(name, unit, higher, p2p, col, rev, inside)
            if m.any_ok or m.any_failed:
                m.refs = _tier_refs(m, rows_in.tier, design, dkey, domains)
                metrics.append(m)
    if not metrics:
        return view
    members = domains.members()
    large_flagged = [dom for dom, cards in members.items() if dom in flagged and len(cards) > CARD_LEVEL_MAX]
    closeup = set(large_flagged[:MAX_CLOSEUPS])
    heatmaps, worst, failed, candidates = [], {}, {}, []
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
    view["fleet"] = _fleet_overview(results, domains, worst, failed)
    view["worst_pairs"] = _worst_pairs(candidates)
    return view


class _Inside:
    """The p2p rows inside the supernodes (positions ``at``): their card, tier and
    supernode codes, and their positions grouped by supernode."""

    def __init__(self, domains: "_Domains", at: np.ndarray) -> None:
        self.src, self.dst = domains.src[at].astype(np.int64), domains.dst[at].astype(np.int64)
        self.tier = domains.tier[at].astype(np.int64)
        self.dom = domains.dom[self.src]

    def by_domain(self) -> list[tuple[int, np.ndarray]]:
        """(supernode code, positions of its rows), supernodes in inventory order."""
        order = np.argsort(self.dom, kind="stable")
        doms, starts = np.unique(self.dom[order], return_index=True)
        return [(int(d), part) for d, part in zip(doms, np.split(order, starts[1:]))]


class _Metric:
    """One pair metric over the rows inside the supernodes: forward and reverse value
    (a row without a reverse measurement stands for both directions; latency is half a
    round trip anyway) and whether the probe succeeded."""

    def __init__(self, name: str, unit: str, higher: bool, p2p: pd.DataFrame, col: str,
                 rev_col: str | None, at: np.ndarray) -> None:
        self.name, self.unit, self.higher = name, unit, higher
        self.fwd = pd.to_numeric(p2p[col], errors="coerce").to_numpy(float)[at]
        self.back = self.fwd
        if rev_col and rev_col in p2p.columns:
            back = pd.to_numeric(p2p[rev_col], errors="coerce").to_numpy(float)[at]
            self.back = np.where(np.isnan(back), self.fwd, back)
        self.ok = _status_ok(p2p).to_numpy(bool)[at]
        self.any_failed = bool((~self.ok).any())
        self.any_ok = bool((self.ok & ~(np.isnan(self.fwd) & np.isnan(self.back))).any())
        self.refs: dict[str, tuple] = {}

    def directed(self, rows: _Inside, at: np.ndarray, domains: "_Domains") -> pd.DataFrame:
        """One record per measured direction (codes ``a -> b``, value, score) of rows ``at``."""
        v = np.concatenate([self.fwd[at], self.back[at]])
        ok = np.concatenate([self.ok[at], self.ok[at]])
        tier, dom = rows.tier[at], rows.dom[at]
        pairs = pd.DataFrame({"a": np.concatenate([rows.src[at], rows.dst[at]]),
                              "b": np.concatenate([rows.dst[at], rows.src[at]]),
                              "tier": np.concatenate([tier, tier]), "value": v,
                              "ok": ok & ~np.isnan(v), "failed": ~ok, "dom": np.concatenate([dom, dom])})
        pairs["score"] = _scores(pairs, self.refs, self.higher, domains)
        return pairs


def _tally(sub: pd.DataFrame, d: int, worst: dict[int, float], failed: dict[int, int]) -> None:
    """A supernode's worst margin and failed directions, over the metrics so far."""
    score = sub["score"].to_numpy(float)
    if (~np.isnan(score)).any():
        worst[d] = min(worst.get(d, math.inf), float(np.nanmin(score)))
    failed[d] = failed.get(d, 0) + int(((sub["n_ok"] == 0) & (sub["n_fail"] > 0)).sum())


class _Domains:
    """Scale-up domains (supernodes), hosts, cards and tiers as integer codes over what
    the rows name: every lookup below is an array index, never a scan of the rows."""

    def __init__(self, results: dict, p2p: pd.DataFrame) -> None:
        (self.src, self.dst), self.cards = id_codes(p2p["src"], p2p["dst"])
        host = pd.Series(self.cards.str.rsplit("/", n=1).str[0], dtype=object)
        self.hosts = pd.unique(host)
        (self.tier,), tiers = id_codes(_tiers(p2p))  # per row
        self.tiers = list(tiers)
        sns = ((results.get("topology") or {}).get("supernodes")) or []
        if sns:
            self.names = [str(sn.get("name", "?")) for sn in sns]
            host_dom = {str(h): i for i, sn in enumerate(sns) for h in sn.get("hosts") or []}
            self.hosts_of = [[str(h) for h in sn.get("hosts") or []] for sn in sns]
        else:
            self.names = ["all"]
            host_dom = {h: 0 for h in self.hosts}
            self.hosts_of = [sorted(set(self.hosts), key=natural_key)]
        self.dom = host.map(host_dom).fillna(-1).to_numpy(int)   # per card code

    def tier_code(self, tier: str) -> int:
        return self.tiers.index(tier) if tier in self.tiers else -1

    def members(self) -> dict[str, list[str]]:
        """Domain -> its measured cards in natural order, domains in inventory order."""
        out = {}
        for d, name in enumerate(self.names):
            mine = sorted(self.cards[self.dom == d], key=natural_key)
            if mine:
                out[name] = mine
        return out


def _per_direction(pairs: pd.DataFrame, domains: _Domains) -> pd.DataFrame:
    """One record per direction ``a -> b``: the median over its rounds, in first-seen
    order. Most directions are measured once and pass as they are; only the repeated
    ones (retests, several rounds) are grouped, and their median lands on the first."""
    a, b = pairs["a"].to_numpy(np.int64), pairs["b"].to_numpy(np.int64)
    ok = pairs["ok"].to_numpy(bool)
    cols = {"a": a, "b": b, "tier": pairs["tier"].to_numpy(), "dom": pairs["dom"].to_numpy(),
            "value": np.where(ok, pairs["value"].to_numpy(float), np.nan),
            "score": pairs["score"].to_numpy(float), "n_ok": ok.astype(np.int64),
            "n_fail": pairs["failed"].to_numpy(bool).astype(np.int64)}
    merged = merge_repeated(a * len(domains.cards) + b, cols,
                            {"value": "median", "score": "median", "n_ok": "sum", "n_fail": "sum"})
    return pd.DataFrame(merged)


def _tiers(p2p: pd.DataFrame) -> pd.Series:
    """The row's tier; where a backend left it out, intra_host or scale_up by host."""
    tier = _col(p2p, "tier")
    if tier.notna().all():
        return tier if isinstance(tier.dtype, pd.CategoricalDtype) else tier.astype(str)
    src, dst = p2p["src"].astype(str), p2p["dst"].astype(str)
    same_host = (src.str.rsplit("/", n=1).str[0] == dst.str.rsplit("/", n=1).str[0])
    return tier.fillna(same_host.map({True: INTRA_HOST, False: SCALE_UP})).astype(str)


def _tier_refs(m: _Metric, tier: np.ndarray, design: dict[str, dict], dkey: str,
               domains: _Domains) -> dict[str, tuple]:
    """Reference per tier that has a measurement (in either direction): the design value,
    or the tier's median over both directions when design is missing."""
    ok_f, ok_b = m.ok & ~np.isnan(m.fwd), m.ok & ~np.isnan(m.back)
    measured = np.bincount(np.concatenate([tier[ok_f], tier[ok_b]]), minlength=len(domains.tiers))
    refs = {}
    for code in np.flatnonzero(measured):
        name = domains.tiers[code]
        d = (design.get(name) or {}).get(dkey)
        if d and d > 0:
            refs[name] = (d, "design")
        else:
            here = tier == code
            med = float(np.median(np.concatenate([m.fwd[ok_f & here], m.back[ok_b & here]])))
            refs[name] = (med, "median") if med > 0 else (None, "none")
    return refs


def _ref_values(refs: dict[str, tuple], domains: _Domains) -> np.ndarray:
    """The reference per tier code (NaN where none)."""
    return np.array([(refs.get(t) or (None,))[0] or math.nan for t in domains.tiers] + [math.nan], dtype=float)


def _scores(pairs: pd.DataFrame, refs: dict[str, tuple], higher: bool, domains: _Domains) -> pd.Series:
    ref = pd.Series(_ref_values(refs, domains)[pairs["tier"].to_numpy()], index=pairs.index)
    v = pairs["value"].where(pairs["ok"])
    score = v / ref if higher else ref / v.where(v > 0)
    return score.replace([math.inf, -math.inf], math.nan)


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


def _domain_heatmap(d: int, dom: str, metric: str, unit: str, sub: pd.DataFrame, cards: list[str],
                    refs: dict[str, tuple], domains: _Domains, closeup: bool = False) -> dict:
    """One domain's map from its directions (``sub``: one record per direction a -> b,
    the median over rounds): card cells as they are, host cells the mean over card pairs."""
    card_level = closeup or len(cards) <= CARD_LEVEL_MAX
    labels, to_label, level = _axis(cards, card_level)
    idx = {label: i for i, label in enumerate(labels)}
    pos = np.full(len(domains.cards) + 1, -1)   # card code -> axis position (-1: not on this map)
    pos[domains.cards.get_indexer(list(to_label))] = [idx[to_label[c]] for c in to_label]
    ga, gb = pos[sub["a"].to_numpy()], pos[sub["b"].to_numpy()]
    on = (ga >= 0) & (gb >= 0)
    sub, ga, gb = sub[on], ga[on], gb[on]
    n = len(labels)
    flat = ga * n + gb
    score = sub["score"].to_numpy(float)
    n_ok, n_fail = sub["n_ok"].to_numpy(float), sub["n_fail"].to_numpy(float)
    anchor = f"heatmap-{d}-{metric}" + ("-closeup" if closeup else "")
    title = f"{dom}: pair {metric} ({unit})" + (", close-up" if closeup else "")
    if level == "card" and not closeup:  # a cell per direction, with its hover text
        cells = {}
        for i, j, v, s, ok, bad in zip(ga.tolist(), gb.tolist(), sub["value"].tolist(), score.tolist(),
                                       n_ok.tolist(), n_fail.tolist()):
            measured = ok > 0
            cells[(i, j)] = svg.Cell(value=float(v) if measured else None,
                                     score=float(s) if measured and not _isnan(s) else None,
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
        drawing = svg.block_heatmap(labels, mean.reshape(n, n).tolist(), title=title,
                                    failed=((oks == 0) & (fails > 0)).reshape(n, n).tolist(),
                                    partial=((oks > 0) & (fails > 0)).reshape(n, n).tolist())
    return {"domain": dom, "metric": metric, "level": level, "cards": len(cards),
            "axis": len(labels), "anchor": anchor, "closeup": closeup,
            "reference": _ref_text(refs, sub, unit, domains), "worst": _worst(sub, unit, domains),
            "failed_pairs": int(((n_ok == 0) & (n_fail > 0)).sum()), "svg": drawing}


def _ref_text(refs: dict[str, tuple], sub: pd.DataFrame, unit: str, domains: _Domains) -> str:
    parts = []
    names = [domains.tiers[c] for c in pd.unique(sub["tier"])]
    for tier in sorted(names, key=lambda t: (TIERS + (t,)).index(t)):
        ref, source = refs.get(tier, (None, "none"))
        if ref is not None:
            parts.append(f"{tier} {source} {ref:.4g} {unit}")
    return ", ".join(parts) or "no reference"


def _worst(sub: pd.DataFrame, unit: str, domains: _Domains, k: int = 3) -> list[str]:
    """The worst measured directions (lowest score; ties in row order), since large maps
    have no hover text."""
    score = sub["score"].to_numpy(float)
    at = np.flatnonzero(~np.isnan(score))
    at = at[np.argsort(score[at], kind="stable")[:k]]
    a, b, value = sub["a"].to_numpy()[at], sub["b"].to_numpy()[at], sub["value"].to_numpy(float)[at]
    return [f"{domains.cards[i]} \u2192 {domains.cards[j]}: {v:.4g} {unit} ({s:.0%})"
            for i, j, v, s in zip(a, b, value, score[at])]


def _flagged_supernodes(results: dict, domains: _Domains) -> dict[str, set[str]]:
    """Supernode -> the hosts named by findings at or above the gate (a supernode finding
    names all its hosts)."""
    host_dom = {h: domains.names[d] for d, hosts in enumerate(domains.hosts_of) for h in hosts}
    out: dict[str, set[str]] = {}
    for f in results.get("findings") or []:
        if not flags_of(f, results)[GATES]:
            continue
        entity = str(f.get("entity", ""))
        if f.get("entity_kind") == "supernode" and entity in domains.names:
            out.setdefault(entity, set()).update(domains.hosts_of[domains.names.index(entity)])
            continue
        for part in entity.removeprefix("host:").removeprefix("card:").split("<->"):
            host = host_of(part)
            if host in host_dom:
                out.setdefault(host_dom[host], set()).add(host)
    return out


def _fleet_overview(results: dict, domains: _Domains, worst: dict[int, float], failed: dict[int, int]) -> dict:
    """One tile per supernode, coloured by its worst margin over the pair metrics
    (``worst``) and marked by its failed directions (``failed``)."""
    findings_per_sn: dict[str, int] = {}
    host_dom = {h: domains.names[d] for d, hosts in enumerate(domains.hosts_of) for h in hosts}
    for f in results.get("findings") or []:
        if not flags_of(f, results)[GATES]:
            continue
        entity = str(f.get("entity", ""))
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


def _worst_candidates(sub: pd.DataFrame, m: _Metric, domains: _Domains, k: int = WORST_PAIRS) -> list[dict]:
    """A supernode's k worst directions of a metric (lowest margin; failed ones at 0),
    with every direction tied with the k-th, so the run's worst k are among them."""
    failed = ((sub["n_ok"] == 0) & (sub["n_fail"] > 0)).to_numpy()
    margin = np.where(failed, 0.0, sub["score"].to_numpy(float))
    at = np.flatnonzero(~np.isnan(margin))
    if len(at) > k:
        kth = np.partition(margin[at], k - 1)[k - 1]
        at = at[margin[at] <= kth]
    ref = _ref_values(m.refs, domains)[sub["tier"].to_numpy()[at]]
    value = sub["value"].to_numpy(float)[at]
    a, b, tier, dom = (sub[c].to_numpy()[at] for c in ("a", "b", "tier", "dom"))
    return [{"metric": m.name, "src": str(domains.cards[a[i]]), "dst": str(domains.cards[b[i]]),
             "tier": domains.tiers[tier[i]], "supernode": domains.names[dom[i]] if dom[i] >= 0 else "",
             "measured": None if failed[at[i]] or _isnan(value[i]) else float(value[i]),
             "reference": None if _isnan(ref[i]) else float(ref[i]), "unit": m.unit,
             "margin": float(margin[at[i]]), "failed": bool(failed[at[i]])} for i in range(len(at))]


def _worst_pairs(candidates: list[list[dict]], k: int = WORST_PAIRS) -> list[dict]:
    """The k worst pair directions of the run (lowest margin; failed ones first; ties in
    order of metric, source and destination)."""
    out = [c for part in candidates for c in part]
    out.sort(key=lambda r: (r["margin"], r["metric"], natural_key(r["src"]), natural_key(r["dst"])))
    return out[:k]


# ---- collective charts -------------------------------------------------------------

def collective_charts(rows: pd.DataFrame, design: dict[str, dict]) -> list[dict]:
    """busbw against message size per collective; a line per group kind (median over
    its groups) and the design bandwidth of the tiers those groups cross."""
    coll = _of_kind(rows, "collective")
    if coll.empty or not {"collective", "size_bytes", "busbw_GBps"} <= set(coll.columns):
        return []
    df = pd.DataFrame({
        "collective": coll["collective"].astype(str),
        "group": _col(coll, "group", "all").fillna("all").astype(str),
        "size": pd.to_numeric(coll["size_bytes"], errors="coerce"),
        "busbw": pd.to_numeric(coll["busbw_GBps"], errors="coerce"),
    })
    df["kind"] = _col(coll, "group_kind").fillna(df["group"].str.split(":").str[0]).astype(str)
    df = df[_status_ok(coll) & df["busbw"].notna() & (df["size"] > 0)]
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


def golden_view(results: dict, rows: pd.DataFrame) -> dict:
    """The golden section: its charts and, at fleet size, a summary of the groups.

    Every group's band check is one grouped pass over the rows; only the charts shown
    are drawn."""
    view: dict[str, Any] = {"golden_charts": [], "golden_summary": None}
    gold = _of_kind(rows, "golden")
    if gold.empty or not {"step", "loss"} <= set(gold.columns):
        return view
    df = pd.DataFrame({"group": _col(gold, "group", "run").fillna("run").astype(str),
                       "stage": _col(gold, "stage", "group").fillna("group").astype(str),
                       "step": pd.to_numeric(gold["step"], errors="coerce"),
                       "loss": pd.to_numeric(gold["loss"], errors="coerce"),
                       "step_time_s": pd.to_numeric(_col(gold, "step_time_s"), errors="coerce"),
                       "comm_share": pd.to_numeric(_col(gold, "comm_share"), errors="coerce")})
    df = df[df["step"].notna()]
    if df.empty:
        return view
    ref = _reference(results, first_step=df["step"].min())
    curves = df.groupby(["group", "stage", "step"], sort=True)["loss"].median()
    by_group = df.groupby("group", sort=False)
    stats = pd.DataFrame({"steps": by_group["step"].nunique(), "step_time_s": by_group["step_time_s"].median(),
                          "comm_share": by_group["comm_share"].median()})
    stats = stats.join(_band_checks(df, curves, ref))
    groups = sorted(stats.index, key=natural_key)
    if len(groups) <= GOLDEN_CHARTS:
        view["golden_charts"] = [_golden_chart(g, curves.loc[g], ref, stats.loc[g]) for g in groups]
        return view
    bad = stats[(stats["out_of_band"].fillna(0) > 0) | stats["final_ok"].eq(False)]
    named = _golden_named(results, groups)
    flagged = sorted(set(bad.index) | named, key=lambda g: (-(stats.at[g, "out_of_band"] or 0),
                                                             stats.at[g, "final_ok"] is not False,
                                                             natural_key(g)))
    shown = flagged[:GOLDEN_CHARTS - 1]
    view["golden_charts"] = [_fleet_golden_chart(curves, stats, ref, len(bad))] + [
        _golden_chart(g, curves.loc[g], ref, stats.loc[g]) for g in shown]
    out_names = sorted(bad.index, key=natural_key)
    view["golden_summary"] = {"groups": len(groups), "out_of_band": len(out_names),
                              "named": out_names[:GOLDEN_NAMED], "more": max(0, len(out_names) - GOLDEN_NAMED),
                              "shown": len(shown), "left_out": len(flagged) - len(shown)}
    return view


def golden_charts(results: dict, rows: pd.DataFrame) -> list[dict]:
    """The golden charts of the report (see :func:`golden_view`)."""
    return golden_view(results, rows)["golden_charts"]


def _golden_named(results: dict, groups: list[str]) -> set[str]:
    """Groups whose members a golden finding names (its host, or one of its cards)."""
    entities = {str(f.get("entity", "")) for f in results.get("findings") or [] if f.get("layer") == "golden"}
    entities |= {host_of(e) for e in entities}
    return {g for g in groups if g in entities or g.partition(":")[2] in entities}


def _reference(results: dict, first_step: float) -> dict | None:
    """The golden layer's reference curve, placed on the run's step numbering: the
    reference lists one loss per step, starting at the run's first step."""
    for layer in results.get("layers") or []:
        ref = (layer.get("summary") or {}).get("reference") if layer.get("name") == "golden" else None
        if isinstance(ref, dict) and ref.get("loss"):
            step_rel, final_rel = band_of(ref)  # the verdict's band, defaults included
            loss = [_num(v) for v in ref["loss"]]
            return {"name": str(ref.get("name", "reference")),
                    "steps": {first_step + i: v for i, v in enumerate(loss) if v is not None},
                    "step_rel": step_rel, "final_rel": final_rel}
    return None


def _band_checks(df: pd.DataFrame, curves: pd.Series, ref: dict | None) -> pd.DataFrame:
    """Per group: steps outside the per-step band, and whether its last step is inside
    the final band (None where nothing is comparable). A group is judged on its
    ``group`` stage (else its first stage); a non-finite loss is outside any band."""
    cols = ["out_of_band", "final_ok"]
    if ref is None:
        return pd.DataFrame(columns=cols, dtype=object)
    is_group = df["stage"].eq("group").groupby(df["group"], sort=False).any()
    first = df.groupby("group", sort=False)["stage"].first()
    judged = pd.Series(np.where(is_group, "group", first), index=is_group.index)
    c = curves.reset_index()
    c = c[c["stage"].to_numpy() == judged.reindex(c["group"]).to_numpy()]
    c = c[c["step"].isin(list(ref["steps"]))]
    if c.empty:
        return pd.DataFrame(columns=cols, dtype=object)
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
    """``curve``: the group's median loss per (stage, step)."""
    series = []
    for k, (stage, cs) in enumerate(curve.groupby(level="stage", sort=True)):
        cs = cs.droplevel("stage")
        series.append(svg.Series(f"{group} ({stage})", list(cs.index), list(cs.values),
                                 svg.PALETTE[k % len(svg.PALETTE)]))
    bands = []
    if ref:
        _, ref_line, bands = _ref_series(ref)
        series += ref_line
    return {"group": group, "fleet": False,
            "svg": svg.line_chart(series, title=f"golden {group}", xlabel="step", ylabel="loss",
                                  bands=bands, width=480, height=260, y_from_zero=False),
            "steps": int(stat["steps"]), "step_time_s": _num(stat["step_time_s"]),
            "comm_share": _num(stat["comm_share"]), **_check_of(stat)}


def _check_of(stat: pd.Series) -> dict:
    oob, final = stat.get("out_of_band"), stat.get("final_ok")
    return {"out_of_band": None if _isnan(oob) else int(oob),
            "final_ok": None if _isnan(final) else bool(final)}


def _fleet_golden_chart(curves: pd.Series, stats: pd.DataFrame, ref: dict | None, out_of_band: int) -> dict:
    """All groups in one chart: the median over groups per step, and the lowest and
    highest group per step (the spread), against the reference and its band."""
    c = curves.reset_index()
    c = c[c["stage"] == "group"] if (c["stage"] == "group").any() else c
    per_step = c.groupby("step")["loss"]
    med, lo, hi = per_step.median(), per_step.min(), per_step.max()
    n = int(c["group"].nunique())
    series = [svg.Series(f"median of {n} groups", list(med.index), list(med.values), svg.PALETTE[0]),
              svg.Series("lowest group", list(lo.index), list(lo.values), svg.PALETTE[1]),
              svg.Series("highest group", list(hi.index), list(hi.values), svg.PALETTE[3])]
    bands = []
    if ref:
        _, ref_line, bands = _ref_series(ref)
        series += ref_line
    return {"group": f"all {n} groups", "fleet": True,
            "svg": svg.line_chart(series, title=f"golden: {n} groups", xlabel="step", ylabel="loss",
                                  bands=bands, width=480, height=260, y_from_zero=False),
            "steps": int(stats["steps"].max()), "step_time_s": _num(stats["step_time_s"].median()),
            "comm_share": _num(stats["comm_share"].median()),
            "out_of_band": out_of_band if ref else None, "final_ok": None}


# ---- host facts ----------------------------------------------------------------------

def host_facts(rows: pd.DataFrame) -> dict:
    """Facts that are not ok (as a table) and how many were ok."""
    facts = _of_kind(rows, "host_fact")
    cols = ("host", "fact", "value", "expected", "status", "message", "tool")
    if facts.empty:
        return {"bad": [], "ok_count": 0}
    good = _col(facts, "ok", False).fillna(False).astype(bool) & _status_ok(facts)
    bad = _records(facts[~good], cols)
    bad.sort(key=lambda r: (natural_key(str(r["host"])), str(r["fact"])))
    return {"bad": bad, "ok_count": int(good.sum())}
