"""Loading a dump with bounds: a dump is data a job wrote, and a hostile or broken one must
cost a bounded amount of time and memory and come out as "unreadable", never as a crash
of the watcher or hours of work.

* :class:`BoundedUnpickler`: the pure-Python unpickler (its loop can count; the C one has
  no hook but ``find_class``) with ``find_class`` refused (plain data only, never code),
  and a bound on the opcodes it runs (so on the objects it builds, and its memory), on the
  memo references it follows, and on the nesting of marks it opens. ``pickle.load`` is
  never called on a dump.
* :func:`json_documents`: JSON with ``NaN``/``Infinity`` refused and a cheap bound on the
  number of values (counted from the separators before anything is built).
* :func:`check_tree`: a walk of what was loaded, with no recursion, that follows every
  reference (a memo entry referenced two million times is walked two million times, as a
  reader of the dump would): at most :data:`MAX_ITEMS` values, :data:`MAX_DEPTH` deep (a
  structure that contains itself never ends, so it is too deep), every float finite, every
  integer within 64 bits.

Each raises :class:`DumpRefused` with the reason, which the reader turns into an
``Unreadable`` (a "dump unreadable" finding for that rank; the other ranks are judged).
"""

from __future__ import annotations

import io
import json
import math
import pickle
from itertools import chain
from typing import Any, Callable

from sncheck.vendors import jsonprefix
from sncheck.vendors import nccl_inspector as inspector

MAX_OPS = 4_000_000        # opcodes of one pickle: a 20k-entry Flight Recorder dump runs ~1.6 M
MAX_REFS = 1_000_000       # memo references followed while loading (20k entries: ~0.4 M, their keys)
MAX_MARKS = 256            # marks open at once (a Flight Recorder dump nests about 6 deep)
MAX_DEPTH = 64             # nesting of what was loaded
MAX_ITEMS = 6_000_000      # values, every reference counted (20k entries: ~1.2 M)
INT64 = 2**63


class DumpRefused(ValueError):
    """A dump past a bound: the message says which and why."""


class BoundedUnpickler(pickle._Unpickler):  # noqa: SLF001 -- the pure-Python unpickler: only its loop can count
    """Plain data only, within :data:`MAX_OPS`, :data:`MAX_REFS` and :data:`MAX_MARKS`."""

    _GETS = frozenset(op[0] for op in (pickle.BINGET, pickle.LONG_BINGET, pickle.GET))

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused: the pickle names {module}.{name} (a dump holds plain data only)")

    def persistent_load(self, pid: Any) -> Any:  # noqa: ARG002 -- pickle.Unpickler's hook: every persistent id is refused
        raise pickle.UnpicklingError("refused: the pickle refers to persistent objects (a dump holds plain data only)")

    def load(self) -> Any:
        # pickle._Unpickler.load, with a count: the loop below is that method's, plus the bounds.
        self._unframer = pickle._Unframer(self._file_read, self._file_readline)  # type: ignore[attr-defined]  # noqa: SLF001 -- pickle's own framing, as its _Unpickler.load uses it
        self.read = self._unframer.read
        self.readinto = self._unframer.readinto
        self.readline = self._unframer.readline
        self.metastack: list[Any] = []
        self.stack: list[Any] = []
        self.append = self.stack.append
        self.proto = 0
        # typeshed types the table's handlers for pickle.Unpickler; they take this pure-Python one
        dispatch: dict[int, Callable[[Any], None]] = self.dispatch
        read, gets, mark = self.read, self._GETS, pickle.MARK[0]
        ops = refs = 0
        try:
            while True:
                key = read(1)
                if not key:
                    raise EOFError
                ops += 1
                code = key[0]
                if ops > MAX_OPS:
                    raise DumpRefused(f"more than {MAX_OPS:,} pickle operations (too many objects)")
                if code in gets:
                    refs += 1
                    if refs > MAX_REFS:
                        raise DumpRefused(f"more than {MAX_REFS:,} references to shared objects")
                elif code == mark and len(self.metastack) >= MAX_MARKS:
                    raise DumpRefused(f"nested more than {MAX_MARKS} deep")
                dispatch[code](self)
        except pickle._Stop as stop:  # type: ignore[attr-defined]  # noqa: SLF001 -- pickle's STOP opcode ends its load by this exception
            return stop.value


