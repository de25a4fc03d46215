"""A wave's retests in batches (:func:`sncheck.run.confirm.confirm`): suspects retested by
their pairs alone, whose retests hold no card in common (the suspect's cards, its controls,
every card its rounds measure), are measured in one step, each still judged on its own rows.

One batch is one call of the backend's ``p2p`` (one mock call; on Slurm, one srun step per
supernode, rail or span the rounds fall in, not one per suspect; on the local backend one
torch world): its plan is each suspect's rounds, one after the other, exactly as its own
retest would run them, so on the mock and the local backend no suspect's pair is measured
beside another suspect's (its round mates are its own pairs and controls, as one at a time).
On Slurm the rounds are split into steps by supernode, rail or span, and steps on disjoint hosts
run side by side: two suspects' scale-out retests may then share spines at the same time, as the
main run's rounds share them (the mock has no contention to show it; the review of stop 47). Each row goes back to the retest
whose cards it holds (its ``confirms`` tag); no row holds two retests' cards, so a suspect's
rows are its own rows and its controls stay known-good: a batch cannot change a verdict.
A suspect whose retest shares a card with the open batch starts the next batch; a suspect
retested by more than its pairs (host facts, collectives, a golden model) or near its bar
(re-measured in growing batches until decided, sncheck.run.nearbar) runs alone, in its place.
So every suspect is measured in the order it would be one at a time: on the mock, whose draws
are one stream, each retest draws the same numbers as alone (a batch that took a later suspect
ahead of an earlier one changed the draws of both: gate-state's second night in the reference runs).

A batch that fails (HarnessError) leaves each of its suspects not re-measured ("the retest
could not run (...)": stays quarantined, the reason said), the other batches untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sncheck.backends.load import window
from sncheck.errors import HarnessError
from sncheck.model import host_of, split_link
from sncheck.probeplan import Round
from sncheck.rows import RowSink, batch_length, batch_to_dicts
from sncheck.run.retest import P2P, Retest

if TYPE_CHECKING:
    from sncheck.layers.base import LayerContext
    from sncheck.run.confirm import Window

CARD_FIELDS = ("src", "dst", "card")


def retests(ctx: LayerContext, windows: list[Window], sink_of: Callable[[str | None], RowSink]) -> dict[str, Retest]:
    """Each suspect's verdict, entity -> :class:`Retest`: batches where their retests fit
    together, the rest one at a time. ``sink_of(tag)``: the run's sink for a retest's rows."""
    order: list[Window | Batch] = []
    for w in windows:
        rounds = w.p2p_rounds() if w.hows == [P2P] and not w.near else None
        if rounds is None:
            order.append(w)
            continue
        cards = {c for r in rounds for p in r.pairs for c in p} | w.scope | w.controls
        b = order[-1] if order else None
        if not isinstance(b, Batch) or b.cards & cards:  # the open batch, or a new one after it
            b = Batch(ctx, sink_of)
            order.append(b)
        b.add(w, rounds, cards)
    out: dict[str, Retest] = {}
    for item in order:
        if isinstance(item, Batch):
            out.update(item.run())
        else:
            out[item.f.entity] = _guarded(item.run)
    return out


def _guarded(judge: Callable[[], Retest]) -> Retest:
    try:
        return judge()
    except HarnessError as e:  # this retest could not run: the suspect stays quarantined
        return Retest(None, "retest", f"the retest could not run: {e}")


class Batch:
    """Suspects whose pair retests hold no card in common, measured in one step."""

    def __init__(self, ctx: LayerContext, sink_of: Callable[[str | None], RowSink]) -> None:
        self.ctx, self.sink_of = ctx, sink_of
        self.windows: list[Window] = []
        self.rounds: list[list[Round]] = []
        self.held: dict[str, set[str]] = {}  # tag -> the cards its retest measures
        self.cards: set[str] = set()

    def add(self, w: Window, rounds: list[Round], cards: set[str]) -> None:
        self.windows.append(w)
        self.rounds.append(rounds)
        self.held[w.tag] = cards
        self.cards |= cards

    def run(self) -> dict[str, Retest]:
        ctx = self.ctx
        for w in self.windows:
            w.start()
        measured = [(w, r) for w, r in zip(self.windows, self.rounds) if r]
        if len(measured) > 1:
            ctx.progress(f"confirm: {len(measured)} suspects' pairs measured in one step")
        load = [ctx.backend.machine_load()]
        if measured:
            plan = measured[0][0].p2p_plan([r for _, rounds in measured for r in rounds])
            try:
                ctx.backend.p2p(plan, Router({w.tag: self.held[w.tag] for w, _ in measured}, self.sink_of))
            except HarnessError as e:  # the batch's step failed: its suspects were not re-measured
                for w, _ in measured:
                    w.measured[P2P] = f"the retest could not run ({e})"
            else:
                for w, _ in measured:
                    w.p2p_seen()
        load.append(ctx.backend.machine_load())
        seen = window(load)
        return {w.f.entity: _guarded(partial(w.judge, w.hows, seen)) for w in self.windows}


class Router:
    """A batch's sink: each row to the retest holding its cards (a pair's ends; a link's; a
    host's rows to every retest with a card on it); a row holding none is kept untagged."""

    def __init__(self, held: dict[str, set[str]], sink_of: Callable[[str | None], RowSink],
                 constants: dict | None = None) -> None:
        self.held, self.sink_of, self.constants = held, sink_of, constants or {}
        self.owner = {c: tag for tag, cards in held.items() for c in cards}
        self.on_host: dict[str, list[str]] = {}
        for tag, cards in held.items():
            for h in sorted({host_of(c) for c in cards}):
                self.on_host.setdefault(h, []).append(tag)
        self.sinks: dict[str | None, RowSink] = {}

    def _sink(self, tag: str | None) -> RowSink:
        if tag not in self.sinks:
            self.sinks[tag] = self.sink_of(tag).tagged(**self.constants) if self.constants else self.sink_of(tag)
        return self.sinks[tag]

    def tags(self, row: dict) -> list[str | None]:
        for key in CARD_FIELDS:
            if row.get(key) in self.owner:
                return [self.owner[row[key]]]
        entity, kind = row.get("entity"), row.get("entity_kind")
        if kind == "link" and isinstance(entity, str) and "<->" in entity:
            ends: list[str | None] = [self.owner[c] for c in split_link(entity) if c in self.owner]
            if ends:
                return ends[:1]
        host = str(entity if kind == "host" else row.get("host"))
        return list(self.on_host.get(host, [])) or [None]

    def __call__(self, row: dict) -> None:
        for tag in self.tags(row):
            self._sink(tag)(row)

    def batch(self, kind: str, columns: dict[str, Any], **constants: Any) -> None:
        src = columns.get("src")
        if src is None or not hasattr(src, "__len__") or isinstance(src, str):
            for row in batch_to_dicts(kind, columns, **constants):
                self(row)
            return
        names = src.to_pylist() if hasattr(src, "to_pylist") else list(src)
        tags = [self.owner.get(n) for n in names]
        n = batch_length(columns)
        for tag in dict.fromkeys(tags):
            keep = np.fromiter((t == tag for t in tags), bool, count=n)
            self._sink(tag).batch(kind, {k: _take(v, keep) for k, v in columns.items()}, **constants)

    def tagged(self, **constants: Any) -> Router:
        return Router(self.held, self.sink_of, {**self.constants, **constants})


def _take(v: Any, keep: np.ndarray) -> Any:
    """A batch column's rows where ``keep`` (a scalar is broadcast: kept as it is)."""
    if v is None or isinstance(v, (str, bytes, int, float, bool)) or getattr(v, "ndim", 1) == 0:
        return v
    if isinstance(v, (pa.Array, pa.ChunkedArray)):
        return v.filter(pa.array(keep))
    if isinstance(v, np.ndarray):
        return v[keep]
    return [x for x, k in zip(v, keep) if k]
