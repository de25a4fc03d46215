"""How a confirmation retest's own rows are held to a rule's bar (:mod:`sncheck.run.confirm`):
the retest's measured noise, the bar moved inward by it (what must stay quiet to release),
how many partners a card was measured with (a bar of ``min_pairs`` needs that many), and how
many repeats a rare symptom needs to be seen again."""

from __future__ import annotations

import math
from collections.abc import Callable, Set
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sncheck.health.explain import MAD_SD, group_median, median

from sncheck.health.metrics import METRICS, P2P, PAIRS, DetectContext, cards_held
from sncheck.health.rules import Rule
from sncheck.model import Finding, is_uplink, on_fabric, parse_switch, split_link
from sncheck.run.controls import PEERS
from sncheck.run.nearbar import BESIDE, UNDECIDED, WITHIN
from sncheck.topology import Topology

if TYPE_CHECKING:
    from sncheck.run.confirm import Symptom

MISS = 0.001  # a persistent rare symptom is missed by its retest (and released) at most this often (rare_repeats)
MAX_REPEATS = 40
ALIKE = "every pair of the retest joins the two, so it cannot tell them apart, and the controls read healthy in the run"
PAIR_REPEATS = 5  # a pair collective's symptom re-measured: its median over 2 x 5 looks (pair_repeats)


def partners(rows: pd.DataFrame, card: str, topo: Topology, tier: str | None, among: Set[str] | None = None) -> int:
    """How many distinct cards (of ``among``, when given) a card was measured with in a
    retest's pair rows (on ``tier``, when given)."""
    p = rows[(rows["kind"] == "p2p") & (rows["status"] == "ok")] if {"kind", "status", "src", "dst"} <= set(rows) \
        else rows.iloc[:0]
    src, dst = p["src"].astype(str), p["dst"].astype(str)
    others = set(dst[src == card]) | set(src[dst == card])
    others = others & set(among) if among is not None else others
    return sum(1 for o in others if tier is None or o in topo.by_id and topo.tier(card, o) == tier)


def has_bound(rule: Rule) -> bool:
    return "below" in rule.params or "above" in rule.params


def inward(rule: Rule, noise: float) -> Rule:
    """The rule with its bar moved inward by the noise: what must stay quiet to release."""
    params = dict(rule.params)
    if rule.params.get("method") == "robust_z":  # z is in units of the noise already
        step = 1.0
        if "below" in params:
            params["below"] += step
        else:
            params["above"] -= step
    elif "below" in params:
        params["below"] = params["below"] * (1 + noise) if params["below"] >= 0 else params["below"] * (1 - noise)
    else:
        params["above"] = params["above"] * (1 - noise) if params["above"] >= 0 else params["above"] * (1 + noise)
    return replace(rule, params=params)


def retest_noise(rows: pd.DataFrame) -> float:
    """The retest's own measurement noise: the spread of each pair measured more than
    once in the window, relative to its median (MAD scaled to a standard deviation),
    typical over the pairs, for bandwidth and latency, the larger. 0 when no pair was
    measured twice."""
    p = rows[(rows["kind"] == "p2p") & (rows["status"] == "ok")] if {"kind", "status"} <= set(rows) else None
    spreads = [0.0]
    for col in ("bw_GBps", "lat_us"):
        if p is None or p.empty or col not in p:
            continue
        values = p[col].to_numpy(float, na_value=np.nan)
        keep = ~np.isnan(values) & (values > 0) & p["src"].notna().to_numpy() & p["dst"].notna().to_numpy()
        if not keep.any():
            continue
        pair = pd.MultiIndex.from_arrays([p["src"].astype(str).to_numpy()[keep],
                                          p["dst"].astype(str).to_numpy()[keep]]).codes
        owner = pair[0].astype(np.int64) * (int(pair[1].max()) + 1) + pair[1]
        per_pair = _spreads(owner, values[keep])
        if len(per_pair):
            spreads.append(MAD_SD * median(per_pair))
    return max(s for s in spreads if math.isfinite(s))


