"""Fabric error counters judged as deltas.

A metric over ``host_fact`` rows, and the op that judges it (listed in
:data:`sncheck.health.metrics.METRICS` and :data:`sncheck.health.ops.OPS` with the others):

``fabric_counters``: the NVLink error counters (fact ``nvlink_errors``: ``nvidia-smi
nvlink -e``) and the InfiniBand port counters (fact ``ib_counters``: sysfs) as read
before the run (the host facts) and after it (the SSH backend reads them again when the
layer's traffic is over). One entry per entity and counter, with ``before``, ``after``
and ``growth`` (None when the run read them once). The entity is the card for an NVLink
link (the link is named in the message: ``link 3``) and the NIC ``<host>/nic<rail>`` for
an IB port (rail: the device's place among the host's RDMA devices in natural order); a
device the inventory has no card for stays the host's.

* op ``counter_growth`` (``of: growth``, the default): a counter of ``counters`` that grew
  by more than ``above`` during the run; one whose growth is unknown (read lower after than
  before, not in the earlier read and above ``above`` now, or read before and not after) is
  not judged (:func:`unknown_growth`);
* op ``counter_growth`` with ``of: before``: a counter already above ``above`` when the
  run began. The shipped rule is ``info``: last month's CRC burst is not tonight's failure.

The kernel log reports are judged in :mod:`sncheck.health.kernel` (the kernel-log policy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from sncheck.health.findings import jsonable
from sncheck.model import About, Basis, EntityKind, Finding
from sncheck.store.parts import PartFrames
from sncheck.store.frames import fact_rows, json_value
from sncheck.model import card_id
from sncheck.vendors.portcounters import CLEAR, saturated

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import Rule

COUNTER_FACTS = {"nvlink_errors": "NVLink", "ib_counters": "IB port"}
_COUNTER_COLUMNS = ["entity", "kind", "value", "fact", "device", "counter", "before", "after", "growth", "reread"]
_SHOWN = 6


# ------------------------------------------------------------------------------ metrics

def _reads(rows: pd.DataFrame, facts: tuple[str, ...]) -> list[tuple[str, str, list[dict]]]:
    """(host, fact, the values of its readable reads in order) for each host and fact.

    Each distinct JSON text is decoded once, however many hosts read it (a healthy fleet's
    NVLink counters are one text of zeros: 16,384 cards, 20 MB of it): hosts that read the
    same text share its value, which nothing here changes."""
    f = fact_rows(rows, ["fact", "status"], lambda f: f["fact"].isin(facts) & (f["status"] == "ok"), decode=False)
    if f.empty:
        return []
    out: dict[tuple[str, str], list[dict]] = {}
    decoded: dict[str, Any] = {}
    for host, fact, value in zip(f["host"].astype(str), f["fact"].astype(str), f["value"]):
        if isinstance(value, str):  # (read back from the run's parts: the text as stored)
            value = decoded[value] if value in decoded else decoded.setdefault(value, json_value(value))
        if isinstance(value, dict):
            out.setdefault((host, fact), []).append(value)
    return [(h, fact, sorted(v, key=lambda x: x.get("read", 0))) for (h, fact), v in out.items()]


Counters = tuple[list[tuple[str, str, str, str]], list[int]]  # (entity, kind, device, counter) keys, values


def _nvlink_counters(host: str, value: dict) -> Counters:
    keys, values = [], []
    for g in value.get("gpus") or []:
        card = g.get("card")
        entity, kind = (card_id(host, int(card)), "card") if card is not None else (host, "host")
        gpu = f"GPU {g.get('index')} link "
        for link, counters in (g.get("links") or {}).items():
            device = gpu + str(link)  # (formatted once per link: a fleet reads millions of counters)
            for name, v in counters.items():
                if isinstance(v, int):
                    keys.append((entity, kind, device, name))
                    values.append(v)
    return keys, values


def _ib_counters(host: str, value: dict, cards: int) -> Counters:
    # each port's rail and the counters that count faults: as the vendor's NIC plug-in read them
    ports = value.get("ports") or []
    faults = set(value.get("error_counters") or ())
    keys, values = [], []
    for p in ports:
        r = p.get("rail")
        entity, kind = (f"{host}/nic{r}", "nic") if isinstance(r, int) and r < cards else (host, "host")
        for name, v in (p.get("counters") or {}).items():
            if isinstance(v, int) and name in faults:
                keys.append((entity, kind, _port(p), name))
                values.append(v)
    return keys, values


def _port(p: dict) -> str:
    return f"{p['device']} port {p['port']}"


def _capped(fact: str, reads: Sequence[dict | None]) -> Callable[[tuple, int | None], bool]:
    """Whether a key's value is at its counter's cap: an IB port's PortCounters error counter at its width's
    maximum (:func:`sncheck.vendors.portcounters.saturated`) stopped counting there, so its growth over
    the run is unknown (reviews17 #3); a port read from PortCountersExtended (perfquery -x: 64 bits) has none."""
    if fact != "ib_counters":
        return lambda _key, _value: False
    wide = {_port(p) for r in reads if r is not None for p in r.get("ports") or ()
            if p.get("counter_set") == "PortCountersExtended"}
    return lambda key, value: key[2] not in wide and saturated(key[3], value)


def _before_after(first: Counters, last: Counters | None) -> tuple[list, list, list | None]:
    """The keys in order, with each one's first and last read (None: not in that read; a key
    read twice in one read counts its last value, as a dict of them would)."""
    keys, values = first
    if last is not None and last[0] == keys and len(set(keys)) == len(keys):
        # the common case: both reads name the same counters in the same order
        order = sorted(range(len(keys)), key=keys.__getitem__)
        return [keys[i] for i in order], [values[i] for i in order], [last[1][i] for i in order]
    before = dict(zip(keys, values))
    after = dict(zip(*last)) if last is not None else None
    ordered = sorted(before.keys() | after.keys() if after is not None else before)
    return ordered, [before.get(k) for k in ordered], [after.get(k) for k in ordered] if after is not None else None


def fabric_counters(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """Per entity and counter: before, after and growth over the run (see the module).

    A run judges the same reads in each of its evaluations (the layer, each retest
    window), and a fleet's NVLink reads are about a million counters: from a run's rows
    (:class:`sncheck.store.parts.PartFrames`) the frame is built once per run and kept with
    the run (``memo``), dropped with it; callers get a copy."""
    hosts = ctx.topo.inventory.hosts
    if not isinstance(rows, PartFrames):
        return _counters(rows, hosts)
    cards = tuple((h, hosts[h].cards) for h in hosts)
    return rows.memo("host_fact", ("fabric_counters", cards), lambda: _counters(rows, hosts)).copy()


def _counters(rows: pd.DataFrame, hosts: Mapping[str, Any]) -> pd.DataFrame:
    reads = _reads(rows, tuple(COUNTER_FACTS))
    cards = {h: hosts[h].cards if h in hosts else 0 for h, _, _ in reads}
    names = {c: _Names() for c in ("entity", "kind", "fact", "device", "counter")}
    columns: dict[str, list] = {c: [] for c in ("before", "after", "reread")}
    growth: list = []
    shapes: dict[tuple, tuple] = {}  # a read's counters with the host's name left out: one per distinct read
    # a run that read a fact twice on any host expects the read after the run on every host it
    # read before: one whose second read is missing (down by then, its read failed) is not judged
    twice = {fact for _, fact, values in reads if len(values) > 1}
    earliest: dict[str, int] = {}  # the number of the run's first read of each fact (HostReads' ``read``)
    for _, fact, values in reads:
        earliest[fact] = min(earliest.get(fact, values[0].get("read", 0)), values[0].get("read", 0))
    for host, fact, values in reads:
        first, last = values[0], values[-1] if len(values) > 1 else None
        if fact in twice and last is None and first.get("read", 0) > earliest[fact]:
            first, last = {}, first  # its one read is the read after the run (the one before failed)
        # (the values are shared by hosts that read the same text, and held by ``reads``)
        key = (fact, id(first), id(last), cards[host] if fact != "nvlink_errors" else 0)
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = _shape(fact, first, last, cards[host])
        ends, kinds, devices, counters, before, after, grew = shape
        if not before:
            continue
        names["entity"].add([host + end for end in ends[0]], ends[1])
        for column, (distinct, places) in (("kind", kinds), ("device", devices), ("counter", counters)):
            names[column].add(distinct, places, same=key)  # (no host's name in them: the same codes for each host)
        names["fact"].add([fact], np.zeros(len(before), np.int32), same=key)
        columns["before"] += before
        columns["after"] += after
        columns["reread"] += [fact in twice] * len(before)  # (a run that read once has no after to miss)
        growth += grew
    text = {c: n.column() for c, n in names.items()}
    frame = pd.DataFrame({"entity": text["entity"], "kind": text["kind"], "value": growth,
                          "fact": text["fact"], "device": text["device"], "counter": text["counter"],
                          "before": columns["before"], "after": columns["after"], "growth": growth,
                          "reread": pd.Series(columns["reread"], dtype=bool)},
                         columns=_COUNTER_COLUMNS)
    return frame


def _shape(fact: str, first: dict, last: dict | None, cards: int) -> tuple:
    """One read's counters (and its last read's) as columns, each entity named by what
    follows its host's name (the card ``/gpu3``, the NIC ``/nic0``, the host itself ``''``):
    sorted so, they sort as with the host's name before them. Each name column is its
    distinct names and each counter's place among them (:meth:`_Names.add`)."""
    read = (lambda v: _nvlink_counters("", v)) if fact == "nvlink_errors" else (lambda v: _ib_counters("", v, cards))
    keys, before, after = _before_after(read(first), read(last) if last is not None else None)
    if not keys:
        return (), (), (), (), [], [], []
    ends, kinds, devices, counters = (_distinct(c) for c in zip(*keys))
    # a counter that went down (reset, wrapped, or another port's read), that the earlier read did
    # not hold (a port or link up only now), or that sat at its width's maximum in either read (it
    # stopped counting): its growth is unknown (None), never what it reads now; counter_growth says
    # it is not judged
    capped = _capped(fact, (first, last))
    growth = [None] * len(keys) if after is None else \
        [None if a is None or b is None or a < b or capped(k, b) or capped(k, a) else a - b
         for k, b, a in zip(keys, before, after)]
    return ends, kinds, devices, counters, before, after if after is not None else [None] * len(keys), growth


def _distinct(values: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct names of ``values`` in first-seen order, and each value's place among them."""
    seen: dict[str, int] = {}
    places = np.fromiter((seen.setdefault(v, len(seen)) for v in values), np.int32, len(values))
    return list(seen), places


class _Names:
    """A column of names built a host's read at a time, held as a categorical: 7 M counters at
    131,072 cards are 643 MB as text and a few bytes each as codes. Its categories are sorted,
    so what groups or sorts by it (:func:`_per_entity`'s ``groupby(sort=True)``) orders the
    rows by name, as it did the text."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.blocks: list[np.ndarray] = []
        self.made: dict[Hashable, np.ndarray] = {}

    def add(self, names: Sequence[str], places: np.ndarray, same: Hashable = None) -> None:
        """The rows ``names[places[i]]`` appended; ``same``: a key of these names and places,
        whose rows are made once however many hosts add them (a fleet's 16,384 hosts read a
        few shapes of counters)."""
        rows = self.made.get(same) if same is not None else None
        if rows is None:
            codes = np.fromiter((self.index.setdefault(n, len(self.index)) for n in names), np.int32, len(names))
            rows = codes[places]
            if same is not None:
                self.made[same] = rows
        self.blocks.append(rows)  # (one array however many blocks hold it: concatenated once, at the end)

    def column(self) -> pd.Categorical:
        names = list(self.index)
        order = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(names), np.int32)
        rank[order] = np.arange(len(names), dtype=np.int32)
        codes = rank[np.concatenate(self.blocks)] if self.blocks else np.empty(0, np.int32)
        return pd.Categorical.from_codes(codes, categories=pd.Index([names[i] for i in order], dtype=str))


# ------------------------------------------------------------------------------ ops

def counter_growth(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    frame = frame[frame["counter"].isin(rule.params["counters"]) & _of_fact(frame, rule)]
    of, above = rule.params["of"], rule.params["above"]
    column = "growth" if of == "growth" else "before"
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = frame[values.notna() & (values > above)]
    judged = lambda group: {"measured": int(group[column].max()),  # noqa: E731
                            "expected": f"at most {above:g}" if of == "growth" else above, "unit": "errors"}
    if of == "before":
        return _per_entity(bad, rule, lambda r: f"{r.device} {r.counter}={int(r.before)}",
                           lambda _group, what, shown: f": {what} error counters were already above zero before the "
                           f"run: {shown} (not judged as tonight's failure: only growth during the run is)", judged)
    return unknown_growth(frame, rule) + \
        _per_entity(bad, rule, lambda r: f"{r.device} {r.counter} +{int(r.growth)} ({_n(r.before)} -> {_n(r.after)})",
                    lambda _group, what, shown: f": {what} error counters grew during the run: {shown}", judged)


def _of_fact(frame: pd.DataFrame, rule: "Rule") -> pd.Series | bool:
    """The rows of the reads ``rule`` judges: its ``fact`` (an NVLink rule's counter named as an IB port's, a
    card's ``local_link_integrity_errors``, is not the port's), or every read where it names none."""
    fact = rule.params.get("fact")
    return True if fact is None else frame["fact"] == fact


def unknown_growth(frame: pd.DataFrame, rule: "Rule") -> list[Finding]:
    """The counters of ``rule`` whose growth over the run is unknown, so they are not judged:
    one finding per entity at the rule's severity, about the check (never a pass, never a
    fail by assumption), as the cabling check judges a switch port's counters
    (:func:`sncheck.health.cabling.counter_growth_findings`):

    * read less after the run than before it: reset (a driver reload, ``perfquery -R``),
      wrapped, or another port read under the same name (read as growth, a reset to 0 passed
      and a reset to 3 counted 3);
    * not in the earlier read and above the rule's ``above`` now (a port or link up only during
      the run, a port ``ibqueryerrors`` lists only now): read as growth, its whole count failed;
      at or under the bar now it grew by no more than the bar;
    * read before the run and not in the read after it (a link or port gone, a read cut short),
      where the run read the fact twice on any host (so also every counter of a host whose
      read after the run is missing: down by then, or its read failed): it had no growth to
      judge, and nothing said so."""
    before = pd.to_numeric(frame["before"], errors="coerce")
    after = pd.to_numeric(frame["after"], errors="coerce")
    # a counter read only now grew by at most what it reads (it starts at 0 or more): at or
    # under the bar it cannot have grown past it (at 0, as the cabling check)
    down, new = before.notna() & after.notna() & (after < before), before.isna() & (after > rule.params["above"])
    # read before and missing from the read after the run (a link or port down, a read cut short): its growth
    # is unknown, as the cabling check's "read before and not now"; a run that read once has no after to miss
    gone = before.notna() & after.isna() & frame["reread"].astype(bool)
    # read both times, not lower after, and still no growth: a counter at its width's maximum (_capped)
    stuck = before.notna() & after.notna() & ~down & frame["growth"].isna()

    def message(group: pd.DataFrame, what: str, shown: str) -> str:
        why = (["went down during the run (reset, wrapped, or another port read)"] if down[group.index].any() else []) \
            + (["were not in the earlier read"] if new[group.index].any() else []) \
            + (["were read before and not after"] if gone[group.index].any() else []) \
            + ([f"sat at their width's maximum (a PortCounters error counter stops there: {CLEAR})"]
               if stuck[group.index].any() else [])
        return f" not judged: {what} error counters {', or '.join(why)}: their growth is unknown: {shown}"

    return _per_entity(frame[down | new | gone | stuck], rule, lambda r: f"{r.device} {r.counter} {_n(r.before)} -> {_n(r.after)}",
                       message, lambda _group: {"measured": "not judged",
                                                "expected": f"at most {rule.params['above']:g}", "unit": "errors"},
                       basis=Basis.NOT_JUDGED, about=About.CHECK)


def _per_entity(part: pd.DataFrame, rule: "Rule", line: Callable[[Any], str],
                message: Callable[[pd.DataFrame, str, str], str], judged: Callable[[pd.DataFrame], dict],
                **flags: Any) -> list[Finding]:
    """One finding of ``rule`` per entity of ``part`` (its counters to report), in entity order:
    ``"<kind> <entity>: <summary>"`` then ``message(group, what, shown)`` (``what``: the counters'
    kind, ``shown``: the first counters' ``line``); the evidence is ``judged(group)`` with the fact
    and the first 20 counters as read."""
    out = []
    for (entity, kind), group in part.groupby(["entity", "kind"], sort=True, observed=True):
        fact = group["fact"].iloc[0]
        parts = [line(r) for r in group.itertuples()]
        shown = ", ".join(parts[:_SHOWN]) + (f", ... ({len(parts)} in all)" if len(parts) > _SHOWN else "")
        evidence = {**judged(group), "fact": fact,
                    "counters": [{"device": r.device, "counter": r.counter, "before": jsonable(r.before),
                                  "after": jsonable(r.after), "growth": jsonable(r.growth)}
                                 for r in group.head(20).itertuples()]}
        out.append(Finding(str(entity), EntityKind(kind), rule.layer, rule.name, rule.severity,
                           f"{kind} {entity}: {rule.summary}{message(group, COUNTER_FACTS.get(fact, ''), shown)}",
                           evidence, **flags))
    return out


def judge_reads(rows: list[dict], rules: Sequence["Rule"], ctx: DetectContext) -> list[Finding]:
    """Counter reads given as their ``host_fact`` rows (a pasted read, and an earlier one:
    ``sncheck parse ib-counters FILE [--since EARLIER]``) judged by ``rules``' counter_growth
    rules, as a run judges its reads: one read, each counter's value before the run (the
    shipped rule: info); two, its growth from the first to the last. ``ctx``: the reads' host
    as a topology of one NIC per RDMA device (``parse_counters._context``: each port its NIC's),
    or one without a topology (``metrics.rows_context()``: each port its host's)."""
    frame = pd.DataFrame(rows)
    return [f for r in rules if r.op == "counter_growth" and r.metric == "fabric_counters"
            for f in counter_growth(frame, r, ctx)]


def _n(v: Any) -> str:
    return "?" if v is None or v != v else str(int(v))