def load_pickle(raw: bytes) -> Any:
    return BoundedUnpickler(io.BytesIO(raw)).load()


def _no_constant(name: str) -> float:
    raise DumpRefused(f"a number is {name}, not a finite number")


DECODER = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=jsonprefix.once)


def json_documents(text: str) -> tuple[list[Any], inspector.Tail]:
    """Every JSON document in ``text`` (one, or a stream as Inspector writes), and why the
    rest could not be read (:class:`inspector.Tail`); NaN and Infinity refused, an object giving a
    key twice refused (:func:`jsonprefix.once`), and at most
    about :data:`MAX_ITEMS` values (counted from the separators before any is built)."""
    values = text.count(",") + text.count("[") + text.count("{") + text.count(":")
    if values > MAX_ITEMS:
        raise DumpRefused(f"about {values:,} JSON values, more than {MAX_ITEMS:,}")
    return inspector.json_stream(text, DECODER)


def check_tree(data: Any) -> None:
    """Refuse (:class:`DumpRefused`) what no reader of a dump should walk: more than
    :data:`MAX_ITEMS` values, a shared value counted each time it is used (what a reader
    that follows each reference would walk), more than :data:`MAX_DEPTH` levels, a
    structure that contains itself, a float that is not finite or an integer beyond 64
    bits. No recursion; a container shared many times is walked once and then counted
    by what it held (so two million references to one entry cost two million steps)."""
    done: dict[int, tuple[int, int]] = {}  # id of a container walked -> (values in it, itself included; height)
    active: set[int] = set()               # containers on the current path: meeting one again is a cycle
    total = 0
    # frames: [container, iterator over its children, values so far, height so far]
    stack: list[list[Any]] = []

    def enter(obj: Any) -> int:
        """Count a child; a container not walked yet is pushed and counted when it is done."""
        nonlocal total
        if isinstance(obj, (dict, list, tuple, set, frozenset)):
            key = id(obj)
            if key in active:
                raise DumpRefused("a structure that contains itself")
            if key in done:
                n, height = done[key]
                if len(stack) + height > MAX_DEPTH:
                    raise DumpRefused(f"nested more than {MAX_DEPTH} deep")
                total += n
                if total > MAX_ITEMS:
                    raise DumpRefused(f"more than {MAX_ITEMS:,} values (shared entries counted each time they are used)")
                return height + 1
            if len(stack) >= MAX_DEPTH:
                raise DumpRefused(f"nested more than {MAX_DEPTH} deep")
            active.add(key)
            it = chain.from_iterable(obj.items()) if isinstance(obj, dict) else iter(obj)
            stack.append([obj, it, 1, 0])
            return -1
        _scalar(obj)
        total += 1
        if total > MAX_ITEMS:
            raise DumpRefused(f"more than {MAX_ITEMS:,} values (shared entries counted each time they are used)")
        return 0

    enter(data)
    while stack:
        frame = stack[-1]
        child = next(frame[1], _END)
        if child is _END:
            stack.pop()
            key = id(frame[0])
            active.discard(key)
            done[key] = (frame[2], frame[3])
            total += 1
            if stack:
                stack[-1][2] += frame[2]
                stack[-1][3] = max(stack[-1][3], frame[3] + 1)
            continue
        height = enter(child)
        if height > 0:  # a container walked before: its values count here too
            frame[2] += done[id(child)][0]
            frame[3] = max(frame[3], height)
        elif height == 0:
            frame[2] += 1


def _scalar(obj: Any) -> None:
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, bytes, bytearray)):
        return
    if isinstance(obj, int):
        if not -INT64 <= obj < INT64:
            raise DumpRefused(f"an integer out of range ({_short(obj)})")
    elif isinstance(obj, float):
        if not math.isfinite(obj):
            raise DumpRefused(f"a number is {obj!r}, not a finite number")


_END = object()


def _short(n: int) -> str:
    return f"about 2**{n.bit_length() - 1}" if n > 0 else f"about -2**{(-n).bit_length() - 1}"
