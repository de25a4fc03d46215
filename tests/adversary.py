"""Generators of hostile inputs, one per class of issue 30 (used by the hostile tests).

* :func:`special_files`: every kind of path that is not a regular file (FIFO, socket,
  character device, symlinks to each, a dangling link), made in a scratch directory.
* :func:`non_finite_numbers`: numbers a JSON or pickle dump can carry that no clock or
  counter can hold (NaN, +-Infinity, 2**70, -2**64, 1e308 * 10, ...), as Python values and as
  JSON text.
* :func:`deep_pickle` / :func:`shared_reference_pickle` / :func:`self_referencing_pickle`:
  structures that cost far more to build than their size (depth, fan-out of one memo
  entry, cycles).
* :func:`junk_texts`: one character, one long line, many short lines, of a given size.
* :func:`seeded_delays`: seeded, bounded schedules for concurrent commands and signals.
* :func:`start_command` with ``signal_at=(n, SIG)``: a command that signals itself just
  before its n-th step (:data:`STEP_CALLS`: every call by which it changes a file, the
  store or the cluster), so a test can stop it at each step in turn, not only between
  the tools it runs; the steps it took are listed in ``out``.steps.
"""

from __future__ import annotations

import os
import pickle
import random
import socket
import stat
import struct
import sys
from contextlib import contextmanager
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def special_files(root: Path, *, devices: bool = True) -> Iterator[tuple[str, Path]]:
    """(label, path) of each non-regular file kind, made under ``root``.

    A character device is made with ``mknod`` (a copy of /dev/null's numbers, inside
    ``root``, so a writer that replaces it harms nothing) when this process may; else
    it is left out. Sockets are bound and left bound (closed by the caller's exit)."""
    root.mkdir(parents=True, exist_ok=True)
    fifo = root / "fifo"
    os.mkfifo(fifo)
    yield "FIFO", fifo
    sock_path = root / "sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(sock_path))
    _KEEP.append(s)
    yield "socket", sock_path
    dev = root / "chardev"
    if devices:
        try:
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except (PermissionError, OSError):
            pass
        else:
            yield "character device", dev
            link_dev = root / "link-to-chardev"
            link_dev.symlink_to(dev)
            yield "symlink to a character device", link_dev
    link = root / "link-to-fifo"
    link.symlink_to(fifo)
    yield "symlink to a FIFO", link
    link_sock = root / "link-to-socket"
    link_sock.symlink_to(sock_path)
    yield "symlink to a socket", link_sock


_KEEP: list[socket.socket] = []


@contextmanager
def planted(special: Path, target: Path) -> Iterator[int]:
    """Put a special file of :func:`special_files` at ``target`` for the block (a link: a new
    link to the same file; else the FIFO, socket or device itself, moved there and back, as
    the links point at it). Yields its mode, for a test that it is left as it was."""
    if special.is_symlink():
        target.symlink_to(special.resolve())
    else:
        os.rename(special, target)
    try:
        yield mode_of(target)
    finally:
        if special.is_symlink():
            target.unlink()
        else:
            os.rename(target, special)


def mode_of(path: Path) -> int:
    return os.lstat(path).st_mode


# Numbers a dump can carry that no clock or counter can hold, as JSON text: not finite,
# beyond 64 bits, negative where a time or count is, not a number at all, too long to read.
NON_FINITE_JSON = ["NaN", "Infinity", "-Infinity", str(2**70), str(-(2**64)), "1e999", "-1e999", "-5",
                   "1.5e300", "true", "1" + "0" * 5000]


def non_finite_numbers(fields: tuple[str, ...], every: int = 1) -> list[tuple[str, str]]:
    """(field, JSON text) pairs: every value of :data:`NON_FINITE_JSON` for the first field,
    each ``every``-th for the others (a cheap matrix that still reaches each field)."""
    out = [(fields[0], v) for v in NON_FINITE_JSON]
    for f in fields[1:]:
        out += [(f, v) for v in NON_FINITE_JSON[::every]]
    return out


