"""The retest of a collective group symptom (rule op ``group_outlier``: collective-group-slow,
:mod:`sncheck.health.groups`): what found it, measured again.

A group is slow against its peer groups (or its tier's design) at the sizes of the sweep where
it showed; a fault acting only above a message size shows at no smaller one. So the retest runs
the slow group itself, under its own id and kind, at its smallest and its largest slow size, at the sweep's size
below it (the control: where it was not slow) and at the sweep's smallest size (where its kind's
per-rank latency is read, for peers of other rank counts), beside every peer group of its kind,
and the group rule alone judges those rows as it judged the sweep's (the peer groups are its
comparison, not the retest's subject: no other rule reads them). A retest at the narrowing's sizes
or over the suspect's domain sample could not show a group slow from 256 MiB or a cross group:
every such finding was "re-measured and quiet" and released (reviews16 #7). "Not reproduced" is
said only when the group was judged again at its smallest slow size (:func:`unjudged`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from sncheck.health.groups import NOT_GROUPS, bars, group_busbw, reading, slow
from sncheck.probeplan import WITHOUT, Group, StressPlan, without

if TYPE_CHECKING:
    from collections.abc import Callable

    from sncheck.backends.base import Backend
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import Rule
    from sncheck.run.confirm import Symptom

OP = "group_outlier"


def group_symptoms(syms: list, by_name: dict[str, "Rule"]) -> list["Symptom"]:
    """The symptoms a group rule found (their evidence names the group and its smallest slow size)."""
    return [s for s in syms if (r := by_name.get(s.rule)) is not None and r.op == OP
            and s.evidence.get("group") and s.evidence.get("smallest_bytes")]


def group_plan(syms: list["Symptom"], base: StressPlan, repeats: int) -> StressPlan | None:
    """The slow groups and their kinds' other groups at the sizes that show them (None: the
    sweep's plan holds none of them, e.g. a plan scoped by ``--targets``)."""
    ids = {g for s in syms for g in [s.evidence["group"], *s.evidence.get("groups", ())]}
    mine = _groups(ids, base)
    kinds = {g.kind for g in mine}
    if not kinds:
        return None
    sizes = {min(base.sizes)}
    for s in syms:
        first = int(s.evidence["smallest_bytes"])
        sizes |= {first, max((n for n in base.sizes if n < first), default=first), _largest(s)}
    instead = {g.id.partition(WITHOUT)[0]: g for g in mine if WITHOUT in g.id}
    return StressPlan(groups=tuple(instead.get(g.id, g) for g in base.groups if g.kind in kinds),
                      collectives=base.collectives, sizes=tuple(sorted(sizes)), warmup=base.warmup, iters=base.iters,
                      repeats=repeats)


def _largest(s: "Symptom") -> int:
    """The largest size the group was slow at: a fault acting only above a size shows there and at
    no smaller one, and the smallest slow size may be another culprit's, gone by the retest
    (review18 #1: a transient NIC made cross:gpu0 slow from 128 MiB, a 0.3x link above 128 MiB
    from 1 GiB; re-measured at 128 MiB alone, the group was inside its bars and released)."""
    sizes = [int(n) for n in s.evidence.get("sizes") or () if isinstance(n, (int, float))]
    return max(sizes, default=int(s.evidence["smallest_bytes"]))


def _groups(ids: set[str], base: StressPlan) -> list[Group]:
    """The sweep's groups named by ``ids``; one run again without some cards (``<group>~<cards>``,
    :func:`sncheck.layers.stress.without_named`) is not in the sweep's plan: it is made again from its
    group there, less those cards. Left out, its symptom was never re-measured and stayed quarantined."""
    by_id = {g.id: g for g in base.groups}
    out = []
    for gid in sorted(ids):
        name, _, gone = gid.partition(WITHOUT)
        if gid in by_id:
            out.append(by_id[gid])
        elif gone and name in by_id:
            out.append(without(by_id[name], set(gone.split("+"))))
    return out


def rerun(backend: "Backend", syms: list, by_name: dict[str, "Rule"], base: StressPlan,
          emit: "Callable[[dict], None]") -> None:
    """Re-run the groups of a retest's group symptoms where they showed (none: nothing)."""
    plan = group_plan(group_symptoms(syms, by_name), base, 1)
    if plan is not None:
        backend.collectives(plan, emit)


def split(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A retest's rows apart from its groups' re-run (:func:`group_plan`), and those."""
    if rows.empty or "group_kind" not in rows:
        return rows, rows.iloc[:0]
    mine = (rows["kind"] == "collective") & rows["group_kind"].notna() & ~rows["group_kind"].isin(NOT_GROUPS)
    return rows[~mine], rows[mine]


def outcome(s: "Symptom", rule: "Rule", rows: pd.DataFrame, dctx: "DetectContext") -> tuple[bool | None, str]:
    """A group symptom judged on its groups' re-run by its rule's bars: one of its groups slow
    again (True; None for a group over several supernodes, not localised), not judged where it
    showed (None), or judged there and inside the bars (False). The group itself, not the rule's
    finding: the other supernodes a cross group spans are this wave's suspects too, and a group
    holding a known culprit is no finding (it explained the cross group away on every one)."""
    frame = group_busbw(rows, dctx) if not rows.empty else pd.DataFrame(columns=["group"])
    ids = [s.evidence["group"], *(g for g in s.evidence.get("groups", ()) if g != s.evidence["group"])]
    bad = frame[frame["group"].isin(ids)]
    bad = reading(bad, bars(rule)) if not bad.empty else bad
    bad = bad[slow(bad, bars(rule))] if not bad.empty else bad
    if not bad.empty:
        w = bad.loc[bad["value"].astype(float).idxmin()]
        again = (f"group {w['group']} slow again: {w['collective']} at {int(w['size_bytes'])} bytes took "
                 f"{w['time_us']:.1f} us where {'its tier' if w['basis'] == 'design' else 'its peers'} predict "
                 f"{w['expected_us']:.1f} us ({w['value']:.2f}x)")
        if s.evidence.get("localised") is False:  # a group over several supernodes: not this entity's to isolate
            return None, f"reproduced, not localised: {again}"
        return True, again
    if gap := unjudged(s, rows, dctx):
        return None, f"not re-measured: {gap}"
    largest = _largest(s)
    also = f" and at {largest} bytes, its largest," if largest != int(s.evidence["smallest_bytes"]) else ""
    return False, f"group {s.evidence['group']} re-measured at {s.evidence['smallest_bytes']} bytes, its smallest " \
                  f"slow size,{also} and inside its bars"


def unjudged(s: "Symptom", rows: pd.DataFrame, dctx: "DetectContext") -> str | None:
    """What kept the retest from showing the symptom: its group not judged (against peers or
    design) at its smallest slow size; None when it was."""
    group, first = s.evidence.get("group"), int(s.evidence.get("smallest_bytes") or 0)
    if not group or not first:
        return "its evidence names no group and size"
    frame = group_busbw(rows, dctx)
    at = frame[(frame["group"] == group) & (frame["size_bytes"] == first) & (frame["basis"] != "none")]
    return None if not at.empty else f"group {group} was not measured and judged at {first} bytes, where it was slow"
