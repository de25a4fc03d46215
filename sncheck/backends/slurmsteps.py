"""Many srun steps at once, gathered as they run (the Slurm backend's campaign, issue 31).

:class:`StepRunner` starts the steps it is given in order, at most ``parallel`` at once,
and never two that hold a card (or a host) in common: a supernode's step and the rail
steps over its cards take turns, supernodes run side by side. While they run it passes
on each step's new rows (the rows file rank 0 appends to, on the shared directory) and,
when a step ends, hands its end (exit code, srun's stderr, whether it ran past its
timeout) to the step's own ``on_end``. Everything is called from the caller's thread:
``emit`` needs no lock.

A step whose rank 0 could not bind the rendezvous port it was given (``port_taken``: the port
was free when the launcher chose it, and any socket on rank 0's node can take it in the
seconds before rank 0 binds it) and that passed no row is started again, with a fresh
``env`` (so a fresh port), up to ``PORT_ATTEMPTS`` times in all, as the local and SSH
backends do; only steps that set ``rendezvous`` are.

A step past its timeout is interrupted twice (srun then cancels the step in Slurm) and
killed 15 s later if srun is still there; an exception (Ctrl-C) stops every running step
the same way before it goes on up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sncheck.backends.processes import RowTail, port_taken

POLL_S = 0.2
INTERRUPT_GAP_S = 0.3   # srun cancels its step on a second SIGINT within one second
KILL_AFTER_S = 15.0     # then SIGKILL, if srun is still there
STDERR_CHARS = 20000
PORT_ATTEMPTS = 3       # starts of a step whose rendezvous port was taken


@dataclass(frozen=True)
class Ended:
    """How a step ended: srun's exit code, its stderr (the tail), whether it ran past its timeout."""

    rc: int | None
    stderr: str
    timed_out: bool
    started: float   # wall clock (time.time) when srun started, for records
    ended: float

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    @property
    def seconds(self) -> float:
        return self.ended - self.started


@dataclass
class Step:
    """One srun: its argv, what it holds, its timeout and what to do with its rows and its end.

    ``env`` is made when the step starts (a rendezvous port free then); ``rows`` is the
    file rank 0 appends to, read while the step runs and once more at its end."""

    name: str
    argv: list[str]
    holds: frozenset[str]
    timeout_s: float
    workdir: Path
    on_end: Callable[[Ended], None]
    env: Callable[[], dict[str, str]] = dict
    rows: Path | None = None
    on_rows: Callable[[list], None] | None = None
    rendezvous: bool = False  # its rank 0 binds a port from env(): started again when that port was taken
    # while running
    proc: subprocess.Popen | None = field(default=None, repr=False)
    tail: RowTail | None = field(default=None, repr=False)
    started: float = 0.0
    deadline: float = 0.0
    interrupts: int = 0
    timed_out: bool = False
    attempts: int = 0
    passed: int = 0  # row lines passed on by this start

    @property
    def stderr_path(self) -> Path:
        return self.workdir / "srun.err"


