"""A stop (SIGTERM, SIGINT) while Click reads the command line is one line and exit 3, as the contract
says of a harness stopped by a signal (round 15 review): Click caught the KeyboardInterrupt the stop
handler (cli/start.py) raises, printed a blank line and 'Aborted!', exit 1, where a scheduler's
'exit 1' reads as a gate that failed. The signal is sent by the child to itself from inside Click's
parse (the way tests/test_hostile_r20.py's H20-04 stops the import): no timing on this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Click's step named by STOP_AT (a method of click.core's classes) sends STOP_SIG to the process the
# first time it runs for the command named STOP_IN, then gives the handler bytecodes to run in
_STOP_IN_CLICK = """
import os, signal, sys, runpy
import click
cls, _, method = os.environ["STOP_AT"].partition(".")
owner = getattr(click.core, cls)
orig = getattr(owner, method)
def stop(self, *args, **kwargs):
    name = self.command.name if isinstance(self, click.core.Context) else self.name
    if name == os.environ["STOP_IN"] and not os.environ.get("STOPPED"):
        os.environ["STOPPED"] = "1"
        os.kill(os.getpid(), getattr(signal, os.environ["STOP_SIG"]))
        for _ in range(1000):
            pass
    return orig(self, *args, **kwargs)
setattr(owner, method, stop)
sys.argv = ["sncheck", *sys.argv[1:]]
runpy.run_module("sncheck", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("at, where, sig, said", [
    ("Command.parse_args", "main", "SIGTERM", "interrupted (SIGTERM) while starting; nothing was run"),
    ("Command.parse_args", "plan", "SIGINT", "interrupted (Ctrl-C)"),
    ("Context.__exit__", "main", "SIGTERM", "interrupted (SIGTERM)"),  # closing, after the command
], ids=["top-level-options", "command-options", "closing"])
def test_a_stop_while_click_parses_is_one_line_and_exit_3(at: str, where: str, sig: str, said: str) -> None:
    p = subprocess.run([sys.executable, "-c", _STOP_IN_CLICK, "plan", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "STOP_AT": at,
                                                    "STOP_IN": where, "STOP_SIG": sig})
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert p.stderr == f"sncheck: error: {said}\n", p.stderr
    assert "Aborted!" not in p.stderr and "Traceback" not in p.stderr
