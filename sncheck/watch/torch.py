"""The job-side helper: PyTorch's Flight Recorder on, the rank map, dumps into a directory.

Needs only the standard library and torch (no other sncheck module, no pandas, yaml,
click or paramiko), so a training image can import it as it is::

    import torch.distributed as dist
    from sncheck.watch import torch as watch

    dist.init_process_group("nccl")
    with watch.start("/shared/watch/job42", every=100) as rec:   # before the first collective
        for step in range(steps):
            train_step()
            rec.step()          # a dump every 100 steps

Then, on any node, during or after the job: ``sncheck watch /shared/watch/job42 --once``.

What it does, in one call:

* turns the Flight Recorder on (``TORCH_FR_BUFFER_SIZE``, default 256 entries per rank;
  an existing setting is kept). torch creates the recorder at the first collective, so
  call it before the job's first collective (it runs one itself, to gather the map);
* writes ``ranks.json`` (rank 0): a JSON list of ``{rank, host, local_rank, job}``;
* dumps ``fr-<job>-rank<R>.pkl`` (``torch._C._distributed_c10d._dump_fr_trace`` without
  stack traces: the format of torch's own watchdog dumps; ``fmt="json"``: ``.json``,
  ``_dump_fr_trace_json``, about 3x the cost) every ``every`` steps, on SIGUSR1 (and
  carries on), on SIGTERM (then lets the signal end the process as before) and when the
  ``with`` block ends in an exception (a collective that timed out). A dump replaces the
  rank's previous one atomically, so the directory holds one file per rank, never a
  half-written one.

What a dump costs (tests/bench/bench_watch_overhead.py): torch serialises the recorder
holding the GIL, about 10 us per entry as a pickle without stack traces (50 us as JSON).
The periodic dumps run on a thread of their own (``background=True``), so the training
thread only counts steps; the dump overlaps the training thread's time in torch ops and
collectives, which release the GIL. Dumps on a signal or an exception are taken at once.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, Callable

import torch
import torch.distributed as dist

# Entries per rank. The rules need a window, not the job's history: 8 collectives every
# rank recorded for a straggler, the last one for a hung rank. 256 entries is ~3 ms a dump.
DEFAULT_BUFFER = 256
RANK_MAP = "ranks.json"

# What signal.signal takes and returns (typeshed's own alias, signal._HANDLER, is private).
SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


def _job_id(job: str | None) -> str:
    if job:
        return job
    for var in ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"):
        value = os.environ.get(var)
        if value and value != "none":
            return value
    return secrets.token_hex(4)


def _safe(text: str) -> str:
    """A job id fit for a file name (it is part of every dump's name)."""
    return "".join(c if c.isalnum() or c in "._" else "_" for c in text)[:64] or "job"


class Recorder:
    """One rank's dumps. Made by :func:`start`."""

    def __init__(self, directory: Path, every: int, rank: int, job: str, fmt: str = "pickle",
                 background: bool = True) -> None:
        self.dir, self.every, self.rank, self.job, self.fmt = directory, every, rank, job, fmt
        self.steps = 0
        self.dumps = 0
        self.skipped = 0          # periodic dumps not taken: the previous one was still being written
        self.dump_cpu_s = 0.0     # CPU time the dumps took, on whichever thread they ran
        self.started = time.time()  # when the recorder was made (by start, before the first collective)
        self.path = directory / f"fr-{job}-rank{rank}.{'pkl' if fmt == 'pickle' else 'json'}"
        self._lock = threading.RLock()  # a signal can come while the training thread dumps
        self._previous: dict[int, SignalHandler] = {}
        self._due = threading.Event()
        self._pending = False     # a periodic dump asked for and not yet written
        self._stop = False
        self._thread: threading.Thread | None = None
        if background and every:
            self._thread = threading.Thread(target=self._dumper, name="sncheck-watch-dump", daemon=True)
            self._thread.start()

    def step(self) -> None:
        """Count a step; every ``every`` steps, dump (on the helper's thread, when it has one)."""
        self.steps += 1
        if self.every and self.steps % self.every == 0:
            if self._thread is None:
                self.dump()
            elif self._pending:
                self.skipped += 1
            else:
                self._pending = True
                self._due.set()

    def _dumper(self) -> None:
        while True:
            self._due.wait()
            self._due.clear()
            if self._pending:
                try:
                    self.dump()
                except Exception:  # noqa: BLE001 -- a failed dump (disk full) must never end the job; the next is tried
                    pass
                finally:
                    self._pending = False
            if self._stop:
                return

    def dump(self) -> Path:
        """Write this rank's Flight Recorder now (atomically: a temp file, then a rename)."""
        with self._lock:
            cpu = time.thread_time()
            # torch's stubs leave out the Flight Recorder's dump functions, which the module has
            # (torch >= 2.5): the module is Any here rather than a wrong type.
            c10d: Any = torch._C._distributed_c10d  # noqa: SLF001 -- the Flight Recorder's dump has no public API in torch
            data = (c10d._dump_fr_trace(includeCollectives=True, includeStackTraces=False) if self.fmt == "pickle"  # noqa: SLF001 -- the Flight Recorder's dump has no public API in torch
                    else c10d._dump_fr_trace_json(includeCollectives=True))  # noqa: SLF001 -- the Flight Recorder's dump has no public API in torch
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
            os.replace(tmp, self.path)
            self.dumps += 1
            self.dump_cpu_s += time.thread_time() - cpu
        return self.path

    # -- signals and the with block -------------------------------------------
    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        try:
            self.dump()
        finally:
            if signum != signal.SIGUSR1:  # SIGTERM: end the process as it would have ended
                signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))
                os.kill(os.getpid(), signum)

    def install(self, signals: tuple[int, ...]) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # Python handles signals in the main thread only
        for s in signals:
            self._previous[s] = signal.signal(s, self._on_signal)

    def close(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
        if self._thread is not None:
            self._stop = True
            self._due.set()
            self._thread.join(timeout=60)
            self._thread = None

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None:
                self.dump()  # a collective timed out, a rank failed: what each rank saw
        finally:
            self.close()


def start(directory: str | os.PathLike, every: int = 100, *, job: str | None = None,
          buffer: int = DEFAULT_BUFFER, host: str | None = None, fmt: str = "pickle", background: bool = True,
          signals: tuple[int, ...] = (signal.SIGUSR1, signal.SIGTERM)) -> Recorder:
    """Turn the Flight Recorder on, write the rank map, and dump every ``every`` steps
    (0: only on a signal or an exception) into ``directory``.

    Call it after ``init_process_group`` and before the job's first collective. ``host``
    is this rank's name in the rank map (default: the host name)."""
    if fmt not in ("json", "pickle"):
        raise ValueError(f"fmt must be json or pickle (torch's own dump format), got {fmt!r}")
    if every < 0:
        raise ValueError(f"every must be 0 or more steps, got {every}")
    if not dist.is_initialized():
        raise RuntimeError("sncheck.watch.torch.start: call it after torch.distributed.init_process_group")
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", str(buffer))
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", rank)))
    me = {"rank": rank, "host": host or socket.gethostname(), "local_rank": local_rank,
          "job": _job_id(job) if rank == 0 else None}
    everyone: list = [None] * world
    dist.all_gather_object(everyone, me)
    job_id = _safe(str(everyone[0]["job"]))
    if rank == 0:
        entries = [{**e, "job": job_id} for e in sorted(everyone, key=lambda e: e["rank"])]
        tmp = out / f".{RANK_MAP}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(entries, indent=1) + "\n")
        os.replace(tmp, out / RANK_MAP)
    rec = Recorder(out, every, rank, job_id, fmt, background)
    rec.install(signals)
    return rec