class StepRunner:
    """Runs steps, ``parallel`` at most at once (see the module docstring)."""

    def __init__(self, parallel: int, progress: Callable[[str], None] = lambda _: None,
                 poll_s: float = POLL_S) -> None:
        if parallel < 1:
            raise ValueError(f"parallel steps must be at least 1, got {parallel}")
        self.parallel, self.progress, self.poll_s = parallel, progress, poll_s
        self.records: list[dict] = []  # one per finished step: name, argv, start, end, rc

    def run(self, steps: Sequence[Step]) -> None:
        pending = list(steps)
        running: list[Step] = []
        try:
            while pending or running:
                for step in self._startable(pending, running):
                    pending.remove(step)
                    self._start(step)
                    running.append(step)
                time.sleep(self.poll_s)
                for step in list(running):
                    self._pass_rows(step)
                    if step.proc is not None and step.proc.poll() is not None:
                        running.remove(step)
                        if self._finish(step):
                            pending.insert(0, step)
                    else:
                        self._watch_timeout(step)
        except BaseException:
            for step in running:
                _stop(step)
            raise

    def _startable(self, pending: list[Step], running: list[Step]) -> list[Step]:
        """Pending steps that may start now, in order: a free slot, and no card held by a
        running step or wanted by an earlier step still waiting (so order is kept among
        steps that share cards, and a later step never overtakes one it would block)."""
        held = set().union(*(s.holds for s in running)) if running else set()
        free = self.parallel - len(running)
        out = []
        for step in pending:
            if free <= 0:
                break
            if not step.holds & held:
                out.append(step)
                free -= 1
            held |= step.holds
        return out

    def _start(self, step: Step) -> None:
        step.workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **step.env()}
        with open(step.stderr_path, "wb") as err, open(step.workdir / "srun.out", "wb") as out:
            step.proc = subprocess.Popen(step.argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         start_new_session=True)
        step.started, step.deadline = time.time(), time.monotonic() + step.timeout_s
        step.attempts, step.passed, step.interrupts, step.timed_out = step.attempts + 1, 0, 0, False
        step.tail = RowTail(step.rows) if step.rows is not None else None
        self.progress(f"{step.name}: step started")

    def _pass_rows(self, step: Step) -> None:
        if step.tail is not None and step.on_rows is not None:
            items = step.tail.lines()
            if items:
                step.passed += len(items)
                step.on_rows(items)

    def _watch_timeout(self, step: Step) -> None:
        now = time.monotonic()
        if now < step.deadline or step.proc is None:
            return
        step.timed_out = True
        if step.interrupts < 2 and now >= step.deadline + step.interrupts * INTERRUPT_GAP_S:
            _signal(step.proc, signal.SIGINT, group=False)
            step.interrupts += 1
        elif now >= step.deadline + KILL_AFTER_S:
            _signal(step.proc, signal.SIGKILL, group=True)

    def _finish(self, step: Step) -> bool:
        """Pass on the step's last rows and hand its end to ``on_end``; True (and no
        ``on_end``) when it is to be started again: its rendezvous port was taken."""
        assert step.proc is not None
        if step.tail is not None and step.on_rows is not None:
            # a line cut by the end of the step is still passed on (as not JSON: never dropped)
            items = step.tail.lines() + step.tail.split.feed(b"\n")
            if items:
                step.passed += len(items)
                step.on_rows(items)
        try:
            with open(step.stderr_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - STDERR_CHARS))
                stderr = f.read().decode("utf-8", "replace")
        except OSError:
            stderr = ""
        end = Ended(step.proc.returncode, stderr, step.timed_out, step.started, time.time())
        again = (step.rendezvous and not end.ok and not end.timed_out and step.passed == 0
                 and step.attempts < PORT_ATTEMPTS and port_taken(stderr))
        self.records.append({"step": step.name, "start": end.started, "end": end.ended, "rc": end.rc,
                             "timed_out": end.timed_out, **({"again": "rendezvous port taken"} if again else {})})
        if again:
            self.progress(f"{step.name}: its rendezvous port was taken before rank 0 bound it; starting it again")
            return True
        self.progress(f"{step.name}: step " + (f"ran past its {step.timeout_s:g} s and was stopped" if end.timed_out
                                               else f"ended in {end.seconds:.1f} s (exit {end.rc})"))
        step.on_end(end)
        return False


def _signal(proc: subprocess.Popen, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass


def _stop(step: Step) -> None:
    """Interrupt twice (srun cancels the step), then kill what is left of it."""
    proc = step.proc
    if proc is None or proc.poll() is not None:
        return
    for _ in range(2):
        _signal(proc, signal.SIGINT, group=False)
        time.sleep(INTERRUPT_GAP_S)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL, group=True)
        proc.wait()
