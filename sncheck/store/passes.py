"""One read of a kind's rows for every reader of a run that expects it (issue 31).

At 131,072 cards a read of the p2p rows' ids is 10-13 s CPU (50.2 M rows), and evidence
(its :class:`~sncheck.store.evidence.Who`), report.html's maps and sncheck.prom's card series
each read them, one after another; the rank rows (23 M) are read by evidence and by the
launch skew. A reader of many rows is a :class:`Builder`: what it reads of each piece, its
``add`` of a piece, its ``finish``. The run says, before the first of them asks, which
builders its outputs will ask for (:meth:`Passes.expect`, the formats it renders:
``sncheck.report.outputs``); the first to ask (``PartFrames.shared``) feeds every expected
builder of that kind each piece, in order, in one pass; what the others built waits for
them, each handed once and let go (the view never keeps it), and what is never asked for
goes with the run's store. Keyed by the parts that hold the rows, as ``PartFrames.memo``: a
view of other rows (a retest's, a part written since) builds its own. A builder not
expected, or asked again, gets a pass of its own; its value is the same either way (every
builder sees every piece, in order).

Builders that read a piece the same way name one ``decoder`` (a function of the columns
they read together, giving an object whose ``of(piece)`` decodes a piece): each piece is
decoded once for all of them (the reports' card codes, :mod:`sncheck.report.p2pread`).
Without one a builder is given the piece as the view gives it (an Arrow table of a run
store's part, or a frame of rows held in memory).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol


class Builder(Protocol):
    @property
    def columns(self) -> tuple[str, ...]:
        """What it reads of each piece."""

    def add(self, piece: Any) -> None: ...

    def finish(self) -> Any: ...


Make = Callable[[], Builder]
Tables = Callable[[list[str]], Iterable[Any]]   # the pieces of the kind's rows, only these columns


def one_pass(makes: Mapping[str, Make], tables: Tables) -> dict[str, Any]:
    """Each builder of ``makes`` fed every piece (the columns any of them reads), in order,
    then finished: those whose class says ``finish_first`` (they reduce what they hold: the
    card table) before the others, else in ``makes``' order."""
    builders = {n: make() for n, make in makes.items()}
    groups: dict[Any, list[Builder]] = {}
    for b in builders.values():
        groups.setdefault(getattr(b, "decoder", None), []).append(b)
    decoders = {d: d(tuple(dict.fromkeys(c for b in bs for c in b.columns))) for d, bs in groups.items()
                if d is not None}
    for table in tables(list(dict.fromkeys(c for b in builders.values() for c in b.columns))):
        for d, bs in groups.items():
            piece = table if d is None else decoders[d].of(table)
            for b in bs:
                b.add(piece)
            del piece
        del table
    order = sorted(builders, key=lambda n: not getattr(builders[n], "finish_first", False))
    return {n: builders[n].finish() for n in order}


class Passes:
    """Per run store, for each view's rows (a key: the kind, the parts that hold the rows,
    the selection): the builders expected and not yet built (in the order expected), and
    what a pass built for a reader that has not asked yet."""

    def __init__(self) -> None:
        self._armed: dict[Hashable, dict[str, Make]] = {}
        self._waiting: dict[Hashable, dict[str, Any]] = {}

    def expect(self, key: Hashable, makes: Mapping[str, Make]) -> None:
        """The builders ``makes`` will ask for the rows ``key`` names (one already expected,
        or built and waiting, is not expected again)."""
        armed, waiting = self._armed.setdefault(key, {}), self._waiting.get(key, {})
        for n, make in makes.items():
            if n not in waiting:
                armed.setdefault(n, make)

    def take(self, key: Hashable, name: str, make: Make, tables: Tables) -> Any:
        """What builder ``name`` built of the rows ``key`` names: waiting from the pass
        another reader made, else from a pass made now for it and every builder expected of
        these rows and not yet built (a builder asked again: a pass of its own)."""
        waiting = self._waiting.get(key)
        if waiting is not None and name in waiting:
            value = waiting.pop(name)
            if not waiting:
                del self._waiting[key]
            return value
        makes = self._armed.pop(key, {})
        makes[name] = make
        values = one_pass(makes, tables)
        others = {n: v for n, v in values.items() if n != name}
        if others:
            self._waiting.setdefault(key, {}).update(others)
        return values[name]

    def clear(self) -> None:
        """Let go of whatever waits (the run's outputs are written)."""
        self._armed.clear()
        self._waiting.clear()