def deep_pickle(depth: int) -> bytes:
    """A list nested ``depth`` deep, written by hand (pickle.dumps would recurse): each
    level is EMPTY_LIST MARK ... APPENDS, all opened before any is closed."""
    out = [b"\x80\x02"]
    out += [b"]("] * depth  # EMPTY_LIST, MARK
    out += [b"e"] * depth  # APPENDS: each appends the inner list to its parent
    out.append(b".")
    return b"".join(out)


def shared_reference_pickle(refs: int, payload: int = 1000) -> bytes:
    """A list that references one memoised ``payload``-long list ``refs`` times: small on
    disk (one BINGET a reference), huge once a reader copies or walks each reference."""
    out = [b"\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01X\x03\x00\x00\x002.4q\x02X\x07\x00\x00\x00entriesq\x03]q\x04("]
    out.append(b"]q\x05(" + b"K\x01" * payload + b"e")  # the shared entry, memo 5
    out.append(b"h\x05" * (refs - 1))
    out.append(b"eu.")
    return b"".join(out)


def self_referencing_pickle() -> bytes:
    """A Flight Recorder-shaped dict whose entries list contains itself."""
    d: dict = {"version": "2.4", "entries": []}
    d["entries"].append(d)
    d["entries"].append({"collective_seq_id": 1, "entries": d["entries"]})
    return pickle.dumps(d, protocol=2)


def big_int_pickle(digits: int) -> bytes:
    """A LONG4 opcode carrying an integer of ``digits`` bytes (decoding it is quadratic
    in CPython for huge values)."""
    n = digits
    return b"\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01\x8b" + struct.pack("<i", n) + b"\x01" * n + b"u."


JUNK_CHARS = "a0 -.:|\t#=x/"
JUNK_PAIRS = ("a ", "0.", "0 ", "a:", "-0", "a=")  # for (\w+\s)+ and ([\d.]+)-shaped patterns


def junk_kinds(sample: str | None = None) -> list[str]:
    """The labels :func:`junk` makes: one character (each of :data:`JUNK_CHARS`), pairs, one
    long line, many short lines; with ``sample`` (a real capture of the tool) also that
    capture's lines cut in half and repeated, its lines joined into one, its longest line
    repeated, and its most frequent punctuation: junk that follows the grammar part of the way."""
    kinds = [f"one char {ch!r}" for ch in JUNK_CHARS] + [f"pairs {p!r}" for p in JUNK_PAIRS]
    kinds += ["one line", "short lines"]
    if sample:
        kinds += ["capture half lines", "capture one line", "longest line repeated"]
        if _top_punct(sample):
            kinds.append("capture's punctuation")
    return kinds


def _top_punct(sample: str) -> str | None:
    punct = [c for c in sample if not c.isalnum() and not c.isspace()]
    return max(sorted(set(punct)), key=punct.count) if punct else None


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(1, len(unit)) + 1))[:size]


