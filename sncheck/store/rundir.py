"""The run directory: rows written batch by batch as they arrive, results atomically.

Layout of a run directory::

    results.json                 the envelope (DESIGN.md), replaced atomically
    report.html ...              renderers' outputs
    rows/<kind>/part-NNNNNN.parquet
                                 one Parquet part per batch of one row kind (schema:
                                 sncheck/rows.py SCHEMA); written under a dot-name and
                                 renamed, so a killed run keeps every completed batch

Read a kind back with one pandas call: ``pd.read_parquet("RUN/rows/p2p")``, or every
kind with :func:`read_frames`.

One run per directory: a run holds an exclusive lock (``flock`` on ``.sncheck.lock``)
on its directory while it lasts, and a directory that already holds a run's rows is
refused unless ``--force`` (which starts it empty). Every row carries the run id.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import fcntl
import os
import secrets
import shutil
import threading
import weakref
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from sncheck.store.frames import batch_table, conform, merge_schema, rows_table
from sncheck.store.layout import LOCK_NAME, ROWS_DIR, run_around
from sncheck.store.statedir import MARKS, state_around
from sncheck.store.columncache import ColumnCache
from sncheck.store.parts import Part, PartFrames
from sncheck.store.passes import Passes
from sncheck.errors import ConfigError, HarnessError
from sncheck.model import RunRecord
from sncheck.store.results import write_record
from sncheck.store.files import RunFiles, open_new, real_dir, same_root
from sncheck.rows import Columns
import pyarrow.parquet as pq


@functools.cache
def _memory_pool() -> None:
    """Arrow's allocator: the C library's malloc, with a fixed mmap threshold of
    ``MMAP_THRESHOLD`` (glibc: ``mallopt(M_MMAP_THRESHOLD)``), so that every block above it,
    Arrow's read buffers and numpy's arrays of a fleet's rows alike, is its own mapping,
    handed back to the system when freed. Chosen once, when the first run store is opened
    or the first run directory read, before Arrow allocates, not at import.

    Measured (judging the 131,072-card bench fleet's 50.2 M p2p rows under a 12 GiB
    address-space cap, README "Fleet scale"): jemalloc with decay 0 (the choice before)
    retains every mapping it ever made (its address space grew to the cap while RSS was
    5 GB: out of memory); the system allocator with this threshold finished, its address
    space within 1.3 GB of its RSS. At 16,384 cards its peak RSS is the lowest of the four
    (745 MB; jemalloc 763, glibc's own sliding threshold 835, mimalloc 1,110), and it keeps
    the least after judging (351 MB, jemalloc 569). A C library without ``mallopt`` (not
    glibc) keeps its own policy."""
    pa.set_memory_pool(pa.system_memory_pool())
    _fixed_mmap_threshold(MMAP_THRESHOLD)


MMAP_THRESHOLD = 1 << 20   # bytes: a block this large or larger is its own mapping
_M_MMAP_THRESHOLD = -3     # glibc's malloc.h


def _fixed_mmap_threshold(size: int) -> bool:
    """glibc's mmap threshold fixed at ``size`` (which also stops glibc raising it each time
    a mapped block is freed: its default slides up to 32 MiB, and blocks below that stay
    in its heaps after they are freed). False where the C library has no ``mallopt``."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, size))
    except (OSError, AttributeError):  # no C library to load, or one without mallopt (musl)
        return False


def trim_heap() -> bool:
    """The C heap's free pages handed back to the system (glibc's ``malloc_trim(0)``; False
    where the C library has none). Blocks below ``MMAP_THRESHOLD`` come from the heap and
    stay resident when freed: judging's small objects leave their pages behind it, and the
    reports' arrays (each its own mapping) come on top. Measured at 16,384 cards (README
    "Fleet scale", round 8): 122 MB of the 461 MB held before the reports."""
    try:
        ctypes.CDLL(None).malloc_trim(0)   # (1 if it gave pages back, 0 if none were free)
    except (OSError, AttributeError):  # no C library to load, or one without malloc_trim (musl)
        return False
    return True


FLUSH_AFTER_S = 0.5      # single rows are written within this long of their arrival
FLUSH_ROWS = 20_000      # or as soon as this many are waiting
# Names repeat per row: dictionary pages keep them small; measurements and links are
# (nearly) unique, so trying a dictionary on them only costs time. No statistics.
_PARQUET = {"write_statistics": False}


