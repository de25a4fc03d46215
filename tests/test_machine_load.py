"""The machine's load over a retest window (sncheck.backends.load), on this machine's /proc.

A load that comes and goes between the run-queue samples taken before and after a retest
still shows: the CPU other processes used in between is measured from /proc/stat, less
sncheck's own (this process, its children, its fork server's ranks). No assertion here
assumes an idle machine: each compares what a known process burned with what was counted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sncheck.backends.load import machine_load, window

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")
HZ = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


@pytest.fixture
def hog():
    """A busy loop that is not sncheck's: a child this process never waits for while it runs."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield p
    p.kill()
    p.wait()


def _burn_until(pid: int, cpu_s: float, limit_s: float = 60.0) -> None:
    start, deadline = _cpu_s(pid), time.monotonic() + limit_s
    while _cpu_s(pid) - start < cpu_s and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_process_that_is_not_sncheck_s_counts_as_other_load(hog):
    before, used = machine_load(), _cpu_s(hog.pid)
    _burn_until(hog.pid, 0.5)
    after = machine_load()
    used = _cpu_s(hog.pid) - used
    load = window([before, after])
    elapsed = after["mark"]["t"] - before["mark"]["t"]
    # everything the hog burned in the window is in "others" (tick rounding aside)
    assert load["others"] * elapsed * load["cores"] >= used - 3 / HZ - 0.01, (load, used, elapsed)
    assert "mark" not in load and load["cores"] == before["cores"]


def test_sncheck_s_own_helper_processes_are_not_other_load(hog):
    """The same busy loop named as sncheck's own (as the local backend names its fork
    server, whose ranks are its children): counted out."""
    marks = [(machine_load(), machine_load([hog.pid]))]
    _burn_until(hog.pid, 0.5)
    marks.append((machine_load(), machine_load([hog.pid])))
    theirs = window([marks[0][0], marks[1][0]])
    ours = window([marks[0][1], marks[1][1]])
    elapsed = marks[1][1]["mark"]["t"] - marks[0][1]["mark"]["t"]
    hog_share = 0.5 / (elapsed * ours["cores"])
    assert theirs["others"] - ours["others"] >= hog_share * 0.5, (theirs, ours, hog_share)


def test_cpu_this_process_burns_is_its_own():
    before = machine_load()
    start = time.process_time()
    while time.process_time() - start < 0.5:
        pass
    after = machine_load()
    assert after["mark"]["own_s"] - before["mark"]["own_s"] >= 0.5 - 0.02


def test_a_window_without_marks_has_no_other_load_figure():
    assert window([None, None]) is None
    old = {"runnable": 1.0, "cores": 2, "steal": 0.0}  # a backend's load without a mark
    assert window([old, {**old, "runnable": 3.0}]) == {"runnable": 3.0, "cores": 2, "steal": 0.0}
