"""How busy this machine is: the run queue against the cores, steal time, and the CPU
other processes used while sncheck measured.

The local backend's cards share this machine's cores with whatever else runs on it: a
confirmation retest asks how busy it was before calling a symptom reproduced (see
:mod:`sncheck.run.confirm`). The run queue is sampled before and after the retest,
when sncheck's own workers are not running; a load that comes and goes (another job's
test run starting and ending) can miss both samples, so each sample also carries a
CPU mark, and :func:`window` gives the share of the cores that processes other than
sncheck's own used between the first mark and the last.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

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


def _own_cpu_s(pids: Iterable[int]) -> float:
    """CPU seconds used by this process, its waited-for children, and the given helper
    processes with their waited-for children (the local backend's fork server, whose
    ranks are its children)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    hz = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
        total += sum(int(x) for x in fields[11:15]) / hz  # utime, stime, cutime, cstime
    return total


def _mark(ticks: list[int], own_pids: Iterable[int]) -> dict:
    hz = os.sysconf("SC_CLK_TCK")
    busy = sum(ticks[i] for i in (0, 1, 2, 5, 6, 7) if i < len(ticks))  # user nice system irq softirq steal
    return {"t": time.monotonic(), "busy_s": busy / hz, "own_s": _own_cpu_s(own_pids)}


def window(samples: Iterable[Mapping[str, Any] | None]) -> dict | None:
    """The samples of one retest, taken before and after it, as one load: the busiest
    run queue and steal, and ``others``, the share of the cores that processes other
    than sncheck's own used between the first CPU mark and the last."""
    seen = [s for s in samples if s]
    if not seen:
        return None
    busiest = max(seen, key=lambda s: (s["runnable"] / max(s["cores"], 1), s.get("steal", 0.0)))
    load = dict(busiest)
    load.pop("mark", None)
    marks = [s["mark"] for s in seen if s.get("mark")]
    if len(marks) >= 2 and marks[-1]["t"] > marks[0]["t"]:
        first, last = marks[0], marks[-1]
        others = (last["busy_s"] - first["busy_s"]) - (last["own_s"] - first["own_s"])
        load["others"] = round(max(others, 0.0) / ((last["t"] - first["t"]) * max(load["cores"], 1)), 3)
    return load


def machine_load(own_pids: Iterable[int] = ()) -> dict:
    """The run queue against the cores, and the share of time stolen by a hypervisor,
    sampled over half a second: ``{"runnable", "cores", "steal", "mark"}``. ``runnable``
    counts the processes ready to run besides this one (sncheck's workers are not running
    between measurements); without /proc, the one-minute load average. ``mark`` is the
    CPU mark :func:`window` compares (``own_pids``: sncheck's helper processes)."""
    own_pids = tuple(own_pids)
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
    return {"runnable": max(sum(runs) / len(runs) - 1.0, 0.0), "cores": cores, "steal": round(steal, 3),
            "mark": _mark(last[1], own_pids)}


BUSY_RUNNABLE = 0.75  # runnable processes (besides sncheck's own) per core
BUSY_STEAL = 0.10
BUSY_OTHERS = 0.25  # share of the cores other processes used during the retest


def busy_reason(load: dict | None, degraded: list[str]) -> str | None:
    """On a backend that measures on one shared machine (it reports its load): the
    machine was busy, or the controls beside the suspect are degraded alike."""
    if load is None:
        return None
    busy = load["runnable"] / max(load["cores"], 1) >= BUSY_RUNNABLE or load.get("steal", 0.0) >= BUSY_STEAL \
        or load.get("others", 0.0) >= BUSY_OTHERS
    if not busy and not degraded:
        return None
    steal = f", steal {load['steal']:.0%}" if load.get("steal") else ""
    others = f", other processes used {load['others']:.0%} of the cores during the retest" \
        if load.get("others", 0.0) >= BUSY_OTHERS else ""
    return f"inconclusive: the machine was busy (load {load['runnable']:.1f} on {load['cores']} cores{steal}{others})"