def _compression(schema: pa.Schema) -> dict[str, str]:
    """Snappy for every column but the floating-point ones: measured values do not compress
    (a 131,072-card p2p part's six float columns came out 0.01% larger), and snappy over them
    was ~9% of a p2p part's write (round 14, mock32)."""
    return {f.name: "none" if pa.types.is_floating(f.type) else "snappy" for f in schema}

RESERVE_NAME = ".sncheck.reserve"  # space set aside so results.json can say "disk full"
# every name a run writes: --force removes each, and a directory holding one without the lock is a user's
# (report.css and ssh.log were left by --force beside a run that wrote none: hostile round 26, H26-08)
RUN_FILES = (ROWS_DIR, "rows.jsonl", "results.json", "crash.log", "report.html", "report.css", "junit.xml",
             "metrics.prom", "sncheck.prom", "evidence", "ssh.log")
# (.sncheck.reserve is left by a killed run; a new run truncates it)
# errnos that mean the disk or quota is full: the harness could not run (exit 3)
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def default_out_dir(run_id: str) -> Path:
    return Path("runs") / run_id


class RunStore:
    """The rows of one run, as columns: one table per row kind.

    Backends send rows through the store as a sink: ``store.emit_batch(kind, columns)``
    (or ``store.batch``) writes a batch at once; ``store.emit(row)`` takes one row and
    gathers rows into a batch written within ``FLUSH_AFTER_S``. Every batch is written to
    ``rows/<kind>/`` as a Parquet part and let go: nothing holds a run's rows (a fleet's
    are millions of pairs). Readers get the columns they ask for, read back from the
    parts, from :meth:`frames` (:class:`~sncheck.store.parts.PartFrames`) and :meth:`frame`.
    A batch the disk could not take (a full disk) is kept in memory, never lost.

    Opening takes the directory's lock: a second run on the same ``--out`` is refused
    (exit 2), as is a directory that holds an earlier run's rows unless ``force``.
    """

    def __init__(self, out_dir: Path, run_id: str | None = None, force: bool = False) -> None:
        _memory_pool()
        self.dir = Path(out_dir)
        self.rows_dir = self.dir / ROWS_DIR
        self.run_id = run_id or new_run_id()
        self._rows_error: str | None = None  # why rows stopped being written (a full disk)
        self._lock_directory(force)
        st = os.stat(self.dir)
        self._identity = (st.st_dev, st.st_ino)  # every write checks the directory is still this one
        self.files = RunFiles(self.dir, self._identity)  # every other file of the run (evidence) goes through it
        # Each kind's parts as written (path, rows, the layers and retests they hold), and
        # the batches a full disk could not take (kept in memory: never lost).
        self._written: dict[str, list[Part]] = defaultdict(list)
        self._unwritten: dict[str, list[pa.Table]] = defaultdict(list)
        self._schemas: dict[str, pa.Schema] = {}
        # what readers derive from the rows, once per run (PartFrames.memo): dropped with the run
        self.memos: dict = {}
        # what one pass over a kind's rows built for a reader yet to ask (evidence's pass, the
        # reports' builders): kept past close, for the reports, and let go on release
        self.passes = Passes()
        # the columns readers decoded from the parts, for the next reader (up to its budget)
        self.column_cache = ColumnCache()
        self._parts: dict[str, int] = defaultdict(int)
        self._pending: dict[str, list[dict]] = defaultdict(list)
        self._pending_rows = 0
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def _lock_directory(self, force: bool) -> None:
        if self.dir.is_symlink():  # mkdir, the lock, the reserve and --force's removals would all go through it
            raise ConfigError("is a symlink; sncheck never writes through a link (give the directory itself)",
                              str(self.dir))
        if (outer := run_around(self.dir)) is not None:
            # its results.json, rows/ and reports among that run's measurements (hostile round 18, H18-22)
            raise ConfigError(f"is inside the run directory {outer}: a run's directory holds one run; give each "
                              "run its own --out beside it", str(self.dir))
        if (store := state_around(self.dir)) is not None:
            raise ConfigError(f"is inside the state directory {store}: a run's files and the store's are kept apart; "
                              "give the run its own --out beside it", str(self.dir))
        if any(os.path.lexists(self.dir / mark) for mark in MARKS):
            # results.json, rows/ and reports among the fleet's isolation store, --force's removals in it
            # (hostile round 23, H23-12; a state directory holding a run was already refused)
            raise ConfigError("is a state directory (it holds state.db or the isolation lock): a run's files and "
                              "the store's are kept apart; give the run its own --out", str(self.dir))
        # a directory held a run of sncheck's only where its lock was left: what a run writes there
        # (RUN_FILES) is then that run's, else a user's (review18 #4: a user's evidence/ was taken for a
        # run's and --force removed it, with everything under it)
        if not os.path.lexists(self.dir / LOCK_NAME) and (foreign := [n for n in RUN_FILES if os.path.lexists(self.dir / n)]):
            raise ConfigError(f"holds {', '.join(foreign)} but no run of sncheck's (no {LOCK_NAME}): a run would "
                              "write over them, and --force would remove them; give a new or empty --out",
                              str(self.dir))
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: a link planted at .sncheck.lock must not create a file elsewhere.
            self._lock_fd = os.open(self.dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ConfigError(f"{LOCK_NAME} is a symlink; sncheck never writes through a link",
                                  str(self.dir)) from e
            raise ConfigError(f"cannot use it as the run directory: {e.strerror or e}", str(self.dir)) from e
        self._release = weakref.finalize(self, os.close, self._lock_fd)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            self.release()
            raise ConfigError("another sncheck run is using this run directory; give each run its own --out",
                              str(self.dir)) from e
        try:
            held = [n for n in RUN_FILES if os.path.lexists(self.dir / n)]
            if held and not force:
                raise ConfigError(f"already holds a run ({', '.join(held)}); use a new --out, "
                                  f"or --force to start it empty", str(self.dir))
            for n in held:
                path = self.dir / n
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            self._reserve = _reserve_space(self.dir / RESERVE_NAME)
        except OSError as e:
            self.release()
            raise ConfigError(f"cannot use it as the run directory: {e.strerror or e}", str(self.dir)) from e
        except BaseException:
            self.release()
            raise

    @property
    def write_error(self) -> str | None:
        """Why the run's files stopped being written (a full disk): rows or evidence."""
        return self._rows_error or (self.files.error if hasattr(self, "files") else None)

    def release(self) -> None:
        """Give up the directory's lock (the run's files are all written); what a pass
        built for a reader that never asked is let go."""
        if hasattr(self, "passes"):   # (unset when the directory was never opened)
            self.passes.clear()
        reserve = getattr(self, "_reserve", None)  # unset when the directory was never opened
        if reserve is not None:
            reserve.unlink(missing_ok=True)
            self._reserve = None
        self._release()

    # -- the sink --------------------------------------------------------------------
    def __call__(self, row: dict) -> None:
        self.emit(row)

    def emit(self, row: dict) -> None:
        """One row, gathered with the rows after it into one batch (a thin adapter)."""
        with self._lock:
            self._pending[row.get("kind") or "unknown"].append(row)
            self._pending_rows += 1
            if self._pending_rows >= FLUSH_ROWS:
                self._flush_pending()
            elif self._timer is None and not self._closed:
                self._timer = threading.Timer(FLUSH_AFTER_S, self._timed_flush)
                self._timer.daemon = True
                self._timer.start()

    def emit_rows(self, rows: list[dict]) -> None:
        """Row dicts that form one batch (of any kinds)."""
        with self._lock:
            for row in rows:
                self._pending[row.get("kind") or "unknown"].append(row)
            self._pending_rows += len(rows)
            self._flush_pending()

    def emit_batch(self, kind: str, columns: Columns, **constants: Any) -> None:
        """A batch of ``kind`` rows as columns; scalars (and ``constants``) are broadcast."""
        table = batch_table(kind, columns, **constants)
        with self._lock:
            self._flush_pending(kind)  # rows of a kind stay in the order they came
            self._append(kind, table)

    batch = emit_batch

    def tagged(self, **constants: Any) -> "TaggedSink":
        """A sink that sets ``constants`` on every row (a retest's ``layer``, ``confirms``)."""
        return TaggedSink(self, constants)

    def flush(self) -> None:
        """Write the gathered single rows now."""
        with self._lock:
            self._flush_pending()

    def _timed_flush(self) -> None:
        try:
            self.flush()
        except HarnessError:
            pass  # a full disk: write_error says so; the run ends with it (exit 3)

    def _flush_pending(self, only: str | None = None) -> None:
        if self._timer is not None and only is None:
            self._timer.cancel()
            self._timer = None
        for kind in [only] if only else list(self._pending):
            rows = self._pending.pop(kind, None)
            if rows:
                self._pending_rows -= len(rows)
                self._append(kind, rows_table(kind, rows))

    def _append(self, kind: str, table: pa.Table) -> None:
        table = table.set_column(table.schema.get_field_index("run_id"), "run_id",
                                 pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(table), np.int32)),
                                                                pa.array([self.run_id])))
        schema = merge_schema(self._schemas.get(kind), table)
        self._schemas[kind] = schema
        table = conform(table, schema)
        if self.write_error is not None:
            self._unwritten[kind].append(table)  # a full disk: kept in memory
            return
        try:
            self._write_part(kind, table)
        except HarnessError:
            self._unwritten[kind].append(table)
            raise

    def _write_part(self, kind: str, table: pa.Table) -> None:
        folder = self.rows_dir / kind
        self._parts[kind] += 1
        name = f"part-{self._parts[kind]:06d}.parquet"
        tmp = folder / f".{name}.tmp"  # readers skip dot-names: a cut write is never read

        try:
            self.check_dir()
            real_dir(self.dir, Path(ROWS_DIR) / kind)
            names = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
            with os.fdopen(open_new(tmp), "wb") as fh:
                pq.write_table(table, fh, use_dictionary=names, compression=_compression(table.schema), **_PARQUET)
            tmp.replace(folder / name)
            self._written[kind].append(Part.of_table(folder / name, table, self.column_cache, self._written[kind]))
        except OSError as e:
            tmp.unlink(missing_ok=True)
            if e.errno not in _FULL:
                self.check_dir()  # swapped after the check above (a link put in its place): say so
                raise
            self._rows_error = f"writing {folder / name}: {e.strerror or e}"
            raise HarnessError(f"run directory: {self.write_error}") from e

    # -- reading -----------------------------------------------------------------------
    def frames(self, layer: str | None = None, **equal: Any) -> PartFrames:
        """The run's rows so far (optionally only those of ``layer``, and whose columns
        equal the other values given), as :class:`~sncheck.store.parts.PartFrames`: each
        kind read from its parts when first asked for, only the columns asked for, and
        only the parts that may hold the selection (a retest reads its own rows, never the
        whole run's). The store itself holds no rows."""
        if layer is not None:
            equal = {"layer": layer, **equal}
        with self._lock:
            self._flush_pending()
            return PartFrames(self._written, self._unwritten, self._schemas, equal, self.memos, self.passes)

    def frame(self, kind: str, layer: str | None = None, columns: Sequence[str] | None = None,
              **equal: Any) -> pd.DataFrame:
        """The rows of one kind as a pandas frame (see :meth:`frames`)."""
        return self.frames(layer, **equal).kind(kind, columns)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return PartFrames(self._written, self._unwritten).counts()

    def check_dir(self) -> None:
        """HarnessError unless the run directory is still the one opened (:func:`same_root`)."""
        same_root(self.dir, self._identity)

    def write_results(self, record: RunRecord) -> Path:
        path = self.dir / "results.json"
        self.check_dir()
        if self.write_error and self._reserve:  # the disk filled up: spend the reserve on the results
            self._reserve.unlink(missing_ok=True)
            self._reserve = None
        try:
            write_record(path, record)
        except OSError as e:
            if e.errno in _FULL:
                raise HarnessError(f"run directory: cannot write {path}: {e.strerror}") from e
            raise
        return path

    def let_go(self) -> None:
        """What readers derived from the rows for judging (``memos``: the fabric counters, a
        frame of every NVLink counter) dropped, and the C heap's free pages given back to the
        system (:func:`trim_heap`): a later reader builds its own. Before evidence, whose pass
        over the pairs builds what the reports read (:mod:`sncheck.store.passes`), and again
        at :meth:`close`, before the reports."""
        with self._lock:
            self.memos.clear()
            trim_heap()

    def close(self) -> None:
        """Every row written (or kept, on a full disk), then :meth:`let_go`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._flush_pending()
            except HarnessError:
                pass  # the disk is full: write_error says so, and the rows stay in memory
            finally:
                self.let_go()


def _reserve_space(path: Path) -> Path | None:
    """Set aside up to 1 MiB next to the rows; freed to write results.json after a full disk."""
    for size in (1 << 20, 64 << 10):
        try:
            fd = open_new(path)  # a link planted there is removed, never truncated through
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


class TaggedSink:
    """A view of a sink that sets some fields on every row it passes on."""

    def __init__(self, inner, constants: dict) -> None:
        self._inner, self._constants = inner, constants

    def __call__(self, row: dict) -> None:
        self._inner({**row, **self._constants})

    def emit_rows(self, rows: list[dict]) -> None:
        self._inner.emit_rows([{**r, **self._constants} for r in rows])

    def batch(self, kind: str, columns: Columns, **constants: Any) -> None:
        self._inner.batch(kind, columns, **{**constants, **self._constants})

    def tagged(self, **constants: Any) -> "TaggedSink":
        return TaggedSink(self._inner, {**self._constants, **constants})

    def flush(self) -> None:
        self._inner.flush()


def read_frames(run_dir: Path) -> PartFrames:
    """Every row kind of a run directory (what a killed run kept, too), read per kind when
    asked for (:class:`~sncheck.store.parts.PartFrames`); every part's footer is read here:
    one that cannot be is a ConfigError naming it."""
    _memory_pool()
    base = Path(run_dir) / ROWS_DIR
    parts: dict[str, list[Part]] = {}
    if base.is_dir():
        for folder in sorted([base, *base.iterdir()]):
            if folder.is_symlink():  # rows read through a link would be another directory's
                raise ConfigError("a link, not a folder of the run's rows: refusing to read through it", str(folder))
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            parts[folder.name] = [Part.on_disk(f) for f in sorted(folder.glob("part-*.parquet"))]
    return PartFrames(parts)


def read_rows(run_dir: Path) -> list[dict]:
    """Every row of a run directory as dicts (small runs, tests and exports)."""
    frames = read_frames(run_dir)
    out = []
    for kind in frames.kinds:
        f = frames.kind(kind).astype(object)
        out.extend(f.where(f.notna(), None).to_dict("records"))
    return out


def refuse_running(path: Path) -> None:
    """A run directory whose run still holds its lock (``.sncheck.lock``, flock) is refused
    (ConfigError naming it): its rows are still being written and nothing in them is judged yet,
    so ``baseline make`` read it as a run killed before its results.json and made a norm of it."""
    try:
        fd = os.open(Path(path) / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # no lock file (a run of another layout), or one the reader's own checks refuse
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigError("a run is still writing this run directory (it holds its lock): wait for it to finish",
                          str(path)) from None
    finally:
        os.close(fd)


MEASURED = ("bw_GBps", "bw_rev_GBps", "lat_us")  # the p2p values a norm or a tier's figure is made of


def refuse_impossible(p2p: pd.DataFrame, run: Path, use: str) -> None:
    """A measured (``ok``) p2p value no measurement gives (infinite, zero or below) is refused
    (ConfigError naming the run, the column and the first such row), never left out: an ``inf``
    on every pair of a tier dropped that tier from ``baseline make`` without a word, and ``plan
    --measured`` took the tier at inf GB/s. A missing value (NaN: a direction not measured) is no
    value and stays out, as before. ``use``: what the run was being read for."""
    if p2p.empty or "status" not in p2p:
        return
    ok = (p2p["status"] == "ok").to_numpy(bool)
    for col in MEASURED:
        if col not in p2p:
            continue
        v = pd.to_numeric(p2p[col], errors="coerce").to_numpy(float)
        bad = ok & ~np.isnan(v) & (~np.isfinite(v) | (v <= 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = p2p.iloc[i]
            pair = f"{row['src']}<->{row['dst']}, " if "src" in p2p and "dst" in p2p else ""
            raise ConfigError(f"{int(bad.sum())} measured p2p row(s) hold a {col} no measurement gives (first: "
                              f"{v[i]:g}, {pair}tier {row.get('tier')}); a run records finite values above 0: not "
                              f"{use}", str(run))
