"""A command started ignoring SIGHUP (``nohup sncheck run ...``, a daemon, a scheduler) keeps
ignoring it: the entry's stop handler (cli/start.py, hostile round 20) and a run's
(run/safety.install_signal_handlers) took SIGHUP whatever its inherited disposition, so under
nohup a hangup stopped every command, exit 3 (reviews15 #6). SIGTERM still stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from test_hostile_r20 import _STOP_WHILE_IMPORTING

ROOT = Path(__file__).resolve().parents[1]

# the hangup lands while the CLI imports (the window H20-04 guards: its script, the signal changed), in a
# process that ignores SIG{sig} first
_HUP_WHILE_IMPORTING = _STOP_WHILE_IMPORTING.replace("signal.SIGTERM", "signal.SIGHUP").replace(
    "import os, signal, sys, runpy\n", "import os, signal, sys, runpy\nsignal.signal(signal.SIG{sig}, signal.SIG_IGN)\n")
assert "SIG_IGN" in _HUP_WHILE_IMPORTING and "SIGHUP" in _HUP_WHILE_IMPORTING


def _start(ignored: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _HUP_WHILE_IMPORTING.format(sig=ignored), "plan", "--help"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_hangup_under_nohup_does_not_stop_the_command() -> None:
    p = _start("HUP")
    assert p.returncode == 0 and "Usage:" in p.stdout and "interrupted" not in p.stderr, (p.returncode, p.stderr)


def test_a_hangup_not_ignored_still_stops_it_in_one_line() -> None:
    p = _start("USR2")  # some other signal ignored: SIGHUP keeps its meaning
    assert p.returncode == 3 and "interrupted (SIGHUP) while starting" in p.stderr, (p.returncode, p.stderr)


def test_a_runs_handlers_leave_an_ignored_hangup_ignored() -> None:
    from sncheck.run.safety import install_signal_handlers, restore_signal_handlers

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        previous = install_signal_handlers()
        try:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)  # SIGTERM still stops
        finally:
            restore_signal_handlers(previous)
    finally:
        signal.signal(signal.SIGHUP, before)
