"""Worker processes die with their launcher: nothing of sncheck outlives sncheck.

``die_with_parent`` asks Linux to send SIGKILL when the parent process dies
(``prctl(PR_SET_PDEATHSIG)``, through ctypes: no dependency), and then checks that the
parent did not die before that took effect. Elsewhere it does nothing, and the fork
server's pipe watchdog (end of its stdin) is the only lifeline.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
from pathlib import Path
import json

PR_SET_PDEATHSIG = 1
WORKDIR_PREFIX = "sncheck-local-"


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> bool:
    """Have ``sig`` delivered when the parent dies; exit now if it already has."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        ok = libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        ok = False
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)
    return ok


def remove_workdirs(job_paths: set[str]) -> None:
    """Remove the local backend's temp directories of these jobs (after its death).

    A job file lives at ``<tmp>/sncheck-local-<layer>-XXXX/try<N>/job.json``; only
    directories with that prefix are touched.
    """
    for job in job_paths:
        for d in Path(job).parents:
            if d.name.startswith(WORKDIR_PREFIX):
                shutil.rmtree(d, ignore_errors=True)
                break


def pending_jobs(fd: int, pending: bytes = b"") -> set[str]:
    """Job files named by requests still unread in the pipe (the writer is gone)."""

    data = pending
    try:
        os.set_blocking(fd, False)
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    except OSError:
        pass
    out = set()
    for line in data.split(b"\n"):
        try:
            out.add(str(json.loads(line)["job"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def serve() -> None:
    """The fork server's entry point: the lifeline is in place *before* torch imports.

    Importing torch takes seconds (minutes on a loaded machine); if the launcher dies
    meanwhile, SIGTERM arrives, and the requests already in the pipe name the temp
    directories to remove.
    """
    launcher = os.getppid()
    stdin = sys.stdin.fileno()

    def died_while_starting(_signum: int, _frame: object) -> None:
        remove_workdirs(pending_jobs(stdin))
        os._exit(0)

    signal.signal(signal.SIGTERM, died_while_starting)
    die_with_parent(launcher, signal.SIGTERM)
    from sncheck.worker.torchdist import serve_forks  # noqa: PLC0415 -- torch: worker.torchdist imports it; this module starts without it

    serve_forks(launcher)


if __name__ == "__main__":
    if sys.argv[1:] != ["--serve"]:
        sys.exit("usage: python -m sncheck.worker.lifeline --serve")
    serve()
