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
  an existing setting is kept; a dump costs about 50 us of CPU per entry). torch creates the recorder at the first collective, so
  call it before the job's first collective (it runs one itself, to gather the map);
* writes ``ranks.json`` (rank 0): a JSON list of ``{rank, host, local_rank, job}``;
* dumps ``fr-<job>-rank<R>.json`` (``torch._C._distributed_c10d._dump_fr_trace_json``;
  ``fmt="pickle"``: ``.pkl``, ``_dump_fr_trace``, the format of torch's watchdog dumps)
  every ``every`` steps, on SIGUSR1 (and carries on), on SIGTERM (then lets the signal
  end the process as before) and when the ``with`` block ends in an exception (a
  collective that timed out). A dump replaces the rank's previous one atomically, so the
  directory holds one file per rank, never a half-written one.
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

import torch
import torch.distributed as dist

# Entries per rank. A dump costs about 50 us of CPU per entry (JSON; measured on torch
# 2.13, gloo), on the training thread: torch holds the GIL while it serialises, so a
# thread would not hide it. 256 entries is ~13 ms per dump: under 1% of 100 steps of
# 2 ms or more. The rules need a window, not the job's history: 8 collectives every
# rank recorded for a straggler, the last one for a hung rank.
DEFAULT_BUFFER = 256
RANK_MAP = "ranks.json"


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

    def __init__(self, directory: Path, every: int, rank: int, job: str, fmt: str = "json") -> None:
        self.dir, self.every, self.rank, self.job, self.fmt = directory, every, rank, job, fmt
        self.steps = 0
        self.dumps = 0
        self.path = directory / f"fr-{job}-rank{rank}.{'pkl' if fmt == 'pickle' else 'json'}"
        self._lock = threading.Lock()
        self._previous: dict[int, object] = {}

    def step(self) -> None:
        """Count a step; every ``every`` steps, dump."""
        self.steps += 1
        if self.every and self.steps % self.every == 0:
            self.dump()

    def dump(self) -> Path:
        """Write this rank's Flight Recorder now (atomically: a temp file, then a rename)."""
        with self._lock:
            c10d = torch._C._distributed_c10d
            data = c10d._dump_fr_trace() if self.fmt == "pickle" else c10d._dump_fr_trace_json(includeCollectives=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
            os.replace(tmp, self.path)
            self.dumps += 1
        return self.path

    # -- signals and the with block -------------------------------------------
    def _on_signal(self, signum, frame) -> None:
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

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None:
                self.dump()  # a collective timed out, a rank failed: what each rank saw
        finally:
            self.close()


def start(directory: str | os.PathLike, every: int = 100, *, job: str | None = None,
          buffer: int = DEFAULT_BUFFER, host: str | None = None, fmt: str = "json",
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
    rec = Recorder(out, every, rank, job_id, fmt)
    rec.install(signals)
    rec.started = time.time()
    return rec
