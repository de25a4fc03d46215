"""The one input reader and the one output writer for every path a user names.

Reads (:func:`read_input`): regular files only. The file is opened non-blocking, so a
FIFO cannot hold the open, and ``fstat`` of the open descriptor decides: a FIFO, a
device, a socket or a directory (or a symlink to one) is refused with a ConfigError
(exit 2) naming it. The read stops at the kind's size limit (:data:`LIMITS`): one byte
past it and the file is refused, so ``/dev/zero`` or an endless log costs at most the
limit.

Writes (:func:`write_atomic`): a regular file is replaced whole (a private temporary
sibling, fsync, ``rename``), so a reader never sees half a file. A path that exists and
is not a regular file (a FIFO, a device, a socket, a directory, or a symlink to one) is
refused with a ConfigError naming it: ``--out /dev/full`` run as root would otherwise
rename a JSON file over the device node. A symlink to a regular file (or a dangling
one) is replaced by the file, never written through, so nothing outside the place the
user named changes. Appends (:func:`append_text`) refuse the same paths and never
follow a link.

:func:`check_input` and :func:`check_output` are the same checks without the I/O, for
the command line's path options (``sncheck.cli.paths``), which refuse before any work.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from sncheck.errors import ConfigError, HarnessError

# Per kind of input, the most sncheck reads; one byte more and the file is refused.
LIMITS: dict[str, int] = {
    "yaml": 16 << 20,          # inventories of 10^5 hosts are ~5 MB
    "json": 64 << 20,          # a baseline of 10^5 cards is ~10 MB
    "log": 4 << 20,            # a tool's log for `sncheck parse`: real ones are KBs
    "rank map": 16 << 20,      # 10^6 ranks of {rank, host, local_rank}
    "ssh config": 1 << 20,
    "known_hosts": 16 << 20,
    "results": 64 << 20,       # a run's results.json (baseline make, diff, watch --baseline)
    "dump": 64 << 20,          # an in-job dump (sncheck watch)
    "template": 4 << 20,
}
_CHUNK = 1 << 20


def kind_of(mode: int) -> str:
    """What a file mode is, in words: 'a FIFO', 'a character device', ..."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _limit(kind: str) -> int:
    try:
        return LIMITS[kind]
    except KeyError:
        raise ValueError(f"unknown input kind {kind!r}; known: {', '.join(LIMITS)}") from None


def check_input(path: str | os.PathLike[str], kind: str = "yaml") -> None:
    """Refuse (ConfigError) a path that exists and is not a regular file (links followed).
    A missing path passes: the reader says 'file not found' when it is read."""
    _limit(kind)
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"is {kind_of(st.st_mode)}, not a regular file (sncheck reads its inputs "
                          "from regular files only)", os.fspath(path))


