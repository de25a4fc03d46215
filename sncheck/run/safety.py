"""The CLI's safety net: signals handled like Ctrl-C, and a last-resort handler.

* :func:`install_signal_handlers` turns SIGTERM and SIGHUP into :class:`sncheck.errors.Interrupted`
  (a ``KeyboardInterrupt``), so a run stopped by cron, Slurm or systemd stops its
  workers, keeps what it measured, records which layer was cut short and why, renders
  its reports and exits 3, exactly as after Ctrl-C.
* :func:`crash_report` writes an unforeseen exception's traceback to a crash file
  (``<run dir>/crash.log``, or a temp file when no run directory exists yet), so the
  user sees one line, and the details are kept for a bug report.
"""

from __future__ import annotations

import os
import signal
import tempfile
import traceback
from pathlib import Path

from sncheck.config.fileio import append_text
from sncheck.errors import Interrupted, SncheckError, stop_signals

_RUN_DIR: list[Path] = []  # the run directory of this process, once one exists


def install_signal_handlers() -> dict:
    """SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread, once.

    A second signal while the run winds down is ignored: the first one already asked
    for the stop, and the wind-down (stop workers, write results) must finish.
    """
    fired: list[str] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:
            return
        fired.append(signal.Signals(signum).name)
        raise Interrupted(fired[0])

    previous = {}
    for sig in stop_signals():  # SIGHUP under nohup stays ignored
        try:
            previous[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread (an embedding caller): leave it
            pass
    return previous


def restore_signal_handlers(previous: dict) -> None:
    for sig, h in previous.items():
        signal.signal(sig, h)


def set_run_dir(path: Path | None) -> None:
    """Called when a run directory is opened (a crash file goes there from now on), and
    with None when a command starts (no run directory yet)."""
    _RUN_DIR[:] = [Path(path)] if path is not None else []


def crash_report(command: str, exc: BaseException) -> Path | None:
    """Write the traceback of ``exc`` to a crash file; return its path (None if unwritable)."""
    text = f"sncheck {command}: internal error\n" + "".join(
        traceback.format_exception(type(exc), exc, exc.__traceback__))
    candidates = [d / "crash.log" for d in _RUN_DIR]
    for path in candidates:
        try:
            append_text(path, text, lock=False)
            return path
        except (OSError, SncheckError):  # a link or a FIFO planted there: the temp file instead
            continue
    try:
        fd, name = tempfile.mkstemp(prefix="sncheck-crash-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return Path(name)
    except OSError:
        return None
