"""How busy this machine is: the run queue against the cores, and steal time.

The local backend's cards share this machine's cores with whatever else runs on it: a
confirmation retest asks how busy it was before calling a symptom reproduced (see
:mod:`sncheck.layers.confirm`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LOAD_SAMPLES, LOAD_INTERVAL_S = 5, 0.1


def _proc_stat() -> tuple[int, list[int]] | None:
    """``procs_running`` and the aggregate cpu tick counters of /proc/stat (Linux)."""
    try:
        text = Path("/proc/stat").read_text()
    except OSError:
        return None
    running, ticks = None, []
    for line in text.splitlines():
        if line.startswith("procs_running "):
            running = int(line.split()[1])
        elif line.startswith("cpu "):
            ticks = [int(x) for x in line.split()[1:]]
    return (running, ticks) if running is not None and ticks else None


def machine_load() -> dict:
    """The run queue against the cores, and the share of time stolen by a hypervisor,
    sampled over half a second: ``{"runnable", "cores", "steal"}``. ``runnable`` counts
    the processes ready to run besides this one (sncheck's workers are not running
    between measurements); without /proc, the one-minute load average."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    first = _proc_stat()
    if first is None:
        return {"runnable": float(os.getloadavg()[0]), "cores": cores, "steal": 0.0}
    runs = [first[0]]
    last = first
    for _ in range(LOAD_SAMPLES - 1):
        time.sleep(LOAD_INTERVAL_S)
        last = _proc_stat() or last
        runs.append(last[0])
    spent = [b - a for a, b in zip(first[1], last[1])]
    steal = spent[7] / sum(spent) if len(spent) > 7 and sum(spent) > 0 else 0.0
    return {"runnable": max(sum(runs) / len(runs) - 1.0, 0.0), "cores": cores, "steal": round(steal, 3)}