def read_input(path: str | os.PathLike[str], kind: str, what: str | None = None,
               limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most the ``kind``'s limit (or ``limit``).

    Refused with a ConfigError naming the file: missing, a directory, not a regular file
    (FIFO, device, socket, a symlink to one), unreadable, or larger than the limit.
    """
    cap = _limit(kind) if limit is None else limit
    what = what or kind
    name = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of hanging here.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError as e:
        raise ConfigError("file not found", name) from e
    except IsADirectoryError as e:
        raise ConfigError("is a directory, not a file", name) from e
    except OSError as e:
        check_input(name, kind)  # a socket cannot be opened (ENXIO): say what it is
        raise ConfigError(f"cannot read {what}: {e.strerror or e}", name) from e
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError("is a directory, not a file", name)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"is {kind_of(st.st_mode)}, not a regular file (sncheck reads its inputs "
                              "from regular files only)", name)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        chunks, size = [], 0
        while size <= cap:  # in chunks: read(cap) would set aside the whole limit at once
            chunk = os.read(fd, min(_CHUNK, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise ConfigError(f"cannot read {what}: {e.strerror or e}", name) from e
    finally:
        os.close(fd)
    if size > cap:
        raise ConfigError(f"{what} is larger than {_mib(cap)} (the cap); is it the right file?", name)
    return b"".join(chunks)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse (ConfigError) an output path that exists and is not a regular file, or is a
    symlink to one that is not: only a regular file (or a link, replaced) is written over."""
    name = os.fspath(path)
    try:
        st = os.lstat(name)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConfigError(f"cannot write here: {e.strerror or e}", name) from e
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(name).st_mode
        except OSError:
            return  # a dangling link: replaced by the file, nothing is written through it
        if not stat.S_ISREG(mode):
            raise ConfigError(f"is a symlink to {kind_of(mode)}; sncheck replaces only regular files "
                              "(remove it or name another path)", name)
        return
    if not stat.S_ISREG(mode):
        raise ConfigError(f"is {kind_of(mode)}; sncheck replaces only regular files "
                          "(remove it or name another path)", name)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, durable: bool = True) -> None:
    """Replace the regular file ``path`` (or create it) with ``data``, atomically.

    Via a private temporary sibling (``mkstemp``: ``O_CREAT | O_EXCL``, never a planted
    link) and ``os.replace`` (a rename replaces a link, it never writes through it). The
    parent directory must not be a symlink; ``path`` must not be a FIFO, device, socket
    or directory, or a link to one (ConfigError). The temporary file is held under an
    ``flock`` until it is renamed, so the temporary files a killed write left behind are
    told from a write in progress and removed by the next write (:func:`clean_stale_temps`).
    ``durable``: the data reaches the disk (``fsync``) before the rename; without it a
    reader still sees the old file or the new one whole, but a power loss may lose the new one."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_writer(path, durable) as fh:
        fh.write(raw)


@contextmanager
def atomic_writer(path: str | os.PathLike[str], durable: bool = True) -> Iterator[BinaryIO]:
    """:func:`write_atomic` as a binary file to write in pieces: a large file (a fleet's
    Prometheus text, ~250 MB at 131,072 cards) is never held whole in memory. The file
    replaces ``path`` when the block ends; an exception in it leaves ``path`` as it was."""
    path = Path(path)
    check_output(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    if parent.is_symlink():
        raise HarnessError(f"{parent} is a symlink; sncheck never writes through a link")
    clean_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fcntl.flock(fd, fcntl.LOCK_EX)  # ours until renamed: clean_stale_temps leaves it
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
            # mkstemp makes 0600 files; outputs are for the team, so honour the umask.
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            check_output(path)  # again, just before the rename: a FIFO planted meanwhile is not replaced
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# mkstemp's names: the prefix, 8 of these characters, the suffix (tempfile._RandomNameSequence)
_TEMP_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
STALE_TEMP_S = 5.0  # younger than this, a temporary file may be a write between mkstemp and its flock


def clean_stale_temps(path: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files a killed :func:`write_atomic` of ``path`` left beside it
    (``.NAME.XXXXXXXX.tmp``); the names removed. Only what is surely ours and dead: a name of
    exactly that pattern, a regular file (never a link, FIFO or directory: opened without
    following links and without blocking), owned by this user, older than
    :data:`STALE_TEMP_S`, and not locked (a write in progress holds its ``flock``). Anything
    else, and any error, is left alone: cleaning up never fails a write."""
    path = Path(path)
    head = f".{path.name}."
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(head) and n.endswith(".tmp")
                 and len(n) == len(head) + 8 + 4 and set(n[len(head):-4]) <= _TEMP_CHARS]
    except OSError:
        return removed
    for name in names:
        temp = path.parent / name
        try:
            if not stat.S_ISREG(os.lstat(temp).st_mode):
                continue  # a device is never opened: opening one may act on it
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                         | getattr(os, "O_NOCTTY", 0))
        except OSError:
            continue  # a link (ELOOP), gone, not ours to read
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or \
                    st.st_mtime > time.time() - STALE_TEMP_S:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a write in progress
            now = os.lstat(temp)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):  # still the file we locked
                os.unlink(temp)
                removed.append(name)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def append_text(path: str | os.PathLike[str], text: str, lock: bool = True) -> None:
    """Append ``text`` to the regular file ``path`` (created if missing), whole, under an
    exclusive ``flock``. Never through a link (``O_NOFOLLOW``); a FIFO, device or socket
    there is refused (ConfigError) before a byte is written, and the open never blocks."""
    name = os.fspath(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags | getattr(os, "O_NOCTTY", 0), 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ConfigError("is a symlink; sncheck appends only to a regular file, never through a link",
                              name) from e
        if e.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO with no reader; a directory
            raise ConfigError(f"is {'a FIFO' if e.errno == errno.ENXIO else 'a directory'}; sncheck appends "
                              "only to a regular file", name) from e
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"is {kind_of(st.st_mode)}; sncheck appends only to a regular file", name)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        if lock:
            fcntl.flock(fd, fcntl.LOCK_EX)
        raw = text.encode("utf-8")
        while raw:
            raw = raw[os.write(fd, raw):]
    finally:
        os.close(fd)  # closing releases the flock