def junk(label: str, size: int, sample: str | None = None) -> str:
    """``size`` characters of the junk ``label`` names (see :func:`junk_kinds`)."""
    for ch in JUNK_CHARS:
        if label == f"one char {ch!r}":
            return ch * size
    for pair in JUNK_PAIRS:
        if label == f"pairs {pair!r}":
            return _fill(pair, size)
    if label == "one line":
        return _fill("GPU 0 1e9 -- |", size)
    if label == "short lines":
        return _fill("0: 12 x -1 nan N/A ok\n", size)
    assert sample, label
    lines = [ln for ln in sample.splitlines() if ln.strip()] or ["x"]
    if label == "capture half lines":
        return _fill("".join(ln[: max(1, len(ln) // 2)] + "\n" for ln in lines), size)
    if label == "capture one line":
        return _fill(" ".join(lines), size)
    if label == "longest line repeated":
        return _fill(max(lines, key=len) + "\n", size)
    if label == "capture's punctuation":
        return (_top_punct(sample) or "x") * size
    raise ValueError(label)


def junk_texts(size: int, sample: str | None = None) -> Iterator[tuple[str, str]]:
    """(label, text) for every kind of :func:`junk_kinds`."""
    for label in junk_kinds(sample):
        yield label, junk(label, size, sample)


def seeded_delays(seed: int, n: int, low: float, high: float) -> list[float]:
    rng = random.Random(seed)
    return [rng.uniform(low, high) for _ in range(n)]


# -- commands as processes: concurrent commands on one store, signals at every step -----------

# The calls by which a command changes the world: a file opened, written, synced, renamed or
# removed, a directory made, a lock taken, a tool started, a state-store transaction. A
# signal just before each of them is "a signal at every step" of an action.
STEP_CALLS = (("os", "open"), ("os", "write"), ("os", "fsync"), ("os", "replace"), ("os", "rename"),
              ("os", "unlink"), ("os", "mkdir"), ("os", "ftruncate"), ("fcntl", "flock"),
              ("subprocess", "Popen.__init__"), ("sncheck.store.state", "StateStore._write"))


def _signal_at_step(n: int, sig: int, log: Path) -> None:
    """In a command's own process: wrap every :data:`STEP_CALLS` so the n-th call (from 1)
    sends ``sig`` to this process just before it runs; each step is logged to ``log``
    (its number, the call, and the file or tool it touches)."""
    import importlib

    real_write = os.write
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    count = [0]

    def what(args: tuple) -> str:
        a = args[0] if args else ""
        if isinstance(a, (list, tuple)) and a:
            a = a[0]
        return os.path.basename(str(a)) if isinstance(a, (str, bytes, os.PathLike)) else type(a).__name__

    def wrap(label: str, fn: Callable[..., Any], method: bool) -> Callable[..., Any]:
        def stepped(*args: Any, **kw: Any) -> Any:
            count[0] += 1
            real_write(log_fd, f"{count[0]} {label} {what(args[1:] if method else args)}\n".encode())
            if count[0] == n:
                os.kill(os.getpid(), sig)
            return fn(*args, **kw)
        return stepped

    for module, name in STEP_CALLS:
        owner = importlib.import_module(module)
        *cls, attr = name.split(".")
        if cls:
            owner = getattr(owner, cls[0])
        setattr(owner, attr, wrap(f"{module}.{name}", getattr(owner, attr), bool(cls)))


def steps_taken(out: Path) -> list[str]:
    """The steps a command started with ``signal_at`` took, in order (see :func:`start_command`)."""
    path = Path(str(out) + ".steps")
    return path.read_text().splitlines() if path.exists() else []


def start_command(args: list[str], out: Path, env: dict[str, str] | None = None, delay: float = 0.0,
                  signal_at: tuple[int, int] | None = None) -> int:
    """Fork a process that runs ``sncheck ARGS`` (already imported: no interpreter start-up,
    so many tries stay cheap) after ``delay`` seconds, its stdout and stderr in ``out``.err/.out.
    With ``signal_at=(n, SIG)`` it sends itself SIG just before its n-th step (n=0: never; the
    steps it took are in ``out``.steps either way). Returns its pid; :func:`wait_command`
    gives its exit status."""
    out.parent.mkdir(parents=True, exist_ok=True)
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:  # the child: never return into the test runner
        os.environ.update(env or {})
        for fd, name in ((1, ".out"), (2, ".err")):
            f = os.open(str(out) + name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 -- the child's own streams, flushed below
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        import signal as _signal
        for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
            _signal.signal(sig, _signal.SIG_DFL if sig != _signal.SIGINT else _signal.default_int_handler)
        if delay:
            import time
            time.sleep(delay)
        if signal_at is not None:
            _signal_at_step(signal_at[0], signal_at[1], Path(str(out) + ".steps"))
        from sncheck.cli.main import main
        try:
            main(args, prog_name="sncheck")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def wait_command(pid: int, out: Path, timeout: float = 60.0) -> tuple[int, str]:
    """(exit status, stdout + stderr) of a command :func:`start_command` started: the exit
    code, or minus the signal that killed it. Killed (and the test failed) after ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"sncheck did not end in {timeout} s")
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    text = "".join(Path(str(out) + s).read_text(errors="replace") for s in (".out", ".err")
                   if Path(str(out) + s).exists())
    return code, text
