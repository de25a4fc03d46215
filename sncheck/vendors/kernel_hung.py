"""Hung tasks in the kernel log, read by the ``kernel-log`` view
(:mod:`sncheck.vendors.kernel_log` asks :func:`event` about every line, its time stripped).

Grammar: Linux ``kernel/hung_task.c`` (``check_hung_task`` to 6.14, ``hung_task_info`` from
6.15; the format of its first line unchanged since 2.6.30), khungtaskd's report of a task in
uninterruptible sleep (``D``) longer than ``hung_task_timeout_secs`` (default 120):

- ``INFO: task COMM:PID blocked for more than N seconds.``: COMM is the task's name (at most
  15 characters, any but a newline: ``kworker/u16:2``, ``nvc:[driver]``, ``irq/105-pciehp``),
  N the timeout (kernels to 4.x) or, since ``(jiffies - last_switch_time) / HZ``, how long it
  has been blocked (so 122, 245 ... for one task reported again);
- then ``      Tainted: FLAGS RELEASE #VERSION`` or ``      Not tainted RELEASE #VERSION``
  (``print_tainted()``, ``init_utsname()``), 6.x ``      Blocked by coredump.``, ``"echo 0 >
  /proc/sys/kernel/hung_task_timeout_secs" disables this message.``;
- ``sched_show_task``: ``task:COMM state:D stack:N pid:N [tgid:N] ppid:N flags:0x...`` (5.14+) or
  ``COMM D STACK PID PPID 0xFLAGS`` (older), then ``Call Trace:`` (arm64: ``Call trace:``),
  `` <TASK>``, one frame a line (``func+0xOFF/0xLEN [module]``, ``? `` for an unreliable one;
  4.x: ``[<ffffffff...>] func+...``; arm64 adds `` (T)``), register lines (``RIP:``, ``RSP:``,
  ``RAX:`` ...) and `` </TASK>``;
- 6.15+ (``CONFIG_DETECT_HUNG_TASK_BLOCKER``): ``INFO: task COMM:PID is blocked on a mutex
  likely owned by task COMM:PID.`` (semaphore: ``blocked on a semaphore likely last held by
  task``; rw-semaphore: ``<reader> blocked on an rw-semaphore likely owned by task ... <writer>``);
- ``Future hung task reports are suppressed, see sysctl kernel.hung_task_warnings`` (after
  ``hung_task_warnings``, default 10, reports); with ``hung_task_panic``: ``Kernel panic - not
  syncing: hung_task: blocked tasks``.

Events (``source: hung_task``): ``hung-task`` with ``process``, ``pid``, ``seconds``,
``tainted`` (the flags; ``""`` for Not tainted), ``kernel`` (the release), ``state``,
``trace`` (the reliable frames' function names, at most :data:`MAX_FRAMES`; what the log shows: sncheck's
own read keeps the report lines, not the stack), ``module`` (the first frame's module),
``blocked_by`` (``COMM:PID``), ``suppressed`` (the reports after it are not printed); and
``hung-task-panic``. Failures: both.
"""

from __future__ import annotations

import re
from typing import Any

MAX_FRAMES = 32
_INFO = re.compile(r"INFO: task (?P<comm>.{1,16}?):(?P<pid>\d+) blocked for more than (?P<secs>\d+) seconds")
_BLOCKER = re.compile(r"INFO: task (?P<comm>.{1,16}?):(?P<pid>\d+) (?:<\w+> )?(?:is )?blocked on an? [\w-]+ likely "
                      r"(?:last held|owned) by task (?P<by>.{1,16}?:\d+)")
_TAINT = re.compile(r"^(?:Tainted: (?P<flags>[A-Z ]*?)\s+|Not tainted )(?P<release>\d\S*)")
_SCHED = re.compile(r"^task:.{0,16}?\s+state:(?P<state>\w)\s|^\S.{0,15}?\s+(?P<old>[DRSTtXZPIK])\s+(?:[0-9a-f]{16}\s+)?\d+"
                    r"\s+\d+\s+\d+\s+0x[0-9a-f]+$")
_FRAME = re.compile(r"^(?:\[<[0-9a-f]+>\]\s*)?(?P<unsure>\? )?(?P<fn>[\w.]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[(?P<mod>\w+)\])?")
_OTHER = re.compile(r"^(?:Call [Tt]race:|<TASK>|</TASK>|<IRQ>|</IRQ>|\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\"|"
                    r"Blocked by coredump|[A-Z0-9]{2,3}: [0-9a-f]{4}:|R[A-Z0-9]{1,2}: |RIP: |Code: |"
                    r"[0-9a-f]{16}( [0-9a-f]{16})+$)")
SUPPRESSED = "Future hung task reports are suppressed"
PANIC = "Kernel panic - not syncing: hung_task"
PATTERN = r"blocked for more than [0-9]+ seconds|blocked on an? [a-z-]+ likely|Future hung task|not syncing: hung_task"


def event(body: str, last: dict[str, Any] | None) -> dict[str, Any] | None:
    """The hung-task event a line starts; ``{}`` for a line that continues ``last`` (the report
    open before it: updated in place); None for any other line (which closes the report)."""
    if "INFO: task " in body:
        if m := _INFO.search(body):
            return {"source": "hung_task", "code": None, "class": "hung-task", "bus_id": None,
                    "process": m["comm"], "pid": int(m["pid"]), "seconds": int(m["secs"]), "tainted": None,
                    "kernel": None, "state": None, "trace": [], "module": None, "blocked_by": None,
                    "suppressed": False}
        if (m := _BLOCKER.search(body)) and last is not None and \
                (last["process"], last["pid"]) == (m["comm"], int(m["pid"])):
            last["blocked_by"] = m["by"]
            return {}
    if PANIC in body:
        return {"source": "hung_task", "code": None, "class": "hung-task-panic", "bus_id": None}
    if last is None or last.get("class") != "hung-task":
        return None
    line = body.strip()
    if line.startswith(SUPPRESSED):
        last["suppressed"] = True
        return {}
    if m := _TAINT.match(line):
        last.update(tainted=(m["flags"] or "").strip(), kernel=m["release"])
        return {}
    if m := _FRAME.match(line):
        if len(last["trace"]) < MAX_FRAMES and not m["unsure"]:  # '? ': a guess of the unwinder, not a caller
            last["trace"].append(m["fn"])
        if m["mod"] and last["module"] is None and not m["unsure"]:
            last["module"] = m["mod"]
        return {}
    if m := _SCHED.match(line):
        last["state"] = m["state"] or m["old"]
        return {}
    return {} if _OTHER.match(line) else None


def describe(e: dict[str, Any]) -> str:
    if e.get("class") == "hung-task-panic":
        return "kernel panic on hung tasks (hung_task_panic)"
    # the report line's own words: a run's read (no stack) and a pasted log describe it alike
    return f"hung task {e.get('process')}:{e.get('pid')} blocked for more than {e.get('seconds')} s"