def _spreads(owner: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per pair measured twice or more: the median absolute deviation over the median
    (pandas' medians to the bit, by one sort: a retest's few hundred values)."""
    codes, med, n = group_median(owner, values)
    centre = med[np.searchsorted(codes, owner)]
    _, mad, _ = group_median(owner, np.abs(values - centre))
    return (mad / med)[n >= 2]


def rare_repeats(syms: list[Symptom], by_name: dict[str, Rule], miss: float = MISS, peers: int = PEERS) -> int:
    """Repeats enough to see a rare symptom again: one a pair shows or not (a latency
    spike), seen on a share ``rate`` of the suspect's pairs (its finding's ``factor``),
    is missed by ``m`` pair tests with probability (1 - rate)^m; the retest measures the
    suspect with ``peers`` controls a repeat, so it repeats until that is below ``miss``
    (0.1%; at most MAX_REPEATS). 0 for other symptoms."""
    out = 0
    for s in syms:
        rule = by_name.get(s.rule)
        rate = s.evidence.get("factor")
        if rule is None or rule.op not in ("threshold", "counter_nonzero") or METRICS[rule.metric].shape != PAIRS \
                or not isinstance(rate, (int, float)) or not 0 < rate < 1:
            continue
        tests = math.log(miss) / math.log(1 - rate)
        out = max(out, min(MAX_REPEATS, math.ceil(tests / max(1, peers))))
    return out


def pair_repeats(syms: list[Symptom], by_name: dict[str, Rule]) -> int:
    """Repeats of a retest's collectives when a symptom is a pair collective's time or
    bandwidth (a per-link median over its sized looks, against a bar of the tier median):
    PAIR_REPEATS, so the link's median is over 2 x 5 looks, not the one of detection. One
    look at a latency-bound size is mostly its ranks' launch skew (a 0.95 card starts 2.6 us
    late: 17% of its all-to-all looks at 8 KiB read over twice the median, 2% of a healthy
    pair's); the median of ten is its level (issue 29, the sweep's 5183 seed 4: two links of
    a card inside its bars isolated on one retest look each). Else 1."""
    pair = any((r := by_name.get(s.rule)) is not None and METRICS[r.metric].layer == "stress"
               and METRICS[r.metric].shape == PAIRS and r.op == "peer_outlier" for s in syms)
    return PAIR_REPEATS if pair else 1


def explained(per: list[dict], ends: list[Finding]) -> list[dict]:
    """A link suspect's symptoms (``per``: rule, outcome, note) when its retest names an end of
    it (``ends``: a card at one end) and not the link: its pair's measurements are
    that end's, a culprit of its own retested in turn (a near link isolated "reproduced" by
    its end card, the card left in service). Each symptom measured again, reproduced or still
    within the noise of its bar, is explained, not the link's: released (``explained_by``: the
    card; the release holds only while that card ends confirmed, sncheck.run.withdraw); one not
    re-measured stays open."""
    by = f"explained by {ends[0].entity_kind} {ends[0].entity}, named in the retest (a finding of its own)"
    return [{**p, "outcome": False, "note": f"{by}: {p['note']}", "explained_by": ends[0].entity}
            if p["outcome"] is True or p["note"].removeprefix(BESIDE).startswith((WITHIN, UNDECIDED.split("{")[0]))
            else p for p in per]


def no_longer(f: Finding) -> set[str]:
    """The cards a link's release was withdrawn from (sncheck.run.withdraw, ``evidence.withdrawn``):
    its retest again re-measures its pair with none of them as its explanation."""
    return {w["explained_by"] for w in f.evidence.get("withdrawn") or ()}


def retest_tag(f: Finding) -> str:
    """The ``confirms`` tag of a suspect's retest rows: its entity, and a link whose release was
    withdrawn (sncheck.run.withdraw) is retested on rows of its own: its earlier retest's rows
    hold the slowness of the card that no longer explains them."""
    n = len(f.evidence.get("withdrawn") or ())
    return f"{f.entity} (retest {n + 1})" if n else f.entity


def too_few_partners(rule: Rule, rows: pd.DataFrame, f: Finding, topo: Topology, tier: object,
                     scope: Set[str] = frozenset()) -> str | None:
    """A symptom of a per-card bar (a card's median over ``min_pairs`` partners at least,
    on the symptom's tier) or of a per-domain one (the median of two such cards at
    least, partners inside the domain) that the retest of ``f`` measured with fewer, or
    of a bar against its peers' level (peer_outlier) with no pair on its tier beside the
    suspect's own (``scope``: its cards; a leaf whose rail mates are all behind it): the
    level would be the suspect's own, and a faint fault read as its own level is no
    release. A retest with no pair of the suspect on the symptom's tier at all re-measured
    nothing of it: a host whose every NIC ran at 0.5 was retested on its NVLink pairs alone
    and released (reviews21 #4). What is short, else None."""
    need = int(rule.params.get("min_pairs", 3))
    where = tier if isinstance(tier, str) else None
    if where is not None and scope and not rows.empty:  # (reviews21 #4: a host's NICs at 0.5 retested inside)
        p = _pair_ends(rows, rule, topo)
        if "tier" in p and not ((p["tier"] == where) & (p["src"].isin(scope) | p["dst"].isin(scope))).any():
            return f"no pair of it measured on its tier ({where}): not re-measured where it showed"
    if rule.op == "peer_outlier" and scope and not rows.empty:
        p = _pair_ends(rows, rule, topo)
        p = p[p["tier"] == where] if where is not None and "tier" in p else p
        if len(p) and (p["src"].isin(scope) | p["dst"].isin(scope)).all():
            return f"no pair on its tier beside the suspect's own to set the level {rule.name} judges against"
    per, kind = rule.params.get("per"), f.entity_kind
    if per == "card" and kind == "card" and f.entity in topo.by_id:
        got = partners(rows, f.entity, topo, where)
        return f"measured with {got} partners, fewer than {rule.name}'s min_pairs ({need})" if got < need else None
    if per == "supernode" and kind == "supernode":
        mine = set(topo.cards_of_supernode(f.entity))
        judged = sum(1 for c in sorted(mine) if partners(rows, c, topo, where, mine) >= need)
        return (f"{judged} of its cards measured with {need} partners inside it or more, fewer than two "
                f"({rule.name}'s min_pairs: {need})") if judged < 2 else None
    return None


def _pair_ends(rows: pd.DataFrame, rule: Rule, topo: Topology) -> pd.DataFrame:
    """The pairs a peer bar reads in a retest's rows: its p2p rows, or (a pair collective's
    metric) the narrowing pairs ``pair:a<->b`` of its collective rows, with their tier. A
    switch's stress retest whose every pair had a card of the switch's at one end read its
    pairs against their own median and released a persistent slow spine (reviews19 #11)."""
    if "collective" not in METRICS[rule.metric].reads:
        return rows[rows["kind"] == "p2p"] if "kind" in rows and {"src", "dst"} <= set(rows) else rows.iloc[:0]
    if not {"kind", "group_kind", "group"} <= set(rows):
        return pd.DataFrame(columns=["src", "dst", "tier"])
    groups = rows.loc[(rows["kind"] == "collective") & (rows["group_kind"] == "pair"), "group"].astype(str).unique()
    ends = [g.removeprefix("pair:").split("<->", 1) for g in groups]
    ends = [(a, b) for a, b in (e for e in ends if len(e) == 2) if a in topo.by_id and b in topo.by_id]
    return pd.DataFrame({"src": [a for a, _ in ends], "dst": [b for _, b in ends],
                         "tier": [topo.tier(a, b) for a, b in ends]}, dtype=object)


def through_known(cards: Set[str], rows: pd.DataFrame, dctx: DetectContext, rule: Rule | None,
                  ends: Set[str] = frozenset()) -> bool:
    """Whether a pair finding of a retest (``cards``: the cards it holds; ``rule``: the rule
    that raised it) was measured only on pairs whose path crosses a known link or switch
    culprit other than the retest's subject, or at a known culprit's card (:func:`by_known`): those pairs
    are that culprit's symptom and say nothing of the cards at their ends. A link's retest
    re-measures its own pair; through a slow spine named beside it, the pair's bandwidth
    read as "card or link, not localised", new in the retest, and isolated a link whose
    latency symptom (a transient card's spikes) was gone (the unseen replay's 7710 seed 4)."""
    if rule is None or not set(METRICS[rule.metric].reads) & set(P2P) or not cards or rows.empty \
            or not {"kind", "src", "dst"} <= set(rows):
        return False
    p = rows[rows["kind"] == "p2p"]
    src, dst = p["src"].astype(str), p["dst"].astype(str)
    theirs = (src.isin(cards) | dst.isin(cards)).to_numpy()
    return bool(theirs.any()) and bool(by_known(src[theirs], dst[theirs], dctx, ends).all())


def known_ends(dctx: DetectContext) -> set[str]:
    """The cards of the culprits named before a retest (``dctx.known`` of a context not yet evaluated:
    a rule's evaluation adds what it finds, and a finding would explain itself) other than its subject
    and other than one holding the whole subject (a domain named around a host suspect explains nothing
    of the host's own pairs)."""
    mine = dctx.subject_cards()
    out: set[str] = set()
    for entity, kind in dctx.known:
        held = set(cards_held(entity, kind, dctx.topo))
        if entity != dctx.subject and not (mine and mine <= held):
            out |= held
    return out


def by_known(src: pd.Series, dst: pd.Series, dctx: DetectContext, ends: Set[str]) -> np.ndarray:
    """Per pair of a retest (card ids): whether a culprit named before it, other than its subject,
    explains it: its path crosses a known link or switch culprit (``DetectContext.explained_pairs``),
    or one of its ends is in ``ends``, a known culprit's card (:func:`known_ends`). Such a pair failing or slow is
    that culprit's symptom, evidence neither against the subject nor for it. The one definition the
    retest's judging reads: a failed pair of the suspect's own (:func:`failed_own`), a retest finding
    on other cards (:func:`through_known`) and one on the suspect's (:func:`of_known`)."""
    out = dctx.explained_pairs(src, dst)
    if ends:
        out = out | src.astype(str).isin(ends).to_numpy() | dst.astype(str).isin(ends).to_numpy()
    return out


def of_known(subject: Finding, g: Finding, cards: Set[str], ends: Callable[[], Set[str]]) -> bool:
    """Whether a retest finding ``g`` (its ``cards``) inside a suspect that holds several cards (a
    switch, a NIC, a host, a domain) is a culprit's named before the retest: not the subject, and
    every card it holds a known culprit's (:func:`known_ends`, as :func:`by_known` reads a pair).
    That culprit's symptom, never the suspect's again. Round 5's r5-42: a leaf slow during the run
    only was "confirmed" by its retest's pairs of pb05/nic5, a slow NIC below it named and isolated
    on its own; reviews20 #5: supernode sn0, suspect for a transient card's slow rail group, was
    "confirmed" by card node003/gpu2, the connectivity layer's confirmed culprit, slow again in its
    pairwise collectives, while the group's own re-run was inside its bars. ``ends``: the known
    culprits' cards (:func:`known_ends`), asked only when it can matter."""
    return subject.entity_kind != "link" and g.entity != subject.entity and bool(cards) and \
        cards <= ends()


def seen_in_retest(g: Finding, suspect: Finding, busy: str | None) -> Finding:
    """A fault seen on a control during another suspect's retest: a finding of its own
    (inconclusive when it is a speed and the machine was busy)."""
    return Finding(g.entity, g.entity_kind, g.layer, g.rule, g.severity,
                   f"{g.message} (seen during the confirmation retest of {suspect.entity_kind} {suspect.entity})",
                   {**g.evidence, "seen_in_retest_of": suspect.entity, **({"inconclusive": busy} if busy else {})},
                   basis=g.basis)


def only_beside(cards: Set[str], scope: Set[str], rows: pd.DataFrame, topo: Topology, tier: object) -> bool:
    """Whether a retest finding on controls (``cards``: what it holds) was measured only
    against the suspect (``scope``: its cards) and the suspect only against it, on ``tier``
    (the finding's; every tier when None). Every such pair reads the slower end (README "Mock
    backend cost model": a pair's bandwidth is its slower card's), so the retest cannot tell
    the two sides apart, and the controls read healthy in the run that chose them: the
    symptom is the suspect's again. Round 5's r5-39: host ax2's 16 cards against 5 controls
    of ax1, 80 pairs at 0.7; the search named the smaller side, ax1, quarantined with no peer
    left, and ax2's own symptom read not reproduced. A control slower than the suspect's
    pairs with other controls reads apart from it and stays a finding of its own; so does one
    whose pair with another control failed (every measured pair counts, failed or not: the
    clearest sign a control is bad read 'only beside the suspect', the review of stop 47)."""
    if not cards or not scope or rows.empty or not {"kind", "src", "dst"} <= set(rows):
        return False
    p = rows[rows["kind"] == "p2p"]
    src, dst = p["src"].astype(str), p["dst"].astype(str)
    if tier is not None:
        on = topo.tiers(src, dst).to_numpy() == tier
        src, dst = src[on], dst[on]
    a, b = src.isin(cards).to_numpy(), dst.isin(cards).to_numpy()
    s, t = src.isin(scope).to_numpy(), dst.isin(scope).to_numpy()
    joined = (a & t) | (b & s)
    return bool(joined.any()) and bool((joined == (a | b)).all()) and bool((joined == (s | t)).all())


def pairs_of(p: pd.DataFrame, entity: str, kind: str, cards: Set[str], topo: Topology) -> np.ndarray:
    """Mask over a retest's pair rows ``p`` of the pairs an entity stands for: a switch's or a
    leaf-to-spine cable's, those the fabric routes over it (``Fabric.through``); a card link's,
    its own pair; any other's, those with one of its ``cards`` at an end."""
    src, dst = p["src"].astype(str).to_numpy(), p["dst"].astype(str).to_numpy()
    if on_fabric(entity, kind):
        return topo.fabric.through_any([entity], src, dst)
    if kind == "link" and not is_uplink(entity):
        a, b = split_link(entity)
        return ((src == a) & (dst == b)) | ((src == b) & (dst == a))
    return np.isin(src, list(cards)) | np.isin(dst, list(cards))


def _pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """A retest's card pairs (``src``, ``dst``, ``status``): its pair tests and its pair
    collectives (group ``pair:a<->b``)."""
    out = [pd.DataFrame({"src": [], "dst": [], "status": []})]
    if not {"kind", "status"} <= set(rows):
        return out[0]
    if {"src", "dst"} <= set(rows):
        out.append(rows.loc[rows["kind"] == "p2p", ["src", "dst", "status"]].astype(str))
    if "group" in rows:
        c = rows[(rows["kind"] == "collective") & rows["group"].astype(str).str.startswith("pair:")]
        ends = c["group"].astype(str).str[5:].str.split("<->", n=1, expand=True)
        if len(c) and ends.shape[1] == 2:
            out.append(pd.DataFrame({"src": ends[0], "dst": ends[1], "status": c["status"].astype(str)}))
    return pd.concat(out, ignore_index=True)


def failed_own(rows: pd.DataFrame, f: Finding, scope: Set[str], topo: Topology,
               dctx: DetectContext | None = None, ends: Set[str] = frozenset()) -> str | None:
    """The suspect's own pairs (:func:`pairs_of`) its retest measured and that failed (a
    timeout, an error), said; None when none did. A failed pair through the suspect is never
    "inside the bar", whatever the retest's localization named for it (review17 #4: a dead
    uplink's 150 timed-out pairs, named at its leaf, read as a healthy cable and released).
    A pair a known culprit explains (:func:`by_known`: through a known link or switch, or at a
    known culprit's card) is that culprit's symptom, evidence neither against the suspect nor for it: r11-39's spine,
    suspect for a transient NIC's slow cross group, stayed quarantined on 128 pairs that timed
    out through the dead leaf isolated before it. When such failed pairs are all it had, the
    retest cannot judge it."""
    p = _pairs(rows)
    if p.empty:
        return None
    own = pairs_of(p, f.entity, f.entity_kind, scope, topo)
    failed = (p["status"] != "ok").to_numpy()
    through = by_known(p["src"], p["dst"], dctx, ends) if dctx is not None else np.zeros(len(p), bool)
    bad = own & failed & ~through
    if not bad.any():
        if (own & failed).any() and not (own & ~through).any():
            return f"every one of its {int(own.sum())} pair tests in the retest crosses a known culprit, " \
                   f"{int((own & failed).sum())} failed there: not judged"
        return None
    how = ", ".join(sorted(set(p["status"][bad].astype(str))))
    return f"{int(bad.sum())} of its {int((own & ~through).sum())} pair tests in the retest failed ({how}): " \
        "never inside the bar"


def holders(f: Finding) -> set[str]:
    """The switches holding a leaf-to-spine cable suspect, its leaf and its spine: a retest
    finding on one is the cable's symptom again one level up."""
    if f.entity_kind != "link" or not is_uplink(f.entity):
        return set()
    return {f"{s[0]}:{s[1]}" for end in split_link(f.entity) if (s := parse_switch(end)) is not None}


def tied(f: Finding, g: Finding, rows: pd.DataFrame, topo: Topology) -> bool:
    """Whether a retest finding ``g`` is one the evidence could not tell from the suspect ``f``:
    ``f`` among its rivals (evidence ``separated: false``), or, ``g`` on another switch or cable,
    measured only on pairs whose path crosses the switch or cable ``f``. Either is the
    suspect's symptom again (review17 #8: every pair of a slow leaf's retest crossed one other
    leaf too, its localization named that leaf and the slow leaf, reproduced on 4 of 4 pairs,
    was released)."""
    if g.evidence.get("separated") is False and any(r.get("entity") == f.entity for r in g.evidence.get("rivals") or []):
        return True
    p = _pairs(rows)
    if p.empty or not on_fabric(f.entity, f.entity_kind) or not on_fabric(g.entity, g.entity_kind):
        return False
    theirs = pairs_of(p, g.entity, g.entity_kind, set(), topo)
    return bool(theirs.any()) and not (theirs & ~pairs_of(p, f.entity, f.entity_kind, set(), topo)).any()


OTHER_KIND = "a symptom of the {} beside it, not of this link: it confirms nothing about one link ({})"


def of_another_kind(f: Finding, syms: list[Symptom], per: list[dict]) -> list[dict]:
    """A link's retest outcomes (``per``, one a symptom of ``syms`` first): a folded symptom of a host or a
    domain (its golden step time) reproduced confirms nothing about one link between two cards, and cannot
    release it either. A link through a slow card was "confirmed" by its host's golden step time while its own
    stress retest said not reproduced (reviews19 #8's addendum)."""
    if f.entity_kind != "link" or on_fabric(f.entity, f.entity_kind):
        return per
    return [{**p, "outcome": None, "note": OTHER_KIND.format(syms[i].kind, p["note"])}
            if i < len(syms) and p["outcome"] is True and syms[i].kind in ("host", "supernode") else p
            for i, p in enumerate(per)]
