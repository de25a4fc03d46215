"""Batches handed to the sink on a thread of their own while the caller simulates the next
(issue 31: the gate's target is wall time on a 2-core machine).

The mock's p2p rounds and stress sweeps are numpy over whole batches; the sink's part of a
batch (its Arrow columns, its link ids, the Parquet part's encoding and write) releases the
GIL for most of its time. :class:`Behind` runs one batch's emission at a time on a thread
while the caller goes on with the next batch's draws, which stay on the caller's thread, in
their order: the same rows, the same parts, in the same order. Rows are still written as
they arrive, one batch behind at most: a batch waits for the one before it, so the sink
sees one batch at a time, and a sink that refuses one (a full disk, the run directory
swapped) raises in the caller at its next batch or at the end, before any later batch is
emitted (a cut layer keeps every batch written before it, as without the thread).
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Callable


class Behind:
    """``emit(fn, *args)`` runs ``fn(*args)`` on a thread once the previous call's has ended
    (its error raised here, in the caller); leaving the ``with`` block waits for the last."""

    def __init__(self) -> None:
        self._done: threading.Event | None = None  # the batch in flight's, set when it has ended
        self._error: BaseException | None = None

    def emit(self, fn: Callable[..., Any], *args: Any) -> None:
        self.wait()
        self._done = done = threading.Event()  # before the thread starts: never a batch unheld
        threading.Thread(target=self._run, args=(fn, args, done), name="sncheck-emit-behind", daemon=True).start()

    def _run(self, fn: Callable[..., Any], args: tuple, done: threading.Event) -> None:
        try:
            fn(*args)
        except BaseException as e:  # raised in the caller's thread (wait)
            self._error = e
        finally:
            done.set()

    def wait(self) -> None:
        """The batch in flight written (its error raised here). It stays in flight until the wait
        has seen it end: an interrupt that lands in the wait (Ctrl-C, SIGTERM while the sink is
        the slower side) leaves it to ``__exit__`` to wait for, never unwaited (reviews16 #5:
        the thread was dropped before its join; and an interrupted Thread.join of CPython 3.11
        marks a running thread stopped, so a second join returns at once: an Event instead)."""
        done = self._done
        if done is not None:
            done.wait()
            self._done = None
        error, self._error = self._error, None
        if error is not None:
            raise error

    def __enter__(self) -> "Behind":
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.wait()
            return
        try:  # the caller failed (Ctrl-C): the batch in flight still written, its own error dropped
            self.wait()
        except BaseException:  # noqa: BLE001  (the caller's exception is the one that propagates)
            pass
