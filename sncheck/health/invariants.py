"""Invariants of the verdict: what was not measured, not judged or not retested fails.

These are not rules. No rules file can switch them off or soften them: every layer's
detection goes through :func:`layer_findings` (from :meth:`LayerContext.detect`), and
every isolation decision through :func:`may_release`.

* Anything a backend reports as not measured (an unreachable host, a tool missing, a
  parse failure, a timeout, a group that did not run) is a critical finding, whatever
  the rules file says about the ``missing`` op.
* Coverage: every host must have its facts read, every card must take part in a
  measurement of each layer that ran (a p2p pair, a collective, a golden replica), and
  every planned group must have run. What did not is "not measured".
* A missing tool or an unparsable output is a finding about the *check*, not the
  hardware (``about: check``): the host is not isolated for it, but the gate fails.
* The golden layer with no reference for this configuration is "not judged" (a check
  finding that gates unless the playbook marks golden optional, where it is on record
  at info: the layer is "not judged", never "pass"); a non-finite loss fails whatever
  the reference.
* A layer whose rows no enabled rule judges (a rules file covering other layers only,
  or every rule ``enabled: false``) is "not judged" at the gate's severity.
* A kernel log report of this run (an Xid, SXid, AER, GHES, amdgpu ... report) that no
  enabled ``kernel_events`` rule takes (its source's rule disabled, or a rules file without
  one) is "not judged" at the gate's severity: one finding per host and source, about the
  check (nothing is isolated for it), as ``sncheck parse kernel-log --rules`` says it.
* A host fact that failed (or warned) and that no enabled rule of its metric takes (a rules
  file written for another vendor's facts) is "not judged" at the gate's severity: one
  finding per host naming the facts, about the check.
* A scoped run (``--targets``): a target's pairs whose peer was unreachable (or did not
  run) leave the target not measured against that peer: a not-measured finding on it.
* Not-measured findings are never released by a confirmation retest: coming back at
  the retest does not re-measure a host's cards.
* A collective group that gave wrong results is a finding whatever the rules file says: where no
  finding of a wrong-value rule (metric ``pair_wrong``) names a card of it or a link between two of
  them, a critical finding on its host or supernode (:func:`group_entities`), not localised
  (:func:`wrong_not_localised`). Wrong results on record with no finding was a pass (CI of stop 52).
* A test a tool skipped (dcgmi ``Skip``) measured nothing: "not measured", unless the rules
  file allows that test's skip by name (``allow_skips``, :mod:`sncheck.health.rules`): then
  a finding at info quoting why, and the other tests' results stand as read. Only a named
  test: a skip of any test the rules do not name still fails the gate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sncheck.model import CHECK_STATUSES, About, Basis, EntityKind, Finding, Severity, Status
from sncheck.probeplan import golden_groups, scope_groups, stress_groups
from sncheck.topology import Topology, host_of, natural_key
from sncheck.health.groups import explained, group_entities, group_members
from sncheck.health.tried import noted
from sncheck.health.rankrows import rank_rows
from sncheck.health.kernel import not_judged, rule_source
from sncheck.health.drift import BASELINE_NOT_JUDGED  # noqa: F401 -- the run's finding of a baseline not found
from sncheck.health.metrics import DetectContext, golden_loss, kind_rows, missing, reference_of
from sncheck.store.frames import RowFrames

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sncheck.health.rules import AllowedSkip, Rule

SEVERITY = Severity.CRITICAL  # "not run" is never a pass, whatever the gate
NOT_MEASURED = "not-measured"
NOT_JUDGED = "golden-not-judged"
LAYER_NOT_JUDGED = "layer-not-judged"
KERNEL_NOT_JUDGED = "kernel-not-judged"
FACT_NOT_JUDGED = "fact-not-judged"
FACT_METRICS = ("host_fact_failures", "host_fact_warnings")
_WHAT = {"host_fact_failures": "failed", "host_fact_warnings": "warned"}  # what each metric says of a fact
NON_FINITE = "golden-loss-non-finite"
UNREACHABLE = "host-unreachable"
NOT_RUN = "not-run"  # a status's finding: not-run-<status> (unreachable: host-unreachable)
SKIPPED = Status.SKIPPED  # a host_fact status: the inventory switched the check off
SKIP_ALLOWED = "skip-allowed"  # a skipped test the rules allow by name: recorded at info
WRONG_NOT_LOCALISED = "wrong-results-not-localised"
WRONG_METRIC = "pair_wrong"  # the metric of the rules that localise wrong results to a card or link


def status_rule(status: str) -> str:
    if status == Status.NOT_MEASURED:
        return NOT_MEASURED
    return UNREACHABLE if status == Status.UNREACHABLE else f"{NOT_RUN}-{status.replace('_', '-')}"


def layer_findings(layer: str, rows: pd.DataFrame, ctx: DetectContext, *, options: dict | None = None,
                   targets: frozenset[str] | None = None, rules: int | None = None,
                   gate: str = SEVERITY, skips: tuple[AllowedSkip, ...] = (),
                   kernel: frozenset[str] | None = None, fact_rules: Sequence[Rule] | None = None) -> list[Finding]:
    """The invariant findings of one layer over that layer's rows. ``targets`` (a scoped
    run, ``--targets``): only those cards, and their hosts, must have been measured.
    ``rules``: how many enabled rules judge this layer (0: its rows are not judged,
    a finding at ``gate``); None where the caller judges by other means. ``skips``: the
    tests whose skip the rules allow. ``kernel``: the kernel log report sources the rules
    take (:func:`sncheck.health.kernel.judged_sources`); None where the caller judges by other means.
    ``fact_rules``: the enabled rules of the host fact metrics (:data:`FACT_METRICS`); None likewise."""
    options = options or {}
    out = status_findings(rows, ctx, skips)
    if rules == 0 and not rows.empty:
        out += layer_not_judged(layer, ctx.topo, gate, targets)
    if kernel is not None:
        out += kernel_not_judged(layer, rows, ctx, kernel, gate)
    if fact_rules is not None:
        out += fact_not_judged(layer, rows, ctx, fact_rules, gate)
    gaps: list[Finding] = []
    if layer == "connectivity":
        gaps = connectivity_coverage(rows, ctx.topo, targets, noted(ctx, rows))
        if targets is not None:
            gaps += unreachable_peers(rows, targets)
    elif layer == "stress":
        gaps = stress_coverage(rows, ctx.topo, targets)
    elif layer == "golden":
        gaps = golden_coverage(rows, ctx.topo, targets)
        out += golden_judged(rows, ctx, optional=bool(options.get("optional")), targets=targets)
    # A host the backend already reported (unreachable, timed out) is that finding; its
    # cards' gaps would only repeat it.
    down = {f.entity for f in out if f.entity_kind == EntityKind.HOST and f.about == About.HARDWARE}
    return out + [g for g in gaps if host_of(g.entity) not in down and g.entity not in down]


def status_findings(rows: pd.DataFrame, ctx: DetectContext, skips: tuple[AllowedSkip, ...] = ()) -> list[Finding]:
    """Every not-ok status a backend reported (what the ``missing`` op reads); a fact not
    measured only because of tests whose skip ``skips`` allows is an info finding."""
    frame = missing(rows, ctx)
    out = []
    for r in frame.itertuples():
        if r.status == SKIPPED:
            continue
        if r.status == Status.NOT_MEASURED and (allowed := _allowed(r.tool, r.skipped, skips)):
            out.append(_skip_allowed(r, allowed))
            continue
        about = About.CHECK if r.status in CHECK_STATUSES else About.HARDWARE
        ev = {"measured": r.status, "expected": "measured", "unit": None}
        if isinstance(r.tool, str):
            ev["tool"] = r.tool
        if isinstance(r.fact, str):
            ev["fact"] = r.fact
        message = r.message
        if about == About.CHECK and isinstance(r.skipped, list) and r.skipped:
            ev["skipped"] = [str(t) for t in r.skipped]
            message += (" (a test the tool skipped measured nothing: nothing is isolated for it, but the gate "
                        "fails; where the skip is expected, allow it by name in the rules file: `allow_skips: "
                        f"[{{tool: {r.tool}, test: {r.skipped[0]}, why: ...}}]`)")
        elif about == About.CHECK:
            message += (" (a check that did not run: this says nothing about the hardware, so nothing is "
                        "isolated for it, but the gate fails until it runs"
                        + (f"; install {r.tool} or switch the check off with `checks: {{{r.tool}: false}}` "
                           "in the inventory)" if isinstance(r.tool, str) else ")"))
        out.append(Finding(r.entity, r.kind, r.layer, status_rule(str(r.status)), SEVERITY, message, ev,
                           basis=Basis.NOT_MEASURED, about=about))
    return out


def _allowed(tool: object, skipped: object, skips: tuple[AllowedSkip, ...]) -> list[AllowedSkip]:
    """The allowances covering every test a row skipped; empty where one is not allowed."""
    if not isinstance(skipped, list) or not skipped or not isinstance(tool, str):
        return []
    found = [next((a for a in skips if a.allows(tool, str(t))), None) for t in skipped]
    return [a for a in found if a is not None] if all(found) else []


def _skip_allowed(r: Any, allowed: list[AllowedSkip]) -> Finding:
    """``r``: a row of the ``missing`` frame (itertuples)."""
    tests = ", ".join(str(t) for t in r.skipped)
    why = "; ".join(dict.fromkeys(f"{a.why} ({a.where})" if a.where else a.why for a in allowed))
    return Finding(str(r.entity), EntityKind(r.kind), str(r.layer), SKIP_ALLOWED, Severity.INFO,
                   f"{r.entity}: {r.tool} skipped {tests}: allowed by the rules: {why}",
                   {"measured": "skipped", "expected": "measured", "unit": None, "tool": r.tool, "fact": r.fact,
                    "skipped": [str(t) for t in r.skipped], "why": why},
                   basis=Basis.NOT_MEASURED, about=About.CHECK)


def _not_measured(entity: str, kind: str, layer: str, what: str) -> Finding:
    return Finding(entity, EntityKind(kind), layer, NOT_MEASURED, SEVERITY, f"{kind} {entity}: not measured: {what}",
                   {"measured": "nothing", "expected": "measured", "unit": None},
                   basis=Basis.NOT_MEASURED, about=About.CHECK)


def _supernodes(topo: Topology, targets: frozenset[str] | None) -> list[str]:
    return [sn for sn in topo.supernode_names
            if targets is None or any(c in targets for c in topo.cards_of_supernode(sn))]


def layer_not_judged(layer: str, topo: Topology, gate: Severity | str,
                     targets: frozenset[str] | None = None) -> list[Finding]:
    """The layer ran, and no enabled rule judges its rows: nothing it measured was judged."""
    return [Finding(sn, EntityKind.SUPERNODE, layer, LAYER_NOT_JUDGED, Severity(gate),
                    f"{layer} on {sn} not judged: no enabled rule of the rules file judges the {layer} layer's "
                    f"measurements. Enable or add a rule for it (`sncheck rules list` shows the {layer} metrics), "
                    f"or leave the layer out of the playbook",
                    {"measured": "not judged", "expected": f"an enabled rule for the {layer} layer", "unit": None},
                    basis=Basis.NOT_JUDGED, about=About.CHECK)
            for sn in _supernodes(topo, targets)]


def _takes(rule: Rule, fact: str) -> bool:
    """Whether a host fact rule judges ``fact`` (its ``facts``, or all but its ``not_facts``)."""
    if "facts" in rule.params:
        return fact in rule.params["facts"]
    return fact not in (rule.params.get("not_facts") or ())


def fact_not_judged(layer: str, rows: pd.DataFrame, ctx: DetectContext, fact_rules: Sequence[Rule],
                    gate: Severity | str) -> list[Finding]:
    """Host facts that failed (or warned) that no enabled rule of their metric takes: one
    finding per host naming them, at ``gate``, about the check (a rules file for Ascend's facts
    on NVIDIA hosts passed an uncorrectable ECC error: hostile round 12)."""
    if kind_rows(rows, "host_fact", ["host"]).empty:
        return []
    left: dict[str, dict[str, set[str]]] = {}  # host -> metric -> its facts no rule takes
    for metric in FACT_METRICS:
        frame = ctx.metric(metric, rows)
        if frame.empty or "fact" not in frame:
            continue
        mine = [r for r in fact_rules if r.metric == metric]
        bad = frame[frame["value"].fillna(0) > 0]
        for entity, fact in zip(bad["entity"].astype(str), bad["fact"].astype(str)):
            if not any(_takes(r, fact) for r in mine):
                left.setdefault(host_of(entity), {}).setdefault(metric, set()).add(fact)
    return [Finding(host, EntityKind.HOST, layer, FACT_NOT_JUDGED, Severity(gate),
                    f"host {host}: " + "; ".join(f"{', '.join(sorted(f))} {_WHAT[m]}" for m, f in by.items())
                    + ", and no enabled rule of these rules judges it: not judged. Add or enable a host fact rule "
                    "that takes it (" + ", ".join(f"`metric: {m}`" for m in by) + "; the default rules take every fact)",
                    {"measured": "not judged", "expected": "a host fact rule", "unit": None,
                     "facts": sorted(set().union(*by.values()))},
                    basis=Basis.NOT_JUDGED, about=About.CHECK)
            for host, by in sorted(left.items(), key=lambda kv: natural_key(kv[0]))]


def kernel_not_judged(layer: str, rows: pd.DataFrame, ctx: DetectContext, judged: frozenset[str],
                      gate: Severity | str) -> list[Finding]:
    """This run's kernel log reports (new since the last run) whose source no rule takes:
    one finding per host and source, at ``gate``, about the check (the reports are kept)."""
    if kind_rows(rows, "host_fact", ["host"]).empty:  # (one column: every fact's value is a fleet's JSON)
        return []
    frame = ctx.metric("kernel_events", rows)
    if frame.empty:
        return []
    left = frame[frame["new"] & ~frame["source"].isin(judged)]
    out = []
    for (host, source), group in left.groupby([left["entity"].map(host_of), left["source"].astype(str)], sort=True):
        shown = [str(t) for t in group["text"].head(5)]
        out.append(Finding(str(host), EntityKind.HOST, layer, KERNEL_NOT_JUDGED, Severity(gate),
                           f"host {host}: kernel log: {not_judged(source, len(group))}: enable or add one "
                           f"(`op: kernel_events`, `source: {rule_source(source)}`; the default rules have it). "
                           f"Kernel log: {shown[0]}",
                           {"measured": "not judged", "expected": f"a kernel_events rule for {rule_source(source)}",
                            "unit": None, "fact": "kernel_log", "tool": "kernel log", "source": source,
                            "reports": len(group), "lines": shown},
                           basis=Basis.NOT_JUDGED, about=About.CHECK))
    return out


def unreachable_peers(rows: pd.DataFrame, targets: frozenset[str]) -> list[Finding]:
    """A target whose pairs to some peer were unreachable or did not run was not measured
    against that peer (the peer, out of scope, is reported by nobody else)."""
    p2p = kind_rows(rows, "p2p", ["src", "dst", "status"])
    if p2p.empty:
        return []
    lost = p2p[p2p["status"].isin([Status.UNREACHABLE, Status.NOT_RUN])]
    peers: dict[str, set[str]] = {}
    for src, dst in zip(lost["src"].astype(str), lost["dst"].astype(str)):
        for card, peer in ((src, dst), (dst, src)):
            if card in targets:
                peers.setdefault(card, set()).add(peer)
    out = []
    for card in sorted(peers, key=natural_key):
        shown = sorted(peers[card], key=natural_key)
        hosts = sorted({host_of(p) for p in shown}, key=natural_key)
        out.append(_not_measured(card, "card", "connectivity",
                                 f"its pairs with {len(shown)} peer(s) on {', '.join(hosts)} were unreachable or "
                                 f"did not run ({', '.join(shown[:8])}{', ...' if len(shown) > 8 else ''})"))
        out[-1].evidence["peers"] = shown
    return out


def _hosts(topo: Topology, targets: frozenset[str] | None) -> list[str]:
    return [h for h in topo.hosts if targets is None or any(c in targets for c in topo.cards_of_host(h))]


def _card_gaps(measured: set[str], topo: Topology, layer: str, what: str,
               targets: frozenset[str] | None = None) -> list[Finding]:
    """Cards not measured; a host none of whose cards were measured is named whole."""
    out = []
    for h in _hosts(topo, targets):
        cards = [c for c in topo.cards_of_host(h) if targets is None or c in targets]
        gaps = [c for c in cards if c not in measured]
        if not gaps:
            continue
        if len(gaps) == len(cards):
            out.append(_not_measured(h, "host", layer, f"none of its cards {what}"))
        else:
            out += [_not_measured(c, "card", layer, what) for c in gaps]
    return out


def _distinct(values: pd.Series) -> set:
    """The distinct values of a column (one hash pass, not a Python object per row)."""
    return set(values.dropna().unique())


_CHUNK = 1 << 22  # rows a step: a selection of them is 16 MB of codes


def _distinct_of(values: pd.Series, rows: np.ndarray) -> set:
    """:func:`_distinct` of the rows ``rows`` (a mask) of a column; a categorical's from its
    codes, a step of rows at a time, never a copy of the rows chosen (at 131,072 cards, 50 M
    p2p rows: the selection of three columns, with its indexer and index, rose 1.7 GB over
    what judging held, the peak of the layer's judging; README "Fleet scale", round 16)."""
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return _distinct(values[rows])
    codes = values.cat.codes.to_numpy()
    seen = np.zeros(len(values.cat.categories) + 1, bool)  # (a missing value's code, -1: the last place)
    for at in range(0, len(codes), _CHUNK):
        seen[codes[at:at + _CHUNK][rows[at:at + _CHUNK]]] = True
    return set(values.cat.categories[seen[:-1]])


def connectivity_coverage(rows: pd.DataFrame, topo: Topology, targets: frozenset[str] | None = None,
                          cards: set[str] | None = None) -> list[Finding]:
    """Hosts without facts and cards in no pair tried (``cards``: those tried, as judging
    noted them from its frame of pairs; None: read from the rows)."""
    out = []
    facts = kind_rows(rows, "host_fact", ["host"])
    read = _distinct(facts["host"]) if not facts.empty else set()
    out += [_not_measured(h, "host", "connectivity", "no host facts were read")
            for h in _hosts(topo, targets) if h not in read]
    if len(topo.cards) < 2:
        return out  # nothing to pair with: p2p cannot run (the facts still must)
    return out + _card_gaps(_cards_tried(rows) if cards is None else cards, topo, "connectivity",
                            "took part in no peer-to-peer pair test", targets)


_NOT_TRIED = [str(Status.UNREACHABLE), str(Status.NOT_RUN)]  # a p2p row whose pair was never tried


def _cards_tried(rows: pd.DataFrame | RowFrames) -> set[str]:
    """The cards at either end of a p2p row whose pair was tried (its status neither
    unreachable nor not run), a piece of rows at a time (``RowFrames.tables``): from a run
    store's Arrow pieces, which of their ids' dictionary the rows tried hold (by its indices:
    no frame of the rows, no text per row; at 131,072 cards, 50 M rows, the frame's three
    columns held 1.1 GB); rows in memory, from their frame's codes (:func:`_distinct_of`)."""
    columns = ["src", "dst", "status"]
    pieces = rows.tables("p2p", columns) if isinstance(rows, RowFrames) else [kind_rows(rows, "p2p", columns)]
    out: set[str] = set()
    names, seen = None, np.zeros(0, bool)  # a dictionary of ids, and which of them the rows so far hold
    for piece in pieces:
        if isinstance(piece, pd.DataFrame):
            if len(piece):
                tried = ~piece["status"].isin(_NOT_TRIED).to_numpy(bool)
                out |= _distinct_of(piece["src"], tried) | _distinct_of(piece["dst"], tried)
            continue
        status = piece["status"]
        text = status.type.value_type if pa.types.is_dictionary(status.type) else status.type
        tried = pc.invert(pc.is_in(status, value_set=pa.array(_NOT_TRIED, text))).combine_chunks()  # (missing: tried)
        kept = tried.to_numpy(zero_copy_only=False)
        for end in ("src", "dst"):
            column = piece[end].combine_chunks()  # (one dictionary: src and dst share the piece's)
            if not pa.types.is_dictionary(column.type):
                out.update(pc.unique(pc.filter(column, tried)).drop_null().to_pylist())
                continue
            if names is None or not column.dictionary.equals(names):
                if names is not None:
                    out.update(names.filter(pa.array(seen[:-1])).to_pylist())
                names, seen = column.dictionary, np.zeros(len(column.dictionary) + 1, bool)
            codes = pc.fill_null(column.indices, -1).to_numpy()  # (a missing id: the last place, no name)
            seen[codes[kept]] = True
    if names is not None:
        out.update(names.filter(pa.array(seen[:-1])).to_pylist())
    return out


def stress_coverage(rows: pd.DataFrame, topo: Topology, targets: frozenset[str] | None = None) -> list[Finding]:
    planned = list(stress_groups(topo) if targets is None else scope_groups(stress_groups(topo), targets))
    if not planned:
        return []
    coll = kind_rows(rows, "collective")
    nr = kind_rows(rows, "not_run")
    ran_groups = _distinct(coll["group"]) if not coll.empty else set()
    reported = _distinct(nr["entity"]) if not nr.empty else set()
    out = []
    measured: set[str] = set()
    ok = coll[coll["status"] == Status.OK] if not coll.empty else coll
    ok_groups = _distinct(ok["group"]) if not ok.empty else set()
    # the groups and cards of the rank rows of groups that ran: their cells' (sncheck.health.rankrows,
    # read once with the layer's rank_skew: 29 M rows at 131,072 cards, never a frame of them)
    ranks = rank_rows(rows)
    cells = np.isin(ranks.groups.astype(str), list(ok_groups))[ranks.group] if ok_groups else np.zeros(len(ranks.group), bool)
    with_ranks = set(ranks.groups[np.unique(ranks.group[cells])]) if cells.any() else set()
    measured |= set(ranks.cards[np.unique(ranks.card[cells])]) if cells.any() else set()
    for g in planned:
        if g.id in ok_groups and g.id not in with_ranks:
            measured |= set(g.members)  # a tool without per-rank rows (nccl-tests) ran the group whole
        if g.id not in ran_groups and g.id not in reported:
            down = {host_of(m) for m in g.members}
            if not down & reported:
                entity, kind = _group_entity(g.members, topo)
                out.append(_not_measured(entity, kind, "stress", f"collective group {g.id} did not run"))
    return out + _card_gaps(measured, topo, "stress", "took part in no collective that ran", targets)


def _group_entity(members, topo: Topology) -> tuple[str, str]:
    hosts = sorted({host_of(m) for m in members})
    if len(hosts) == 1:
        return hosts[0], "host"
    sns = sorted({topo.supernode_of_host(h) for h in hosts})
    return sns[0], "supernode"


def golden_coverage(rows: pd.DataFrame, topo: Topology, targets: frozenset[str] | None = None) -> list[Finding]:
    g = kind_rows(rows, "golden")
    ran = set(g.loc[g["stage"] == "group", "group"]) if not g.empty else set()
    measured = {c for grp in golden_groups(topo) if grp.id in ran for c in grp.members}
    return _card_gaps(measured, topo, "golden", "trained in no golden replica", targets)


def golden_judged(rows: pd.DataFrame, ctx: DetectContext, optional: bool,
                  targets: frozenset[str] | None = None) -> list[Finding]:
    """Non-finite losses fail; no reference for this configuration is 'not judged'."""
    curves = golden_loss(rows, ctx)
    out = []
    solo_bad = {str(c.group).removeprefix("card:") for c in curves.itertuples()
                if c.stage == "solo" and (not all(map(math.isfinite, c.loss)) or c.loss[-1] > c.loss[0])}
    for c in curves.itertuples():
        loss = list(c.loss)
        bad = next((i for i, v in enumerate(loss) if not math.isfinite(v)), None)
        if bad is None:
            continue
        if c.stage != "solo" and set(c.members) & solo_bad:
            continue  # a card of this replica diverges alone: that card is the finding, not its host
        kind, _, name = str(c.group).partition(":")
        entity, ekind = (name, "card") if kind == "card" else (name, "host") if kind == "host" else \
            _group_entity(c.members, ctx.topo)
        out.append(Finding(entity, EntityKind(ekind), "golden", NON_FINITE, SEVERITY,
                           f"{ekind} {entity}: golden model loss became non-finite at step {bad} "
                           f"(replica {c.group}, {c.stage})",
                           {"measured": None, "expected": "finite", "unit": "loss", "step": bad}))
    if curves.empty:
        return out
    why = reference_mismatch(ctx.reference, ctx.topo)
    # Optional: on record at info (it does not gate), and the layer reads "not judged".
    severity, fix = (Severity.INFO, "; the layer is optional, so this does not fail the gate") if optional else \
        (SEVERITY, ", or mark the layer optional (`- golden: {optional: true}`)")
    if why is None:  # a reference per replica size: the hosts whose size has none are not judged
        sizes = sorted((ctx.reference or {}).get("sizes") or ())
        for g in scope_groups(golden_groups(ctx.topo), targets) if targets else golden_groups(ctx.topo):
            if g.kind == "host" and reference_of(ctx.reference, len(g.members)) is None:
                host = g.id.removeprefix("host:")
                out.append(_golden_not_judged(host, EntityKind.HOST, f"no golden reference for its replica of "
                                              f"{len(g.members)} ranks (the references are for "
                                              f"{', '.join(map(str, sizes))})", severity, fix))
        return out
    for sn in _supernodes(ctx.topo, targets):
        out.append(_golden_not_judged(sn, EntityKind.SUPERNODE, why, severity, fix))
    return out


def _golden_not_judged(entity: str, kind: EntityKind, why: str, severity: Severity, fix: str) -> Finding:
    return Finding(entity, kind, "golden", NOT_JUDGED, severity,
                   f"golden model on {entity} not judged: {why}. Record a reference on a known-good "
                   f"system with `sncheck golden record --out fixtures/golden/NAME.json` and name it "
                   f"in the playbook (`- golden: {{reference: path/to/NAME.json}}`){fix}",
                   {"measured": "not judged", "expected": "a golden reference", "unit": None},
                   basis=Basis.NOT_JUDGED, about=About.CHECK)


def replica_ranks(topo: Topology) -> set[int]:
    return {len(g.members) for g in golden_groups(topo)}


def reference_mismatch(reference: dict | None, topo: Topology) -> str | None:
    """Why ``reference`` cannot judge this cluster's golden runs, or None when it can."""
    if not reference:
        sizes = ", ".join(str(n) for n in sorted(replica_ranks(topo)))
        return f"no golden reference for replicas of {sizes} ranks"
    if reference.get("sizes") is not None:  # one per replica size: judged where one fits (golden_judged)
        if replica_ranks(topo) & set(reference["sizes"]):
            return None
        return (f"the golden references are for replicas of {', '.join(map(str, sorted(reference['sizes'])))} "
                f"ranks, this cluster's replicas have {', '.join(str(n) for n in sorted(replica_ranks(topo)))}")
    ranks = (reference.get("config") or {}).get("ranks")
    if isinstance(ranks, int) and replica_ranks(topo) - {ranks}:
        sizes = ", ".join(str(n) for n in sorted(replica_ranks(topo)))
        return (f"the golden reference {reference.get('name')!r} was recorded with {ranks} ranks per replica, "
                f"this cluster's replicas have {sizes}")
    return None


def wrong_not_localised(layer: str, rows: pd.DataFrame, topo: Topology, found: Sequence[Finding],
                        value_rules: set[str]) -> list[Finding]:
    """The collective groups (not the narrowing's pairs) that gave wrong results where none of
    ``found`` from a rule of ``value_rules`` (the rules of :data:`WRONG_METRIC`) names a card of
    theirs, a link between two, or their host: one critical finding on each entity that holds
    them, saying no pair localised it. Where the host and rail groups among them cross at one or
    two cards that every such group holds, those cards (as the narrowing's suspects are found:
    review18 #8, one card's corruption held its whole supernode); else each group's
    :func:`group_entities`. A timing culprit explains no wrong value (the cost model: a wrong value
    costs no time), so only those findings localise one."""
    coll = kind_rows(rows, "collective", ["group", "group_kind", "wrong", "size_bytes"])
    if coll.empty:
        return []
    wrong = pd.to_numeric(coll["wrong"], errors="coerce").fillna(0)
    bad = coll[(coll["group_kind"] != "pair") & (wrong > 0)].assign(wrong=wrong)
    named = frozenset((f.entity, str(f.entity_kind)) for f in found
                      if f.rule in value_rules or any(g.rule in value_rules for g in f.folded))
    left = {str(g): (set(members), int(of["wrong"].sum()), sorted({int(s) for s in of["size_bytes"]}))
            for g, of in bad.groupby("group", sort=True)
            if (members := group_members(str(g), topo)) and not explained(members, named, topo)}
    cross = _crossing(left)
    out: dict[tuple[str, EntityKind], Finding] = {}
    for group, (held, total, sizes) in left.items():
        where = ([(c, EntityKind.CARD) for c in sorted(held & cross, key=natural_key)] if cross
                 else group_entities(group, topo))
        for entity, kind in where:
            had = out.get((entity, kind))
            groups = sorted({group} | set(had.evidence["groups"] if had else ()))
            count = total + (had.evidence["measured"] if had else 0)
            at = "the groups giving them cross only at it; " if kind == EntityKind.CARD else ""
            out[(entity, kind)] = Finding(
                entity, kind, layer, WRONG_NOT_LOCALISED, SEVERITY,
                f"{kind} {entity}: collective group{'s' if len(groups) > 1 else ''} {', '.join(groups[:8])}"
                f"{' ...' if len(groups) > 8 else ''} gave {count} wrong elements (at {len(sizes)} of its sizes "
                f"from {sizes[0]} B); {at}no card or link of it is named for wrong results by a pair: not localised",
                {"measured": count, "expected": 0, "unit": "wrong elements", "groups": groups,
                 "sizes": sizes, "localised": False})
    return list(out.values())


def _crossing(left: dict[str, tuple[set[str], int, list[int]]]) -> set[str]:
    """The one or two cards where the host groups and the rail groups of ``left`` cross, where every
    group of ``left`` holds one of them; else none."""
    hosts = [cards for g, (cards, _, _) in left.items() if g.startswith("host:")]
    rails = [cards for g, (cards, _, _) in left.items() if g.startswith("rail:")]
    cross = {c for h in hosts for r in rails for c in h & r}
    if not cross or len(cross) > 2 or not all(cards & cross for cards, _, _ in left.values()):
        return set()
    return cross
