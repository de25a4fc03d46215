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
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def emit(self, fn: Callable[..., Any], *args: Any) -> None:
        self.wait()
        thread = threading.Thread(target=self._run, args=(fn, args), name="sncheck-emit-behind", daemon=True)
        self._thread = thread
        thread.start()

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            fn(*args)
        except BaseException as e:  # raised in the caller's thread (wait)
            self._error = e

    def wait(self) -> None:
        """The batch in flight written (its error raised here)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
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
