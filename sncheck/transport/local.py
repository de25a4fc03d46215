"""One command on this machine, bounded as a remote one is (:meth:`Connection.run`).

``subprocess.run(capture_output=True)`` holds every byte a command prints until it ends:
a tool printing without end (``nvidia-smi -q`` in a loop, a wrapper's ``yes``) under
``node-check``'s 10 s tool timeout held gigabytes, and its parse overran the node's whole
budget, blamed on the next tool (hostile round 17). Here, as over SSH, past ``max_output``
bytes of stdout and stderr together the command is killed (its whole process group: a
shell's pipeline too) and its :class:`Result` says ``cut_at``; past ``timeout`` likewise,
``timed_out``. What it printed up to there is kept.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence

from sncheck.transport.command import build_command
from sncheck.transport.result import MAX_OUTPUT_BYTES, Result

_CHUNK = 1 << 16
_REAP_S = 5.0  # after a kill: how long to wait for the process to go


def run_local(argv: Sequence[str], timeout: float, max_output: int | None = MAX_OUTPUT_BYTES,
              host: str = "localhost") -> Result:
    """``argv`` run here (no shell, stdin closed), its output bounded by ``max_output``
    bytes (None: unbounded) and its time by ``timeout`` seconds. A missing program is
    exit 127 with "command not found", as a shell says."""
    command = build_command(argv)  # for messages; also refuses str argv and NUL bytes
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        return Result(host, command, "", f"{argv[0]}: command not found", 127, time.monotonic() - start)
    out, err, cut, timed_out = _collect(proc, start + timeout, max_output)
    if cut or timed_out:
        _kill(proc)
    else:
        try:
            proc.wait(max(0.0, start + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:  # its pipes closed, the process still there
            timed_out = True
            _kill(proc)
    code = None if cut or timed_out else proc.returncode
    return Result(host, command, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code,
                  time.monotonic() - start, timed_out=timed_out, cut_at=max_output if cut else None)


def _collect(proc: subprocess.Popen, deadline: float, limit: int | None) -> tuple[bytes, bytes, bool, bool]:
    """(stdout, stderr, cut, timed out): both pipes read until they close, the deadline
    passes, or they carried more than ``limit`` bytes together (what is past it dropped)."""
    assert proc.stdout is not None and proc.stderr is not None  # both piped
    out, err = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out: bytearray(), err: bytearray()}
    total = 0
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(bufs[out]), bytes(bufs[err]), False, True
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                room = len(chunk) if limit is None else limit - total
                bufs[key.fd] += chunk[:room]
                total += min(len(chunk), room)
                if len(chunk) > room:
                    return bytes(bufs[out]), bytes(bufs[err]), True, False
    return bytes(bufs[out]), bytes(bufs[err]), False, False


def _kill(proc: subprocess.Popen) -> None:
    """The command and whatever it started in its session, killed and reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()
    try:
        proc.wait(_REAP_S)
    except subprocess.TimeoutExpired:
        pass
