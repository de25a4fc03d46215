"""The run directory: rows appended as they arrive, results written atomically.

One run per directory: a run holds an exclusive lock (``flock`` on ``.sncheck.lock``)
on its directory while it lasts, and a directory that already holds a run's rows is
refused unless ``--force`` (which starts it empty). Every row carries the run id.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import secrets
import weakref
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .errors import ConfigError, HarnessError
from .report.json_out import write_json

LOCK_NAME = ".sncheck.lock"
RESERVE_NAME = ".sncheck.reserve"  # space set aside so results.json can say "disk full"
RUN_FILES = ("rows.jsonl", "results.json", "crash.log", "report.html", "junit.xml", "metrics.prom")
# (.sncheck.reserve is left by a killed run; a new run truncates it)
# errnos that mean the disk or quota is full: the harness could not run (exit 3)
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def default_out_dir(run_id: str) -> Path:
    return Path("runs") / run_id


class RunStore:
    """``rows.jsonl`` gets every measurement as it arrives and is flushed per row, so a
    killed run keeps what it measured; ``results.json`` is replaced atomically.

    Opening takes the directory's lock: a second run on the same ``--out`` is refused
    (exit 2), as is a directory that holds an earlier run's rows unless ``force``.
    """

    def __init__(self, out_dir: Path, run_id: str | None = None, force: bool = False) -> None:
        self.dir = Path(out_dir)
        self.run_id = run_id or new_run_id()
        self.rows_path = self.dir / "rows.jsonl"
        self.rows: list[dict] = []
        self.write_error: str | None = None  # why rows stopped being written (a full disk)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConfigError(f"cannot use it as the run directory: {e.strerror or e}", str(self.dir)) from e
        self._release = weakref.finalize(self, os.close, self._lock_fd)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            self.release()
            raise ConfigError("another sncheck run is using this run directory; give each run its own --out",
                              str(self.dir)) from e
        try:
            held = [n for n in RUN_FILES if (self.dir / n).exists()]
            if held and not force:
                raise ConfigError(f"already holds a run ({', '.join(held)}); use a new --out, "
                                  f"or --force to start it empty", str(self.dir))
            for n in held:
                (self.dir / n).unlink()
            self._fd = os.open(self.rows_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._reserve = _reserve_space(self.dir / RESERVE_NAME)
        except OSError as e:
            self.release()
            raise ConfigError(f"cannot use it as the run directory: {e.strerror or e}", str(self.dir)) from e
        except BaseException:
            self.release()
            raise
        self._closed = False

    def emit(self, row: dict) -> None:
        # Rows are flat: clean only the top level (nested values are written as they are).
        flat = {"run_id": self.run_id,
                **{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}}
        data = (json.dumps(flat, default=str) + "\n").encode("utf-8")
        if self.write_error is None:
            try:
                _write_all(self._fd, data)
            except OSError as e:
                self.write_error = f"writing {self.rows_path}: {e.strerror or e}"
                self.rows.append(row)
                raise HarnessError(f"run directory: {self.write_error}") from e
        self.rows.append(row)

    def release(self) -> None:
        """Give up the directory's lock (the run's files are all written)."""
        if getattr(self, "_reserve", None):
            self._reserve.unlink(missing_ok=True)
            self._reserve = None
        self._release()

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def write_results(self, results: dict) -> Path:
        path = self.dir / "results.json"
        if self.write_error and self._reserve:  # the disk filled up: spend the reserve on the results
            self._reserve.unlink(missing_ok=True)
            self._reserve = None
        try:
            write_json(path, results)
        except OSError as e:
            if e.errno in _FULL:
                raise HarnessError(f"run directory: cannot write {path}: {e.strerror}") from e
            raise
        return path

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)


def _reserve_space(path: Path) -> Path | None:
    """Set aside up to 1 MiB next to the rows; freed to write results.json after a full disk."""
    for size in (1 << 20, 64 << 10):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.posix_fallocate(fd, 0, size)
            finally:
                os.close(fd)
            return path
        except (OSError, AttributeError):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                return None
    return None


def _write_all(fd: int, data: bytes) -> None:
    """Append ``data`` whole, or not at all: a short write (a full disk) is cut back."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError:
        try:
            os.ftruncate(fd, start)  # no half row left behind
        except OSError:
            pass
        raise


def read_rows(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "rows.jsonl"
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # the last line of a killed run may be cut
    return out
