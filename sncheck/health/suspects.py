"""Which cards deserve the stress layer's pairwise narrowing pass.

Not a rule: this only plans more measurements. Groups that failed validation, timed
out, or ran slow against their peers point at cards; the host x rail grid of the
stress groups narrows them to where a failing host group crosses a failing rail group.
Each cause is its own grid: a group that never ran (failed, timed out) points at its cards
whatever host and rail groups are slow beside it (reviews20 #9: a dead rail-2 leaf timed out
cross:gpu2 whole, a slow link beside it made host:node005 slow, the one grid kept node005's
cards alone, and the dead leaf was never narrowed, named or said).

Peers here are groups of one kind AND one rank count: a bigger group is slower by the cost
model alone (``t = k(p) alpha + F(p) n beta``), so inv-sizes' domain of 24 cards, set beside
domains of 12, 8 and 4, was "slow" on every clean run and its 24 cards narrowed over 276 pairs
for nothing (reviews16 #11). Groups of other rank counts are compared through the model by the
group rule (:mod:`sncheck.health.groups`), whose slow groups the stress layer adds.
"""

from __future__ import annotations

import pandas as pd

from sncheck.topology import Topology
from sncheck.health.metrics import kind_rows

SLOW_BW_RATIO = 0.8     # a group below 80% of its peer groups' busbw (large sizes)
SLOW_TIME_RATIO = 2.0   # or above 2x their time (small sizes)
LARGE_BYTES = 1 << 20
SMALL_BYTES = 64 << 10


def failed_groups(coll: pd.DataFrame) -> set[str]:
    """The groups (not the narrowing's pairs) of collective rows ``coll`` that did not run: a failed
    or timed-out step, a group that never ran (its own cause: reviews20 #9)."""
    return set(coll.loc[(coll["group_kind"] != "pair") & (coll["status"] != "ok"), "group"])


def failing_groups(rows: pd.DataFrame) -> dict[str, set[str]]:
    coll = kind_rows(rows, "collective")
    if coll.empty:
        return {"wrong": set(), "failed": set(), "slow": set()}
    failed = failed_groups(coll)
    coll = coll[coll["group_kind"] != "pair"]
    wrong = set(coll.loc[coll["wrong"].fillna(0) > 0, "group"])
    slow: set[str] = set()
    ok = coll[coll["status"] == "ok"].copy()
    if not ok.empty:
        key = ["collective", "group_kind", "size_bytes", "ranks"]  # of one rank count only (module doc)
        ok["bw_ratio"] = ok["busbw_GBps"] / ok.groupby(key)["busbw_GBps"].transform("median")
        ok["t_ratio"] = ok["time_us"] / ok.groupby(key)["time_us"].transform("median")
        peers = ok.groupby(key)["group"].transform("nunique")
        large = ok[(ok["size_bytes"] >= LARGE_BYTES) & (peers >= 3)]
        small = ok[(ok["size_bytes"] <= SMALL_BYTES) & (peers >= 3)]
        slow |= set(large.groupby("group")["bw_ratio"].median().loc[lambda s: s < SLOW_BW_RATIO].index)
        slow |= set(small.groupby("group")["t_ratio"].median().loc[lambda s: s > SLOW_TIME_RATIO].index)
    return {"wrong": wrong, "failed": failed, "slow": slow}


def suspect_cards(rows: pd.DataFrame, groups: dict[str, tuple[str, ...]], topo: Topology,
                  limit: int = 64, causes: dict[str, set[str]] | None = None) -> set[str]:
    """The cards the failing groups (``causes``: the groups by cause, else :func:`failing_groups`) point at."""
    out: set[str] = set()
    for failed in (failing_groups(rows) if causes is None else causes).values():
        hosts = [set(groups[g]) for g in failed if g.startswith("host:") and g in groups]
        # a cross group (card k of every host it spans) is a rail over supernodes: it crosses a host at one card
        rails = [set(groups[g]) for g in failed if g.startswith(("rail:", "cross:")) and g in groups]
        if hosts and rails:
            out |= {c for h in hosts for r in rails for c in h & r}
        elif hosts or rails:
            out |= set().union(*hosts, *rails)
        else:
            out |= {c for g in failed if g in groups for c in groups[g]}
    if len(out) > limit:  # keep the pass bounded; the grid already pointed at these
        known = [c for c in out if c in topo.by_id]
        pos = topo.card_table.index.get_indexer(known)  # topology order, one hash lookup each
        return {known[i] for i in pos.argsort(kind="stable")[:limit]}
    return out
